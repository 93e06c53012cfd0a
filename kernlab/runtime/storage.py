"""Where an array's elements live: a NumPy array on the CPU, a DeviceArray on a GPU.

An array's storage always has shape ``array shape + element shape`` and byte strides, the
element's own axes last (n vec3 are an (n, 3) float32 storage). On the CPU the storage *is*
a NumPy array, so ``a.numpy()`` shares memory and the CPU backends read it directly. On a
GPU it is a DeviceArray: a strided view of a DeviceBuffer (one allocation from the CUDA
driver, freed when the last view of it is gone). DeviceArray implements the part of the
ndarray interface that arrays use — shape, strides, dtype, nbytes, integer/slice indexing
that gives views, ``d[key] = values`` — so array methods are written once for both, and the
few operations that differ (reading to the host, copying between places, pointers) are the
functions at the bottom of this module.

Every operation here has finished when it returns, like a launch: transfers to and from the
host are synchronous, and device-to-device copies and memsets are followed by a context
synchronise, so another library reading the memory (``__cuda_array_interface__`` says no
stream to wait on) sees the data.
"""
from __future__ import annotations

import math
import warnings
import weakref

import numpy as np


def _driver():
    from ..backends.cuda import driver
    return driver


class DeviceBuffer:
    """One block of GPU memory: from cuMemAlloc (freed with cuMemFree), or lent by another
    library through DLPack (handed back through its deleter). Released when the last
    DeviceArray holding it is garbage."""

    __slots__ = ("ptr", "nbytes", "ordinal", "_release", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, ordinal: int, release):
        self.ptr, self.nbytes, self.ordinal = int(ptr), int(nbytes), int(ordinal)
        self._release = weakref.finalize(self, release)
        self._release.atexit = False  # the process's exit frees all device memory anyway

    @classmethod
    def allocate(cls, nbytes: int, ordinal: int) -> "DeviceBuffer":
        ptr = _driver().alloc(nbytes, ordinal)
        return cls(ptr, nbytes, ordinal, lambda: _free(ptr, ordinal))

    def __repr__(self):
        return f"<DeviceBuffer {self.nbytes} bytes at {self.ptr:#x} on cuda:{self.ordinal}>"


def _free(ptr: int, ordinal: int) -> None:
    try:
        _driver().free(ptr, ordinal)
    except Exception as exc:  # runs from the garbage collector: report, never raise
        warnings.warn(f"freeing {ptr:#x} on cuda:{ordinal} failed: {exc}", RuntimeWarning,
                      stacklevel=2)


def view_layout(shape, strides, index) -> tuple[int, list, list]:
    """Where ``a[index]`` lies in ``a``'s memory (integers and slices, one per leading axis;
    byte strides): (byte offset, shape, strides). Host views and device arrays share it."""
    offset, out_shape, out_strides = 0, [], []
    for axis, k in enumerate(index):
        n, s = shape[axis], strides[axis]
        if isinstance(k, slice):
            if k.step == 0:
                raise ValueError("slice step cannot be zero")
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            offset += start * s if length else 0
            out_shape.append(length)
            out_strides.append(s * step)
        else:
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            offset += (i % n) * s
    return offset, out_shape + list(shape[len(index):]), \
        out_strides + list(strides[len(index):])


