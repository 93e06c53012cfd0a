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

import functools
import io
import operator
import os
import pickle
import struct
import threading
import types as pytypes
import weakref

from .. import config
from . import cache

# the key (and FORMAT, which it names) in runtime/ir_key.py
from .ir_key import (FORMAT, Uncacheable, _source_lines, kernel_key,  # noqa: F401
                     package_fingerprint, source_files)


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
        self.rebuilt = {Function, Param, Site}  # by their attributes (_rebuild)
        self.block, self.instr, self.loc = Block, Instr, SourceLoc
        self.values, self.restore, self.op = {Value, Var}, _restore, Op
        self.type, self.array_type = Type, ArrayType
        self.named, self.named_by_value = _named_types()[1], _named_by_value()
        self.plain: set = set()  # types with nothing to decide (see reducer_override)

    def reducer_override(self, obj):
        """Every object pickle does not save as an atom (numbers, strings) or from its memo
        passes here once: the IR's nodes go as described above _block; kernlab's builtins
        and named types go by name; a module, or a function or class from outside kernlab,
        makes the IR uncacheable. (This hook rather than persistent_id, which pickle calls
        for every object, atoms and repeats too: a 4,000-line adjoint made millions of
        calls.)"""
        t = type(obj)
        if t in self.plain:
            return NotImplemented
        if t in self.values:  # (one call rather than this one and their __reduce__)
            return self.restore, (t, obj.type, obj.name, obj.id)
        if t is self.block:
            instrs = obj.instrs
            if len(vars(obj)) != 2 or type(instrs) is not list \
                    or not set(map(type, instrs)) <= {self.instr}:
                raise Uncacheable
            if set(map(len, map(vars, instrs))) <= {6}:  # no attributes beyond the fields
                return _block, (list(map(_INSTR_ROW, instrs)), obj.result,
                                {k: ins.regions for k, ins in enumerate(instrs) if ins.regions})
            return _block_of_dicts, (list(map(vars, instrs)), obj.result)
        if t is self.loc:
            return t, (obj.file, obj.line, obj.col, obj.end_col, obj.func)
        if t is self.op:  # getattr(Op, name), in C (an Enum's reduce calls the class)
            return getattr, (t, obj.name)
        if t in self.rebuilt:
            # without the per-process caches (sizes, entries), but with the in-place plan
            # and the IR's digest. The copy is one step under the GIL: another thread
            # launching the kernel adds its caches meanwhile.
            return _rebuild, (t, {k: v for k, v in vars(obj).copy().items()
                                  if not k.startswith("_") or k in _KEPT})
        if t is self.instr:
            # Instrs travel as their blocks' lists of attributes: one reached any other way
            # (an attribute holding an instruction) is not expected
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
            # nothing above depends on more than the type for these (dicts, lists, tuples,
            # InplacePlans): the next one skips the tests
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


_KEPT = ("_inplace_plan", "_ir_digest")  # per-Function caches a warm start wants


# ---- the IR's nodes in a payload ------------------------------------------------------------
# Pickling the IR's dataclasses one by one (a reduce call, a state dict and a reducer hook per
# instruction) took seconds for a 4,000-line kernel and its adjoint. Instructions, the bulk
# of an IR, therefore travel as tuples of their fields: a Block goes as (the list of its
# instructions' (op, args, result, loc, attrs), made by map() and an attrgetter in C, its
# result, {index: regions} of the instructions that have regions), and pickle writes and
# reads those tuples without calling back into Python (as dicts, or with an empty list of
# regions each, the pickler took up to twice as long); _block makes the Instrs again. An
# instruction with attributes of its own goes as its __dict__ (_block_of_dicts). Functions,
# Params and Sites go as (class, attributes) (_rebuild), Values and Vars as nodes._restore
# calls, SourceLocs by their fields; pickle's memo keeps each of them shared wherever it
# is used (arguments, results, attributes, parameters).

_INSTR_ROW = operator.attrgetter("op", "args", "result", "loc", "attrs")


@functools.lru_cache(maxsize=None)
def _node_classes() -> tuple:
    from ..ir.nodes import Block, Instr
    return Block, Instr


def _block(rows, result, regions):
    """A Block of the instructions ``rows``, those at the keys of ``regions`` with those
    regions, the others with none (see above)."""
    Block, Instr = _node_classes()
    new = Instr.__new__
    instrs = []
    for op, args, res, loc, attrs in rows:
        ins = new(Instr)
        # (a dict display assigned whole: half the time of update() with keywords)
        ins.__dict__ = {"op": op, "args": args, "result": res, "loc": loc, "attrs": attrs,
                        "regions": []}
        instrs.append(ins)
    for k, found in regions.items():
        instrs[k].__dict__["regions"] = found
    block = Block.__new__(Block)
    block.instrs, block.result = instrs, result
    return block


