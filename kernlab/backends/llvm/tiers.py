"""Two tiers of machine code for small kernels: a quick compile now, the optimised one on a
helper thread.

LLVM's O2 pipeline and code generation take 20-40 ms for even a tiny kernel (vectorising
the thread loop is most of it), so a kernel and its adjoint cost 60-100 ms of CPU before
their first launch. A quick compile of the same lowered IR (SROA only, then LLVM's fast
instruction selector at O0) takes about 3 ms and gives correct, slower code: enough for
the small launches a fresh kernel usually sees first (a test, a notebook cell, a probe).

The quick object's exported function is a trampoline: it reads a pointer slot (a global
of the same object) and, while it is null, calls the quick body; once the optimised entry
is loaded, its address is stored in the slot and every caller of the quick entry (runners,
launch.py's short path, inline entries) runs the optimised code from its next call on, with
no Python-side bookkeeping. The quick entry holds the optimised one (``entry.upgrade``), so
the code the slot points at stays loaded while the trampoline can jump there.

The optimised compile runs on one helper thread (LLVM releases the GIL), from the same
lowered text, with a target machine of its own (LLVM's are not thread-safe). It stores the
object in the disk cache as a synchronous compile would, so a later process loads optimised
code. A launch large enough to run on the worker pool waits for the optimised code first
(jit.Runner.launch), so large launches never run the quick code; so does a fork (a child
must not inherit a compile half done) and the interpreter's exit (the cache entries get
written, and LLVM is not torn down under a running compile).

Only loop-free kernels with bodies of at most QUICK_MAX_INSTRUCTIONS take the quick tier:
a loop can make a small launch long, and a huge body compiles slowly at O0 too.
``KERNLAB_QUICK_TIER=0`` (or ``tiers.ENABLED = False``) compiles everything optimised,
synchronously, as before.

Results are the same on both tiers: neither pipeline has fast-math, so the optimiser may
not reassociate or contract floating-point arithmetic.
"""
from __future__ import annotations

import atexit
import collections
import ctypes
import os
import threading
import time
import weakref

import llvmlite.binding as llvm

from ... import config
from . import jit
from .lower import is_interruptible

ENABLED = os.environ.get("KERNLAB_QUICK_TIER", "1") != "0"
QUICK_MAX_INSTRUCTIONS = 3000  # IR instructions in the kernel body (jit._body_size)

_cv = threading.Condition()
_jobs: collections.deque = collections.deque()
_worker: threading.Thread | None = None
pending = 0  # jobs queued or running; read without the lock by jit.Runner.launch
_quick_tm: list = []
stats = {"quick": 0, "optimised": 0, "skipped": 0, "failed": 0, "quick_s": 0.0,
         "optimised_s": 0.0}

_TRAMPOLINE = """
@"{slot}" = global ptr null, align 8

define void @"{entry}"(ptr %args, i64 %start, i64 %end) {{
entry:
  %target = load atomic ptr, ptr @"{slot}" acquire, align 8
  %ready = icmp ne ptr %target, null
  br i1 %ready, label %optimised, label %quick
optimised:
  tail call void %target(ptr %args, i64 %start, i64 %end)
  ret void
quick:
  tail call void @"{body}"(ptr %args, i64 %start, i64 %end)
  ret void
}}
"""


def wanted(func) -> bool:
    """Whether ``func`` takes the quick tier first (see the module's docstring)."""
    return ENABLED and jit._body_size(func) <= QUICK_MAX_INSTRUCTIONS \
        and not is_interruptible(func)


def quick_symbol(symbol: str) -> str:
    return symbol + ".quick"


def quick_text(text: str, symbol: str) -> str:
    """The lowered module ``text`` of entry ``symbol`` with the entry renamed to an internal
    body, and the trampoline (exported as quick_symbol(symbol)) and its slot added."""
    head = f'define void @"{symbol}"('
    if text.count(head) != 1:
        raise ValueError(f"the lowered module does not define {symbol} once")
    body = symbol + ".body"
    return text.replace(head, f'define internal void @"{body}"(') + _TRAMPOLINE.format(
        slot=symbol + ".slot", entry=quick_symbol(symbol), body=body)