class DeviceArray:
    """A strided view of a DeviceBuffer, shaped like a NumPy array (byte strides)."""

    __slots__ = ("buffer", "offset", "shape", "strides", "dtype", "__weakref__")

    def __init__(self, buffer: DeviceBuffer, offset: int, shape: tuple, strides: tuple,
                 dtype: np.dtype):
        self.buffer, self.offset = buffer, offset
        self.shape, self.strides, self.dtype = shape, strides, dtype

    @classmethod
    def empty(cls, shape: tuple, dtype, ordinal: int) -> "DeviceArray":
        dtype = np.dtype(dtype)
        strides, step = [], dtype.itemsize
        for n in reversed(shape):
            strides.append(step)
            step *= n
        buffer = DeviceBuffer.allocate(math.prod(shape) * dtype.itemsize, ordinal)
        return cls(buffer, 0, tuple(shape), tuple(reversed(strides)), dtype)

    # --- Description ------------------------------------------------------------------

    @property
    def ptr(self) -> int:
        return self.buffer.ptr + self.offset

    @property
    def ordinal(self) -> int:
        return self.buffer.ordinal

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def c_contiguous(self) -> bool:
        """NumPy's rule: strides of the C layout on every axis longer than 1."""
        if self.size == 0:
            return True
        expected = self.dtype.itemsize
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def span(self) -> tuple[int, int]:
        """The byte range [lo, hi) relative to ptr that the elements occupy (size > 0)."""
        lo = sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        return lo, hi + self.dtype.itemsize

    def __repr__(self):
        return (f"<DeviceArray {self.dtype} shape {self.shape} strides {self.strides} at "
                f"{self.ptr:#x} on cuda:{self.ordinal}>")

    # --- Views ------------------------------------------------------------------------

    def __getitem__(self, key) -> "DeviceArray":
        """A view: integers drop an axis, slices (any step) keep it."""
        if key is Ellipsis:
            return self
        index = key if isinstance(key, tuple) else (key,)
        if len(index) > self.ndim:
            raise IndexError(f"{len(index)} indices for a storage of {self.ndim} axes")
        for k in index:
            if not isinstance(k, (int, np.integer, slice)):
                raise TypeError(f"GPU arrays take integer and slice indices, not {k!r}; "
                                "a.numpy() gives a host copy to index in other ways")
        offset, shape, strides = view_layout(self.shape, self.strides, index)
        offset += self.offset
        return DeviceArray(self.buffer, offset, tuple(shape), tuple(strides), self.dtype)

    def with_leading_axis(self) -> "DeviceArray":
        """The same memory with a new first axis of length 1 (a 0-d tensor as 1 element)."""
        return DeviceArray(self.buffer, self.offset, (1,) + self.shape,
                           (self.nbytes,) + self.strides, self.dtype)

    # --- Reading and writing ----------------------------------------------------------

    def get(self) -> np.ndarray:
        """A C-ordered host copy."""
        out = np.empty(self.shape, self.dtype)
        if self.size == 0:
            return out
        driver = _driver()
        if self.c_contiguous:
            driver.memcpy_dtoh(out.ctypes.data, self.ptr, out.nbytes, self.ordinal)
            return out
        lo, hi = self.span()
        staging = np.empty(hi - lo, np.uint8)
        driver.memcpy_dtoh(staging.ctypes.data, self.ptr + lo, hi - lo, self.ordinal)
        out[...] = np.ndarray(self.shape, self.dtype, staging, -lo, self.strides)
        return out

    def __setitem__(self, key, value) -> None:
        self[key].set(value)

    def set(self, value) -> None:
        """Write value (a DeviceArray, or anything NumPy broadcasts to this shape)."""
        if self.size == 0:
            return
        if isinstance(value, DeviceArray):
            if value.shape == self.shape and value.ordinal == self.ordinal \
                    and self.c_contiguous and value.c_contiguous \
                    and not may_share_memory(self, value):
                _driver().memcpy_dtod(self.ptr, value.ptr, self.nbytes, self.ordinal)
                _driver().synchronize(self.ordinal)
                return
            value = value.get()
        values = np.asarray(value, dtype=self.dtype)
        if self.c_contiguous and _memset(self, values):
            return
        self.upload(np.ascontiguousarray(np.broadcast_to(values, self.shape)))

    def upload(self, host: np.ndarray) -> None:
        """Copy a C-contiguous host array of this shape and dtype into this view."""
        driver = _driver()
        if self.c_contiguous:
            driver.memcpy_htod(self.ptr, host.ctypes.data, self.nbytes, self.ordinal)
            return
        lo, hi = self.span()  # read, modify and write back the bytes the view spans
        staging = np.empty(hi - lo, np.uint8)
        driver.memcpy_dtoh(staging.ctypes.data, self.ptr + lo, hi - lo, self.ordinal)
        np.ndarray(self.shape, self.dtype, staging, -lo, self.strides)[...] = host
        driver.memcpy_htod(self.ptr + lo, staging.ctypes.data, hi - lo, self.ordinal)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("GPU memory cannot be read as a NumPy array in place; use .get() "
                        "for a host copy")


