"""Corners where kernlab once disagreed with NVIDIA Warp 1.19 (found by running the same small
programs on both): each test asserts the value worked out by hand or with NumPy / float64
finite differences, and, where warp-lang is installed, that Warp computes the same.
"""
import math

import numpy as np
import pytest

import kernlab as kl


def _warp():
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True
    wp.init()
    return wp


def _compile(m, body):
    """body(m) -> a kernel function for module m (kernlab or warp), compiled by m."""
    if m is kl:
        return kl.kernel(body(kl))
    return m.kernel(body(m), module="unique")


def _run_unary(m, body, xs, dtype_name="float32", grad=False):
    """Launch body's kernel (a, out) over xs on module m; return (out, a.grad or None)."""
    kernel = _compile(m, body)
    dtype = getattr(m, dtype_name)
    dev = {} if m is kl else {"device": "cpu"}
    a = m.array(np.asarray(xs), dtype=dtype, requires_grad=grad, **dev)
    out = m.zeros(len(xs), dtype=dtype, requires_grad=grad, **dev)
    if not grad:
        m.launch(kernel, len(xs), inputs=[a], outputs=[out], **dev)
        return out.numpy(), None
    tape = m.Tape()
    with tape:
        m.launch(kernel, len(xs), inputs=[a], outputs=[out], **dev)
    tape.backward(grads={out: m.array(np.ones(len(xs)), dtype=dtype, **dev)})
    return out.numpy(), a.grad.numpy()


def _acos(m):
    def k(a: m.array(dtype=m.float64), out: m.array(dtype=m.float64)):
        i = m.tid()
        out[i] = m.acos(a[i])
    return k


def _asin(m):
    def k(a: m.array(dtype=m.float64), out: m.array(dtype=m.float64)):
        i = m.tid()
        out[i] = m.asin(a[i])
    return k


def _asin32(m):
    def k(a: m.array(dtype=float), out: m.array(dtype=float)):
        i = m.tid()
        out[i] = m.asin(a[i])
    return k


# outside [-1, 1] the argument is clamped first; a NaN is clamped to -1 (fmax drops it)
ARC_X = [2.0, -3.0, 1.0, -1.0, 0.5, -0.25, 0.0, math.nan]
ARC_CLAMPED = [1.0, -1.0, 1.0, -1.0, 0.5, -0.25, 0.0, -1.0]


@pytest.mark.parametrize("name", ["acos", "asin"])
def test_acos_asin_clamp_their_argument_and_have_no_infinite_slope(backend, name):
    body, ref = (_acos, np.arccos) if name == "acos" else (_asin, np.arcsin)
    out, grad = _run_unary(kl, body, ARC_X, "float64", grad=True)
    np.testing.assert_allclose(out, ref(np.array(ARC_CLAMPED)), rtol=1e-12)
    # the slope -+1/sqrt(1 - x^2) inside (-1, 1); 0 where that root is not positive
    x = np.array(ARC_X[4:7])
    slope = 1.0 / np.sqrt(1.0 - x * x)
    h = 1e-6
    fd = (ref(x + h) - ref(x - h)) / (2 * h)
    np.testing.assert_allclose(fd, slope if name == "asin" else -slope, rtol=1e-6)
    np.testing.assert_allclose(grad[4:7], fd, rtol=1e-6)
    assert np.all(grad[[0, 1, 2, 3, 7]] == 0.0)


def test_asin_float32_clamps_in_a_constant_folded_call_too(backend):
    def body(m):
        def k(a: m.array(dtype=float), out: m.array(dtype=float)):
            i = m.tid()
            out[i] = m.asin(1.5) + m.acos(-7.0) + a[i]
        return k
    out, _ = _run_unary(kl, body, [0.0])
    np.testing.assert_allclose(out, [np.pi / 2 + np.pi], rtol=1e-6)


@pytest.mark.parametrize("name", ["acos", "asin"])
def test_acos_asin_match_warp(name):
    wp = _warp()
    body = _acos if name == "acos" else _asin
    kl_out, kl_grad = _run_unary(kl, body, ARC_X, "float64", grad=True)
    wp_out, wp_grad = _run_unary(wp, body, ARC_X, "float64", grad=True)
    np.testing.assert_allclose(kl_out, wp_out, rtol=1e-12)
    np.testing.assert_allclose(kl_grad, wp_grad, rtol=1e-12)
    kl_out32, _ = _run_unary(kl, _asin32, ARC_X)
    wp_out32, _ = _run_unary(wp, _asin32, ARC_X)
    np.testing.assert_allclose(kl_out32, wp_out32, rtol=1e-6)


