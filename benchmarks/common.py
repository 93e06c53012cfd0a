"""Shared pieces of the benchmarks: timing, optional peers, result rows, the machine line."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass
class Settings:
    """What the runner was asked for; every benchmark reads its sizes from here."""

    quick: bool = False
    tiny: bool = False  # plumbing check: tiny sizes (fast enough for the interpreter)
    sizes: tuple = ()  # --sizes: the streaming rows' n (default: sizes() below)
    repeats: int = 30  # best-of-N for array benchmarks
    warmup: int = 2
    launches: int = 2000  # launches averaged for the launch-overhead rows
    backend: str = "llvm"  # kernlab's CPU backend
    compile_runs: int = 3  # cold/warm process pairs, best of

    def size(self, full: int, quick: int, tiny: int) -> int:
        return tiny if self.tiny else quick if self.quick else full

    def stream_sizes(self) -> tuple:
        """The n of the streaming rows (saxpy, adjoint, atomics): small, cache-sized and
        memory-sized launches."""
        if self.sizes:
            return self.sizes
        return (64,) if self.tiny else (10_000, 1_000_000) if self.quick else \
            (10_000, 1_000_000, 10_000_000)


@dataclass
class Row:
    """One line of the table. ``times`` maps a column (kernlab, numpy, numba, warp, bound)
    to seconds; a missing column prints as n/a."""

    name: str
    size: str
    times: dict = field(default_factory=dict)
    note: str = ""
    samples: dict = field(default_factory=dict)  # column -> every timing (race_samples)


def fmt_time(seconds) -> str:
    """Seconds as a short string in s, ms or µs; None as n/a."""
    if seconds is None:
        return "n/a"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def settle_compiles() -> None:
    """After the warm-up rounds: wait until kernlab's optimised code is in use. A small
    loop-free kernel first runs quick code while its O2 code compiles on a helper thread
    (backends/llvm/tiers.py); the timed rounds measure the steady state, as for every
    peer (whose compiles the warm-up also finished)."""
    tiers = sys.modules.get("kernlab.backends.llvm.tiers")
    if tiers is not None:
        tiers.wait()


def race(candidates: dict, repeats: int, warmup: int = 1, clock=None) -> dict:
    """Best-of-``repeats`` seconds for each callable, timed in turns (A B C, A B C, ...) after
    ``warmup`` untimed rounds, so a burst of load from elsewhere on the machine hits every
    candidate alike. Each callable must return only when its work is done."""
    clock = clock or time.perf_counter
    for _ in range(warmup):
        for fn in candidates.values():
            fn()
    settle_compiles()
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = clock()
            fn()
            best[name] = min(best[name], clock() - start)
    return best


def race_samples(candidates: dict, repeats: int, warmup: int = 1, steady: bool = False,
                 block: int = 1) -> dict:
    """Like race, but every timing of each callable (seconds, in the order taken).
    ``steady``: each timing is of the candidate's steady state, as a loop of launches sees
    it: one untimed call of the same candidate just before it (so no other candidate's
    worker threads, still spinning, nor the caches it left are timed), then the mean of
    ``block`` back-to-back calls (for small sizes, where one call is microseconds)."""
    for _ in range(warmup):
        for fn in candidates.values():
            fn()
    settle_compiles()
    out = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            if steady:
                fn()
            start = time.perf_counter()
            for _ in range(block):
                fn()
            out[name].append((time.perf_counter() - start) / block)
    return out


def steady_block(n: int) -> int:
    """Calls per timing of a streaming row at size n: about 2e5 elements' worth."""
    return max(1, 200_000 // max(1, n))


def summary(samples) -> tuple:
    """(minimum, median, spread) of timings; spread is the half interquartile range
    relative to the median."""
    xs = sorted(samples)
    q = lambda f: xs[min(len(xs) - 1, int(round(f * (len(xs) - 1))))]  # noqa: E731
    med = q(0.5)
    return xs[0], med, (q(0.75) - q(0.25)) / 2 / med if med else 0.0


def stream_row(name, size, samples: dict, note: str) -> Row:
    """A Row from race_samples output: times are the minima, samples kept for the table's
    median and spread."""
    return Row(name, size, {k: min(v) for k, v in samples.items()}, note, samples)


def rel_error(got, expected) -> float:
    """Largest absolute difference relative to the largest magnitude of ``expected``."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    scale = max(1e-30, float(np.max(np.abs(expected))) if expected.size else 1.0)
    return float(np.max(np.abs(got - expected))) / scale if expected.size else 0.0


def check_note(errors: dict, tolerance: float) -> str:
    """The note's account of the result checks: every candidate's error against the
    reference, and FAILED when one is beyond ``tolerance``."""
    worst = max(errors.values()) if errors else 0.0
    bad = [k for k, e in errors.items() if not e <= tolerance]
    if bad:
        return "RESULT CHECK FAILED: " + ", ".join(f"{k} {errors[k]:.1e}" for k in bad)
    return f"results checked ({', '.join(sorted(errors))}; max rel. err {worst:.0e})"


def mean_per_call(candidates: dict, count: int, blocks: int = 5, clock=None) -> dict:
    """Seconds per call of each callable: ``count`` calls in ``blocks`` back-to-back blocks,
    the blocks of all candidates timed in turns; each gets the mean of its fastest block.
    ``clock``: another clock than the wall clock (time.thread_time: CPU time)."""
    per_block = max(1, count // blocks)

    def block(fn):
        def calls():
            for _ in range(per_block):
                fn()
        return calls
    best = race({name: block(fn) for name, fn in candidates.items()}, blocks, warmup=1,
                clock=clock)
    return {name: seconds / per_block for name, seconds in best.items()}


@contextlib.contextmanager
def one_thread():
    """kernlab and Numba limited to one thread inside the block (restored afterwards)."""
    import kernlab as kl
    numba = optional("numba")
    threads = kl.config.num_threads
    numba_threads = numba.get_num_threads() if numba else None
    kl.config.num_threads = 1
    if numba:
        numba.set_num_threads(1)
    try:
        yield
    finally:
        kl.config.num_threads = threads
        if numba:
            numba.set_num_threads(numba_threads)


def kl_launch(kernel, dim, **kwargs):
    """A callable that launches a kernlab kernel and returns when it has finished."""
    import kernlab as kl

    def go():
        kl.launch(kernel, dim, **kwargs)
        kl.synchronize()
    return go


def warp_launch(kernel, dim, **kwargs):
    """A callable that launches a Warp kernel on the CPU and returns when it has finished."""
    wp = warp()

    def go():
        wp.launch(kernel, dim, device="cpu", **kwargs)
        wp.synchronize_device("cpu")
    return go


def copy_of(nbytes_moved: int):
    """A callable for the memory-bandwidth bound of a kernel that moves ``nbytes_moved``
    bytes (reads plus writes): ``np.copyto(dst, src)`` on float32 buffers of nbytes_moved / 2
    bytes each, since a copy reads and writes each byte once. NumPy copies on one thread."""
    count = max(1, nbytes_moved // 2 // 4)
    src = np.ones(count, np.float32)
    dst = np.zeros(count, np.float32)
    return lambda: np.copyto(dst, src)


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


_copy_pool = None


def copies_of(nbytes_moved: int) -> dict:
    """Callables that copy ``nbytes_moved`` / 2 bytes (a copy reads and writes each byte
    once): "bound_1t" is one ``np.copyto`` (one core); "copy_threads" splits it into one
    np.copyto per core on a thread pool (NumPy releases the GIL while copying); "copy_numba"
    (when Numba imports) is a parallel Numba loop. The bandwidth bound of a row is the
    fastest of the three, the one-core bound the first."""
    from concurrent.futures import ThreadPoolExecutor
    global _copy_pool
    count = max(1, nbytes_moved // 2 // 4)
    src, dst = np.ones(count, np.float32), np.zeros(count, np.float32)
    k = cores()
    if _copy_pool is None:
        _copy_pool = ThreadPoolExecutor(k, "bound")
    cuts = [count * j // k for j in range(k + 1)]
    parts = [(dst[a:b], src[a:b]) for a, b in zip(cuts, cuts[1:])]

    def threaded():
        for f in [_copy_pool.submit(np.copyto, d, s_) for d, s_ in parts]:
            f.result()
    out = {"bound_1t": lambda: np.copyto(dst, src), "copy_threads": threaded}
    numba = optional("numba")
    if numba is not None:
        src2, dst2 = np.ones(count, np.float32), np.zeros(count, np.float32)
        nb = _numba_copy()
        out["copy_numba"] = lambda: nb(dst2, src2)
    return out


_nb_copy = None


def _numba_copy():
    global _nb_copy
    if _nb_copy is None:
        numba = optional("numba")

        @numba.njit(parallel=True, fastmath=False)
        def copy(dst, src):
            for i in numba.prange(src.shape[0]):
                dst[i] = src[i]
        _nb_copy = copy
    return _nb_copy


def fold_bounds(samples: dict) -> dict:
    """Replace the copy candidates of copies_of by "bound": the fastest copy's timings."""
    copies = {k: samples.pop(k) for k in ("copy_threads", "copy_numba", "bound_1t")
              if k in samples}
    if "bound_1t" in copies:
        samples["bound_1t"] = copies["bound_1t"]
    if copies:
        samples["bound"] = min(copies.values(), key=min)
    return samples


def optional(name: str):
    """The module if it imports, else None (a missing or broken peer never fails the run)."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 — any import failure means "peer not available"
        return None


_warp_ready = None


def warp():
    """NVIDIA Warp, initialised quietly for the CPU, or None when it does not import."""
    global _warp_ready
    if _warp_ready is None:
        wp = optional("warp")
        if wp is not None:
            try:
                wp.config.quiet = True  # Warp before 1.19
                wp.config.log_level = getattr(wp, "LOG_ERROR", 40)  # 1.19: no greeting
                wp.init()
            except Exception:  # noqa: BLE001
                wp = None
        _warp_ready = wp or False
    return _warp_ready or None


def load_kernels(lib, tag: str):
    """Execute kernels.py as a fresh module whose global ``wp`` is ``lib`` (kernlab or warp):
    the same kernel source then runs on both."""
    spec = importlib.util.spec_from_file_location(f"bench_kernels_{tag}", HERE / "kernels.py")
    module = importlib.util.module_from_spec(spec)
    module.wp = lib
    sys.modules[spec.name] = module  # Warp looks kernels' modules up by name
    spec.loader.exec_module(module)
    return module


_kernels: dict = {}


def kernels(lib_name: str):
    """The benchmark kernels compiled by "kernlab" or "warp" (None when Warp is missing)."""
    if lib_name not in _kernels:
        lib = warp() if lib_name == "warp" else importlib.import_module(lib_name)
        _kernels[lib_name] = load_kernels(lib, lib_name) if lib else None
    return _kernels[lib_name]


def _version(name: str) -> str:
    module = optional(name)
    return getattr(module, "__version__", "?") if module else "not installed"


def kernlab_revision() -> str:
    """The checkout's commit, with "+changes" when kernlab/ has uncommitted edits."""
    import subprocess
    root = HERE.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                             capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "kernlab"], cwd=root,
                               text=True, capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    return (f"git {sha}" + ("+changes" if dirty else "")) if sha else "unknown revision"


def _llvm_cpu() -> str:
    try:
        import llvmlite.binding as llvm
        return llvm.get_host_cpu_name()
    except Exception:  # noqa: BLE001
        return "?"


def machine_line() -> str:
    """CPU model, cores, load average, LLVM's name for the CPU and every library's version."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", load average %.2f" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""
    versions = ", ".join(f"{n} {_version(n)}" for n in ("numpy", "llvmlite", "numba"))
    wp = optional("warp")
    warp_version = getattr(getattr(wp, "config", None), "version", None) if wp else None
    return (f"{model} (LLVM: {_llvm_cpu()}), {cores} cores{load}; Python "
            f"{platform.python_version()}, {versions}, warp {warp_version or 'not installed'}")
