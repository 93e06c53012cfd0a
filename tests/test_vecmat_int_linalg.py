"""Row vector times matrix (``mul(v, m)`` and ``v * m``), ``outer`` of integer vectors and
``abs`` of integer vectors: values against NumPy, the adjoint of ``v * m`` against float64
central differences, and, where warp-lang is installed, Warp's own output."""
import numpy as np
import pytest

import kernlab as kl


def _vm_kernel(n, m, T, tag):
    vec_t, mat_t, out_t = kl.types.vector(n, T), kl.types.matrix((n, m), T), kl.types.vector(m, T)

    def vecmat(v: kl.array(dtype=vec_t), a: kl.array(dtype=mat_t), o: kl.array(dtype=out_t),
               o2: kl.array(dtype=out_t)):
        i = kl.tid()
        o[i] = v[i] * a[i]
        o2[i] = kl.mul(v[i], a[i])
    vecmat.__name__ = vecmat.__qualname__ = f"vecmat_{n}{m}_{tag}"
    return kl.kernel(vecmat), vec_t, mat_t, out_t


@pytest.mark.parametrize("T,npt", [(kl.float32, np.float32), (kl.float64, np.float64),
                                   (kl.int32, np.int32), (kl.uint8, np.uint8)])
def test_vec_times_mat_values(T, npt, backend):
    rng = np.random.default_rng(3)
    k, vec_t, mat_t, out_t = _vm_kernel(3, 2, T, npt.__name__)
    vn = rng.integers(0, 5, (4, 3)).astype(npt)
    an = rng.integers(0, 5, (4, 3, 2)).astype(npt)
    v, a = kl.array(vn, dtype=vec_t), kl.array(an, dtype=mat_t)
    o, o2 = kl.zeros(4, dtype=out_t), kl.zeros(4, dtype=out_t)
    kl.launch(k, 4, inputs=[v, a, o, o2])
    want = np.einsum("ik,ikj->ij", vn.astype(np.float64), an.astype(np.float64))
    np.testing.assert_allclose(o.numpy(), want.astype(npt), rtol=1e-6)
    np.testing.assert_allclose(o2.numpy(), want.astype(npt), rtol=1e-6)


def test_vec_times_mat_shape_mismatch_is_a_type_error():
    with pytest.raises(Exception, match="mul"):
        @kl.kernel
        def bad_vecmat(o: kl.array(dtype=kl.vec2)):
            o[0] = kl.vec3(1.0, 2.0, 3.0) * kl.mat22(1.0, 0.0, 0.0, 1.0)
        kl.launch(bad_vecmat, 1, inputs=[kl.zeros(1, dtype=kl.vec2)])


