"""``kl.utils``: whole-array helpers called from Python (Warp's ``warp.utils``).

Reductions (array_sum, array_inner), prefix sums (array_scan), sorts of key/value pairs
(radix_sort_pairs, segmented_sort_pairs), run-length encoding and dtype casts between
arrays. Each runs on the host through NumPy: a CPU array is read and written in place, a
GPU array goes through a host copy. The signatures, the supported dtypes, the in-place
and scratch-storage conventions and the exception kinds follow Warp 1.19, so Warp code
calling ``wp.utils.X`` runs unchanged; the error texts keep the wording Warp's callers
match on.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .runtime.array import array
from .runtime.array_create import empty
from .runtime import array_convert as convert, storage
from .types import float32, float64, int32, int64, uint32, uint64

__all__ = ["array_cast", "array_inner", "array_scan", "array_sum", "radix_sort_pairs",
           "runlength_encode", "segmented_sort_pairs"]


# ----------------------------------------------------------------------------- helpers

def _name(dtype) -> str:
    return str(dtype)


def _components(a: array) -> int:
    """Scalars per element (3 for vec3, 4 for mat22)."""
    return math.prod(a.dtype.shape) if a.dtype.shape else 1


def _host(a: array) -> np.ndarray:
    """a's elements on the host, shape ``a.shape + element shape``."""
    return np.asarray(a.numpy())


def _store(a: array, values: np.ndarray) -> None:
    """Overwrite every element of a (any strides, any device) with values."""
    a.assign(np.asarray(values, dtype=a.dtype.scalar.np).reshape(a.shape + a.dtype.shape))


def _store_prefix(a: array, values: np.ndarray) -> None:
    """Overwrite the first len(values) elements of the contiguous 1-D array a."""
    storage.write_flat(a._storage(), 0, np.asarray(values, dtype=a.dtype.scalar.np))
    a._bump_version()


def _contiguous(a: array) -> bool:
    """Dense C order with the element size as the last stride (Warp's rule: a strided view
    of one element is not contiguous)."""
    return a.is_contiguous and tuple(a.strides) == convert.contiguous_strides(a.shape, a.dtype)


