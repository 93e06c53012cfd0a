"""Making arrays: zeros, ones, full, empty and their *_like forms, from_numpy, clone, copy.

Signatures follow Warp 1.19: ``zeros(shape, dtype, device, requires_grad, pinned,
retain_grad, **kw)`` where kw reaches the array constructor (``strides=``);
``zeros_like(src, device, requires_grad, pinned, retain_grad)`` and kernlab's keyword-only
``dtype=`` / ``shape=``. ``pinned`` is accepted and has no effect (kernlab's host memory is
ordinary memory). clone, copy and assign are differentiable on a tape.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..errors import ArrayError
from ..types import float32, matrix, to_type, vector
from . import array_convert as convert
from . import storage
from . import capture as _capture
from .array import _allocate_storage, _record, array
from .device import get_device
from .indexed import indexedarray


def empty(shape=None, dtype=float32, device=None, requires_grad=False, pinned=False,
          retain_grad=False, **kw) -> array:
    """An array whose contents are unspecified until written."""
    strides = kw.pop("strides", None)
    if "n" in kw:  # Warp's older spelling: empty(n=length)
        shape = (kw.pop("n"),)
    if kw:
        raise TypeError(f"unexpected argument(s) {', '.join(kw)}")
    dtype = to_type(dtype)
    dev = get_device(device)
    dims = convert.as_shape(shape)
    if strides is not None:
        out = array(dtype=dtype, shape=dims, strides=strides, device=dev, pinned=pinned)
    else:
        out = array._wrap(_allocate_storage(dims, dtype, dev, zero=False), dtype, dev)
    out.requires_grad = requires_grad
    out.retain_grad = retain_grad
    return out


def zeros(shape=None, dtype=float32, device=None, requires_grad=False, pinned=False,
          retain_grad=False, **kw) -> array:
    """An array of zeros: ``kl.zeros(n)``, ``kl.zeros((n, m), dtype=kl.vec3,
    requires_grad=True)``; shape is an int or a tuple of up to 4 ints."""
    out = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kw)
    out._storage()[...] = 0
    return out


def ones(shape=None, dtype=float32, device=None, requires_grad=False, pinned=False,
         retain_grad=False, **kw) -> array:
    """An array of ones (every component of a vector or matrix dtype is 1)."""
    out = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kw)
    out._write_all(1)
    return out


def full(shape=None, value=0, dtype=None, device=None, requires_grad=False, pinned=False,
         retain_grad=False, **kw) -> array:
    """An array with every element set to value. Without dtype it is inferred from value:
    float -> float32, int -> int32, bool -> bool, a kernlab scalar its type, a sequence of
    n numbers -> a vector, of r x c numbers -> a matrix."""
    dtype = convert.value_dtype(value) if dtype is None else to_type(dtype)
    out = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kw)
    out._write_all(value)
    return out


def _like(src: array, device, requires_grad, retain_grad, dtype, shape) -> dict:
    """Constructor arguments taken from src unless given."""
    return dict(shape=src.shape if shape is None else shape,
                dtype=src.dtype if dtype is None else dtype,
                device=src.device if device is None else device,
                requires_grad=src.requires_grad if requires_grad is None else requires_grad,
                retain_grad=retain_grad)


# The *_like functions keep Warp's positional order (src, device, requires_grad, pinned,
# retain_grad); dtype and shape, kernlab's additions, are keyword-only.

def zeros_like(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False,
               *, dtype=None, shape=None) -> array:
    """Zeros shaped like src: dtype, shape, device and requires_grad from src unless given."""
    return zeros(**_like(src, device, requires_grad, retain_grad, dtype, shape))


def ones_like(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False,
              *, dtype=None, shape=None) -> array:
    """Ones shaped like src: dtype, shape, device and requires_grad from src unless given."""
    return ones(**_like(src, device, requires_grad, retain_grad, dtype, shape))


def empty_like(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False,
               *, dtype=None, shape=None) -> array:
    """An unspecified array shaped like src (dtype, shape, device, requires_grad from src
    unless given)."""
    return empty(**_like(src, device, requires_grad, retain_grad, dtype, shape))


def full_like(src: array, value, device=None, requires_grad=None, pinned=None,
              retain_grad=False, *, dtype=None, shape=None) -> array:
    """An array shaped like src with every element set to value."""
    return full(value=value, **_like(src, device, requires_grad, retain_grad, dtype, shape))


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    """An array over arr's memory when its dtype matches and the device is the CPU, else
    over a converted copy. Without dtype, the trailing axes become a vector or matrix
    element when shape is one or two axes shorter than arr, or (without a shape) when arr
    is 2-D with 2 to 4 columns (a vector per row), as in Warp."""
    arr = np.asarray(arr)
    if dtype is None:
        scalar = convert.numpy_dtype(arr)
        if shape is not None:
            extra = arr.ndim - len(convert.as_shape(shape))
            if extra == 1:
                dtype = vector(arr.shape[-1], scalar)
            elif extra == 2:
                dtype = matrix(arr.shape[-2:], scalar)
        elif arr.ndim == 2 and 2 <= arr.shape[-1] <= 4:
            dtype = vector(arr.shape[-1], scalar)
        elif arr.ndim == 3 and arr.shape[-2:] in ((2, 2), (3, 3), (4, 4)):
            dtype = matrix(arr.shape[-2:], scalar)
    return array(arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad,
                 copy=False)


def clone(src: array, device=None, requires_grad=None, pinned=None,
          retain_grad=False) -> array:
    """A contiguous copy of src (device and requires_grad from src unless given).
    Differentiable on a tape."""
    dev = get_device(src.device if device is None else device)
    out = array._wrap(storage.transfer(src._storage(), dev), src.dtype, dev)
    out.requires_grad = src.requires_grad if requires_grad is None else requires_grad
    out.retain_grad = retain_grad
    _record("clone", out, src)
    return out


def _read_flat(a: array, start: int, count: int) -> np.ndarray:
    """Scalars [start, start + count) of a's storage in flat C order, as NumPy (a vec3
    element is three scalars). On the CPU a view where a is contiguous."""
    return storage.read_flat(a._storage(), start, count)


def _write_flat(a: array, start: int, values) -> None:
    """Write scalars into a's storage from flat index start on. Not counted as a mutation:
    callers bump the version where it is one."""
    storage.write_flat(a._storage(), start, values)


def _check_copy_args(dest, src, dest_offset, src_offset, count) -> tuple:
    kinds = (array, indexedarray)
    if not isinstance(dest, kinds) or not isinstance(src, kinds):
        raise ArrayError("Copy source and destination must be arrays (kl.copy takes two "
                         "kernlab arrays)")
    try:
        dest_offset, src_offset, count = (operator.index(v)
                                          for v in (dest_offset, src_offset, count))
    except TypeError:
        raise ArrayError("Copy src_offset, dest_offset, and count must be integers") from None
    if src_offset < 0:
        raise ArrayError(f"Source offset must be non-negative, got {src_offset}")
    if dest_offset < 0:
        raise ArrayError(f"Destination offset must be non-negative, got {dest_offset}")
    if count < 0:
        raise ArrayError(f"Copy count must be non-negative, got {count}")
    if dest.dtype != src.dtype:
        raise ArrayError(f"cannot copy an array of {src.dtype} into one of {dest.dtype} "
                         f"(Incompatible array data types: destination dtype={dest.dtype}, "
                         f"source dtype={src.dtype})")
    return dest_offset, src_offset, count


def _check_range(count, offset, size, what) -> None:
    if offset + count > size:
        raise ArrayError(f"copying {count} elements {'from' if what == 'source' else 'to'} "
                         f"offset {offset} overruns the {what} array of {size} elements "
                         f"(Trying to copy a range of {count} element(s) exceeds the {what} "
                         f"size ({size}))")


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0,
         count: int = 0, stream=None) -> None:
    """Copy count elements of src, from flat index src_offset on, into dest from flat index
    dest_offset on (elements in C order of the array axes). count 0 copies as much of src
    as fits in dest. Between non-contiguous arrays the shapes must match, and offsets or a
    count need 1-D arrays (Warp's rule). Differentiable on a tape. ``stream`` is accepted
    for Warp's signature; kernlab's copies finish before returning."""
    if _capture.defer("copy", lambda: copy(dest, src, dest_offset, src_offset, count)):
        return
    dest_offset, src_offset, count = _check_copy_args(dest, src, dest_offset, src_offset,
                                                      count)
    if src_offset > src.size or dest_offset > dest.size:
        raise ArrayError(f"copy offsets (source {src_offset}, destination {dest_offset}) lie "
                         f"past the arrays' ends ({src.size} and {dest.size} elements)")
    if count == 0:
        count = min(src.size - src_offset, dest.size - dest_offset)
    if not (src.is_contiguous and dest.is_contiguous):
        partial = src_offset or dest_offset or count != src.size or count != dest.size
        indexed = getattr(src, "is_indexed", False) or getattr(dest, "is_indexed", False)
        if partial and indexed:
            raise ArrayError("dest_offset, src_offset, and count are not supported when "
                             "copying to/from non-contiguous indexed or Fabric arrays")
        if partial and (src.ndim != 1 or dest.ndim != 1):
            raise ArrayError("dest_offset, src_offset, and count are only supported for 1-D "
                             "non-contiguous arrays")
        if not partial and src.shape != dest.shape:
            raise ArrayError(f"Incompatible array shapes: destination shape={dest.shape}, "
                             f"source shape={src.shape}")
    _check_range(count, src_offset, src.size, "source")
    _check_range(count, dest_offset, dest.size, "destination")
    if isinstance(src, indexedarray) or isinstance(dest, indexedarray):
        _copy_indexed(dest, src)
        return
    k = math.prod(dest.dtype.shape)  # scalars per element
    if count == src.size == dest.size and src.shape == dest.shape:  # whole, any strides
        storage.copy_all(dest._storage(), src._storage())
    else:
        storage.copy_flat(dest._storage(), dest_offset * k, src._storage(), src_offset * k,
                          count * k)
    dest._bump_version()
    _record("copy", dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)


def _copy_indexed(dest, src) -> None:
    """A whole copy where either side is an indexedarray (through the host). Not recorded on
    a tape: Warp's indexed arrays have no gradients either."""
    values = src.numpy()
    if isinstance(dest, indexedarray):
        dest._scatter(values)
    else:
        dest._storage()[...] = values
        dest._bump_version()
