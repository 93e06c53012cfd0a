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

Where things live: converting data, shapes and pointers into storage is array_convert.py;
views (slicing, reshape, transpose, dtype views) are array_views.py; the constructors
(zeros, full, clone, copy ...) are array_create.py. This module re-exports them. Two base
classes of ``array`` hold the rest of its methods: array_protocols.py how its data leaves it
(``numpy()``, ``list()``, NumPy's, DLPack's and CUDA's protocols) and array_operators.py its
arithmetic (``+``, ``*=``, NumPy ufuncs).
"""
from __future__ import annotations

import contextvars
import math
from typing import Any

import numpy as np

from ..errors import ArrayError
from ..types import ArrayType, Type, float32, to_type
from . import array_convert as convert
from . import array_views as views
from . import exports, storage
from .array_convert import MAX_DIMS  # noqa: F401  (re-exported)
from . import capture as _capture
from .array_operators import ArrayOperators
from .array_protocols import ArrayProtocols
from .device import Device, get_device

# --- Tape hook ----------------------------------------------------------------------------
# The tape installs a callable here; clone, copy and assign report themselves to it so that
# gradients flow from the copy back to its source.
class _ContextSlot:
    """``slot[0]``: a value per thread and asyncio task (a context variable), read and
    written like the one-element list it replaces."""

    def __init__(self, name: str):
        self._var = contextvars.ContextVar(name, default=None)

    def __getitem__(self, k):
        return self._var.get()

    def __setitem__(self, k, value):
        self._var.set(value)

    def set_token(self, value):
        return self._var.set(value)

    def reset_token(self, token):
        self._var.reset(token)


_TAPE_HOOK = _ContextSlot("kernlab_tape_hook")


def _record(kind: str, dest: "array", src: "array", **info) -> None:
    hook = _TAPE_HOOK[0]
    if hook is not None:
        hook(kind, dest, src, **info)


def _allocate_storage(shape: tuple, dtype, device, zero: bool):
    return storage.allocate(shape + dtype.shape, dtype.scalar.np, device, zero)


class array(ArrayProtocols, ArrayOperators):
    """An n-dimensional array of scalars, vectors or matrices (see the module docstring).

    array(data=None, dtype=Any, shape=None, strides=None, ptr=None, capacity=None,
    device=None, pinned=False, copy=True, deleter=None, ndim=None, grad=None,
    requires_grad=False, retain_grad=False), Warp's signature:

    - data: a list, tuple, NumPy array, kernlab array or array-like object, converted to
      dtype (inferred when Any: see array_convert.py). With copy=False, NumPy data of the
      right dtype on the CPU is shared, strides and all.
    - ptr: the address of memory someone else owns (a host address for device="cpu", a
      device pointer for a GPU), read with shape, strides (bytes, default C order) and
      capacity (bytes). deleter(ptr, capacity), if given, runs when the array is garbage.
    - shape alone: new memory (zeroed), with the given byte strides if any.
    - neither: an annotation (dtype and ndim describe a kernel parameter).
    """

    def __init__(self, data=None, dtype=Any, shape=None, strides=None, ptr=None,
                 capacity=None, device=None, pinned=False, copy=True, deleter=None,
                 ndim=None, grad=None, requires_grad=False, retain_grad=False):
        self._grad: array | None = None
        self._retain_grad = False
        self._vbox = [0]  # version counter, shared with views of the same memory
        self._ref = None
        self._capacity = None
        self.pinned = bool(pinned)
        if data is None and ptr is None and shape is None:
            self._init_annotation(dtype, ndim)
            return
        self.is_annotation = False
        self.device = get_device(device)
        if data is not None:
            if ptr is not None:
                raise RuntimeError("Can only construct arrays with either `data` or `ptr` "
                                   "arguments, not both")
            values, self.dtype = convert.convert(data, dtype, shape,
                                                 copy or not self.device.is_cpu)
            if not self.device.is_cpu:
                values = storage.transfer(values, self.device)
            elif values is data or (isinstance(data, np.ndarray) and values.base is data):
                self._ref = data
                exports.mark_exported(values)  # the caller holds the NumPy array
        else:
            self.dtype = convert.as_dtype(dtype) or float32
            dims = convert.as_shape(shape)
            if ptr is not None:
                values = convert.from_pointer(ptr, dims, strides, self.dtype, self.device,
                                              capacity)
                self._capacity = capacity
                self.deleter = deleter
                exports.mark_exported(values)  # someone else's memory
            elif strides is not None:
                strides = convert.check_strides(dims, strides, allocating=True)
                values = convert.allocate_strided(dims, strides, self.dtype, self.device,
                                                  zero=True)
                self._capacity = convert.strided_capacity(dims, strides, self.dtype)
            else:
                values = _allocate_storage(dims, self.dtype, self.device, zero=True)
        self._data = values
        self.shape = values.shape[: values.ndim - len(self.dtype.shape)]
        self.ndim = len(self.shape)
        if ndim is not None and ndim != self.ndim:
            raise ValueError(f"data of shape {self.shape} has {self.ndim} dimensions, "
                             f"not ndim={ndim}")
        if grad is not None:
            self.grad = grad
        else:
            self.requires_grad = requires_grad
        self.retain_grad = retain_grad

    def _init_annotation(self, dtype, ndim) -> None:
        self.is_annotation = True
        # typing.Any marks a generic parameter (its type comes from each launch/overload)
        self.dtype = float32 if dtype is None else to_type(dtype)  # Any: generic
        self.ndim = 1 if ndim is None else int(ndim)
        if not 1 <= self.ndim <= MAX_DIMS:
            raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, not ndim={ndim}")
        self.shape = None
        self.device = None
        self._data = None

    def __class_getitem__(cls, dtype) -> "array":
        """``kl.array[float]``: Warp's subscript spelling of a 1-D array annotation;
        ``kl.array[float, Literal[2]]`` one of that many dimensions."""
        if isinstance(dtype, tuple) and len(dtype) == 2:
            from ..types import _literal
            dtype, ndim = dtype
            n = _literal(ndim)  # Literal[2], or a bare 2
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"array[dtype, Literal[n]] takes an integer n, not {ndim!r}")
            if not 1 <= n <= MAX_DIMS:
                raise ValueError(f"array ndim must be between 1 and {MAX_DIMS}, not {n}")
            return cls(dtype=dtype, ndim=n)
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
        out._retain_grad, out._ref, out._capacity, out.pinned = False, None, None, False
        return out

    deleter = None  # Warp's: called with (ptr, capacity) when the array is garbage
    # (dtype, ndim, device, data address, shape..., byte strides...), kept once a small
    # launch asked (runtime/launch_short.py describe): none of them changes after it is made
    _described = None

    def __del__(self):
        deleter = getattr(self, "deleter", None)
        if deleter is None or getattr(self, "_data", None) is None or self.ptr is None:
            return
        try:
            deleter(self.ptr, self.capacity)
        except Exception:  # a finaliser must not raise
            pass

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
        """Byte strides of the array axes (the element's own axes are left out). An empty
        array has Warp's C-order strides (each axis: the product of the later lengths)."""
        data = self._storage()
        if data.size == 0:
            return convert.contiguous_strides(self.shape, self.dtype)
        return tuple(int(s) for s in data.strides[: self.ndim])

    @property
    def ptr(self) -> int | None:
        """Address of the first element (a device pointer on a GPU); None for an empty
        array, as in Warp."""
        data = self._data
        if type(data) is np.ndarray:  # the CPU case inline: launches ask for it
            return int(data.ctypes.data) if data.size else None
        return storage.address(self._storage()) or None

    @property
    def is_readonly(self) -> bool:
        """True for an array over read-only memory (a memory map opened with mode='r',
        bytes, a NumPy array with writeable=False, shared by from_numpy or copy=False):
        kernels that write it are refused at launch."""
        data = self._data
        return type(data) is np.ndarray and not data.flags.writeable

    @property
    def is_contiguous(self) -> bool:
        return storage.is_contiguous(self._storage())

    @property
    def capacity(self) -> int:
        """Bytes addressable from ptr: the elements' bytes for a contiguous array; for a
        strided one what its allocation (or the pointer's owner) says, else Warp's rule
        (first axis length times its stride)."""
        if self._capacity is not None:
            return int(self._capacity)
        data = self._storage()
        if data.size == 0:
            return 0
        if self.is_contiguous:
            return int(data.nbytes)
        return abs(self.shape[0] * self.strides[0])

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy."""
        return int(self._storage().nbytes)

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
        """True allocates a zero gradient on the array's device (once); False drops it (and
        retain_grad)."""
        if value and self._grad is None:
            values = _allocate_storage(self.shape, self.dtype, self.device, zero=True)
            self._grad = array._wrap(values, self.dtype, self.device)
        elif not value:
            self._grad = None
            self._retain_grad = False

    @property
    def retain_grad(self) -> bool:
        """Whether the tape keeps this array's gradient after backward() has read it
        (Warp's retain_grad); needs requires_grad."""
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value: bool) -> None:
        if value and self._grad is None:
            raise ValueError("retain_grad=True requires requires_grad=True")
        self._retain_grad = bool(value)

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

    # --- Length, indexing, launches -------------------------------------------------------

    def __len__(self) -> int:
        return self._storage().shape[0]

    def __getitem__(self, key):
        """a[i] (all indices integers) gives the element as NumPy; anything with a slice, or
        fewer indices than dimensions, gives an array view sharing memory (on a GPU too;
        an element of a GPU array is read back as NumPy); index arrays give an
        indexedarray. See array_views.py."""
        return views.getitem(self, key)

    def __ctype__(self) -> "array":
        """What a launch takes for this array (Warp hands out its C descriptor, for
        ``Launch.set_param_*_from_ctype``): the array itself."""
        return self

    # --- Views (array_views.py) -----------------------------------------------------------

    def reshape(self, shape) -> "array":
        return views.reshape(self, shape)

    def flatten(self) -> "array":
        return views.flatten(self)

    def transpose(self, axes=None) -> "array":
        return views.transpose(self, axes)

    def view(self, dtype) -> "array":
        return views.view(self, dtype)

    def contiguous(self) -> "array":
        return views.contiguous(self)

    # --- Writing --------------------------------------------------------------------------

    def __setitem__(self, key, value) -> None:
        data = self._storage()
        if isinstance(value, array):  # GPU to GPU stays on the device
            source = value._storage()
            value = source if type(source) is type(data) else value.numpy()
        data[key] = value
        self._bump_version()

    def _write_all(self, value) -> None:
        self._storage()[...] = convert.element_value(value, self.dtype)

    def fill_(self, value) -> "array":
        """Set every element to value (a scalar; for vector and matrix arrays also one
        element's worth of components)."""
        if _capture.defer("fill_", lambda: self.fill_(value)):
            return self
        self._write_all(value)
        self._bump_version()
        return self

    def zero_(self) -> "array":
        if _capture.defer("zero_", self.zero_):
            return self
        self._storage()[...] = 0
        self._bump_version()
        return self

    def assign(self, src) -> "array":
        """Copy src (an array of the same shape and dtype, or NumPy / list data of shape
        ``shape + element shape``) into this array. Differentiable on a tape."""
        if _capture.defer("assign", lambda: self.assign(src)):
            return self
        data = self._storage()
        if isinstance(src, array):
            if src.dtype != self.dtype or src.shape != self.shape:
                raise ArrayError(f"cannot assign an array of {src.dtype} {src.shape} to one "
                                 f"of {self.dtype} {self.shape}")
            storage.copy_all(data, src._storage())
        else:
            values = np.asarray(src, dtype=self.dtype.scalar.np)
            if values.shape != data.shape:
                raise ArrayError(f"cannot assign data of shape {values.shape} to an array "
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
        flag = ", readonly=True" if self.is_readonly else ""
        return f"array({body}, dtype={self.dtype}, device={self.device}{flag})"


Array = array


class _FixedNdim:
    """``kl.array2d``: makes arrays of a fixed number of dimensions; ``kl.array2d(dtype=T)``
    and ``kl.array2d[T]`` are annotations."""

    def __init__(self, ndim: int):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"array{ndim}d"
        self.__doc__ = (f"array{ndim}d(data=None, dtype=..., shape=..., ...): an array of "
                        f"{ndim} dimension(s); array{ndim}d(dtype=T) and array{ndim}d[T] are "
                        "annotations (Warp's spelling of array(dtype=T, ndim=...)).")

    def __call__(self, data=None, dtype=Any, shape=None, **kw):
        return array(data, dtype=dtype, shape=shape, ndim=self.ndim, **kw)

    def __getitem__(self, dtype) -> array:
        return array(dtype=dtype, ndim=self.ndim)

    def __repr__(self):
        return f"<kernlab {self.__name__}>"


array1d, array2d, array3d, array4d = (_FixedNdim(n) for n in (1, 2, 3, 4))


# The constructors live in array_create.py; importing them here keeps ``runtime.array`` the
# one module callers import arrays from.
from .array_create import (  # noqa: E402,F401
    _read_flat, _write_flat, clone, copy, empty, empty_like, from_numpy, full, full_like, ones,
    ones_like, zeros, zeros_like)
