"""Compute-bound kernels: normalise + transcendentals per vec3, and an all-pairs n-body step.

Every implementation computes in float32 (NumPy and Numba use float32 arrays and constants).
"""
from __future__ import annotations

import math

import numpy as np

import kernlab as kl

from common import Row, kernels, kl_launch, one_thread, optional, race, warp, warp_launch

EPS2 = np.float32(0.01)  # softening, so a body's interaction with itself is zero, not NaN


def _numba_kernels():
    numba = optional("numba")
    if numba is None:
        return None, None
    one = np.float32(1.0)

    @numba.njit(parallel=True, fastmath=False)
    def normalize_trig(p, out):
        for i in numba.prange(p.shape[0]):
            x, y, z = p[i, 0], p[i, 1], p[i, 2]
            inv = one / math.sqrt(x * x + y * y + z * z)
            out[i] = math.sin(x * inv) * math.exp(y * inv) + math.sqrt(abs(z * inv) + one)

    @numba.njit(parallel=True, fastmath=False)
    def nbody(pos, mass, acc, eps2):
        n = pos.shape[0]
        for i in numba.prange(n):
            ax = ay = az = np.float32(0.0)
            for j in range(n):
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                inv_r = one / math.sqrt(dx * dx + dy * dy + dz * dz + eps2)
                s = mass[j] * inv_r * inv_r * inv_r
                ax += s * dx
                ay += s * dy
                az += s * dz
            acc[i, 0], acc[i, 1], acc[i, 2] = ax, ay, az
    return normalize_trig, nbody


def numpy_normalize_trig(p, out):
    v = p / np.sqrt(np.einsum("ij,ij->i", p, p))[:, None]
    np.add(np.sin(v[:, 0]) * np.exp(v[:, 1]), np.sqrt(np.abs(v[:, 2]) + np.float32(1)), out=out)


def numpy_nbody(pos, mass, acc, eps2, chunk=128):
    """Vectorised over blocks of ``chunk`` bodies, so the temporaries stay a few MB."""
    for start in range(0, len(pos), chunk):
        d = pos[None, :, :] - pos[start:start + chunk, None, :]  # (chunk, n, 3)
        inv_r = np.float32(1) / np.sqrt(np.einsum("ijk,ijk->ij", d, d) + eps2)
        s = mass[None, :] * inv_r * inv_r * inv_r
        acc[start:start + chunk] = np.einsum("ij,ijk->ik", s, d)


def _compare(name, size, n, kernel_name, kl_args, np_fn, np_args, nb_fn, repeats, note, out):
    """Time one kernel in kernlab and Warp (same source) and its NumPy and Numba versions, in
    turns; ``out`` is the position of the output in both argument lists, checked for
    agreement with NumPy."""
    runs = {"numpy": lambda: np_fn(*np_args),
            "kernlab": kl_launch(getattr(kernels("kernlab"), kernel_name), n, inputs=kl_args)}
    if nb_fn is not None:
        runs["numba"] = lambda: nb_fn(*np_args)
    kw = kernels("warp")
    if kw is not None:
        wp = warp()
        wargs = [wp.array(a.numpy(), dtype=_warp_dtype(wp, a), device="cpu")
                 if isinstance(a, kl.array) else a for a in kl_args]
        runs["warp"] = warp_launch(getattr(kw, kernel_name), n, inputs=wargs)
    times = race(runs, repeats)
    with one_thread():  # the generated code alone, whatever the machine's load
        single = race({k: runs[k] for k in ("kernlab", "numba") if k in runs}, repeats)
    times.update({f"{k}_1t": v for k, v in single.items()})
    expected, got = np.asarray(np_args[out]), kl_args[out].numpy().reshape(np_args[out].shape)
    error = np.max(np.abs(got - expected)) / max(1e-30, float(np.max(np.abs(expected))))
    return [Row(name, size, times, f"{note}; max rel. diff to NumPy {error:.1e}")]


def _warp_dtype(wp, a):
    return wp.vec3 if a.dtype == kl.vec3 else float


def run(settings) -> list[Row]:
    rng = np.random.default_rng(1)
    nb_trig, nb_nbody = _numba_kernels()
    heavy = max(3, settings.repeats // 3)

    n = settings.size(1_000_000, 200_000, tiny=64)
    p = (rng.random((n, 3), dtype=np.float32) - 0.5)
    out = np.empty(n, np.float32)
    kl_args = [kl.from_numpy(p, dtype=kl.vec3), kl.zeros(n)]
    rows = _compare("normalize + sin/exp/sqrt", f"n={n:,} vec3", n, "normalize_trig", kl_args,
                    numpy_normalize_trig, (p, out), nb_trig, settings.repeats,
                    "per element: normalize(p), sin, exp, sqrt", out=1)

    bodies = settings.size(4096, 2048, tiny=32)
    pos = rng.random((bodies, 3), dtype=np.float32)
    mass = rng.random(bodies, dtype=np.float32) + np.float32(0.5)
    acc = np.empty_like(pos)
    kl_args = [kl.from_numpy(pos, dtype=kl.vec3), kl.from_numpy(mass),
               kl.zeros(bodies, dtype=kl.vec3), EPS2]
    rows += _compare("n-body all pairs", f"{bodies:,} bodies", bodies, "nbody", kl_args,
                     numpy_nbody, (pos, mass, acc, EPS2), nb_nbody, heavy,
                     f"{bodies * bodies / 1e6:.1f}M interactions; NumPy chunked by 128", out=2)
    return rows
