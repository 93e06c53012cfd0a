"""Forward mode (tangent kernels) and Hessian-vector products, on every backend.

* every differentiable builtin: the tangent launch's J·u against float64 central finite
  differences of the builtin's NumPy formula (the cases of tests/test_builtin_grads.py);
* kernels with loops, while/break, funcs, vectors and matrices: J·u against finite
  differences and ⟨J·u, w⟩ against the reverse mode's ⟨u, Jᵀ·w⟩;
* a ``@kl.func_grad`` custom gradient is what forward mode uses;
* in-place updates, atomics, and the clear errors;
* ``Tape.hvp`` against analytic Hessians (Rosenbrock over two launches, |p|⁴ on vec3d,
  a loss through atomic_max).
"""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import GradientError, LaunchError
from test_builtin_grads import ATOL, GRAD_CASES, GRAD_PARAMS, N_THREADS, RTOL, _fd_jacobian, \
    _sample

F = kl.float64


# ---- every builtin -------------------------------------------------------------------------

@pytest.mark.parametrize("name, k", GRAD_PARAMS)
def test_builtin_tangent_matches_finite_differences(backend, rng, name, k):
    if k is None:
        pytest.skip(f"'{name}' has no case (test_builtin_grads.py fails for it)")
    case = GRAD_CASES[name][k]
    inputs = [kl.array(_sample(rng, t, dom), dtype=t) for t, dom in case.inputs]
    values = [a.numpy().astype(np.float64) for a in inputs]
    tangents = [rng.normal(size=v.shape) for v in values]
    out, t_out = kl.zeros(N_THREADS, dtype=case.out), kl.zeros(N_THREADS, dtype=case.out)
    kl.launch(case.kernel, N_THREADS, inputs=inputs, outputs=[out], tangent=True,
              tan_inputs=[kl.array(t, dtype=a.dtype) for t, a in zip(tangents, inputs)],
              tan_outputs=[t_out])
    fd = _fd_jacobian(case, values)
    expected = sum(fd[j] @ t.reshape(-1) for j, t in enumerate(tangents))
    np.testing.assert_allclose(t_out.numpy().reshape(-1), expected, rtol=RTOL, atol=ATOL,
                               err_msg=f"J·u of {name} ({case.variant})")


# ---- control flow, funcs, vectors, matrices ---------------------------------------------

@kl.func
def bump(a: F, b: kl.vec3d):
    return kl.sin(a) * kl.length(b) + a * b[1]


@kl.kernel
def program(x: kl.array(dtype=F), p: kl.array(dtype=kl.vec3d), m: kl.array(dtype=kl.mat33d),
            s: F, n: int, y: kl.array(dtype=F), q: kl.array(dtype=kl.vec3d)):
    i = kl.tid()
    acc = x[i]
    v = p[i]
    for k in range(n):  # loop-carried scalar and vector state
        acc = 0.5 * acc + bump(acc, v) * s
        v = m[i] * v * 0.3 + kl.vec3d(acc, 1.0, 0.0)
        if acc > 10.0:
            break
    w = int(0)
    while w < 3:
        w += 1
        if x[i] > 0.0:
            acc = acc + kl.tanh(kl.dot(v, v))
        else:
            acc = acc * kl.cos(acc)
            continue
        acc = acc * 0.9
    y[i] = acc + kl.determinant(m[i]) * s
    q[i] = kl.cross(v, p[i]) + kl.transpose(m[i]) * v


def _program_inputs(rng, n_threads=3):
    return [rng.uniform(-1, 1, n_threads), rng.uniform(-1, 1, (n_threads, 3)),
            rng.uniform(-1, 1, (n_threads, 3, 3)), 0.7]


def _run_program(values, n=4):
    x, p, m, s = values
    args = [kl.array(x, dtype=F), kl.array(p, dtype=kl.vec3d), kl.array(m, dtype=kl.mat33d),
            s, n]
    y, q = kl.zeros(len(x), dtype=F), kl.zeros(len(x), dtype=kl.vec3d)
    kl.launch(program, len(x), inputs=args, outputs=[y, q])
    return np.concatenate([y.numpy(), q.numpy().reshape(-1)])


