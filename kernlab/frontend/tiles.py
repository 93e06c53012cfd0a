"""Tile calls in kernels (mixed into the Lowerer): ``tile_load``, ``tile_store``,
``tile_atomic_add``, ``tile``, ``tile_zeros``/``tile_ones``/``tile_full``, ``tile_sum``,
``tile_transpose``, ``tile_fft``/``tile_ifft`` and ``t[i, j]``, with Warp's parameter names.

Their compile-time arguments (``shape``, ``dtype``, ``storage``, ``bounds_check``) are read
here and become the result's ``types.Tile``; the builtins (builtins/tiles.py, tile_ops.py) see only
values. ``storage`` ("register" or "shared") changes nothing: each block is one thread, which
holds its tile whichever way. ``tile_fft(t)`` and ``tile_ifft(t)`` transform the tile in
place, as in Warp: the local ``t`` names is given the transformed tile.
"""
from __future__ import annotations

import ast
import math

import numpy as np

from .. import lang
from ..errors import KernelTypeError, KernelValueError
from ..ir.nodes import Value
from ..types import Tile, Type, float32, int32, to_type
from .exprs import Lit, PyObj
from .views import ArrayRef, Axis, Reshaped

NOT_TILE = object()

# one tile in, one builtin of the same name (builtins/tiles.py)
_ONE_TILE = ("tile_max", "tile_min", "tile_argmax", "tile_argmin", "tile_scan_inclusive",
             "tile_scan_exclusive", "tile_scan_max_inclusive", "tile_scan_min_inclusive")

# name -> (parameters in order, defaults); a parameter without a default is required
_PARAMS = {
    "tile_load": (("a", "shape", "offset", "storage", "bounds_check", "aligned"),
                  {"offset": None, "storage": "register", "bounds_check": True,
                   "aligned": False}),
    "tile_store": (("a", "t", "offset", "bounds_check", "aligned"),
                   {"offset": None, "bounds_check": True, "aligned": False}),
    "tile_atomic_add": (("a", "t", "offset", "bounds_check"),
                        {"offset": None, "bounds_check": True}),
    "tile": (("x", "preserve_type"), {"preserve_type": False}),
    "tile_zeros": (("shape", "dtype", "storage"), {"dtype": float, "storage": "register"}),
    "tile_ones": (("shape", "dtype", "storage"), {"dtype": float, "storage": "register"}),
    "tile_full": (("shape", "value", "dtype", "storage"), {"dtype": None,
                                                            "storage": "register"}),
    "tile_sum": (("a", "axis"), {"axis": None}),
    "tile_transpose": (("a",), {}),
    "tile_fft": (("inout",), {}),
    "tile_reduce": (("op", "a", "axis"), {"axis": None}),
    "untile": (("a",), {}),
    "tile_matmul": (("a", "b", "out", "alpha", "beta", "precision"),
                    {"out": None, "alpha": 1.0, "beta": 1.0, "precision": "default"}),
    "tile_reshape": (("a", "shape", "storage"), {"storage": "register"}),
    "tile_squeeze": (("a", "axis"), {"axis": None}),
    "tile_astype": (("a", "dtype"), {}),
    "tile_broadcast": (("a", "shape", "storage"), {"storage": "register"}),
    "tile_map": None,  # variadic: tile_map(op, a, b, ...)
    "tile_arange": None,  # tile_arange([start,] stop[, step], dtype=float, storage=...)
    **{name: (("a",), {}) for name in _ONE_TILE},
    "tile_ifft": (("inout",), {}),
}


