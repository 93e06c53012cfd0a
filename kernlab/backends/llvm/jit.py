"""The compile side of the CPU backend, the part that needs llvmlite: the host's target
machine, lowering and optimising a kernel variant's entries (lower.py, entry.py), emitting
their object code, and LLVM's own loader (MCJIT), which places an object when the loader
of objload.py cannot (another platform, or a relocation it does not handle).

variants.py decides what to compile and load, and imports this module only when it must
compile something (or fall back to MCJIT): a process whose kernels all come from the disk
cache never does.
"""
from __future__ import annotations

import ctypes
import re
import sys

from .. import _open_llvmlite_library

# llvmlite's library mapped without the GIL, inside this module's import: a thread that
# needs this module meanwhile waits for the import rather than importing llvmlite itself
_open_llvmlite_library()

import llvmlite  # noqa: E402
import llvmlite.binding as llvm  # noqa: E402

from ...ir.nodes import Function
from ...ir.printer import canonical_ir, print_function  # noqa: F401
from ...runtime import cache
from . import objload, variants
from .abi import INTERRUPT_SYMBOL
from .entry import (PARTS, PRIVATE_BYTES, has_fast_path, lower_to_llvm, optional_arrays,
                    private_candidates)
from .lower import LoweringError, is_interruptible
from .runner import _interrupt
from .variants import _split_part, cache_key, fast_part, stats  # noqa: F401

_OBJECT_MAGIC = {"linux": b"\x7fELF", "darwin": b"\xcf\xfa\xed\xfe", "win32": b"\x64\x86"}
_lock = variants._lock  # one lock for the memo, the engines and LLVM's set-up (tiers.py)
_jit = None  # (target machine, engine, host CPU name, its features), made on first use

# ---- LLVM's loader and freeing its machine code -------------------------------------------
# Used where objload.py cannot place an object (variants._place). MCJIT cannot unload one
# object file, only a whole engine. Object code therefore goes into
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
                variants.record_host(host_values())  # a warm start reads it (variants.py)
    return _jit


def host_values() -> tuple:
    """What a kernel's machine code depends on besides its IR and options: the llvmlite and
    LLVM versions, the host CPU's name and its features."""
    _, _, cpu, features = _host()
    return (f"llvmlite {llvmlite.__version__}",
            "llvm " + ".".join(map(str, llvm.llvm_version_info)), cpu, features)


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


# ---- compiling ------------------------------------------------------------------------------

VECTORIZE_MAX_INSTRUCTIONS = 3000  # IR instructions in a kernel body the vectorisers take


def _body_size(func: Function) -> int:
    size = getattr(func, "_body_size", None)
    if size is None:
        size = func._body_size = sum(1 for _ in func.body.walk())
    return size


FAST_CODEGEN_MIN_INSTRUCTIONS = 12000  # IR instructions: a body this large is huge (below)
BLOCK_SPLIT_INSTRUCTIONS = 1000  # ... and its basic blocks are cut into pieces this long
_fast_codegen: list = []


def _huge(func: Function) -> bool:
    return _body_size(func) >= FAST_CODEGEN_MIN_INSTRUCTIONS


def fast_codegen_text(text: str) -> str:
    """The lowered text of a huge body (thousands of statements, as a long kernel's adjoint)
    made ready for the O0 code generation it gets (_codegen_machine), before it is parsed:

    - its straight-line blocks are cut into pieces of BLOCK_SPLIT_INSTRUCTIONS: LLVM selects
      instructions one basic block at a time, in time superlinear in the block (the loop
      body of a 4,000-line adjoint, 25,000 instructions in one block, took 3 s at O0, 0.3 s
      in pieces of 1,000). Cut here, in the lowered text, rather than after optimisation,
      which cost printing and parsing the module a second time (0.12 s for that adjoint);
      so the short pipeline must not merge the pieces back (no CFG simplification) nor sink
      code down the chain of pieces (no instruction combining: see _short_pipeline);
    - calls of the math intrinsics that LLVM lowers to a call of the C function of the same
      name (llvm.sin.f32 to sinf, llvm.log.f64 to log, ...) call that function directly:
      the same machine code, but LLVM's fast instruction selector handles a plain call and
      hands each intrinsic call to its slow selector instead (half the code generation time
      of that adjoint, a third of whose lines call sin)."""
    declared = _declared(text)
    for name, width in _LIBM_INTRINSICS:
        c_name = name + ("f" if width == "32" else "")
        if f"llvm.{name}.f{width}" in declared and c_name not in declared:
            text = text.replace(f'@"llvm.{name}.f{width}"(', f'@"{c_name}"(')
    return split_long_blocks(text, BLOCK_SPLIT_INSTRUCTIONS)


