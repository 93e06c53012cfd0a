"""svd3, svd2, qr3 and eig3: the factors against NumPy (np.linalg.svd, qr, eigvalsh) and
their defining identities, both call forms (tuple result and out-arguments), reverse and
forward derivatives against float64 central differences and against the analytic
derivatives of singular values and eigenvalues, and, where warp-lang is installed, Warp's
own factors for the same inputs."""
import numpy as np
import pytest

import kernlab as kl

N = 4


def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return kl.kernel(pyfunc)


def types(T, n):
    return kl.types.matrix((n, n), T), kl.types.vector(n, T)


def svd_kernel(T, n, out_args=False):
    m, v = types(T, n)
    fn = kl.svd3 if n == 3 else kl.svd2
    if out_args:
        def k(a: kl.array(dtype=m), U: kl.array(dtype=m), s: kl.array(dtype=v),
              V: kl.array(dtype=m)):
            i = kl.tid()
            u = m()
            x = v()
            w = m()
            fn(a[i], u, x, w)
            U[i] = u
            s[i] = x
            V[i] = w
    else:
        def k(a: kl.array(dtype=m), U: kl.array(dtype=m), s: kl.array(dtype=v),
              V: kl.array(dtype=m)):
            i = kl.tid()
            u, x, w = fn(a[i])
            U[i] = u
            s[i] = x
            V[i] = w
    return _named(k, f"svd{n}_{T}_{'out' if out_args else 'tuple'}")


def qr_kernel(T, out_args=False):
    m, _ = types(T, 3)
    if out_args:
        def k(a: kl.array(dtype=m), Q: kl.array(dtype=m), R: kl.array(dtype=m)):
            i = kl.tid()
            q = m()
            r = m()
            kl.qr3(a[i], q, r)
            Q[i] = q
            R[i] = r
    else:
        def k(a: kl.array(dtype=m), Q: kl.array(dtype=m), R: kl.array(dtype=m)):
            i = kl.tid()
            q, r = kl.qr3(a[i])
            Q[i] = q
            R[i] = r
    return _named(k, f"qr3_{T}_{'out' if out_args else 'tuple'}")


def eig_kernel(T, out_args=False):
    m, v = types(T, 3)
    if out_args:
        def k(a: kl.array(dtype=m), Q: kl.array(dtype=m), d: kl.array(dtype=v)):
            i = kl.tid()
            q = m()
            x = v()
            kl.eig3(a[i], q, x)
            Q[i] = q
            d[i] = x
    else:
        def k(a: kl.array(dtype=m), Q: kl.array(dtype=m), d: kl.array(dtype=v)):
            i = kl.tid()
            q, x = kl.eig3(a[i])
            Q[i] = q
            d[i] = x
    return _named(k, f"eig3_{T}_{'out' if out_args else 'tuple'}")


def launch(kernel, a, outs, T):
    arrays = [kl.zeros(N, dtype=t) for t in outs]
    kl.launch(kernel, N, inputs=[kl.array(a.astype(T.np), dtype=kernel_in(a, T))],
              outputs=arrays)
    return [x.numpy().astype(np.float64) for x in arrays]


def kernel_in(a, T):
    return kl.types.matrix(a.shape[1:], T)


def tol(T):
    return 2e-5 if T == kl.float32 else 1e-11


def general(rng, n):
    a = rng.uniform(-1, 1, (N, n, n))
    a[1] = a[1] @ np.diag([1.0] * (n - 1) + [-1.0]) if np.linalg.det(a[1]) > 0 else a[1]
    return a  # thread 1 has a negative determinant


def symmetric(rng):
    a = rng.uniform(-1, 1, (N, 3, 3))
    return a + a.transpose(0, 2, 1)


def rotation_like(m):
    return np.einsum("kji,kjl->kil", m, m)  # m^T m


# ---- values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("out_args", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [2, 3])
def test_svd(backend, rng, n, dtype, out_args):
    T = getattr(kl, dtype)
    a = general(rng, n)
    m, v = types(T, n)
    U, s, V = launch(svd_kernel(T, n, out_args), a, [m, v, m], T)
    a = a.astype(T.np).astype(np.float64)
    t = tol(T)
    np.testing.assert_allclose(np.einsum("kij,kj,klj->kil", U, s, V), a, atol=t * 5)
    for Q in (U, V):
        np.testing.assert_allclose(rotation_like(Q), np.broadcast_to(np.eye(n), Q.shape),
                                   atol=t * 5)
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(a, compute_uv=False), rtol=t * 5,
                               atol=t)
    if n == 3:  # U and V are rotations; the sign of det A is on the smallest value
        np.testing.assert_allclose(np.linalg.det(U), 1, atol=t * 5)
        np.testing.assert_allclose(np.linalg.det(V), 1, atol=t * 5)
        assert (s[:, :2] > 0).all() and (np.sign(s[:, 2]) == np.sign(np.linalg.det(a))).all()