def _smooth_nan(m):
    def k(a: m.array(dtype=float), out: m.array(dtype=float)):
        i = m.tid()
        out[i] = m.smoothstep(0.0, 1.0, a[i]) + m.smoothstep(1.0, 0.0, a[i] * 2.0)
    return k


def _smooth_edges(m):
    def k(e: m.array(dtype=m.float64), out: m.array(dtype=m.float64)):
        i = m.tid()
        # edge0 == edge1: a step, flat on either side of the edge
        out[i] = m.smoothstep(e[i], e[i], m.float64(0.5))
    return k


def _smooth_edges_ref(e, x=0.5):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.fmin(np.fmax((x - e) / (e - e), 0.0), 1.0)
    return t * t * (3 - 2 * t)


def test_smoothstep_of_nan_is_zero_as_warps_clamp(backend):
    out, _ = _run_unary(kl, _smooth_nan, [math.nan, 0.25])
    t2 = 1.0 - 0.5  # smoothstep(1, 0, 0.5): t = (0.5 - 1) / (0 - 1)
    np.testing.assert_allclose(out, [0.0, 0.25 * 0.25 * (3 - 0.5) + t2 * t2 * (3 - 2 * t2)],
                               rtol=1e-6)


def test_smoothstep_with_equal_edges_has_zero_gradient_not_nan(backend):
    e = np.array([2.0, -1.0, 0.25])
    out, grad = _run_unary(kl, _smooth_edges, e, "float64", grad=True)
    np.testing.assert_array_equal(out, _smooth_edges_ref(e))
    h = 1e-6  # the value is piecewise constant in e away from e == 0.5
    fd = (_smooth_edges_ref(e + h) - _smooth_edges_ref(e - h)) / (2 * h)
    np.testing.assert_array_equal(fd, 0.0)
    np.testing.assert_array_equal(grad, fd)


def test_smoothstep_corners_match_warp():
    wp = _warp()
    for body, xs, dt in ((_smooth_nan, [math.nan, 0.25, 3.0], "float32"),
                         (_smooth_edges, [2.0, -1.0, 0.25], "float64")):
        kl_out, kl_grad = _run_unary(kl, body, xs, dt, grad=True)
        wp_out, wp_grad = _run_unary(wp, body, xs, dt, grad=True)
        np.testing.assert_allclose(kl_out, wp_out, rtol=1e-6)
        finite = np.isfinite(xs)  # (at a NaN x Warp's slope is NaN, kernlab's 0)
        np.testing.assert_allclose(kl_grad[finite], wp_grad[finite], rtol=1e-6)


def _vec_mat(m):
    def k(v: m.array(dtype=m.vec3d), a: m.array(dtype=m.types.matrix((3, 2), m.float64)),
          out: m.array(dtype=m.vec2d), out2: m.array(dtype=m.vec2d)):
        i = m.tid()
        out[i] = v[i] * a[i]
        out2[i] = m.mul(v[i], a[i]) * m.float64(2.0)
    return k


def _vec_mat_run(m, v, a, seed, seed2):
    kernel = _compile(m, _vec_mat)
    dev = {} if m is kl else {"device": "cpu"}
    mat32 = m.types.matrix((3, 2), m.float64)
    vs = m.array(v, dtype=m.vec3d, requires_grad=True, **dev)
    ms = m.array(a, dtype=mat32, requires_grad=True, **dev)
    out = m.zeros(len(v), dtype=m.vec2d, requires_grad=True, **dev)
    out2 = m.zeros(len(v), dtype=m.vec2d, requires_grad=True, **dev)
    tape = m.Tape()
    with tape:
        m.launch(kernel, len(v), inputs=[vs, ms], outputs=[out, out2], **dev)
    tape.backward(grads={out: m.array(seed, dtype=m.vec2d, **dev),
                         out2: m.array(seed2, dtype=m.vec2d, **dev)})
    return out.numpy(), out2.numpy(), vs.grad.numpy(), ms.grad.numpy()


