"""Streaming kernels: saxpy forward, its adjoint and the cost of bounds checks, at several n.

y[i] = a * x[i] + y[i] on n float32 moves 3 * 4 * n bytes (x and y read, y written). The
bound column is the fastest copy of half that many bytes on all cores (a copy reads and
writes each byte once), the one-core bound a single ``np.copyto``; both are measured in the
same rounds as the kernels. kernlab and Numba run once on all cores and once, in a round
of their own, on one thread; Warp's CPU backend runs a launch on one thread.

Every candidate works on arrays of its own, and after the timing every candidate runs once
more on fresh arrays and its result is compared with NumPy in float64.
"""
from __future__ import annotations

import numpy as np

import kernlab as kl

from common import (check_note, copies_of, fmt_time, fold_bounds, kernels, kl_launch,
                    one_thread, optional, race_samples, rel_error, steady_block, stream_row,
                    warp, warp_launch)

A = np.float32(0.001)  # small, so repeated in-place updates stay far from overflow
SINGLE = ("kernlab", "numba")  # what runs again on one thread


def _steady(n: int) -> dict:
    """Each timing after an untimed call of the same candidate, over a block of calls at
    small n: the warm, steady-state launch of every candidate (common.race_samples)."""
    return {"steady": True, "block": steady_block(n)}


def _numba():
    numba = optional("numba")
    if numba is None:
        return None, None

    @numba.njit(parallel=True, fastmath=False)
    def saxpy(x, y, a):
        for i in numba.prange(x.shape[0]):
            y[i] = a * x[i] + y[i]

    @numba.njit(parallel=True, fastmath=False)
    def saxpy_adjoint(adj_x, adj_y, adj_z, a):
        """The adjoint of z = a x + y by hand: what kernlab's and Warp's adjoints do
        (adj_z is consumed; a's adjoint is not returned, a scalar is passed by value)."""
        for i in numba.prange(adj_z.shape[0]):
            g = adj_z[i]
            adj_z[i] = 0.0
            adj_x[i] += a * g
            adj_y[i] += g
    return saxpy, saxpy_adjoint


def _forward(x_np):
    """name -> (run, y): one in-place saxpy on the candidate's own arrays, and its y."""
    n = len(x_np)
    out = {}
    x, y, tmp = x_np.copy(), np.ones_like(x_np), np.empty_like(x_np)

    def numpy_saxpy():  # two passes, no temporaries allocated
        np.multiply(x, A, out=tmp)
        np.add(tmp, y, out=y)
    out["numpy"] = (numpy_saxpy, lambda: y)
    nb, _ = _numba()
    if nb is not None:
        nx, ny = x_np.copy(), np.ones_like(x_np)
        out["numba"] = (lambda: nb(nx, ny, A), lambda: ny)
    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wargs = [wp.array(x_np, dtype=float, device="cpu"), wp.ones(n, dtype=float, device="cpu"),
                 A]
        out["warp"] = (warp_launch(kw.saxpy, n, inputs=wargs), lambda: wargs[1].numpy())
    kk = kernels("kernlab")
    args = [kl.from_numpy(x_np.copy()), kl.ones(n), A]  # default: bounds checks on
    out["kernlab"] = (kl_launch(kk.saxpy, n, inputs=args), lambda: args[1].numpy())
    return out


_unchecked = {}


def _unchecked_saxpy():
    if "k" not in _unchecked:  # a fresh kernel from the same Python function
        _unchecked["k"] = kl.kernel(bounds_check=False)(kernels("kernlab").saxpy.pyfunc)
    return _unchecked["k"]


def _time(make, x_np, settings, nbytes, one_thread_names=SINGLE, extra=None):
    """Timings of every candidate (all cores), of kernlab and Numba on one thread, of the
    copies and of the ``extra`` callables, all in the same rounds."""
    cands = make(x_np)
    runs = {k: run for k, (run, _) in cands.items()}
    runs.update(copies_of(nbytes))
    runs.update(extra or {})
    samples = race_samples(runs, settings.repeats, settings.warmup, **_steady(len(x_np)))
    with one_thread():  # a round of its own: switching thread counts per call costs Numba
        single = race_samples({k: runs[k] for k in one_thread_names if k in runs},
                              settings.repeats, settings.warmup,
                              **_steady(len(x_np)))
    samples.update({f"{k}_1t": v for k, v in single.items()})
    return fold_bounds(samples)


def _check(make, x_np, expected: dict):
    """Each candidate once on fresh arrays; its error against ``expected[what]``."""
    errors = {}
    for name, (run, result) in make(x_np).items():
        run()
        kl.synchronize()
        errors[name] = rel_error(result(), expected)
    return errors


