"""The types of arrays and tiles: ``ArrayType``, Warp's ``indexedarray`` and ``Tile``.

Part of kernlab.types, which re-exports every name here (and names its classes' module).
"""
from __future__ import annotations

from dataclasses import dataclass

from .scalars import ANY, Scalar, Type


@dataclass(frozen=True)
class ArrayType(Type):
    dtype: Type  # Scalar, Vector or Matrix
    ndim: int

    is_array = True

    def __repr__(self):
        return f"array({self.dtype}, ndim={self.ndim})"

    __str__ = __repr__


@dataclass(frozen=True)
class IndexedArrayType(ArrayType):
    """Warp's ``indexedarray``: an array seen through one int32 index array per axis
    (``a[i]`` is ``data[idx0[i]]``). A kernel parameter of this type is flattened by the
    front end into the data array and one index array per axis (frontend/views.py
    ``Indexed``), so no backend knows the type; an axis the indexedarray does not index
    gets the identity index array at the launch."""

    def __repr__(self):
        return f"indexedarray({self.dtype}, ndim={self.ndim})"

    __str__ = __repr__


@dataclass(frozen=True)
class Tile(Type):
    """A tile: a fixed-shape block of values (scalars or vectors) held by one thread block,
    as in Warp's tile programming model. kernlab runs every block as one thread (what Warp
    does on the CPU, block_dim 1), so a tile is a value of the thread that owns it: a NumPy
    array in the interpreter, one register of all its scalars (row-major, each element's
    components together) in LLVM, a fixed-size local array in CUDA C.

    ``tile_shape`` is the tile's shape as Warp gives it (``t.shape``); ``shape`` is the
    shape of its storage (``tile_shape`` plus the element's own shape), as for vectors and
    matrices, and ``length`` the number of scalars."""
    dtype: Type  # Scalar or Vector
    tile_shape: tuple

    is_tile = True
    MAX_SCALARS = 1 << 14  # a tile is a register of at most this many scalars

    @property
    def scalar(self) -> Scalar:
        return self.dtype.scalar

    @property
    def is_float(self) -> bool:
        return self.dtype.is_float

    @property
    def shape(self) -> tuple:
        return tuple(self.tile_shape) + tuple(self.dtype.shape)

    @property
    def size(self) -> int:
        """How many elements the tile has."""
        n = 1
        for d in self.tile_shape:
            n *= d
        return n

    @property
    def length(self) -> int:
        return self.size * (self.dtype.length if self.dtype.is_vector or self.dtype.is_matrix
                            else 1)

    @property
    def nbytes(self) -> int:
        return self.length * self.scalar.nbytes

    def __repr__(self):
        shape = "Any" if self.tile_shape is ANY else tuple(self.tile_shape)
        return f"tile({self.dtype}, {shape})"

    __str__ = __repr__