_LIBM_INTRINSICS = [(name, width) for name in "sin cos tan exp exp2 log log2 log10 pow".split()
                    for width in ("32", "64")]
_DECLARED = re.compile(r'@"?([^"(]+)"?\(')  # the function a declaration names


def _declared(text: str) -> set:
    """The functions the module ``text`` declares (its declare lines are found with str.find,
    at C speed: a huge body's text is megabytes)."""
    names = set()
    at = 0 if text.startswith("declare ") else text.find("\ndeclare ") + 1 or -1
    while at >= 0:
        end = text.find("\n", at)
        names.update(_DECLARED.findall(text, at, len(text) if end < 0 else end))
        at = text.find("\ndeclare ", at) + 1 or -1
    return names


_NAME = r'(?:"[^"]*"|[-\w.$]+)'  # a local name in LLVM's text, quoted or plain
_LABEL = re.compile(rf"({_NAME}):")  # a block label at the start of a line
# a definition before which a block may be cut (not one that must open its block)
_PLAIN_DEF = re.compile(rf"  %{_NAME} = (?!phi |landingpad |catchpad |cleanuppad |alloca )")
_PHI_BLOCK = re.compile(rf", %({_NAME}) ?\]")  # the block of a phi's incoming value


def split_long_blocks(text: str, limit: int) -> str:
    """LLVM IR text in which each named basic block (not a function's entry block) longer
    than ``limit`` lines is cut into a chain of blocks joined by unconditional branches;
    phi nodes that named the block as a predecessor now name its last piece. Cuts fall
    only before an instruction that defines a value and is no phi, landingpad or alloca,
    so every instruction (one per line in LLVM's text) stays whole, and what each piece
    computes dominates the pieces after it. Takes LLVM's own printing of a module and
    kernlab's lowered text (textir.py: names quoted, ``{`` on a line of its own, ``  ;``
    comment lines, counted with the instructions: a piece's length only bounds the
    instruction selector's work). Only the lines that open a block are looked at one by
    one; a long block is cut by index (a 4,000-line kernel's adjoint is 73,000 lines)."""
    lines = text.split("\n")
    out: list = []
    done, cuts, function, started, previous = 0, 0, None, False, 0
    for n, k in enumerate(heads := [k for k, line in enumerate(lines)
                                    if line and line[0] not in " ;"]):
        line = lines[k]
        if line.startswith("define "):
            out += lines[done:k + 1]
            done, function, started, previous, renames = k + 1, len(out), False, k, {}
            continue
        if function is None:
            continue
        if line == "}":
            if renames:  # the phis that named a cut block as a predecessor
                out += lines[done:k]
                done = k
                out[function:] = [_phis_renamed("\n".join(out[function:]), renames)]
            function = None
            continue
        # the entry block (labelled or not) is never cut: its allocas must stay there
        started = started or any(lines[j].startswith("  ") for j in range(previous + 1, k))
        previous = k
        found = _LABEL.match(line)
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        if not started or found is None or end - k - 1 <= limit:
            continue
        label, at = _unquoted(found.group(1)), k + 1 + limit
        while at < end:
            if _PLAIN_DEF.match(lines[at]):
                cuts += 1
                piece = f"kl.piece.{cuts}"
                out += lines[done:at]
                out += [f"  br label %{piece}", f"{piece}:"]
                done, renames[label] = at, piece
                at += limit
            else:
                at += 1
    out += lines[done:]
    return "\n".join(out)


def _phis_renamed(body: str, renames: dict) -> str:
    """``body`` with the predecessor blocks its phis name renamed (found with str.find: a
    regular expression over each line of a huge body took longer than the cutting)."""
    def rename(found):
        name = _unquoted(found.group(1))
        return f", %{renames[name]} ]" if name in renames else found.group(0)
    parts, at = [], 0
    while (hit := body.find(" = phi ", at)) >= 0:
        start = body.rfind("\n", 0, hit) + 1
        stop = body.find("\n", hit)
        stop = len(body) if stop < 0 else stop
        parts += [body[at:start], _PHI_BLOCK.sub(rename, body[start:stop])]
        at = stop
    parts.append(body[at:])
    return "".join(parts)


