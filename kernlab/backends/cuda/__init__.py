"""The CUDA backend: render CUDA C++ from the IR, compile it with NVRTC, run it through the
CUDA driver API.

    render.py   typed IR -> a readable CUDA C++ translation unit (render_cuda)
    header.py   the device support code every kernel includes: kernlab_cuda.h, its
                constants (name, status codes, stack size)
    nvrtc.py    CUDA C++ -> PTX / cubin with NVRTC, cached on disk (needs no GPU)
    driver.py   contexts, modules, memory, launches and the status word (needs a GPU)
"""
from __future__ import annotations

from .render import entry_name, render_cuda


def source(func, target: str = "cuda", bounds_check: bool = True,
           verify_fp: bool = False, arch: int | None = None) -> str:
    """The CUDA C++ (target "cuda") or PTX (target "ptx"; no GPU needed) of a kernel; PTX
    for compute capability ``arch`` (None: nvrtc.default_arch())."""
    text = render_cuda(func, bounds_check, verify_fp)
    if target == "cuda":
        return text
    if target == "ptx":
        from .nvrtc import compile_ptx
        return compile_ptx(text, func.name, arch, loc=func.loc)
    raise ValueError(f"unknown CUDA target {target!r}: use 'cuda' or 'ptx'")


def is_available() -> bool:
    """Whether kernels can run on a GPU here (never raises)."""
    from . import driver
    return driver.is_available()


def compile_kernel(func, bounds_check: bool = True, verify_fp: bool = False):
    """A runner for one kernel variant: ``.launch(dims, args)`` as the interpreter's."""
    from .driver import CudaKernel
    return CudaKernel(func, bounds_check, verify_fp)


__all__ = ["source", "render_cuda", "entry_name", "is_available", "compile_kernel"]
