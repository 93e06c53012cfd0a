"""Kernel variants' machine code: their cache keys, the in-process memo, the disk cache and
loading, so that a warm start never imports llvmlite.

A kernel variant (a kernel or adjoint IR with its options) is compiled once per process (a
memo keyed like the disk cache); its object code persists in the disk cache, so a later
process loads it instead of compiling. Everything the warm path needs comes without LLVM:

- the key: the IR's canonical text (by its digest, ir_cache.ir_digest), the options, this
  kernlab backend's source (by file size and modification time) and what the code depends
  on in LLVM's hands — the llvmlite and LLVM versions, the host CPU's name and features.
  Those four come from llvmlite once it is loaded; a process that has not loaded it reads
  them from the *host record*, a cache entry written by the last process that did, keyed
  by this machine's identity without LLVM (the processor's model and feature flags from
  /proc/cpuinfo, and the size and modification time of llvmlite's library). Where there
  is no record (another machine, another llvmlite, not Linux), llvmlite is loaded and
  asked, and the record written.
- the *plan*: what the code generator decided about the variant that its runner needs
  (jit.variant_plan), kept under a key derived from the variant's.
- the object code, placed in memory by objload.py, the loader of this package; where it
  cannot place an object (not Linux x86-64, a relocation it does not handle) LLVM's MCJIT
  loads it (jit.add_object). A cache entry that neither can load is compiled again.

Only a miss (no entry, or a damaged one) imports jit.py, which compiles.
"""
from __future__ import annotations

import collections
import ctypes
import functools
import marshal
import os
import re
import sys
import threading
import time
import weakref

from ... import config
from ...ir.nodes import Function
from ...runtime import cache
from ...runtime.ir_cache import ir_digest
from . import objload
from .abi import INTERRUPT_SYMBOL
from .runner import _ENTRY_TYPE, ArgLayout, CompiledEntry, Runner, _interrupt, layout_of

KERNLAB_VERSION = "0.1.0"
BACKEND_VERSION = "llvm-backend-3"
HOST_FORMAT = "kernlab-host-1"
PLAN_FORMAT = "kernlab-plan-1"
PARTS = ("fast", "general")  # a variant's entries (entry.PARTS)

# KERNLAB_OBJECT_LOADER=llvm in the environment: every object is loaded by LLVM's MCJIT
OWN_LOADER = os.environ.get("KERNLAB_OBJECT_LOADER", "kernlab") != "llvm"

_lock = threading.RLock()
# key -> CompiledEntry, while some runner uses it: each live variant compiles once per process
_memo: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_recent: collections.deque = collections.deque(maxlen=8)  # the latest entries, kept a while
stats = {"compiled": 0, "loaded": 0, "compile_s": 0.0, "load_s": 0.0, "arenas_freed": 0,
         "llvm_loads": 0}  # llvm_loads: objects MCJIT placed (objload.stats: the others)


def _say(text):
    if config.verbose:
        print(f"kernlab: {text}", file=sys.stderr)


def _ms(t0) -> str:
    return f"{(time.perf_counter() - t0) * 1e3:.1f} ms"


# ---- the host, without LLVM -----------------------------------------------------------------

_host: list = []  # this process's host values, once decided (see host_values)
_host_lock = threading.Lock()  # held only around _host: jit calls record_host under its lock
_CPU_FIELDS = {"vendor_id", "cpu family", "model", "model name", "stepping", "flags",
               "Features", "CPU implementer", "CPU architecture", "CPU variant", "CPU part",
               "CPU revision", "isa", "uarch"}


def _cpu_identity() -> str | None:
    """The first processor's model and feature flags as Linux reports them (what LLVM's
    host detection reads, through cpuid), or None elsewhere."""
    try:
        fd = os.open("/proc/cpuinfo", os.O_RDONLY)
    except OSError:
        return None
    chunks = []
    try:  # up to the first blank line: the kernel formats each processor as it is read
        # (a read of 1 KB: one of 4 KB had it format the second processor too, ~0.03 ms)
        while not chunks or b"\n\n" not in b"".join(chunks[-2:]) and len(chunks) < 64:
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    first = b"".join(chunks).decode("utf-8", "replace").split("\n\n", 1)[0]
    lines = sorted(line for line in first.splitlines()
                   if line.split(":", 1)[0].strip() in _CPU_FIELDS)
    return "\n".join(lines) if lines else None


_LLVMLITE_LIBRARIES = ("libllvmlite.so", "libllvmlite.dylib", "llvmlite.dll")


