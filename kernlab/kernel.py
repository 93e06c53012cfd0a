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
        self.replay: Func | None = None  # @kl.func_replay: what the adjoint recomputes
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args):
        raise TypeError(f"func '{self.__name__}' can only be called from a kernel or func")

    def __repr__(self):
        return f"<kernlab func {self.__name__}>"

    __hash__ = object.__hash__


class Kernel:
    """A @kl.kernel. ``kernel.ir`` and ``kernel.adjoint_ir`` are its typed IR."""

    def __init__(self, pyfunc, extra_globals: dict | None = None, options: dict | None = None):
        self.pyfunc = pyfunc
        self.key = pyfunc.__name__
        self.extra_globals = extra_globals
        self.options = dict(options or {})
        self.module = getattr(pyfunc, "__module__", None) or "__main__"
        self._ir: Function | None = None
        self._adjoint: Function | None = None
        self._adjoint_retain: dict = {}  # retained param indices -> adjoint IR
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

    def adjoint_variant(self, retain: frozenset = frozenset()) -> Function:
        """The adjoint IR in which stores into the parameters ``retain`` (indices of arrays
        made with retain_grad=True) leave their gradients in place."""
        if not retain:
            return self.adjoint_ir
        func = self._adjoint_retain.get(retain)
        if func is None:
            from .autodiff import reverse_mode
            func = self._adjoint_retain[retain] = _user_facing(reverse_mode, self.ir, retain)
        return func

    @property
    def enable_backward(self) -> bool:
        """The kernel's enable_backward option, else its module's (default True)."""
        value = self.options.get("enable_backward")
        if value is None:
            value = get_module(self.module).options.get("enable_backward")
        return value is not False

    @property
    def params(self):
        return self.ir.params

    def bounds_check(self) -> bool:
        return self.options.get("bounds_check", config.bounds_check)

    def compiled(self, backend: str, adjoint: bool = False, retain: frozenset = frozenset()):
        """The runnable variant for ``backend`` ("interp", "llvm" or "cuda"), compiled once."""
        retain = frozenset(retain) if adjoint else frozenset()
        key = (backend, adjoint, self.bounds_check(), bool(config.verify_fp), retain)
        runner = self._compiled.get(key)
        if runner is None:
            func = self.adjoint_variant(retain) if adjoint else self.ir
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


class Module:
    """A named group of kernels (Warp's module) holding options such as enable_backward."""

    def __init__(self, name: str):
        self.name = name
        self.options: dict = {}

    def __repr__(self):
        return f"<kernlab module {self.name}>"


_MODULES: dict = {}


def get_module(name=None) -> Module:
    """The module called name (made on first use); a Python module object counts by name."""
    name = getattr(name, "__name__", name) or "__main__"
    if name not in _MODULES:
        _MODULES[name] = Module(name)
    return _MODULES[name]


def kernel(f=None, *, enable_backward: bool | None = None, module=None, **options):
    """Decorator: compile a Python function as a kernel (``@kl.kernel`` or ``@kl.kernel()``).
    enable_backward=False marks a kernel whose adjoint must not be used (a tape skips it
    with a warning); None takes the module's option."""
    def wrap(pyfunc):
        opts = dict(options)
        if enable_backward is not None:
            opts["enable_backward"] = bool(enable_backward)
        k = Kernel(pyfunc, options=opts)
        k.module = module if isinstance(module, str) else \
            getattr(module, "__name__", None) or pyfunc.__module__
        return k
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


def func_replay(forward: Func):
    """Decorator: what the adjoint runs instead of ``forward`` when it recomputes the forward
    pass (``forward`` itself runs once, in the forward launch). Use it for a func with side
    effects whose result must not change on replay, e.g. one that returns an atomic's result:
    record the value in an array in ``forward`` and read it back in the replay."""
    if not isinstance(forward, Func):
        raise TypeError("@kl.func_replay(f) needs f to be a @kl.func")

    def wrap(pyfunc):
        forward.replay = Func(pyfunc)
        return forward.replay
    return wrap


def func_native(snippet=None, adj_snippet=None, replay_snippet=None):
    """Warp's C++ snippet functions: kernlab compiles no C++, so such a func exists (a
    module that defines one still imports) but calling it from a kernel is an error."""
    def wrap(pyfunc):
        f = Func(pyfunc)
        f.native = snippet
        return f
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