def _axis(operation: str, axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise IndexError(f"{operation}() axis {axis} is out of bounds for an array with "
                         f"{ndim} dimensions")
    return axis % ndim


def _check_out(out: array, like: array, dtype, shape: tuple) -> None:
    if out.device != like.device:
        raise RuntimeError("out storage device should match values array")
    if out.dtype != dtype:
        raise RuntimeError(f"out array should have type {_name(dtype)}")
    if out.shape != shape:
        raise RuntimeError(f"out array should have shape {shape}")


def _reduce(operation, arrays, out, count, axis, out_dtype, combine):
    """The body of array_sum and array_inner: combine(*blocks) reduces host blocks whose
    first axis is the reduced one; the result has out_dtype's element shape."""
    first = arrays[0]
    if axis is not None:
        axis = _axis(operation, axis, first.ndim)
    if count is None:
        count = first.size if axis is None else first.shape[axis]
    if axis is None:
        shape = (1,)
    else:
        shape = tuple(1 if d == axis else n for d, n in enumerate(first.shape))
    host_return = out is None
    if out is None:
        out = empty(shape, dtype=out_dtype, device=first.device)
    else:
        _check_out(out, first, out_dtype, shape)
    if count <= 0:
        if operation == "array_inner" and axis is None and host_return:
            return 0.0
        out.zero_()
        if axis is None and host_return:
            return out.numpy()[0]
        return out
    if first.dtype.scalar not in (float32, float64):
        raise RuntimeError(f"Unsupported data type: {_name(first.dtype)}")
    k = _components(first)
    if axis is None:
        blocks = [_host(a).reshape(-1, k)[:count] for a in arrays]
        result = combine(*blocks).reshape((1,) + out_dtype.shape)
    else:
        blocks = [np.moveaxis(_host(a), axis, 0)[:count] for a in arrays]
        result = np.expand_dims(combine(*blocks), axis)
    _store(out, result)
    if axis is None and host_return:
        return out.numpy()[0]
    return out


# ----------------------------------------------------------------------------- reductions

def array_sum(values: array, out: array | None = None, value_count: int | None = None,
              axis: int | None = None):
    """The sum of the elements of values (float32/float64 scalars, vectors or matrices,
    summed component-wise): over the first value_count elements in flat order when axis
    is None, else over the first value_count entries along axis (negative axes count from
    the end). Without ``out`` a whole-array sum comes back on the host (a NumPy scalar, or
    an array for vector dtypes); otherwise the result is written to ``out`` (shape (1,)
    for a whole-array sum, values.shape with axis set to 1 otherwise) and ``out`` is
    returned."""
    def combine(block):
        return block.sum(axis=0, dtype=np.float64)
    return _reduce("array_sum", (values,), out, value_count, axis, values.dtype, combine)


_PAIR_CHECKS = {"device": "storage devices", "size": "storage sizes", "dtype": "data types"}


def _check_pair(label: str, x, y, what) -> None:
    """Warp's RuntimeError when two arrays differ in one of ``what`` (device, size, dtype),
    in its wording: "<label> array <storage devices> do not match (x vs y)"."""
    for attr in what:
        u, v = getattr(x, attr), getattr(y, attr)
        if u != v:
            if attr == "dtype":
                u, v = _name(u), _name(v)
            raise RuntimeError(f"{label} array {_PAIR_CHECKS[attr]} do not match ({u} vs {v})")


def array_inner(a: array, b: array, out: array | None = None, count: int | None = None,
                axis: int | None = None):
    """The inner product of a and b (same shape and dtype; vectors and matrices contribute
    the sum of their component products), over everything or along axis, with the count,
    ``out`` and return conventions of :func:`array_sum`. The result has a's scalar type."""
    if a.shape != b.shape:
        raise ValueError(f"array_inner() arguments must have the same shape, got {a.shape} "
                         f"and {b.shape}")
    _check_pair("A and b", a, b, ("device", "dtype"))

    def combine(x, y):
        prod = x.astype(np.float64) * y
        return prod.reshape(prod.shape[:prod.ndim - len(a.dtype.shape)] + (-1,)).sum(
            axis=-1).sum(axis=0) if a.dtype.shape else prod.sum(axis=0)
    return _reduce("array_inner", (a, b), out, count, axis, a.dtype.scalar, combine)


def array_scan(in_array: array, out_array: array, inclusive: bool = True) -> None:
    """Prefix sums of in_array into out_array (same size and dtype; int32, int64, float32
    or float64 scalars or vectors, component-wise): element i of an inclusive scan is the
    sum of elements 0..i, of an exclusive scan the sum of 0..i-1 (0 for the first).
    Multi-dimensional arrays scan in flat order and must be contiguous; a 1-D array may be
    strided."""
    _check_pair("In and out", in_array, out_array, ("device", "size", "dtype"))
    if in_array.size == 0:
        return
    if not _contiguous(in_array) and in_array.ndim != 1:
        raise RuntimeError("Input array must be contiguous or one-dimensional")
    if not _contiguous(out_array) and out_array.ndim != 1:
        raise RuntimeError("Output array must be contiguous or one-dimensional")
    dtype = in_array.dtype
    if (not (dtype.is_scalar or getattr(dtype, "is_vector", False))
            or dtype.scalar not in (int32, int64, float32, float64)):
        raise RuntimeError(f"Unsupported data type: {_name(dtype)}")
    k = _components(in_array)
    flat = _host(in_array).reshape(-1, k)
    total = np.cumsum(flat, axis=0, dtype=dtype.scalar.np)
    if not inclusive:
        total = np.concatenate([np.zeros((1, k), total.dtype), total[:-1]])
    _store(out_array, total)


# ----------------------------------------------------------------------------- sorting

_KEY_BITS = {int32: 32, uint32: 32, float32: 32, int64: 64, uint64: 64, float64: 64}


def _radix_keys(keys: np.ndarray, bits: int) -> np.ndarray:
    """Unsigned integers ordered as keys are (what a radix sort compares): the sign bit
    flipped for signed integers; for floats all bits flipped when negative, else the sign
    bit set."""
    utype = np.uint32 if bits == 32 else np.uint64
    raw = keys.view(utype)
    sign = utype(1 << (bits - 1))
    if keys.dtype.kind == "i":
        return raw ^ sign
    if keys.dtype.kind == "f":
        return np.where(raw & sign, ~raw, raw | sign)
    return raw.copy()


def radix_sort_pairs(keys: array, values: array, count: int, begin_bit: int = 0,
                     end_bit: int | None = None) -> None:
    """Sort keys[:count] ascending, moving values[:count] with them, in place; stable.
    Only key bits [begin_bit, end_bit) are compared (signed integers and floats in their
    order-preserving encoding). keys: int32, uint32, float32, int64, uint64 or float64;
    values: any 4- or 8-byte dtype. Both arrays must be contiguous and hold 2*count
    elements (Warp uses the second half as scratch space; here it is left as it was)."""
    _check_pair("Keys and values", keys, values, ("device",))
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Keys and values array storage must be large enough to contain "
                           "2*count elements")
    types = f"{_name(keys.dtype)}, {_name(values.dtype)}"
    if values.dtype.nbytes not in (4, 8):
        raise RuntimeError(f"Unsupported keys and values data types: {types}")
    for what, arr in (("keys", keys), ("values", values)):
        if not _contiguous(arr):
            raise RuntimeError(f"radix_sort_pairs() requires a contiguous {what} array, got "
                               f"non-contiguous {what} with data types: {types}")
    bits = _KEY_BITS.get(keys.dtype)
    if bits is None:
        raise RuntimeError(f"Unsupported keys and values data types: {types}")
    if end_bit is None:
        end_bit = bits
    if not isinstance(begin_bit, int) or not isinstance(end_bit, int):
        raise RuntimeError("begin_bit and end_bit must be integers")
    if not 0 <= begin_bit <= end_bit <= bits:
        raise RuntimeError(f"Invalid radix sort bit range [{begin_bit}, {end_bit}) for "
                           f"{bits}-bit keys")
    if begin_bit == end_bit:
        return
    k = storage.read_flat(keys._storage(), 0, count).copy()
    v = storage.read_flat(values._storage(), 0, count * _components(values)).copy()
    v = v.reshape(count, -1)
    ordered = _radix_keys(k, bits)
    if begin_bit:
        ordered = ordered >> ordered.dtype.type(begin_bit)
    width = end_bit - begin_bit
    if width < bits:
        ordered = ordered & ordered.dtype.type((1 << width) - 1)
    order = np.argsort(ordered, kind="stable")
    _store_prefix(keys, k[order])
    _store_prefix(values, v[order])


