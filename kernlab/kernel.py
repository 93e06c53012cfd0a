"""The decorators: @kernel, @func, @func_grad, and the Kernel object that owns compiled code.

A Kernel compiles lazily: its IR on first use, its adjoint when a gradient is first asked
for, and machine code per (backend, adjoint, bounds_check) variant.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import sys
import threading
import typing
import weakref
from typing import Callable, ParamSpec, TypeVar

from . import config
from .errors import KernelError, too_deeply_nested
from .ir.nodes import Function
from .ir.printer import print_function


class Func:
    """A @kl.func: inlined into the kernels that call it.

    Several @kl.func definitions of one name are overloads of one Func (a later definition
    with the same parameter types replaces the earlier one); ``typing.Any`` parameters make
    it generic (specialised at each call). Called from Python it runs its Python body on
    Python/NumPy values, after choosing the overload the arguments fit."""

    def __init__(self, pyfunc, module=None):
        self.pyfunc = pyfunc
        self.key = pyfunc.__name__
        self.module = module
        self.overloads: list = [pyfunc]
        self.grad: Func | None = None  # the latest @kl.func_grad
        self.grads: dict = {}  # overload (Python function) -> its @kl.func_grad
        self.replay: Func | None = None  # @kl.func_replay: what the adjoint recomputes
        functools.update_wrapper(self, pyfunc)

    def add_overload(self, pyfunc) -> "Func":
        key = _signature_key(pyfunc)
        for k, f in enumerate(self.overloads):
            if _signature_key(f) == key:
                self.overloads[k] = pyfunc
                break
        else:
            self.overloads.append(pyfunc)
        self.pyfunc = pyfunc
        return self

    def grad_for(self, pyfunc):
        """The custom gradient of the overload ``pyfunc`` (the only one's, if one)."""
        if pyfunc in self.grads:
            return self.grads[pyfunc]
        return self.grad if len(self.overloads) == 1 or not self.grads else None

    def __call__(self, *args, **kwargs):
        from .pycall import call_func
        return call_func(self, args, kwargs)

    def __repr__(self):
        return f"<kernlab func {self.__name__}>"

    __hash__ = object.__hash__


class _Options(dict):
    """A kernel's options (``kernel.options``): a dict that counts its changes in
    ``config.changes``, so the short paths of small launches (runtime/launch_short.py) see
    an option changed after they were made (``bounds_check``) in the one comparison they
    make for the settings, rather than looking it up at every launch."""

    def _changed(self):
        config.changes += 1

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self._changed()

    def __delitem__(self, key):
        super().__delitem__(key)
        self._changed()

    def __ior__(self, other):
        out = super().__ior__(other)
        self._changed()
        return out

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self._changed()

    def setdefault(self, key, default=None):
        out = super().setdefault(key, default)
        self._changed()
        return out

    def pop(self, *args):
        out = super().pop(*args)
        self._changed()
        return out

    def popitem(self):
        out = super().popitem()
        self._changed()
        return out

    def clear(self):
        super().clear()
        self._changed()


class Kernel:
    """A @kl.kernel. ``kernel.ir`` and ``kernel.adjoint_ir`` are its typed IR.

    ``Kernel(func=f, key="name")`` makes one from a plain function, as Warp's does. A kernel
    with ``typing.Any`` in its parameter annotations is generic: each launch runs the
    specialisation for its arguments' types (``kl.overload`` declares one ahead)."""

    def __init__(self, func=None, extra_globals: dict | None = None,
                 options: dict | None = None, *, key: str | None = None, module=None,
                 param_types: list | None = None, pyfunc=None, **_ignored):
        pyfunc = func if func is not None else pyfunc
        if pyfunc is None or not callable(pyfunc):
            raise TypeError("Kernel(func=...) needs a Python function")
        self.pyfunc = pyfunc
        self.func = pyfunc
        self.key = key or pyfunc.__name__
        self.extra_globals = extra_globals
        self.options = _Options(options or {})
        self.module = module if isinstance(module, Module) else get_module(
            module if module is not None else getattr(pyfunc, "__module__", None))
        self.param_types = param_types  # a generic kernel's specialisation: concrete types
        if param_types is None:
            self.module.kernels[key or pyfunc.__name__] = self
        self._ir: Function | None = None
        self._adjoint: Function | None = None
        self._adjoint_retain: dict = {}  # (retained param indices, shared) -> adjoint IR
        self._tangents: dict = {}  # (adjoint, retain, effects) -> tangent IR (forward mode)
        self._compiled: dict = {}
        self._launch_plan: list | None = None  # argument checkers (runtime/launch.py)
        self._quick = None  # the short path of small launches (runtime/launch.py _Quick)
        self._quick_adjoint = None  # the same for adjoint launches (launch_short.py)
        self._ir_cache_key: str | None = None  # of the front end's results (ir_cache.py)
        self._generic: bool | None = None
        self._specialisations: dict = {}
        functools.update_wrapper(self, pyfunc)
        self.key = key or pyfunc.__name__
        if param_types is None:
            try:
                generic = self.is_generic
            except Exception:  # noqa: BLE001 — a bad annotation: reported at its launch
                generic = False
            if generic:
                self.module.generics[self.key] = self

    @property
    def is_generic(self) -> bool:
        """Whether a parameter is annotated with ``Any`` (and this is not a specialisation)."""
        if self._generic is None:
            from .generics import annotated_types
            from .types import is_generic
            self._generic = self.param_types is None and any(
                is_generic(t) for t in _user_facing(annotated_types, self.pyfunc))
        return self._generic

    def specialise(self, types) -> "Kernel":
        """The variant of this generic kernel for concrete parameter ``types``."""
        types = tuple(types)
        found = self._specialisations.get(types)
        if found is None:
            from .generics import specialisation_key
            found = type(self)(self.pyfunc, self.extra_globals, self.options,
                               key=specialisation_key(self.key, types), module=self.module,
                               param_types=list(types))
            self._specialisations[types] = found
        return found

    @property
    def overloads(self) -> dict:
        """Warp's ``kernel.overloads``: this generic kernel's variants so far (declared with
        kl.overload or made by launches), by their parameter types."""
        return dict(self._specialisations)

    def for_arguments(self, values) -> "Kernel":
        """The kernel a launch with these argument values runs (self unless generic)."""
        if not self.is_generic:
            return self
        from .generics import launch_types
        return self.specialise(_user_facing(launch_types, self, values))

    @property
    def ir(self) -> Function:
        if self._ir is None:
            from .runtime import ir_cache
            cached = ir_cache.load(self)  # the front end's results of an earlier process
            if cached is not None:  # (a generic kernel has none: it never has an IR)
                self._ir, self._adjoint = cached
                return self._ir
            from .frontend import source_to_ir
            if self.is_generic:
                raise KernelError(f"kernel '{self.key}' is generic (it has Any parameters): "
                                  "launch it, or pick a variant with kl.overload", kernel=self.key)
            self._ir = _compiling(source_to_ir, self.pyfunc, self.key, self.extra_globals,
                                  self.param_types)
            ir_cache.store(self)
        return self._ir

    @property
    def adjoint_ir(self) -> Function:
        if self._adjoint is None:
            from .autodiff import reverse_mode
            from .runtime import ir_cache
            ir = self.ir
            if self._adjoint is None:  # not loaded with the IR
                self._adjoint = _compiling(reverse_mode, ir)
                ir_cache.store(self)  # again, with the adjoint
        return self._adjoint

    def adjoint_variant(self, retain: frozenset = frozenset(), shared: bool = False) -> Function:
        """The adjoint IR in which stores into the parameters ``retain`` (indices of arrays
        made with retain_grad=True) leave their gradients in place; with ``shared``, every
        gradient is accumulated atomically (for gradient arrays that share memory)."""
        if not retain and not shared:
            return self.adjoint_ir
        key = (retain, shared)
        func = self._adjoint_retain.get(key)
        if func is None:
            from .autodiff import reverse_mode
            func = self._adjoint_retain[key] = _compiling(reverse_mode, self.ir, retain,
                                                          shared)
            from .runtime import ir_cache
            ir_cache.store(self)  # again, with this variant: a warm start finds it there
        return func

    def tangent_variant(self, adjoint: bool = False, retain: frozenset = frozenset(),
                        effects: bool = True, shared: bool = False) -> Function:
        """The tangent kernel's IR (forward mode): of the kernel, or with adjoint=True of its
        adjoint (forward over reverse, for Hessian-vector products). effects=True: the
        kernel's computation and its tangents (kl.jvp); effects=False: the tangents only,
        the kernel's arrays left as they were (kl.launch(tangent=True), the tangent sweep
        of Tape.hvp; its ``kept`` arrays need a scratch copy: autodiff/forward.py)."""
        shared = bool(shared) and bool(adjoint)
        effects = bool(effects) or bool(adjoint)  # an adjoint's effects are its gradients
        key = (bool(adjoint), frozenset(retain), effects) + (("shared",) if shared else ())
        func = self._tangents.get(key)
        if func is None:
            from .autodiff import tangent_mode
            from .autodiff.inplace import localize, tangent_plan
            if adjoint:
                base, kept = self.adjoint_variant(frozenset(retain), shared), ()
            elif effects:
                base, kept = self.ir, ()
            else:
                local, kept = _user_facing(tangent_plan, self.ir)
                base = _compiling(localize, self.ir, local)
            func = self._tangents[key] = _compiling(tangent_mode, base, effects, kept)
        return func

    @property
    def adj(self):
        """Warp's ``kernel.adj`` view of the parameters: ``adj.args[k]`` has ``label``,
        ``type``, ``is_read`` (the kernel loads from it) and ``is_write`` (stores or
        atomics)."""
        import types as pytypes
        from .ir.nodes import Op
        func = self.ir
        walk = list(func.body.walk())
        read = {i.args[0] for i in walk if i.op is Op.LOAD}
        write = {i.args[0] for i in walk if i.op in (Op.STORE, Op.ATOMIC)}
        args = [pytypes.SimpleNamespace(label=p.name, type=p.type, is_read=p.value in read,
                                        is_write=p.value in write) for p in func.params]
        return pytypes.SimpleNamespace(args=args, fun_name=self.key)

    @property
    def enable_backward(self) -> bool:
        """The kernel's enable_backward option, else its module's (default True)."""
        value = self.options.get("enable_backward")
        if value is None:
            value = self.module.options.get("enable_backward")
        return value is not False

    @property
    def params(self):
        return self.ir.params

    def bounds_check(self) -> bool:
        return self.options.get("bounds_check", config.bounds_check)

    def compiled(self, backend: str, adjoint: bool = False, retain: frozenset = frozenset(),
                 tangent: str | None = None, shared: bool = False):
        """The runnable variant for ``backend`` ("interp", "llvm" or "cuda"), compiled once.
        tangent: None, "jvp" (forward mode: the kernel's computation and its tangents) or
        "tangent" (the tangents only); with adjoint=True, the tangent of the adjoint. shared: the
        adjoint that accumulates every gradient atomically (see adjoint_variant)."""
        retain = frozenset(retain) if adjoint else frozenset()
        shared = bool(shared) and adjoint
        key = (backend, adjoint, self.bounds_check(), bool(config.verify_fp), retain)
        if tangent is not None:
            key += (tangent,)
        if shared:
            key += ("shared",)
        runner = self._compiled.get(key)
        if runner is None:
            from .runtime import ir_cache
            with gc_paused():  # one pause for the front end, the cache and the backend
                try:
                    runner = self._compile(backend, adjoint, retain, tangent, shared, key)
                finally:  # what the LLVM backend did not write beside its work (ir_cache)
                    ir_cache.write_deferred()
            self._compiled[key] = runner
        return runner

    def _compile(self, backend, adjoint, retain, tangent, shared, key):
        if tangent is not None:
            func = self.tangent_variant(adjoint, retain, effects=tangent == "jvp",
                                        shared=shared)
        else:
            func = self.adjoint_variant(retain, shared) if adjoint else self.ir
        try:
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
        except RecursionError:
            raise too_deeply_nested(func.loc, self.key) from None
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


_gc_lock = threading.Lock()
_gc_pauses = [0, False]  # compiles under way, whether the collector was on before the first


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic collector off while the compiler runs. A compile allocates hundreds of
    thousands of long-lived objects (IR, llvmlite values), and each full collection walks
    them all: a third of a 4,000-line adjoint's compile time went there. The collector's
    state is restored when the last compile under way (on any thread) ends, and the cycles
    the compile left are collected then as usual.
    (Moving what a compile allocated straight into the oldest generation, with gc.freeze and
    gc.unfreeze, saves the young collections' walks but leaves a re-run cell's garbage
    cycles to the rare full collections: tests/test_reliability_memory.py then fails.)"""
    with _gc_lock:
        if not _gc_pauses[0]:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if not _gc_pauses[0] and _gc_pauses[1]:
                gc.enable()


def _compiling(stage, *args):
    """_user_facing for the stages that build a kernel's IR (see gc_paused)."""
    with gc_paused():
        return _user_facing(stage, *args)


def _user_facing(stage, *args):
    """Run a compiler stage; a KernelError surfaces without the compiler's internal frames
    (the message already shows the user's line). A kernel too deeply nested for the
    compiler's recursion is a KernelError too, at the kernel's line."""
    try:
        return stage(*args)
    except KernelError as err:
        err.__traceback__ = None
        error = err
    except RecursionError:
        fn = next((a for a in args if isinstance(a, Function)), None)
        name = fn.name if fn is not None else getattr(args[0], "__name__", None)
        error = too_deeply_nested(fn.loc if fn is not None else None, name)
    raise error


class Module:
    """A named group of kernels (Warp's module) holding options such as enable_backward.
    kernlab compiles each kernel on its own; a module only carries the shared options."""

    def __init__(self, name: str):
        self.name = name
        self.options: dict = dict(MODULE_OPTION_DEFAULTS)
        # key -> the latest kernel defined under that name, held weakly: a module never
        # keeps a kernel (and its compiled code) alive
        self.kernels = weakref.WeakValueDictionary()
        # key -> the latest generic kernel of that key, held (as Warp's module holds all its
        # kernels): a decorator overload stub (@kl.overload) of the same qualified name
        # finds it after the name was rebound; redefining the key lets the old one go
        self.generics: dict = {}

    def load(self, device=None, block_dim=None) -> bool:
        """Compile the module's kernels now (Warp's ``module.load``): a kernel's errors are
        raised here rather than at its first launch. Generic kernels wait for a launch."""
        for k in list(self.kernels.values()):
            if k.param_types is None and k.is_generic:
                continue
            k.ir
        return True

    def hash_module(self) -> str:
        """A hash of what the module's kernels are: their source and the types their
        parameters name, structs by their fields (a struct redefined unchanged keeps the
        hash), as Warp's module hash."""
        import hashlib
        import inspect

        from .generics import annotated_types
        from .runtime.structs import content_key
        h = hashlib.sha256()
        for key in sorted(self.kernels):
            k = self.kernels[key]
            h.update(key.encode())
            try:
                h.update(inspect.getsource(k.pyfunc).encode())
                types = annotated_types(k.pyfunc)
            except (OSError, TypeError, KernelError):
                types = []
            for t in types:
                h.update(content_key(t).encode())
        return h.hexdigest()

    def __repr__(self):
        return f"<kernlab module {self.name}>"


_MODULES: dict = {}


def get_module(name=None) -> Module:
    """The module called name (made on first use); a Python module object counts by name."""
    name = getattr(name, "__name__", name) or "__main__"
    if name not in _MODULES:
        _MODULES[name] = Module(name)
    return _MODULES[name]


# Warp's module options and their defaults. kernlab reads enable_backward; the rest are
# kept so code that sets or reads them runs (kernlab has no fast-math or unroll switches:
# its CPU code is IEEE, it never unrolls loops it cannot see through).
MODULE_OPTION_DEFAULTS = {
    "max_unroll": 16, "enable_backward": True, "fast_math": False, "fuse_fp": True,
    "lineinfo": False, "cuda_output": None, "mode": None, "optimization_level": None,
    "block_dim": 256,
}


def _options_module(module, stack_level: int) -> Module:
    if isinstance(module, Module):
        return module
    if module is None:
        import sys
        module = sys._getframe(stack_level + 1).f_globals.get("__name__", "__main__")
    return get_module(module)


def set_module_options(options: dict, module=None) -> None:
    """Update the options of module (a Module, a Python module or its name; by default
    the caller's module) from the dict options. kernlab acts on ``enable_backward``;
    Warp's other options (fast_math, max_unroll, mode, ...) are stored and returned by
    get_module_options but change nothing in kernlab's code."""
    if not isinstance(options, dict):
        raise TypeError(f"set_module_options() takes a dict of options, got "
                        f"{type(options).__name__}")
    _options_module(module, 1).options.update(options)


def get_module_options(module=None) -> dict:
    """The options dict of module (by default the caller's), Warp's defaults filled in."""
    return _options_module(module, 1).options


def load_module(module=None, device=None, recursive: bool = False, block_dim=None):
    """Warp's ``wp.load_module``: compile a module's kernels ahead of use. kernlab compiles
    each kernel on its first launch (and caches the code), so there is nothing to do."""
    return get_module(module)


def force_load(device=None, modules=None, block_dim=None):
    """Warp's ``wp.force_load``: nothing to do (kernels compile on first launch)."""
    return None


def kernel(f=None, *, enable_backward: bool | None = None, module=None, name=None,
           **options):
    """Decorator: compile a Python function as a kernel (``@kl.kernel`` or ``@kl.kernel()``).
    enable_backward=False marks a kernel whose adjoint must not be used (a tape skips it
    with a warning); None takes the module's option. ``name`` is the kernel's key (its
    function's name by default)."""
    def wrap(pyfunc):
        opts = dict(options)
        if enable_backward is not None:
            opts["enable_backward"] = bool(enable_backward)
        return Kernel(pyfunc, options=opts, module=module, key=name)
    return wrap(f) if f is not None else wrap


_P = ParamSpec("_P")
_R = TypeVar("_R")


@typing.overload
def func(f: Callable[_P, _R]) -> Callable[_P, _R]: ...


@typing.overload
def func(*, module=None, name=None) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...


def func(f=None, *, module=None, name=None, **_ignored):
    """Decorator: a function kernels can call; inlined at each call (``@kl.func`` or
    ``@kl.func(...)``). A second @kl.func of the same name in the same scope adds an
    overload to the first."""
    def wrap(pyfunc):
        existing = _bound_in_caller(pyfunc.__name__)
        if isinstance(existing, Func) and existing.key == pyfunc.__name__ \
                and existing.pyfunc.__qualname__ == pyfunc.__qualname__:
            return existing.add_overload(pyfunc)
        return Func(pyfunc, module)
    return wrap(f) if f is not None else wrap


def _bound_in_caller(name: str, within=(__name__,)):
    """What ``name`` means where the decorator is applied (the first frame outside the
    modules ``within``); the frame is not kept."""
    frame = sys._getframe(1)
    try:
        while frame is not None and frame.f_globals.get("__name__") in within:
            frame = frame.f_back
        if frame is None:
            return None
        found = frame.f_locals.get(name)
        if found is None:
            found = frame.f_globals.get(name)
        return found
    finally:
        del frame


def _signature_key(pyfunc) -> tuple:
    from .generics import annotated_types
    try:
        return tuple(annotated_types(pyfunc))
    except Exception:  # noqa: BLE001 — an unreadable annotation: never equal to another
        return (object(),)


def func_grad(forward: Func):
    """Decorator: a custom gradient for ``forward``; its body writes kl.adjoint[x] += ..."""
    if not isinstance(forward, Func):
        raise TypeError("@kl.func_grad(f) needs f to be a @kl.func")

    def wrap(pyfunc):
        forward.grad = Func(pyfunc)
        forward.grads[_overload_of_grad(forward, pyfunc)] = forward.grad
        return forward.grad
    return wrap


def _overload_of_grad(forward: Func, grad_pyfunc):
    """The overload of ``forward`` whose parameter types lead the gradient's parameters
    (the latest overload when none does: the gradient's own checks then report it)."""
    try:
        lead = _signature_key(grad_pyfunc)
        for f in reversed(forward.overloads):
            key = _signature_key(f)
            if lead[:len(key)] == key:
                return f
    except Exception:  # noqa: BLE001 — unreadable annotations: reported when compiled
        pass
    return forward.pyfunc


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
           arch: int | None = None, tangent: bool = False) -> str:
    """The listing of a kernel: "ir", "llvm" (as lowered, with the user's lines), "llvm-opt"
    (after optimisation), "cuda" or "ptx"; the adjoint's with adjoint=True, the tangent
    kernel's (forward mode: the values and their tangents, what kl.jvp runs; the
    tangents-only kernel of kl.launch(..., tangent=True) is it without the kernel's stores
    and what only they needed) with tangent=True (both: the tangent of the adjoint, which
    Hessian-vector products run).
    ``arch`` picks
    the GPU architecture of "ptx" (80 for sm_80; default kl.config.ptx_target_arch, else
    the first GPU's, else 80): PTX for any GPU can be made on a machine without one."""
    if not isinstance(k, Kernel):
        raise TypeError(f"kl.source() takes a kernel, not {k!r}")
    if tangent:
        func = k.tangent_variant(adjoint=adjoint)
    else:
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
