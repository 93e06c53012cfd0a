"""inverse, inverse_approx, diag, get_diag, skew, ddot, quat_between_vectors and
transform_expand: values against NumPy (np.linalg.inv, np.diag, ...), reverse and forward
derivatives against float64 central differences and the closed form of the inverse's
derivative, Warp's zero inverse of a singular matrix, and, where warp-lang is installed,
Warp's own output for the same inputs."""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import KernelTypeError

N = 4  # threads, one sample each


def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return kl.kernel(pyfunc)


def unary_kernel(fn, tin, tout, tag=""):
    def k(a: kl.array(dtype=tin), o: kl.array(dtype=tout)):
        i = kl.tid()
        o[i] = fn(a[i])
    return _named(k, f"{fn.__name__}_{tag or 'k'}")


def binary_kernel(fn, tin, tout, tag=""):
    def k(a: kl.array(dtype=tin), b: kl.array(dtype=tin), o: kl.array(dtype=tout)):
        i = kl.tid()
        o[i] = fn(a[i], b[i])
    return _named(k, f"{fn.__name__}_{tag or 'k'}")


def well_conditioned(rng, n, count=N):
    """Random n x n matrices kept away from singular: identity plus a small random part."""
    return np.eye(n) * 2.0 + rng.uniform(-1, 1, (count, n, n))


def mat(n, T):
    return kl.types.matrix((n, n), T)


def jacobians(kernel, inputs, outputs):
    fd = kl.autograd.jacobian_fd(kernel, N, inputs=inputs, outputs=outputs, eps=1e-6)
    ad = kl.autograd.jacobian(kernel, N, inputs=inputs, outputs=outputs)
    return {key: (np.asarray(ad[key].numpy(), np.float64), np.asarray(fd[key].numpy(),
                                                                       np.float64))
            for key in fd}


# ---- values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["inverse", "inverse_approx"])
@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inverse_matches_numpy(backend, rng, name, n, dtype):
    T = getattr(kl, dtype)
    a = well_conditioned(rng, n)
    out = kl.zeros(N, dtype=mat(n, T))
    kl.launch(unary_kernel(getattr(kl, name), mat(n, T), mat(n, T), f"{n}{dtype}"), N,
              inputs=[kl.array(a.astype(T.np), dtype=mat(n, T))], outputs=[out])
    tol = 1e-5 if dtype == "float32" else 1e-12
    want = np.linalg.inv(a.astype(T.np).astype(np.float64))
    np.testing.assert_allclose(out.numpy(), want, rtol=tol, atol=tol)


SINGULAR = {
    2: np.array([[1.0, 2.0], [2.0, 4.0]]),
    3: np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [1.0, 2.0, 3.0]]),
    4: np.diag([1.0, 2.0, 0.0, 3.0]) + np.triu(np.ones((4, 4)), 1) * [1, 1, 0, 1],
}


@pytest.mark.parametrize("n", [2, 3, 4])
def test_singular_matrix_has_the_zero_inverse_and_gradient(backend, n):
    """Warp returns the zero matrix where the determinant is exactly zero; no NaN leaks into
    the value or the gradient."""
    assert np.linalg.matrix_rank(SINGULAR[n]) < n
    a = kl.array(np.stack([SINGULAR[n]] * N), dtype=mat(n, kl.float64), requires_grad=True)
    out = kl.zeros(N, dtype=mat(n, kl.float64), requires_grad=True)
    kernel = unary_kernel(kl.inverse, mat(n, kl.float64), mat(n, kl.float64), f"sing{n}")
    with kl.Tape() as tape:
        kl.launch(kernel, N, inputs=[a], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), 0.0)
    tape.backward(grads={out: kl.array(np.ones((N, n, n)), dtype=mat(n, kl.float64))})
    np.testing.assert_array_equal(a.grad.numpy(), 0.0)


