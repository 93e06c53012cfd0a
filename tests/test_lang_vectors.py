"""The kernel language: vectors and matrices.

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import numpy as np
import pytest

import kernlab as kl
from helpers import run


# ---- vectors and matrices -----------------------------------------------------------------

@kl.kernel
def build_vectors(x: float, out: kl.array(dtype=kl.vec3), outd: kl.array(dtype=kl.vec3d)):
    out[0] = kl.vec3(x, 2.0, 3.0)
    out[1] = kl.vec3(x)
    outd[0] = kl.vec3d(kl.float64(x), kl.float64(1.0) / kl.float64(3.0), kl.float64(0.0))


def test_vector_constructors(backend):
    out, outd = kl.zeros(2, dtype=kl.vec3), kl.zeros(1, dtype=kl.vec3d)
    run(build_vectors, 1, 1.5, out, outd)
    np.testing.assert_array_equal(out.numpy(), [[1.5, 2.0, 3.0], [1.5, 1.5, 1.5]])
    assert outd.numpy().dtype == np.float64
    np.testing.assert_array_equal(outd.numpy()[0], [1.5, 1.0 / 3.0, 0.0])


@kl.kernel
def build_matrices(m2: kl.array(dtype=kl.mat22), m3: kl.array(dtype=kl.mat33)):
    m2[0] = kl.mat22(1.0, 2.0, 3.0, 4.0)
    m3[0] = kl.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    m3[1] = kl.mat33(kl.vec3(1.0, 2.0, 3.0), kl.vec3(4.0, 5.0, 6.0), kl.vec3(7.0, 8.0, 9.0))


def test_matrix_constructors_are_row_major(backend):
    m2, m3 = kl.zeros(1, dtype=kl.mat22), kl.zeros(2, dtype=kl.mat33)
    run(build_matrices, 1, m2, m3)
    np.testing.assert_array_equal(m2.numpy()[0], [[1.0, 2.0], [3.0, 4.0]])
    expected = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(m3.numpy()[0], expected)
    np.testing.assert_array_equal(m3.numpy()[1], expected)


@kl.kernel
def vec_scalar_ops(v: kl.vec3, s: float, out: kl.array(dtype=kl.vec3)):
    out[0] = s * v
    out[1] = v * s
    out[2] = v / s
    out[3] = v + v
    out[4] = v - kl.vec3(1.0)
    out[5] = -v


@pytest.mark.parametrize("as_value", [tuple, np.array, lambda v: kl.vec3(*v)],
                         ids=["tuple", "numpy", "kl.vec3"])
def test_vector_arithmetic(backend, as_value):
    v = np.array([1.0, -2.0, 4.0], np.float32)
    s = np.float32(2.5)
    out = kl.zeros(6, dtype=kl.vec3)
    run(vec_scalar_ops, 1, as_value([1.0, -2.0, 4.0]), s, out)
    expected = np.stack([s * v, v * s, v / s, v + v, v - 1, -v])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-7)


@kl.kernel
def mat_ops(m: kl.mat33, v: kl.vec3, s: float, mout: kl.array(dtype=kl.mat33),
            vout: kl.array(dtype=kl.vec3)):
    mout[0] = s * m
    vout[0] = m * v
    vout[1] = m @ v
    vout[2] = kl.mul(m, v)


def test_scalar_times_matrix_and_matrix_times_vector(backend, rng):
    m = rng.standard_normal((3, 3)).astype(np.float32)
    v = rng.standard_normal(3).astype(np.float32)
    mout, vout = kl.zeros(1, dtype=kl.mat33), kl.zeros(3, dtype=kl.vec3)
    run(mat_ops, 1, m, v, 2.0, mout, vout)
    np.testing.assert_allclose(mout.numpy()[0], 2.0 * m, rtol=1e-6)
    for k in range(3):
        np.testing.assert_allclose(vout.numpy()[k], m @ v, rtol=1e-5, atol=1e-6)


@kl.kernel
def components(v: kl.vec3, m: kl.mat33, r: int, c: int, out: kl.array(dtype=float)):
    out[0] = v[0]
    out[1] = v.y
    out[2] = v.z
    out[3] = v[r]
    out[4] = m[1, 2]
    out[5] = m[r, c]


def test_component_and_matrix_element_access(backend):
    v = np.array([1.0, 2.0, 3.0], np.float32)
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    out = kl.zeros(6, dtype=float)
    run(components, 1, v, m, 2, 0, out)
    np.testing.assert_array_equal(out.numpy(), [v[0], v[1], v[2], v[2], m[1, 2], m[2, 0]])


@kl.kernel
def copy_then_write(out: kl.array(dtype=kl.vec3)):
    p = kl.vec3(1.0, 2.0, 3.0)
    q = p
    q[0] = 10.0
    q.y = 20.0
    out[0] = p
    out[1] = q


def test_component_assignment_writes_a_copy_not_an_alias(backend):
    out = kl.zeros(2, dtype=kl.vec3)
    run(copy_then_write, 1, out)
    np.testing.assert_array_equal(out.numpy(), [[1.0, 2.0, 3.0], [10.0, 20.0, 3.0]])


@kl.kernel
def local_from_array_then_write(a: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3)):
    v = a[0]
    v[1] = 99.0
    out[0] = v


def test_writing_a_loaded_vector_leaves_the_array_unchanged(backend):
    a = kl.array(np.array([[1.0, 2.0, 3.0]], np.float32), dtype=kl.vec3)
    out = kl.zeros(1, dtype=kl.vec3)
    run(local_from_array_then_write, 1, a, out)
    np.testing.assert_array_equal(a.numpy()[0], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out.numpy()[0], [1.0, 99.0, 3.0])


@kl.kernel
def bump_parameter_components(v: kl.vec3, m: kl.mat22, out: kl.array(dtype=float)):
    i = kl.tid()
    v[0] += 1.0
    m[0, 0] += 1.0
    out[i] = v[0] + m[0, 0]


def test_writing_a_vector_parameter_is_private_to_each_thread(backend):
    v = np.array([1.0, 2.0, 3.0], np.float32)
    m = np.eye(2, dtype=np.float32)
    out = kl.zeros(3, dtype=float)
    run(bump_parameter_components, 3, v, m, out)
    np.testing.assert_array_equal(out.numpy(), [(1.0 + 1.0) + (1.0 + 1.0)] * 3)
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])  # the caller's values are untouched
    np.testing.assert_array_equal(m, np.eye(2))


@kl.kernel
def matrix_element_write(out: kl.array(dtype=kl.mat22)):
    m = kl.mat22(1.0, 2.0, 3.0, 4.0)
    n = m
    n[1, 0] = 30.0
    out[0] = m
    out[1] = n


def test_matrix_element_assignment_writes_a_copy(backend):
    out = kl.zeros(2, dtype=kl.mat22)
    run(matrix_element_write, 1, out)
    np.testing.assert_array_equal(out.numpy(), [[[1.0, 2.0], [3.0, 4.0]],
                                                [[1.0, 2.0], [30.0, 4.0]]])


vec3bool = kl.types.vector(length=3, dtype=bool)


@kl.kernel
def bool_vectors(flags: kl.array(dtype=kl.int32), out: kl.array(dtype=kl.int32)):
    a = vec3bool(flags[0] != 0, flags[1] != 0, flags[2] != 0)
    b = a  # a copy: writing b leaves a as it was
    b[1] = not a[1]
    for i in range(3):
        out[i] = kl.where(a[i], 1, 0)
        out[3 + i] = kl.where(b[i], 1, 0)


def test_bool_vectors_are_built_from_bools_and_copied_on_assignment(backend):
    out = kl.zeros(6, dtype=kl.int32)
    run(bool_vectors, 1, kl.array(np.array([1, 0, 1], np.int32)), out)
    np.testing.assert_array_equal(out.numpy(), [1, 0, 1, 1, 1, 1])


def test_python_side_components_and_unknown_attributes_name_the_type():
    v2, v3 = kl.vec2(1.0, 2.0), kl.vec3d(1.0, 2.0, 3.0)
    assert (v3.x, v3.y, v3.z) == (1.0, 2.0, 3.0)
    v3.z = 7.0
    assert v3[2] == 7.0
    with pytest.raises(AttributeError, match=r"^'vec2f' object has no attribute 'z'$"):
        v2.z  # noqa: B018 — past the end
    assert not hasattr(v2, "w")
    with pytest.raises(AttributeError, match=r"^'vec3d' object has no attribute 'xy'$"):
        v3.xy = 9.0  # swizzles are not attributes, reading or writing
    with pytest.raises(AttributeError, match=r"^'mat22f' object has no attribute 'foo'$"):
        kl.mat22(1.0, 2.0, 3.0, 4.0).foo  # noqa: B018
    v3.note = "free to set"  # other names may be set, as on Warp's values
    assert v3.note == "free to set"
