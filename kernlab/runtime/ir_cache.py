"""The front end's results on disk: a kernel's typed IR, its adjoint IR and the adjoint
variants its launches made (gradients retained or shared: Kernel.adjoint_variant), kept in the
compile cache (runtime/cache.py: the same files, the same HMAC authentication) so that a
later process skips parsing, type checking and differentiation.

The key covers everything the IR depends on, or there is no key and nothing is cached:

- the source text, file and first line of the kernel and of every @kl.func it can reach
  (each overload, custom gradient and replay), since the IR records source locations;
- the value of every other name they use (module constants, kl.constant values, NumPy
  scalars and small arrays, types and structs by their fields, Python's own builtins);
  kernlab's own functions and modules count through kernlab's fingerprint;
- kernlab itself: its version and the size and modification time of each of its source
  files (editing kernlab invalidates every entry), the Python and NumPy versions;
- the kernel's name, a generic kernel's specialisation types and extra globals.

Anything this cannot vouch for (a name bound to another module's attribute lookups, an
object of an unknown kind, ``kl.static`` — which evaluates arbitrary Python — structs or
hash grids in the signature, a type that is not one of kernlab's named types) makes the
kernel uncacheable: its front end runs each time, as before.
"""
from __future__ import annotations

import ast
import builtins
import functools
import io
import linecache
import os
import pickle
import sys
import threading
import types as pytypes

import numpy as np

from .. import config
from . import cache

FORMAT = "kernlab-ir-3"  # bump when what is pickled changes shape
_MAX_ARRAY_BYTES = 1 << 16  # constants larger than this are not hashed: no caching
_LIBRARY_MODULES = {"math": None, "numpy": np.__version__}  # attribute reads are library
                                                           # constants


class Uncacheable(Exception):
    """Raised inside the key or the pickler: this kernel's IR is not cached."""


# ---- the key --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def source_files() -> tuple:
    """(path relative to the package, size, modification time) of each of kernlab's source
    files (the notebook package aside: the core never imports it). Taken once, when kernlab
    is imported (kernlab/__init__.py): the code a process runs is the code it imported, so
    that is the state its cache keys must name. Stat calls, not reads: a start cannot
    afford to hash a megabyte of source."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    stack = [(root, "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name not in ("notebook", "__pycache__"):
                    stack.append((e.path, f"{rel}{e.name}/"))
            elif e.name.endswith((".py", ".h")):
                st = e.stat()
                out.append((f"{rel}{e.name}", st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def package_fingerprint() -> str:
    """kernlab's source files (source_files) with the Python and NumPy versions."""
    return cache.key_for(FORMAT, sys.version, np.__version__,
                         *(f"{rel} {size} {mtime}" for rel, size, mtime in source_files()))


def kernel_key(kernel) -> str | None:
    """The cache key of ``kernel``'s front-end results, or None when it cannot have one."""
    try:
        deps = _Deps(kernel.extra_globals)
        deps.visit(kernel.pyfunc)
        extra = [deps.describe(t) for t in kernel.param_types or ()]
        if kernel.extra_globals:
            extra += [f"{k}={deps.describe(v)}" for k, v in sorted(kernel.extra_globals.items())]
        extra.append(f"mode={config.mode}")  # compiles asserts or not
        for scope, options in (("kernel", kernel.options), ("module", kernel.module.options)):
            extra += [f"{scope} option {k}={deps.describe(v)}" for k, v in
                      sorted(options.items(), key=lambda kv: str(kv[0]))]
    except Uncacheable:
        return None
    from .. import __version__
    return cache.key_for(FORMAT, __version__, package_fingerprint(), kernel.key,
                         *extra, *deps.parts)