def _unquoted(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _codegen_machine(func: Function):
    """The target machine that emits ``func``'s object code: O3 code generation, except for
    huge bodies, whose instruction scheduling and register allocation at O3 take time
    superlinear in the body (their IR is cut by fast_codegen_text and optimised by
    _short_pipeline): O0, with the small code model where kernlab's loader places the
    object (x86-64 Linux), as LLVM's fast instruction selector handles calls only there
    (under the JIT's default large code model each call went to the slow selector). The
    loader reaches what a 32-bit call or address cannot (libm, the interrupt flag) through
    its stubs and GOT slots: position-independent code, so that data outside the object is
    read through the GOT."""
    if not _huge(func):
        return _host()[0]
    if _fast_codegen:  # (no lock: a compile's helper thread asks while the caller holds it)
        return _fast_codegen[0]
    with _lock:
        if not _fast_codegen:
            small = objload.supported()
            _fast_codegen.append(llvm.Target.from_triple(llvm.get_process_triple())
                                 .create_target_machine(cpu=_host()[2], features=_host()[3],
                                                        opt=0, reloc="pic" if small
                                                        else "default",
                                                        codemodel="small" if small
                                                        else "jitdefault", jit=True))
    return _fast_codegen[0]


def build_module(func: Function, bounds_check: bool, symbol: str, verify_fp: bool = False,
                 part: str = "general"):
    """Lower, verify and optimise (O2, host CPU; a huge body: _short_pipeline) one entry
    of a kernel variant: an llvmlite.binding ModuleRef. (O3 adds nothing these kernels
    use, and its loop unswitching multiplies the code of adjoints with optional arrays.)"""
    text, layout = lowered_text(func, bounds_check, symbol, verify_fp, part)
    return optimised_module(func, text), layout


def lowered_text(func: Function, bounds_check: bool, symbol: str, verify_fp: bool = False,
                 part: str = "general") -> tuple:
    """(the LLVM IR text of one entry as lowered, its ArgLayout): what both the quick and
    the optimised compile of the entry start from (tiers.py)."""
    tm = _host()[0]
    layout = variants.arg_layout(func)
    module = lower_to_llvm(func, bounds_check, layout.offsets, symbol, verify_fp,
                           *_split_part(part))
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    text = str(module)
    module.release()
    return text, layout


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
    ref = parse_checked(func, fast_codegen_text(text) if _huge(func) else text)
    if _body_size(func) >= SHORT_PIPELINE_MIN_INSTRUCTIONS:
        _short_pipeline(ref, tm, unlocked)
        return ref
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    # LLVM's vectorisers take time superlinear in the size of the loop body: a kernel of
    # thousands of statements (an adjoint doubles them) would take minutes to compile, for
    # little gain, since such bodies are bound by registers rather than lanes
    vectorize = _body_size(func) <= VECTORIZE_MAX_INSTRUCTIONS
    pto.loop_vectorization = pto.slp_vectorization = vectorize
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    _run_passes(pb.getModulePassManager(), ref, pb, unlocked)
    return ref


def _run_passes(mpm, ref, pb, unlocked: bool) -> None:
    """Run the pass manager ``mpm`` over ``ref`` (without llvmlite's lock when
    ``unlocked``: see _unlocked), then free it."""
    try:
        if unlocked:
            _unlocked("LLVMPY_RunNewModulePassManager")(mpm, ref, pb)
        else:
            mpm.run(ref, pb)
    finally:
        _free_pass_manager(mpm)


SHORT_PIPELINE_MIN_INSTRUCTIONS = FAST_CODEGEN_MIN_INSTRUCTIONS  # IR instructions: a body
# this large is optimised by _short_pipeline rather than O2
SHORT_PIPELINE = ("sroa",)


def _short_pipeline(ref, tm, unlocked: bool = False) -> None:
    """Optimise a huge body (thousands of statements, as a long kernel's adjoint) with SROA
    alone: the locals' stack slots become registers, which is what O0 code generation of
    straight-line code needs. O2's fifty-odd passes took ten times as long on a 4,000-line
    adjoint (2 s against 0.2 s) for no measurable speed of its code, which is bound by its
    arithmetic and libm calls. Instruction combining and CFG simplification, run here
    before, are left out since the body's blocks are cut before parsing (fast_codegen_text):
    CFG simplification would merge the pieces back, and instruction combining sinks values
    into the unique successor that uses them, down the whole chain of pieces (1 s instead
    of 0.07 s on that adjoint). Without them, that adjoint and kernel run 0-5% slower
    (CPU time of a 30,000-thread launch; a 1,800-line vec3 kernel: no difference). SROA
    keeps IEEE semantics (no fast-math flags are set): the results are bit-identical to
    O2's."""
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = llvm.create_new_module_pass_manager()
    for name in SHORT_PIPELINE:
        getattr(mpm, f"add_{name}_pass")()
    _run_passes(mpm, ref, pb, unlocked)


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


def variant_plan(func: Function, verify_fp: bool) -> dict:
    """What the code generator decides about a kernel variant that its runner must know
    (variants.plan_of keeps it in the disk cache, so a warm start need not ask): its parts
    ("fast" and "general", or "general" alone for a kernel that touches no array), the
    optional arrays the fast entries are specialised to, the arrays whose atomics may be
    privatised with the most elements each can have (entry.PRIVATE_BYTES), which of them the
    fast entry compiled up front privatises, and whether its loops check the interrupt
    flag. Eagerly privatised: a kernel's atomics usually go into a loss, a counter or a few
    bins, so all of them; an adjoint's mostly into gradients of arrays read at gathered
    indices, which are large, so none."""
    parts = _parts(func)
    private = sorted(private_candidates(func, verify_fp)) if len(parts) > 1 else []
    return {"parts": list(parts),
            "optional": sorted(optional_arrays(func)),
            "private": [[k, PRIVATE_BYTES // func.params[k].type.dtype.nbytes] for k in private],
            "eager": [] if func.is_adjoint else private,
            "interruptible": bool(is_interruptible(func))}


def llvm_source(func: Function, bounds_check: bool, verify_fp: bool = False,
                optimized: bool = False) -> str:
    """The LLVM IR of a kernel variant as text, one module per entry (fast, general): by
    default as lowered, each run of instructions under a ``; file:line`` comment naming the
    user's line (and, for an adjoint, ``forward replay`` / ``reverse`` section comments);
    with optimized=True, after the optimisation pipeline (where vectorisation shows, but the
    comments are gone)."""
    key = cache_key(func, bounds_check, verify_fp)
    layout = variants.arg_layout(func)
    checks = "with bounds checks" if bounds_check else "without bounds checks"
    kind = "adjoint kernel" if func.is_adjoint else "kernel"
    out = []
    for part in _parts(func):
        symbol = variants.symbol_for(func, variants.part_key(key, part))
        what = {"fast": "fast entry (contiguous arrays, thread-id and constant indices in "
                        "range" + (", every gradient array present)" if optional_arrays(func)
                                   else ")"),
                "general": "general entry (any strides, every access checked)"}[part]
        if optimized:
            text = str(build_module(func, bounds_check, symbol, verify_fp, part)[0])
            out.append(f"; {kind} '{func.name}' {checks}: {what}, optimised for "
                       f"{_host()[2]}\n{text}")
        else:
            module = lower_to_llvm(func, bounds_check, layout.offsets, symbol,
                                   verify_fp, *_split_part(part))
            out.append(f"; {kind} '{func.name}' {checks}: {what}, as lowered (before "
                       f"optimisation)\n{module}")
    return "\n".join(out)


def optimised_object(func, text: str, tm=None) -> bytes:
    """The object code of the lowered entry ``text``, optimised (see optimised_entry)."""
    if tm is None:
        return _codegen_machine(func).emit_object(optimised_module(func, text))
    return _emit_unlocked(tm, optimised_module(func, text, tm, unlocked=True))


def optimised_entry(func, text: str, symbol: str, layout, key: str, tm=None, obj=None):
    """Optimise and compile the lowered entry ``text``, load it (variants.place: kernlab's
    loader, else MCJIT) and keep its object in the disk cache (``tm``: the target machine
    of a helper thread, which then optimises and emits code without llvmlite's global
    lock: see _unlocked; ``obj``: its object code, already made by optimised_object)."""
    if obj is None:
        obj = optimised_object(func, text, tm)
    entry, _ = variants.place(func, obj, symbol)
    if entry is None:
        raise LoweringError("internal error: the compiled kernel has no entry point",
                            loc=func.loc, kernel=func.name, details=f"symbol {symbol}")
    cache.store(key, obj)
    return entry


def add_object(obj: bytes, symbol: str) -> tuple:
    """Load object code into the current arena with MCJIT: (the entry's address, the arena),
    or (0, None) when the object is not one of ours (damaged cache entries are then
    recompiled)."""
    magic = next((m for p, m in _OBJECT_MAGIC.items() if sys.platform.startswith(p)), b"")
    if not obj.startswith(magic) or symbol.encode() not in obj:
        return 0, None
    if magic == b"\x7fELF":
        try:  # MCJIT aborts the process on an object for another processor
            objload.check_header(obj)
        except objload.MalformedObject:
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
        stats["llvm_loads"] += 1
        return address, arena


def __getattr__(name):  # the loading side's names, for code that reached them through jit
    for module in (variants, sys.modules[__package__ + ".runner"]):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