def skew_ref(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_diag_get_diag_skew_ddot_match_numpy(backend, rng, dtype):
    T = getattr(kl, dtype)
    tol = 1e-6 if dtype == "float32" else 1e-14
    for n in (2, 3, 4):
        vt = kl.types.vector(n, T)
        v = rng.uniform(-1, 1, (N, n)).astype(T.np)
        out = kl.zeros(N, dtype=mat(n, T))
        kl.launch(unary_kernel(kl.diag, vt, mat(n, T), f"{n}{dtype}"), N,
                  inputs=[kl.array(v, dtype=vt)], outputs=[out])
        np.testing.assert_array_equal(out.numpy(), np.stack([np.diag(x) for x in v]))
        m = rng.uniform(-1, 1, (N, n, n)).astype(T.np)
        got = kl.zeros(N, dtype=vt)
        kl.launch(unary_kernel(kl.get_diag, mat(n, T), vt, f"{n}{dtype}"), N,
                  inputs=[kl.array(m, dtype=mat(n, T))], outputs=[got])
        np.testing.assert_array_equal(got.numpy(), np.stack([np.diag(x) for x in m]))
    v = rng.uniform(-1, 1, (N, 3)).astype(T.np)
    out = kl.zeros(N, dtype=mat(3, T))
    kl.launch(unary_kernel(kl.skew, kl.types.vector(3, T), mat(3, T), dtype), N,
              inputs=[kl.array(v, dtype=kl.types.vector(3, T))], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.stack([skew_ref(x) for x in v]))
    x = rng.uniform(-1, 1, 3)
    np.testing.assert_allclose(out.numpy()[0] @ x, np.cross(v[0], x), atol=tol * 10)
    mt = kl.types.matrix((2, 3), T)  # ddot of non-square matrices too
    a, b = (rng.uniform(-1, 1, (N, 2, 3)).astype(T.np) for _ in range(2))
    s = kl.zeros(N, dtype=T)
    kl.launch(binary_kernel(kl.ddot, mt, T, dtype), N,
              inputs=[kl.array(a, dtype=mt), kl.array(b, dtype=mt)], outputs=[s])
    np.testing.assert_allclose(s.numpy(), np.einsum("kij,kij->k", a.astype(np.float64), b),
                               rtol=tol * 10)


def test_diag_and_ddot_of_integers(backend):
    @kl.kernel
    def k(v: kl.array(dtype=kl.types.vector(3, kl.int32)), o: kl.array(dtype=kl.int32)):
        i = kl.tid()
        m = kl.diag(v[i])
        o[i] = kl.ddot(m, m) + kl.get_diag(m)[1]
    o = kl.zeros(1, dtype=kl.int32)
    kl.launch(k, 1, inputs=[kl.array([[1, 2, 3]], dtype=kl.types.vector(3, kl.int32))],
              outputs=[o])
    assert o.numpy()[0] == 1 + 4 + 9 + 2


def test_quat_between_vectors_rotates_a_onto_b(backend, rng):
    a, b = rng.normal(size=(N, 3)), rng.normal(size=(N, 3))
    q = kl.zeros(N, dtype=kl.quatd)
    kl.launch(binary_kernel(kl.quat_between_vectors, kl.vec3d, kl.quatd), N,
              inputs=[kl.array(a, dtype=kl.vec3d), kl.array(b, dtype=kl.vec3d)], outputs=[q])
    for i in range(N):
        na, nb = a[i] / np.linalg.norm(a[i]), b[i] / np.linalg.norm(b[i])
        axis = np.cross(na, nb) / np.linalg.norm(np.cross(na, nb))
        half = np.arccos(na @ nb) / 2  # the shortest arc: about a x b by the angle between
        np.testing.assert_allclose(q.numpy()[i], np.append(axis * np.sin(half), np.cos(half)),
                                   atol=1e-12)


def test_transform_expand(backend):
    @kl.kernel
    def k(v: kl.array(dtype=kl.types.vector(7, kl.float32)), o: kl.array(dtype=kl.transform)):
        i = kl.tid()
        o[i] = kl.transform_expand(v[i])
    flat = np.array([[1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0]])
    o = kl.zeros(1, dtype=kl.transform)
    kl.launch(k, 1, inputs=[kl.array(flat, dtype=kl.types.vector(7, kl.float32))], outputs=[o])
    np.testing.assert_array_equal(o.numpy(), flat)


def test_python_scope_calls():
    a = np.array([[2.0, 1.0], [1.0, 2.0]], np.float32)
    np.testing.assert_allclose(kl.inverse(a), np.linalg.inv(a), rtol=1e-6)
    np.testing.assert_array_equal(kl.inverse(np.zeros((3, 3), np.float32)), 0.0)
    np.testing.assert_array_equal(kl.get_diag(a), [2.0, 2.0])
    np.testing.assert_array_equal(kl.diag(np.array([1.0, 2.0], np.float32)), np.diag([1, 2]))
    np.testing.assert_array_equal(kl.skew(np.array([1.0, 2.0, 3.0], np.float32)),
                                  skew_ref([1, 2, 3]))
    assert kl.ddot(a, a) == 10.0
    t = kl.transform_expand((1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0))
    np.testing.assert_array_equal(np.asarray(t), [1, 2, 3, 4, 3, 2, 1])


def test_get_diag_of_a_non_square_matrix_is_a_clear_error():
    def k(m: kl.array(dtype=kl.types.matrix((2, 3), kl.float32)),
          o: kl.array(dtype=kl.vec2)):
        i = kl.tid()
        o[i] = kl.get_diag(m[i])
    kernel = _named(k, "get_diag_of_2x3")
    with pytest.raises(KernelTypeError, match=r"get_diag\(\) takes a square matrix") as err:
        kl.launch(kernel, 1, inputs=[kl.zeros(1, dtype=kl.types.matrix((2, 3), kl.float32))],
                  outputs=[kl.zeros(1, dtype=kl.vec2)])
    assert "get_diag_of_2x3" in str(err.value) and "o[i] = kl.get_diag(m[i])" in str(err.value)


# ---- derivatives -------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4])
def test_inverse_adjoint_is_minus_inv_t_adj_inv_t(backend, rng, n):
    """Reverse mode: adj_A = -inv^T adj inv^T (closed form), and the full Jacobian against
    float64 central differences."""
    T = kl.float64
    a = well_conditioned(rng, n)
    arr = kl.array(a, dtype=mat(n, T), requires_grad=True)
    out = kl.zeros(N, dtype=mat(n, T), requires_grad=True)
    kernel = unary_kernel(kl.inverse, mat(n, T), mat(n, T), f"adj{n}")
    seed = rng.normal(size=(N, n, n))
    with kl.Tape() as tape:
        kl.launch(kernel, N, inputs=[arr], outputs=[out])
    tape.backward(grads={out: kl.array(seed, dtype=mat(n, T))})
    inv = np.linalg.inv(a)
    want = -np.einsum("kji,kjl,kml->kim", inv, seed, inv)  # -inv^T seed inv^T
    np.testing.assert_allclose(arr.grad.numpy(), want, rtol=1e-10, atol=1e-10)
    for key, (ad, fd) in jacobians(kernel, [kl.array(a, dtype=mat(n, T))],
                                   [kl.zeros(N, dtype=mat(n, T))]).items():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6, err_msg=str(key))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_inverse_tangent_is_minus_inv_da_inv(backend, rng, n):
    """Forward mode: d(inv) = -inv dA inv."""
    T = kl.float64
    a, da = well_conditioned(rng, n), rng.normal(size=(N, n, n))
    out, t_out = kl.zeros(N, dtype=mat(n, T)), kl.zeros(N, dtype=mat(n, T))
    kl.launch(unary_kernel(kl.inverse, mat(n, T), mat(n, T), f"tan{n}"), N,
              inputs=[kl.array(a, dtype=mat(n, T))], outputs=[out], tangent=True,
              tan_inputs=[kl.array(da, dtype=mat(n, T))], tan_outputs=[t_out])
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(t_out.numpy(), -inv @ da @ inv, rtol=1e-10, atol=1e-10)


