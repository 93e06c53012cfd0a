"""Views of an array's memory: indexing and slicing, reshape, flatten, transpose, a dtype
view, and contiguous copies.

Every view shares memory with its source, on the CPU and on a GPU, and so does its
gradient: the view of an array with a gradient has the same view of the gradient, so a
kernel's gradient written through a view lands in the source's gradient. Views keep their
source alive (``view._ref``).
"""
from __future__ import annotations

import math

import numpy as np

from ..types import Type, to_type
from . import storage
from .array_convert import MAX_DIMS, _Interface, contiguous_strides, element_bytes


def restride(data, offset: int, shape: tuple, strides: tuple, np_dtype):
    """Storage over data's memory from byte offset on, with this shape and these byte
    strides (the element's axes included): a NumPy array or a DeviceArray."""
    if type(data) is np.ndarray:
        base = data.ctypes.data if data.size else 0
        iface = _Interface(base + offset, shape, strides, np_dtype,
                           readonly=not data.flags.writeable)
        iface.keep = data  # NumPy keeps the interface object, which keeps the memory
        if math.prod(shape) == 0:  # NumPy wants a real address even for no elements
            return np.lib.stride_tricks.as_strided(np.empty(1, np_dtype), shape, strides)
        return np.asarray(iface)
    return storage.DeviceArray(data.buffer, data.offset + offset, tuple(shape),
                               tuple(strides), np.dtype(np_dtype))


def _name(t) -> str:
    """A type as Warp's messages write it (vec4f, mat22f, float32)."""
    return getattr(t, "__name__", str(t))


def _inner_strides(dtype: Type) -> tuple:
    return contiguous_strides(dtype.shape, dtype.scalar)


def _view(a, offset: int, shape: tuple, strides: tuple, dtype: Type, grad):
    from .array import array
    data = a._storage()
    values = restride(data, offset, tuple(shape) + dtype.shape,
                      tuple(strides) + _inner_strides(dtype), dtype.scalar.np)
    out = array._wrap(values, dtype, a.device, grad, a._vbox)
    out._ref = a
    return out


# --- Indexing -----------------------------------------------------------------------------

def getitem(a, key):
    """a[i, j:k:s, ...]: integers drop an axis, slices (any step, negative bounds) keep it.
    Indexing every axis with an integer gives the element (NumPy values); fewer indices or
    any slice give a view."""
    from .array import array
    index = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, array) for k in index):
        from .indexed import indexedarray
        return indexedarray.from_index(a, index)
    if not all(isinstance(k, (int, np.integer, slice)) for k in index):
        raise TypeError("kernlab arrays take integer and slice indices (or index arrays); "
                        "use a.numpy()[...] for other kinds of indexing")
    if len(index) > a.ndim:
        raise IndexError(f"{len(index)} indices for an array of {a.ndim} dimensions")
    a._storage()
    offset, shape, strides = storage.view_layout(a.shape, a.strides, index)
    if not shape:  # every axis indexed: the element itself
        value = a._storage()[tuple(int(k) for k in index)]
        return value.get()[()] if type(value) is storage.DeviceArray else value
    grad = getitem(a._grad, key) if a._grad is not None else None
    return _view(a, offset, tuple(shape), tuple(strides), a.dtype, grad)


# --- Reshaping ----------------------------------------------------------------------------

