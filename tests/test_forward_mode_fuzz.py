"""Differential fuzzing of forward mode and Hessian-vector products on the random smooth
programs of the reverse-mode fuzzer (tests/test_fuzz_grad.py: its generator, imported).

For each program, with a random input x, direction u and output weights w:

* kl.jvp's outputs equal a plain launch's, on LLVM and on the interpreter, and the
  tangents-only launch gives kl.jvp's tangents and writes no output;
* its tangents J·u agree with float64 central finite differences of the forward along u,
  and between LLVM and the interpreter;
* ⟨J·u, w⟩ = ⟨u, Jᵀ·w⟩ with Jᵀ·w from the reverse mode (a tape's backward);
* ``Tape.hvp`` of the scalar loss Σ w·tanh(outputs) agrees with central finite differences
  of its gradient (by the reverse mode) along u;
* the same for the in-place programs of tests/test_fuzz_grad.py (a state y each thread
  reads and overwrites, two steps under one tape): H·u with respect to x and y before the
  first step, through the tape's copies.

The CI run checks 25 straight-line and 25 control-flow programs (about two minutes: each
program compiles six kernel variants); ``pytest --long-fuzz`` checks 260 of each and
prints the figures.
"""
from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import kernlab as kl  # noqa: E402
from test_fuzz_grad import (IN_PLACE_STEPS, M, N, Choices, InPlaceProgram,  # noqa: E402
                            SmoothProgram, forward, fuzz_settings, gradient, load_kernel,
                            programs, sample_inputs)

H = 1e-6     # finite-difference step along u for J·u
H2 = 1e-5    # finite-difference step along u for H·u (differences of exact gradients)


@kl.kernel
def tanh_loss(v: kl.array(dtype=kl.float64), w: kl.array(dtype=kl.float64),
              loss: kl.array(dtype=kl.float64)):
    i = kl.tid()
    kl.atomic_add(loss, 0, w[i] * kl.tanh(v[i]))


def tangent(kernel, backend, x, n, u):
    """kl.jvp's outputs and tangents; the tangents-only launch must give the same tangents
    and leave the outputs alone."""
    kl.config.cpu_backend = backend
    out, acc = kl.zeros(N, dtype=kl.float64), kl.zeros(2, dtype=kl.float64)
    t_out, t_acc = kl.zeros(N, dtype=kl.float64), kl.zeros(2, dtype=kl.float64)
    kl.launch(kernel, N, inputs=[kl.from_numpy(x.copy(), dtype=kl.float64), n, out, acc],
              tangent=True, tan_inputs=[kl.from_numpy(u.copy(), dtype=kl.float64), None,
                                        t_out, t_acc])
    assert not np.any(out.numpy()) and not np.any(acc.numpy()), "a tangent launch wrote"
    j_out, j_acc = kl.jvp(kernel, N, inputs=[kl.from_numpy(x.copy(), dtype=kl.float64), n],
                          outputs=[out, acc],
                          tan_inputs=[kl.from_numpy(u.copy(), dtype=kl.float64), None])
    for t, j in ((t_out, j_out), (t_acc, j_acc)):
        assert np.allclose(t.numpy(), j.numpy(), rtol=1e-12, atol=1e-12), \
            f"tangent launch {t.numpy()} vs kl.jvp {j.numpy()}"
    return out.numpy().copy(), acc.numpy().copy(), j_out.numpy().copy(), j_acc.numpy().copy()


def loss_tape(kernel, x, n, w):
    xa = kl.from_numpy(x.copy(), dtype=kl.float64, requires_grad=True)
    out = kl.zeros(N, dtype=kl.float64, requires_grad=True)
    acc = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    wo, wa = kl.from_numpy(w[:N].copy()), kl.from_numpy(w[N:].copy())
    tape = kl.Tape()
    with tape:
        kl.launch(kernel, N, inputs=[xa, n, out, acc])
        kl.launch(tanh_loss, N, inputs=[out, wo, loss])
        kl.launch(tanh_loss, 2, inputs=[acc, wa, loss])
    return tape, xa, loss


def loss_gradient(kernel, x, n, w):
    tape, xa, loss = loss_tape(kernel, x, n, w)
    tape.backward(loss)
    return xa.grad.numpy().copy()


