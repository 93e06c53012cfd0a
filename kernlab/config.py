"""kernlab's settings, as plain module attributes read at the moment they are needed.

    import kernlab as kl
    kl.config.bounds_check = False   # drop index checks for speed
"""
from __future__ import annotations

import enum
import os
import sys


def default_cache_dir() -> str:
    """$KERNLAB_CACHE_DIR if set, else $XDG_CACHE_HOME/kernlab, else ~/.cache/kernlab."""
    explicit = os.environ.get("KERNLAB_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kernlab")


def default_num_threads() -> int:
    """The cores this process may run on (the affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# Checked indexing on every device; an out-of-range index raises IndexError.
bounds_check: bool = True

# Warp's compilation mode. In "debug" a kernel's `assert cond[, "message"]` is compiled: a
# thread whose condition is false prints the assertion, its line and the message, and goes
# on (Warp aborts the process; kernlab never does). In "release" (the default, as Warp's)
# asserts compile to nothing and their conditions are not evaluated. Read when a kernel is
# first compiled.
mode: str = "release"

# When True, a NaN or Inf written by a kernel raises an error naming the kernel and line.
verify_fp: bool = False

# Warp's switch for warning about arrays overwritten after a recorded read. kernlab always
# checks (Tape.backward refuses such a recording), so this flag changes nothing.
verify_autograd_array_access: bool = False

# The GPU architecture (compute capability as an int: 80 for sm_80, 90 for sm_90) that
# kl.source(k, "ptx") compiles for; None: the first GPU's, or 80 when there is no GPU.
# (Launches always compile for the GPU they run on.) Warp calls this ptx_target_arch too.
ptx_target_arch: int | None = None

# CPU worker threads for kernel launches.
num_threads: int = default_num_threads()

# How kernels run on the CPU: "llvm" (compiled) or "interp" (the NumPy reference).
cpu_backend: str = "llvm"

# Where compiled code persists between runs; None or "" disables the disk cache.
cache_dir: str | None = default_cache_dir()

# Print what the compiler and the cache are doing.
verbose: bool = False

# How a kernlab error that ends a script (or a line typed at the python prompt) is shown:
# "short" hides kernlab's own frames, so the traceback ends at the user's call; "full" keeps
# every frame (for debugging kernlab itself). $KERNLAB_TRACEBACK sets the default. Notebooks
# show kernlab errors their own way (kernlab/notebook/cellerrors.py); pytest is unaffected.
traceback: str = os.environ.get("KERNLAB_TRACEBACK", "short").strip().lower() or "short"


class DeterministicMode(enum.IntEnum):
    """Warp's module option ``deterministic`` (how atomics are ordered on a GPU). kernlab
    accepts it and runs as it always does: CPU atomics are exact per element; the order of
    floating-point accumulation across threads is not fixed."""

    NOT_GUARANTEED = 0
    RUN_TO_RUN = 1
    GPU_TO_GPU = 2


# Counts assignments to these settings, so a launch can tell in one comparison that none
# changed since it last looked (runtime/launch.py's short path of small launches).
changes: int = 0


class _Settings(sys.modules[__name__].__class__):
    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name != "changes":
            super().__setattr__("changes", self.changes + 1)


sys.modules[__name__].__class__ = _Settings
