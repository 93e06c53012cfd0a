"""Small launches: the mean time per call of ``y[i] = x[i] + 1`` on n = 1 and n = 10,000.

At n = 1 the time is what a launch costs in Python (argument checks, packing, the call);
at n = 10,000 the loop itself starts to count. Peers do the same loop their plainest way:
Numba a plain ``@njit`` function (no parallel hand-off either), NumPy ``np.add(x, 1,
out=y)``, Warp ``wp.launch`` on the CPU. kernlab's rows: ``kl.launch`` (bounds checks on,
the default), the same with ``kl.config.bounds_check = False`` (the note), and a recorded
``kl.Launch`` run with ``.launch()``. Every candidate's result is checked.
"""
from __future__ import annotations

import time

import numpy as np

import kernlab as kl

from common import Row, kernels, mean_per_call, optional, warp

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


def run(settings) -> list[Row]:
    count = settings.launches
    kk = kernels("kernlab")
    kw = kernels("warp")
    wp = warp() if kw is not None else None
    nb = _numba_step()
    rows = []
    for n in SIZES:
        xs = np.arange(n, dtype=np.float32)
        plain, recorded, checks = {}, {}, []
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
        recorded["kernlab"] = kl.launch(kk.add_one, n, inputs=[x, y], record_cmd=True).launch
        if kw is not None:
            wx = wp.array(xs, dtype=float, device="cpu")
            wy = wp.zeros(n, dtype=float, device="cpu")
            plain["warp"] = lambda: wp.launch(kw.add_one, n, inputs=[wx, wy], device="cpu")
            recorded["warp"] = wp.launch(kw.add_one, n, inputs=[wx, wy], device="cpu",
                                         record_cmd=True).launch
            checks.append(("warp", wy.numpy))
        times = mean_per_call(plain, count)
        cpu = mean_per_call(plain, count, clock=time.thread_time)
        for name, result in checks:
            _check(name, result(), xs)
        rec = mean_per_call(recorded, count)
        _check("kernlab Launch", y.numpy(), xs)
        previous = kl.config.bounds_check
        kl.config.bounds_check = False
        try:
            x2, y2 = kl.array(xs), kl.zeros(n)
            unchecked = mean_per_call(
                {"kernlab": lambda: kl.launch(kk.add_one, n, inputs=[x2, y2])}, count)
            _check("kernlab unchecked", y2.numpy(), xs)
        finally:
            kl.config.bounds_check = previous
        note = (f"mean per call, fastest of 5 blocks of {max(1, count // 5)}; Numba: plain "
                f"@njit loop; NumPy: np.add(out=); kl unchecked (bounds_check=False) "
                f"{unchecked['kernlab'] * 1e6:.1f} µs")
        size = f"n={n:,}"
        rows += [Row("small launch: kl.launch", size, times, note),
                 Row("small launch: kl.launch, thread CPU time", size, cpu,
                     "the same calls timed with time.thread_time: the calling thread's CPU "
                     "time, which leaves out waiting for a core on a loaded machine "
                     "(everything here runs on the calling thread)"),
                 Row("small launch: Launch.launch()", size, rec,
                     "record_cmd=True, then .launch(); " + note.split(";")[0])]
    return rows