def _llvmlite_identity() -> str | None:
    """Where llvmlite is installed (the first sys.path entry holding it, as an import would
    find it), with the size and modification time of its library and version file, found
    without importing it; None if it cannot be found."""
    for entry in sys.path:
        folder = os.path.join(entry or ".", "llvmlite")
        try:
            version = os.stat(os.path.join(folder, "_version.py"))
        except OSError:
            continue
        for name in _LLVMLITE_LIBRARIES:
            try:
                lib = os.stat(os.path.join(folder, "binding", name))
            except OSError:
                continue
            return (f"{folder} {version.st_size} {version.st_mtime_ns} "
                    f"{name} {lib.st_size} {lib.st_mtime_ns}")
        return None
    return None


@functools.lru_cache(maxsize=None)
def _host_record_key() -> str | None:
    cpu, lib = _cpu_identity(), _llvmlite_identity()
    if cpu is None or lib is None:
        return None
    return cache.key_for(HOST_FORMAT, sys.platform, os.uname().machine, sys.version, cpu, lib)


def record_host(values: tuple) -> None:
    """Keep this machine's host values (jit.host_values) for later processes; called by jit
    when LLVM is set up. A process that chose other values before (from a stale record)
    takes these from now on."""
    with _host_lock:
        if _host and _host[0] != values:
            _host[0] = values
    key = _host_record_key() if config.cache_dir else None
    if key is not None and _read_host_record(key) != values:
        cache.store(key, marshal.dumps(list(values)))


def _read_host_record(key: str) -> tuple | None:
    payload = cache.load(key)
    try:  # (marshal: json's import alone costs a warm start a millisecond)
        values = marshal.loads(payload) if payload is not None else None
    except (ValueError, EOFError, TypeError):
        return None
    if type(values) is not list or len(values) != 4 or not all(type(v) is str for v in values):
        return None
    return tuple(values)


def host_values() -> tuple:
    """(llvmlite version, LLVM version, host CPU name, its features), decided once per
    process: from llvmlite if it is loaded, else from the host record, else by loading
    llvmlite."""
    if _host:
        return _host[0]
    jit = sys.modules.get(__package__ + ".jit")
    values = None
    if (jit is None or getattr(jit, "_jit", None) is None) and config.cache_dir:
        key = _host_record_key()
        values = _read_host_record(key) if key is not None else None
    if values is None:  # (no lock held here: jit's set-up takes its own, then _host_lock)
        from . import jit
        values = jit.host_values()
    with _host_lock:
        if not _host:
            _host.append(values)
    return _host[0]


@functools.lru_cache(maxsize=None)
def _fingerprint() -> str:
    """The code that decides what a kernel compiles to (this backend and the builtins'
    lowerings), by file name, size and modification time when kernlab was imported
    (ir_cache.source_files), so editing either never loads stale machine code."""
    from ...runtime.ir_cache import source_files
    return cache.key_for(*(f"{rel} {size} {mtime}" for rel, size, mtime in source_files()
                           if rel.count("/") == 1 and rel.startswith("builtins/")
                           or rel.count("/") == 2 and rel.startswith("backends/llvm/")))


def cache_key(func: Function, bounds_check: bool, verify_fp: bool = False,
              host: tuple | None = None) -> str:
    """The disk-cache key of a kernel variant: its IR, the options and the compiler (host:
    the host values it names, by default this process's)."""
    return cache.key_for(ir_digest(func),
                         f"bounds_check={bounds_check} verify_fp={verify_fp}",
                         *(host or host_values()), KERNLAB_VERSION, BACKEND_VERSION,
                         _fingerprint())


def _current(host: tuple) -> bool:
    """Whether code LLVM makes now is what ``host`` names (else a stale host record named
    another CPU or LLVM: what is made under keys computed from it is not stored)."""
    from . import jit
    return jit.host_values() == host


_NOT_IN_SYMBOL = re.compile(r"[^A-Za-z0-9_]")


def symbol_for(func: Function, key: str) -> str:
    return f"kl_{_NOT_IN_SYMBOL.sub('_', func.name)}_{key[:16]}"


def arg_layout(func: Function) -> ArgLayout:
    """The argument block of ``func`` (one per Function: every entry of it shares it)."""
    layout = getattr(func, "_arg_layout", None)
    if layout is None:
        layout = func._arg_layout = layout_of(func)
    return layout


# ---- parts and plans ------------------------------------------------------------------------