def test_vector_times_matrix_is_the_row_vector_product_with_its_gradient(backend, rng):
    v, a = rng.standard_normal((4, 3)), rng.standard_normal((4, 3, 2))
    seed, seed2 = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    out, out2, gv, ga = _vec_mat_run(kl, v, a, seed, seed2)
    expect = np.einsum("nk,nkj->nj", v, a)
    np.testing.assert_allclose(out, expect, rtol=1e-12)
    np.testing.assert_allclose(out2, 2 * expect, rtol=1e-12)
    w = seed + 2 * seed2  # the loss is sum(seed * v^T A) + sum(seed2 * 2 v^T A)

    def loss(v, a):
        return np.sum(w * np.einsum("nk,nkj->nj", v, a))
    h = 1e-6
    fd_v, fd_a = np.zeros_like(v), np.zeros_like(a)
    for idx in np.ndindex(*v.shape):
        d = np.zeros_like(v); d[idx] = h
        fd_v[idx] = (loss(v + d, a) - loss(v - d, a)) / (2 * h)
    for idx in np.ndindex(*a.shape):
        d = np.zeros_like(a); d[idx] = h
        fd_a[idx] = (loss(v, a + d) - loss(v, a - d)) / (2 * h)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ga, fd_a, rtol=1e-6, atol=1e-8)


def test_vector_times_matrix_matches_warp(rng):
    wp = _warp()
    v, a = rng.standard_normal((3, 3)), rng.standard_normal((3, 3, 2))
    seed, seed2 = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    for x, y in zip(_vec_mat_run(kl, v, a, seed, seed2), _vec_mat_run(wp, v, a, seed, seed2)):
        np.testing.assert_allclose(x, y, rtol=1e-12)


def test_python_scope_star_of_matrices_is_the_matrix_product():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    m, v = kl.mat22(*a.ravel()), kl.vec2(1.0, 10.0)
    np.testing.assert_array_equal(m * m, a @ a)           # Warp: matmul, not element-wise
    np.testing.assert_array_equal(m * v, a @ [1.0, 10.0])
    np.testing.assert_array_equal(v * m, [1.0, 10.0] @ a)
    np.testing.assert_array_equal(m * 2.0, 2.0 * a)
    np.testing.assert_array_equal(kl.cw_mul(m, m), a * a)
    p = kl.mat22(m)
    p *= m
    np.testing.assert_array_equal(p, a @ a)
    np.testing.assert_array_equal(m, a)  # *= made a new value


def test_python_scope_matrix_product_matches_warp():
    wp = _warp()
    a = [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(np.array(kl.mat22(*a) * kl.mat22(*a)),
                                  np.array(wp.mat22(*a) * wp.mat22(*a)).reshape(2, 2))


def _ids(m):
    def k(o: m.array(dtype=m.int32)):
        i = m.tid()
        o[i] = i
    return k


def _dot3(m):
    def k(s: m.vec3, o: m.array(dtype=float)):
        o[0] = m.dot(s, m.vec3(1.0, 2.0, 3.0))
    return k


# (what is passed, the Python exception class Warp 1.19 raises for it)
BAD_LAUNCHES = [
    ("dim", -1, ValueError), ("dim", (1, 1, 1, 1, 1), ValueError), ("dim", 2.0, TypeError),
    ("dim", None, TypeError), ("device", "tpu", ValueError), ("vec", (1.0, 2.0), ValueError),
]


def _bad_launch(m, what, value):
    dev = "cpu" if value != "tpu" else value
    if what == "vec":
        m.launch(_compile(m, _dot3), 1, inputs=[value, m.zeros(1, dtype=float, device="cpu")],
                 device="cpu")
    else:
        m.launch(_compile(m, _ids), value if what == "dim" else 1,
                 inputs=[m.zeros(2, dtype=m.int32, device="cpu")], device=dev)


@pytest.mark.parametrize("what,value,exc", BAD_LAUNCHES)
def test_bad_launch_arguments_raise_warps_exception_class(what, value, exc):
    with pytest.raises(exc) as info:
        _bad_launch(kl, what, value)
    assert isinstance(info.value, kl.LaunchError)  # and still a kernlab launch error
    assert {"dim": "dim", "device": "'tpu'", "vec": "2 component(s)"}[what] in str(info.value)


@pytest.mark.parametrize("what,value,exc", BAD_LAUNCHES)
def test_warp_raises_the_same_class_for_bad_launch_arguments(what, value, exc):
    wp = _warp()
    with pytest.raises(exc):
        _bad_launch(wp, what, value)


def _weighted_sum(m):
    def k(a: m.array(dtype=float), out: m.array(dtype=float)):
        i = m.tid()
        m.atomic_add(out, 0, a[i] * float(i + 1))
    return k


def _clone_twice_backward(m, retain=False):
    """loss = sum((i + 1) * clone(a)[i]), backward twice."""
    dev = {} if m is kl else {"device": "cpu"}
    kernel = _compile(m, _weighted_sum)
    a = m.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True, **dev)
    loss = m.zeros(1, dtype=float, requires_grad=True, **dev)
    tape = m.Tape()
    with tape:
        b = m.clone(a, retain_grad=retain)
        m.launch(kernel, 3, inputs=[b], outputs=[loss], **dev)
    tape.backward(loss)
    first = a.grad.numpy().copy(), b.grad.numpy().copy()
    tape.backward(loss)
    return first, (a.grad.numpy().copy(), b.grad.numpy().copy())


