"""``ir``: the IR-building API for the builtins' LLVM lowerings (backends/llvm/textir.py,
llvmlite.ir's API building LLVM IR text), imported on first use: the lowerings run only when
a kernel compiles, and a warm start, whose kernels all come from the disk cache, loads no
part of the LLVM backend's compile side (backends/llvm/variants.py)."""


class _LazyIR:
    __slots__ = ()

    def __getattr__(self, name):
        from ..backends.llvm import textir as real
        return getattr(real, name)

    def __repr__(self):
        return "<kernlab.backends.llvm.textir, imported on first use>"


ir = _LazyIR()
