"""Running kernels on a GPU through the CUDA driver API (``cuda.bindings.driver``).

Importing this module needs neither a GPU nor the bindings: everything is looked up on
first use. ``is_available()`` answers False (and never raises) when the driver library is
missing, does not initialise, or sees no device.

* one primary context per device, made current in the calling thread before each call;
* modules from a cubin compiled by NVRTC for the device's own architecture (so a driver
  older than NVRTC still loads them), or from PTX when NVRTC does not know that GPU;
* device memory helpers (alloc / free / copies / memset) for the array module;
* ``CudaKernel.launch(dims, args)``: the same contract as ``Interpreter(func).launch``.
  Parameters are packed into one block laid out like the kernel's C parameters, and
  ``cuLaunchKernel`` gets pointers into it. After the launch the status word is read back:
  a failed bounds check becomes the interpreter's KernelIndexError, word for word.

Array arguments must live on the launch's GPU (``kl.launch`` checks that before it gets
here; so does ``launch``, for callers that come straight to the runner). A launch that can
report (bounds checks on, verify_fp, an adjoint's loop stack) synchronises and reads its
status word, so errors surface at the launch that caused them, naming the kernel; one that
cannot (bounds_check=False) returns at once, and the next synchronising call waits for it.
"""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from ...errors import KernelError, LaunchError, reported_error
from ...ir.nodes import Function, Op
from ...types import ArrayType
from .header import STATUS_BOUNDS, STATUS_NOT_FINITE, STATUS_STACK
from .render import entry_name, render_cuda

BLOCK_SIZE = 256
BLOCKS_PER_SM = 32          # enough blocks to fill the GPU; the grid-stride loop does the rest
HEAP_BYTES = 256 << 20      # device malloc heap, for adjoint stacks that outgrow local memory


class CudaError(KernelError):
    """A CUDA driver call failed (an illegal address in a kernel, out of memory, ...)."""


def _bindings():
    try:
        from cuda.bindings import driver
    except ImportError:
        from cuda import cuda as driver  # cuda-python before 12.6
    return driver


# Errors after which CUDA refuses every further call in the process's context.
STICKY_ERRORS = {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
                 "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
                 "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_INVALID_ADDRESS_SPACE",
                 "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT"}
STICKY_HINT = ("\nThe GPU cannot be used again in this process after this error (a CUDA rule;"
               " its arrays are lost): restart the Python kernel. With bounds checks off "
               "(bounds_check=False), an index out of range ends this way.")


def _check(result, what: str, kernel: str | None = None):
    """Unpack a driver call's (err, *values); raise CudaError naming the call and kernel."""
    driver = _bindings()
    err, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(err)
        text = text.decode() if isinstance(text, bytes) else ""
        where = f" while running kernel '{kernel}'" if kernel else ""
        hint = STICKY_HINT if name in STICKY_ERRORS else ""
        raise CudaError(f"CUDA error {name}{where}: {text} (in {what}){hint}", kernel=kernel)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


# ---- discovery and contexts ---------------------------------------------------------------

_lock = threading.RLock()  # re-entered when a finalizer frees memory inside
_state: dict = {}           # "count": devices; "why": reason there are none
_contexts: dict = {}        # ordinal -> _Context


def is_available() -> bool:
    """True when the driver loads and sees at least one GPU. Never raises."""
    return device_count() > 0


def why_unavailable() -> str:
    """Why there is no GPU (the driver's or the bindings' error); "" when there is one."""
    return "" if device_count() else _state.get("why") or "the CUDA driver reports no GPU"