def _forward_rows(x_np, settings, size):
    n = len(x_np)
    samples = _time(_forward, x_np, settings, 3 * 4 * n)
    x64 = x_np.astype(np.float64)
    errors = _check(_forward, x_np, 1.0 + float(A) * x64)
    note = "bounds checks on (default); bound: 3 streams; " + check_note(errors, 1e-6)

    def plain(x_np):
        args = [kl.from_numpy(x_np.copy()), kl.ones(n), A]
        return {"kernlab": (kl_launch(_unchecked_saxpy(), n, inputs=args),
                            lambda: args[1].numpy())}
    checked = race_samples({"on": _forward(x_np)["kernlab"][0],
                            "off": plain(x_np)["kernlab"][0]}, settings.repeats, settings.warmup)
    on, off = min(checked["on"]), min(checked["off"])
    errors = _check(plain, x_np, 1.0 + float(A) * x64)
    return [stream_row("saxpy", size, samples, note),
            stream_row("saxpy, bounds_check=False", size,
                       {"kernlab": checked["off"], "kernlab_on": checked["on"]},
                       f"bounds-check overhead {(on - off) / off * 100:+.1f}% ({fmt_time(on)} "
                       f"checked vs {fmt_time(off)} unchecked, same rounds); "
                       + check_note(errors, 1e-6))]


def _adjoint(x_np):
    """name -> (run, (adj_x, adj_y)): one adjoint of z = a x + y with adj_z = 1. kernlab
    (and the hand-written NumPy and Numba adjoints) also zero adj_z, the gradient of the
    overwritten z; Warp leaves it."""
    n = len(x_np)
    out = {}
    ax, ay, az, tmp = (np.zeros(n, np.float32), np.zeros(n, np.float32),
                       np.ones(n, np.float32), np.empty(n, np.float32))

    def numpy_adjoint():
        np.multiply(az, A, out=tmp)
        np.add(ax, tmp, out=ax)
        np.add(ay, az, out=ay)
        az.fill(0.0)
    out["numpy"] = (numpy_adjoint, lambda: (ax, ay))
    _, nb = _numba()
    if nb is not None:
        bx, by, bz = np.zeros(n, np.float32), np.zeros(n, np.float32), np.ones(n, np.float32)
        out["numba"] = (lambda: nb(bx, by, bz, A), lambda: (bx, by))
    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wargs = [wp.array(x_np, dtype=float, device="cpu"), wp.ones(n, dtype=float, device="cpu"),
                 wp.zeros(n, dtype=float, device="cpu"), A]
        wadj = [wp.zeros(n, dtype=float, device="cpu"), wp.zeros(n, dtype=float, device="cpu"),
                wp.ones(n, dtype=float, device="cpu"), 0.0]
        out["warp"] = (warp_launch(kw.saxpy_out, n, inputs=wargs, adj_inputs=wadj,
                                   adj_outputs=[], adjoint=True),
                       lambda: tuple(a.numpy() for a in wadj[:2]))
    kk = kernels("kernlab")
    args = [kl.from_numpy(x_np.copy()), kl.ones(n), kl.zeros(n), A]
    adj = [kl.zeros(n), kl.zeros(n), kl.ones(n), 0.0]
    out["kernlab"] = (kl_launch(kk.saxpy_out, n, inputs=args, adj_inputs=adj, adj_outputs=[],
                                adjoint=True), lambda: tuple(a.numpy() for a in adj[:2]))
    return out


def _adjoint_row(x_np, settings, size):
    n = len(x_np)
    samples = _time(_adjoint, x_np, settings, 5 * 4 * n,  # adj_z read; adj_x, adj_y r+w
                    extra={"fwd": _forward_out(x_np)})
    fwd_samples = samples["kernlab_fwd"] = samples.pop("fwd")  # for run.py's goals
    errors = _check(_adjoint, x_np, np.stack([np.full(n, float(A)), np.ones(n)]))
    kl_adj = min(samples["kernlab"])
    note = (f"kl adj/fwd {kl_adj / min(fwd_samples):.2f} (fwd z=a*x+y {fmt_time(min(fwd_samples))}, "
            "same rounds); NumPy and Numba: the adjoint written by hand; bound: 5 streams "
            "(kernlab, NumPy and Numba move 6: they zero adj_z, Warp does not); "
            + check_note(errors, 1e-6))
    return stream_row("saxpy adjoint", size, samples, note)


def _forward_out(x_np):
    n = len(x_np)
    kk = kernels("kernlab")
    return kl_launch(kk.saxpy_out, n, inputs=[kl.from_numpy(x_np.copy()), kl.ones(n),
                                              kl.zeros(n), A])


def run(settings) -> list:
    rows = []
    for n in settings.stream_sizes():
        size = f"n={n:,}"
        x_np = np.random.default_rng(0).random(n, dtype=np.float32)
        rows += _forward_rows(x_np, settings, size) + [_adjoint_row(x_np, settings, size)]
    return rows
