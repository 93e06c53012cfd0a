"""Tile calls in kernels (mixed into the Lowerer): ``tile_load``, ``tile_store``,
``tile_atomic_add``, ``tile``, ``tile_zeros``/``tile_ones``/``tile_full``, ``tile_sum``,
``tile_transpose``, ``tile_fft``/``tile_ifft`` and ``t[i, j]``, with Warp's parameter names.

Their compile-time arguments (``shape``, ``dtype``, ``storage``, ``bounds_check``) are read
here and become the result's ``types.Tile``; the builtins (builtins/tiles.py) see only
values. ``storage`` ("register" or "shared") changes nothing: each block is one thread, which
holds its tile whichever way. ``tile_fft(t)`` and ``tile_ifft(t)`` transform the tile in
place, as in Warp: the local ``t`` names is given the transformed tile.
"""
from __future__ import annotations

import ast

from .. import lang
from ..errors import KernelTypeError
from ..ir.nodes import Value
from ..types import Tile, Type, float32, int32, to_type
from .exprs import Lit, PyObj

NOT_TILE = object()

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
    "tile_sum": (("a",), {}),
    "tile_transpose": (("a",), {}),
    "tile_fft": (("inout",), {}),
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
        args = self._tile_bind(name, node)
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
        if not (dtype.is_scalar or dtype.is_vector) or dtype.scalar.kind == "b":
            raise KernelTypeError(f"{what}: tiles hold int, float or vector elements, not "
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

    def _tile_array(self, node, what) -> Value:
        a = self.value(self.expr(node))
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
        return self.b.call(name, [a, t, *offs])

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
        return self.b.call("tile_sum", [self._tile_value(args["a"], "tile_sum")])

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
