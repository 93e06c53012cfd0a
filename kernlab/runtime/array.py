"""Arrays: memory on the CPU or a GPU with a kernlab element type, a device and a gradient.

An array's storage has shape ``a.shape + a.dtype.shape``: an array of n vec3 has shape (n,)
and holds an (n, 3) float32 buffer. On the CPU the storage is a NumPy array, so
``a.numpy()`` is a zero-copy view; on a GPU it is a DeviceArray (see storage.py) and
``a.numpy()`` is a host copy, as in Warp: write through ``a.assign``, ``a.fill_``,
``a[...] = values`` or kernels, never into what ``numpy()`` returned. ``np.asarray(a)`` of
a GPU array is an error (NumPy would need a copy it cannot ask for; Warp refuses it too).
Device memory is freed when the last array or view using it is gone.

``kl.array(dtype=float, ndim=2)`` with neither data nor shape is an annotation-only
instance: it describes a kernel parameter's type and has no storage.

dtype inference when none is given: a NumPy array (or a kernlab array) keeps its dtype, so
float64 data stays float64; plain Python data (lists, tuples, numbers) becomes float32 when
it holds floats, int32 when it holds integers that fit (int64 otherwise) and bool for bools.
Warp would give float64 / int64 for Python lists; kernlab follows its own `float` = float32.
"""
from __future__ import annotations

import math

import numpy as np

from ..types import ArrayType, Type, bool_, float32, int32, int64, matrix, to_type, vector
from . import storage
from .device import Device, get_device, synchronize_device
from .storage import DeviceArray

MAX_DIMS = 4  # kernels index arrays of 1 to 4 dimensions, as in Warp


# --- Tape hook ----------------------------------------------------------------------------
# The tape installs a callable here; clone, copy and assign report themselves to it so that
# gradients flow from the copy back to its source.
_TAPE_HOOK = [None]


def _record(kind: str, dest: "array", src: "array", **info) -> None:
    hook = _TAPE_HOOK[0]
    if hook is not None:
        hook(kind, dest, src, **info)


# --- Helpers ------------------------------------------------------------------------------

def _as_shape(shape) -> tuple:
    """An int or a sequence of ints -> a tuple of non-negative ints (None -> (0,))."""
    if shape is None:
        shape = 0
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"array shape {shape} has a negative dimension")
    if not 1 <= len(shape) <= MAX_DIMS:
        raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, not {len(shape)} "
                         f"(shape {shape})")
    return shape


def _infer_dtype(values: np.ndarray) -> Type:
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


def _numpy_dtype(values: np.ndarray) -> Type:
    try:
        return to_type(values.dtype)
    except TypeError:
        raise TypeError(f"NumPy dtype {values.dtype} has no kernlab type; pass dtype= to "
                        "convert it (for example dtype=kl.float32)") from None


