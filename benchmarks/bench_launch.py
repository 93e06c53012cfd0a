"""Small launches: the mean time per call of ``y[i] = x[i] + 1`` on n = 1 and n = 10,000.

At n = 1 the time is what a launch costs in Python (argument checks, packing, the call);
at n = 10,000 the loop itself starts to count. Peers do the same loop their plainest way:
Numba a plain ``@njit`` function (no parallel hand-off either), NumPy ``np.add(x, 1,
out=y)``, Warp ``wp.launch`` on the CPU. kernlab's rows: ``kl.launch`` (bounds checks on,
the default), the same kernel compiled with ``bounds_check=False`` (the note), and a recorded
``kl.Launch`` run with ``.launch()``. All candidates are timed in turns, block by block; the
table gives the fastest block's mean and the median block's. Every candidate's result is
checked.

The adjoint rows time ``kl.launch(saxpy_out, n, ..., adjoint=True)`` (``z = a x + y``, gradient
buffers passed explicitly) at the same sizes beside the forward launch of the same kernel,
a plain ``@njit`` loop doing the same adjoint by hand (``adj_x += a adj_z; adj_y += adj_z``:
an explicitly passed ``adj_z`` is only read) and Warp's adjoint launch; the note gives
kernlab's adjoint / forward from the same blocks.
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


def _numba_adjoint():
    numba = optional("numba")
    if numba is None:
        return None

    @numba.njit(fastmath=False)
    def adjoint(adj_x, adj_y, adj_z, a):
        for i in range(adj_z.shape[0]):
            adj_x[i] += a * adj_z[i]
            adj_y[i] += adj_z[i]
    return adjoint


def _adjoint_rows(settings, n, kk, kw, wp, nb) -> list[Row]:
    """kl.launch(adjoint=True) of saxpy_out at n threads beside its forward, a hand-written
    @njit adjoint and Warp's adjoint launch; every adjoint's result checked afterwards on
    fresh buffers against NumPy in float64."""
    a = 1.5
    rng = np.random.default_rng(3)
    xs, ys, gz = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
    candidates, runs = {}, {}

    def kernlab_adjoint(x, y, z, gx, gy, g):
        return lambda: kl.launch(kk.saxpy_out, n, inputs=[x, y, z, a], adjoint=True,
                                 adj_inputs=[gx, gy, g, 0.0])
    prim = [kl.array(xs), kl.array(ys), kl.zeros(n)]
    candidates["kernlab_fwd"] = lambda: kl.launch(kk.saxpy_out, n, inputs=[*prim, a])
    candidates["kernlab"] = kernlab_adjoint(*prim, kl.zeros(n), kl.zeros(n), kl.array(gz))
    runs["kernlab"] = lambda gx, gy: kernlab_adjoint(*prim, kl.array(gx), kl.array(gy),
                                                     kl.array(gz))
    if nb is not None:
        bx, by = np.zeros(n, np.float32), np.zeros(n, np.float32)
        candidates["numba"] = lambda: nb(bx, by, gz, np.float32(a))
        runs["numba"] = lambda gx, gy: (lambda: nb(gx, gy, gz, np.float32(a)))
    if kw is not None:
        wprim = [wp.array(xs, dtype=float, device="cpu"), wp.array(ys, dtype=float, device="cpu"),
                 wp.zeros(n, dtype=float, device="cpu"), a]

        def warp_adjoint(gx, gy):
            adj = [wp.array(gx, dtype=float, device="cpu"), wp.array(gy, dtype=float,
                                                                     device="cpu"),
                   wp.array(gz, dtype=float, device="cpu"), 0.0]
            return lambda: wp.launch(kw.saxpy_out, n, inputs=wprim, adj_inputs=adj,
                                     adj_outputs=[], adjoint=True, device="cpu"), adj
        candidates["warp"] = warp_adjoint(np.zeros(n, np.float32), np.zeros(n, np.float32))[0]
    wall = _per_call(candidates, settings.launches)
    cpu = _per_call(candidates, settings.launches, clock=time.thread_time)
    want_x = a * gz.astype(np.float64)
    for name, make in runs.items():  # one adjoint on fresh zeroed buffers
        gx, gy = np.zeros(n, np.float32), np.zeros(n, np.float32)
        if name == "kernlab":
            bx, by = kl.zeros(n), kl.zeros(n)
            kl.launch(kk.saxpy_out, n, inputs=[*prim, a], adjoint=True,
                      adj_inputs=[bx, by, kl.array(gz), 0.0])
            gx, gy = bx.numpy(), by.numpy()
        else:
            make(gx, gy)()
        if not (np.allclose(gx, want_x, rtol=1e-6) and np.array_equal(gy, gz)):
            raise AssertionError(f"small adjoint launch: {name} computed a wrong result")
    if kw is not None:
        run, adj = warp_adjoint(np.zeros(n, np.float32), np.zeros(n, np.float32))
        run()
        if not (np.allclose(adj[0].numpy(), want_x, rtol=1e-6)
                and np.array_equal(adj[1].numpy(), gz)):
            raise AssertionError("small adjoint launch: warp computed a wrong result")
    rows = []
    for label, samples in (("", wall), (", thread CPU time", cpu)):
        ratio = min(samples["kernlab"]) / min(samples["kernlab_fwd"])
        note = (f"kl adj/fwd {ratio:.2f} (fwd {_us(samples['kernlab_fwd'])}, same blocks); "
                "Numba: the adjoint by hand in a plain @njit loop; results checked")
        picked = {k: samples[k] for k in ("kernlab", "numba", "warp") if k in samples}
        rows.append(Row(f"small adjoint launch: kl.launch{label}", f"n={n:,}",
                        {k: min(v) for k, v in picked.items()}, note, picked))
    return rows


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
    nb_adjoint = _numba_adjoint()
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
        rows += _adjoint_rows(settings, n, kk, kw, wp, nb_adjoint)
    return rows
