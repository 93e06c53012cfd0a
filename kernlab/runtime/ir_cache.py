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
import stat
import sys
import threading
import types as pytypes
import weakref

import numpy as np

from .. import config
from . import cache

FORMAT = "kernlab-ir-4"  # bump when what is pickled changes shape (4: flattened IR, see encode)
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


def _block_end(lines: list, first: int, last: int) -> int:
    """The last line (1-based) of the function whose bytecode ends at ``last``: statements
    that leave no bytecode (an ``assert`` or ``if __debug__:`` under ``python -O``, a trailing
    ``pass`` or docstring) still shape the kernel's IR, so the key runs on over every later
    line indented deeper than the ``def`` (blank lines between them included)."""
    k = first - 1
    while k < len(lines) and lines[k].lstrip().startswith("@"):
        k += 1  # the decorators: the def's own indentation is what counts
    if k >= len(lines):
        return last
    indent = len(lines[k]) - len(lines[k].lstrip())
    end, k = last, last
    while k < len(lines):
        text = lines[k]
        stripped = text.lstrip()
        if stripped and not stripped.startswith("#"):
            if len(text) - len(stripped) <= indent:
                break
            end = k + 1
        k += 1
    return end


def _source_lines(filename: str, module_globals) -> list:
    """The lines of a source file as linecache gives them (with their line ends). A file
    linecache does not hold yet is read directly when it is plain UTF-8 without a coding
    cookie: linecache's first read (tokenize's encoding detection) costs a warm start
    0.1 ms. Notebook cells and the rest go through linecache."""
    if filename not in linecache.cache and os.path.isabs(filename):
        try:
            fd = os.open(filename, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            fd = None
        if fd is not None:
            try:
                info = os.fstat(fd)
                data = os.read(fd, info.st_size + 1) if stat.S_ISREG(info.st_mode) \
                    and info.st_size < (1 << 24) else None
            finally:
                os.close(fd)
            if data is not None and len(data) <= info.st_size \
                    and b"coding" not in b"".join(data.split(b"\n", 2)[:2]) \
                    and not data.startswith(b"\xef\xbb\xbf"):
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
                if text is not None:  # the lines a text-mode readlines() gives
                    if "\r" in text:
                        text = text.replace("\r\n", "\n").replace("\r", "\n")
                    lines = [line + "\n" for line in text.split("\n")]
                    if text.endswith("\n") or not text:
                        lines.pop()  # (linecache ends a last line without one with "\n")
                    return lines
    linecache.checkcache(filename)
    return linecache.getlines(filename, module_globals)


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
        source = _source_lines(code.co_filename, pyfunc.__globals__)
        last = _block_end(source, first, last)
        lines = source[first - 1:last]
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
        Func, Kernel, Type, array, content_key = _describe_names()
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


@functools.lru_cache(maxsize=None)
def _describe_names() -> tuple:
    """What _Deps.describe tests values against, imported once (four relative imports per
    call cost a warm start's key about 0.1 ms)."""
    from ..kernel import Func, Kernel
    from ..types import Type
    from .array import array
    from .structs import content_key
    return Func, Kernel, Type, array, content_key


# ---- pickling the IR ------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _named_types() -> tuple:
    """(name -> type, id(type) -> name) for the types pickled by reference:
    kernlab's scalars and named vectors and matrices (identity matters: launches test
    ``is``; an equal copy a type rule made goes by the name of its named twin)."""
    from .. import types as T
    by_name = {f"scalar:{t.name}": t for t in vars(T).values() if isinstance(t, T.Scalar)}
    by_name.update({f"named:{k}": t for k, t in T.NAMED.items()})
    by_name["any"] = T.ANY
    return by_name, {id(t): k for k, t in by_name.items()}


@functools.lru_cache(maxsize=None)
def _named_by_value() -> dict:
    """type -> name of _named_types (for the pickler only: hashing them takes a while)."""
    by_value: dict = {}
    for k, t in _named_types()[0].items():
        try:
            by_value.setdefault(t, k)
        except TypeError:  # unhashable
            pass
    return by_value


class _Pickler(pickle.Pickler):
    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        from ..builtins.registry import REGISTRY, Builtin
        from ..errors import SourceLoc
        from ..ir.nodes import Block, Function, Instr, Op, Param, Site, Value, Var, _restore
        from ..types import ArrayType, Type
        self.registry, self.builtin = REGISTRY, Builtin
        self.flattened = {Function, Block, Instr, Param, Site, SourceLoc}
        self.values, self.restore, self.op = {Value, Var}, _restore, Op
        self.type, self.array_type = Type, ArrayType
        self.named, self.named_by_value = _named_types()[1], _named_by_value()
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
        if t in self.values:  # (one call rather than this one and their __reduce__)
            return self.restore, (t, obj.type, obj.name, obj.id)
        if t is self.op:  # getattr(Op, name), in C (an Enum's reduce calls the class)
            return getattr, (t, obj.name)
        if t in self.flattened:
            # Functions, Blocks, Instrs and SourceLocs travel flattened (_Encoder): one
            # reached any other way (an attribute holding an instruction) is not expected
            raise Uncacheable
        if t is self.builtin:
            if self.registry.get(obj.name) is not obj:
                raise Uncacheable
            return _builtin_named, (obj.name,)
        if isinstance(obj, self.type) and t is not self.array_type:
            name = self.named.get(id(obj))
            if name is None:  # an equal copy of a named type (a type rule made it anew)
                try:
                    name = self.named_by_value.get(obj)
                except TypeError:  # unhashable
                    name = None
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
    """The named type _Pickler saved by ``name`` (looked up without _named_types' table,
    which a warm start need not build)."""
    from .. import types as T
    kind, _, rest = name.partition(":")
    if kind == "named" and rest in T.NAMED:
        return T.NAMED[rest]
    if kind == "scalar":
        for t in T.SCALARS:
            if t.name == rest and vars(T).get(t.name, t) is t:
                return t
    if name == "any":
        return T.ANY
    return _named_types()[0][name]


_KEPT = ("_inplace_plan", "_canonical")  # per-Function caches a warm start wants


# ---- the flattened IR -----------------------------------------------------------------------
# Pickling the IR's dataclasses one by one (a reduce call, a state dict and a reducer hook per
# instruction) took seconds for a 4,000-line kernel and its adjoint. The payload holds them
# flattened into tuples, lists and dicts instead, which pickle writes and reads in C without
# calling back into Python; Values and Vars stay objects (pickle's memo keeps each one
# shared wherever it is used: arguments, results, attributes, parameters).
#
#   function: (state, the names of the state's entries that are encoded, see _FUNCTION_FIELDS)
#   block:    (instructions, result value or None)
#   instr:    (Op, args, result, location index, attrs, regions as blocks)
#             — a longer tuple when the instruction carries attributes of its own (extra)
#   location: an index into the payload's table of (file, line, col, end_col, func)

class _Encoder:
    """Flattens Functions (and the Blocks, Instrs, Params, Sites and SourceLocs in them)."""

    def __init__(self):
        self.locs: dict = {}   # id(SourceLoc) -> index
        self.by_value: dict = {}  # (file, line, col, end_col, func) -> index
        self.table: list = []  # those rows, by index
        self.alive: list = []  # the SourceLocs in self.locs
        self.funcs: dict = {}  # id(Function) -> index into self.encoded
        self.encoded: list = []

    def loc(self, loc) -> int:
        k = self.locs.get(id(loc))
        return self._new_loc(loc) if k is None else k

    def _new_loc(self, loc) -> int:
        """A location not seen before by identity: equal ones share an entry (and one
        SourceLoc when loaded; they are immutable)."""
        row = (loc.file, loc.line, loc.col, loc.end_col, loc.func)
        k = self.by_value.get(row)
        if k is None:
            k = self.by_value[row] = len(self.table)
            self.table.append(row)
        self.locs[id(loc)] = k
        self.alive.append(loc)  # (its id stays its own while the encoder lives)
        return k

    def function(self, func) -> int | None:
        if func is None:
            return None
        k = self.funcs.get(id(func))
        if k is not None:
            return k
        from ..ir.nodes import Function
        if type(func) is not Function:
            raise Uncacheable
        # without the per-process caches (sizes, entries), but with the in-place plan and
        # the canonical text. The copy is one step under the GIL: another thread launching
        # the kernel adds its caches meanwhile.
        state = {k: v for k, v in vars(func).copy().items()
                 if not k.startswith("_") or k in _KEPT}
        state["body"] = self.block(state["body"])
        state["loc"] = self.loc(state["loc"])
        state["params"] = [(p.name, p.type, p.value) for p in state["params"]]
        state["sites"] = [(self.loc(s.loc), s.array, s.shape, s.kind) for s in state["sites"]]
        k = self.funcs[id(func)] = len(self.encoded)
        self.encoded.append(state)
        return k

    def block(self, block) -> tuple:
        from ..ir.nodes import Block, Instr
        if type(block) is not Block or len(vars(block)) != 2:
            raise Uncacheable
        out = []
        locs, new_loc = self.locs, self._new_loc
        for ins in block.instrs:
            if type(ins) is not Instr:
                raise Uncacheable
            regions, loc = ins.regions, ins.loc
            at = locs.get(id(loc))
            row = (ins.op, ins.args, ins.result, new_loc(loc) if at is None else at,
                   ins.attrs, [self.block(r) for r in regions] if regions else None)
            extra = vars(ins)
            if len(extra) != 6:  # attributes beyond the dataclass fields
                row += ({k: v for k, v in extra.items() if k not in _INSTR_FIELDS},)
            out.append(row)
        return out, block.result


_INSTR_FIELDS = frozenset(("op", "args", "result", "loc", "attrs", "regions"))


class _Decoder:
    """Rebuilds what _Encoder flattened."""

    def __init__(self, table, encoded):
        from ..errors import SourceLoc
        from ..ir.nodes import Block, Function, Instr, Param, Site
        self.locs = [SourceLoc(*row) for row in table]
        self.encoded = encoded
        self.funcs: dict = {}
        self.classes = Block, Function, Instr, Param, Site

    def function(self, k):
        if k is None:
            return None
        func = self.funcs.get(k)
        if func is None:
            Block, Function, Instr, Param, Site = self.classes
            state = dict(self.encoded[k])
            locs = self.locs
            state["body"] = self.block(state["body"])
            state["loc"] = locs[state["loc"]]
            state["params"] = [Param(*row) for row in state["params"]]
            state["sites"] = [Site(locs[at], *rest) for at, *rest in state["sites"]]
            func = self.funcs[k] = Function.__new__(Function)
            func.__dict__.update(state)
        return func

    def block(self, encoded):
        Block, _, Instr, _, _ = self.classes
        new, locs, block = Instr.__new__, self.locs, self.block
        instrs = []
        for row in encoded[0]:
            ins = new(Instr)
            regions = row[5]
            # (a dict display assigned whole: half the time of update() with keywords)
            ins.__dict__ = {"op": row[0], "args": row[1], "result": row[2],
                            "loc": locs[row[3]], "attrs": row[4],
                            "regions": [block(r) for r in regions] if regions else []}
            if len(row) > 6:
                ins.__dict__.update(row[6])
            instrs.append(ins)
        out = Block.__new__(Block)
        out.instrs, out.result = instrs, encoded[1]
        return out


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
        found = _classes.get((module, name))
        if found is not None:
            return found
        if _allowed_module(module) and not (module == "builtins" and name in _REFUSED):
            found = _classes[module, name] = super().find_class(module, name)
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a kernlab IR")


# builtins no IR names (entries are authenticated: this is a second line of defence)
_REFUSED = frozenset(["eval", "exec", "compile", "open", "__import__", "breakpoint", "input",
                      "globals", "locals", "vars", "delattr", "setattr", "memoryview"])
_classes: dict = {}  # (module, name) -> what find_class found (from modules _allowed_module
                     # lets in, loaded already: nothing else can change what it finds)


def _allowed_module(module: str) -> bool:
    """The modules whose classes and functions a pickled IR may name."""
    return module == "kernlab" or module.startswith("kernlab.") or module in (
        "builtins", "copyreg", "numpy", "numpy.core.multiarray", "numpy._core.multiarray",
        "numpy.core.numeric", "numpy._core.numeric",  # (_frombuffer: NumPy 2's arrays)
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
    from ..kernel import gc_paused
    buf = io.BytesIO()
    try:
        with gc_paused():  # (hundreds of thousands of tuples, no cycles among them)
            enc = _Encoder()
            parts = (enc.function(ir), enc.function(adjoint),
                     {key: enc.function(f) for key, f in dict(variants or {}).items()})
            _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(
                (FORMAT, enc.table, enc.encoded, *parts))
    except (Uncacheable, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return buf.getvalue()


def loads(payload: bytes):
    """(ir, adjoint or None, adjoint variants), or None when the payload is not ours."""
    from ..ir import nodes
    from ..kernel import gc_paused
    with _load_lock, gc_paused():  # (the objects it makes are the IR's: none is garbage)
        nodes._restored = restored = []
        try:
            fmt, *rest = _Unpickler(io.BytesIO(payload)).load()
            if fmt != FORMAT:
                return None
            table, encoded, ir, adjoint, variants = rest
            dec = _Decoder(table, encoded)
            ir, adjoint = dec.function(ir), dec.function(adjoint)
            variants = {key: dec.function(k) for key, k in variants.items()}
        except Exception:  # noqa: BLE001 — an authenticated entry of another kernlab: a miss
            return None
        finally:
            nodes._restored = None
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


_deferred = threading.local()  # .kernels: weak references to the kernels whose entries
                               # this thread has still to write


def store(kernel) -> None:
    """Keep the kernel's IR (and its adjoint's, once made) under its key: noted now,
    written by the next compile on this thread (Kernel.compiled), beside LLVM's work when
    LLVM compiles (backends/llvm/variants._beside_stores: LLVM releases the GIL, and a
    4,000-line kernel and its adjoint spend about a second pickling their IR), else when
    the compile ends. Noted by weak reference: a kernel dropped before any compile is not
    kept alive, nor written."""
    if getattr(kernel, "_ir_cache_key", None) is None or not config.cache_dir:
        return
    kernels = getattr(_deferred, "kernels", None)
    if kernels is None:
        kernels = _deferred.kernels = []
    if not any(ref() is kernel for ref in kernels):
        kernels.append(weakref.ref(kernel))


def has_deferred() -> bool:
    return any(ref() is not None for ref in getattr(_deferred, "kernels", ()))


def write_deferred() -> None:
    """Write the entries noted on this thread (each kernel's IR as it is now)."""
    kernels = getattr(_deferred, "kernels", None)
    while kernels:
        kernel = kernels.pop(0)()
        if kernel is not None:
            _store_now(kernel)


def _store_now(kernel) -> None:
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