def segmented_sort_pairs(keys: array, values: array, count: int,
                         segment_start_indices: array,
                         segment_end_indices: array | None = None) -> None:
    """Sort each segment [start, end) of keys[:count] ascending (stable), moving values
    with the keys, in place. Without segment_end_indices consecutive entries of
    segment_start_indices bound the segments (N entries, N - 1 segments). keys: int32 or
    float32; values and the segment indices: int32; all contiguous, keys and values with
    2*count elements of storage. A segment outside [0, count] or with end < start raises
    ValueError."""
    if isinstance(count, bool):
        raise TypeError("count must be an integer")
    try:
        count = operator.index(count)
    except TypeError as e:
        raise TypeError("count must be an integer") from e
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    if count > (1 << 31) - 1:
        raise ValueError(f"count must not exceed {(1 << 31) - 1}, got {count}")
    segment_arrays = [segment_start_indices] + (
        [segment_end_indices] if segment_end_indices is not None else [])
    if any(a.device != keys.device for a in [values] + segment_arrays):
        raise RuntimeError("Keys, values, and segment index array storage devices must match")
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Array storage must be large enough to contain 2*count elements")
    for what, arr in (("keys", keys), ("values", values)):
        if not _contiguous(arr):
            raise RuntimeError(f"segmented_sort_pairs() requires a contiguous {what} array")
    for what, arr in zip(("segment_start_indices", "segment_end_indices"), segment_arrays):
        if arr.dtype != int32:
            raise RuntimeError(f"{what} array must be of type int32")
        if arr.ndim != 1:
            raise RuntimeError(f"{what} must be one-dimensional")
        if not _contiguous(arr):
            raise RuntimeError(f"segmented_sort_pairs() requires a contiguous {what} array")
    starts = _host(segment_start_indices).astype(np.int64)
    if segment_end_indices is None:
        ends = starts[1:]
        starts = starts[:-1]
    else:
        if segment_start_indices.size != segment_end_indices.size:
            raise RuntimeError(
                "segment_start_indices and segment_end_indices must have the same size "
                f"({segment_start_indices.size} vs {segment_end_indices.size})")
        ends = _host(segment_end_indices).astype(np.int64)
    if starts.size == 0:
        return
    if keys.dtype not in (int32, float32) or values.dtype != int32:
        raise RuntimeError(f"Unsupported data type: {_name(keys.dtype)}")
    for i, (s, e) in enumerate(zip(starts, ends)):
        if not 0 <= s <= e <= count:
            raise ValueError(f"Invalid segment range at index {i}: [{s}, {e}) must satisfy "
                             f"0 <= start <= end <= count ({count})")
    k = storage.read_flat(keys._storage(), 0, count).copy()
    v = storage.read_flat(values._storage(), 0, count).copy()
    for s, e in zip(starts, ends):
        order = np.argsort(_radix_keys(k[s:e], 32), kind="stable")
        k[s:e] = k[s:e][order]
        v[s:e] = v[s:e][order]
    _store_prefix(keys, k)
    _store_prefix(values, v)