def test_a_clones_gradient_is_consumed_so_backward_twice_accumulates_once_more():
    (a1, b1), (a2, b2) = _clone_twice_backward(kl)
    slope = np.array([1.0, 2.0, 3.0])  # d loss / d a
    np.testing.assert_array_equal(a1, slope)
    np.testing.assert_array_equal(a2, 2 * slope)  # was 3 * slope: the clone's kept gradient
    np.testing.assert_array_equal(b1, 0.0)        # went back to the source a second time
    np.testing.assert_array_equal(b2, 0.0)
    (a1, b1), (a2, b2) = _clone_twice_backward(kl, retain=True)
    np.testing.assert_array_equal(b1, slope)      # retain_grad keeps it (and so adds it again)
    np.testing.assert_array_equal(a2, a1 + b2)


def test_clone_gradients_match_warp():
    wp = _warp()
    for retain in (False, True):
        for x, y in zip(_clone_twice_backward(kl, retain), _clone_twice_backward(wp, retain)):
            np.testing.assert_array_equal(x[0], y[0])
            np.testing.assert_array_equal(x[1], y[1])


@pytest.mark.parametrize("make,expected,got", [
    (lambda: kl.vec3(1.0, 2.0), 3, 2), (lambda: kl.vec3([1.0, 2.0, 3.0, 4.0]), 3, 4),
    (lambda: kl.mat22(1.0, 2.0, 3.0), 4, 3), (lambda: kl.mat22(kl.vec2(1.0, 2.0)), 4, 2)])
def test_a_constructor_with_the_wrong_count_names_it_as_warp(make, expected, got):
    with pytest.raises(ValueError, match=f"expected {expected} elements, got {got}"):
        make()


def _where_conditions(m):
    def k(a: m.array(dtype=float), b: m.array(dtype=float), o: m.array(dtype=float, ndim=2)):
        i = m.tid()
        o[i, 0] = m.where(a, 1.0, 2.0)          # an array: not null
        o[i, 1] = m.where(b, 1.0, 2.0)          # a null array
        o[i, 2] = m.where(m.int64(i) - m.int64(1), a[i], 5.0)  # an integer: not 0
        o[i, 3] = m.where(m.uint8(i), m.vec2(1.0, 2.0), m.vec2(3.0, 4.0))[1]
    return k


def _where_run(m):
    dev = {} if m is kl else {"device": "cpu"}
    a = m.array([1.0, -1.0, 0.5], dtype=float, requires_grad=True, **dev)
    o = m.zeros((3, 4), dtype=float, requires_grad=True, **dev)
    tape = m.Tape()
    with tape:
        m.launch(_compile(m, _where_conditions), 3, inputs=[a, None, o], **dev)
    tape.backward(grads={o: m.array(np.ones((3, 4)), dtype=float, **dev)})
    return o.numpy(), a.grad.numpy()


