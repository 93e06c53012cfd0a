"""Forward mode: tangent launches and Hessian-vector products, next to the forward launch.

Warp, NumPy and Numba have no forward mode, so these rows show kernlab alone; the note
gives the ratio to kernlab's own forward launch of the same kernel, timed in the same
rounds. A tangent launch (``tangent=True``) computes the tangents only (J·u, as an adjoint
launch computes only gradients): its kernel reads what the tangents need and writes no
primal output. ``kl.jvp`` computes both in one launch.

* saxpy tangent: ``z = a x + y`` (10M float32) with tangents for x and y:
  ``dz = a dx + da x + dy`` reads x, dx, dy and writes dz — 4 streams against the
  forward's 3 (bound: a copy moving 4 streams' bytes).
* saxpy jvp: ``kl.jvp`` of the same, z and dz in one launch: 6 streams (bound: 6), plus
  the zeroed dz array kl.jvp allocates.
* normalize + sin/exp/sqrt tangent: the compute-bound row of bench_compute.py with a tangent
  for every point.
* HVP: ``tape.hvp(loss, {p: v})`` for ``loss = Σ sin(v0) exp(v1) + sqrt(|v2| + 1)`` with
  ``v = normalize(p_i)`` (one launch, 1M vec3) — a tangent sweep, then the tangent of the
  adjoint, scratch arrays included — against that kernel's forward launch.
"""
from __future__ import annotations

import numpy as np

import kernlab as kl

from common import Row, copy_of, fmt_time, kernels, race

A = np.float32(0.001)


@kl.kernel
def trig_energy(p: kl.array(dtype=kl.vec3), loss: kl.array(dtype=float)):
    i = kl.tid()
    v = kl.normalize(p[i])
    kl.atomic_add(loss, 0, kl.sin(v[0]) * kl.exp(v[1]) + kl.sqrt(kl.abs(v[2]) + 1.0))


def _tangent_call(kernel, n, inputs, tan_inputs):
    def go():
        kl.launch(kernel, n, inputs=inputs, tangent=True, tan_inputs=tan_inputs)
        kl.synchronize()
    return go


def _forward_call(kernel, n, inputs):
    def go():
        kl.launch(kernel, n, inputs=inputs)
        kl.synchronize()
    return go


def _row(name, size, times, what):
    tan, fwd = times["kernlab"], times.pop("fwd")
    return Row(name, size, times, f"{what} / forward {tan / fwd:.2f} "
                                  f"(forward {fmt_time(fwd)})")


def run(settings) -> list[Row]:
    kk = kernels("kernlab")
    rng = np.random.default_rng(2)
    rows = []

    n = settings.size(10_000_000, 1_000_000, tiny=64)
    x = rng.random(n, dtype=np.float32)
    fwd_args = [kl.from_numpy(x.copy()), kl.ones(n), kl.zeros(n), A]
    tan_args = [kl.from_numpy(x.copy()), kl.ones(n), kl.zeros(n), A]
    tans = [kl.ones(n), kl.ones(n), kl.zeros(n), 0.0]
    times = race({"kernlab": _tangent_call(kk.saxpy_out, n, tan_args, tans),
                  "fwd": _forward_call(kk.saxpy_out, n, fwd_args),
                  "bound": copy_of(4 * 4 * n)}, settings.repeats, settings.warmup)
    rows.append(_row("saxpy tangent", f"n={n:,}", times, "tangent"))
    rows[-1].note += "; bound: 4 streams"

    def jvp():
        kl.jvp(kk.saxpy_out, n, inputs=tan_args[:2], outputs=[tan_args[2], A],
               tan_inputs=tans[:2])
        kl.synchronize()
    times = race({"kernlab": jvp, "fwd": _forward_call(kk.saxpy_out, n, fwd_args),
                  "bound": copy_of(6 * 4 * n)}, settings.repeats, settings.warmup)
    rows.append(_row("saxpy jvp (outputs and tangents)", f"n={n:,}", times, "jvp"))
    rows[-1].note += "; bound: 6 streams"

    m = settings.size(1_000_000, 200_000, tiny=64)
    p = rng.random((m, 3), dtype=np.float32) - 0.5
    dp = rng.normal(size=(m, 3)).astype(np.float32)
    times = race({"kernlab": _tangent_call(kk.normalize_trig, m,
                                           [kl.from_numpy(p, dtype=kl.vec3), kl.zeros(m)],
                                           [kl.from_numpy(dp, dtype=kl.vec3), kl.zeros(m)]),
                  "fwd": _forward_call(kk.normalize_trig, m,
                                       [kl.from_numpy(p, dtype=kl.vec3), kl.zeros(m)])},
                 settings.repeats, settings.warmup)
    rows.append(_row("normalize + sin/exp/sqrt tangent", f"n={m:,} vec3", times, "tangent"))

    pa = kl.from_numpy(p, dtype=kl.vec3, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(trig_energy, m, inputs=[pa, loss])
    direction = {pa: kl.from_numpy(dp, dtype=kl.vec3)}

    def hvp():
        tape.hvp(loss, direction)
        kl.synchronize()
    times = race({"kernlab": hvp,
                  "fwd": _forward_call(trig_energy, m, [kl.from_numpy(p, dtype=kl.vec3),
                                                        kl.zeros(1)])},
                 max(3, settings.repeats // 3), settings.warmup)
    rows.append(_row("HVP (tape.hvp) of Σ normalize+trig", f"n={m:,} vec3", times, "HVP"))
    return rows
