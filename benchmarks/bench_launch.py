"""Small launches: the mean time per call of ``y[i] = x[i] + 1`` on n = 1 and n = 10,000.

At n = 1 the time is what a launch costs in Python (argument checks, packing, the call);
at n = 10,000 the loop itself starts to count. Peers do the same loop their plainest way:
Numba a plain ``@njit`` function (no parallel hand-off either), NumPy ``np.add(x, 1,
out=y)``, Warp ``wp.launch`` on the CPU. kernlab's rows: ``kl.launch`` (bounds checks on,
the default), the same kernel compiled with ``bounds_check=False`` (the note), and a recorded
``kl.Launch`` run with ``.launch()``. All candidates are timed in turns, block by block; the
table gives the fastest block's mean and the median block's. Every candidate's result is
checked.
"""
from __future__ import annotations

import time

import numpy as np

import kernlab as kl

from common import Row, kernels, optional, warp

SIZES = (1, 10_000)


def _numba_step():
    numba = optional("numba")
    if numba is None:
        return None

    @numba.njit(fastmath=False)
    def step(x, y):
        for i in range(x.shape[0]):
            y[i] = x[i] + np.float32(1.0)
    return step


def _check(name, got, x):
    want = x + np.float32(1.0)
    if not np.array_equal(np.asarray(got), want):
        raise AssertionError(f"small launch: {name} computed a wrong result")


def _per_call(candidates: dict, count: int, blocks: int = 25, clock=time.perf_counter) -> dict:
    """Seconds per call of each callable in each of ``blocks`` blocks of ``count // blocks``
    back-to-back calls, the blocks of all candidates timed in turns after one untimed
    block each (so a burst of load from elsewhere hits every candidate alike)."""
    per = max(1, count // blocks)

    def block(fn):
        start = clock()
        for _ in range(per):
            fn()
        return (clock() - start) / per
    for fn in candidates.values():
        block(fn)
    out = {name: [] for name in candidates}
    for _ in range(blocks):
        for name, fn in candidates.items():
            out[name].append(block(fn))
    return out


def _us(samples) -> str:
    return f"{min(samples) * 1e6:.2f} µs (median {sorted(samples)[len(samples) // 2] * 1e6:.2f})"


def run(settings) -> list[Row]:
    count = settings.launches
    kk = kernels("kernlab")
    kw = kernels("warp")
    wp = warp() if kw is not None else None
    nb = _numba_step()
    # the same kernel with bounds checks off (its own option: the global setting would
    # drop the short path of the checked one at every switch)
    unchecked_kernel = kl.Kernel(func=kk.add_one.pyfunc, key="add_one_unchecked",
                                 options={"bounds_check": False})
    rows = []
    for n in SIZES:
        xs = np.arange(n, dtype=np.float32)
        plain, checks = {}, []
        y_np = np.zeros(n, np.float32)
        plain["numpy"] = lambda: np.add(xs, np.float32(1), out=y_np)
        checks.append(("numpy", lambda: y_np))
        if nb is not None:
            y_nb = np.zeros(n, np.float32)
            plain["numba"] = lambda: nb(xs, y_nb)
            checks.append(("numba", lambda: y_nb))
        x, y = kl.array(xs), kl.zeros(n)
        plain["kernlab"] = lambda: kl.launch(kk.add_one, n, inputs=[x, y])
        checks.append(("kernlab", y.numpy))
        x2, y2 = kl.array(xs), kl.zeros(n)
        plain["unchecked"] = lambda: kl.launch(unchecked_kernel, n, inputs=[x2, y2])
        checks.append(("kernlab unchecked", y2.numpy))
        x3, y3 = kl.array(xs), kl.zeros(n)
        plain["recorded"] = kl.launch(kk.add_one, n, inputs=[x3, y3], record_cmd=True).launch
        checks.append(("kernlab Launch", y3.numpy))
        if kw is not None:
            wx = wp.array(xs, dtype=float, device="cpu")
            wy = wp.zeros(n, dtype=float, device="cpu")
            plain["warp"] = lambda: wp.launch(kw.add_one, n, inputs=[wx, wy], device="cpu")
            checks.append(("warp", wy.numpy))
            wy2 = wp.zeros(n, dtype=float, device="cpu")
            plain["warp_recorded"] = wp.launch(kw.add_one, n, inputs=[wx, wy2], device="cpu",
                                               record_cmd=True).launch
            checks.append(("warp Launch", wy2.numpy))
        wall = _per_call(plain, count)
        cpu = _per_call(plain, count, clock=time.thread_time)
        for name, result in checks:
            _check(name, result(), xs)
        note = (f"{count} calls in 25 interleaved blocks; min (median) per call. Numba: plain "
                f"@njit loop; NumPy: np.add(out=); kl unchecked (bounds_check=False) "
                f"{_us(wall['unchecked'])}")
        size = f"n={n:,}"

        def row(name, samples, note, recorded=False):
            keys = {"kernlab": "recorded", "warp": "warp_recorded"} if recorded else \
                {k: k for k in ("kernlab", "numpy", "numba", "warp")}
            picked = {col: samples[k] for col, k in keys.items() if k in samples}
            return Row(name, size, {col: min(v) for col, v in picked.items()}, note, picked)
        rows += [row("small launch: kl.launch", wall, note),
                 row("small launch: kl.launch, thread CPU time", cpu,
                     "the same calls timed with time.thread_time: the calling thread's CPU "
                     "time, which leaves out waiting for a core on a loaded machine "
                     "(everything here runs on the calling thread); kl unchecked "
                     + _us(cpu["unchecked"])),
                 row("small launch: Launch.launch()", wall,
                     "record_cmd=True, then .launch(); " + note.split(";")[0], recorded=True)]
    return rows
