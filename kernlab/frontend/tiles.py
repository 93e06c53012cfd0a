"""Tile calls in kernels (mixed into the Lowerer): ``tile_load``, ``tile_store``,
``tile_atomic_add``, ``tile``, ``tile_zeros``/``tile_ones``/``tile_full``, ``tile_sum``,
``tile_transpose``, ``tile_fft``/``tile_ifft`` and ``t[i, j]``, with Warp's parameter names.

Their compile-time arguments (``shape``, ``dtype``, ``storage``, ``bounds_check``) are read
here and become the result's ``types.Tile``; the builtins (builtins/tiles.py, tile_ops.py) see only
values. ``storage`` ("register" or "shared") changes nothing: each block is one thread, which
holds its tile whichever way.

This module binds a call's arguments to Warp's parameters and sends it on; the work is in
three mixins: frontend/tile_args.py reads the compile-time arguments, frontend/tile_make.py
lowers the calls that make tiles (loads, stores, constants, ``tile_arange``) and
frontend/tile_math.py those that compute on them (reductions, reshapes, ``tile_matmul``,
``tile_fft``, ``tile_map``).
"""
from __future__ import annotations

from .. import lang
from ..errors import KernelTypeError
from ..ir.nodes import Value
from .tile_args import TileArgsMixin, _Default
from .tile_make import TileMakeMixin
from .tile_math import TileMathMixin

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


class TileMixin(TileArgsMixin, TileMakeMixin, TileMathMixin):
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

    def tile_index(self, base: Value, raw: list):
        """t[i, j]: one element of a tile."""
        if len(raw) != len(base.type.tile_shape):
            raise KernelTypeError(f"a tile of shape {base.type.tile_shape} takes "
                                  f"{len(base.type.tile_shape)} index(es), got {len(raw)}",
                                  self.b.loc)
        return self.b.call("tile_extract", [base, *(self.int_index(i) for i in raw)])
