"""kl.from_dlpack: a kernlab array over another library's memory, never a copy.

The producer's tensor has shape ``array shape + element shape``: an (n, 3) float32 tensor is
n float32 scalars per row, or, with ``dtype=kl.vec3``, an array of n vec3 (the trailing axis
becomes the element). Because DLPack promises zero-copy, anything that would need a copy
(another scalar type, an element whose components are not adjacent in memory) is an error
rather than a silent copy that writes would not reach.

CPU tensors are read by NumPy (``np.from_dlpack``), which also keeps the producer's memory
alive for as long as the array lives. CUDA tensors become arrays on their GPU; kernlab
consumes the capsule itself (kernlab.runtime.dlpack) and hands the memory back through the
producer's deleter when the last array or view over it is gone. kernlab launches run on
the legacy default stream and synchronise, so the producer is asked to make the data ready
for that stream (``stream=1``).
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime.array import MAX_DIMS, array
from ..runtime.device import get_device
from ..runtime.dlpack import KDL_CPU as DL_CPU, KDL_CUDA as DL_CUDA, \
    KDL_CUDA_HOST as DL_CUDA_HOST, import_capsule
from ..runtime import exports
from ..runtime.storage import DeviceArray
from ..types import Type, to_type


def from_dlpack(source, dtype=None, *, requires_grad: bool = False) -> array:
    """An array sharing the memory of ``source``, any object with ``__dlpack__`` and
    ``__dlpack_device__`` (a NumPy array, a torch tensor, a kernlab array, ...).

    dtype: None keeps the tensor's scalar type; a vector or matrix type of the same scalar
    takes the tensor's trailing axis (axes) as the element.
    """
    if not (hasattr(source, "__dlpack__") and hasattr(source, "__dlpack_device__")):
        raise TypeError(f"kl.from_dlpack needs an object with __dlpack__ and "
                        f"__dlpack_device__ (a NumPy array, a torch tensor, ...), not "
                        f"{type(source).__name__}; bare DLPack capsules are not accepted")
    kind, ordinal = (int(x) for x in source.__dlpack_device__())
    if kind == DL_CUDA:
        get_device(f"cuda:{ordinal}")  # an error before anything is consumed if it is absent
        values = import_capsule(source.__dlpack__(stream=1))
    elif kind in (DL_CPU, DL_CUDA_HOST):
        values = np.from_dlpack(source)
    else:
        raise ValueError(f"kernlab arrays cannot use memory of DLPack device type {kind}")
    out = view_storage(values, dtype)
    out.requires_grad = requires_grad
    return out


def view_storage(values, dtype=None) -> array:
    """An array over ``values`` (NumPy for a CPU array, a DeviceArray for a GPU one; shape
    ``array shape + element shape``), without copying; an error where a view is
    impossible."""
    scalar = _scalar_type(values.dtype)
    dtype = scalar if dtype is None else to_type(dtype)
    if dtype.scalar != scalar:
        raise TypeError(f"cannot view {values.dtype} data as {dtype} without a copy; convert "
                        f"the tensor to {dtype.scalar} first")
    inner = dtype.shape
    if values.ndim == len(inner):  # one scalar or one element: a 1-element array
        values = values.with_leading_axis() if isinstance(values, DeviceArray) \
            else values[np.newaxis]
    if values.shape[values.ndim - len(inner):] != inner:
        raise ValueError(f"a tensor of shape {values.shape} does not end in {inner}, the "
                         f"shape of one {dtype}")
    outer = values.shape[: values.ndim - len(inner)]
    if not 1 <= len(outer) <= MAX_DIMS:
        raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions; a tensor of shape "
                         f"{values.shape} of {dtype} would have {len(outer)}")
    if not _element_is_packed(values, dtype):
        raise ValueError(f"the components of each {dtype} are not adjacent in memory "
                         f"(strides {values.strides}); make the tensor contiguous first")
    device = get_device(f"cuda:{values.ordinal}" if isinstance(values, DeviceArray) else "cpu")
    exports.mark_exported(values)  # the tensor's owner can still write it
    return array._wrap(values, dtype, device)


def _scalar_type(np_dtype) -> Type:
    try:
        return to_type(np_dtype)
    except TypeError:
        raise TypeError(f"kernlab has no type for {np_dtype} data; convert the tensor to "
                        "float32, float64, int32, int64, uint32 or bool first") from None


def _element_is_packed(values: np.ndarray, dtype: Type) -> bool:
    """True when each element's components lie next to each other, in C order (kernels
    read a vector or matrix element as one block)."""
    inner = dtype.shape
    axes = range(values.ndim - len(inner), values.ndim)
    for axis, d in zip(axes, range(len(inner))):
        want = values.itemsize * math.prod(inner[d + 1:])
        if values.shape[axis] > 1 and values.strides[axis] != want:
            return False
    return True