def _value_dtype(value) -> Type:
    """The element type kl.full infers from its fill value: a number gives a scalar type, a
    sequence of n numbers a vector of length n, an r x c nested sequence a matrix."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if hasattr(value, "_type") and getattr(value._type, "is_struct", False):
        return value._type  # an instance of a @kl.struct
    if isinstance(value, np.generic):
        return _numpy_dtype(np.asarray(value))
    values = np.asarray(value)
    scalar = _numpy_dtype(values) if isinstance(value, np.ndarray) else _infer_dtype(values)
    if values.ndim == 0:
        return scalar
    if values.ndim == 1:
        return vector(values.shape[0], scalar)
    if values.ndim == 2:
        return matrix(values.shape, scalar)
    raise ValueError(f"a fill value of shape {values.shape} is neither a scalar, a vector "
                     "nor a matrix")


def _element_value(value, dtype: Type) -> np.ndarray:
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


# --- The array class ----------------------------------------------------------------------

class array:
    """An n-dimensional array of scalars, vectors or matrices (see the module docstring).

    array(data=None, dtype=None, shape=None, device=None, requires_grad=False, ndim=None,
    copy=True). With copy=False NumPy data of the right dtype and C layout is shared, not
    copied.
    """

    # True: stores into this array leave its gradient in place during backward instead of
    # consuming it (Warp's retain_grad); set per array, e.g. ``a.retain_grad = True``.
    retain_grad = False

    def __init__(self, data=None, dtype=None, shape=None, device=None, requires_grad=False,
                 ndim=None, copy=True):
        self._grad: array | None = None
        self._vbox = [0]  # version counter, shared with views of the same memory
        if data is None and shape is None:
            self._init_annotation(dtype, ndim)
            return
        self.is_annotation = False
        self.device = get_device(device)
        if data is None:
            self.dtype = float32 if dtype is None else to_type(dtype)
            values = storage.allocate(_as_shape(shape) + self.dtype.shape,
                                      self.dtype.scalar.np, self.device, zero=True)
        else:
            values, self.dtype = _convert(data, dtype, shape, copy and self.device.is_cpu)
            if not self.device.is_cpu:
                values = storage.transfer(values, self.device)
        self._data = values
        self.shape = values.shape[: values.ndim - len(self.dtype.shape)]
        self.ndim = len(self.shape)
        if ndim is not None and ndim != self.ndim:
            raise ValueError(f"data of shape {self.shape} has {self.ndim} dimensions, "
                             f"not ndim={ndim}")
        self.requires_grad = requires_grad

    def _init_annotation(self, dtype, ndim) -> None:
        self.is_annotation = True
        self.dtype = float32 if dtype is None else to_type(dtype)
        self.ndim = 1 if ndim is None else int(ndim)
        if not 1 <= self.ndim <= MAX_DIMS:
            raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, not ndim={ndim}")
        self.shape = None
        self.device = None
        self._data = None

    def __class_getitem__(cls, dtype) -> "array":
        """``kl.array[float]``: Warp's subscript spelling of a 1-D array annotation."""
        return cls(dtype=dtype)

    @classmethod
    def _wrap(cls, values, dtype: Type, device: Device, grad=None, vbox=None) -> "array":
        """An array around existing storage (a fresh buffer or a view of another array's)."""
        out = cls.__new__(cls)
        out.is_annotation = False
        out.dtype, out.device, out._data = dtype, device, values
        out.shape = values.shape[: values.ndim - len(dtype.shape)]
        out.ndim = len(out.shape)
        out._grad = grad
        out._vbox = [0] if vbox is None else vbox
        return out

    def _storage(self):
        """The storage (np.ndarray or DeviceArray); an error for annotation-only instances."""
        if self._data is None:
            raise TypeError(f"{self!r} is a type annotation and holds no data; "
                            "give data= or shape= to allocate an array")
        return self._data

    # --- Description ----------------------------------------------------------------------

    @property
    def type(self) -> ArrayType:
        """The kernel type of this array: ArrayType(dtype, ndim)."""
        return ArrayType(self.dtype, self.ndim)

    @property
    def size(self) -> int:
        """Number of elements (a vec3 counts as one)."""
        return math.prod(self._storage().shape[: self.ndim])

    @property
    def strides(self) -> tuple:
        """Byte strides of the array axes (the element's own axes are left out)."""
        return tuple(int(s) for s in self._storage().strides[: self.ndim])

    @property
    def ptr(self) -> int:
        """Address of the first element (a device pointer on a GPU); 0 for an empty array."""
        data = self._data
        if type(data) is np.ndarray:  # the CPU case inline: launches ask for it
            return int(data.ctypes.data) if data.size else 0
        return storage.address(self._storage())

    @property
    def is_contiguous(self) -> bool:
        return storage.is_contiguous(self._storage())

    @property
    def capacity(self) -> int:
        """Bytes the elements occupy."""
        return int(self._storage().nbytes)

    nbytes = capacity

    @property
    def _version(self) -> int:
        """Counts mutations made through the Python API and launches that write the array."""
        return self._vbox[0]

    def _bump_version(self) -> None:
        self._vbox[0] += 1

    # --- Read tracking (kl.config.verify_autograd_array_access; see runtime/tape.py) -----

    _is_read = False

    def mark_read(self) -> None:
        """Flag this array (and the arrays it is a view of) as read by a recorded launch."""
        a = self
        while a is not None:
            a._is_read = True
            a = getattr(a, "_ref", None)

    def mark_write(self, **where) -> None:
        """A recorded launch or copy writes this array: warn if a recorded launch read it."""
        if self._is_read:
            from .tape import warn_overwrite
            warn_overwrite(self, **where)

    def mark_init(self) -> None:
        self._is_read = False

    # --- Gradients ------------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._grad is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        """True allocates a zero gradient on the array's device (once); False drops it."""
        if value and self._grad is None:
            values = storage.allocate(self._storage().shape, self.dtype.scalar.np,
                                      self.device, zero=True)
            self._grad = array._wrap(values, self.dtype, self.device)
        elif not value:
            self._grad = None

    @property
    def grad(self) -> "array | None":
        return self._grad

    @grad.setter
    def grad(self, value: "array | None") -> None:
        if value is not None:
            if not isinstance(value, array) or value.is_annotation:
                raise TypeError(f"a gradient must be a kernlab array, not {type(value).__name__}")
            if value.shape != self.shape or value.dtype != self.dtype:
                raise ValueError(f"gradient of shape {value.shape} and dtype {value.dtype} "
                                 f"does not match the array ({self.shape}, {self.dtype})")
            if value.device != self.device:
                raise ValueError(f"a gradient on {value.device} for an array on "
                                 f"{self.device}; make it on {self.device}")
        self._grad = value

    # --- Reading --------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The data as NumPy (shape: shape + element shape): on the CPU the array's own
        memory, without copying; on a GPU a host copy (writes to it stay on the host)."""
        return storage.to_host(self._storage())

    def list(self) -> list:
        """The elements in flat (C) order: Python numbers, or NumPy arrays for vector and
        matrix elements."""
        flat = self.numpy().reshape((self.size,) + self.dtype.shape)
        if getattr(self.dtype, "is_struct", False):
            from .structs import record_to_instance
            return [record_to_instance(self.dtype, rec) for rec in flat]
        if self.dtype.is_scalar:
            return flat.tolist()
        return [np.array(element) for element in flat]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        data = self._storage()
        if type(data) is not np.ndarray:
            raise TypeError(f"np.asarray() cannot read an array on {self.device} in place: "
                            "its memory is on the GPU. a.numpy() gives a host copy")
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"converting {self.dtype} to {np.dtype(dtype)} needs a copy")
            return data.astype(dtype)
        return data.copy() if copy else data

    @property
    def __array_interface__(self) -> dict:
        """NumPy's protocol for host memory; GPU arrays have no such attribute (hasattr() is
        False for them: they speak __cuda_array_interface__)."""
        data = self._storage()
        if type(data) is not np.ndarray:
            raise AttributeError(f"__array_interface__ is for CPU arrays; this array is on "
                                 f"{self.device} (use __cuda_array_interface__ or DLPack)")
        return data.__array_interface__

    # --- Interchange (kernlab.interop builds on these) ------------------------------------
    # Exported tensors have shape ``shape + dtype.shape``: n vec3 are an (n, 3) tensor.

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this array's memory (zero-copy). On the CPU NumPy makes it;
        on a GPU kernlab's own, after the device has finished kernlab's work (asynchronous
        unchecked launches included), so ``stream`` asks for no waiting."""
        data = self._storage()
        if type(data) is np.ndarray:
            asked = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
            return data.__dlpack__(
                stream=stream, **{k: v for k, v in asked.items() if v is not None})
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"this array is on {self.device}; DLPack device {dl_device} "
                              "was asked for (copy it with a.to(...) first)")
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
        synchronize_device(self.device)  # an unchecked launch may still be running
        return {"shape": data.shape, "typestr": data.dtype.str,
                "strides": None if data.c_contiguous else data.strides,
                "data": (self.ptr, False), "version": 3,
                "stream": None}  # kernlab's work on it has finished: nothing to wait for

    def __len__(self) -> int:
        return self._storage().shape[0]

    def __getitem__(self, key):
        """a[i] (all indices integers) gives the element as NumPy; anything with a slice, or
        fewer indices than dimensions, gives an array view sharing memory (on a GPU too;
        an element of a GPU array is read back as NumPy)."""
        data = self._storage()
        index = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, (int, np.integer, slice)) for k in index):
            raise TypeError("kernlab arrays take integer and slice indices; "
                            "use a.numpy()[...] for other kinds of indexing")
        if len(index) > self.ndim:
            raise IndexError(f"{len(index)} indices for an array of {self.ndim} dimensions")
        result = data[index]
        kept = self.ndim - sum(not isinstance(k, slice) for k in index)
        if kept == 0:
            return result.get()[()] if type(result) is DeviceArray else result
        grad = self._grad[key] if self._grad is not None else None
        return array._wrap(result, self.dtype, self.device, grad, self._vbox)

    # --- Writing --------------------------------------------------------------------------

    def __setitem__(self, key, value) -> None:
        data = self._storage()
        if isinstance(value, array):  # GPU to GPU stays on the device
            source = value._storage()
            value = source if type(source) is type(data) else value.numpy()
        data[key] = value
        self._bump_version()

    def _write_all(self, value) -> None:
        self._storage()[...] = _element_value(value, self.dtype)

    def fill_(self, value) -> "array":
        """Set every element to value (a scalar; for vector and matrix arrays also one
        element's worth of components)."""
        self._write_all(value)
        self._bump_version()
        return self

    def zero_(self) -> "array":
        self._storage()[...] = 0
        self._bump_version()
        return self

    def assign(self, src) -> "array":
        """Copy src (an array of the same shape and dtype, or NumPy / list data of shape
        ``shape + element shape``) into this array. Differentiable on a tape."""
        data = self._storage()
        if isinstance(src, array):
            if src.dtype != self.dtype or src.shape != self.shape:
                raise ValueError(f"cannot assign an array of {src.dtype} {src.shape} to one "
                                 f"of {self.dtype} {self.shape}")
            storage.copy_all(data, src._storage())
        else:
            values = np.asarray(src, dtype=self.dtype.scalar.np)
            if values.shape != data.shape:
                raise ValueError(f"cannot assign data of shape {values.shape} to an array "
                                 f"of {self.dtype} with shape {self.shape} (expected data "
                                 f"of shape {data.shape})")
            data[...] = values
        self._bump_version()
        if isinstance(src, array):
            _record("assign", self, src)
        return self

    def to(self, device) -> "array":
        """This array on device: itself when it is already there, else a copy (with a
        gradient if this array has one; differentiable on a tape, like clone)."""
        dev = get_device(device)
        if dev == self.device:
            return self
        return clone(self, device=dev)

    # --- Printing -------------------------------------------------------------------------

    def __str__(self) -> str:
        if self.is_annotation:
            return repr(self)
        return str(self.numpy())

    def __repr__(self) -> str:
        if self.is_annotation:
            return f"array(dtype={self.dtype}, ndim={self.ndim})"
        body = np.array2string(self.numpy(), separator=", ", prefix="array(")
        return f"array({body}, dtype={self.dtype}, device={self.device})"


