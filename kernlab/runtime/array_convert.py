"""Turning what users pass to ``kl.array`` into storage: shapes, dtypes, data, pointers.

Storage (see storage.py) is a NumPy array on the CPU or a DeviceArray on a GPU, of shape
``array shape + element shape``; the element's own axes are always contiguous, the array
axes may have any byte strides (views, transposes, memory lent by another library).

dtype inference when none is given (or ``typing.Any``): a NumPy array (or a kernlab array)
keeps its dtype, so float64 data stays float64; plain Python data (lists, tuples, numbers)
becomes float32 when it holds floats, int32 when it holds integers that fit (int64
otherwise) and bool for bools. Warp 1.19 gives float64 / int64 there (NumPy's defaults);
kernlab keeps its own ``float`` = float32 rule, so ``kl.array([1.0, 2.0])`` can be passed
to a kernel taking ``kl.array(dtype=float)``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ArrayError
from ..types import (ANY, BoolValue, Type, bool_, float32, int32, int64, matrix, strides_from_shape,
                     to_type, vector)
from . import storage

MAX_DIMS = 4  # kernels index arrays of 1 to 4 dimensions, as in Warp


def as_shape(shape) -> tuple:
    """An int or a sequence of ints -> a tuple of non-negative ints (None -> (0,))."""
    if shape is None:
        shape = 0
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"Array shapes must be non-negative, got {shape}")
    if not 1 <= len(shape) <= MAX_DIMS:
        raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, not {len(shape)} "
                         f"(shape {shape})")
    return shape


def as_dtype(dtype) -> Type | None:
    """A dtype argument as a kernlab type; None for "infer it" (None or typing.Any)."""
    if dtype is None or dtype is Any:
        return None
    t = to_type(dtype)
    return None if t is ANY else t


def element_bytes(dtype: Type) -> int:
    return dtype.scalar.np.itemsize * math.prod(dtype.shape)


def contiguous_strides(shape: tuple, dtype: Type) -> tuple:
    """Byte strides of the C layout of shape (for an empty shape too, as Warp computes
    them: the stride of an axis is the product of the later axes' lengths)."""
    return strides_from_shape(shape, dtype)


def infer_dtype(values: np.ndarray) -> Type:
    """The element type for plain Python data (see the module docstring)."""
    kind = values.dtype.kind
    if kind == "b":
        return bool_
    if kind == "f":
        return float32
    if kind in "iu":
        small = values.size == 0 or (values.min() >= -2**31 and values.max() < 2**31)
        return int32 if small else int64
    raise TypeError(f"cannot make a kernlab array from data of NumPy dtype {values.dtype}")


def numpy_dtype(values: np.ndarray) -> Type:
    try:
        return to_type(values.dtype)
    except TypeError:
        raise TypeError(f"NumPy dtype {values.dtype} has no kernlab type; pass dtype= to "
                        "convert it (for example dtype=kl.float32)") from None


def value_dtype(value) -> Type:
    """The element type kl.full infers from its fill value: a number gives a scalar type, a
    sequence of n numbers a vector of length n, an r x c nested sequence a matrix."""
    if isinstance(value, (bool, np.bool_, BoolValue)):
        return bool_
    if hasattr(value, "_type") and getattr(value._type, "is_struct", False):
        return value._type  # an instance of a @kl.struct
    if isinstance(value, np.generic):
        return numpy_dtype(np.asarray(value))
    values = np.asarray(value)
    scalar = numpy_dtype(values) if isinstance(value, np.ndarray) else infer_dtype(values)
    if values.ndim == 0:
        return scalar
    if values.ndim == 1:
        return vector(values.shape[0], scalar)
    if values.ndim == 2:
        return matrix(values.shape, scalar)
    raise ValueError(f"a fill value of shape {values.shape} is neither a scalar, a vector "
                     "nor a matrix")


def element_value(value, dtype: Type) -> np.ndarray:
    """value as one element of dtype (a scalar, or the vector/matrix shape), ready to
    broadcast over an array's storage."""
    if getattr(dtype, "is_struct", False):
        from .structs import element_record
        return element_record(value, dtype)
    values = np.asarray(value, dtype=dtype.scalar.np)
    inner = dtype.shape
    if values.ndim == 0 or values.shape == inner:
        return values
    if values.size == math.prod(inner):
        return values.reshape(inner)
    raise ValueError(f"value of shape {values.shape} is not an element of {dtype} "
                     f"(expected a scalar or shape {inner})")


# --- Data -> storage ----------------------------------------------------------------------

def _source(data):
    """(NumPy values, dtype the data carries or None) for anything array-like."""
    from .array import array
    if isinstance(data, array):
        return data.numpy(), data.dtype
    if isinstance(data, np.ndarray):
        # a subclass (np.memmap, np.matrix) is seen as a plain ndarray over the same memory,
        # which keeps its writeable flag
        return (data if type(data) is np.ndarray else data.view(np.ndarray)), None
    if not isinstance(data, (list, tuple)) and hasattr(data, "__array_interface__"):
        return np.asarray(data), None
    if not hasattr(data, "__len__") and not isinstance(data, (int, float, np.generic)):
        raise TypeError(f"cannot make an array from {type(data).__name__}: data must be a "
                        "sequence, a NumPy array or an array-like object")
    return np.asarray(data), None


def _fit_element(values: np.ndarray, dtype: Type) -> np.ndarray:
    """Without a shape: NumPy values whose trailing axes give dtype's elements (an (n, 6)
    array of floats is (n, 2) vec3; a lone vector becomes one element)."""
    inner = dtype.shape
    if not inner:
        return values
    while values.ndim > 1 and values.shape[-1] == 1 and values.shape[-len(inner):] != inner:
        values = values[..., 0]
    if values.ndim >= len(inner) and values.shape[values.ndim - len(inner):] == inner:
        return values
    length = math.prod(inner)
    if values.ndim >= 1 and values.shape[-1] == length:
        return values.reshape(values.shape[:-1] + inner)
    if values.ndim >= 1 and values.shape[-1] % length == 0:
        return values.reshape(values.shape[:-1] + (values.shape[-1] // length,) + inner)
    raise ArrayError(f"data of shape {values.shape} does not end in {inner}, the shape of "
                     f"one {dtype}, nor in a multiple of {length} values")


def convert(data, dtype, shape, copy: bool) -> tuple[np.ndarray, Type]:
    """data as host storage for an array: (NumPy values of shape ``shape + element shape``,
    element type). Shares data's memory when copy is False and nothing needs converting
    (strided NumPy data stays strided)."""
    if as_dtype(dtype) is not None and getattr(as_dtype(dtype), "is_struct", False):
        from .structs import struct_storage  # records of a @kl.struct
        return struct_storage(data, as_dtype(dtype), shape), as_dtype(dtype)
    source, carried = _source(data)
    if as_dtype(dtype) is not None:
        dtype = as_dtype(dtype)
    elif carried is not None:
        dtype = carried
    elif isinstance(data, (list, tuple, int, float, bool)):
        dtype = infer_dtype(source)
    else:
        dtype = numpy_dtype(source)
    target = dtype.scalar.np
    if source.size == 0 and source.dtype.kind == "f" and dtype.scalar.np.kind != "f":
        source = source.astype(target)  # np.asarray([]) is float64: any dtype takes it
    if copy:
        values = np.array(source, dtype=target, order="C", copy=True)
    elif source.dtype == target:
        values = source
    else:
        values = source.astype(target)
    inner = dtype.shape
    if shape is not None:
        wanted = as_shape(shape) + inner
        if values.size != math.prod(wanted):
            raise ValueError(f"data with {values.size} values cannot take shape "
                             f"{as_shape(shape)} of {dtype}")
        values = values.reshape(wanted)
    else:
        values = _fit_element(values, dtype)
    if values.ndim == len(inner):  # a single number or element becomes a 1-element array
        values = values.reshape((1,) + inner)
    if inner and not _inner_contiguous(values, dtype):
        values = np.ascontiguousarray(values)
    as_shape(values.shape[: values.ndim - len(inner)])  # checks the dimension count
    return values, dtype


def _inner_contiguous(values: np.ndarray, dtype: Type) -> bool:
    step = values.itemsize
    for n, s in zip(reversed(dtype.shape), reversed(values.strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


# --- Strides and pointers -> storage ------------------------------------------------------

def check_strides(shape: tuple, strides, allocating: bool) -> tuple:
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"Invalid number of strides, expected {len(shape)} strides, got "
                         f"{len(strides)}")
    if allocating and any(s < 0 for s in strides):
        raise NotImplementedError("Negative strides are not supported for newly allocated "
                                  "arrays")
    return strides


def strided_capacity(shape: tuple, strides: tuple, dtype: Type) -> int:
    """Bytes an allocation with these strides needs (0 for an empty shape)."""
    if math.prod(shape) == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + element_bytes(dtype)


def allocate_strided(shape: tuple, strides: tuple, dtype: Type, device, zero: bool):
    """New storage with the given byte strides for the array axes."""
    capacity = strided_capacity(shape, strides, dtype)
    full = shape + dtype.shape
    all_strides = strides + contiguous_strides(dtype.shape, dtype.scalar)[:len(dtype.shape)]
    if device.is_cpu:
        raw = np.zeros(max(capacity, 1), np.uint8) if zero else np.empty(max(capacity, 1),
                                                                           np.uint8)
        return np.ndarray(full, dtype.scalar.np, raw, 0, all_strides)
    raw = storage.allocate((max(capacity, 1),), np.uint8, device, zero=zero)
    return storage.DeviceArray(raw.buffer, 0, full, all_strides, dtype.scalar.np)


class _Interface:
    """An object whose __array_interface__ describes memory at an address (NumPy wraps it
    without copying)."""

    def __init__(self, ptr: int, shape: tuple, strides: tuple, np_dtype,
                 readonly: bool = False):
        self.__array_interface__ = {"data": (int(ptr), bool(readonly)), "shape": shape,
                                    "strides": strides, "typestr": np.dtype(np_dtype).str,
                                    "version": 3}


def from_pointer(ptr: int, shape: tuple, strides, dtype: Type, device, capacity):
    """Storage over memory that someone else owns, at ptr (host or device address)."""
    inner = dtype.shape
    if strides is None:
        strides = contiguous_strides(shape, dtype)
    strides = check_strides(shape, strides, allocating=False)
    full = shape + inner
    all_strides = strides + contiguous_strides(inner, dtype.scalar)[:len(inner)]
    if device.is_cpu:
        return np.asarray(_Interface(ptr, full, all_strides, dtype.scalar.np))
    nbytes = capacity if capacity is not None else strided_capacity(shape, strides, dtype)
    buffer = storage.DeviceBuffer(ptr, nbytes, device.ordinal, lambda: None)
    return storage.DeviceArray(buffer, 0, full, all_strides, dtype.scalar.np)
