"""The CPU backend: typed IR -> LLVM IR (lower.py, cx.py, entry.py) -> object code (jit.py),
kept in the disk cache and loaded by objload.py (variants.py decides which), run by
runner.py.

``compile_kernel(func, bounds_check)`` gives a runner whose ``launch(dims, args)`` runs the
kernel; ``llvm_source(func, bounds_check)`` gives the LLVM IR as text. Importing this package
loads no LLVM: a process whose kernels all come from the disk cache never imports llvmlite.
"""
from .runner import Runner
from .variants import compile_kernel


def __getattr__(name):  # the compile side, loaded (with llvmlite) on first use
    if name == "llvm_source":
        from .jit import llvm_source
        return llvm_source
    if name == "LoweringError":
        from .lower import LoweringError
        return LoweringError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["compile_kernel", "llvm_source", "Runner", "LoweringError"]
