"""Machine code for kernels: the host target machine, one MCJIT engine, object caching and
the runner that packs arguments and launches the entry function.

A kernel variant is compiled once per process (an in-memory memo keyed like the disk
cache); its object code persists in the disk cache, so a later process loads it instead
of compiling. Launches call the entry through ctypes, which releases the GIL: small grids
run inline, large ones are split across a persistent pool of ``config.num_threads``.

Interrupts: Python runs a SIGINT handler only on the main thread, between bytecodes, so a
kernel looping forever on the main thread could never be stopped. Kernels whose loops check
the interrupt flag (lower.interrupt_checks) therefore run on pool threads while the main
thread waits; a KeyboardInterrupt there sets the flag, waits for the workers to leave,
clears it and re-raises. Loop-free kernels cannot hang, but a large grid of them can run for
seconds: launched from the main thread, such a grid runs in chunks of threads sized to take
about 10 ms each, so a KeyboardInterrupt lands between two chunks (after the workers of the
current one have finished).
"""
from __future__ import annotations

import collections
import ctypes
import functools
import hashlib
import math
import os
import re
import struct
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ... import config
from ...errors import LaunchError, reported_error
from ...ir.nodes import Function
from ...ir.printer import canonical_ir, canonical_parts, print_function  # noqa: F401
from ...runtime import cache
from ...types import ArrayType
from .entry import (PARTS, PRIVATE_BYTES, has_fast_path, lower_to_llvm, optional_arrays,
                    private_candidates)
from .lower import (INTERRUPT_SYMBOL, STATUS_GENERAL, STATUS_NOT_FINITE, LoweringError,
                    is_interruptible)

KERNLAB_VERSION = "0.1.0"
BACKEND_VERSION = "llvm-backend-2"
PARALLEL_THRESHOLD = 65536  # threads; smaller launches run inline on the calling thread
CHUNKED_THRESHOLD = 1 << 20  # threads: larger loop-free launches from the main thread run
CHUNK_SECONDS = 0.01         # in chunks of about this long, interruptible between chunks
PARALLEL_THRESHOLD_LOOPS = 512  # the same for kernels with long loops: each thread does more,
                                # and these already run on the pool (see _run_checked)
MAX_THREADS = 2**31 - 1     # thread ids are int32

_POINTER_FORMAT = "Q"


def _scalar_format(s) -> str:
    """The struct-module format of one scalar in the argument block ('e' is half)."""
    if s.kind == "b":
        return "B"
    if s.kind == "f":  # bfloat16 passes as the float32 it is exactly
        return "f" if s.name == "bfloat16" else {16: "e", 32: "f", 64: "d"}[s.bits]
    code = {8: "b", 16: "h", 32: "i", 64: "q"}[s.bits]
    return code.upper() if s.kind == "u" else code


_ENTRY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_OBJECT_MAGIC = {"linux": b"\x7fELF", "darwin": b"\xcf\xfa\xed\xfe", "win32": b"\x64\x86"}

_lock = threading.RLock()
# key -> CompiledEntry, while some runner uses it: each live variant compiles once per process
_memo: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_recent: collections.deque = collections.deque(maxlen=8)  # the latest entries, kept a while
_jit = None            # the (target machine, engine) pair, made on first use
stats = {"compiled": 0, "loaded": 0, "compile_s": 0.0, "load_s": 0.0, "arenas_freed": 0}
_interrupt = ctypes.c_int32(0)  # kl_interrupt: nonzero asks every checking loop to stop
_interrupts = 0                 # how many times it was raised (see Runner._run_checked)


class ArgLayout:
    """The packed argument block of one kernel: a ctypes Structure, its field offsets and
    a struct format that fills everything before the status block in one call."""

    def __init__(self, func: Function):
        fields, formats = [], {}
        for k, p in enumerate(func.params):
            t = p.type
            if isinstance(t, ArrayType):
                fields += [(f"p{k}", ctypes.c_void_p), (f"p{k}_shape", ctypes.c_int64 * t.ndim),
                           (f"p{k}_strides", ctypes.c_int64 * t.ndim)]
                formats.update({f"p{k}": _POINTER_FORMAT, f"p{k}_shape": "q",
                                f"p{k}_strides": "q"})
            else:
                ctype = ctypes.c_uint8 if t.scalar.kind == "b" else \
                    ctypes.c_float if t.scalar.name == "bfloat16" else t.scalar._type_
                fields.append((f"p{k}", ctype if t.is_scalar else ctype * t.length))
                formats[f"p{k}"] = _scalar_format(t.scalar)
        fields.append(("dims", ctypes.c_int64 * 4))
        formats["dims"] = "q"
        packed = len(fields)
        fields += [("flag", ctypes.c_int32), ("site", ctypes.c_int32), ("axis", ctypes.c_int32),
                   ("param", ctypes.c_int32), ("index", ctypes.c_int64)]
        self.struct = type(f"KernelArgs_{func.name}", (ctypes.Structure,), {"_fields_": fields})
        self.offsets = {name: getattr(self.struct, name).offset for name, _ in fields}
        self.size = ctypes.sizeof(self.struct)
        fmt, pos = "<", 0
        for name, ctype in fields[:packed]:
            pad = self.offsets[name] - pos
            fmt += f"{pad}x" if pad else ""
            is_array = issubclass(ctype, ctypes.Array)
            count = ctype._length_ if is_array else 1
            fmt += f"{count}{formats[name]}"
            pos = self.offsets[name] + ctypes.sizeof(ctype)
        self.packer = struct.Struct(fmt)
        self.status = struct.Struct("<iiiiq")
        self.status_offset = self.offsets["flag"]


