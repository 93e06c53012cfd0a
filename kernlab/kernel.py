"""The decorators: @kernel, @func, @func_grad, and the Kernel object that owns compiled code.

A Kernel compiles lazily: its IR on first use, its adjoint when a gradient is first asked
for, and machine code per (backend, adjoint, bounds_check) variant.
"""
from __future__ import annotations

import functools

from . import config
from .errors import KernelError
from .ir.nodes import Function
from .ir.printer import print_function


class Func:
    """A @kl.func: inlined into the kernels that call it."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.grad: Func | None = None
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args):
        raise TypeError(f"func '{self.__name__}' can only be called from a kernel or func")

    def __repr__(self):
        return f"<kernlab func {self.__name__}>"

    __hash__ = object.__hash__


class _ModuleOptions:
    """``kernel.module.options``: the module-wide defaults Warp code reads (kernlab has no
    modules; every kernel is its own)."""

    def __init__(self):
        self.options = {"enable_backward": True}


class Kernel:
    """A @kl.kernel. ``kernel.ir`` and ``kernel.adjoint_ir`` are its typed IR."""

    def __init__(self, pyfunc=None, extra_globals: dict | None = None,
                 options: dict | None = None, *, func=None, key: str | None = None):
        pyfunc = pyfunc if pyfunc is not None else func  # Warp spells it Kernel(func=...)
        self.pyfunc = pyfunc
        self.key = key or pyfunc.__name__
        self.extra_globals = extra_globals
        self.options = dict(options or {})
        self.module = _ModuleOptions()
        self._ir: Function | None = None
        self._adjoint: Function | None = None
        self._compiled: dict = {}
        self._launch_plan: list | None = None  # argument checkers (runtime/launch.py)
        functools.update_wrapper(self, pyfunc)

    @property
    def ir(self) -> Function:
        if self._ir is None:
            from .frontend import source_to_ir
            self._ir = _user_facing(source_to_ir, self.pyfunc, self.key, self.extra_globals)
        return self._ir

    @property
    def adjoint_ir(self) -> Function:
        if self._adjoint is None:
            from .autodiff import reverse_mode
            self._adjoint = _user_facing(reverse_mode, self.ir)
        return self._adjoint

    @property
    def params(self):
        return self.ir.params

    def bounds_check(self) -> bool:
        return self.options.get("bounds_check", config.bounds_check)

    def compiled(self, backend: str, adjoint: bool = False):
        """The runnable variant for ``backend`` ("interp", "llvm" or "cuda"), compiled once."""
        key = (backend, adjoint, self.bounds_check(), bool(config.verify_fp))
        runner = self._compiled.get(key)
        if runner is None:
            func = self.adjoint_ir if adjoint else self.ir
            if backend == "interp":
                from .backends.interp import Interpreter
                runner = Interpreter(func)
            elif backend == "llvm":
                from .backends.llvm import compile_kernel
                runner = compile_kernel(func, bounds_check=key[2], verify_fp=key[3])
            elif backend == "cuda":
                from .backends.cuda import compile_kernel
                runner = compile_kernel(func, bounds_check=key[2], verify_fp=key[3])
            else:
                raise ValueError(f"unknown backend {backend!r}")
            self._compiled[key] = runner
        return runner

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.key}' is run with kl.launch({self.key}, dim, inputs=...)")

    def __repr__(self):
        return f"<kernlab kernel {self.key}>"

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        """In a notebook: the source next to the forward and adjoint IR, line-linked by the
        JupyterLab extension; text/html and text/plain fallbacks elsewhere."""
        from .notebook.mime import kernel_bundle
        return kernel_bundle(self)

    __hash__ = object.__hash__


def _user_facing(stage, *args):
    """Run a compiler stage; a KernelError surfaces without the compiler's internal frames
    (the message already shows the user's line)."""
    try:
        return stage(*args)
    except KernelError as err:
        err.__traceback__ = None
        error = err
    raise error


def kernel(f=None, *, enable_backward: bool = True, module=None, **options):
    """Decorator: compile a Python function as a kernel (``@kl.kernel`` or ``@kl.kernel()``)."""
    def wrap(pyfunc):
        return Kernel(pyfunc, options=options)
    return wrap(f) if f is not None else wrap


def func(f):
    """Decorator: a function kernels can call; inlined at each call."""
    return Func(f)


def func_grad(forward: Func):
    """Decorator: a custom gradient for ``forward``; its body writes kl.adjoint[x] += ..."""
    if not isinstance(forward, Func):
        raise TypeError("@kl.func_grad(f) needs f to be a @kl.func")

    def wrap(pyfunc):
        forward.grad = Func(pyfunc)
        return forward.grad
    return wrap


def source(k: Kernel, target: str = "ir", adjoint: bool = False, *,
           arch: int | None = None) -> str:
    """The listing of a kernel: "ir", "llvm" (as lowered, with the user's lines), "llvm-opt"
    (after optimisation), "cuda" or "ptx"; the adjoint's with adjoint=True. ``arch`` picks
    the GPU architecture of "ptx" (80 for sm_80; default kl.config.ptx_target_arch, else
    the first GPU's, else 80): PTX for any GPU can be made on a machine without one."""
    if not isinstance(k, Kernel):
        raise TypeError(f"kl.source() takes a kernel, not {k!r}")
    func = k.adjoint_ir if adjoint else k.ir
    if target == "ir":
        return print_function(func)
    if target in ("llvm", "llvm-opt"):
        from .backends.llvm import llvm_source
        return llvm_source(func, bounds_check=k.bounds_check(), optimized=target == "llvm-opt")
    if target in ("cuda", "ptx"):
        from .backends import cuda
        return cuda.source(func, target, bounds_check=k.bounds_check(),
                           verify_fp=bool(config.verify_fp), arch=arch)
    raise ValueError(f"unknown target {target!r}: use 'ir', 'llvm', 'llvm-opt', 'cuda' or "
                     "'ptx'")
