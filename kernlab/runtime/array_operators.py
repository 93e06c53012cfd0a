"""Arithmetic on arrays (a base class of ``kl.array``, runtime/array.py): ``+``, ``-``,
``*``, ``/``, ``//``, ``%``, ``**``, their in-place and reflected forms, negation, and
NumPy's ufuncs meeting an array. The operators run kernels (array_ops.py), so a tape records
them.
"""
from __future__ import annotations

import numpy as np

_UFUNC_OPS = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
              np.floor_divide: "floordiv", np.remainder: "mod", np.power: "pow"}


class ArrayOperators:
    # --- Arithmetic (array_ops.py): kernels, so recorded on a tape ----------------------

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy meets a kernlab array. A NumPy *scalar* in arithmetic with it (kernlab's
        scalar types make NumPy scalars: ``kl.float32(5) - a``) is kernlab arithmetic, as a
        Warp scalar's is; everything else (``np.sin(a)``, an ndarray operand) works on the
        data and gives a host array, as NumPy does with Warp's arrays."""
        from .array import array
        name = _UFUNC_OPS.get(ufunc)
        if name is not None and method == "__call__" and not kwargs and len(inputs) == 2 \
                and all(x is self or isinstance(x, (np.generic, int, float))
                        for x in inputs):
            other = inputs[1] if inputs[0] is self else inputs[0]
            return self._binary(name, other, reflected=inputs[1] is self)
        host = [x.numpy() if isinstance(x, array) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(x.numpy() if isinstance(x, array) else x
                                  for x in kwargs["out"])
        return getattr(ufunc, method)(*host, **kwargs)

    def _binary(self, name, other, reflected=False, out=None):
        from .array_ops import binary
        return binary(name, other, self, out) if reflected else binary(name, self, other, out)

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other, True)
    def __sub__(self, other): return self._binary("sub", other)
    def __rsub__(self, other): return self._binary("sub", other, True)
    def __mul__(self, other): return self._binary("mul", other)
    def __rmul__(self, other): return self._binary("mul", other, True)
    def __truediv__(self, other): return self._binary("div", other)
    def __rtruediv__(self, other): return self._binary("div", other, True)
    def __floordiv__(self, other): return self._binary("floordiv", other)
    def __rfloordiv__(self, other): return self._binary("floordiv", other, True)
    def __mod__(self, other): return self._binary("mod", other)
    def __rmod__(self, other): return self._binary("mod", other, True)
    def __pow__(self, other): return self._binary("pow", other)
    def __rpow__(self, other): return self._binary("pow", other, True)

    def __iadd__(self, other): return self._binary("add", other, out=self)
    def __isub__(self, other): return self._binary("sub", other, out=self)
    def __imul__(self, other): return self._binary("mul", other, out=self)
    def __itruediv__(self, other): return self._binary("div", other, out=self)

    def __neg__(self):
        from .array_ops import negate
        return negate(self)

    def __pos__(self):
        return self