def _new_shape(a, shape) -> tuple:
    if shape is None:
        raise RuntimeError("shape parameter is required.")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if len(shape) > MAX_DIMS:
        raise RuntimeError(f"Arrays may only have {MAX_DIMS} dimensions maximum, trying to "
                           f"create array with {len(shape)} dims.")
    if shape.count(-1) > 1:
        raise RuntimeError("Cannot infer shape if more than one index is -1.")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple((a.size // known if known else 0) if d == -1 else d for d in shape)
    if math.prod(shape) != a.size or any(d < 0 for d in shape):
        raise RuntimeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into "
                           f"shape {shape} (size {math.prod(shape)})")
    return shape


def reshape(a, shape):
    """A view with another shape of the same number of elements (one axis may be -1).
    Contiguous arrays only, as in Warp."""
    if not a.is_contiguous:
        raise RuntimeError("Reshaping non-contiguous arrays is unsupported.")
    shape = _new_shape(a, shape)
    grad = reshape(a._grad, shape) if a._grad is not None else None
    return _view(a, 0, shape, contiguous_strides(shape, a.dtype), a.dtype, grad)


def flatten(a):
    """A 1-D view of a contiguous array (the array itself when it is 1-D)."""
    if a.ndim == 1:
        return a
    if not a.is_contiguous:
        raise RuntimeError("Flattening non-contiguous arrays is unsupported.")
    return reshape(a, (a.size,))


def transpose(a, axes=None):
    """A view with the axes permuted (reversed when axes is None); 1-D arrays are
    returned as they are."""
    if a.ndim == 1:
        return a
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    axes = tuple(axes)
    if len(axes) != a.ndim:
        raise RuntimeError("Length of parameter axes must be equal in length to array shape")
    for ax in axes:
        if not isinstance(ax, (int, np.integer)):
            raise RuntimeError(f"axis index {ax} is not of type int")
        if not -a.ndim <= ax < a.ndim:
            raise RuntimeError(f"axis index {ax} must be smaller than the number of axes "
                               "in array")
    if sorted(int(ax) % a.ndim for ax in axes) != list(range(a.ndim)):
        raise RuntimeError(f"axes {axes} are not a permutation of the array's axes")
    grad = transpose(a._grad, axes) if a._grad is not None else None
    return _view(a, 0, tuple(a.shape[ax] for ax in axes), tuple(a.strides[ax] for ax in axes),
                 a.dtype, grad)


def view(a, dtype):
    """The same memory read as another dtype: a same-sized dtype keeps the shape; a scalar
    view of vectors/matrices adds their axes; a vector/matrix view of scalars takes the
    trailing axes (a single element gives shape (1,))."""
    dtype = to_type(dtype)
    old = a.dtype
    if element_bytes(dtype) == element_bytes(old):
        shape, strides = a.shape, a.strides
    elif dtype.is_scalar and old.shape:
        if dtype.np.itemsize != old.scalar.np.itemsize:
            raise TypeError(f"cannot create an array view with dtype {_name(dtype)} from source "
                            f"dtype {_name(old)}: source scalar dtype {_name(old.scalar)} has size "
                            f"{old.scalar.np.itemsize} bytes, but target dtype has size "
                            f"{dtype.np.itemsize} bytes")
        shape = a.shape + old.shape
        strides = a.strides + _inner_strides(old)
    elif old.is_scalar and dtype.shape:
        if old.np.itemsize != dtype.scalar.np.itemsize:
            raise TypeError(f"cannot create an array view with dtype {_name(dtype)} from source "
                            f"dtype {_name(old)}: source dtype has size {old.np.itemsize} bytes, "
                            f"but target scalar dtype {_name(dtype.scalar)} has size "
                            f"{dtype.scalar.np.itemsize} bytes")
        k = len(dtype.shape)
        if a.ndim < k or a.shape[a.ndim - k:] != dtype.shape:
            raise RuntimeError(f"The shape of the source array {a.shape} is not compatible "
                               f"with the requested data type {_name(dtype)}")
        if a.strides[a.ndim - k:] != _inner_strides(dtype):
            raise RuntimeError(f"The inner strides of the source array {a.strides} are not "
                               f"compatible with the requested data type {_name(dtype)}")
        shape = a.shape[:a.ndim - k] or (1,)
        strides = a.strides[:a.ndim - k] or (element_bytes(dtype),)
    else:
        raise TypeError(f"cannot create an array view with dtype {_name(dtype)} from source dtype "
                        f"{old}: source dtype has size {element_bytes(old)} bytes, but target "
                        f"dtype has size {element_bytes(dtype)} bytes")
    grad = view(a._grad, dtype) if a._grad is not None else None
    return _view(a, 0, tuple(shape), tuple(strides), dtype, grad)


def contiguous(a):
    """The array itself when contiguous, else a contiguous copy (differentiable on a tape,
    like kl.copy)."""
    if a.is_contiguous:
        return a
    from .array_create import copy, empty_like
    out = empty_like(a)
    copy(out, a)
    return out
