"""How an array's data leaves it (a base class of ``kl.array``, runtime/array.py):
``numpy()`` and ``list()``, and the protocols other libraries read an array through:
NumPy's ``__array__`` and ``__array_interface__``, DLPack's ``__dlpack__`` and
``__dlpack_device__``, and ``__cuda_array_interface__``. Each marks the storage exported
(exports.py): from then on code outside kernlab may write it.
"""
from __future__ import annotations

import numpy as np

from . import array_convert as convert
from . import exports, storage
from .device import synchronize_device

_EMPTY = np.zeros(1, np.uint8)  # the address NumPy reads for arrays with no elements


class ArrayProtocols:
    # --- Reading --------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The data as NumPy (shape: shape + element shape): on the CPU the array's own
        memory, without copying; on a GPU a host copy (writes to it stay on the host)."""
        data = self._storage()
        if type(data) is np.ndarray:
            exports.mark_exported(data)  # writable outside kernlab from now on
        return storage.to_host(data)

    def list(self) -> list:
        """The elements in flat (C) order: Python numbers, or vector/matrix values (what
        ``dtype(...)`` makes, as Warp's list() gives vector and matrix instances)."""
        flat = storage.to_host(self._storage()).reshape((self.size,) + self.dtype.shape)
        if getattr(self.dtype, "is_struct", False):
            from .structs import record_to_instance
            return [record_to_instance(self.dtype, rec) for rec in flat]
        if self.dtype.is_scalar:
            return flat.tolist()
        return [self.dtype(np.array(element)) for element in flat]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        data = self._storage()
        if type(data) is not np.ndarray:
            raise TypeError(f"np.asarray() cannot read an array on {self.device} in place: "
                            "its memory is on the GPU. a.numpy() gives a host copy")
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"converting {self.dtype} to {np.dtype(dtype)} needs a copy")
            return data.astype(dtype)
        if copy:
            return data.copy()
        exports.mark_exported(data)
        return data

    @property
    def __array_interface__(self) -> dict:
        """NumPy's protocol for host memory; GPU arrays have no such attribute (hasattr() is
        False for them: they speak __cuda_array_interface__). The strides are always given,
        and an empty array has a valid address, so NumPy reads empty arrays too."""
        data = self._storage()
        if type(data) is not np.ndarray:
            raise AttributeError(f"__array_interface__ is for CPU arrays; this array is on "
                                 f"{self.device} (use __cuda_array_interface__ or DLPack)")
        exports.mark_exported(data)
        inner = data.strides[self.ndim:]
        if data.size == 0:
            inner = convert.contiguous_strides(self.dtype.shape, self.dtype.scalar)
        return {"data": (int(data.ctypes.data) or _EMPTY.ctypes.data, False),
                "shape": data.shape, "typestr": data.dtype.str,
                "strides": self.strides + tuple(inner), "version": 3}

    # --- Interchange (kernlab.interop builds on these) ------------------------------------
    # Exported tensors have shape ``shape + dtype.shape``: n vec3 are an (n, 3) tensor.

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this array's memory (zero-copy). On the CPU NumPy makes it;
        on a GPU kernlab's own, after the device has finished kernlab's work (asynchronous
        unchecked launches included), so ``stream`` asks for no waiting."""
        data = self._storage()
        exports.mark_exported(data)
        if type(data) is np.ndarray:
            asked = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
            return data.__dlpack__(
                stream=stream, **{k: v for k, v in asked.items() if v is not None})
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"this array is on {self.device}; DLPack device {dl_device} "
                              "was asked for (copy it with a.to(...) first)")
        from .array_create import clone
        from .dlpack import export_capsule
        return export_capsule(clone(self) if copy else self)

    def __dlpack_device__(self) -> tuple:
        """(DLPack device type, device number): (1, 0) for the CPU, (2, N) for cuda:N."""
        if self.device is None:
            self._storage()  # an annotation: raises
        return (2, self.device.ordinal) if self.device.is_cuda else (1, 0)

    @property
    def __cuda_array_interface__(self) -> dict:
        """Numba/CuPy/PyTorch's protocol for CUDA memory (version 3). CPU arrays have no such
        attribute (they speak __array_interface__), so hasattr() is False for them."""
        if self.device is None or not self.device.is_cuda:
            raise AttributeError("__cuda_array_interface__ is for CUDA arrays; this array is "
                                 "on the CPU (use __array_interface__ or DLPack)")
        data = self._storage()
        exports.mark_exported(data)
        synchronize_device(self.device)  # an unchecked launch may still be running
        return {"shape": data.shape, "typestr": data.dtype.str,
                "strides": None if data.c_contiguous else data.strides,
                "data": (storage.address(data), False), "version": 3,
                "stream": None}  # kernlab's work on it has finished: nothing to wait for