def _quick_machine():
    if not _quick_tm:
        tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
            cpu=jit._host()[2], features=jit._host()[3], opt=0, reloc="default",
            codemodel="jitdefault", jit=True)
        _quick_tm.append(tm)
    return _quick_tm[0]


def compile_quick(func, text: str, symbol: str, layout, key: str):
    """The quick entry of the lowered entry ``text`` (loaded, callable), with the optimised
    compile of the same text queued for the helper thread. Called under jit._lock (which
    keeps the quick target machine to one thread)."""
    t0 = time.perf_counter()
    ref = jit.parse_checked(func, quick_text(text, symbol))
    tm = _quick_machine()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_sroa_pass()  # locals into registers: the rest of O2 is what costs
    try:
        mpm.run(ref, pb)
    finally:
        jit._free_pass_manager(mpm)
    obj = tm.emit_object(ref)
    name = quick_symbol(symbol)
    # loaded like any object (variants.place: kernlab's loader, else MCJIT), not cached
    entry, found = jit.variants.place(func, obj, name, data=(symbol + ".slot",))
    slot = found.get(symbol + ".slot", 0)
    if entry is None or not slot:
        raise jit.LoweringError("internal error: the quick code of this kernel has no entry "
                                "point", loc=func.loc, kernel=func.name, details=name)
    entry.upgrade = None  # the optimised entry, once loaded
    stats["quick"] += 1
    stats["quick_s"] += time.perf_counter() - t0
    _submit(_Job(entry, func, text, symbol, layout, key, slot))
    return entry


class _Job:
    """The optimised compile of one quick entry's text."""

    def __init__(self, entry, func, text, symbol, layout, key, slot):
        self.quick = weakref.ref(entry)
        self.func, self.text, self.symbol, self.layout, self.key = func, text, symbol, layout, key
        self.slot = slot

    def run(self, tm) -> None:
        t0 = time.perf_counter()
        if self.quick() is None:  # its kernel is gone: only the disk cache wants the code
            if config.cache_dir:  # (a later process, a notebook cell run again unedited)
                jit.cache.store(self.key, jit.optimised_object(self.func, self.text, tm))
            stats["skipped"] += 1
            return
        entry = jit.optimised_entry(self.func, self.text, self.symbol, self.layout, self.key,
                                    tm)
        quick = self.quick()
        stats["optimised"] += 1
        stats["optimised_s"] += time.perf_counter() - t0
        if quick is None:
            return
        with jit._lock:  # arenas close under it: the slot is still there
            if quick.arena is None or quick.arena.closed:
                return
            quick.upgrade = entry  # first: the code stays loaded while the slot points at it
            ctypes.c_void_p.from_address(self.slot).value = entry.address
            if jit._memo.get(self.key) is quick:  # later runners take it directly
                jit._memo[self.key] = entry
                jit._recent.append(entry)
        jit._say(f"optimised kernel '{self.func.name}' on the helper thread "
                 f"({jit._ms(t0)})")


def _submit(job) -> None:
    global _worker, pending
    with _cv:
        _jobs.append(job)
        pending += 1
        if _worker is None:
            _worker = threading.Thread(target=_work, name="kernlab-optimise", daemon=True)
            _worker.start()
            # at exit, before weakref.finalize's own exit hook (registered with the first
            # entry made, so earlier: atexit runs the latest first) disposes the engines
            atexit.register(wait)
        _cv.notify_all()


def _work() -> None:
    global pending
    tm = None
    while True:
        with _cv:
            while not _jobs:
                _cv.wait()
            job = _jobs.popleft()
        try:
            if tm is None:
                tm = jit._new_target_machine()  # this thread's own
            job.run(tm)
        except BaseException:  # noqa: BLE001 — the quick code keeps running: still right
            stats["failed"] += 1
        finally:
            job = None
            with _cv:
                pending -= 1
                _cv.notify_all()


def wait(timeout: float | None = None) -> bool:
    """Wait until every queued optimised compile is done (and in use); False on timeout."""
    if not pending or threading.current_thread() is _worker:
        return not pending
    deadline = None if timeout is None else time.monotonic() + timeout
    with _cv:
        while pending:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            _cv.wait(left)
    return True


def _after_fork_in_child() -> None:
    global _cv, _worker, pending
    _cv, _worker, pending = threading.Condition(), None, 0
    _jobs.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=wait, after_in_child=_after_fork_in_child)