@dataclass(eq=False)
class CompiledEntry:
    symbol: str
    address: int
    layout: ArgLayout
    cfunc: object
    arena: "_Arena | None" = None
    raw: object = None  # the entry without argument conversion (Runner.inline_entry)


# ---- freeing machine code -------------------------------------------------------------------
# MCJIT cannot unload one object file, only a whole engine. Object code therefore goes into
# arenas: engines of up to ARENA_SIZE entries each. An entry holds its arena; when the last
# entry of a full arena is garbage (its kernel, runners and launches are gone, or a notebook
# cell redefined the kernel), the engine is disposed and its code memory freed.

ARENA_SIZE = 16


class _Arena:
    def __init__(self):
        tm = _new_target_machine()  # the engine takes ownership of it
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        self.added = 0  # entries loaded into it
        self.live = 0   # of which still alive
        self.closed = False

    def release(self):
        with _lock:
            self.live -= 1
            self._close_if_done()

    def _close_if_done(self):
        if self.live == 0 and self.added >= ARENA_SIZE and not self.closed:
            self.closed = True
            stats["arenas_freed"] += 1
            self.engine.close()


_arena: list = [None]  # the arena taking new entries


# ---- target machine and engine ------------------------------------------------------------

def _new_target_machine(cpu=None, features=None):
    """The host's target machine (O3 code generation, JIT code model)."""
    if cpu is None:
        cpu, features = _host()[2], _host()[3]
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="default", codemodel="jitdefault", jit=True)


def _host():
    global _jit
    if _jit is None:
        with _lock:
            if _jit is None:
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                # Threads come in long runs: a second, narrower vector loop for the few left
                # over costs compile time (a tenth of a small kernel's) and buys nothing.
                llvm.set_option("kernlab", "-enable-epilogue-vectorization=0")
                llvm.add_symbol(INTERRUPT_SYMBOL, ctypes.addressof(_interrupt))
                _register_c_symbols()
                cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
                tm = _new_target_machine(cpu, features)
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
                engine.finalize_object()  # its first call sets up code generation: ~1 ms
                _jit = (tm, engine, cpu, features)
                _fingerprint()  # hashed here, on the preload thread, not at the first compile
    return _jit


# The C functions kernel code may call: libm for math builtins and for the intrinsics LLVM
# expands into calls (float and double spellings), libc for printf and the adjoint's stack.
_C_FUNCTIONS = ("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 "
                "exp10 expm1 log log2 log10 log1p pow fmod remainder cbrt hypot erf erfc lgamma "
                "tgamma round trunc floor ceil rint nearbyint fmin fmax sqrt fabs copysign ldexp "
                "frexp sincos").split()
_C_LIBRARY = "malloc free realloc calloc memset memcpy memmove printf fflush".split()


def _register_c_symbols():
    """Tell LLVM where these C functions are. Without it, finishing each loaded object
    searches every library of the process for them: about 1 ms, most of a warm load. A
    name missing here is still found, by that search."""
    process = ctypes.CDLL(None)
    for name in [f for n in _C_FUNCTIONS for f in (n, n + "f")] + _C_LIBRARY:
        try:
            llvm.add_symbol(name, ctypes.cast(getattr(process, name), ctypes.c_void_p).value)
        except AttributeError:  # not in this C library
            pass


def cache_key(func: Function, bounds_check: bool, verify_fp: bool = False) -> str:
    """The disk-cache key of a kernel variant: its IR, the options and the compiler."""
    tm, _, cpu, features = _host()
    return cache.key_for(*canonical_parts(func),
                         f"bounds_check={bounds_check} verify_fp={verify_fp}",
                         f"llvmlite {llvmlite.__version__}",
                         "llvm " + ".".join(map(str, llvm.llvm_version_info)),
                         cpu, features, KERNLAB_VERSION, BACKEND_VERSION, _fingerprint())