class _Deps:
    """Collects the text that the IR of a kernel (and the funcs it reaches) depends on."""

    def __init__(self, extra_globals):
        self.parts: list = []
        self.seen: set = set()
        self.extra = extra_globals

    def visit(self, pyfunc) -> None:
        if id(pyfunc) in self.seen:
            return
        self.seen.add(id(pyfunc))
        if not isinstance(pyfunc, pytypes.FunctionType):
            raise Uncacheable
        code = pyfunc.__code__
        codes, stack = [], [code]
        while stack:
            c = stack.pop()
            codes.append(c)
            stack += [k for k in c.co_consts if isinstance(k, pytypes.CodeType)]
        # the function's lines, from its first decorator to the end of its last statement,
        # as linecache has them (files and notebook cells alike): inspect.getsource would
        # tokenize the file, which a warm start cannot afford
        first, last = code.co_firstlineno, code.co_firstlineno
        for c in codes:  # (end line of each instruction; Python 3.10: its line)
            spans = c.co_positions() if hasattr(c, "co_positions") else \
                ((line, line) for _, _, line in c.co_lines())
            for span in spans:
                if span[1] is not None:
                    last = max(last, span[1])
        linecache.checkcache(code.co_filename)
        lines = linecache.getlines(code.co_filename, pyfunc.__globals__)[first - 1:last]
        if not lines:
            raise Uncacheable
        self.parts += [code.co_filename, str(first), "".join(lines)]
        names = set()
        for c in codes:
            names.update(c.co_names)
            names.update(c.co_freevars)
        if "static" in names:
            raise Uncacheable  # kl.static runs arbitrary Python at compile time
        for ann in getattr(pyfunc, "__annotations__", {}).values():
            if isinstance(ann, str):  # from __future__ import annotations: names in text
                try:
                    names.update(n.id for n in ast.walk(ast.parse(ann, mode="eval"))
                                 if isinstance(n, ast.Name))
                except SyntaxError:
                    raise Uncacheable from None
            else:
                self.parts.append(f"annotation {self.describe(ann)}")
        from ..frontend.source import is_missing, resolve_global
        for name in sorted(names):
            value = resolve_global(pyfunc, name, self.extra)
            self.parts.append(f"{name}=" + ("<missing>" if is_missing(value)
                                             else self.describe(value)))

    def describe(self, v) -> str:  # noqa: C901 — one case per kind of value
        from ..kernel import Func, Kernel
        from ..types import Type
        from .array import array
        from .structs import content_key
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            return f"{type(v).__name__}:{v!r}"
        if isinstance(v, np.generic):
            return f"np:{v.dtype.str}:{v.tobytes().hex()}"
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject or v.nbytes > _MAX_ARRAY_BYTES:
                raise Uncacheable
            return f"ndarray:{v.dtype.str}:{v.shape}:{np.ascontiguousarray(v).tobytes().hex()}"
        if isinstance(v, (tuple, list)):
            return f"{type(v).__name__}(" + ",".join(self.describe(x) for x in v) + ")"
        if isinstance(v, Func):
            for f in [*v.overloads, v.grad, *v.grads.values(), v.replay]:
                if isinstance(f, Func):
                    f = f.pyfunc
                if f is not None:
                    self.visit(f)
            for f in (v.grad, v.replay, *v.grads.values()):
                if isinstance(f, Func):
                    for g in f.overloads:
                        self.visit(g)
            return f"func:{v.key}:{len(v.overloads)}"
        if isinstance(v, Kernel):
            return f"kernel:{v.key}"
        if isinstance(v, array) and getattr(v, "is_annotation", False):
            return f"array-annotation:{content_key(v.dtype)}:{v.ndim}"
        if isinstance(v, Type):
            return f"type:{content_key(v)}"
        if isinstance(v, pytypes.ModuleType):
            name = v.__name__
            if name == "kernlab" or name.startswith("kernlab."):
                return "module:kernlab"
            if name in _LIBRARY_MODULES:
                return f"module:{name}:{_LIBRARY_MODULES[name]}"
            raise Uncacheable  # its attributes could be anything: module-level settings
        if v in (float, int, bool) or getattr(builtins, getattr(v, "__name__", ""), None) is v:
            return f"builtin:{v.__name__}"
        module = getattr(v, "__module__", None) or ""
        if (module == "kernlab" or module.startswith("kernlab.")) and \
                isinstance(v, (pytypes.FunctionType, pytypes.BuiltinFunctionType, type)):
            return f"kernlab:{module}.{getattr(v, '__qualname__', v.__name__)}"
        if getattr(v, "_kernlab_builtin", None) is not None or \
                (module.startswith("kernlab") and callable(v)):
            return f"kernlab-callable:{module}.{getattr(v, '__name__', type(v).__name__)}"
        if module in ("math", "numpy") and callable(v):
            return f"library:{module}.{getattr(v, '__name__', '?')}"
        raise Uncacheable


