"""Hessian-vector products (Tape.hvp) of simulations written in place.

A damped pendulum per element, stepped K times by one kernel that overwrites its state,
x and v, in place (``v[i] = v[i] - (sin(x[i]) + c v[i]²) dt; x[i] = x[i] + v[i] dt``), then a
scalar loss. The tape keeps x and v before each step (autodiff/inplace.py); the HVP's
tangent sweep runs on those copies with the tangents from before each step, and the
tangent of each adjoint reads them. H·u with respect to the state before the first step is
checked against

* the analytic Hessian: the step map's first and second derivatives written out and
  chained in NumPy (J' = DF J, T' = Jᵀ D²F J + DF T), then H = Jᵀ ∇²L J + Σ ∇L_m T_m;
* float64 central differences of the tape's gradients along u.
"""
import numpy as np
import pytest

import kernlab as kl

F = kl.float64
C, DT, STEPS = 0.3, 0.1, 6


@kl.kernel
def pendulum_step(x: kl.array(dtype=F), v: kl.array(dtype=F), c: F, dt: F):
    i = kl.tid()
    v[i] = v[i] - (kl.sin(x[i]) + c * v[i] * v[i]) * dt
    x[i] = x[i] + v[i] * dt


@kl.kernel
def energy(x: kl.array(dtype=F), v: kl.array(dtype=F), loss: kl.array(dtype=F)):
    i = kl.tid()
    kl.atomic_add(loss, 0, x[i] * x[i] * v[i] + kl.cos(v[i]))


def run(x0, v0, steps=STEPS):
    """The simulation on a tape: (tape, x, v, loss)."""
    x = kl.array(x0, dtype=F, requires_grad=True)
    v = kl.array(v0, dtype=F, requires_grad=True)
    loss = kl.zeros(1, dtype=F, requires_grad=True)
    tape = kl.Tape()
    with tape:
        for _ in range(steps):
            kl.launch(pendulum_step, len(x0), inputs=[x, v, C, DT])
        kl.launch(energy, len(x0), inputs=[x, v], outputs=[loss])
    return tape, x, v, loss


def gradient(x0, v0):
    tape, x, v, loss = run(x0, v0)
    tape.backward(loss)
    return x.grad.numpy().copy(), v.grad.numpy().copy()


def analytic_hvp(x0, v0, ux, uv):
    """H·u of the loss with respect to (x0, v0), element by element (each element's state
    evolves alone, so H is block diagonal with 2×2 blocks)."""
    hx, hv = np.zeros_like(x0), np.zeros_like(v0)
    for i in range(len(x0)):
        s = np.array([x0[i], v0[i]])
        J, T = np.eye(2), np.zeros((2, 2, 2))  # ds/ds0, d²s/ds0²
        for _ in range(STEPS):
            x, v = s
            v1 = v - (np.sin(x) + C * v * v) * DT
            x1 = x + v1 * DT
            dv = np.array([-np.cos(x) * DT, 1 - 2 * C * v * DT])         # dv1/d(x, v)
            ddv = np.array([[np.sin(x) * DT, 0.0], [0.0, -2 * C * DT]])  # d²v1/d(x, v)²
            DF = np.array([np.array([1.0, 0.0]) + dv * DT, dv])          # rows: x1, v1
            D2F = np.array([ddv * DT, ddv])
            T = np.einsum("mab,ai,bj->mij", D2F, J, J) + np.einsum("mn,nij->mij", DF, T)
            J = DF @ J
            s = np.array([x1, v1])
        x, v = s
        grad = np.array([2 * x * v, x * x - np.sin(v)])
        hess = np.array([[2 * v, 2 * x], [2 * x, -np.cos(v)]])
        H = J.T @ hess @ J + np.einsum("m,mij->ij", grad, T)
        hx[i], hv[i] = H @ np.array([ux[i], uv[i]])
    return hx, hv