def fast_part(absent=(), private=()) -> str:
    """The part name of the fast entry for launches in which the optional arrays ``absent``
    (parameter indices) are absent and the others there, and the arrays ``private`` are
    privatised (entry.private_candidates): "fast" when there are none of either."""
    name = "fast"
    for what, ks in (("absent", absent), ("private", private)):
        if ks:
            name += f"-{what}:" + ",".join(map(str, sorted(ks)))
    return name


def _split_part(part: str) -> tuple:
    """(entry.PARTS name, absent optional arrays, privatised arrays) of a part name."""
    base, *rest = part.split("-")
    found = {"absent": frozenset(), "private": frozenset()}
    for item in rest:
        what, ks = item.split(":")
        found[what] = frozenset(int(k) for k in ks.split(","))
    return base, found["absent"], found["private"]


def part_key(key: str, part: str) -> str:
    return key if part == "general" else cache.key_for(key, part)


def plan_of(func: Function, key: str, verify_fp: bool, host: tuple | None = None) -> dict:
    """The variant's plan (jit.variant_plan): kept on the Function, in the disk cache under
    a key of its own, or made by the code generator (host: the values ``key`` names)."""
    plans = getattr(func, "_variant_plans", None)
    if plans is None:
        plans = func._variant_plans = {}
    plan = plans.get(key)
    if plan is None:
        where = cache.key_for(key, PLAN_FORMAT)
        payload = cache.load(where) if config.cache_dir else None
        plan = _checked_plan(payload, len(func.params)) if payload is not None else None
        if plan is None:
            from . import jit
            plan = jit.variant_plan(func, verify_fp)
            if config.cache_dir and _current(host or host_values()):
                cache.store(where, marshal.dumps(plan))
        plans[key] = plan
    return plan


def _checked_plan(payload: bytes, n: int) -> dict | None:
    """The plan a cache entry holds, or None unless it has the expected shape."""
    try:
        plan = marshal.loads(payload)
        ok = (type(plan) is dict
              and set(plan) == {"parts", "optional", "private", "eager", "interruptible"}
              and plan["parts"] in (list(PARTS), ["general"])
              and all(type(k) is int and 0 <= k < n for k in plan["optional"] + plan["eager"])
              and all(type(k) is int and 0 <= k < n and type(m) is int and m > 0
                      for k, m in plan["private"])
              and type(plan["interruptible"]) is bool)
    except (ValueError, EOFError, TypeError, KeyError):
        return None
    return plan if ok else None


# ---- compiling and loading ------------------------------------------------------------------

def compile_kernel(func: Function, bounds_check: bool, verify_fp: bool = False) -> Runner:
    """A runner for ``func``: its first entry from the in-process memo, the disk cache or a
    fresh compile; the general entry of a kernel with a fast one only when a launch needs
    it. With verify_fp, a float store that writes a NaN or Inf raises KernelFPError."""
    host = host_values()
    key = cache_key(func, bounds_check, verify_fp, host)
    plan = plan_of(func, key, verify_fp, host)
    variant = functools.partial(_variant, func, bounds_check, verify_fp, key, host)
    if len(plan["parts"]) == 1:
        return Runner(func, variant("general"), plan)
    first = variant(fast_part((), plan["eager"]))
    return Runner(func, first, plan, functools.partial(variant, "general"),
                  lambda absent, private: variant(fast_part(absent, private)))


def entry_keys(func: Function, bounds_check: bool, verify_fp: bool = False) -> dict:
    """The disk-cache key of each entry of a kernel variant, by part ("fast": the one
    compiled up front)."""
    key = cache_key(func, bounds_check, verify_fp)
    plan = plan_of(func, key, verify_fp)
    return {part: part_key(key, fast_part((), plan["eager"]) if part == "fast" else part)
            for part in plan["parts"]}


def _variant(func, bounds_check, verify_fp, key, host, part) -> CompiledEntry:
    key = part_key(key, part)
    entry = _memo.get(key)
    if entry is None:
        with _lock:
            entry = _memo.get(key)
            if entry is None:
                entry = _memo[key] = _load_or_compile(func, bounds_check, key, verify_fp, part,
                                                      host)
                _recent.append(entry)  # a runner made and dropped at once is not reloaded
    return entry


