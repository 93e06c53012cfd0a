"""A/B of the short launch path's native front (kernlab/runtime/launch_short_native.py) in one
process: the same launches timed in turns with the front and with the Python short path it
stands before (put back in its place on the kernel's ShortPath), beside a plain Numba
``@njit`` call of the same loop. Thread CPU time, minimum and median of 30 blocks.

    python benchmarks/launch_front_ab.py

Rows: kl.launch of ``y[i] = x[i] + 1`` at n = 1 and 10,000; two arrays alternating
between two plans (``[a, b]`` then ``[b, a]``); a recorded launch (``Launch.launch()``).
Every result is checked against NumPy."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's kernlab

import kernlab as kl  # noqa: E402
from kernlab.runtime import launch_short  # noqa: E402

from bench_launch import _numba_step  # noqa: E402
from common import kernels  # noqa: E402

BLOCKS, PER = 30, 2000


def timed(candidates: dict) -> dict:
    """Seconds per call of each (setup, call) pair, in turns, block by block."""
    out = {name: [] for name in candidates}
    for _ in range(BLOCKS):
        for name, (setup, fn) in candidates.items():
            setup()
            start = time.thread_time()
            for _ in range(PER):
                fn()
            out[name].append((time.thread_time() - start) / PER)
    return out


def main():
    launch_short._make_native()
    if launch_short._native.get("front") is None:
        sys.exit("no native front in this Python")
    kk = kernels("kernlab")
    step = _numba_step()  # (None without Numba)
    for n in (1, 10_000):
        xs = np.arange(n, dtype=np.float32)
        x, y, yn = kl.array(xs), kl.zeros(n), np.zeros(n, np.float32)
        b = kl.zeros(n)
        cmd = kl.launch(kk.add_one, n, inputs=[x, y], record_cmd=True)
        for _ in range(300):  # the short path, its plans and the front made
            kl.launch(kk.add_one, n, inputs=[x, y])
            kl.launch(kk.add_one, n, inputs=[y, b])
            cmd.launch()
        q = kk.add_one._quick
        front, python = (q.run, q.run_converted), (q.python, q.python_converted)
        if type(front[0]).__name__ != "builtin_function_or_method":
            sys.exit("the front is not in place")

        def use(pair):
            return lambda: (setattr(q, "run", pair[0]), setattr(q, "run_converted", pair[1]))
        rows = {}
        for label, call in (("kl.launch", lambda: kl.launch(kk.add_one, n, inputs=[x, y])),
                            ("alternating plans, per launch",
                             lambda: (kl.launch(kk.add_one, n, inputs=[x, y]),
                                      kl.launch(kk.add_one, n, inputs=[y, b]))),
                            ("Launch.launch()", cmd.launch)):
            cands = {"front": (use(front), call), "Python": (use(python), call)}
            if step is not None and label == "kl.launch":
                cands["Numba"] = (use(front), lambda: step(xs, yn))
            rows[label] = timed(cands)
        use(front)()
        if not (np.array_equal(y.numpy(), xs + 1) and np.array_equal(b.numpy(), xs + 2)):
            raise AssertionError("a launch computed a wrong result")
        if step is not None and not np.array_equal(yn, xs + 1):
            raise AssertionError("Numba computed a wrong result")
        for label, samples in rows.items():
            per = 2 if label.startswith("alternating") else 1
            cells = [f"{name} {min(v) / per * 1e6:.2f} µs (median "
                     f"{sorted(v)[len(v) // 2] / per * 1e6:.2f})" for name, v in samples.items()]
            print(f"n={n:<6} {label:30s} " + "; ".join(cells))
    with open("/proc/loadavg") as f:
        print("load average", f.read().split()[0])


if __name__ == "__main__":
    main()