class TileMixin:
    def tile_call(self, obj, node):
        """Lower a call of one of the tile functions, or NOT_TILE."""
        name = lang.TILE_FORMS_BY_ID.get(id(obj))
        if name is None:
            return NOT_TILE
        if name == "tile_extract":  # tile_extract(t, i, ...): t[i, ...]
            if node.keywords or not node.args:
                raise KernelTypeError("tile_extract(t, i, ...) takes a tile and its indices",
                                      self.b.loc)
            t = self._tile_value(node.args[0], name)
            return self.tile_index(t, [self.expr(a) for a in node.args[1:]])
        if name == "tile_map":
            return self.tile_map(node)
        if name == "tile_arange":
            return self.tile_arange(node)
        args = self._tile_bind(name, node)
        if name in _ONE_TILE:
            return self._tile_one(name, args)
        return getattr(self, "_tile_" + name)(args, node)

    def _tile_bind(self, name, node) -> dict:
        params, defaults = _PARAMS[name]
        if len(node.args) > len(params):
            raise KernelTypeError(f"{name}() takes at most {len(params)} arguments "
                                  f"({', '.join(params)}), got {len(node.args)}", self.b.loc)
        out = dict(zip(params, node.args))
        for kw in node.keywords:
            if kw.arg not in params:
                raise KernelTypeError(f"{name}() has no parameter '{kw.arg}' (it takes "
                                      f"{', '.join(params)})", self.b.loc)
            if kw.arg in out:
                raise KernelTypeError(f"{name}() got '{kw.arg}' twice", self.b.loc)
            out[kw.arg] = kw.value
        for p in params:
            if p not in out:
                if p not in defaults:
                    raise KernelTypeError(f"{name}() needs '{p}'", self.b.loc)
                out[p] = _Default(defaults[p])
        return out

    # ---- compile-time arguments -------------------------------------------------------

    def _tile_const(self, node):
        return node.value if isinstance(node, _Default) else self.expr(node)

    def _tile_shape(self, node, what) -> tuple:
        x = self._tile_const(node)
        items = x if isinstance(x, tuple) else (x,)
        shape = []
        for d in items:
            if isinstance(d, Value) and d.type.is_scalar and d.type.is_int:
                known = self._known_constant(d)  # a local assigned once from a constant
                d = Lit(known) if known is not None else d
            if isinstance(d, Lit) and isinstance(d.value, int) and not isinstance(d.value, bool) \
                    and d.value > 0:
                shape.append(d.value)
            else:
                raise KernelTypeError(f"{what}: a tile shape must be positive integer "
                                      "constants (a literal, a wp.constant or a global int)",
                                      self.b.loc)
        return tuple(shape)

    def _tile_dtype(self, node, what) -> Type:
        x = self._tile_const(node)
        obj = x.obj if isinstance(x, PyObj) else x
        try:
            t = to_type(obj)
        except TypeError:
            raise KernelTypeError(f"{what}: dtype must be a scalar or vector type, not "
                                  f"{obj!r}", self.b.loc) from None
        return t

    def _tile_type(self, dtype: Type, shape: tuple, what) -> Tile:
        if not (dtype.is_scalar or dtype.is_vector or dtype.is_matrix) \
                or dtype.scalar.kind == "b":
            raise KernelTypeError(f"{what}: tiles hold int, float, vector or matrix elements, not "
                                  f"{dtype}", self.b.loc)
        if dtype.scalar.name == "bfloat16":
            raise KernelTypeError(f"{what}: kernlab has no tiles of bfloat16 yet (use a float16 or "
                                  "float32 array)", self.b.loc)
        t = Tile(dtype, shape)
        if t.length > Tile.MAX_SCALARS:
            raise KernelTypeError(f"{what}: a tile of shape {shape} of {dtype} has "
                                  f"{t.length} scalars; kernlab holds at most "
                                  f"{Tile.MAX_SCALARS} per tile", self.b.loc)
        return t

    def _tile_array(self, node, what):
        """The array argument: a Value, or a view of an array (an ArrayRef)."""
        x = self.expr(node)
        if isinstance(x, ArrayRef):
            if isinstance(x, Reshaped):
                raise KernelTypeError(f"{what}: an array made with array(ptr=...) cannot be "
                                      "a tile's source or target; pass the array itself",
                                      self.b.loc)
            return x
        a = self.value(x)
        if not a.type.is_array:
            raise KernelTypeError(f"{what}: the first argument must be an array, not "
                                  f"{a.type}", self.b.loc)
        return a

    def _tile_value(self, node, what) -> Value:
        t = self.value(self.expr(node))
        if not t.type.is_tile:
            raise KernelTypeError(f"{what}: expected a tile, got {t.type}", self.b.loc)
        return t

    def _tile_offsets(self, node, ndim, what) -> list:
        x = self._tile_const(node)
        if x is None:
            return [self.b.const(0, int32)] * ndim
        items = list(x) if isinstance(x, tuple) else [x]
        if len(items) != ndim:
            raise KernelTypeError(f"{what}: offset has {len(items)} value(s) for an array "
                                  f"of {ndim} dimension(s)", self.b.loc)
        return [self.int_index(i) for i in items]

    def _tile_flag(self, node, name, allowed):
        x = self._tile_const(node)
        value = x.value if isinstance(x, (Lit, _Default)) else \
            x.obj if isinstance(x, PyObj) else x
        if isinstance(x, Value) or value not in allowed:
            raise KernelTypeError(f"{name} must be a constant, one of {allowed}", self.b.loc)
        return value

    # ---- the calls ----------------------------------------------------------------------

    def _tile_tile_load(self, args, node):
        what = "tile_load"
        a = self._tile_array(args["a"], what)
        shape = self._tile_shape(args["shape"], what)
        if len(shape) != a.type.ndim:
            raise KernelTypeError(f"tile_load: shape {shape} has {len(shape)} dimension(s) "
                                  f"but the array has {a.type.ndim}", self.b.loc)
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        self._tile_flag(args["bounds_check"], "bounds_check", (True, False))
        t = self._tile_type(a.type.dtype, shape, what)
        offs = self._tile_offsets(args["offset"], a.type.ndim, what)
        if isinstance(a, ArrayRef):
            return self.b.call("tile_load_view", [a.base, *self._tile_view(a, offs, shape)],
                               target=t)
        return self.b.call("tile_load", [a, *offs], target=t)

    def _tile_write(self, name, args):
        a = self._tile_array(args["a"], name)
        t = self._tile_value(args["t"], name)
        if len(t.type.tile_shape) != a.type.ndim:
            raise KernelTypeError(f"{name}: a tile of {len(t.type.tile_shape)} dimension(s) "
                                  f"{t.type.tile_shape} into an array of {a.type.ndim}",
                                  self.b.loc)
        if t.type.dtype != a.type.dtype:
            raise KernelTypeError(f"{name}: a tile of {t.type.dtype} into an array of "
                                  f"{a.type.dtype} (the element types must be the same)",
                                  self.b.loc)
        self._tile_flag(args["bounds_check"], "bounds_check", (True, False))
        offs = self._tile_offsets(args["offset"], a.type.ndim, name)
        if isinstance(a, ArrayRef):
            desc = self._tile_view(a, offs, t.type.tile_shape)
            return self.b.call(name + "_view", [a.base, t, *desc])
        return self.b.call(name, [a, t, *offs])

    def _tile_view(self, ref, offs, shape) -> list:
        """The five ints per axis of the viewed array that place a tile of this shape at
        offs in the view (builtins/tiles.py, tile_load_view): first index, step, the range
        of tile coordinates inside the view, and the tile's extent along the axis."""
        first, step, low, high, ext = [], [], [], [], []
        dims = iter(zip(offs, shape))
        for axis in ref.axes:
            if isinstance(axis, Axis):
                off, n = next(dims)
                first.append(self.add(axis.start, self.mul(off, axis.step)))
                step.append(axis.step)
                low.append(self.sub(Lit(0), off))
                high.append(self.sub(axis.length, off))
                ext.append(Lit(n))
            else:
                first.append(axis)
                step.append(Lit(0))
                low.append(Lit(0))
                high.append(Lit(1))
                ext.append(Lit(1))
        return [self.value(x, int32) for x in first + step + low + high + ext]

    def _tile_tile_store(self, args, node):
        self._tile_write("tile_store", args)
        return Lit(None)

    def _tile_tile_atomic_add(self, args, node):
        return self._tile_write("tile_atomic_add", args)

    def _tile_tile(self, args, node):
        x = self.value(self.expr(args["x"]), float32)
        keep = self._tile_flag(args["preserve_type"], "preserve_type", (True, False))
        if x.type.is_vector and not keep:  # Warp: the components along the first axis
            t = self._tile_type(x.type.scalar, (x.type.length, 1), "tile")
        else:
            t = self._tile_type(x.type, (1,), "tile")
        return self.b.call("tile", [x], target=t)

    def _tile_filled(self, args, value, what):
        shape = self._tile_shape(args["shape"], what)
        dtype = self._tile_dtype(args["dtype"], what)
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        return self.b.const(value, self._tile_type(dtype, shape, what))

    def _tile_tile_zeros(self, args, node):
        return self._tile_filled(args, 0, "tile_zeros")

    def _tile_tile_ones(self, args, node):
        return self._tile_filled(args, 1, "tile_ones")

    def _tile_tile_full(self, args, node):
        shape = self._tile_shape(args["shape"], "tile_full")
        x = self.expr(args["value"])
        dtype = None if isinstance(args["dtype"], _Default) else \
            self._tile_dtype(args["dtype"], "tile_full")
        x = self.value(x, dtype.scalar if dtype is not None else None)
        if dtype is not None and x.type != dtype:
            x = self.b.cast(x, dtype)
        t = self._tile_type(x.type, shape, "tile_full")
        return self.b.call("tile_full", [x], target=t)

    def _tile_tile_sum(self, args, node):
        t = self._tile_value(args["a"], "tile_sum")
        x = self._tile_const(args["axis"])
        if x is None:
            return self.b.call("tile_sum", [t])
        if isinstance(x, Value):
            x = self._known_constant(x)
            x = Lit(x) if x is not None else None
        if not isinstance(x, Lit) or not isinstance(x.value, int):
            raise KernelTypeError("tile_sum(): axis must be a compile-time integer constant",
                                  self.b.loc)
        shape = t.type.tile_shape
        axis = x.value
        if not 0 <= axis < len(shape):
            raise KernelValueError(f"tile_sum() axis {axis} is out of bounds for tile with "
                                   f"{len(shape)} dimensions", self.b.loc)
        kept = shape[:axis] + (1,) + shape[axis + 1:]  # the sum over axis, then without it
        summed = self.b.call("tile_unbroadcast", [t], target=Tile(t.type.dtype, kept))
        out = shape[:axis] + shape[axis + 1:] or (1,)
        return self.b.call("tile_reshape", [summed], target=Tile(t.type.dtype, out))

    def _tile_tile_matmul(self, args, node):
        a = self._tile_value(args["a"], "tile_matmul")
        b = self._tile_value(args["b"], "tile_matmul")
        for t in (a, b):
            if t.type.dtype.is_vector and t.type.dtype.length == 2:
                raise KernelTypeError("tile_matmul on the CPU does not support complex tiles "
                                      f"(vec2 elements): got {t.type}", self.b.loc)
        prec = args["precision"]
        p = prec.value if isinstance(prec, _Default) else self.expr(prec)
        if isinstance(p, (Lit, PyObj)):
            p = p.value if isinstance(p, Lit) else p.obj
        if not isinstance(p, str) or not (isinstance(prec, _Default)
                                          or isinstance(prec, ast.Constant)):
            raise KernelValueError("tile_matmul: precision got a non-literal argument; it must "
                                   "be the string literal 'default' or 'tf32'", self.b.loc)
        if p not in ("default", "tf32"):
            raise KernelValueError(f"tile_matmul: precision must be the string literal "
                                   f"'default' or 'tf32', not {p!r}", self.b.loc)
        if p == "tf32" and a.type.scalar.bits != 32:
            raise KernelTypeError(f"tile_matmul: precision='tf32' requires float32 tiles, got "
                                  f"{a.type.dtype} (on the CPU it computes in float32)",
                                  self.b.loc)
        for t in (a, b):
            if len(t.type.tile_shape) != 2 or not (t.type.dtype.is_scalar and t.type.is_float):
                raise KernelTypeError(f"tile_matmul takes 2-D tiles of floats, got {t.type}",
                                      self.b.loc)
        if a.type.dtype != b.type.dtype:
            raise KernelTypeError(f"tile_matmul: tiles of {a.type.dtype} and {b.type.dtype} "
                                  "(kernlab multiplies tiles of one float type)", self.b.loc)
        if a.type.tile_shape[1] != b.type.tile_shape[0]:
            raise KernelTypeError(f"tile_matmul: shapes {a.type.tile_shape} and "
                                  f"{b.type.tile_shape} do not chain (a's columns must be "
                                  "b's rows)", self.b.loc)
        prod = self.b.call("tile_matmul", [a, b])

        def number(x):  # a constant's value (a literal, or a value the kernel fixes)
            if isinstance(x, Lit):
                return x.value
            if isinstance(x, Value):
                known = self._known_constant(x)
                return known if known is not None else x
            return x

        alpha = number(self._tile_const(args["alpha"]))
        if not (isinstance(alpha, (float, int)) and alpha == 1.0):
            prod = self.call_builtin("mul", [prod, alpha if not isinstance(alpha, (int, float))
                                             else Lit(float(alpha))])
        if isinstance(args["out"], _Default):
            return prod
        node_out = args["out"]
        out = self._tile_value(node_out, "tile_matmul")
        if out.type != prod.type:
            raise KernelTypeError(f"tile_matmul: out is {out.type}, the product "
                                  f"{prod.type}", self.b.loc)
        if not isinstance(node_out, ast.Name):
            raise KernelTypeError("tile_matmul(a, b, out) updates a tile local in place: "
                                  "pass the local's name", self.b.loc)
        beta = number(self._tile_const(args["beta"]))
        if isinstance(beta, (float, int)) and beta == 0.0:
            new = prod
        else:
            kept = out if isinstance(beta, (float, int)) and beta == 1.0 else \
                self.b.call("tile_scaled", [out, self.value(
                    beta if not isinstance(beta, (int, float)) else Lit(float(beta)),
                    out.type.scalar)])  # out is not read where beta is 0
            new = self.b.call("add", [kept, prod])
        self.assign(node_out, new)
        return Lit(None)

    def _tile_untile(self, args, node):
        t = self._tile_value(args["a"], "untile")
        shape = t.type.tile_shape
        if tuple(shape) != (1,) and not (len(shape) == 2 and shape[1] == 1
                                         and t.type.dtype.is_scalar):
            raise KernelTypeError(f"untile: each block is one thread, so it takes a tile of "
                                  f"one element (or a column (n, 1) of scalars, from tile(v)); "
                                  f"got shape {shape}", self.b.loc)
        return self.b.call("tile_untile", [t])

    def _tile_tile_reshape(self, args, node):
        t = self._tile_value(args["a"], "tile_reshape")
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        x = self._tile_const(args["shape"])
        items = list(x) if isinstance(x, tuple) else [x]
        dims = []
        for d in items:
            if isinstance(d, Value):
                known = self._known_constant(d)
                d = Lit(known) if known is not None else d
            if not isinstance(d, Lit) or not isinstance(d.value, int) or d.value == 0 \
                    or d.value < -1:
                raise KernelTypeError("tile_reshape: shape must be positive integer constants "
                                      "(one of them may be -1)", self.b.loc)
            dims.append(d.value)
        n = t.type.size
        if dims.count(-1) > 1:
            raise KernelTypeError("tile_reshape: at most one dimension may be -1", self.b.loc)
        known = math.prod(d for d in dims if d != -1)
        if -1 in dims:
            if n % known:
                raise KernelTypeError(f"tile_reshape: {n} elements do not fill shape "
                                      f"{tuple(dims)}", self.b.loc)
            dims[dims.index(-1)] = n // known
        if math.prod(dims) != n:
            raise KernelTypeError(f"tile_reshape: a tile of {n} elements cannot take shape "
                                  f"{tuple(dims)}", self.b.loc)
        return self.b.call("tile_reshape", [t], target=Tile(t.type.dtype, tuple(dims)))

    def _tile_tile_squeeze(self, args, node):
        t = self._tile_value(args["a"], "tile_squeeze")
        shape = t.type.tile_shape
        x = self._tile_const(args["axis"])
        if x is None:
            drop = {d for d, n in enumerate(shape) if n == 1}
        else:
            items = list(x) if isinstance(x, tuple) else [x]
            drop = set()
            for a in items:
                if not isinstance(a, Lit) or not isinstance(a.value, int):
                    raise KernelTypeError("tile_squeeze: axis must be integer constants",
                                          self.b.loc)
                if not -len(shape) <= a.value < len(shape):
                    raise KernelValueError(f"tile_squeeze() axis {a.value} is out of bounds "
                                           f"for tile with {len(shape)} dimensions", self.b.loc)
                d = a.value % len(shape)
                if shape[d] != 1:
                    raise KernelValueError(f"tile_squeeze: axis {a.value} has size {shape[d]}, "
                                           "not 1", self.b.loc)
                drop.add(d)
        out = tuple(n for d, n in enumerate(shape) if d not in drop) or (1,)
        return self.b.call("tile_reshape", [t], target=Tile(t.type.dtype, out))

    def _tile_tile_astype(self, args, node):
        t = self._tile_value(args["a"], "tile_astype")
        dtype = self._tile_dtype(args["dtype"], "tile_astype")
        if not dtype.is_scalar or dtype.kind == "b" or not t.type.dtype.is_scalar:
            raise KernelTypeError(f"tile_astype: casts tiles of scalars to a numeric scalar "
                                  f"type, not {t.type.dtype} to {dtype}", self.b.loc)
        return self.b.cast(t, Tile(dtype, t.type.tile_shape))

    def _tile_one(self, name, args):
        t = self._tile_value(args["a"], name)
        if not t.type.dtype.is_scalar:
            raise KernelTypeError(f"{name} needs a tile of scalars, got {t.type}", self.b.loc)
        return self.b.call(name, [t])

    def _tile_tile_broadcast(self, args, node):
        from ..builtins.tiles import broadcast_ok
        t = self._tile_value(args["a"], "tile_broadcast")
        self._tile_flag(args["storage"], "storage", ("register", "shared"))
        x = self._tile_const(args["shape"])
        n = len(x) if isinstance(x, tuple) else 1
        if not 1 <= n <= 4:
            raise KernelValueError(f"tile_broadcast() output must have between one and four "
                                   f"dimensions, got {n}", self.b.loc)
        shape = self._tile_shape(args["shape"], "tile_broadcast")
        if not broadcast_ok(t.type.tile_shape, shape):
            raise KernelTypeError(f"tile_broadcast: a tile of shape {t.type.tile_shape} does "
                                  f"not broadcast to {shape} (NumPy's rules)", self.b.loc)
        return self.b.call("tile_broadcast", [t], target=self._tile_type(
            t.type.dtype, shape, "tile_broadcast"))

    def _tile_tile_reduce(self, args, node):
        """tile_reduce(op, t) with op one of Warp's add, mul, max, min builtins."""
        op = self._tile_const(args["op"])
        obj = op.obj if isinstance(op, PyObj) else None
        name = getattr(obj, "builtin", None) if isinstance(obj, lang.BuiltinFunction) else None
        t = self._tile_value(args["a"], "tile_reduce")
        which = {"add": "tile_sum", "mul": "tile_prod", "max": "tile_max", "min": "tile_min"}
        if name not in which:
            raise KernelTypeError("tile_reduce(op, t): kernlab reduces with wp.add, wp.mul, "
                                  "wp.max or wp.min; for another op use a loop over the "
                                  "tile's elements", self.b.loc)
        if name != "add" and not t.type.dtype.is_scalar:
            raise KernelTypeError(f"tile_reduce({name}, t) needs a tile of scalars, got "
                                  f"{t.type}", self.b.loc)
        x = self._tile_const(args["axis"])
        if x is None:
            return self.b.call(which[name], [t])
        if isinstance(x, Value):
            known = self._known_constant(x)
            x = Lit(known) if known is not None else x
        shape = t.type.tile_shape
        if not isinstance(x, Lit) or not isinstance(x.value, int):
            raise KernelTypeError("tile_reduce(): axis must be a compile-time integer",
                                  self.b.loc)
        axis = x.value
        if not 0 <= axis < len(shape):
            raise KernelValueError(f"tile_reduce() axis {axis} is out of bounds for tile with "
                                   f"{len(shape)} dimensions", self.b.loc)
        kept = Tile(t.type.dtype, shape[:axis] + (1,) + shape[axis + 1:])
        op = "tile_unbroadcast" if name == "add" else f"tile_reduce_axis_{name}"
        folded = self.b.call(op, [t], target=kept)
        out = shape[:axis] + shape[axis + 1:] or (1,)
        return self.b.call("tile_reshape", [folded], target=Tile(t.type.dtype, out))

    def _tile_tile_transpose(self, args, node):
        t = self._tile_value(args["a"], "tile_transpose")
        if len(t.type.tile_shape) != 2:
            raise KernelTypeError(f"tile_transpose needs a 2-D tile, got shape "
                                  f"{t.type.tile_shape}", self.b.loc)
        return self.b.call("tile_transpose", [t])

    def _tile_fft_call(self, name, args):
        node = args["inout"]
        t = self._tile_value(node, name)
        tt = t.type
        if not (tt.dtype.is_vector and tt.dtype.length == 2 and tt.is_float):
            raise KernelTypeError(f"{name} needs a tile of vec2f or vec2d (complex) values, "
                                  f"got {tt}", self.b.loc)
        if len(tt.tile_shape) < 2:
            raise KernelTypeError(f"{name} needs a tile of at least 2 dimensions (batches, "
                                  f"size), got shape {tt.tile_shape}", self.b.loc)
        n = tt.tile_shape[-1]
        if n & (n - 1) and n > 4096:
            raise KernelTypeError(f"{name}: a size that is not a power of two goes through a "
                                  f"direct DFT of at most 4096 points (as in Warp); the last "
                                  f"dimension is {n}", self.b.loc)
        if not isinstance(node, ast.Name):
            raise KernelTypeError(f"{name}(t) transforms a tile local in place: pass the "
                                  "local's name", self.b.loc)
        out = self.b.call(name, [t])
        self.assign(node, out)
        return Lit(None)

    def _tile_tile_fft(self, args, node):
        return self._tile_fft_call("tile_fft", args)

    def _tile_tile_ifft(self, args, node):
        return self._tile_fft_call("tile_ifft", args)

    def tile_arange(self, node):
        """tile_arange([start,] stop[, step], dtype=float): the 1-D tile start + i * step
        for i in [0, n), n the count of [start, stop) by step, computed in dtype as Warp
        does (the bounds are first rounded to dtype). A compile-time constant."""
        what = "tile_arange()"
        args = node.args
        if not args:
            raise KernelTypeError(f"{what} needs a range: tile_arange(stop), (start, stop) or "
                                  "(start, stop, step)", self.b.loc)
        if len(args) > 3:
            raise KernelTypeError(f"{what} accepts at most 3 positional arguments, got "
                                  f"{len(args)}", self.b.loc)
        kw = {k.arg: k.value for k in node.keywords}
        for k in kw:
            if k not in ("dtype", "storage"):
                raise KernelTypeError(f"{what} has no parameter '{k}' (it takes [start,] "
                                      "stop[, step], dtype, storage)", self.b.loc)
        names = {1: ("stop",), 2: ("start", "stop"), 3: ("start", "stop", "step")}[len(args)]
        given = {}
        for name, a in zip(names, args):
            x = self.expr(a)
            value = x.value if isinstance(x, Lit) else x.obj if isinstance(x, PyObj) else \
                self._known_constant(x) if isinstance(x, Value) else None
            if hasattr(value, "value") and not isinstance(value, (int, float)):
                value = value.value  # a wp.constant of a kernlab scalar
            if isinstance(value, (np.integer, np.floating)):
                value = value.item()
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise KernelTypeError(f"{what} arguments must be compile time constants, but "
                                      f"{name} is not", self.b.loc)
            given[name] = value
        dtype = self._tile_dtype(kw["dtype"], what) if "dtype" in kw else float32
        if not dtype.is_scalar or dtype.kind == "b":
            raise KernelTypeError(f"{what} requires a numeric scalar dtype, not {dtype}",
                                  self.b.loc)
        if "storage" in kw:
            self._tile_flag(kw["storage"], "storage", ("register", "shared"))
        start, stop, step = (self._arange_bound(n, given.get(n, d), dtype)
                             for n, d in (("start", 0), ("stop", 0), ("step", 1)))
        if step == 0:
            raise KernelValueError(f"{what} step cannot be zero", self.b.loc)
        if (step > 0 and start >= stop) or (step < 0 and start <= stop):
            raise KernelValueError(f"{what}: start={start}, stop={stop}, step={step} is an "
                                   "empty range; a tile needs a non-empty range (no "
                                   "zero-length dimensions)", self.b.loc)
        if dtype.is_int:
            n = -((stop - start) // -step)
        else:
            q = float(dtype.np.type((stop - start) / step))
            if not math.isfinite(q):
                raise KernelValueError(f"{what} start={start}, stop={stop}, step={step} "
                                       "spans more elements than can be counted (the step is "
                                       "too small for the range)", self.b.loc)
            n = max(1, math.ceil(q))
        t = self._tile_type(dtype, (n,), what)
        sdt = dtype.np.type
        with np.errstate(over="ignore"):
            if dtype.is_int:
                bits = dtype.np.itemsize * 8
                span = 1 << bits
                low = (1 << (bits - 1)) if dtype.kind == "i" else 0
                vals = [((start + i * step + low) % span) - low for i in range(n)]
                values = np.array(vals, dtype.np)
            else:
                values = sdt(start) + np.arange(n).astype(dtype.np) * sdt(step)
        return self.b.const(values.astype(dtype.np), t)

    def _known_constant(self, v: Value):
        """The value of v where the kernel fixes it: a constant (a wp.constant, a typed
        literal), or a local assigned once from one; else None."""
        from ..ir.nodes import Op

        def instrs(block):
            for ins in block.instrs:
                yield ins
                for r in ins.regions:
                    yield from instrs(r)

        every = list(instrs(self.b.func.body))
        made = {ins.result: ins for ins in every if ins.result is not None}
        ins = made.get(v)
        if ins is not None and ins.op is Op.LOAD_VAR:
            stores = [i for i in every if i.op is Op.STORE_VAR and i.attrs["var"]
                      is ins.attrs["var"]]
            ins = made.get(stores[0].args[0]) if len(stores) == 1 else None
        if ins is not None and ins.op is Op.CONST and v.type.is_scalar:
            return ins.attrs["value"].item()
        return None

    def _arange_bound(self, name, value, dtype):
        """A tile_arange bound as dtype holds it (Warp's rules): an integer dtype takes
        whole numbers in its range; a float dtype rounds, and must stay finite."""
        what = "tile_arange()"
        if dtype.is_int:
            if isinstance(value, float):
                if not value.is_integer():
                    raise KernelValueError(f"{what} {name}={value} has a fractional part, "
                                           f"which the integer type {dtype} cannot hold",
                                           self.b.loc)
                value = int(value)
            info = np.iinfo(dtype.np)
            if not info.min <= value <= info.max:
                raise KernelValueError(f"{what} {name}={value} is out of range for the "
                                       f"output type {dtype}", self.b.loc)
            return value
        if isinstance(value, int):
            if not -(1 << 63) <= value < (1 << 64):
                raise KernelValueError(f"{what} {name}={value} is too wide to use as an "
                                       f"integer bound; write it as a float literal for a "
                                       f"{dtype} range", self.b.loc)
            wide = np.int64(value) if value < 0 else np.uint64(value)
            value = float(np.float64(wide)) if dtype.np.itemsize == 8 else \
                float(np.float32(wide))
        with np.errstate(over="ignore"):
            held = float(dtype.np.type(value))
        if math.isfinite(value) and not math.isfinite(held):
            raise KernelValueError(f"{what} {name}={value} is out of range for the output "
                                   f"type {dtype}", self.b.loc)
        return held

    def tile_mixed(self, name, vals):
        """``*`` and ``/`` between a tile and another tile or value whose element types
        differ (a tile of vectors times a tile of scalars, a tile of scalars times a matrix):
        element by element, as Warp does, where one side's elements are scalars. None where
        the builtin's own tile signatures take the operands."""
        from ..builtins.registry import REGISTRY
        if name not in ("mul", "div") or len(vals) != 2:
            return None
        if REGISTRY[name].resolve([v.type for v in vals]) is not None:
            return None
        elem = [v.type.dtype if v.type.is_tile else v.type for v in vals]
        if not any(e.is_scalar for e in elem):
            verb = "multiply" if name == "mul" else "divide"
            both = all(v.type.is_tile for v in vals)
            why = "the element type must be scalar on one side" if both else \
                "at least one operand must be a scalar type"
            shown = [f"tile<{v.type.dtype}, {v.type.tile_shape}>" if v.type.is_tile
                     else str(v.type) for v in vals]
            raise KernelTypeError(f"Cannot {verb} {shown[0]} by {shown[1]}: {why} "
                                  "(element type must be scalar)", self.b.loc)
        tiles = [v for v in vals if v.type.is_tile]
        shape = tiles[0].type.tile_shape
        if any(t.type.tile_shape != shape for t in tiles):
            raise KernelTypeError(f"{name}: tiles of shapes {tiles[0].type.tile_shape} and "
                                  f"{tiles[-1].type.tile_shape}", self.b.loc)
        if REGISTRY[name].resolve(elem) is None:
            return None  # the builtin's own error names the operands
        return self._tile_elementwise(name, vals, shape)

    def _tile_elementwise(self, name, vals, shape):
        n = math.prod(shape)
        if n > self.MAP_LIMIT:
            raise KernelTypeError(f"{name} of tiles of {n} elements with different element "
                                  f"types: kernlab does these one element at a time, at most "
                                  f"{self.MAP_LIMIT}", self.b.loc)
        outs = []
        for e in range(n):
            at = self.b.const(e, int32)
            elems = [self.b.call("tile_extract_flat", [v, at]) if v.type.is_tile else v
                     for v in vals]
            outs.append(self.b.call(name, elems))
        return self.b.call("tile_pack", outs, target=self._tile_type(outs[0].type, shape,
                                                                     name))

    MAP_LIMIT = 1024  # elements tile_map applies a func to one call each (unrolled)

    def tile_map(self, node):
        """tile_map(op, a, b, ...): op applied element by element to tiles of one shape
        (other arguments are passed to every call as they are). An operator kernlab lifts
        to tiles (add, sub, mul, div, neg) runs as one element-wise op; any other builtin
        or func is called once per element and the results make the tile, so its gradient
        is the op's own."""
        if node.keywords or len(node.args) < 2:
            raise KernelTypeError("tile_map(op, a, ...) takes an op and one or more tiles",
                                  self.b.loc)
        op = self.expr(node.args[0])
        obj = op.obj if isinstance(op, PyObj) else None
        from ..kernel import Func
        if not isinstance(obj, (lang.BuiltinFunction, Func)):
            raise KernelTypeError("tile_map: the op must be a builtin (wp.sin, wp.add, ...) "
                                  "or a @func", self.b.loc)
        args = [self.expr(a) for a in node.args[1:]]
        tiles = [a for a in args if isinstance(a, Value) and a.type.is_tile]
        if not tiles:
            raise KernelTypeError("tile_map: at least one argument after the op must be a "
                                  "tile", self.b.loc)
        shape = tiles[0].type.tile_shape
        for t in tiles[1:]:
            if t.type.tile_shape != shape:
                raise KernelTypeError(f"tile_map: the tiles' shapes differ ({shape} and "
                                      f"{t.type.tile_shape})", self.b.loc)
        if isinstance(obj, lang.BuiltinFunction) and len(tiles) == len(args) \
                and obj.builtin in ("add", "sub", "mul", "div", "neg") \
                and all(t.type == tiles[0].type for t in tiles) \
                and tiles[0].type.dtype.is_scalar:
            return self.call_builtin(obj.builtin, args)
        n = tiles[0].type.size
        if n > self.MAP_LIMIT:
            raise KernelTypeError(f"tile_map over a tile of {n} elements: kernlab calls the "
                                  f"op once per element and takes at most {self.MAP_LIMIT}; "
                                  "use the element-wise operators or a smaller tile",
                                  self.b.loc)
        outs = []
        for e in range(n):
            at = self.b.const(e, int32)
            elems = [self.b.call("tile_extract_flat", [a, at])
                     if isinstance(a, Value) and a.type.is_tile else a for a in args]
            if isinstance(obj, Func):
                r = self.call_func(obj, elems, {})
            else:
                r = self.call_builtin(obj.builtin, elems)
            r = self.value(r)
            if outs and r.type != outs[0].type:
                r = self.b.cast(r, outs[0].type)
            outs.append(r)
        t = self._tile_type(outs[0].type, shape, "tile_map")
        return self.b.call("tile_pack", outs, target=t)

    def tile_index(self, base: Value, raw: list):
        """t[i, j]: one element of a tile."""
        if len(raw) != len(base.type.tile_shape):
            raise KernelTypeError(f"a tile of shape {base.type.tile_shape} takes "
                                  f"{len(base.type.tile_shape)} index(es), got {len(raw)}",
                                  self.b.loc)
        return self.b.call("tile_extract", [base, *(self.int_index(i) for i in raw)])


class _Default:
    """A parameter left out: its default value."""

    def __init__(self, value):
        self.value = value
