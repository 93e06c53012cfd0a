"""``ir``: llvmlite's IR module for the builtins' LLVM lowerings, imported on first use.

The lowerings run only when a kernel compiles; importing llvmlite.ir with kernlab (45 ms)
would make every process pay for it, and a warm start, whose kernels all come from the
disk cache, loads no part of llvmlite (backends/llvm/variants.py)."""


class _LazyIR:
    __slots__ = ()

    def __getattr__(self, name):
        from llvmlite import ir as real
        return getattr(real, name)

    def __repr__(self):
        return "<llvmlite.ir, imported on first use>"


ir = _LazyIR()