def test_hvp_of_an_in_place_simulation(backend, rng):
    n = 5
    x0, v0 = rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)
    ux, uv = rng.normal(size=n), rng.normal(size=n)
    tape, x, v, loss = run(x0, v0)
    assert tape.memory().snapshots == 2 * STEPS  # x and v before each step
    hv = tape.hvp(loss, {x: ux, v: uv})
    ax, av = analytic_hvp(x0, v0, ux, uv)
    np.testing.assert_allclose(hv[x].numpy(), ax, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hv[v].numpy(), av, rtol=1e-10, atol=1e-12)
    h = 1e-5
    gp, gm = gradient(x0 + h * ux, v0 + h * uv), gradient(x0 - h * ux, v0 - h * uv)
    np.testing.assert_allclose(hv[x].numpy(), (gp[0] - gm[0]) / (2 * h), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hv[v].numpy(), (gp[1] - gm[1]) / (2 * h), rtol=1e-6, atol=1e-8)
    # the forward's state and the tape's gradients are untouched; backward still works
    assert not np.any(x.grad.numpy()) and not np.any(v.grad.numpy())
    tape.backward(loss)
    g = gradient(x0, v0)
    np.testing.assert_allclose(x.grad.numpy(), g[0], rtol=1e-12)


def test_hvp_along_one_array_of_an_in_place_simulation(backend, rng):
    """A direction along x only: v's tangent starts at zero (no entry in the dict), and
    the product still has both blocks' x column."""
    n = 3
    x0, v0 = rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)
    ux = rng.normal(size=n)
    tape, x, v, loss = run(x0, v0)
    hx = tape.hvp(loss, {x: ux})[x].numpy()
    np.testing.assert_allclose(hx, analytic_hvp(x0, v0, ux, np.zeros(n))[0], rtol=1e-10,
                               atol=1e-12)


@kl.kernel
def record(x: kl.array(dtype=F), y: kl.array(dtype=F)):
    i = kl.tid()
    y[i] = kl.sin(x[i])


@kl.kernel
def cube_in_place(x: kl.array(dtype=F)):
    i = kl.tid()
    x[i] = x[i] * x[i] * x[i]


@kl.kernel
def mix(x: kl.array(dtype=F), y: kl.array(dtype=F), loss: kl.array(dtype=F)):
    i = kl.tid()
    kl.atomic_add(loss, 0, x[i] * y[i])


def test_hvp_with_a_copy_on_write(backend, rng):
    """record reads x nonlinearly (sin), then cube_in_place overwrites x: the tape copies x
    before the overwrite for record's adjoint (copy on write), and the HVP reads the tangent
    of x from that time. loss = Σ x³ sin(x) over the values before: H = d²/dx² of
    x³ sin x = 6x sin x + 6x² cos x - x³ sin x (diagonal)."""
    x0, u = rng.uniform(-1.0, 1.0, 4), rng.normal(size=4)
    x = kl.array(x0, dtype=F, requires_grad=True)
    y = kl.zeros(4, dtype=F, requires_grad=True)
    loss = kl.zeros(1, dtype=F, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(record, 4, inputs=[x], outputs=[y])
        kl.launch(cube_in_place, 4, inputs=[x])
        kl.launch(mix, 4, inputs=[x, y], outputs=[loss])
    hv = tape.hvp(loss, {x: u})[x].numpy()
    d2 = 6 * x0 * np.sin(x0) + 6 * x0 ** 2 * np.cos(x0) - x0 ** 3 * np.sin(x0)
    np.testing.assert_allclose(hv, d2 * u, rtol=1e-12, atol=1e-12)


def test_hvp_refuses_an_in_place_array_changed_before_it_runs():
    x0 = np.array([0.2, 0.4])
    tape, x, v, loss = run(x0, x0.copy(), steps=2)
    x.fill_(0.0)  # after the recorded reads: the final state the loss read is gone
    with pytest.raises(kl.GradientError, match="was modified"):
        tape.hvp(loss, {x: np.ones(2)})