def runlength_encode(values: array, run_values: array, run_lengths: array,
                     run_count: array | None = None, value_count: int | None = None):
    """Run-length encode the first value_count elements of values (int32): the value of
    each run of equal neighbours goes to run_values, its length to run_lengths (int32),
    in order. Returns the number of runs, or writes it to run_count[0] (an int32 array)
    and returns run_count when one is given."""
    if run_values.device != values.device or run_lengths.device != values.device:
        raise RuntimeError("run_values, run_lengths and values storage devices do not match")
    if value_count is None:
        value_count = values.size
    elif value_count < 0:
        raise RuntimeError(f"value_count must be non-negative, got {value_count}")
    if run_values.size < value_count or run_lengths.size < value_count:
        raise RuntimeError(f"Output array storage sizes must be at least equal to value_count "
                           f"({value_count})")
    if values.dtype != run_values.dtype:
        raise RuntimeError(f"values and run_values data types do not match "
                           f"({_name(values.dtype)} vs {_name(run_values.dtype)})")
    if run_lengths.dtype != int32:
        raise RuntimeError("run_lengths array must be of type int32")
    if run_count is not None:
        if run_count.device != values.device:
            raise RuntimeError("run_count storage device does not match other arrays")
        if run_count.dtype != int32:
            raise RuntimeError("run_count array must be of type int32")
    if value_count == 0:
        if run_count is None:
            return 0
        run_count.zero_()
        return run_count
    if values.dtype != int32:
        raise RuntimeError(f"Unsupported data type: {_name(values.dtype)}")
    data = _host(values).reshape(-1)[:value_count]
    starts = np.flatnonzero(np.concatenate([[True], data[1:] != data[:-1]]))
    lengths = np.diff(np.append(starts, value_count))
    for out, result in ((run_values, data[starts]), (run_lengths, lengths)):
        host = _host(out).reshape(-1).copy()
        host[:starts.size] = result
        _store(out, host)
    if run_count is None:
        return int(starts.size)
    host = _host(run_count).reshape(-1).copy()
    host[0] = starts.size
    _store(run_count, host)
    return run_count


# ----------------------------------------------------------------------------- casts

def array_cast(in_array: array, out_array: array, count: int | None = None) -> None:
    """Convert in_array's elements into out_array's dtype (C-style casts: floats to
    integers truncate). Arrays of the same ndim and element shape convert element by
    element (a count, in elements, only for 1-D arrays); otherwise both are treated as
    flat runs of scalars and count counts in_array elements. count defaults to the whole
    input."""
    if in_array.device != out_array.device:
        raise RuntimeError(f"Array storage devices do not match ({in_array.device} vs "
                           f"{out_array.device})")
    src = _host(in_array)
    dst = _host(out_array).copy()
    if in_array.ndim != out_array.ndim or in_array.dtype.shape != out_array.dtype.shape:
        src = src.reshape(-1)
        flat_dst = dst.reshape(-1)
        if count is not None:
            count *= _components(in_array)
        n = src.size if count is None else count
        ndim, in_size, out_size, same_shape = 1, src.size, flat_dst.size, True
    else:
        n = in_array.size if count is None else count
        ndim, in_size, out_size = in_array.ndim, in_array.size, out_array.size
        same_shape = in_array.shape == out_array.shape
        flat_dst = None
    if ndim > 1 and n < in_size:
        raise RuntimeError("Partial cast is not supported for arrays with more than one "
                           "dimension")
    if in_array.dtype.scalar == out_array.dtype.scalar and flat_dst is None:
        from .runtime.array_create import copy
        copy(out_array, in_array, count=n)
        return
    if ndim > 1 and not same_shape:
        raise RuntimeError(f"Array shapes do not match ({in_array.shape} vs {out_array.shape})")
    if n > in_size or n > out_size:
        raise RuntimeError(f"Cast count ({n}) exceeds the input size ({in_size}) or output "
                           f"size ({out_size})")
    target = out_array.dtype.scalar.np
    if flat_dst is not None:
        flat_dst[:n] = src[:n].astype(target)
        dst = flat_dst
    elif ndim == 1:
        dst[:n] = src[:n].astype(target)
    else:
        dst = src.astype(target)
    _store(out_array, dst)