CASES = [  # (builtin, input types, output type)
    ("diag", [kl.vec3d], kl.mat33d), ("diag", [kl.vec4d], kl.mat44d),
    ("get_diag", [kl.mat33d], kl.vec3d), ("skew", [kl.vec3d], kl.mat33d),
    ("ddot", [kl.mat33d, kl.mat33d], kl.float64),
    ("ddot", [kl.types.matrix((2, 4), kl.float64)] * 2, kl.float64),
    ("quat_between_vectors", [kl.vec3d, kl.vec3d], kl.quatd),
    ("transform_expand", [kl.types.vector(7, kl.float64)], kl.transformd),
]


@pytest.mark.parametrize("name, ins, out", CASES, ids=[f"{c[0]}{i}" for i, c in
                                                       enumerate(CASES)])
def test_jacobians_match_finite_differences(backend, rng, name, ins, out):
    fn = getattr(kl, name)
    kernel = (unary_kernel if len(ins) == 1 else binary_kernel)(
        fn, ins[0], out, f"jac_{ins[0].__class__.__name__}{getattr(ins[0], 'length', '')}")
    arrays = [kl.array(rng.uniform(-1, 1, (N,) + t.shape), dtype=t) for t in ins]
    for key, (ad, fd) in jacobians(kernel, arrays, [kl.zeros(N, dtype=out)]).items():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6, err_msg=str(key))
        assert np.abs(fd).max() > 0  # the case exercises a nonzero derivative


# ---- Warp's own output -------------------------------------------------------------------------

