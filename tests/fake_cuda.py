"""A CUDA driver without a GPU, for testing kernlab's device memory and launch plumbing.

``FakeDriver`` stands in for ``cuda.bindings.driver``: cuMemAlloc hands out host buffers it
owns, the copies and memsets move real bytes, cuMemFree records what was freed. It is
strict where a real GPU would crash or corrupt memory: every device address must lie in a
live allocation of the device whose context is current, and no host address may.

``HostEmulated`` compiles a kernel's generated CUDA C++ for the CPU with g++ (__device__
and __global__ defined away, CUDA's intrinsics emulated for one thread at a time) and runs
it on the driver's packed parameter block; where NVRTC is installed it also compiles the
same source to PTX for sm_80, so every kernel a test runs this way is known to build for
a GPU. With ``install(..., emulate_in=folder)`` the fake's cuLaunchKernel runs kernels
that way, over the fake's "device" memory, so whole launches and Tape.backward on cuda
arrays run on a machine without a GPU; only NVRTC's machine code and the real driver are
left to the GPU tests.
"""
import ctypes
import enum
import hashlib
import math
import os
import pathlib
import shutil
import subprocess
import weakref

from kernlab.backends.cuda import driver, nvrtc
from kernlab.backends.cuda.render import entry_name, render_cuda

CXX = shutil.which("g++") or shutil.which("clang++")


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_ILLEGAL_ADDRESS = 700


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class CUlimit(enum.IntEnum):
    CU_LIMIT_MALLOC_HEAP_SIZE = 2


OK = (CUresult.CUDA_SUCCESS,)


class FakeMemoryError(AssertionError):
    """kernlab passed the fake an address a GPU would not accept (a test failure)."""


