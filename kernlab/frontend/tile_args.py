"""The compile-time arguments of the tile calls (mixed into the Lowerer through
frontend/tiles.py's TileMixin): shapes, dtypes, offsets and flags read from the call's
arguments, the array or tile an argument names, and the ``types.Tile`` they make.

A parameter the call leaves out reaches these readers as a ``_Default`` holding Warp's
default value (frontend/tiles.py binds the arguments).
"""
from __future__ import annotations

from ..errors import KernelTypeError
from ..ir.nodes import Value
from ..types import Tile, Type, int32, to_type
from .exprs import Lit, PyObj
from .views import ArrayRef, Reshaped


class TileArgsMixin:
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


class _Default:
    """A parameter left out: its default value."""

    def __init__(self, value):
        self.value = value
