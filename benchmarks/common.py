"""Shared pieces of the benchmarks: timing, optional peers, result rows, the machine line."""
from __future__ import annotations

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
PEERS = ("numpy", "numba", "warp")


@dataclass
class Settings:
    """What the runner was asked for; every benchmark reads its sizes from here."""

    quick: bool = False
    repeats: int = 10  # best-of-N for array benchmarks
    warmup: int = 2
    launches: int = 2000  # launches averaged for the launch-overhead rows

    def size(self, full: int, quick: int) -> int:
        return quick if self.quick else full


@dataclass
class Row:
    """One line of the table. ``times`` maps a column (kernlab, numpy, numba, warp, bound)
    to seconds; a missing column prints as n/a."""

    name: str
    size: str
    times: dict = field(default_factory=dict)
    note: str = ""


def best_of(fn, repeats: int, warmup: int = 1, sync=None) -> float:
    """The fastest of ``repeats`` timed calls of fn(), after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if sync:
            sync()
        best = min(best, time.perf_counter() - start)
    return best


def mean_of(fn, count: int, warmup: int = 10) -> float:
    """Mean seconds per call of fn() over ``count`` back-to-back calls."""
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) / count


def copy_bound(nbytes_moved: int, repeats: int) -> float:
    """The memory-bandwidth bound for a kernel that moves ``nbytes_moved`` bytes (reads plus
    writes): the best time of ``np.copyto(dst, src)`` on buffers of nbytes_moved / 2 bytes,
    since a copy reads and writes each byte once."""
    count = max(1, nbytes_moved // 2 // 4)
    src = np.ones(count, np.float32)
    dst = np.zeros(count, np.float32)
    return best_of(lambda: np.copyto(dst, src), repeats, warmup=2)


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
                wp.config.quiet = True
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


def _version(name: str) -> str:
    module = optional(name)
    return getattr(module, "__version__", "?") if module else "not installed"


def machine_line() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = ", ".join(f"{n} {_version(n)}" for n in ("numpy", "llvmlite", "numba"))
    wp = optional("warp")
    warp_version = getattr(getattr(wp, "config", None), "version", None) if wp else None
    return (f"{model}, {cores} cores, Python {platform.python_version()}; {versions}, "
            f"warp {warp_version or 'not installed'}")