class FakeDriver:
    CUresult, CUdevice_attribute, CUlimit = CUresult, CUdevice_attribute, CUlimit

    def __init__(self, devices: int = 2):
        self.devices = devices
        self.blocks: dict = {}      # address -> (ctypes buffer, nbytes, ordinal)
        self.freed: list = []       # addresses, in the order cuMemFree got them
        self.current = None         # ordinal of the current context
        self.calls: dict = {}       # driver function -> number of calls
        self.fail_launch = None     # a CUresult for cuLaunchKernel to return
        self.launched: list = []    # (kernel name, grid, parameter block address)
        self.status_words: set = set()  # addresses of the emulated kernels' status words

    def _count(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    # --- discovery and contexts ----------------------------------------------------------

    def cuInit(self, flags):
        return OK

    def cuDeviceGetCount(self):
        return CUresult.CUDA_SUCCESS, self.devices

    def cuDeviceGet(self, ordinal):
        if not 0 <= ordinal < self.devices:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        return CUresult.CUDA_SUCCESS, ordinal

    def cuDevicePrimaryCtxRetain(self, device):
        return CUresult.CUDA_SUCCESS, ("context", device)

    def cuCtxSetCurrent(self, context):
        self.current = context[1]
        return OK

    def cuDeviceGetAttribute(self, which, device):
        values = {CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 8,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 2}
        return CUresult.CUDA_SUCCESS, values[which]

    def cuCtxSetLimit(self, limit, value):
        return OK

    def cuCtxSynchronize(self):
        self._count("cuCtxSynchronize")
        return OK

    def cuGetErrorName(self, err):
        return CUresult.CUDA_SUCCESS, CUresult(err).name.encode()

    def cuGetErrorString(self, err):
        return CUresult.CUDA_SUCCESS, f"fake error {int(err)}".encode()

    # --- memory ------------------------------------------------------------------------

    def cuMemAlloc(self, nbytes):
        self._count("cuMemAlloc")
        if nbytes <= 0:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        buf = ctypes.create_string_buffer(b"\xa5" * nbytes, nbytes)  # garbage, not zeros
        address = ctypes.addressof(buf)
        self.blocks[address] = (buf, nbytes, self.current)
        return CUresult.CUDA_SUCCESS, address

    def cuMemFree(self, ptr):
        self._count("cuMemFree")
        if ptr not in self.blocks:
            raise FakeMemoryError(f"cuMemFree({ptr:#x}): not an allocation")
        if self.blocks[ptr][2] != self.current:
            raise FakeMemoryError(f"cuMemFree({ptr:#x}) of cuda:{self.blocks[ptr][2]} with "
                                  f"cuda:{self.current}'s context current")
        self.freed.append(ptr)
        del self.blocks[ptr]
        return OK

    def block_of(self, ptr: int):
        for start, (_, nbytes, ordinal) in self.blocks.items():
            if start <= ptr < start + nbytes:
                return start, nbytes, ordinal
        return None

    def device_range(self, ptr: int, nbytes: int, what: str):
        """Check [ptr, ptr + nbytes) lies in one live allocation of the current device."""
        found = self.block_of(ptr)
        if found is None:
            raise FakeMemoryError(f"{what}: {ptr:#x} is not device memory")
        start, size, ordinal = found
        if ptr + nbytes > start + size:
            raise FakeMemoryError(f"{what}: {nbytes} bytes from {ptr:#x} overrun the "
                                  f"allocation of {size} bytes at {start:#x}")
        if ordinal != self.current:
            raise FakeMemoryError(f"{what}: memory of cuda:{ordinal} with cuda:{self.current}'s"
                                  " context current")

    def host_range(self, ptr: int, what: str):
        if self.block_of(ptr) is not None:
            raise FakeMemoryError(f"{what}: {ptr:#x} is device memory, not host memory")

    def cuMemcpyHtoD(self, dst, src, nbytes):
        self._count("cuMemcpyHtoD")
        self.device_range(dst, nbytes, "cuMemcpyHtoD destination")
        self.host_range(src, "cuMemcpyHtoD source")
        ctypes.memmove(dst, src, nbytes)
        return OK

    def cuMemcpyDtoH(self, dst, src, nbytes):
        self._count("cuMemcpyDtoH")
        self.device_range(src, nbytes, "cuMemcpyDtoH source")
        self.host_range(dst, "cuMemcpyDtoH destination")
        ctypes.memmove(dst, src, nbytes)
        return OK

    def cuMemcpyDtoD(self, dst, src, nbytes):
        self._count("cuMemcpyDtoD")
        self.device_range(dst, nbytes, "cuMemcpyDtoD destination")
        self.device_range(src, nbytes, "cuMemcpyDtoD source")
        if dst < src + nbytes and src < dst + nbytes:
            raise FakeMemoryError("cuMemcpyDtoD of overlapping ranges (undefined on a GPU)")
        ctypes.memmove(dst, src, nbytes)
        return OK

    def cuMemsetD8(self, ptr, byte, count):
        self._count("cuMemsetD8")
        self.device_range(ptr, count, "cuMemsetD8")
        ctypes.memset(ptr, byte, count)
        return OK

    def cuMemsetD32(self, ptr, word, count):
        self._count("cuMemsetD32")
        if ptr % 4:
            raise FakeMemoryError(f"cuMemsetD32 at {ptr:#x}, which is not 4-byte aligned")
        self.device_range(ptr, 4 * count, "cuMemsetD32")
        words = (ctypes.c_uint32 * count).from_address(ptr)
        for k in range(count):
            words[k] = word
        return OK

    # --- kernels (with install(..., emulate=True)) ----------------------------------------

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self._count("cuLaunchKernel")
        if self.fail_launch is not None:
            return (self.fail_launch,)
        base = ctypes.c_void_p.from_address(params).value  # the first field's address
        function.check_block(self, base)
        self.launched.append((function.func.name, (gx, gy, gz), base))
        function.run_block(base)
        return OK


# --- Kernels compiled for the CPU ---------------------------------------------------------

HOST_SHIM = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
using std::isfinite;
#define __device__
#define __global__
struct kl_dim3 { unsigned x, y, z; };
static kl_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0};
static kl_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
// PTX's cvt.f32.f16, cvt.rn.f16.f32 and cvt.rn.f16.f64 (the header's half conversions): the
// compiler's IEEE half, whose conversions round to nearest even, once
inline float kl_cvt_f32_f16(unsigned short h) { _Float16 x; memcpy(&x, &h, 2); return x; }
inline unsigned short kl_cvt_f16_f32(float f) {
    _Float16 x = (_Float16)f; unsigned short h; memcpy(&h, &x, 2); return h;
}
inline unsigned short kl_cvt_f16_f64(double d) {
    _Float16 x = (_Float16)d; unsigned short h; memcpy(&h, &x, 2); return h;
}
template <typename T> T atomicCAS(T* p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
template <typename T> T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <typename T> T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <typename T> T atomicMin(T* p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <typename T> T atomicMax(T* p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <typename T> T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <typename T> T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <typename T> T atomicXor(T* p, T v) { T o = *p; *p = o ^ v; return o; }
template <typename T> T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
"""


CXX_FLAGS = ("-std=c++17", "-O1", "-w", "-fPIC")
PRELUDE = "kl_prelude.h"  # the shim, then the header: every kernel's source starts with both
_prepared: dict = {}  # folder -> its prelude, once per process


def run_folder(tmp_path_factory) -> pathlib.Path:
    """The temporary folder of the whole test run: the session's, or under pytest-xdist the
    one that holds every worker's (for what the workers share: compiled code named by a hash
    of its source, written whole)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def emulation_folder(tmp_path_factory) -> pathlib.Path:
    """The folder the test run compiles emulated kernels into, shared by its workers (each
    kernel is compiled once per run, not once per worker)."""
    folder = run_folder(tmp_path_factory) / "cuda-emulated"
    folder.mkdir(exist_ok=True)
    return folder


def _write_atomically(path: pathlib.Path, text: str) -> None:
    """Write path whole (a reader in another process never sees half of it), if it differs."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temp.write_text(text)
    os.replace(temp, path)


def _prepare(folder: pathlib.Path) -> pathlib.Path:
    """The header, the shim and the prelude that includes both, in folder, with the prelude
    precompiled (g++'s .gch next to it), so that each kernel's compile skips parsing the
    header (about 0.3 s of CPU each). A compiler that cannot precompile, or a stale .gch,
    leaves g++ reading the text: the same code, only slower."""
    from kernlab.backends.cuda.header import HEADER, HEADER_NAME
    if folder in _prepared:
        return _prepared[folder]
    _write_atomically(folder / HEADER_NAME, HEADER)
    _write_atomically(folder / "shim.h", HOST_SHIM)
    prelude = folder / PRELUDE
    _write_atomically(prelude, f'#include "shim.h"\n#include "{HEADER_NAME}"\n')
    gch = folder / (PRELUDE + ".gch")
    if not gch.exists():
        built = gch.with_name(f"{gch.name}.{os.getpid()}.tmp")
        run = subprocess.run([CXX, *CXX_FLAGS, "-x", "c++-header", str(prelude), "-o",
                              str(built)], capture_output=True, text=True)
        if run.returncode == 0:
            os.replace(built, gch)
        else:
            built.unlink(missing_ok=True)
    _prepared[folder] = prelude
    return prelude


class HostEmulated:
    """The kernel's CUDA C++ compiled for the CPU; ``launch`` as the interpreter's (host
    arrays), ``run_block`` on a packed parameter block (what cuLaunchKernel gets)."""

    def __init__(self, func, folder: pathlib.Path, bounds_check=True, verify_fp=False):
        from kernlab.backends.cuda.header import HEADER
        from kernlab.backends.cuda.render import ctype
        self.func = func
        block_type = driver.parameter_block(func)
        fields = [(getattr(block_type, f"p{k}").offset, ctype(p.type))
                  for k, p in enumerate(func.params)]
        fields += [(block_type.status.offset, "kl_status*"),
                   (block_type.dims.offset, "kl_dims")]
        unpack = ", ".join(f"*({t}*)(block + {off})" for off, t in fields)
        kernel_source = render_cuda(func, bounds_check, verify_fp)
        source = kernel_source + (
            f'namespace kl {{ extern "C" void kl_host_launch(char* block) {{ '
            f"{entry_name(func)}({unpack}); }} }}\n")
        key = hashlib.sha256((HOST_SHIM + HEADER + source).encode()).hexdigest()[:16]
        prelude = _prepare(folder)
        lib = folder / f"{func.name}_{key}.so"
        if not lib.exists():
            cpp = folder / f"{func.name}_{key}.cpp"
            _write_atomically(cpp, source)
            built = lib.with_name(f"{lib.name}.{os.getpid()}.tmp")
            run = subprocess.run([CXX, *CXX_FLAGS, "-shared", "-include", str(prelude),
                                  f"-I{folder}", str(cpp), "-o", str(built)],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr[:5000]
            os.replace(built, lib)  # whole, for another pytest-xdist worker sharing folder
            if nvrtc.is_available():  # what a GPU would get must compile too (on a miss:
                nvrtc.compile_ptx(kernel_source, func.name, 80)  # the disk cache is kept)
        self.lib = ctypes.CDLL(str(lib))
        self.block_type = block_type

    def launch(self, dims, args):
        if math.prod(dims) == 0:
            return
        word = driver.StatusWord()
        block = driver.pack_parameters(self.func, self.block_type, dims, args,
                                       lambda k, a: (a.ptr, a.strides), ctypes.addressof(word))
        self.lib.kl_host_launch(ctypes.c_void_p(ctypes.addressof(block)))
        driver.raise_status(self.func, word, args)

    def run_block(self, address: int):
        self.lib.kl_host_launch(ctypes.c_void_p(address))

    def check_block(self, fake: FakeDriver, address: int):
        """Every array in the block must be null or device memory of the current GPU, and
        so must the status word."""
        block = self.block_type.from_address(address)
        for k, p in enumerate(self.func.params):
            if p.type.is_array:
                arg = getattr(block, f"p{k}")
                nd = p.type.ndim
                if arg.data and math.prod(arg.shape[:nd]):
                    extent = sum((n - 1) * s for n, s in zip(arg.shape[:nd], arg.strides[:nd]))
                    fake.device_range(arg.data, extent + p.type.dtype.nbytes,
                                      f"kernel '{self.func.name}' parameter '{p.name}'")
        fake.device_range(block.status, ctypes.sizeof(driver.StatusWord), "status word")


# --- Installing the fake ------------------------------------------------------------------

def install(monkeypatch, devices: int = 2, emulate_in: pathlib.Path | None = None):
    """Make kernlab see ``devices`` fake GPUs; with a folder, kernels run emulated (g++)."""
    from kernlab.runtime import device
    fake = FakeDriver(devices)
    monkeypatch.setattr(driver, "_bindings", lambda: fake)
    monkeypatch.setattr(driver, "_state", {})
    monkeypatch.setattr(driver, "_contexts", {})
    monkeypatch.setattr(device, "_devices", {"cpu": device._CPU})
    monkeypatch.setattr(device, "_default", [device._CPU])
    if emulate_in is not None:
        # kernel -> {ordinal: what _load returns}; weak, since a new kernel may reuse the
        # id() of a collected one (a closure kernel made afresh, say)
        loaded = weakref.WeakKeyDictionary()

        def load(kernel, ordinal):  # CudaKernel._load without NVRTC and modules
            mine = loaded.setdefault(kernel, {})
            if ordinal not in mine:
                driver.context(ordinal)
                emulated = HostEmulated(kernel.func, emulate_in, kernel.bounds_check,
                                        kernel.verify_fp)
                status = driver.alloc(ctypes.sizeof(driver.StatusWord), ordinal)
                driver.memset(status, 0, ctypes.sizeof(driver.StatusWord), ordinal)
                fake.status_words.add(status)
                mine[ordinal] = (None, emulated, status)
            return mine[ordinal]

        monkeypatch.setattr(driver.CudaKernel, "_load", load)
    return fake


def uninstalled(monkeypatch, why: str = "DynamicLibNotFoundError: libcuda.so not found"):
    """Make kernlab see no CUDA driver at all, whatever this machine has."""
    from kernlab.runtime import device

    def missing():
        raise RuntimeError(why)

    monkeypatch.setattr(driver, "_bindings", missing)
    monkeypatch.setattr(driver, "_state", {})
    monkeypatch.setattr(driver, "_contexts", {})
    monkeypatch.setattr(device, "_devices", {"cpu": device._CPU})
    monkeypatch.setattr(device, "_default", [device._CPU])
