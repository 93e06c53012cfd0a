"""``kl.ScopedTimer``: time a block of host code, as Warp's ScopedTimer does.

On exit ``timer.elapsed`` holds the milliseconds the block took; with ``print=True`` (the
default) ``"<name> took <ms> ms"`` is printed, indented four spaces per enclosing timer;
``dict`` collects the times per name. Inside a recording ``kl.Tape`` the block is also a
named tape scope (``skip_tape=True`` leaves it out). kernlab finishes every launch before
returning, so a timer measures the work done in the block. ``use_nvtx``, ``color`` and
``cuda_filter`` (CUDA profiler ranges and activity reports) are accepted and have no effect:
kernlab has no CUDA activity collection; ``timing_results`` stays empty.
"""
from __future__ import annotations

import builtins
import cProfile
import threading
import time

from . import tape as _tape
from .device import synchronize


class ScopedTimer:
    """``with kl.ScopedTimer("step"):`` times the block; ``timer.elapsed`` is in ms and
    ``"step took ... ms"`` is printed unless ``print=False`` (see the module docstring)."""

    enabled = True   # ScopedTimer.enabled = False turns every timer off
    _local = threading.local()

    def __init__(self, name: str, active: bool = True, print: bool = True,  # noqa: A002
                 detailed: bool = False, dict: dict | None = None,  # noqa: A002
                 use_nvtx: bool = False, color="rapids", synchronize: bool = False,
                 cuda_filter: int = 0, report_func=None, skip_tape: bool = False):
        self.name = name
        self.active = bool(active) and ScopedTimer.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.use_nvtx, self.color, self.cuda_filter = use_nvtx, color, cuda_filter
        self.synchronize = synchronize
        self.report_func = report_func
        self.skip_tape = skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""
        self.timing_results: list = []
        if dict is not None:
            dict.setdefault(name, [])

    @classmethod
    def _depth(cls) -> int:
        return getattr(cls._local, "depth", 0)

    def __enter__(self):
        if self.active:
            if self.synchronize:
                synchronize()
            if self.detailed:
                self._profile = cProfile.Profile()
                self._profile.enable()
            if self.print:
                ScopedTimer._local.depth = self._depth() + 1
            self._start = time.perf_counter_ns()
        tape = None if self.skip_tape else _tape.active_tape()
        self._tape = tape
        if tape is not None:
            tape.record_scope_begin(self.name)
        return self

    def __exit__(self, *exc):
        if self._tape is not None:
            self._tape.record_scope_end()
        if not self.active:
            return False
        if self.synchronize:
            synchronize()
        self.elapsed = (time.perf_counter_ns() - self._start) / 1e6
        if self.detailed:
            self._profile.disable()
            self._profile.print_stats(sort="tottime")
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.print:
            indent = "    " * (self._depth() - 1)
            extra = f" {self.extra_msg}" if self.extra_msg else ""
            builtins.print(f"{indent}{self.name} took {self.elapsed:.2f} ms{extra}")
            ScopedTimer._local.depth = self._depth() - 1
        return False
