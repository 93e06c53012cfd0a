"""Indexed arrays: ``a[idx]`` with an int32 index array picks elements along an axis
without copying (Warp's ``wp.indexedarray``).

An indexedarray is a view of an array plus, per axis, either None (the whole axis) or an
index array; its shape takes the index arrays' lengths. At Python scope it reads
(``numpy()``, ``list()``), is copied from and into with ``kl.copy``, and makes ``*_like``
arrays; it is never contiguous. Indexing a dimension with several index arrays selects
their outer product, as in Warp (not NumPy's paired indexing).
"""
from __future__ import annotations

import numpy as np

from ..errors import ArrayError
from ..types import int32, to_type


class indexedarray:
    """indexedarray(data=None, indices=None, dtype=None, ndim=None): data, an array;
    indices, one entry per axis of data (None or a 1-D int32 array), or a single index
    array for the first axis. With no data it is an annotation."""

    is_indexed = True
    is_contiguous = False
    grad = None
    requires_grad = False
    retain_grad = False

    def __init__(self, data=None, indices=None, dtype=None, ndim=None):
        from .array import array
        self.is_annotation = data is None
        if data is None:
            self.data, self.indices = None, None
            from ..types import float32
            self.dtype = float32 if dtype is None else to_type(dtype)
            self.ndim, self.shape, self.device = ndim or 1, None, None
            return
        if not isinstance(data, array):
            raise TypeError(f"an indexedarray views a kernlab array, not {type(data).__name__}")
        if isinstance(indices, array) or indices is None:
            indices = [indices]
        indices = list(indices) + [None] * (data.ndim - len(indices))
        if len(indices) != data.ndim:
            raise ArrayError(f"{len(indices)} index arrays for an array of {data.ndim} "
                             "dimensions")
        shape = []
        for axis, idx in enumerate(indices):
            if idx is None:
                shape.append(data.shape[axis])
                continue
            if not isinstance(idx, array) or idx.dtype != int32 or idx.ndim != 1:
                raise ArrayError("index arrays must be 1-D arrays of int32")
            if idx.device != data.device:
                raise ArrayError(f"an index array on {idx.device} for an array on "
                                 f"{data.device}")
            values = idx.numpy()
            if values.size and (values.min() < 0 or values.max() >= data.shape[axis]):
                raise IndexError(f"index array for axis {axis} holds indices outside "
                                 f"[0, {data.shape[axis]})")
            shape.append(idx.size)
        self.data, self.indices = data, indices
        self.dtype, self.device, self.ndim = data.dtype, data.device, data.ndim
        self.shape = tuple(shape)

    def __class_getitem__(cls, params) -> "indexedarray":
        """``kl.indexedarray[T]`` or ``kl.indexedarray[T, Literal[n]]``: an annotation."""
        dtype, ndim = params if isinstance(params, tuple) else (params, 1)
        ndim = getattr(ndim, "__args__", (ndim,))[0]  # Literal[2] -> 2
        return cls(dtype=to_type(dtype), ndim=int(ndim))

    @classmethod
    def from_index(cls, a, index: tuple) -> "indexedarray":
        """a[key] where key holds index arrays (and possibly integers and slices)."""
        from .array import array
        if len(index) > a.ndim:
            raise IndexError(f"{len(index)} indices for an array of {a.ndim} dimensions")
        plain = tuple(slice(None) if isinstance(k, array) else k for k in index)
        view = a[plain] if plain else a
        kept = [k for k in index if not isinstance(k, (int, np.integer))]
        indices = [k if isinstance(k, array) else None for k in kept]
        return cls(view, indices + [None] * (view.ndim - len(indices)))

    @property
    def type(self):
        """The kernel type: IndexedArrayType(dtype, ndim)."""
        from ..types import IndexedArrayType
        return IndexedArrayType(self.dtype, self.ndim)

    def kernel_indices(self) -> list:
        """The index array of every axis as a kernel launch passes them: an axis that is
        not indexed gets the identity (0 .. n-1), made once per indexedarray."""
        cached = getattr(self, "_kernel_indices", None)
        if cached is None:
            from .array import array
            cached = [idx if idx is not None else
                      array(np.arange(n, dtype=np.int32), dtype=int32, device=self.device)
                      for n, idx in zip(self.data.shape, self.indices)]
            self._kernel_indices = cached
        return cached

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def _positions(self) -> tuple:
        """np.ix_ positions of the selected elements in the viewed array."""
        return np.ix_(*(np.arange(n) if idx is None else idx.numpy().astype(np.int64)
                        for n, idx in zip(self.data.shape, self.indices)))

    def numpy(self) -> np.ndarray:
        """A host copy of the selected elements (shape: shape + element shape)."""
        return self.data.numpy()[self._positions()]

    def list(self) -> list:
        flat = self.numpy().reshape((self.size,) + self.dtype.shape)
        return flat.tolist() if self.dtype.is_scalar else [np.array(e) for e in flat]

    def _scatter(self, values: np.ndarray) -> None:
        """Write values (shape: shape + element shape) to the selected elements."""
        if self.device.is_cpu:
            self.data.numpy()[self._positions()] = values
        else:
            host = self.data.numpy()
            host[self._positions()] = values
            self.data._storage()[...] = host
        self.data._bump_version()

    def fill_(self, value) -> "indexedarray":
        """Set every selected element to value (a scalar fills every component)."""
        from .structs import StructType
        if isinstance(self.dtype, StructType):
            raise TypeError("fill_ of an indexedarray of structs is not supported; use "
                            "kl.copy or a kernel")
        v = np.asarray(value, dtype=self.dtype.scalar.np)
        inner = tuple(self.dtype.shape)
        if v.ndim and inner and v.shape != inner and v.size == int(np.prod(inner)):
            v = v.reshape(inner)  # a matrix given as its flat components
        full = np.broadcast_to(v, tuple(self.shape) + inner)
        self._scatter(full)
        return self

    def contiguous(self):
        """A new (contiguous) kl.array holding the selected elements."""
        from .array import array
        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def zero_(self) -> "indexedarray":
        """Set every selected element to zero (every field of a struct)."""
        picked = self.data.numpy()[self._positions()]
        self._scatter(np.zeros_like(picked))
        return self

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        if self.is_annotation:
            return f"indexedarray(dtype={self.dtype}, ndim={self.ndim})"
        return f"indexedarray({self.numpy()!r}, dtype={self.dtype}, device={self.device})"


class _FixedNdim:
    """``kl.indexedarray1d(data, indices)`` .. ``indexedarray4d``: Warp's spellings."""

    def __init__(self, ndim: int):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"indexedarray{ndim}d"
        self.__doc__ = (f"indexedarray{ndim}d(data, indices): a {ndim}-D view of data through "
                        f"index arrays; indexedarray{ndim}d[T] is an annotation.")

    def __call__(self, data=None, indices=None, dtype=None):
        out = indexedarray(data, indices, dtype=dtype, ndim=self.ndim)
        if not out.is_annotation and out.ndim != self.ndim:
            raise ArrayError(f"{self.__name__} of an array with {out.ndim} dimensions")
        return out

    def __getitem__(self, dtype) -> indexedarray:
        return indexedarray(dtype=to_type(dtype), ndim=self.ndim)


indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d = (
    _FixedNdim(n) for n in (1, 2, 3, 4))