# ---- pickling the IR ------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _named_types() -> tuple:
    """(name -> type, id(type) -> name) for the types pickled by reference: kernlab's
    scalars and named vectors and matrices (identity matters: launches test ``is``)."""
    from .. import types as T
    by_name = {f"scalar:{t.name}": t for t in vars(T).values() if isinstance(t, T.Scalar)}
    by_name.update({f"named:{k}": t for k, t in T.NAMED.items()})
    by_name["any"] = T.ANY
    return by_name, {id(t): k for k, t in by_name.items()}


class _Pickler(pickle.Pickler):
    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        from ..builtins.registry import REGISTRY, Builtin
        from ..ir.nodes import Function
        from ..types import ArrayType, Type
        self.registry, self.builtin, self.function = REGISTRY, Builtin, Function
        self.type, self.array_type = Type, ArrayType
        self.named = _named_types()[1]
        # the types most objects of an IR have: nothing to decide for them
        self.plain: set = set()  # types with nothing to decide (see reducer_override)

    def reducer_override(self, obj):
        """Every object pickle does not save as an atom (numbers, strings) or from its memo
        passes here once: kernlab's builtins and named types go by name; a module, or a
        function or class from outside kernlab, makes the IR uncacheable. (This hook rather
        than persistent_id, which pickle calls for every object, atoms and repeats too:
        a 4,000-line adjoint made millions of calls.)"""
        t = type(obj)
        if t in self.plain:
            return NotImplemented
        if t is self.function:  # without the per-process caches (sizes, entries)
            # (but with the in-place plan and the canonical text). The copy is one step
            # under the GIL: another thread launching the kernel adds its caches meanwhile.
            state = {k: v for k, v in vars(obj).copy().items()
                     if not k.startswith("_") or k in _KEPT}
            return _rebuild_function, (state,)
        if t is self.builtin:
            if self.registry.get(obj.name) is not obj:
                raise Uncacheable
            return _builtin_named, (obj.name,)
        if isinstance(obj, self.type) and t is not self.array_type:
            name = self.named.get(id(obj))
            if name is None:
                raise Uncacheable  # a struct, a custom vector: kept by identity elsewhere
            return _type_named, (name,)
        if t is pytypes.ModuleType:
            raise Uncacheable
        if t is pytypes.FunctionType or isinstance(obj, type):
            if not _allowed_module(getattr(obj, "__module__", None) or ""):
                raise Uncacheable  # a user's function or class: by reference, could change
            return NotImplemented  # by reference (and memoised: asked once)
        if not issubclass(t, self.type):
            # nothing above depends on more than the type for these (Values, Vars, Instrs,
            # Blocks, Ops, dicts, lists, tuples): the next one skips the tests
            self.plain.add(t)
        return NotImplemented


def _builtin_named(name: str):
    from ..builtins.registry import REGISTRY
    return REGISTRY[name]


def _type_named(name: str):
    return _named_types()[0][name]


_KEPT = ("_inplace_plan", "_canonical")  # per-Function caches a warm start wants