Array = array


def _convert(data, dtype, shape, copy: bool) -> tuple[np.ndarray, Type]:
    """data as storage for an array: (NumPy values of shape ``shape + element shape``,
    element type). Shares data's memory when copy is False and nothing needs converting."""
    if dtype is not None and getattr(to_type(dtype), "is_struct", False):
        from .structs import struct_storage  # records of a @kl.struct
        return struct_storage(data, to_type(dtype), shape), to_type(dtype)
    if isinstance(data, array):
        source, inferred = data.numpy(), data.dtype
    elif isinstance(data, np.ndarray):
        source, inferred = data, None
    else:
        source, inferred = np.asarray(data), None
    if dtype is not None:
        dtype = to_type(dtype)
    elif inferred is not None:
        dtype = inferred
    elif isinstance(data, np.ndarray):
        dtype = _numpy_dtype(source)
    else:
        dtype = _infer_dtype(source)
    target = dtype.scalar.np
    if copy:
        values = np.array(source, dtype=target, order="C", copy=True)
    else:
        values = np.ascontiguousarray(source, dtype=target)
    inner = dtype.shape
    if shape is not None:
        wanted = _as_shape(shape) + inner
        if values.size != math.prod(wanted):
            raise ValueError(f"data with {values.size} values cannot take shape "
                             f"{_as_shape(shape)} of {dtype}")
        values = values.reshape(wanted)
    if values.shape[max(values.ndim - len(inner), 0):] != inner or values.ndim < len(inner):
        raise ValueError(f"data of shape {values.shape} does not end in {inner}, the shape "
                         f"of one {dtype}")
    if values.ndim == len(inner):  # a single number or element becomes a 1-element array
        values = values.reshape((1,) + inner)
    _as_shape(values.shape[: values.ndim - len(inner)])  # checks the dimension count
    return values, dtype


