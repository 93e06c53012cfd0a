"""CUDA C++ -> PTX (or a cubin) with NVRTC, cached on disk.

NVRTC comes from the ``nvidia-cuda-nvrtc`` wheel (or a CUDA toolkit); ``cuda.bindings``
finds and loads it (through ``cuda.pathfinder``), and it needs no GPU or driver. The header
the kernels include is handed to NVRTC by name, so the source a user reads stays short.

A compile failure is a CudaCompileError naming the kernel, with NVRTC's log below the
user-facing line ("while compiling kernel 'k' for cuda: ..."). Results are cached under
a key of the source, the header, the architecture, the options and the NVRTC library
(compiler_identity: a cache hit does not load NVRTC).
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os

from ...errors import KernelError
from ...runtime import cache
from .header import HEADER, HEADER_NAME

DEFAULT_ARCH = 80  # sm_80 / compute_80 when no GPU says otherwise
# Unused locals are normal in generated code: keep the log (shown on errors) to the point.
OPTIONS = ("-std=c++17", "--diag-suppress=177,186,550")


class CudaCompileError(KernelError):
    """NVRTC rejected the generated code (a kernlab bug) or is not installed."""


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:
            from cuda import nvrtc  # cuda-python before 12.6
        except ImportError:
            return None
    return nvrtc


def is_available() -> bool:
    """Whether NVRTC can be loaded (no GPU needed)."""
    try:
        return _nvrtc() is not None and version() != ""
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def version() -> str:
    """NVRTC's version as "major.minor"; raises when the library cannot be loaded."""
    nvrtc = _nvrtc()
    if nvrtc is None:
        raise ImportError("cuda.bindings is not installed")
    err, major, minor = nvrtc.nvrtcVersion()
    _ok(nvrtc, err, "nvrtcVersion")
    return f"{major}.{minor}"


def default_arch() -> int:
    """The compute capability to compile PTX for: kl.config.ptx_target_arch when set, else
    the first GPU's when one is usable, else 80."""
    from ... import config
    if config.ptx_target_arch:
        return int(config.ptx_target_arch)
    try:
        from . import driver
        if driver.is_available():
            return driver.compute_capability(0)
    except Exception:
        pass
    return DEFAULT_ARCH


def compile_ptx(source: str, kernel: str, arch: int | None = None, loc=None) -> str:
    """PTX text for ``source`` (virtual architecture compute_<arch>)."""
    return compile_cuda(source, kernel, arch, loc, cubin=False).decode("utf-8")


def compile_cubin(source: str, kernel: str, arch: int | None = None, loc=None) -> bytes:
    """A cubin for the real architecture sm_<arch>: loads on a driver older than NVRTC."""
    return compile_cuda(source, kernel, arch, loc, cubin=True)


@functools.lru_cache(maxsize=None)
def compiler_identity() -> str:
    """What the cache key says about the compiler. For NVRTC from its PyPI wheel (what
    cuda.bindings loads first): its library files' paths, sizes and times, which a stat
    tells without loading the library, so a process that finds everything in the cache
    never pays the ~35 ms of loading NVRTC. Otherwise NVRTC's version (loads it)."""
    files = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for pattern in ("*/lib/libnvrtc.so*", "*/bin/nvrtc64*.dll"):
            files += sorted(glob.glob(os.path.join(root, pattern)))
    if files:
        stats = [(f, os.stat(f)) for f in files]
        return ";".join(f"{f}:{st.st_size}:{st.st_mtime_ns}" for f, st in stats)
    return f"nvrtc {version()}"


def compile_cuda(source: str, kernel: str, arch: int | None, loc, cubin: bool) -> bytes:
    arch = default_arch() if arch is None else int(arch)
    target = f"--gpu-architecture={'sm' if cubin else 'compute'}_{arch}"
    options = [target, *OPTIONS]
    try:
        identity = compiler_identity()
    except Exception:  # NVRTC is missing: said below, with what to install
        identity = None
    key = identity and cache.key_for("cuda", "cubin" if cubin else "ptx", identity,
                                     " ".join(options), HEADER, source)
    hit = cache.load(key) if key else None
    if hit is not None:
        return hit
    nvrtc = _nvrtc()
    if nvrtc is None or identity is None:
        raise CudaCompileError(
            "compiling CUDA code needs NVRTC: pip install 'kernlab[cuda]' "
            "(cuda-python and nvidia-cuda-nvrtc)", loc, kernel=kernel)
    out = _run_nvrtc(nvrtc, source, kernel, options, loc, cubin)
    cache.store(key, out)
    return out


def _run_nvrtc(nvrtc, source, kernel, options, loc, cubin) -> bytes:
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{kernel}.cu".encode(), 1,
                                         [HEADER.encode()], [HEADER_NAME.encode()])
    _ok(nvrtc, err, "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(
                f"NVRTC could not compile the CUDA code generated for kernel '{kernel}' "
                "(a kernlab bug; please report it with the log below)", loc, kernel=kernel,
                details=_log(nvrtc, prog), stage=f"compiling kernel '{kernel}' for cuda")
        get_size, get = (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin else \
            (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        err, size = get_size(prog)
        _ok(nvrtc, err, get_size.__name__)
        buf = b" " * size
        (err,) = get(prog, buf)
        _ok(nvrtc, err, get.__name__)
        return buf.rstrip(b"\0") if not cubin else buf
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _log(nvrtc, prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return "(NVRTC wrote no log)"
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode("utf-8", "replace").rstrip()


def _ok(nvrtc, err, what):
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(err)
        raise CudaCompileError(f"{what} failed: {text.decode() if text else err}")