def _block_of_dicts(dicts, result):
    """A Block of the instructions whose attributes are ``dicts``."""
    Block, Instr = _node_classes()
    instrs = []
    for d in dicts:
        ins = Instr.__new__(Instr)
        ins.__dict__ = d
        instrs.append(ins)
    block = Block.__new__(Block)
    block.instrs, block.result = instrs, result
    return block


def _rebuild(cls, state):
    """A Function, Param or Site with the attributes ``state``."""
    obj = cls.__new__(cls)
    obj.__dict__ = state
    return obj


@functools.lru_cache(maxsize=None)
def _hot() -> tuple:
    """What most objects of an adjoint's payload name: first in _shared, where pickle names
    them with two bytes (its indices from 256 take five)."""
    from ..ir.nodes import Value, Var, _restore
    return _restore, Value, Var, _block, _rebuild


def _shared(base) -> list:
    """The objects of the kernel IR ``base`` that the adjoints made from it hold too, each
    once, in an order that depends on the IR's structure alone (so the same for the IR and
    for its copy loaded from the cache). An adjoint's payload names them by their place in
    this list (pickle's memo, seeded with it), so they are neither pickled again nor loaded
    as copies: the adjoint loaded shares them with the IR loaded, as a fresh one does."""
    walk = list(base.body.walk())
    objs = [*_hot(), base.loc, base.params, *base.params, *[p.value for p in base.params],
            base.vars, *base.vars, base.sites, *base.sites, *[s.loc for s in base.sites],
            *[i.result for i in walk], *[i.loc for i in walk]]
    return list({id(o): o for o in objs if o is not None}.values())


class _Unpickler(pickle.Unpickler):
    shared: list = []  # the objects of _shared(base) (see loads)

    def persistent_load(self, pid):
        if type(pid) is not int or not 0 <= pid < len(self.shared):
            raise pickle.UnpicklingError(f"unknown reference {pid!r}")
        return self.shared[pid]

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


def dumps(func, base=None, token: str = "", variants=None) -> bytes | None:
    """The payload of ``func`` (or None) and ``variants`` (a dict of Functions): a kernel's
    IR, or its adjoint IR and adjoint variants (Kernel.adjoint_variant), made from the IR
    ``base``, whose objects they name rather than hold (_shared). ``token`` names the
    payload (see store)."""
    from ..kernel import gc_paused
    try:
        with gc_paused():  # (hundreds of thousands of tuples, no cycles among them)
            return _dump(func, base, token, dict(variants or {}))
    except (Uncacheable, pickle.PicklingError, TypeError, AttributeError, RecursionError,
            RuntimeError):  # (RuntimeError: a dict another thread changed meanwhile)
        return None


def _dump(func, base, token: str, variants: dict) -> bytes:
    """dumps, whose pickler and its memo (every list and dict of the payload) are garbage
    before the collector is on again: it would walk them all."""
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    shared = _shared(base) if base is not None else []
    if shared:
        pickler.memo = {id(o): (k, o) for k, o in enumerate(shared)}
    # (the count: a base that differs from the one written against is a miss)
    pickler.dump((FORMAT, token, len(shared), func, variants))
    return buf.getvalue()


_INT32 = struct.Struct("<i")  # (the seeding pickle of loads: PROTO 5, then per shared object
# BININT its place, BINPERSID (persistent_load gives the object), MEMOIZE, POP; NONE, STOP)


def loads(payload: bytes, base=None):
    """(IR or None, variants, token) from a payload of dumps (``base``: the IR loaded for
    the ``base`` it was made with), or None when the payload is not ours."""
    from ..ir import nodes
    from ..kernel import gc_paused
    with _load_lock, gc_paused():  # (the objects it makes are the IR's: none is garbage)
        nodes._restored = restored = []
        try:
            found = _load(payload, base)
        except Exception:  # noqa: BLE001 — an authenticated entry of another kernlab: a miss
            found = None
        finally:
            nodes._restored = None
        if found is not None:
            _renumber(restored)
    return found


def _load(payload: bytes, base):
    """loads, whose unpickler is garbage before the collector is on again."""
    from ..ir.nodes import Function
    shared = _shared(base) if base is not None else []
    if shared:
        # a pickle first that puts the shared objects in the unpickler's memo, at the places
        # dumps gave them (the memo's setter leaves it empty in CPython 3.11)
        payload = b"".join([b"\x80\x05J", b"Q\x940J".join(map(_INT32.pack, range(
            len(shared)))), b"Q\x940N.", payload])
    unpickler = _Unpickler(io.BytesIO(payload))
    unpickler.shared = shared
    if shared:
        unpickler.load()
    fmt, token, count, func, variants = unpickler.load()
    if fmt != FORMAT or count != len(shared) or type(token) is not str \
            or type(variants) is not dict \
            or not all(type(f) is Function for f in (func, *variants.values()) if f is not None):
        return None
    return func, variants, token