def _load_or_compile(func, bounds_check, key, verify_fp=False, part="general",
                     host=None) -> CompiledEntry:
    symbol = symbol_for(func, key)
    t0 = time.perf_counter()
    obj = cache.load(key) if config.cache_dir else None
    entry = _place(func, obj, symbol) if obj is not None else None
    if entry is not None:
        stats["loaded"] += 1
        stats["load_s"] += time.perf_counter() - t0
        _say(f"loaded kernel '{func.name}' ({part} entry) from the cache ({_ms(t0)})")
        return entry
    from . import jit, tiers
    if not _current(host or host_values()):
        # the key named a stale host record's CPU or LLVM: compile (and store) under the key
        # of the host LLVM now reports (jit's set-up has corrected this process's values)
        key = part_key(cache_key(func, bounds_check, verify_fp, jit.host_values()), part)
        symbol = symbol_for(func, key)
    text, layout = jit.lowered_text(func, bounds_check, symbol, verify_fp, part)
    if tiers.wanted(func):  # quick code now, the optimised code from a helper thread
        entry = tiers.compile_quick(func, text, symbol, layout, key)
        how = "quick code; optimising on a helper thread"
    else:
        entry = _beside_stores(func, text, symbol, layout, key)
        how = "optimised"
    stats["compiled"] += 1
    stats["compile_s"] += time.perf_counter() - t0
    _say(f"compiled kernel '{func.name}' ({part} entry, {how}, {_ms(t0)})")
    return entry


def _beside_stores(func, text, symbol, layout, key) -> CompiledEntry:
    """jit.optimised_entry, with the IR-cache entries this thread's compile put off
    (runtime/ir_cache.store) written meanwhile: LLVM optimises and emits the
    object on a helper thread, with the GIL released, while this thread pickles the IR.
    (The calling thread holds _lock, so what the helper needs of it is made first.)"""
    from ...runtime import ir_cache
    from . import jit
    if not ir_cache.has_deferred():
        return jit.optimised_entry(func, text, symbol, layout, key)
    jit._codegen_machine(func)
    done: dict = {}

    def work():
        try:
            done["obj"] = jit.optimised_object(func, text)
        except BaseException as exc:  # noqa: BLE001 — raised again on the calling thread
            done["error"] = exc

    helper = threading.Thread(target=work, name="kernlab-llvm", daemon=True)
    helper.start()
    try:
        ir_cache.write_deferred()
    finally:
        helper.join()
    if "error" in done:
        raise done["error"]
    return jit.optimised_entry(func, text, symbol, layout, key, obj=done["obj"])


def _resolve(name: str) -> int | None:
    """The runtime's own symbols that kernel code refers to (the C libraries' are found by
    objload)."""
    return ctypes.addressof(_interrupt) if name == INTERRUPT_SYMBOL else None


def _place(func, obj: bytes, symbol: str) -> CompiledEntry | None:
    return place(func, obj, symbol)[0]


def place(func, obj: bytes, symbol: str, data=()) -> tuple:
    """Load ``obj`` and find its entry ``symbol``: with objload where it can, else with
    LLVM's MCJIT. (the entry, {name: address} of the global variables named in ``data``),
    or (None, {}) when neither can load it (the caller compiles it anew)."""
    if OWN_LOADER and objload.supported():
        try:
            code = objload.load(obj, _resolve)
        except objload.MalformedObject:
            return None, {}  # damaged or another machine's: compiled anew
        except objload.ObjectError as exc:
            _say(f"kernel '{func.name}': loading its object with LLVM ({exc})")
        else:
            address = code.symbols.get(symbol)
            found = {name: code.symbols.get(name, 0) for name in data}
            if address and all(found.values()):
                return _entry(func, symbol, address, code), found
            code.free()
    if symbol.encode() not in obj:
        return None, {}  # not this entry's object: compiled anew, LLVM's loader not loaded
    from . import jit
    address, arena = jit.add_object(obj, symbol)
    if not address:
        return None, {}
    entry = _entry(func, symbol, address, arena)
    return entry, {name: arena.engine.get_global_value_address(name) for name in data}


def _entry(func, symbol, address, code) -> CompiledEntry:
    entry = CompiledEntry(symbol, address, arg_layout(func), _ENTRY_TYPE(address), code)
    _release_with(entry, code.release)
    return entry


_releasing: dict = {}  # id(weak reference) -> it: alive until its entry is garbage


def _release_with(entry, release) -> None:
    """Call ``release`` (the entry's code's) once ``entry`` is garbage: the last entry of its
    code frees the code. Not while the interpreter shuts down, where a daemon thread may
    still be running it (the process's end frees it). (A weak reference with a callback,
    as weakref.finalize(...).atexit = False does it, without finalize's first call, which
    imports atexit: 0.1 ms of a warm start.)"""
    def done(ref, release=release):
        _releasing.pop(id(ref), None)
        if not sys.is_finalizing():
            release()
    ref = weakref.ref(entry, done)
    _releasing[id(ref)] = ref


__all__ = ["compile_kernel", "cache_key", "entry_keys", "stats", "Runner"]