def test_where_takes_an_integer_or_an_array_as_its_condition(backend):
    out, grad = _where_run(kl)
    np.testing.assert_array_equal(out, [[1, 2, 1, 4], [1, 2, 5, 2], [1, 2, 0.5, 2]])
    np.testing.assert_array_equal(grad, [1, 0, 1])  # a[i] is chosen where i - 1 != 0


def test_select_takes_an_integer_condition_too(backend):
    @kl.kernel
    def k(o: kl.array(dtype=float)):
        i = kl.tid()
        o[i] = kl.select(i, 1.0, 2.0)  # select(cond, value_if_false, value_if_true)
    o = kl.zeros(2, dtype=float)
    kl.launch(k, 2, outputs=[o])
    np.testing.assert_array_equal(o.numpy(), [1.0, 2.0])


def test_where_of_a_float_condition_is_still_a_type_error():
    @kl.kernel
    def k(o: kl.array(dtype=float)):
        o[0] = kl.where(o[0], 1.0, 2.0)
    with pytest.raises(kl.KernelTypeError if hasattr(kl, "KernelTypeError") else TypeError):
        kl.launch(k, 1, outputs=[kl.zeros(1, dtype=float)])


def test_where_conditions_match_warp():
    wp = _warp()
    for x, y in zip(_where_run(kl), _where_run(wp)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(2, device="cpu").assign(m.zeros(3, device="cpu")),
    lambda m: m.copy(m.zeros(2, device="cpu"), m.zeros(3, device="cpu"), count=3)])
def test_a_copy_or_assign_that_does_not_fit_is_a_runtime_error_as_in_warp(make):
    with pytest.raises(RuntimeError, match="3"):
        make(kl)
    with pytest.raises(ValueError):  # and still the ValueError kernlab raised before
        make(kl)


def test_tape_seeding_with_a_gradient_of_the_wrong_shape_is_a_runtime_error():
    a = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    o = kl.zeros(2, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.copy(o, a)
    with pytest.raises(RuntimeError):
        tape.backward(grads={o: kl.array([1.0, 1.0, 1.0], dtype=float)})


def test_python_scope_math_at_the_edges_is_silent_and_matches_c(recwarn):
    assert kl.log(0.0) == -math.inf and kl.exp(100.0) == math.inf
    assert math.isnan(kl.sqrt(-1.0))
    assert kl.acos(2.0) == 0.0 and kl.asin(-3.0) == pytest.approx(-math.pi / 2)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_vector_and_matrix_values_repr_as_warp():
    assert repr(kl.vec3(1.0, 2.0, 3.0)) == "vec3f([1.0, 2.0, 3.0])"  # Warp's, exactly
    assert repr(kl.vec3i(1, 2, 3)) == "vec3i([1, 2, 3])"
    assert repr(kl.quat()) == "quatf([0.0, 0.0, 0.0, 0.0])"
    assert repr(kl.mat22(1.0, 2.0, 3.0, 4.0)) == "mat22f([[1.0, 2.0], [3.0, 4.0]])"
    assert str(kl.vec3(1.0, 2.0, 3.0)) == "[1.0, 2.0, 3.0]"


@kl.kernel
def _entry_scale(x: kl.array(dtype=float), s: float, y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * s


def test_a_recorded_launch_reads_as_warps_tape_entry():
    # Warp's tape.launches holds [kernel, dim, max_blocks, inputs, outputs, device,
    # block_dim, metadata] lists; Warp's own tests index them (tape.launches[0][3][0] is a)
    x = kl.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = kl.zeros(3, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(_entry_scale, 3, inputs=[x, 2.5], outputs=[y])
    entry = tape.launches[0]
    assert len(entry) == 8 and entry[0] is _entry_scale and entry[1] == 3
    assert entry[3][0] is x and entry[3][1] == 2.5 and len(entry[3]) == 2
    assert len(entry[4]) == 1 and entry[4][0] is y
    assert str(entry[5]) == "cpu"
    kernel, dim, _, inputs, outputs, device, _, meta = entry  # unpacks like Warp's list
    assert (kernel, dim, meta) == (_entry_scale, 3, {})
    tape.backward(grads={y: kl.ones(3, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), [2.5, 2.5, 2.5])