# --- Constructors -------------------------------------------------------------------------

def _allocate(shape, dtype, device, requires_grad, zero=False) -> array:
    """A new array, zeroed or with unspecified contents."""
    dtype = to_type(dtype)
    dev = get_device(device)
    values = storage.allocate(_as_shape(shape) + dtype.shape, dtype.scalar.np, dev, zero)
    out = array._wrap(values, dtype, dev)
    out.requires_grad = requires_grad
    return out


def zeros(shape=None, dtype=float32, device=None, requires_grad=False) -> array:
    return _allocate(shape, dtype, device, requires_grad, zero=True)


def ones(shape=None, dtype=float32, device=None, requires_grad=False) -> array:
    out = _allocate(shape, dtype, device, requires_grad)
    out._write_all(1)
    return out


def empty(shape=None, dtype=float32, device=None, requires_grad=False) -> array:
    """An array whose contents are unspecified until written."""
    return _allocate(shape, dtype, device, requires_grad)


def full(shape=None, value=0, dtype=None, device=None, requires_grad=False) -> array:
    """An array with every element set to value. Without dtype it is inferred from value:
    float -> float32, int -> int32, bool -> bool, a sequence of n numbers -> a vector."""
    dtype = _value_dtype(value) if dtype is None else to_type(dtype)
    out = _allocate(shape, dtype, device, requires_grad)
    out._write_all(value)
    return out


