"""Streaming kernels: saxpy forward, its adjoint, and the cost of bounds checks.

y[i] = a * x[i] + y[i] on n float32 moves 3 * 4 * n bytes (x and y read, y written); the
bound column is the time NumPy takes to copy half that many bytes (a copy reads and writes
each byte once), measured in the same run, in turns with the kernels.
"""
from __future__ import annotations

import numpy as np

import kernlab as kl

from common import (Row, copy_of, fmt_time, kernels, kl_launch, one_thread, optional, race,
                    warp, warp_launch)

A = np.float32(0.001)  # small, so repeated in-place updates stay far from overflow


def _numba_saxpy():
    numba = optional("numba")
    if numba is None:
        return None

    @numba.njit(parallel=True, fastmath=False)
    def saxpy(x, y, a):
        for i in numba.prange(x.shape[0]):
            y[i] = a * x[i] + y[i]
    return saxpy


def _forward_rows(x_np, settings, size):
    """In-place saxpy everywhere, plus kernlab with bounds checks forced on and off.

    Every candidate works on arrays of its own: one that reused its predecessor's arrays
    would find part of them still in the last-level cache and look faster than it is."""
    n = len(x_np)
    x, y, tmp = x_np.copy(), np.ones_like(x_np), np.empty_like(x_np)

    def numpy_saxpy():  # two passes, no temporaries allocated
        np.multiply(x, A, out=tmp)
        np.add(tmp, y, out=y)
    runs = {"numpy": numpy_saxpy, "bound": copy_of(3 * 4 * n)}
    nb = _numba_saxpy()
    if nb is not None:
        nx, ny = x_np.copy(), np.ones_like(x_np)
        runs["numba"] = lambda: nb(nx, ny, A)
    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wargs = [wp.array(x_np, dtype=float, device="cpu"),
                 wp.ones(n, dtype=float, device="cpu"), A]
        runs["warp"] = warp_launch(kw.saxpy, n, inputs=wargs)

    kk = kernels("kernlab")
    runs["kernlab"] = kl_launch(kk.saxpy, n, inputs=_kl_args(x_np))  # default: checks on
    # fresh kernels from the same Python function, one per setting, each compiled anew
    checked = kl.kernel(bounds_check=True)(kk.saxpy.pyfunc)
    unchecked = kl.kernel(bounds_check=False)(kk.saxpy.pyfunc)
    runs["on"] = kl_launch(checked, n, inputs=_kl_args(x_np))
    runs["off"] = kl_launch(unchecked, n, inputs=_kl_args(x_np))
    times = race(runs, settings.repeats, settings.warmup)
    on, off = times.pop("on"), times.pop("off")
    single = {k: runs[k] for k in ("kernlab", "numba") if k in runs}
    with one_thread():  # a separate round: switching thread counts per call costs Numba
        single = race(single, settings.repeats, settings.warmup)
    return [
        Row("saxpy", size, times, "bounds checks on (default); bound: 3 streams"),
        Row("saxpy, bounds_check=False", size, {**times, "kernlab": off},
            f"bounds-check overhead {(on - off) / off * 100:+.1f}% "
            f"({fmt_time(on)} vs {fmt_time(off)})"),
        Row("saxpy, one thread each", size, {**times, **single},
            "kernlab and Numba held to 1 thread: the generated code alone"),
    ]


def _kl_args(x_np):
    return [kl.from_numpy(x_np.copy()), kl.ones(len(x_np)), A]


def _adjoint_row(x_np, settings, size):
    """saxpy_out (z = a x + y, out of place) and its adjoint in kernlab and Warp, each
    launch on arrays of its own."""
    n = len(x_np)
    kk = kernels("kernlab")

    def kl_args():
        return [kl.from_numpy(x_np.copy()), kl.ones(n), kl.zeros(n), A]
    adj = [kl.zeros(n), kl.zeros(n), kl.ones(n), 0.0]
    runs = {"kernlab": kl_launch(kk.saxpy_out, n, inputs=kl_args(), adj_inputs=adj,
                                 adj_outputs=[], adjoint=True),
            "kl_fwd": kl_launch(kk.saxpy_out, n, inputs=kl_args()),
            "bound": copy_of(5 * 4 * n)}  # adj_z read; adj_x, adj_y read and written
    kw = kernels("warp")
    if kw is not None:
        wp = warp()

        def warp_args():
            return [wp.array(x_np, dtype=float, device="cpu"),
                    wp.ones(n, dtype=float, device="cpu"), wp.zeros(n, dtype=float, device="cpu"),
                    A]
        wadj = [wp.zeros(n, dtype=float, device="cpu"), wp.zeros(n, dtype=float, device="cpu"),
                wp.ones(n, dtype=float, device="cpu"), 0.0]
        runs["warp"] = warp_launch(kw.saxpy_out, n, inputs=warp_args(), adj_inputs=wadj,
                                   adj_outputs=[], adjoint=True)
        runs["warp_fwd"] = warp_launch(kw.saxpy_out, n, inputs=warp_args())
    times = race(runs, settings.repeats, settings.warmup)
    fwd, warp_fwd = times.pop("kl_fwd"), times.pop("warp_fwd", None)
    note = f"kl adj/fwd {times['kernlab'] / fwd:.2f} (fwd z=a*x+y {fmt_time(fwd)})"
    if warp_fwd:
        note += f"; Warp adj/fwd {times['warp'] / warp_fwd:.2f}"
    return Row("saxpy adjoint", size, times, note + "; bound: 5 streams")


def run(settings) -> list[Row]:
    n = settings.size(10_000_000, 1_000_000, tiny=64)
    size = f"n={n:,}"
    x_np = np.random.default_rng(0).random(n, dtype=np.float32)
    return _forward_rows(x_np, settings, size) + [_adjoint_row(x_np, settings, size)]