def test_same_values_as_warp(rng):
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True

    @wp.kernel(module="unique")
    def warp_k(m2: wp.array(dtype=wp.mat22d), m3: wp.array(dtype=wp.mat33d),
               m4: wp.array(dtype=wp.mat44d), v: wp.array(dtype=wp.vec3d),
               w: wp.array(dtype=wp.vec3d), i2: wp.array(dtype=wp.mat22d),
               i3: wp.array(dtype=wp.mat33d), i4: wp.array(dtype=wp.mat44d),
               sk: wp.array(dtype=wp.mat33d), dg: wp.array(dtype=wp.vec4d),
               dd: wp.array(dtype=wp.float64), dm: wp.array(dtype=wp.mat33d),
               qb: wp.array(dtype=wp.quatd)):
        i = wp.tid()
        i2[i] = wp.inverse(m2[i])
        i3[i] = wp.inverse(m3[i])
        i4[i] = wp.inverse(m4[i])
        sk[i] = wp.skew(v[i])
        dg[i] = wp.get_diag(m4[i])
        dd[i] = wp.ddot(m3[i], sk[i])
        dm[i] = wp.diag(w[i])
        a = wp.normalize(v[i])
        b = wp.normalize(w[i])
        c = wp.cross(a, b)
        qb[i] = wp.normalize(wp.quatd(c[0], c[1], c[2], wp.float64(1.0) + wp.dot(a, b)))

    @kl.kernel
    def kl_k(m2: kl.array(dtype=kl.mat22d), m3: kl.array(dtype=kl.mat33d),
             m4: kl.array(dtype=kl.mat44d), v: kl.array(dtype=kl.vec3d),
             w: kl.array(dtype=kl.vec3d), i2: kl.array(dtype=kl.mat22d),
             i3: kl.array(dtype=kl.mat33d), i4: kl.array(dtype=kl.mat44d),
             sk: kl.array(dtype=kl.mat33d), dg: kl.array(dtype=kl.vec4d),
             dd: kl.array(dtype=kl.float64), dm: kl.array(dtype=kl.mat33d),
             qb: kl.array(dtype=kl.quatd)):
        i = kl.tid()
        i2[i] = kl.inverse(m2[i])
        i3[i] = kl.inverse(m3[i])
        i4[i] = kl.inverse(m4[i])
        sk[i] = kl.skew(v[i])
        dg[i] = kl.get_diag(m4[i])
        dd[i] = kl.ddot(m3[i], kl.skew(v[i]))
        dm[i] = kl.diag(w[i])
        qb[i] = kl.quat_between_vectors(v[i], w[i])

    # the last thread inverts singular matrices: Warp's zero matrix
    ins = [np.concatenate([well_conditioned(rng, n, N - 1), SINGULAR[n][None]])
           for n in (2, 3, 4)] + [rng.normal(size=(N, 3)), rng.normal(size=(N, 3))]
    outs = [(2, 2), (3, 3), (4, 4), (3, 3), (4,), (), (3, 3), (4,)]
    results = []
    for lib in (wp, kl):
        types = [lib.mat22d, lib.mat33d, lib.mat44d, lib.vec3d, lib.vec3d, lib.mat22d,
                 lib.mat33d, lib.mat44d, lib.mat33d, lib.vec4d, lib.float64, lib.mat33d,
                 lib.quatd]
        kw = {"device": "cpu"} if lib is wp else {}
        arrays = [lib.array(x, dtype=t, **kw) for x, t in zip(ins, types)]
        arrays += [lib.zeros(N, dtype=t, **kw) for t in types[len(ins):]]
        lib.launch(warp_k if lib is wp else kl_k, N, inputs=arrays, **kw)
        results.append([a.numpy() for a in arrays[len(ins):]])
    for k, (want, got) in enumerate(zip(*results)):
        assert got.shape == want.shape == (N,) + outs[k]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"output {k}")
    assert not results[1][0][-1].any() and not results[1][2][-1].any()


def test_float32_inverses_as_warp(rng):
    """Warp's 4x4 inverse keeps its 2x2 minors in double; kernlab's float32 one stays in
    float32, within a few float32 roundings of Warp's."""
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True
    results = []
    ins = [np.concatenate([well_conditioned(rng, n, N - 1), SINGULAR[n][None]])
           .astype(np.float32) for n in (2, 3, 4)]
    for lib in (wp, kl):
        def k(m2: lib.array(dtype=lib.mat22), m3: lib.array(dtype=lib.mat33),
              m4: lib.array(dtype=lib.mat44), i2: lib.array(dtype=lib.mat22),
              i3: lib.array(dtype=lib.mat33), i4: lib.array(dtype=lib.mat44)):
            i = lib.tid()
            i2[i] = lib.inverse(m2[i])
            i3[i] = lib.inverse(m3[i])
            i4[i] = lib.inverse(m4[i])
        k.__name__ = k.__qualname__ = f"inverses32_{lib.__name__}"
        kernel = wp.kernel(k, module="unique") if lib is wp else kl.kernel(k)
        kw = {"device": "cpu"} if lib is wp else {}
        types = [lib.mat22, lib.mat33, lib.mat44]
        arrays = [lib.array(x, dtype=t, **kw) for x, t in zip(ins, types)]
        outs = [lib.zeros(N, dtype=t, **kw) for t in types]
        lib.launch(kernel, N, inputs=arrays + outs, **kw)
        results.append([o.numpy() for o in outs])
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert not got[-1].any() and not want[-1].any()