def _like(src: array, device, requires_grad, dtype, shape) -> dict:
    """Constructor arguments taken from src unless given."""
    return dict(shape=src.shape if shape is None else shape,
                dtype=src.dtype if dtype is None else dtype,
                device=src.device if device is None else device,
                requires_grad=src.requires_grad if requires_grad is None else requires_grad)


# The *_like functions keep Warp's positional order (src, device, requires_grad); dtype and
# shape, kernlab's additions, are keyword-only.

def zeros_like(src: array, device=None, requires_grad=None, *, dtype=None, shape=None):
    return zeros(**_like(src, device, requires_grad, dtype, shape))


def ones_like(src: array, device=None, requires_grad=None, *, dtype=None, shape=None):
    return ones(**_like(src, device, requires_grad, dtype, shape))


def empty_like(src: array, device=None, requires_grad=None, *, dtype=None, shape=None):
    return empty(**_like(src, device, requires_grad, dtype, shape))


def full_like(src: array, value, device=None, requires_grad=None, *, dtype=None, shape=None):
    return full(value=value, **_like(src, device, requires_grad, dtype, shape))


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    """An array over arr's memory when its dtype matches and it is C-contiguous, else over a
    converted copy. Without dtype but with a shape one or two axes shorter than arr, the
    trailing axes become a vector or matrix element (as in Warp)."""
    arr = np.asarray(arr)
    if dtype is None and shape is not None:
        extra = arr.ndim - len(_as_shape(shape))
        scalar = _numpy_dtype(arr)
        if extra == 1:
            dtype = vector(arr.shape[-1], scalar)
        elif extra == 2:
            dtype = matrix(arr.shape[-2:], scalar)
    return array(arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad,
                 copy=False)


def clone(src: array, device=None, requires_grad=None) -> array:
    """A copy of src (device and requires_grad from src unless given). Differentiable on a
    tape."""
    dev = get_device(src.device if device is None else device)
    out = array._wrap(storage.transfer(src._storage(), dev), src.dtype, dev)
    out.requires_grad = src.requires_grad if requires_grad is None else requires_grad
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


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0,
         count: int = 0) -> None:
    """Copy count elements of src, from flat index src_offset on, into dest from flat index
    dest_offset on. count 0 copies as much of src as fits in dest. Differentiable on a tape.
    """
    if not isinstance(dest, array) or not isinstance(src, array):
        raise TypeError("kl.copy takes two kernlab arrays")
    if dest.dtype != src.dtype:
        raise ValueError(f"cannot copy an array of {src.dtype} into one of {dest.dtype}")
    if min(dest_offset, src_offset, count) < 0:
        raise ValueError("copy offsets and count cannot be negative")
    if src_offset > src.size or dest_offset > dest.size:
        raise ValueError(f"copy offsets (source {src_offset}, destination {dest_offset}) lie "
                         f"past the arrays' ends ({src.size} and {dest.size} elements)")
    if count == 0:
        count = min(src.size - src_offset, dest.size - dest_offset)
    if src_offset + count > src.size:
        raise ValueError(f"copying {count} elements from offset {src_offset} overruns the "
                         f"source array of {src.size} elements")
    if dest_offset + count > dest.size:
        raise ValueError(f"copying {count} elements to offset {dest_offset} overruns the "
                         f"destination array of {dest.size} elements")
    k = math.prod(dest.dtype.shape)  # scalars per element
    storage.copy_flat(dest._storage(), dest_offset * k, src._storage(), src_offset * k,
                      count * k)
    dest._bump_version()
    _record("copy", dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)


class _FixedNdim:
    """``kl.array2d``: makes arrays of a fixed number of dimensions; ``kl.array2d(dtype=T)``
    and ``kl.array2d[T]`` are annotations."""

    def __init__(self, ndim: int):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"array{ndim}d"

    def __call__(self, data=None, dtype=None, shape=None, device=None, requires_grad=False,
                 **kw):
        return array(data, dtype=dtype, shape=shape, device=device,
                     requires_grad=requires_grad, ndim=self.ndim, **kw)

    def __getitem__(self, dtype) -> array:
        return array(dtype=dtype, ndim=self.ndim)

    def __repr__(self):
        return f"<kernlab {self.__name__}>"


array1d, array2d, array3d, array4d = (_FixedNdim(n) for n in (1, 2, 3, 4))
