"""The CPU backend: typed IR -> LLVM IR (lower.py, cx.py) -> machine code (jit.py).

``compile_kernel(func, bounds_check)`` gives a runner whose ``launch(dims, args)`` runs the
kernel; ``llvm_source(func, bounds_check)`` gives the optimised LLVM IR as text.
"""
from .jit import Runner, compile_kernel, llvm_source
from .lower import LoweringError

__all__ = ["compile_kernel", "llvm_source", "Runner", "LoweringError"]