def device_count() -> int:
    if "count" not in _state:
        try:
            driver = _bindings()
            _check(driver.cuInit(0), "cuInit")
            _state["count"] = int(_check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
        except ImportError:
            _state["count"], _state["why"] = 0, ("the CUDA Python bindings are not installed "
                                                 "(pip install 'kernlab[cuda]')")
        except Exception as exc:  # no libcuda, a broken driver, no GPU: all mean "none"
            _state["count"], _state["why"] = 0, f"{type(exc).__name__}: {exc}"
    return _state["count"]


class _Context:
    """The primary context of one device and what was loaded into it."""

    def __init__(self, ordinal: int):
        driver = _bindings()
        self.ordinal = ordinal
        self.device = _check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
        self.handle = _check(driver.cuDevicePrimaryCtxRetain(self.device),
                             "cuDevicePrimaryCtxRetain")
        self.activate()
        attr = driver.CUdevice_attribute
        major = self.attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self.attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.arch = major * 10 + minor
        self.sm_count = self.attribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        # Must happen before any kernel that calls malloc runs; failure only limits stacks.
        driver.cuCtxSetLimit(driver.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE, HEAP_BYTES)

    def attribute(self, which) -> int:
        return int(_check(_bindings().cuDeviceGetAttribute(which, self.device),
                          "cuDeviceGetAttribute"))

    def activate(self):
        _check(_bindings().cuCtxSetCurrent(self.handle), "cuCtxSetCurrent")


def context(ordinal: int = 0) -> _Context:
    """The (lazily created) context of device ``ordinal``, made current in this thread."""
    with _lock:
        ctx = _contexts.get(ordinal)
        if ctx is None:
            if not 0 <= ordinal < device_count():
                raise CudaError(f"there is no CUDA device {ordinal} "
                                f"({_state.get('why') or f'{device_count()} found'})")
            ctx = _contexts[ordinal] = _Context(ordinal)
    ctx.activate()
    return ctx


def compute_capability(ordinal: int = 0) -> int:
    """The device's compute capability as one number: 80 for sm_80, 90 for sm_90."""
    return context(ordinal).arch


def synchronize(ordinal: int = 0):
    context(ordinal)
    _check(_bindings().cuCtxSynchronize(), "cuCtxSynchronize")


def synchronize_all():
    """Wait for every device that kernlab has used (starts no driver that is not running)."""
    for ordinal in list(_contexts):
        synchronize(ordinal)


def is_initialised(ordinal: int) -> bool:
    """Whether kernlab has made the context of device ``ordinal`` (used it) yet."""
    return ordinal in _contexts


# ---- memory ---------------------------------------------------------------------------

def alloc(nbytes: int, ordinal: int = 0) -> int:
    """Device memory of nbytes (at least 1); returns its address."""
    context(ordinal)
    return int(_check(_bindings().cuMemAlloc(max(1, int(nbytes))), "cuMemAlloc"))


def free(ptr: int, ordinal: int = 0):
    context(ordinal)
    _check(_bindings().cuMemFree(ptr), "cuMemFree")


def memcpy_htod(dst: int, src_host: int, nbytes: int, ordinal: int = 0):
    if nbytes:
        context(ordinal)
        _check(_bindings().cuMemcpyHtoD(dst, src_host, nbytes), "cuMemcpyHtoD")


def memcpy_dtoh(dst_host: int, src: int, nbytes: int, ordinal: int = 0):
    if nbytes:
        context(ordinal)
        _check(_bindings().cuMemcpyDtoH(dst_host, src, nbytes), "cuMemcpyDtoH")


def memcpy_dtod(dst: int, src: int, nbytes: int, ordinal: int = 0):
    if nbytes:
        context(ordinal)
        _check(_bindings().cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")


def memset(ptr: int, byte: int, nbytes: int, ordinal: int = 0):
    if nbytes:
        context(ordinal)
        _check(_bindings().cuMemsetD8(ptr, byte & 0xFF, nbytes), "cuMemsetD8")


def memset_d32(ptr: int, word: int, count: int, ordinal: int = 0):
    """Set count 32-bit words (ptr 4-byte aligned) to word."""
    if count:
        context(ordinal)
        _check(_bindings().cuMemsetD32(ptr, word & 0xFFFFFFFF, count), "cuMemsetD32")


# ---- the packed parameter block -------------------------------------------------------------

class ArrayArg(ctypes.Structure):
    """``array_t<T>``: data pointer, shape[4], byte strides[4]."""

    _fields_ = [("data", ctypes.c_uint64), ("shape", ctypes.c_int64 * 4),
                ("strides", ctypes.c_int64 * 4)]


class DimsArg(ctypes.Structure):
    """``kl_dims``."""

    _fields_ = [("size", ctypes.c_int64), ("shape", ctypes.c_int64 * 4),
                ("ndim", ctypes.c_int32), ("pad", ctypes.c_int32)]


class StatusWord(ctypes.Structure):
    """``kl_status``."""

    _fields_ = [("flag", ctypes.c_int32), ("site", ctypes.c_int32), ("axis", ctypes.c_int32),
                ("param", ctypes.c_int32), ("index", ctypes.c_int64)]


def _param_ctype(t):
    if isinstance(t, ArrayType):
        return ArrayArg
    # the scalar's ctypes type as stored (float16: its 16 bits; bool: one byte)
    return t.scalar._type_ if t.is_scalar else t.scalar._type_ * t.length


def parameter_block(func: Function):
    """The ctypes Structure holding the kernel's parameters in order (C alignment rules, the
    same the kernel's parameter list has), then the status pointer and the dims."""
    fields = [(f"p{k}", _param_ctype(p.type)) for k, p in enumerate(func.params)]
    fields += [("status", ctypes.c_uint64), ("dims", DimsArg)]
    return type(f"Params_{func.name}", (ctypes.Structure,), {"_fields_": fields})


# ---- kernels ----------------------------------------------------------------------------

class CudaKernel:
    """One compiled kernel variant; ``launch(dims, args)`` runs it like the interpreter."""

    def __init__(self, func: Function, bounds_check: bool = True, verify_fp: bool = False):
        self.func, self.bounds_check, self.verify_fp = func, bounds_check, verify_fp
        self.name = entry_name(func)
        self.source = render_cuda(func, bounds_check, verify_fp)
        self.block_type = parameter_block(func)
        self.written = {k for k, p in enumerate(func.params)
                        if any(i.op in (Op.STORE, Op.ATOMIC) and i.args[0] is p.value
                               for i in func.body.walk())}
        # Whether the kernel can write its status word (a failed check, verify_fp, the
        # adjoint stack out of heap). One that cannot is launched asynchronously, as Warp
        # launches everything: a later synchronising call (kl.synchronize, a.numpy(), a
        # copy) waits for it, and reports a CUDA error it caused.
        self.reports = bounds_check or verify_fp or any(site.guard for site in func.sites) \
            or any(i.op in (Op.PUSH, Op.POP) for i in func.body.walk())
        self._functions: dict = {}   # ordinal -> (module, function, status address)

    def _load(self, ordinal: int):
        loaded = self._functions.get(ordinal)
        if loaded is not None:
            return loaded
        from . import nvrtc
        ctx, driver = context(ordinal), _bindings()
        try:
            image = nvrtc.compile_cubin(self.source, self.func.name, ctx.arch, self.func.loc)
        except nvrtc.CudaCompileError:
            # NVRTC may not know this GPU's sm_XX yet: PTX for the newest arch it knows.
            image = nvrtc.compile_ptx(self.source, self.func.name, nvrtc.DEFAULT_ARCH,
                                      self.func.loc).encode() + b"\0"
        buf = ctypes.create_string_buffer(image, len(image))
        module = _check(driver.cuModuleLoadData(ctypes.addressof(buf)), "cuModuleLoadData",
                        self.func.name)
        function = _check(driver.cuModuleGetFunction(module, self.name.encode()),
                          "cuModuleGetFunction", self.func.name)
        status = alloc(ctypes.sizeof(StatusWord), ordinal)
        memset(status, 0, ctypes.sizeof(StatusWord), ordinal)
        loaded = self._functions[ordinal] = (module, function, status)
        return loaded

    def launch(self, dims: tuple, args: list, ordinal: int | None = None):
        """Run on GPU ``ordinal``; None: the GPU of the first array argument (cuda:0 when
        there is none)."""
        total = math.prod(dims)
        if total == 0:
            return
        if ordinal is None:
            ordinal = _device_of(args)
        block = pack_parameters(self.func, self.block_type, dims, args,
                                lambda k, a: self._device_array(k, a, ordinal), 0)
        ctx = context(ordinal)
        _, function, status = self._load(ordinal)
        block.status = status  # zero: kernels only write it to report a failure
        pointers = parameter_pointers(block)
        grid = max(1, min(-(-total // BLOCK_SIZE), ctx.sm_count * BLOCKS_PER_SM))
        driver = _bindings()
        _check(driver.cuLaunchKernel(function, grid, 1, 1, BLOCK_SIZE, 1, 1, 0, 0,
                                     ctypes.addressof(pointers), 0),
               "cuLaunchKernel", self.func.name)
        if not self.reports:
            return
        _check(driver.cuCtxSynchronize(), "cuCtxSynchronize", self.func.name)
        word = StatusWord()
        memcpy_dtoh(ctypes.addressof(word), status, ctypes.sizeof(word), ordinal)
        if word.flag:
            memset(status, 0, ctypes.sizeof(StatusWord), ordinal)  # clean for the next one
            raise_status(self.func, word, args)

    def _device_array(self, k: int, a, ordinal: int):
        """(device pointer, byte strides) of array argument k, which must live on the GPU
        the kernel runs on."""
        device = a.device
        if not getattr(device, "is_cuda", False) or device.ordinal != ordinal:
            raise LaunchError(f"kernel '{self.func.name}': parameter '{self.func.params[k].name}'"
                              f" got an array on {device}, but the launch is on cuda:{ordinal}; "
                              f"move it with a.to('cuda:{ordinal}')", kernel=self.func.name)
        return a.ptr, a.strides


def pack_parameters(func: Function, block_type, dims, args, array_pointer, status: int):
    """Fill a parameter block for one launch. ``array_pointer(k, array) -> (address, byte
    strides)`` says where parameter k's array is for the kernel; None gives a null array
    (the kernel skips a nullable access to it)."""
    block = block_type()
    for k, (p, a) in enumerate(zip(func.params, args)):
        t = p.type
        if isinstance(t, ArrayType):
            if a is None:
                value = ArrayArg()
            else:
                ptr, strides = array_pointer(k, a)
                pad = [0] * (4 - a.ndim)
                value = ArrayArg(ptr or 0, (ctypes.c_int64 * 4)(*a.shape, *pad),
                                 (ctypes.c_int64 * 4)(*strides, *pad))
        else:  # the value's bytes as NumPy stores the type (a half as its bits)
            value = _param_ctype(t).from_buffer_copy(
                np.ascontiguousarray(np.asarray(a, t.scalar.np)).tobytes())
        setattr(block, f"p{k}", value)
    block.status = status
    block.dims = DimsArg(math.prod(dims), (ctypes.c_int64 * 4)(*dims, *[1] * (4 - len(dims))),
                         len(dims), 0)
    return block


def parameter_pointers(block):
    """The ``void*[]`` cuLaunchKernel takes: the address of each parameter in the block."""
    fields = [name for name, _ in block._fields_]
    base = ctypes.addressof(block)
    return (ctypes.c_void_p * len(fields))(*[base + getattr(type(block), name).offset
                                              for name in fields])


def raise_status(func: Function, word: StatusWord, args):
    """Turn a launch's status word into the exception the interpreter would raise."""
    if word.flag in (STATUS_BOUNDS, STATUS_NOT_FINITE):
        raise reported_error(func, word.flag == STATUS_NOT_FINITE, word.site, word.axis,
                             word.param, word.index, args)
    if word.flag == STATUS_STACK:
        raise CudaError(
            f"the adjoint of kernel '{func.name}' ran out of GPU heap for the loop state it "
            f"saves ({word.index} bytes per thread); launch fewer threads or raise "
            "kernlab.backends.cuda.driver.HEAP_BYTES before the first launch",
            func.loc, kernel=func.name)


def _device_of(args) -> int:
    for a in args:
        device = getattr(a, "device", None)
        if getattr(device, "is_cuda", False):
            return device.ordinal
    return 0