def _rebuild_function(state):
    from ..ir.nodes import Function
    func = Function.__new__(Function)
    func.__dict__.update(state)
    return func


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        kind, name = pid
        if kind == "builtin":
            from ..builtins.registry import REGISTRY
            return REGISTRY[name]
        if kind == "type":
            return _named_types()[0][name]
        raise pickle.UnpicklingError(f"unknown reference {pid!r}")

    def find_class(self, module, name):
        if _allowed_module(module):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a kernlab IR")


def _allowed_module(module: str) -> bool:
    """The modules whose classes and functions a pickled IR may name."""
    return module == "kernlab" or module.startswith("kernlab.") or module in (
        "builtins", "copyreg", "numpy", "numpy.core.multiarray", "numpy._core.multiarray",
        "numpy.dtypes", "collections", "enum")


_load_lock = threading.Lock()


def _renumber(values) -> None:
    """Give the loaded Values and Vars new numbers from this process's counter, in their
    old order: numbers name values in printed IR and order some lists, and must not repeat
    those of values made in this process."""
    from ..ir.nodes import _ids
    for v in sorted(values, key=lambda v: v.id):
        v.id = next(_ids)


def dumps(ir, adjoint, variants=None) -> bytes | None:
    """The payload of a kernel's IR, its adjoint IR and its adjoint variants (a dict
    (retained parameters, shared) -> IR: Kernel.adjoint_variant)."""
    buf = io.BytesIO()
    try:
        _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump((FORMAT, ir, adjoint,
                                                              dict(variants or {})))
    except (Uncacheable, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return buf.getvalue()


def loads(payload: bytes):
    """(ir, adjoint or None, adjoint variants), or None when the payload is not ours."""
    from ..ir import nodes
    with _load_lock:
        nodes._restored = restored = []
        try:
            fmt, ir, adjoint, variants = _Unpickler(io.BytesIO(payload)).load()
        except Exception:  # noqa: BLE001 — an authenticated entry of another kernlab: a miss
            return None
        finally:
            nodes._restored = None
    if fmt != FORMAT:
        return None
    _renumber(restored)
    return ir, adjoint, variants


# ---- the kernel's side ----------------------------------------------------------------------

def load(kernel):
    """(ir, adjoint or None) from the cache, or None (and the key, kept on the kernel). On
    a miss the front end runs and a compile will likely follow: the LLVM backend starts
    loading meanwhile (backends.preload_cpu_backend)."""
    found = None
    if config.cache_dir:
        key = kernel_key(kernel)
        kernel._ir_cache_key = key
        if key is not None:
            payload = cache.load(key)
            found = loads(payload) if payload is not None else None
            if found is not None:  # the adjoint variants launches made (retained gradients)
                kernel._adjoint_retain.update(found[2])
                found = found[:2]
    if found is None:
        from ..backends import preload_cpu_backend
        preload_cpu_backend()
    return found


def store(kernel) -> None:
    """Keep the kernel's IR (and its adjoint's, once made) under its key."""
    key = getattr(kernel, "_ir_cache_key", None)
    if key is None or not config.cache_dir or kernel._ir is None:
        return
    if getattr(kernel._ir, "struct_signature", None) is not None \
            or getattr(kernel._ir, "handle_hidden", None):
        return  # their launches hold on to frontend objects by identity (grids, meshes)
    from ..autodiff.inplace import plan
    from ..ir.printer import canonical_parts
    try:
        plan(kernel._ir)  # made now, kept with the IR: every launch reads it
        for func in (kernel._ir, kernel._adjoint, *kernel._adjoint_retain.values()):
            if func is not None:
                canonical_parts(func)  # the compiled code's cache key reads it
    except Exception:  # noqa: BLE001 — its launches report it; this only saves time
        return
    payload = dumps(kernel._ir, kernel._adjoint, kernel._adjoint_retain)
    if payload is not None:
        cache.store(key, payload)