@pytest.mark.parametrize("out_args", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_qr3(backend, rng, dtype, out_args):
    T = getattr(kl, dtype)
    a = general(rng, 3)
    m, _ = types(T, 3)
    Q, R = launch(qr_kernel(T, out_args), a, [m, m], T)
    a = a.astype(T.np).astype(np.float64)
    t = tol(T)
    np.testing.assert_allclose(Q @ R, a, atol=t * 5)
    np.testing.assert_allclose(rotation_like(Q), np.broadcast_to(np.eye(3), Q.shape),
                               atol=t * 5)
    assert (R[:, [1, 2, 2], [0, 0, 1]] == 0).all()
    # QR is unique up to the signs of R's rows
    np.testing.assert_allclose(np.abs(R), np.abs(np.linalg.qr(a)[1]), atol=t * 5)


@pytest.mark.parametrize("out_args", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig3(backend, rng, dtype, out_args):
    T = getattr(kl, dtype)
    a = symmetric(rng)
    m, v = types(T, 3)
    Q, d = launch(eig_kernel(T, out_args), a, [m, v], T)
    a = a.astype(T.np).astype(np.float64)
    t = tol(T)
    np.testing.assert_allclose(np.einsum("kij,kj,klj->kil", Q, d, Q), a, atol=t * 10)
    np.testing.assert_allclose(np.sort(d), np.linalg.eigvalsh(a), atol=t * 10)
    np.testing.assert_allclose(rotation_like(Q), np.broadcast_to(np.eye(3), Q.shape),
                               atol=t * 5)


def test_svd2_of_a_scaled_rotation_reconstructs_it(backend):
    """A repeated singular value: A = 3 R(theta). (Warp returns U = I here.)"""
    c, s = np.cos(0.7), np.sin(0.7)
    a = np.stack([3 * np.array([[c, -s], [s, c]]), 2 * np.eye(2), np.array([[0, 1], [1, 0.]]),
                  np.zeros((2, 2))])
    m, v = types(kl.float64, 2)
    U, sig, V = launch(svd_kernel(kl.float64, 2), a, [m, v, m], kl.float64)
    np.testing.assert_allclose(np.einsum("kij,kj,klj->kil", U, sig, V), a, atol=1e-14)
    np.testing.assert_allclose(sig, [[3, 3], [2, 2], [1, 1], [0, 0]], atol=1e-14)
    np.testing.assert_allclose(U[3], np.eye(2))  # zero matrix: U = V = I, no NaN


# ---- derivatives -------------------------------------------------------------------------------

CASES = {
    "svd3": (lambda: svd_kernel(kl.float64, 3), lambda r: general(r, 3), "svd"),
    "svd2": (lambda: svd_kernel(kl.float64, 2), lambda r: general(r, 2), "svd"),
    "qr3": (lambda: qr_kernel(kl.float64), lambda r: general(r, 3), "qr"),
    "eig3": (lambda: eig_kernel(kl.float64), symmetric, "eig"),
}


def out_arrays(kind, n):
    m, v = types(kl.float64, n)
    return [kl.zeros(N, dtype=t) for t in {"svd": [m, v, m], "qr": [m, m],
                                           "eig": [m, v]}[kind]]


@pytest.mark.parametrize("name", sorted(CASES))
def test_decomposition_jacobian_matches_finite_differences(backend, rng, name):
    make, sample, kind = CASES[name]
    a = sample(rng)
    n = a.shape[1]
    kernel = make()
    inputs = [kl.array(a, dtype=types(kl.float64, n)[0])]
    fd = kl.autograd.jacobian_fd(kernel, N, inputs=inputs, outputs=out_arrays(kind, n),
                                 eps=1e-6)
    ad = kl.autograd.jacobian(kernel, N, inputs=inputs, outputs=out_arrays(kind, n))
    for key in fd:
        np.testing.assert_allclose(ad[key].numpy(), fd[key].numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: output {key[1]}")


def test_singular_value_and_eigenvalue_gradients_are_the_analytic_ones(backend, rng):
    """d sigma_i / dA = u_i v_i^T and d lambda_i / dS = q_i q_i^T: the sweeps have
    converged, so differentiating them gives the derivative of the decomposition."""
    a = general(rng, 3)
    arr = kl.array(a, dtype=kl.mat33d, requires_grad=True)
    U, s, V = (kl.zeros(N, dtype=t, requires_grad=True) for t in (kl.mat33d, kl.vec3d,
                                                                 kl.mat33d))
    w = rng.normal(size=(N, 3))
    with kl.Tape() as tape:
        kl.launch(svd_kernel(kl.float64, 3), N, inputs=[arr], outputs=[U, s, V])
    tape.backward(grads={s: kl.array(w, dtype=kl.vec3d)})
    u, v = U.numpy(), V.numpy()
    want = np.einsum("kj,kij,klj->kil", w, u, v)  # sum_j w_j u_j v_j^T
    np.testing.assert_allclose(arr.grad.numpy(), want, atol=1e-9)

    sym = symmetric(rng)
    arr = kl.array(sym, dtype=kl.mat33d, requires_grad=True)
    Q, d = kl.zeros(N, dtype=kl.mat33d, requires_grad=True), kl.zeros(N, dtype=kl.vec3d,
                                                                       requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(eig_kernel(kl.float64), N, inputs=[arr], outputs=[Q, d])
    tape.backward(grads={d: kl.array(w, dtype=kl.vec3d)})
    q = Q.numpy()
    # d = diag(Q^T S Q): the direct term gives q_j q_j^T, and the term through Q vanishes
    # where Q has converged (q_j is a unit eigenvector)
    want = np.einsum("kj,kij,klj->kil", w, q, q)
    np.testing.assert_allclose(arr.grad.numpy(), want, atol=1e-9)


def test_svd3_tangent(backend, rng):
    """Forward mode: d sigma_i = u_i^T dA v_i."""
    a, da = general(rng, 3), rng.normal(size=(N, 3, 3))
    outs, touts = out_arrays("svd", 3), out_arrays("svd", 3)
    kernel = svd_kernel(kl.float64, 3)
    kl.launch(kernel, N, inputs=[kl.array(a, dtype=kl.mat33d)], outputs=outs)
    kl.launch(kernel, N, inputs=[kl.array(a, dtype=kl.mat33d)],
              outputs=out_arrays("svd", 3), tangent=True,
              tan_inputs=[kl.array(da, dtype=kl.mat33d)], tan_outputs=touts)
    u, v = outs[0].numpy(), outs[2].numpy()
    np.testing.assert_allclose(touts[1].numpy(), np.einsum("kij,kil,klj->kj", u, da, v),
                               atol=1e-9)


# ---- Warp's own factors ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_same_factors_as_warp(rng, dtype):
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True
    a3, s3, a2 = general(rng, 3), symmetric(rng), general(rng, 2)
    results = []
    for lib in (wp, kl):
        T = getattr(lib, dtype)
        m3, v3 = lib.types.matrix((3, 3), T), lib.types.vector(3, T)
        m2, v2 = lib.types.matrix((2, 2), T), lib.types.vector(2, T)

        def k(a: lib.array(dtype=m3), s: lib.array(dtype=m3), b: lib.array(dtype=m2),
              U: lib.array(dtype=m3), sig: lib.array(dtype=v3), V: lib.array(dtype=m3),
              Q: lib.array(dtype=m3), R: lib.array(dtype=m3), E: lib.array(dtype=m3),
              d: lib.array(dtype=v3), U2: lib.array(dtype=m2), s2: lib.array(dtype=v2),
              V2: lib.array(dtype=m2)):
            i = lib.tid()
            u, x, v = lib.svd3(a[i])
            U[i] = u
            sig[i] = x
            V[i] = v
            q, r = lib.qr3(a[i])
            Q[i] = q
            R[i] = r
            e, dd = lib.eig3(s[i])
            E[i] = e
            d[i] = dd
            u2, x2, w2 = lib.svd2(b[i])
            U2[i] = u2
            s2[i] = x2
            V2[i] = w2
        k.__name__ = k.__qualname__ = f"factors_{lib.__name__}_{dtype}"
        kw = {"device": "cpu"} if lib is wp else {}
        kernel = wp.kernel(k, module="unique") if lib is wp else kl.kernel(k)
        npT = np.float32 if dtype == "float32" else np.float64
        ins = [lib.array(x.astype(npT), dtype=t, **kw) for x, t in ((a3, m3), (s3, m3),
                                                                     (a2, m2))]
        outs = [lib.zeros(N, dtype=t, **kw) for t in (m3, v3, m3, m3, m3, m3, v3, m2, v2,
                                                      m2)]
        lib.launch(kernel, N, inputs=ins + outs, **kw)
        results.append([o.numpy() for o in outs])
    t = 5e-7 if dtype == "float32" else 1e-14
    for k, (want, got) in enumerate(zip(*results)):
        np.testing.assert_allclose(got, want, atol=t, err_msg=f"output {k}")