# ---- the kernel's side ----------------------------------------------------------------------
# A kernel's IR is one entry, under kernel_key; its adjoint with the adjoint variants its
# launches made another (_adjoint_key), written when one is made and read when the adjoint
# is first wanted: the IR is pickled once, and a process that never differentiates never
# reads an adjoint. The adjoint entry names the objects it shares with the IR (_shared) and
# holds only the rest, so it is read with the very IR it was written against: its key holds
# the token of that IR's entry, a random name each writing of the IR entry gets (another
# process writing the IR entry anew, with a token of its own, leaves the adjoint entries
# made against the old one unread).

def ir_digest(func) -> str:
    """A digest of what printer.canonical_parts says of ``func``, made once per Function and
    kept with an IR in the cache: the part of a compiled variant's cache key that comes from
    the IR (backends/llvm/variants.py cache_key), which a warm start thus need not print."""
    digest = getattr(func, "_ir_digest", None)
    if digest is None:
        from ..ir.printer import canonical_parts
        digest = func._ir_digest = cache.key_for(*canonical_parts(func))
    return digest


def load(kernel):
    """The kernel's IR from the cache, or None (and the key, kept on the kernel). On a miss
    the front end runs and a compile will likely follow: the LLVM backend starts loading
    meanwhile (backends.preload_cpu_backend)."""
    found = None
    if config.cache_dir:
        key = kernel_key(kernel)
        kernel._ir_cache_key = key
        if key is not None:
            payload = cache.load(key)
            found = loads(payload) if payload is not None else None
            if found is not None:
                found, _, kernel._ir_cache_token = found
    if found is None:
        from ..backends import preload_cpu_backend
        preload_cpu_backend()
    return found


_deferred = threading.local()  # .kernels: weak references to the kernels whose entries
                               # this thread has still to write


def store(kernel) -> None:
    """Keep the kernel's IR and its adjoints (once made) under their keys: noted now,
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
    """Write what of the kernel's IR and adjoints the cache does not hold yet."""
    if kernel._ir_cache_token is None:
        _store_ir(kernel)
    if kernel._ir_cache_token is not None \
            and _adjoints_state(kernel) not in (kernel._ir_cache_adjoints, (False, frozenset())):
        _store_adjoints(kernel)


def _adjoints_state(kernel) -> tuple:
    """(whether the kernel has its adjoint IR, the keys of its adjoint variants)."""
    return kernel._adjoint is not None, frozenset(kernel._adjoint_retain)


def _store_ir(kernel) -> None:
    key = getattr(kernel, "_ir_cache_key", None)
    ir = kernel._ir
    if key is None or not config.cache_dir or ir is None:
        return
    if getattr(ir, "struct_signature", None) is not None or getattr(ir, "handle_hidden", None):
        return  # their launches hold on to frontend objects by identity (grids, meshes)
    from ..autodiff.inplace import plan
    try:
        plan(ir)  # made now, kept with the IR: every launch reads it
        ir_digest(ir)  # the compiled code's cache key reads it
    except Exception:  # noqa: BLE001 — its launches report it; this only saves time
        return
    token = os.urandom(8).hex()
    payload = dumps(ir, token=token)
    if payload is not None:
        cache.store(key, payload)
        kernel._ir_cache_token = token


def _adjoint_key(kernel) -> str | None:
    """The key of the kernel's adjoint entry against the IR entry this process wrote or
    read, or None."""
    token = getattr(kernel, "_ir_cache_token", None)
    if token is None or not config.cache_dir or kernel._ir is None:
        return None
    return cache.key_for(kernel._ir_cache_key, token, "adjoints")


def load_adjoints(kernel) -> None:
    """The kernel's adjoint IR and adjoint variants from the cache, where there are any,
    into the kernel (read once per kernel)."""
    if kernel._ir_cache_adjoints is not None:
        return
    kernel._ir_cache_adjoints = (False, frozenset())
    key = _adjoint_key(kernel)
    payload = cache.load(key) if key is not None else None
    found = loads(payload, kernel._ir) if payload is not None else None
    if found is not None:
        adjoint, variants, _ = found
        kernel._ir_cache_adjoints = (adjoint is not None, frozenset(variants))
        if kernel._adjoint is None:
            kernel._adjoint = adjoint
        for k, func in variants.items():
            kernel._adjoint_retain.setdefault(k, func)


def _store_adjoints(kernel) -> None:
    """Keep the kernel's adjoint IR and adjoint variants, made from its IR."""
    key = _adjoint_key(kernel)
    if key is None:
        return
    variants = dict(kernel._adjoint_retain)
    try:
        for func in (kernel._adjoint, *variants.values()):
            if func is not None:
                ir_digest(func)  # the compiled code's cache key reads it
    except Exception:  # noqa: BLE001 — its launches report it; this only saves time
        return
    state = _adjoints_state(kernel)
    payload = dumps(kernel._adjoint, kernel._ir, variants=variants)
    if payload is not None:
        cache.store(key, payload)
        kernel._ir_cache_adjoints = state