def _memset(dest: DeviceArray, values: np.ndarray) -> bool:
    """Fill a contiguous view with one repeated byte or 32-bit word when values is a single
    number (or one element whose components are equal); False when it is not that simple."""
    if not 0 < values.size <= 16:  # a whole array of values is uploaded instead
        return False
    raw = np.ascontiguousarray(values).tobytes()
    pattern = raw[:values.itemsize]
    if raw != pattern * values.size:  # compares bits: 0.0 and -0.0 differ
        return False
    driver = _driver()
    if pattern == pattern[:1] * len(pattern):
        driver.memset(dest.ptr, pattern[0], dest.nbytes, dest.ordinal)
    elif len(pattern) == 4 or (len(pattern) == 8 and pattern[:4] == pattern[4:]):
        word = int.from_bytes(pattern[:4], "little")
        driver.memset_d32(dest.ptr, word, dest.nbytes // 4, dest.ordinal)
    else:
        return False
    driver.synchronize(dest.ordinal)
    return True


# --- The operations that differ between places --------------------------------------------
# ``data`` below is an array's storage: an np.ndarray (CPU) or a DeviceArray (GPU).

def allocate(shape: tuple, dtype, device, zero: bool = False):
    """New storage on device: zeroed, or with unspecified contents."""
    if device.is_cpu:
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    out = DeviceArray.empty(shape, dtype, device.ordinal)
    if zero:
        out[...] = 0
    return out


def to_host(data) -> np.ndarray:
    """The storage as NumPy: itself on the CPU, a copy from a GPU."""
    return data if type(data) is np.ndarray else data.get()


def address(data) -> int:
    """Address of the first element (a host or device pointer); 0 when there is none."""
    if type(data) is np.ndarray:
        return int(data.ctypes.data) if data.size else 0
    return data.ptr if data.size else 0


def is_contiguous(data) -> bool:
    return bool(data.flags.c_contiguous) if type(data) is np.ndarray else data.c_contiguous


def transfer(data, device):
    """A C-ordered copy of the storage on device."""
    if device.is_cpu:
        return np.array(data, order="C", copy=True) if type(data) is np.ndarray \
            else data.get()
    out = allocate(data.shape, data.dtype, device)
    copy_flat(out, 0, data, 0, math.prod(data.shape))
    return out


def read_flat(data, start: int, count: int) -> np.ndarray:
    """Scalars [start, start + count) in flat C order, as NumPy (on the CPU a view where
    the storage is contiguous)."""
    if type(data) is np.ndarray:
        return data.reshape(-1)[start:start + count]  # a copy when data is strided
    if data.c_contiguous:
        out = np.empty(count, data.dtype)
        if count:
            _driver().memcpy_dtoh(out.ctypes.data, data.ptr + start * data.itemsize,
                                  out.nbytes, data.ordinal)
        return out
    return data.get().reshape(-1)[start:start + count]


def write_flat(data, start: int, values) -> None:
    """Write scalars into [start, start + len(values)) in flat C order."""
    values = np.asarray(values, dtype=data.dtype).reshape(-1)
    count = values.size
    if type(data) is np.ndarray:
        if data.flags.c_contiguous:
            data.reshape(-1)[start:start + count] = values
        else:
            data[np.unravel_index(np.arange(start, start + count), data.shape)] = values
        return
    if data.c_contiguous:
        if count:
            values = np.ascontiguousarray(values)
            _driver().memcpy_htod(data.ptr + start * data.itemsize, values.ctypes.data,
                                  values.nbytes, data.ordinal)
        return
    host = data.get()
    host.reshape(-1)[start:start + count] = values
    data.upload(host)


def copy_all(dst, src) -> None:
    """Copy one storage into another of the same shape and dtype."""
    if type(dst) is np.ndarray:
        dst[...] = src if type(src) is np.ndarray else src.get()
    elif is_contiguous(dst) and is_contiguous(src):
        copy_flat(dst, 0, src, 0, math.prod(dst.shape))
    else:  # strided on a GPU: through the host, strides and all
        dst.set(src)


def copy_flat(dst, dst_start: int, src, src_start: int, count: int) -> None:
    """Copy count scalars between two storages (same dtype), in flat C order, whichever
    places they are on: memcpy where both are contiguous, else through the host."""
    if count == 0:
        return
    on_host = type(dst) is np.ndarray, type(src) is np.ndarray
    if all(on_host):
        write_flat(dst, dst_start, read_flat(src, src_start, count))
        return
    if is_contiguous(dst) and is_contiguous(src):
        item = dst.dtype.itemsize
        to, frm, nbytes = address(dst) + dst_start * item, address(src) + src_start * item, \
            count * item
        driver = _driver()
        if on_host[0]:
            driver.memcpy_dtoh(to, frm, nbytes, src.ordinal)
            return
        if on_host[1]:
            driver.memcpy_htod(to, frm, nbytes, dst.ordinal)
            return
        if dst.ordinal == src.ordinal and not may_share_memory(dst, src):
            driver.memcpy_dtod(to, frm, nbytes, dst.ordinal)
            driver.synchronize(dst.ordinal)
            return
    write_flat(dst, dst_start, np.array(read_flat(src, src_start, count)))


def may_share_memory(a, b) -> bool:
    """Whether two storages may overlap: NumPy's exact test where it is cheap (so two
    fields of an array of structs, or a[::2] and a[1::2], do not), its bounds test where
    not; on a GPU, the byte ranges."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        try:
            return bool(np.shares_memory(a, b, max_work=10_000))
        except np.exceptions.TooHardError:
            return bool(np.may_share_memory(a, b))
    if type(a) is np.ndarray or type(b) is np.ndarray or a.size == 0 or b.size == 0:
        return False
    if a.ordinal != b.ordinal:
        return False
    (alo, ahi), (blo, bhi) = a.span(), b.span()
    if not (a.ptr + alo < b.ptr + bhi and b.ptr + blo < a.ptr + ahi):
        return False
    try:  # the byte ranges meet; NumPy's exact test on the addresses (never read)
        return bool(np.shares_memory(_address_view(a), _address_view(b), max_work=10_000))
    except (np.exceptions.TooHardError, ValueError, TypeError):
        return True


class _Addresses:
    def __init__(self, d: DeviceArray):
        self.__array_interface__ = {"shape": d.shape, "typestr": d.dtype.str,
                                    "strides": d.strides, "data": (d.ptr, True), "version": 3}


def _address_view(d: DeviceArray) -> np.ndarray:
    """A NumPy array with a device array's addresses, shape and strides, for overlap tests
    only: its memory is on the GPU and must never be read."""
    return np.asarray(_Addresses(d))