def test_vec_times_mat_adjoint_matches_finite_differences(backend):
    rng = np.random.default_rng(7)
    k, vec_t, mat_t, out_t = _vm_kernel(3, 4, kl.float64, "grad")
    vn, an = rng.normal(size=(1, 3)), rng.normal(size=(1, 3, 4))
    w = rng.normal(size=(1, 4))  # loss = w . (v A) + 0 * o2

    def loss(vv, aa):
        return float(np.sum(w * np.einsum("ik,ikj->ij", vv, aa)))

    v = kl.array(vn, dtype=vec_t, requires_grad=True)
    a = kl.array(an, dtype=mat_t, requires_grad=True)
    o = kl.zeros(1, dtype=out_t, requires_grad=True)
    o2 = kl.zeros(1, dtype=out_t, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(k, 1, inputs=[v, a, o, o2])
    o.grad = kl.array(w, dtype=out_t)
    tape.backward()
    h = 1e-6
    gv = np.zeros_like(vn)
    for j in range(3):
        e = np.zeros_like(vn); e[0, j] = h
        gv[0, j] = (loss(vn + e, an) - loss(vn - e, an)) / (2 * h)
    ga = np.zeros_like(an)
    for r in range(3):
        for c in range(4):
            e = np.zeros_like(an); e[0, r, c] = h
            ga[0, r, c] = (loss(vn, an + e) - loss(vn, an - e)) / (2 * h)
    np.testing.assert_allclose(v.grad.numpy(), gv, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("T,npt", [(kl.int32, np.int32), (kl.int8, np.int8),
                                   (kl.uint16, np.uint16), (kl.int64, np.int64)])
def test_outer_and_abs_of_integer_vectors(T, npt, backend):
    vec_t = kl.types.vector(3, T)
    mat_t = kl.types.matrix((3, 3), T)

    def outer_abs(a: kl.array(dtype=vec_t), b: kl.array(dtype=vec_t), o: kl.array(dtype=mat_t),
                  ab: kl.array(dtype=vec_t)):
        i = kl.tid()
        o[i] = kl.outer(a[i], b[i])
        ab[i] = kl.abs(a[i])
    outer_abs.__name__ = outer_abs.__qualname__ = f"outer_abs_{npt.__name__}"
    k = kl.kernel(outer_abs)
    signed = np.issubdtype(npt, np.signedinteger)
    an = np.array([[2, -3, 5], [-7, 0, 4]] if signed else [[2, 3, 5], [7, 0, 4]], npt)
    bn = np.array([[1, 4, -2], [3, -1, 6]] if signed else [[1, 4, 2], [3, 1, 6]], npt)
    o, ab = kl.zeros(2, dtype=mat_t), kl.zeros(2, dtype=vec_t)
    kl.launch(k, 2, inputs=[kl.array(an, dtype=vec_t), kl.array(bn, dtype=vec_t), o, ab])
    want = np.einsum("ij,ik->ijk", an.astype(np.int64), bn.astype(np.int64)).astype(npt)
    np.testing.assert_array_equal(o.numpy(), want)
    np.testing.assert_array_equal(ab.numpy(), np.abs(an.astype(np.int64)).astype(npt))


def test_against_warp():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def warp_vm(v: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.mat33), o: wp.array(dtype=wp.vec3),
                m: wp.array(dtype=wp.types.matrix((2, 2), wp.int32)),
                ab: wp.array(dtype=wp.vec3i)):
        o[0] = v[0] * a[0]
        m[0] = wp.outer(wp.vec2i(2, -3), wp.vec2i(5, 7))
        ab[0] = wp.abs(wp.vec3i(-4, 0, 9))

    @kl.kernel
    def kl_vm(v: kl.array(dtype=kl.vec3), a: kl.array(dtype=kl.mat33), o: kl.array(dtype=kl.vec3),
              m: kl.array(dtype=kl.types.matrix((2, 2), kl.int32)),
              ab: kl.array(dtype=kl.vec3i)):
        o[0] = v[0] * a[0]
        m[0] = kl.outer(kl.vec2i(2, -3), kl.vec2i(5, 7))
        ab[0] = kl.abs(kl.vec3i(-4, 0, 9))

    vn = np.array([[1.5, -2.0, 0.25]], np.float32)
    an = np.arange(9, dtype=np.float32).reshape(1, 3, 3) - 4.0
    outs = []
    for mod, kern in ((wp, warp_vm), (kl, kl_vm)):
        o = mod.zeros(1, dtype=mod.vec3, device="cpu")
        m = mod.zeros(1, dtype=mod.types.matrix((2, 2), mod.int32), device="cpu")
        ab = mod.zeros(1, dtype=mod.vec3i, device="cpu")
        mod.launch(kern, 1, inputs=[mod.array(vn, dtype=mod.vec3, device="cpu"),
                                    mod.array(an, dtype=mod.mat33, device="cpu"), o, m, ab],
                   device="cpu")
        outs.append((o.numpy(), m.numpy(), ab.numpy()))
    for w, k in zip(*outs):
        np.testing.assert_array_equal(k, w)


@pytest.mark.parametrize("body,words", [
    ("kl.mat22(1.0, 2.0, 3.0)",
     r"mat22\(\) takes 1 or 4 values: incompatible number of values given \(3\) when "
     r"constructing a matrix of shape \(2, 2\)$"),
    ("kl.types.matrix(1.0, 2.0, 3.0)",
     r"the `shape` argument must be specified when initializing a matrix by value$"),
    ("kl.mat22(kl.mat33())",
     r"mat22\(\) cannot copy a mat33: incompatible matrix of shape \(2, 2\) given when copy "
     r"constructing a matrix of shape \(3, 3\)$"),
    ("kl.types.matrix(kl.mat22(), shape=(3, 3), dtype=float)",
     r"cannot copy a mat22: .* copy constructing a matrix of shape \(2, 2\)$"),
])
def test_matrix_constructor_errors_name_the_line_and_the_counts(body, words, tmp_path):
    from kernlab.errors import KernelTypeError
    src = tmp_path / "bad_matrix_ctor.py"
    src.write_text("import kernlab as kl\n\n\n@kl.kernel\ndef bad_ctor():\n"
                   f"    m = {body}\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"bad_matrix_ctor_{abs(hash(body))}", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(KernelTypeError, match=words) as err:
        kl.launch(mod.bad_ctor, 1, inputs=[])
    assert "line 6, in kernel 'bad_ctor'" in str(err.value)


def test_kl_float_and_kl_int_convert_in_kernels(backend):
    @kl.kernel
    def half_via_float(a: kl.array(dtype=kl.float16), o: kl.array(dtype=kl.float16),
                       n: kl.array(dtype=kl.int32)):
        i = kl.tid()
        x = kl.float(a[i]) * 2.0  # Warp's spelling of float(a[i]): a float32
        o[i] = kl.float16(x)
        n[i] = kl.int(kl.float(a[i]) * 3.0)  # truncates toward zero

    an = np.array([1.5, -2.25, 0.75], np.float16)
    a = kl.array(an, dtype=kl.float16, requires_grad=True)
    o, n = kl.zeros_like(a), kl.zeros(3, dtype=kl.int32)
    tape = kl.Tape()
    with tape:
        kl.launch(half_via_float, 3, inputs=[a, o, n])
    tape.backward(grads={o: kl.ones_like(o)})
    np.testing.assert_array_equal(o.numpy(), an * 2)
    np.testing.assert_array_equal(n.numpy(), np.trunc(an.astype(np.float64) * 3).astype(np.int32))
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 2.0, np.float16))
    assert not hasattr(kl, "float")  # only kernels read it as the conversion
