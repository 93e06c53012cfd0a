"""DLPack capsules for GPU memory: the C structures, export and import (DLPack 0.8 ABI).

NumPy makes and reads the capsules of host memory; nothing in the standard library does it
for device memory, so this module builds them with ctypes. A capsule named "dltensor" owns
a DLManagedTensor; the consumer renames it "used_dltensor" and calls the tensor's deleter
when it is done with the memory. An exported tensor keeps the array's DeviceArray (and so
its DeviceBuffer) alive until then; an imported one becomes a DeviceBuffer whose release
calls the producer's deleter.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .storage import DeviceArray, DeviceBuffer

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
_INT, _UINT, _FLOAT, _BOOL = 0, 1, 2, 6  # DLDataTypeCode


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]

# PyCapsule keeps a pointer to its name: these bytes objects live as long as the module.
_NAME, _USED_NAME = b"dltensor", b"used_dltensor"
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# Prototypes of our own (ctypes.pythonapi's function objects are shared with every other
# library in the process); PYFUNCTYPE calls keep the GIL and raise a Python error they set.
_api = ctypes.pythonapi
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 _CAPSULE_DESTRUCTOR)(("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))

# --- Export -------------------------------------------------------------------------------

_exported: dict = {}  # address of a DLManagedTensor -> what must live until its deleter


@DELETER
def _delete_exported(managed):
    _exported.pop(ctypes.cast(managed, ctypes.c_void_p).value, None)


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule):
    """A capsule nobody consumed (still named "dltensor") deletes its tensor itself."""
    if _is_valid(capsule, _NAME):
        _exported.pop(_get_pointer(capsule, _NAME), None)


def exported_count() -> int:
    """How many exported tensors are still held for their consumers (for tests)."""
    return len(_exported)


def _dl_dtype(dtype: np.dtype) -> DLDataType:
    code = {"f": _FLOAT, "i": _INT, "u": _UINT, "b": _BOOL}[dtype.kind]
    return DLDataType(code, dtype.itemsize * 8, 1)


def export_capsule(a) -> object:
    """A "dltensor" capsule over a GPU array's memory: shape ``a.shape + element shape``,
    strides in elements, as DLPack counts them. The device first finishes kernlab's work
    (an unchecked launch may still run), so the consumer has nothing to wait for."""
    from .device import synchronize_device
    synchronize_device(a.device)
    data = a._storage()
    ndim, item = data.ndim, data.itemsize
    shape = (ctypes.c_int64 * ndim)(*data.shape)
    strides = (ctypes.c_int64 * ndim)(*(s // item for s in data.strides))
    managed = DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = data.ptr
    tensor.device = DLDevice(KDL_CUDA, data.ordinal)
    tensor.ndim = ndim
    tensor.dtype = _dl_dtype(data.dtype)
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    managed.deleter = _delete_exported
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, strides, data)
    return _new_capsule(address, _NAME, _destroy_capsule)


# --- Import -------------------------------------------------------------------------------

def _np_dtype(dl: DLDataType) -> np.dtype:
    kinds = {_FLOAT: "f", _INT: "i", _UINT: "u", _BOOL: "b"}
    if dl.lanes != 1 or dl.code not in kinds:
        raise TypeError(f"kernlab has no type for DLPack data of code {dl.code}, {dl.bits} "
                        f"bits, {dl.lanes} lanes")
    return np.dtype(f"{kinds[dl.code]}{dl.bits // 8}" if dl.code != _BOOL else "bool")


def import_capsule(capsule) -> DeviceArray:
    """The GPU memory a "dltensor" capsule describes, as a DeviceArray; the capsule is
    consumed, and the producer's deleter runs when the last view of the memory is gone."""
    try:
        address = _get_pointer(id(capsule), _NAME)
    except ValueError:
        raise ValueError("not an unused DLPack capsule (named 'dltensor'); was it consumed "
                         "already?") from None
    managed = DLManagedTensor.from_address(address)
    tensor = managed.dl_tensor
    if tensor.device.device_type != KDL_CUDA:
        raise ValueError(f"the capsule holds memory of DLPack device type "
                         f"{tensor.device.device_type}, not CUDA")
    dtype = _np_dtype(tensor.dtype)
    ndim = tensor.ndim
    shape = tuple(int(tensor.shape[d]) for d in range(ndim))
    if tensor.strides:
        strides = tuple(int(tensor.strides[d]) * dtype.itemsize for d in range(ndim))
    else:  # NULL strides: C order
        strides, step = [], dtype.itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
        strides = tuple(strides)
    _set_name(capsule, _USED_NAME)
    deleter = managed.deleter

    def release():
        if deleter:
            deleter(ctypes.cast(address, ctypes.POINTER(DLManagedTensor)))

    ptr = (tensor.data or 0) + tensor.byte_offset
    nbytes = sum((n - 1) * abs(s) for n, s in zip(shape, strides)) + dtype.itemsize \
        if all(shape) else 0
    buffer = DeviceBuffer(ptr, nbytes, tensor.device.device_id, release)
    return DeviceArray(buffer, 0, shape, strides, dtype)