def check_program(source: str, seed: int, stats: Counter):
    import linecache
    kernel, filename = load_kernel(source)
    try:
        rng = np.random.default_rng(seed)
        x, n = sample_inputs(rng), int(rng.integers(0, 5))
        u = rng.normal(size=M)
        w_out, w_acc = rng.normal(size=N), rng.normal(size=2)
        where = f"\nx = {x.tolist()}, u = {u.tolist()}, n = {n}\n--- source:\n{source}"
        llvm = tangent(kernel, "llvm", x, n, u)
        interp = tangent(kernel, "interp", x, n, u)
        plain = forward(kernel, "llvm", x, n)
        for k, name in enumerate(["out", "acc"]):
            assert np.allclose(llvm[k], plain[k], rtol=1e-12, atol=1e-12), \
                f"{name}: tangent launch {llvm[k]} vs plain launch {plain[k]}{where}"
        for k, name in enumerate(["out", "acc", "tan out", "tan acc"]):
            assert np.allclose(llvm[k], interp[k], rtol=1e-9, atol=1e-12), \
                f"{name}: LLVM {llvm[k]} vs interpreter {interp[k]}{where}"
        hi, lo = forward(kernel, "llvm", x + H * u, n), forward(kernel, "llvm", x - H * u, n)
        for k, name in enumerate(["out", "acc"]):
            fd = (hi[k] - lo[k]) / (2 * H)
            scale = 1.0 + np.max(np.abs(fd))
            assert np.allclose(llvm[2 + k], fd, rtol=1e-5, atol=1e-6 * scale), \
                f"J·u ({name}): tangent {llvm[2 + k]} vs finite differences {fd}{where}"
        vjp = gradient(kernel, "llvm", x, n, w_out, w_acc)[2]
        lhs, rhs = w_out @ llvm[2] + w_acc @ llvm[3], u @ vjp
        assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9 * (1 + abs(rhs))), \
            f"<J u, w> = {lhs} but <u, J^T w> = {rhs}{where}"
        w = np.concatenate([w_out, w_acc])
        tape, xa, loss = loss_tape(kernel, x, n, w)
        hv = tape.hvp(loss, {xa: u})[xa].numpy()
        fd = (loss_gradient(kernel, x + H2 * u, n, w)
              - loss_gradient(kernel, x - H2 * u, n, w)) / (2 * H2)
        scale = 1.0 + np.max(np.abs(fd))
        assert np.allclose(hv, fd, rtol=1e-5, atol=1e-6 * scale), \
            f"H·u: tape.hvp {hv} vs finite differences of gradients {fd}{where}"
        stats["programs"] += 1
        stats["with loops" if ("for " in source or "while " in source) else "straight-line"] += 1
    finally:
        linecache.cache.pop(filename, None)


@pytest.fixture(autouse=True)
def _llvm_afterwards(monkeypatch):
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")


@pytest.mark.parametrize("loops", [False, True], ids=["straight-line", "control-flow"])
def test_tangents_and_hvps_agree_with_finite_differences_and_the_reverse_mode(pytestconfig,
                                                                            loops):
    stats: Counter = Counter()
    start = time.perf_counter()

    @fuzz_settings(programs(pytestconfig, 25, 260))
    @given(st.data())
    def one(data):
        c = Choices(data)
        check_program(SmoothProgram(c, loops).source(), c.int(0, 2**31), stats)

    one()
    print(f"\nforward-mode fuzzing ({'loops' if loops else 'straight-line'}): "
          f"{stats['programs']} programs in {time.perf_counter() - start:.0f} s, "
          f"0 mismatches ({dict(stats)})")


def in_place_loss(kernel, x, y0, n, w):
    """Two in-place steps, then Σ w·tanh(out, acc, y): (tape, x array, y array, loss)."""
    xa = kl.from_numpy(x.copy(), dtype=kl.float64, requires_grad=True)
    y = kl.from_numpy(y0.copy(), dtype=kl.float64, requires_grad=True)
    out = kl.zeros(N, dtype=kl.float64, requires_grad=True)
    acc = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        for _ in range(IN_PLACE_STEPS):
            kl.launch(kernel, N, inputs=[xa, n, out, acc, y])
        for arr, ws in ((out, w[:N]), (acc, w[N:N + 2]), (y, w[N + 2:])):
            kl.launch(tanh_loss, len(ws), inputs=[arr, kl.from_numpy(ws.copy()), loss])
    return tape, xa, y, loss


def check_in_place_hvp(source: str, seed: int, stats: Counter):
    import linecache
    kernel, filename = load_kernel(source)
    try:
        rng = np.random.default_rng(seed)
        x, n = sample_inputs(rng), int(rng.integers(0, 5))
        y0 = rng.uniform(-1.0, 1.0, N)
        ux, uy = rng.normal(size=M), rng.normal(size=N)
        w = rng.normal(size=2 * N + 2)
        tape, xa, y, loss = in_place_loss(kernel, x, y0, n, w)
        hv = tape.hvp(loss, {xa: ux, y: uy})
        hv = np.concatenate([hv[xa].numpy(), hv[y].numpy()])

        def grad(sign):
            t, xs, ys, ls = in_place_loss(kernel, x + sign * H2 * ux, y0 + sign * H2 * uy, n,
                                          w)
            t.backward(ls)
            return np.concatenate([xs.grad.numpy(), ys.grad.numpy()])
        fd = (grad(1) - grad(-1)) / (2 * H2)
        scale = 1.0 + np.max(np.abs(fd))
        assert np.allclose(hv, fd, rtol=1e-5, atol=1e-6 * scale), \
            f"H·u (in place): tape.hvp {hv} vs finite differences of gradients {fd}" \
            f"\nx = {x.tolist()}, y = {y0.tolist()}, n = {n}\n--- source:\n{source}"
        stats["programs"] += 1
    finally:
        linecache.cache.pop(filename, None)


def test_hvps_of_in_place_programs_agree_with_finite_differences(pytestconfig):
    stats: Counter = Counter()
    start = time.perf_counter()

    @fuzz_settings(programs(pytestconfig, 10, 200))
    @given(st.data())
    def one(data):
        c = Choices(data)
        check_in_place_hvp(InPlaceProgram(c, c.chance(0.5)).source(), c.int(0, 2**31), stats)

    one()
    print(f"\nin-place HVP fuzzing: {stats['programs']} programs in "
          f"{time.perf_counter() - start:.0f} s, 0 mismatches")