def test_loops_branches_funcs_vectors_matrices(backend, rng):
    values = _program_inputs(rng)
    tangents = [rng.normal(size=np.shape(v)) for v in values[:3]] + [0.4]
    x, p, m, s = values
    ins = [kl.array(x, dtype=F), kl.array(p, dtype=kl.vec3d), kl.array(m, dtype=kl.mat33d),
           s, 4]
    y, q = kl.zeros(3, dtype=F), kl.zeros(3, dtype=kl.vec3d)
    ty, tq = kl.zeros(3, dtype=F), kl.zeros(3, dtype=kl.vec3d)
    tx, tp, tm, ts = tangents
    kl.launch(program, 3, inputs=ins, outputs=[y, q], tangent=True,
              tan_inputs=[kl.array(tx, dtype=F), kl.array(tp, dtype=kl.vec3d),
                          kl.array(tm, dtype=kl.mat33d), ts, None],
              tan_outputs=[ty, tq])
    jvp = np.concatenate([ty.numpy(), tq.numpy().reshape(-1)])
    h = 1e-6
    plus = _run_program([v + h * t for v, t in zip(values, tangents)])
    minus = _run_program([v - h * t for v, t in zip(values, tangents)])
    # a tangent launch computes the tangents only: the outputs are left as they were
    assert not np.any(y.numpy()) and not np.any(q.numpy())
    np.testing.assert_allclose(jvp, (plus - minus) / (2 * h), rtol=1e-5, atol=1e-7)
    # kl.jvp writes both, in one launch
    ty2, tq2 = kl.jvp(program, 3, inputs=ins, outputs=[y, q],
                      tan_inputs=[kl.array(tx, dtype=F), kl.array(tp, dtype=kl.vec3d),
                                  kl.array(tm, dtype=kl.mat33d), ts, None])
    np.testing.assert_allclose(np.concatenate([y.numpy(), q.numpy().reshape(-1)]),
                               _run_program(values), rtol=1e-12)
    np.testing.assert_allclose(np.concatenate([ty2.numpy(), tq2.numpy().reshape(-1)]), jvp,
                               rtol=1e-12)
    # <J u, w> = <u, J^T w>, with J^T w from the reverse mode (the scalar s's adjoint is
    # not reported by an adjoint launch, so s is held fixed here)
    w = rng.normal(size=jvp.size)
    kl.launch(program, 3, inputs=ins, outputs=[ty, tq], tangent=True,
              tan_inputs=[kl.array(tx, dtype=F), kl.array(tp, dtype=kl.vec3d),
                          kl.array(tm, dtype=kl.mat33d), None, None],
              tan_outputs=[ty.zero_() or ty, tq.zero_() or tq])
    jvp_fixed_s = np.concatenate([ty.numpy(), tq.numpy().reshape(-1)])
    gx, gp, gm = (kl.zeros_like(a) for a in ins[:3])
    kl.launch(program, 3, inputs=ins, outputs=[y, q], adjoint=True,
              adj_inputs=[gx, gp, gm, 0.0, 0],
              adj_outputs=[kl.array(w[:3], dtype=F), kl.array(w[3:].reshape(3, 3),
                                                               dtype=kl.vec3d)])
    vjp = tx @ gx.numpy() + np.sum(tp * gp.numpy()) + np.sum(tm * gm.numpy())
    assert np.isclose(w @ jvp_fixed_s, vjp, rtol=1e-10)


# ---- custom gradients ----------------------------------------------------------------------

@kl.func
def square(a: F, b: F):
    return a * a + b


@kl.func_grad(square)
def square_grad(a: F, b: F, adj_ret: F):  # deliberately 3a, not 2a: forward mode must use it
    kl.adjoint[a] += 3.0 * a * adj_ret
    kl.adjoint[b] += adj_ret


@kl.func
def spread(a: F):
    return kl.vec3d(a, a * a, kl.sin(a))


@kl.func_grad(spread)
def spread_grad(a: F, adj_ret: kl.vec3d):  # the true gradient, component by component
    kl.adjoint[a] += adj_ret[0] + 2.0 * a * adj_ret[1] + kl.cos(a) * adj_ret[2]


