"""Atomics into a few addresses: a sum of n float32 into one value, and a histogram of n
bin indices into 256 int32 bins, at several n.

kernlab and Warp run the same kernels (``wp.atomic_add(total, 0, x[i])``,
``wp.atomic_add(bins, bin_of[i], 1)``); NumPy's rows are ``np.sum(x)`` and
``np.bincount(bin_of, minlength=256)``; Numba's a parallel reduction and a parallel
histogram with one set of bins per thread, summed at the end (what kernlab's LLVM backend
does by itself). The bound is a copy of the bytes read (4 n), on all cores and on one.
After the timing every candidate runs once more on fresh data and is checked against NumPy
(the sum in float64; the histogram exactly).
"""
from __future__ import annotations

import numpy as np

import kernlab as kl

from common import (check_note, copies_of, fold_bounds, kernels, kl_launch, one_thread,
                    optional, race_samples, rel_error, steady_block, stream_row, warp,
                    warp_launch)

BINS = 256


def _steady(n: int) -> dict:
    """Each timing after an untimed call of the same candidate, over a block of calls at
    small n: the warm, steady-state launch of every candidate (common.race_samples)."""
    return {"steady": True, "block": steady_block(n)}


def _numba():
    numba = optional("numba")
    if numba is None:
        return None, None

    @numba.njit(parallel=True, fastmath=False)
    def total(x):
        s = np.float32(0.0)
        for i in numba.prange(x.shape[0]):
            s += x[i]
        return s

    @numba.njit(parallel=True, fastmath=False)
    def histogram(bin_of, nbins):
        t = numba.get_num_threads()
        local = np.zeros((t, nbins), np.int32)
        n = bin_of.shape[0]
        for k in numba.prange(t):
            for i in range(n * k // t, n * (k + 1) // t):
                local[k, bin_of[i]] += 1
        out = np.zeros(nbins, np.int32)
        for k in range(t):
            out += local[k]
        return out
    return total, histogram


def _sum(x_np):
    n = len(x_np)
    out = {}
    res = {}

    def numpy_sum():
        res["numpy"] = np.sum(x_np)
    out["numpy"] = (numpy_sum, lambda: res["numpy"])
    nb, _ = _numba()
    if nb is not None:
        def numba_sum():
            res["numba"] = nb(x_np)
        out["numba"] = (numba_sum, lambda: res["numba"])
    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wx, wt = wp.array(x_np, dtype=float, device="cpu"), wp.zeros(1, dtype=float, device="cpu")
        out["warp"] = (warp_launch(kw.sum_into, n, inputs=[wx, wt]), lambda: wt.numpy()[0])
    kk = kernels("kernlab")
    x, total = kl.from_numpy(x_np.copy()), kl.zeros(1)
    out["kernlab"] = (kl_launch(kk.sum_into, n, inputs=[x, total]), lambda: total.numpy()[0])
    return out


def _histogram(bin_np):
    n = len(bin_np)
    out = {}
    res = {}

    def numpy_hist():
        res["numpy"] = np.bincount(bin_np, minlength=BINS)
    out["numpy"] = (numpy_hist, lambda: res["numpy"])
    _, nb = _numba()
    if nb is not None:
        def numba_hist():
            res["numba"] = nb(bin_np, BINS)
        out["numba"] = (numba_hist, lambda: res["numba"])
    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wb = wp.array(bin_np, dtype=wp.int32, device="cpu")
        wbins = wp.zeros(BINS, dtype=wp.int32, device="cpu")
        out["warp"] = (warp_launch(kw.histogram, n, inputs=[wb, wbins]), lambda: wbins.numpy())
    kk = kernels("kernlab")
    b, bins = kl.from_numpy(bin_np.copy()), kl.zeros(BINS, dtype=kl.int32)
    out["kernlab"] = (kl_launch(kk.histogram, n, inputs=[b, bins]), lambda: bins.numpy())
    return out


def _row(name, size, make, data, expected, settings, tolerance, what):
    cands = make(data)
    runs = {k: run for k, (run, _) in cands.items()}
    runs.update(copies_of(data.nbytes * 2))  # a copy of the bytes read
    samples = race_samples(runs, settings.repeats, settings.warmup, **_steady(len(data)))
    with one_thread():
        single = race_samples({k: runs[k] for k in ("kernlab", "numba") if k in runs},
                              settings.repeats, settings.warmup,
                              **_steady(len(data)))
    samples.update({f"{k}_1t": v for k, v in single.items()})
    errors = {}
    for k, (run, result) in make(data).items():  # fresh arrays: one run each, checked
        run()
        kl.synchronize()
        errors[k] = rel_error(result(), expected)
    detail = ", ".join(f"{k} {e:.0e}" for k, e in sorted(errors.items())) \
        if tolerance else ""
    note = f"{what}; " + check_note(errors, tolerance) + (f" [{detail}]" if detail else "")
    return stream_row(name, size, fold_bounds(samples), note)


def run(settings) -> list:
    rows = []
    for n in settings.stream_sizes():
        size = f"n={n:,}"
        rng = np.random.default_rng(2)
        x = rng.random(n, dtype=np.float32)
        rows.append(_row("atomic sum into one value", size, _sum, x,
                         np.sum(x.astype(np.float64)), settings, 1e-3,
                         "atomic_add(total, 0, x[i]) vs np.sum(x); float32 sums: rel. err "
                         "vs float64"))
        bins = rng.integers(0, BINS, n).astype(np.int32)
        rows.append(_row("histogram, 256 bins", size, _histogram, bins,
                         np.bincount(bins, minlength=BINS), settings, 0.0,
                         "atomic_add(bins, bin_of[i], 1) vs np.bincount (int64 result)"))
    return rows
