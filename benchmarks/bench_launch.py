"""Launch overhead: the mean time per launch of a tiny kernel on 16 threads.

The kernel does almost nothing (x[i] += 1), so the time is what a launch costs in Python:
argument checks and packing, dispatch, and the return. NumPy's row is `x += 1` on 16
elements (one ufunc call); Numba's is a call of a parallel=True function.
"""
from __future__ import annotations

import numpy as np

import kernlab as kl

from common import Row, kernels, mean_per_call, optional, warp

THREADS = 16


def _numba_tiny():
    numba = optional("numba")
    if numba is None:
        return None

    @numba.njit(parallel=True, fastmath=False)
    def tiny(x):
        for i in numba.prange(x.shape[0]):
            x[i] = x[i] + np.float32(1.0)
    return tiny


def run(settings) -> list[Row]:
    count = settings.launches
    x_np = np.zeros(THREADS, np.float32)
    plain = {"numpy": lambda: np.add(x_np, np.float32(1), out=x_np)}
    nb = _numba_tiny()
    if nb is not None:
        plain["numba"] = lambda: nb(x_np)
    kk = kernels("kernlab")
    x = kl.zeros(THREADS)
    plain["kernlab"] = lambda: kl.launch(kk.tiny, THREADS, inputs=[x])
    recorded = {"kernlab": kl.launch(kk.tiny, THREADS, inputs=[x], record_cmd=True).launch}

    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wx = wp.zeros(THREADS, dtype=float, device="cpu")
        plain["warp"] = lambda: wp.launch(kw.tiny, THREADS, inputs=[wx], device="cpu")
        recorded["warp"] = wp.launch(kw.tiny, THREADS, inputs=[wx], device="cpu",
                                     record_cmd=True).launch
    size = f"{THREADS} threads"
    note = f"mean per call, fastest of 5 blocks of {max(1, count // 5)}"
    return [Row("launch overhead: kl.launch", size, mean_per_call(plain, count),
                note + "; NumPy: x += 1; Numba: call of a parallel function"),
            Row("launch overhead: Launch.launch()", size, mean_per_call(recorded, count),
                note + "; record_cmd=True, then .launch()")]