@kl.kernel
def custom(x: kl.array(dtype=F), y: kl.array(dtype=F), z: kl.array(dtype=kl.vec3d)):
    i = kl.tid()
    y[i] = square(x[i], 2.0 * x[i])
    z[i] = spread(x[i]) * 2.0


def test_a_custom_gradient_is_what_forward_mode_uses(backend):
    x, u = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, -2.0])
    y, z = kl.zeros(3, dtype=F), kl.zeros(3, dtype=kl.vec3d)
    ty, tz = kl.jvp(custom, 3, inputs=[kl.array(x, dtype=F)], outputs=[y, z],
                    tan_inputs=[kl.array(u, dtype=F)])
    np.testing.assert_allclose(y.numpy(), x * x + 2 * x)
    np.testing.assert_allclose(ty.numpy(), (3 * x + 2) * u)  # the custom rule, not 2x + 2
    expected = 2 * np.stack([u, 2 * x * u, np.cos(x) * u], axis=1)
    np.testing.assert_allclose(tz.numpy(), expected, rtol=1e-12)


# ---- in-place updates and atomics -----------------------------------------------------

@kl.kernel
def in_place(x: kl.array(dtype=F), v: kl.array(dtype=F)):
    i = kl.tid()
    x[i] = x[i] * x[i] + v[i]
    x[i] = kl.sin(x[i])


def test_in_place_updates_are_exact_in_forward_mode(backend):
    """x's one tangent array carries the tangent before the launch in and the tangent after
    it out. The tangent launch leaves x itself alone (its kernel reads x back after the
    first store: a per-thread local stands in for the element); kl.jvp updates it."""
    x0, v = np.array([0.3, -0.4]), np.array([0.1, 0.2])
    expected = np.cos(x0 * x0 + v) * 2 * x0 * [1.0, -2.0]
    x, tx = kl.array(x0, dtype=F), kl.array([1.0, -2.0], dtype=F)
    kl.launch(in_place, 2, inputs=[x, kl.array(v, dtype=F)], tangent=True,
              tan_inputs=[tx, None])
    np.testing.assert_array_equal(x.numpy(), x0)
    np.testing.assert_allclose(tx.numpy(), expected)
    tx = kl.array([1.0, -2.0], dtype=F)
    assert kl.jvp(in_place, 2, inputs=[x, kl.array(v, dtype=F)], tan_inputs=[tx, None]) == []
    np.testing.assert_allclose(x.numpy(), np.sin(x0 * x0 + v))
    np.testing.assert_allclose(tx.numpy(), expected)


@kl.kernel
def gather_back(x: kl.array(dtype=F), y: kl.array(dtype=F), z: kl.array(dtype=F)):
    i = kl.tid()
    y[2 * i] = x[i] * x[i]      # not the thread's own element (2 i): no local stands in
    y[2 * i + 1] = x[i]
    z[i] = kl.sin(y[2 * i]) * y[2 * i + 1]