@functools.lru_cache(maxsize=None)
def _fingerprint() -> str:
    """A hash of the code that decides what a kernel compiles to (this backend and the
    builtins' lowerings), so editing either never loads stale machine code."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for path in sorted([*root.joinpath("backends", "llvm").glob("*.py"),
                        *root.joinpath("builtins").glob("*.py")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _symbol(func: Function, key: str) -> str:
    return f"kl_{re.sub(r'[^A-Za-z0-9_]', '_', func.name)}_{key[:16]}"


# ---- compiling ------------------------------------------------------------------------------

VECTORIZE_MAX_INSTRUCTIONS = 3000  # IR instructions in a kernel body the vectorisers take


def _body_size(func: Function) -> int:
    size = getattr(func, "_body_size", None)
    if size is None:
        size = func._body_size = sum(1 for _ in func.body.walk())
    return size


FAST_CODEGEN_MIN_INSTRUCTIONS = 12000  # IR instructions: a body this large gets O0 codegen
BLOCK_SPLIT_INSTRUCTIONS = 1000  # ... and its basic blocks are cut into pieces this long
_fast_codegen: list = []


def _emit_object(func: Function, module) -> bytes:
    """The object code of an optimised module. A huge body (thousands of statements, as a
    long kernel's adjoint) gets O0 code generation, and its straight-line blocks are cut
    into pieces first: LLVM selects instructions one basic block at a time, in time
    superlinear in the block (the loop body of a 4,000-line adjoint, 25,000 instructions
    in one block, took 3 s at O0, 0.3 s in pieces of 1,000), and after O2 the whole body
    of a loop-free kernel is one block."""
    if _body_size(func) < FAST_CODEGEN_MIN_INSTRUCTIONS:
        return _codegen_machine(func).emit_object(module)
    text = split_long_blocks(str(module), BLOCK_SPLIT_INSTRUCTIONS)
    split = llvm.parse_assembly(text, context=llvm.create_context())
    split.name = module.name
    return _codegen_machine(func).emit_object(split)


_LABEL = re.compile(r"([A-Za-z_.$][\w.$-]*):")  # a block label at the start of a line
_PLAIN_DEF = re.compile(r"  %[\w.$-]+ = (?!phi |landingpad |alloca )")  # a non-phi definition


def split_long_blocks(text: str, limit: int) -> str:
    """LLVM IR text in which each named basic block (not a function's entry block) longer
    than ``limit`` instructions is cut into a chain of blocks joined by unconditional
    branches; phi nodes that named the block as a predecessor now name its last piece.
    Cuts fall only before an instruction that defines a value and is no phi, landingpad or
    alloca, so every instruction (one per line in LLVM's text) stays whole, and what each
    piece computes dominates the pieces after it."""
    out: list = []
    lines = text.split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        out.append(line)
        k += 1
        if not line.startswith("define "):
            continue
        body, renames, label, count, cuts, entry = [], {}, None, 0, 0, True
        while k < len(lines) and lines[k] != "}":
            line = lines[k]
            k += 1
            if not line.startswith((" ", ";")) and line.strip():
                found = _LABEL.match(line)
                # the entry block (labelled or not) is never cut: its allocas must stay there
                entry = entry and not count
                label = found.group(1) if found and not entry else None
                count = 0
                body.append(line)
                continue
            if (label is not None and count >= limit and _PLAIN_DEF.match(line)):
                cuts += 1
                piece = f"kl.piece.{cuts}"
                body += [f"  br label %{piece}", f"{piece}:"]
                renames[label] = piece
                count = 0
            if line.startswith("  ") and not line.startswith("   "):
                count += 1
            body.append(line)
        if renames:
            def rename(found, renames=renames):
                return f", %{renames.get(found.group(1), found.group(1))} ]"
            body = [re.sub(r", %([A-Za-z_.$][\w.$-]*) \]", rename, b) if " = phi " in b
                    else b for b in body]
        out += body
    return "\n".join(out)


def _codegen_machine(func: Function):
    """The target machine that emits ``func``'s object code: O3 code generation, except for
    huge bodies (see _emit_object), whose instruction scheduling and register allocation
    at O3 take time superlinear in the body; their IR is still optimised at O2."""
    if _body_size(func) < FAST_CODEGEN_MIN_INSTRUCTIONS:
        return _host()[0]
    with _lock:
        if not _fast_codegen:
            _fast_codegen.append(llvm.Target.from_triple(llvm.get_process_triple())
                                 .create_target_machine(cpu=_host()[2], features=_host()[3],
                                                        opt=0, reloc="default",
                                                        codemodel="jitdefault", jit=True))
    return _fast_codegen[0]


def build_module(func: Function, bounds_check: bool, symbol: str, verify_fp: bool = False,
                 part: str = "general"):
    """Lower, verify and optimise (O2, host CPU) one entry of a kernel variant: an
    llvmlite.binding ModuleRef. (O3 adds nothing these kernels use, and its loop
    unswitching multiplies the code of adjoints with optional arrays.)"""
    text, layout = lowered_text(func, bounds_check, symbol, verify_fp, part)
    return optimised_module(func, text), layout


def lowered_text(func: Function, bounds_check: bool, symbol: str, verify_fp: bool = False,
                 part: str = "general") -> tuple:
    """(the LLVM IR text of one entry as lowered, its ArgLayout): what both the quick and
    the optimised compile of the entry start from (tiers.py)."""
    tm = _host()[0]
    layout = ArgLayout(func)
    module = lower_to_llvm(func, bounds_check, layout.offsets, symbol, verify_fp,
                           *_split_part(part))
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    return str(module), layout


def parse_checked(func: Function, text: str):
    """The lowered text parsed (in a context of its own: LLVM's global context keeps every
    type, constant and metadata node ever parsed into it, which would grow with each kernel
    compiled) and verified; a LoweringError when LLVM rejects it."""
    try:
        ref = llvm.parse_assembly(text, context=llvm.create_context())
        ref.verify()
        ref.name = func.name
    except RuntimeError as exc:
        raise LoweringError("internal error: LLVM rejected the code generated for this kernel",
                            loc=func.loc, kernel=func.name, details=str(exc),
                            stage=f"compiling kernel '{func.name}' for the CPU (LLVM)") from None
    return ref


def optimised_module(func: Function, text: str, tm=None, unlocked: bool = False):
    """The lowered text parsed, verified and optimised at O2 for the host CPU (``tm``: the
    target machine to tune for, by default the host's; a thread compiling beside others
    brings its own, as LLVM's target machines are not thread-safe, and runs the pipeline
    ``unlocked``)."""
    tm = tm or _host()[0]
    ref = parse_checked(func, text)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    # LLVM's vectorisers take time superlinear in the size of the loop body: a kernel of
    # thousands of statements (an adjoint doubles them) would take minutes to compile, for
    # little gain, since such bodies are bound by registers rather than lanes
    vectorize = _body_size(func) <= VECTORIZE_MAX_INSTRUCTIONS
    pto.loop_vectorization = pto.slp_vectorization = vectorize
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        if unlocked:
            _unlocked("LLVMPY_RunNewModulePassManager")(mpm, ref, pb)
        else:
            mpm.run(ref, pb)
    finally:
        _free_pass_manager(mpm)
    return ref


def _unlocked(name: str):
    """llvmlite's C function ``name`` without the global lock llvmlite takes around every
    call into LLVM. Only for a thread working on a module of its own context with a target
    machine and pass builder of its own (tiers.py), which LLVM allows to run beside other
    threads: under the lock, a 40 ms optimisation on the helper thread would hold up every
    quick compile and object load of the calling thread. (``_cfn`` is llvmlite 0.50's: a
    llvmlite without it gets the locked call, slower beside other threads but right.)"""
    wrapper = getattr(llvm.ffi.lib, name)
    return getattr(wrapper, "_cfn", wrapper)


def _emit_unlocked(tm, module) -> bytes:
    """tm.emit_object(module) without llvmlite's global lock (see _unlocked)."""
    with llvm.ffi.OutputString() as err:
        buf = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, module, 1, err)
        if not buf:
            raise RuntimeError(str(err))
    try:
        return ctypes.string_at(llvm.ffi.lib.LLVMPY_GetBufferStart(buf),
                                llvm.ffi.lib.LLVMPY_GetBufferSize(buf))
    finally:
        llvm.ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)


def _free_pass_manager(mpm) -> None:
    """Free a module pass manager now. llvmlite (0.50) never does: in its ModulePassManager
    class, ObjectRef's empty ``_dispose`` comes before NewPassManager's in the method
    order, so closing or collecting one frees nothing, and each compile kept the whole O2
    pipeline (30 KB) and what its passes hold after a run (40 KB). Dispose-and-detach frees
    it exactly once, and stays right where llvmlite fixes its class (close() is then a no-op
    on the detached object)."""
    from llvmlite.binding.newpassmanagers import NewPassManager
    NewPassManager._dispose(mpm)
    mpm.detach()


def _parts(func: Function) -> tuple:
    return PARTS if has_fast_path(func) else ("general",)


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


def llvm_source(func: Function, bounds_check: bool, verify_fp: bool = False,
                optimized: bool = False) -> str:
    """The LLVM IR of a kernel variant as text, one module per entry (fast, general): by
    default as lowered, each run of instructions under a ``; file:line`` comment naming the
    user's line (and, for an adjoint, ``forward replay`` / ``reverse`` section comments);
    with optimized=True, after the optimisation pipeline (where vectorisation shows, but the
    comments are gone)."""
    key = cache_key(func, bounds_check, verify_fp)
    checks = "with bounds checks" if bounds_check else "without bounds checks"
    kind = "adjoint kernel" if func.is_adjoint else "kernel"
    out = []
    for part in _parts(func):
        symbol = _symbol(func, _part_key(key, part))
        what = {"fast": "fast entry (contiguous arrays, thread-id and constant indices in "
                        "range" + (", every gradient array present)" if optional_arrays(func)
                                   else ")"),
                "general": "general entry (any strides, every access checked)"}[part]
        if optimized:
            text = str(build_module(func, bounds_check, symbol, verify_fp, part)[0])
            out.append(f"; {kind} '{func.name}' {checks}: {what}, optimised for "
                       f"{_host()[2]}\n{text}")
        else:
            module = lower_to_llvm(func, bounds_check, ArgLayout(func).offsets, symbol,
                                   verify_fp, *_split_part(part))
            out.append(f"; {kind} '{func.name}' {checks}: {what}, as lowered (before "
                       f"optimisation)\n{module}")
    return "\n".join(out)


def compile_kernel(func: Function, bounds_check: bool, verify_fp: bool = False) -> "Runner":
    """A runner for ``func``: its first entry from the in-process memo, the disk cache or a
    fresh compile; the general entry of a kernel with a fast one only when a launch needs
    it. With verify_fp, a float store that writes a NaN or Inf raises KernelFPError."""
    key = cache_key(func, bounds_check, verify_fp)
    parts = _parts(func)
    private = private_candidates(func, verify_fp) if len(parts) > 1 else []
    eager = _eager_private(func, private)
    first = _variant(func, bounds_check, verify_fp, key,
                     fast_part((), eager) if len(parts) > 1 else parts[0])
    general = None if len(parts) == 1 else \
        functools.partial(_variant, func, bounds_check, verify_fp, key, "general")
    fast = None if len(parts) == 1 else \
        lambda absent, private: _variant(func, bounds_check, verify_fp, key,
                                         fast_part(absent, private))
    return Runner(func, first, general, fast, private, eager)


def _eager_private(func: Function, private) -> frozenset:
    """The privatised arrays of the fast entry compiled up front (the others compile when
    a launch needs them): a kernel's atomics usually go into a loss, a counter or a few
    bins, so all of them; an adjoint's mostly into gradients of arrays read at gathered
    indices, which are large, so none."""
    return frozenset() if func.is_adjoint else frozenset(private)


def entry_keys(func: Function, bounds_check: bool, verify_fp: bool = False) -> dict:
    """The disk-cache key of each entry of a kernel variant, by part ("fast": the one
    compiled up front)."""
    key = cache_key(func, bounds_check, verify_fp)
    eager = _eager_private(func, private_candidates(func, verify_fp))
    return {part: _part_key(key, fast_part((), eager) if part == "fast" else part)
            for part in _parts(func)}


def _part_key(key: str, part: str) -> str:
    return key if part == "general" else cache.key_for(key, part)


def _variant(func, bounds_check, verify_fp, key, part) -> CompiledEntry:
    key = _part_key(key, part)
    entry = _memo.get(key)
    if entry is None:
        with _lock:
            entry = _memo.get(key)
            if entry is None:
                entry = _memo[key] = _load_or_compile(func, bounds_check, key, verify_fp, part)
                _recent.append(entry)  # a runner made and dropped at once is not reloaded
    return entry


def _load_or_compile(func, bounds_check, key, verify_fp=False, part="general") -> CompiledEntry:
    symbol = _symbol(func, key)
    t0 = time.perf_counter()
    obj = cache.load(key) if config.cache_dir else None
    address, arena = _add_object(obj, symbol) if obj is not None else (0, None)
    if address:
        stats["loaded"] += 1
        stats["load_s"] += time.perf_counter() - t0
        _say(f"loaded kernel '{func.name}' ({part} entry) from the cache ({_ms(t0)})")
        return _entry(func, symbol, address, ArgLayout(func), arena)
    text, layout = lowered_text(func, bounds_check, symbol, verify_fp, part)
    if _tiers.wanted(func):  # quick code now, the optimised code from a helper thread
        entry = _tiers.compile_quick(func, text, symbol, layout, key)
        how = "quick code; optimising on a helper thread"
    else:
        entry = optimised_entry(func, text, symbol, layout, key)
        how = "optimised"
    stats["compiled"] += 1
    stats["compile_s"] += time.perf_counter() - t0
    _say(f"compiled kernel '{func.name}' ({part} entry, {how}, {_ms(t0)})")
    return entry


def optimised_object(func, text: str, tm=None) -> bytes:
    """The object code of the lowered entry ``text``, optimised (see optimised_entry)."""
    if tm is None:
        return _emit_object(func, optimised_module(func, text))
    return _emit_unlocked(tm, optimised_module(func, text, tm, unlocked=True))


def optimised_entry(func, text: str, symbol: str, layout, key: str, tm=None) -> CompiledEntry:
    """Optimise and compile the lowered entry ``text``, load it and keep its object in the
    disk cache (``tm``: the target machine of a helper thread, which then optimises and
    emits code without llvmlite's global lock: see _unlocked)."""
    obj = optimised_object(func, text, tm)
    address, arena = _add_object(obj, symbol)
    if not address:
        raise LoweringError("internal error: the compiled kernel has no entry point",
                            loc=func.loc, kernel=func.name, details=f"symbol {symbol}")
    cache.store(key, obj)
    return _entry(func, symbol, address, layout, arena)


def _entry(func, symbol, address, layout, arena) -> CompiledEntry:
    entry = CompiledEntry(symbol, address, layout, _ENTRY_TYPE(address), arena)
    weakref.finalize(entry, arena.release)  # the last entry of an arena frees its code
    return entry


def _add_object(obj: bytes, symbol: str) -> int:
    """Load object code into the current arena: (the entry's address, the arena), or
    (0, None) when the object is not one of ours (damaged cache entries are then
    recompiled)."""
    magic = next((m for p, m in _OBJECT_MAGIC.items() if sys.platform.startswith(p)), b"")
    if not obj.startswith(magic) or symbol.encode() not in obj:
        return 0, None
    ref = llvm.ObjectFileRef.from_data(obj)
    if not ref:  # LLVM could not parse it
        return 0, None
    _host()
    with _lock:
        arena = _arena[0]
        if arena is None or arena.added >= ARENA_SIZE:
            arena = _arena[0] = _Arena()
        try:
            arena.engine.add_object_file(ref)
            arena.engine.finalize_object()
            address = arena.engine.get_function_address(symbol)
        except RuntimeError:
            return 0, None
        finally:
            arena.added += 1  # counted even when it failed: the object is in the engine
        if not address:
            return 0, None
        arena.live += 1
        return address, arena


def _say(text):
    if config.verbose:
        print(f"kernlab: {text}", file=sys.stderr)


def _ms(t0) -> str:
    return f"{(time.perf_counter() - t0) * 1e3:.1f} ms"


# ---- launching ------------------------------------------------------------------------------

_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _workers(n: int) -> ThreadPoolExecutor:
    """The persistent pool for launches on ``n`` threads (a loop-free kernel's caller runs
    one share itself; an interruptible kernel's shares all run here)."""
    global _pool, _pool_size
    pool = _pool
    if pool is None or _pool_size != n:
        with _lock:
            if _pool is None or _pool_size != n:
                old, _pool, _pool_size = _pool, ThreadPoolExecutor(max(n, 1), "kernlab"), n
                if old is not None:
                    old.shutdown(wait=False)
            pool = _pool
    return pool


def _forget_threads_after_fork():
    """A forked child has none of its parent's worker threads, and maybe a held lock."""
    global _pool, _pool_size, _lock
    _pool, _pool_size, _lock = None, 0, threading.RLock()
    _interrupt.value = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads_after_fork)