def test_a_tangent_launch_reading_back_another_index_writes_a_copy(backend):
    """y is written and read back at 2i and 2i + 1: the tangents-only kernel keeps those
    writes, on a scratch copy, so y stays as it was and the tangent is exact."""
    x0, u = np.array([0.3, -0.7, 1.1]), np.array([1.0, 0.5, -2.0])
    y, z = kl.full(6, 5.0, dtype=F), kl.zeros(3, dtype=F)
    ty, tz = kl.zeros(6, dtype=F), kl.zeros(3, dtype=F)
    kl.launch(gather_back, 3, inputs=[kl.array(x0, dtype=F)], outputs=[y, z], tangent=True,
              tan_inputs=[kl.array(u, dtype=F)], tan_outputs=[ty, tz])
    assert np.all(y.numpy() == 5.0) and not np.any(z.numpy())
    # z = sin(x²) x: dz = (cos(x²) 2x · x + sin(x²)) u
    np.testing.assert_allclose(tz.numpy(), (np.cos(x0 ** 2) * 2 * x0 ** 2 + np.sin(x0 ** 2))
                               * u, rtol=1e-12)
    np.testing.assert_allclose(ty.numpy()[0::2], 2 * x0 * u, rtol=1e-12)
    np.testing.assert_allclose(ty.numpy()[1::2], u, rtol=1e-12)
    # and through Tape.hvp (its sweep runs the same kernel, y on a scratch copy):
    # Σ z = Σ sin(x²) x has the diagonal Hessian 6x cos(x²) - 4x³ sin(x²)
    x = kl.array(x0, dtype=F, requires_grad=True)
    y, z = kl.zeros(6, dtype=F, requires_grad=True), kl.zeros(3, dtype=F, requires_grad=True)
    loss = kl.zeros(1, dtype=F, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(gather_back, 3, inputs=[x], outputs=[y, z])
        kl.launch(rosen_sum, 3, inputs=[z, kl.zeros(3, dtype=F)], outputs=[loss])
    hv = tape.hvp(loss, {x: u})[x].numpy()
    zz = np.sin(x0 ** 2) * x0  # loss = Σ 100 z²: H = 200 (z'² + z z'')
    d1 = np.cos(x0 ** 2) * 2 * x0 ** 2 + np.sin(x0 ** 2)
    d2 = 6 * x0 * np.cos(x0 ** 2) - 4 * x0 ** 3 * np.sin(x0 ** 2)
    np.testing.assert_allclose(hv, 200 * (d1 ** 2 + zz * d2) * u, rtol=1e-12)


@kl.kernel
def accumulate(x: kl.array(dtype=F), total: kl.array(dtype=F)):
    i = kl.tid()
    kl.atomic_add(total, 0, x[i] * x[i])
    kl.atomic_sub(total, 1, kl.exp(x[i]))


@kl.kernel
def biggest(x: kl.array(dtype=F), m: kl.array(dtype=F)):
    i = kl.tid()
    kl.atomic_max(m, 0, x[i] * x[i])


@kl.kernel
def sine(m: kl.array(dtype=F), loss: kl.array(dtype=F)):
    loss[0] = kl.sin(m[0])


def test_atomics(backend):
    x0, u = np.array([0.3, -0.9, 0.5]), np.array([1.0, 2.0, -1.0])
    total, t_total = kl.zeros(2, dtype=F), kl.zeros(2, dtype=F)
    kl.launch(accumulate, 3, inputs=[kl.array(x0, dtype=F)], outputs=[total], tangent=True,
              tan_inputs=[kl.array(u, dtype=F)], tan_outputs=[t_total])
    np.testing.assert_allclose(t_total.numpy(), [2 * x0 @ u, -np.exp(x0) @ u])
    with pytest.raises(GradientError, match="atomic_max has no tangent in a tangent launch"):
        kl.launch(biggest, 3, inputs=[kl.array(x0, dtype=F)], outputs=[kl.zeros(1, dtype=F)],
                  tangent=True)
    # through a tape, the winner is known: H·v of sin(max x_i²)
    x = kl.array(x0, dtype=F, requires_grad=True)
    m = kl.zeros(1, dtype=F, requires_grad=True)
    loss = kl.zeros(1, dtype=F, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(biggest, 3, inputs=[x], outputs=[m])
        kl.launch(sine, 1, inputs=[m], outputs=[loss])
    hv = tape.hvp(loss, {x: u})[x].numpy()
    k, mk = 1, x0[1] ** 2  # x_1² wins
    expected = np.zeros(3)
    expected[k] = (-np.sin(mk) * 4 * x0[k] ** 2 + np.cos(mk) * 2) * u[k]
    np.testing.assert_allclose(hv, expected, rtol=1e-12)


# ---- Hessian-vector products against analytic Hessians ---------------------------------

@kl.kernel
def residuals(x: kl.array(dtype=F), r: kl.array(dtype=F), d: kl.array(dtype=F)):
    i = kl.tid()
    r[i] = x[i + 1] - x[i] * x[i]
    d[i] = 1.0 - x[i]


@kl.kernel
def rosen_sum(r: kl.array(dtype=F), d: kl.array(dtype=F), loss: kl.array(dtype=F)):
    i = kl.tid()
    kl.atomic_add(loss, 0, 100.0 * r[i] * r[i] + d[i] * d[i])


def rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] -= 400 * x[i]
        h[i + 1, i] -= 400 * x[i]
    return h


def test_hvp_of_rosenbrock_over_two_launches(backend, rng):
    x0, v = rng.uniform(-1.5, 1.5, 6), rng.normal(size=6)
    x = kl.array(x0, dtype=F, requires_grad=True)
    r, d = kl.zeros(5, dtype=F, requires_grad=True), kl.zeros(5, dtype=F, requires_grad=True)
    loss = kl.zeros(1, dtype=F, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(residuals, 5, inputs=[x], outputs=[r, d])
        kl.launch(rosen_sum, 5, inputs=[r, d], outputs=[loss])
    hv = tape.hvp(loss, {x: kl.array(v, dtype=F)})
    np.testing.assert_allclose(hv[x].numpy(), rosenbrock_hessian(x0) @ v, rtol=1e-12,
                               atol=1e-10)
    # the tape's own gradients are untouched, and backward still works afterwards
    assert not np.any(x.grad.numpy())
    tape.backward(loss)
    g = np.zeros(6)
    g[:-1] += -400 * x0[:-1] * (x0[1:] - x0[:-1] ** 2) - 2 * (1 - x0[:-1])
    g[1:] += 200 * (x0[1:] - x0[:-1] ** 2)
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-12, atol=1e-10)


@kl.kernel
def quartic(p: kl.array(dtype=kl.vec3d), loss: kl.array(dtype=F)):
    i = kl.tid()
    s = kl.float64(0.0)
    for k in range(2):  # a loop, so the adjoint pushes and pops its state
        s = s + 0.5 * kl.dot(p[i], p[i])
    kl.atomic_add(loss, 0, s * s)


def test_hvp_on_vectors_through_a_loop(backend, rng):
    p0, v = rng.uniform(-1, 1, (4, 3)), rng.normal(size=(4, 3))
    p = kl.array(p0, dtype=kl.vec3d, requires_grad=True)
    loss = kl.zeros(1, dtype=F, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(quartic, 4, inputs=[p], outputs=[loss])
    hv = tape.hvp(loss, {p: v})[p].numpy()
    for i in range(4):  # |p|^4: H = 4|p|² I + 8 p pᵀ
        h = 4 * (p0[i] @ p0[i]) * np.eye(3) + 8 * np.outer(p0[i], p0[i])
        np.testing.assert_allclose(hv[i], h @ v[i], rtol=1e-12)


def test_jvp_on_a_tape_is_recorded_as_its_forward_a_tangent_launch_is_not(backend):
    x0 = np.array([0.3, -0.4])
    x = kl.array(x0, dtype=F, requires_grad=True)
    total = kl.zeros(2, dtype=F, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(accumulate, 2, inputs=[x], outputs=[total], tangent=True,
                  tan_inputs=[kl.array([1.0, 1.0], dtype=F)], tan_outputs=[None])
        assert tape.launches == [] and not np.any(total.numpy())  # changed nothing
        kl.jvp(accumulate, 2, inputs=[x], outputs=[total],
               tan_inputs=[kl.array([1.0, 1.0], dtype=F)])
    assert len(tape.launches) == 1
    np.testing.assert_allclose(total.numpy(), [x0 @ x0, -np.exp(x0).sum()])
    tape.backward(grads={total: kl.array([1.0, 2.0], dtype=F)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * x0 - 2 * np.exp(x0))


# ---- listings and errors -------------------------------------------------------------------

def test_listings():
    text = kl.source(accumulate, "ir", tangent=True)
    assert text.startswith("tangent kernel accumulate(") and "%tan_x" in text
    assert "atomic_add(%tan_total" in text
    text = kl.source(quartic, "ir", adjoint=True, tangent=True)
    assert text.startswith("tangent of adjoint kernel quartic(")
    assert "# ---- reverse ----" in text and "%tan_adj_p" in text
    cuda = kl.source(program, "cuda", tangent=True)
    assert "program_tan(" in cuda and "(tangent)" in cuda


@kl.kernel
def saxpy(x: kl.array(dtype=F), y: kl.array(dtype=F), z: kl.array(dtype=F), a: F):
    i = kl.tid()
    z[i] = a * x[i] + y[i]


def test_the_tangents_only_kernel_reads_and_writes_only_what_tangents_need(backend):
    """dz = a dx + da x + dy: the tangent launch's kernel loads x, dx, dy and stores dz;
    y is never loaded, z never stored (kl.jvp's kernel does both), and z keeps its
    values."""
    from kernlab.ir.nodes import Op
    func = saxpy.tangent_variant(effects=False)
    params = {p.value: p.name for p in func.params}
    loads = sorted(params[i.args[0]] for i in func.body.walk() if i.op is Op.LOAD)
    stores = [params[i.args[0]] for i in func.body.walk() if i.op is Op.STORE]
    assert loads == ["tan_x", "tan_y", "x"] and stores == ["tan_z"]
    x, dx, dy = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.ones(3)
    dz, z = kl.zeros(3, dtype=F), kl.full(3, 7.0, dtype=F)
    kl.launch(saxpy, 3, inputs=[kl.array(x, dtype=F), kl.zeros(3, dtype=F), z, 2.0],
              tangent=True, tan_inputs=[kl.array(dx, dtype=F), kl.array(dy, dtype=F), dz,
                                        0.25])
    np.testing.assert_allclose(dz.numpy(), 2.0 * dx + 0.25 * x + dy)
    assert np.all(z.numpy() == 7.0)


def test_errors():
    x = kl.zeros(3, dtype=F)
    with pytest.raises(LaunchError, match="tan_inputs needs one entry per input"):
        kl.launch(accumulate, 3, inputs=[x], outputs=[kl.zeros(2, dtype=F)], tangent=True,
                  tan_inputs=[None, None])
    with pytest.raises(LaunchError, match="'n' .* is not a float, so it has no tangent"):
        kl.launch(program, 1, inputs=[x, kl.zeros(3, dtype=kl.vec3d),
                                      kl.zeros(3, dtype=kl.mat33d), 1.0, 2],
                  outputs=[x, kl.zeros(3, dtype=kl.vec3d)], tangent=True,
                  tan_inputs=[None, None, None, 0.0, 1])
    with pytest.raises(LaunchError, match="tangent of 'x' has shape"):
        kl.launch(accumulate, 3, inputs=[x], outputs=[kl.zeros(2, dtype=F)], tangent=True,
                  tan_inputs=[kl.zeros(4, dtype=F)])
    with pytest.raises(LaunchError, match="cannot be an adjoint launch"):
        kl.launch(accumulate, 3, inputs=[x], outputs=[kl.zeros(2, dtype=F)], tangent=True,
                  adjoint=True)
    tape = kl.Tape()
    with pytest.raises(RuntimeError, match="one-element array"):
        tape.hvp(x, {x: np.zeros(3)})


def test_hvp_through_an_array_view_is_refused_not_zero():
    """Tangents are kept per array object: a launch on a view of the seeded array would see
    none of its direction and the product would silently be zero. Refused."""
    @kl.kernel
    def cubes(x: kl.array(dtype=kl.float64), loss: kl.array(dtype=kl.float64)):
        i = kl.tid()
        kl.atomic_add(loss, 0, x[i] * x[i] * x[i])

    a = kl.array(np.arange(1.0, 7.0), dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(cubes, 4, inputs=[a[:4], loss])
    with pytest.raises(kl.GradientError, match="does not follow array views"):
        tape.hvp(loss, {a: kl.array(np.ones(6), dtype=kl.float64)})
    whole = kl.clone(a[:4])  # on a whole array it is H v = 6 x v
    loss.zero_()
    with kl.Tape() as tape:
        kl.launch(cubes, 4, inputs=[whole, loss])
    hv = tape.hvp(loss, {whole: kl.array(np.ones(4), dtype=kl.float64)})[whole]
    np.testing.assert_allclose(hv.numpy(), 6.0 * np.arange(1.0, 5.0))