def _run_interruptibly(fn, buf, bounds):
    """Run the slices [bounds[k], bounds[k+1]) on pool threads while this thread (the main
    one) waits where a KeyboardInterrupt can reach it. On one: raise the interrupt flag,
    wait until every worker has left the kernel, lower the flag and re-raise."""
    global _interrupts
    futures = []
    try:
        pool = _workers(config.num_threads)
        for k in range(len(bounds) - 1):
            futures.append(pool.submit(fn, buf, bounds[k], bounds[k + 1]))
        for f in futures:
            f.result()
    except KeyboardInterrupt:
        _interrupts += 1
        _interrupt.value = 1
        try:
            _wait_all(futures)
        finally:
            _interrupt.value = 0
        raise


def _wait_all(futures):
    """Wait for every future, even through further KeyboardInterrupts: a worker must not be
    left writing into arrays the caller believes are settled."""
    while True:
        try:
            wait(futures)
            return
        except KeyboardInterrupt:
            continue


class Runner:
    """Runs one compiled kernel variant: ``runner.launch(dims, args)``."""

    def __init__(self, func: Function, entry: CompiledEntry, general=None, fast=None,
                 private=(), eager=frozenset()):
        self.func = func
        self.entry = entry
        self.layout = entry.layout
        self._fn = entry.cfunc
        self._load_general = general  # loads the general entry, when entry is the fast one
        self._general_fn = None
        self._load_fast = fast  # (absent, privatised arrays) -> the fast entry for them
        self._plan = [_param_plan(p.type) for p in func.params]
        # where each optional array's data pointer sits in the packed values: the fast
        # entry is picked by which of them are absent (entry.optional_arrays)
        first, at = [], 0
        for p in func.params:
            first.append(at)
            at += 1 + 2 * p.type.ndim if p.type.is_array else getattr(p.type, "length", 1)
        self._optional = [(k, first[k]) for k in optional_arrays(func)] if fast else []
        # the arrays whose atomics may be privatised: (index, where its values start, ndim,
        # the most elements that can be)
        self._private = [(k, first[k], func.params[k].type.ndim,
                          PRIVATE_BYTES // func.params[k].type.dtype.nbytes) for k in private]
        self._spans = [(first[k], p.type.ndim, p.type.dtype.nbytes)
                       for k, p in enumerate(func.params) if p.type.is_array]
        self._fast_fns = {(frozenset(), frozenset(eager)): self._fn}
        self._fast_entries = {}  # which -> its CompiledEntry: held while this runner lives
        self._ndim = func.ndim
        self._grids: dict = {}  # launch dims -> the three dims the kernel reads
        self._block = ctypes.c_char * self.layout.size  # a zeroed one per launch
        self.interruptible = is_interruptible(func)
        self._chunk = 1 << 20  # threads per chunk of a chunked launch (see _run_in_chunks)

    def launch(self, dims: tuple, args: list) -> None:
        if len(args) != len(self._plan):
            raise LaunchError(f"kernel '{self.func.name}' takes {len(self._plan)} arguments, "
                              f"got {len(args)}", kernel=self.func.name)
        total = math.prod(dims)
        if total <= 0:
            return
        if total > MAX_THREADS:
            raise LaunchError(f"a launch of {total} threads is too large (at most {MAX_THREADS})",
                              kernel=self.func.name)
        values = []
        for pack, arg in zip(self._plan, args):
            pack(arg, values)
        grid = self._grids.get(dims)
        if grid is None:
            if len(self._grids) > 64:
                self._grids.clear()
            grid = self._grids[dims] = _grid(dims, self._ndim)
        values += grid
        layout = self.layout
        buf = self._block()
        layout.packer.pack_into(buf, 0, *values)
        threads = config.num_threads
        least = PARALLEL_THRESHOLD_LOOPS if self.interruptible else PARALLEL_THRESHOLD
        parts = 1 if total < least or threads <= 1 else min(threads, total // (least // 4))
        bounds = [total * k // parts for k in range(parts + 1)]
        fn = self._fn
        if self._optional or self._private:
            which = (frozenset(k for k, at in self._optional if not values[at]),
                     self._privatised(values))
            fn = self._fast_fns.get(which)
            if fn is None:  # the entry is held, as the general one: its code stays loaded
                entry = self._fast_entries[which] = self._load_fast(*which)
                fn = self._fast_fns[which] = entry.cfunc
        if total >= least and _tiers.pending:  # a large launch runs optimised code only
            _tiers.wait()
        self._run(fn, buf, bounds)
        if buf[layout.status_offset] != b"\0":  # the flag's low byte: some status is set
            self.settle(buf, bounds, args)

    def settle(self, buf, bounds, args) -> None:
        """After a launch whose status block is set: run the general entry where the fast
        one declined (and did nothing), then raise the error the status records, if any."""
        layout = self.layout
        flag = layout.status.unpack_from(buf, layout.status_offset)[0]
        if flag == STATUS_GENERAL:
            buf[layout.status_offset] = b"\0"
            if self._general_fn is None:  # the entry is held: its code stays loaded
                self._general = self._load_general()
                self._general_fn = self._general.cfunc
            self._run(self._general_fn, buf, bounds)
        if buf[layout.status_offset] != b"\0":
            self._raise_failure(buf, args)

    def inline_entry(self):
        """The entry as a ctypes function without argument conversion (call it with the
        argument block and two ctypes.c_int64: first and end thread), for launches the
        caller runs in one call on its own thread; None where a launch needs more than
        that: optional arrays and privatised atomics pick an entry per launch, and a kernel
        with loops runs off the main thread (see _run_checked). A ctypes call that converts
        its arguments costs about a microsecond; this one a quarter of that."""
        if self._optional or self._private or self.interruptible:
            return None
        raw = self.entry.raw
        if raw is None:
            raw = self.entry.raw = ctypes.CFUNCTYPE(None)(self.entry.address)
            raw.argtypes = None
        return raw

    def _privatised(self, values) -> frozenset:
        """The privatisable arrays of this launch: there, small, and sharing no memory with
        another array argument (a thread reading it would miss its own private updates)."""
        out = []
        for k, at, nd, most in self._private:
            if values[at] and math.prod(values[at + 1:at + 1 + nd]) <= most:
                lo, hi = _span(values, at, nd, self.func.params[k].type.dtype.nbytes)
                if not any(lo < hi2 and lo2 < hi for lo2, hi2 in
                           (_span(values, at2, nd2, size2) for at2, nd2, size2 in self._spans
                            if at2 != at and values[at2])):
                    out.append(k)
        return frozenset(out)

    def _run(self, fn, buf, bounds):
        if self.interruptible:
            self._run_checked(fn, buf, bounds)
        elif bounds[-1] - bounds[0] >= CHUNKED_THRESHOLD \
                and threading.current_thread() is threading.main_thread():
            self._run_in_chunks(fn, buf, bounds[0], bounds[-1])
        elif len(bounds) == 2:
            fn(buf, bounds[0], bounds[1])
        else:
            self._parallel(fn, buf, bounds)

    def _run_checked(self, fn, buf, bounds):
        """A kernel whose loops check the interrupt flag: off the main thread when called
        from it; elsewhere inline, noticing an interrupt raised meanwhile by the main thread
        (which would have cut this launch short too)."""
        if threading.current_thread() is threading.main_thread():
            _run_interruptibly(fn, buf, bounds)
            return
        seen = _interrupts
        if len(bounds) == 2:
            fn(buf, bounds[0], bounds[1])
        else:
            self._parallel(fn, buf, bounds)
        if _interrupts != seen:
            raise KeyboardInterrupt(f"kernel '{self.func.name}' was interrupted")

    def _run_in_chunks(self, fn, buf, start, end):
        """A loop-free launch of [start, end) in consecutive chunks, each split over the
        pool like a whole launch, sized (doubling or halving) to take about CHUNK_SECONDS:
        Python delivers a KeyboardInterrupt between two chunks. A chunk that sets the status
        (an error, or the fast entry declining) ends the run: the caller reads it."""
        status = self.layout.status_offset
        step = self._chunk  # learnt by the previous launches
        threads = max(1, config.num_threads)
        while start < end and buf[status] == b"\0":
            stop = min(end, start + step)
            n = stop - start
            parts = 1 if threads <= 1 or n < PARALLEL_THRESHOLD else \
                min(threads, n // (PARALLEL_THRESHOLD // 4))
            began = time.perf_counter()
            if parts == 1:
                fn(buf, start, stop)
            else:
                self._parallel(fn, buf, [start + n * k // parts for k in range(parts + 1)])
            took = time.perf_counter() - began
            if n == step:  # a whole chunk: resize towards CHUNK_SECONDS
                if took < CHUNK_SECONDS / 4 and step < (1 << 28):
                    step *= 4
                elif took < CHUNK_SECONDS / 2 and step < (1 << 28):
                    step *= 2
                elif took > CHUNK_SECONDS * 2 and step > 4096:
                    step //= 2
                self._chunk = step
            start = stop

    def _parallel(self, fn, buf, bounds):
        pool = _workers(config.num_threads)
        futures = [pool.submit(fn, buf, bounds[k], bounds[k + 1])
                   for k in range(1, len(bounds) - 1)]
        try:
            fn(buf, bounds[0], bounds[1])
            for f in futures:
                f.result()
        except KeyboardInterrupt:  # no worker may be left writing after the caller returns
            _wait_all(futures)
            raise

    def _raise_failure(self, buf, args):
        """The error the status block records: an index out of bounds, or (verify_fp) a NaN
        or Inf stored."""
        code, site, axis, param, index = self.layout.status.unpack_from(
            buf, self.layout.status_offset)
        raise reported_error(self.func, code == STATUS_NOT_FINITE, site, axis, param, index,
                             args)


_described: dict = {}  # id(ndarray) -> (weak reference, ndim, (ptr, *shape, *strides))


def _describe(data, nd: int) -> tuple:
    """(data address, shape..., byte strides...) of a NumPy array's first nd axes, kept per
    array object: ``ndarray.ctypes.data`` alone costs a third of a small launch."""
    key = id(data)
    hit = _described.get(key)
    if hit is not None and hit[0]() is data and hit[1] == nd:
        return hit[2]
    values = (data.ctypes.data if data.size else 0, *data.shape[:nd], *data.strides[:nd])
    _described[key] = (weakref.ref(data, lambda _, key=key: _described.pop(key, None)), nd,
                       values)
    return values


def _span(values, at, nd, itemsize) -> tuple:
    """[lo, hi) bytes spanned by the array whose packed values start at ``at``."""
    ptr, shape, strides = values[at], values[at + 1:at + 1 + nd], values[at + 1 + nd:at + 1 + 2 * nd]
    if not all(shape):
        return ptr, ptr
    reach = [(s - 1) * d for s, d in zip(shape, strides)]
    return ptr + sum(r for r in reach if r < 0), ptr + sum(r for r in reach if r > 0) + itemsize


def _grid(dims, ndim) -> list:
    """The launch dims as the kernel reads them (padded with 1 to four entries): extra
    leading dims fold into the first one, missing ones are 1."""
    dims = [int(d) for d in dims]
    if ndim > 1 and len(dims) > ndim:
        dims = [math.prod(dims[: len(dims) - ndim + 1])] + dims[len(dims) - ndim + 1:]
    return (dims + [1, 1, 1, 1])[:4]


def _param_plan(t):
    """A function that appends one argument's values to the packing list."""
    if t.is_array:
        nd, size = t.ndim, t.dtype.nbytes
        absent = [0] + [0] * nd + [size] * nd

        def pack_array(a, out):
            if a is None:
                out += absent
                return
            out += _describe(a._data, nd)
        return pack_array
    s = t.scalar
    convert = float if s.kind == "f" else (lambda v: 1 if v else 0) if s.kind == "b" else int
    if t.is_scalar:
        return lambda v, out: out.append(convert(v))
    n, np_dtype = t.length, s.np

    def pack_vector(v, out):
        import numpy as np
        flat = np.asarray(v, np_dtype).reshape(-1)
        if flat.size != n:
            raise LaunchError(f"expected {n} components for a {t}, got {flat.size}")
        out += flat.astype(np.float32).tolist() if s.name == "bfloat16" else flat.tolist()
    return pack_vector


from . import tiers as _tiers  # noqa: E402 — it uses this module's functions

__all__ = ["compile_kernel", "llvm_source", "Runner", "cache_key", "entry_keys", "stats"]
