"""The kernel language: thread indices, array indexing and shapes, and launches.

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import numpy as np

import kernlab as kl
from helpers import run, sum_2d_rows


# ---- thread indices -----------------------------------------------------------------------

@kl.kernel
def tid_1d(out: kl.array(dtype=kl.int32)):
    i = kl.tid()
    out[i] = i


@kl.kernel
def tid_2d(out: kl.array(dtype=kl.int32, ndim=2)):
    i, j = kl.tid()
    out[i, j] = i * 10 + j


@kl.kernel
def tid_3d(out: kl.array(dtype=kl.int32, ndim=3)):
    i, j, k = kl.tid()
    out[i, j, k] = i * 100 + j * 10 + k


def test_tid_1d(backend):
    out = kl.zeros(5, dtype=kl.int32)
    run(tid_1d, 5, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(5))


def test_tid_2d(backend):
    out = kl.zeros((3, 4), dtype=kl.int32)
    run(tid_2d, (3, 4), out)
    i, j = np.indices((3, 4))
    np.testing.assert_array_equal(out.numpy(), i * 10 + j)


def test_tid_3d(backend):
    out = kl.zeros((2, 3, 4), dtype=kl.int32)
    run(tid_3d, (2, 3, 4), out)
    i, j, k = np.indices((2, 3, 4))
    np.testing.assert_array_equal(out.numpy(), i * 100 + j * 10 + k)


def test_tid_2d_on_a_launch_large_enough_to_run_in_parallel(backend):
    out = kl.zeros((300, 301), dtype=kl.int32)
    run(tid_2d, (300, 301), out)
    i, j = np.indices((300, 301))
    np.testing.assert_array_equal(out.numpy(), i * 10 + j)


# ---- arrays -------------------------------------------------------------------------------

def test_2d_indexing_and_shape(backend, rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    out = kl.zeros(4, dtype=float)
    run(sum_2d_rows, 4, kl.array(a, dtype=float), out)
    np.testing.assert_allclose(out.numpy(), a.sum(axis=1), rtol=1e-5)


@kl.kernel
def copy_3d(a: kl.array(dtype=float, ndim=3), out: kl.array(dtype=float, ndim=3),
            dims: kl.array(dtype=int)):
    i, j, k = kl.tid()
    out[i, j, k] = a[i, j, k] * 2.0
    if i == 0 and j == 0 and k == 0:
        dims[0] = a.shape[0]
        dims[1] = a.shape[1]
        dims[2] = a.shape[2]


def test_3d_indexing_and_shape(backend, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out, dims = kl.zeros((2, 3, 4), dtype=float), kl.zeros(3, dtype=int)
    run(copy_3d, (2, 3, 4), kl.array(a, dtype=float), out, dims)
    np.testing.assert_array_equal(out.numpy(), a * np.float32(2))
    np.testing.assert_array_equal(dims.numpy(), [2, 3, 4])


@kl.kernel
def vec3_lengths(points: kl.array(dtype=kl.vec3), out: kl.array(dtype=float),
                 shifted: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    p = points[i]
    out[i] = kl.sqrt(p[0] * p[0] + p.y * p.y + p.z * p.z)
    shifted[i] = p + kl.vec3(1.0, 0.0, 0.0)


def test_array_of_vec3(backend, rng):
    pts = rng.standard_normal((5, 3)).astype(np.float32)
    out, shifted = kl.zeros(5, dtype=float), kl.zeros(5, dtype=kl.vec3)
    run(vec3_lengths, 5, kl.array(pts, dtype=kl.vec3), out, shifted)
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(pts, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(shifted.numpy(), pts + np.float32([1, 0, 0]))


@kl.kernel
def transform_points(ms: kl.array(dtype=kl.mat33), pts: kl.array(dtype=kl.vec3),
                     out: kl.array(dtype=kl.vec3), diag: kl.array(dtype=float)):
    i = kl.tid()
    m = ms[i]
    out[i] = m * pts[i]
    diag[i] = m[0, 0] + m[1, 1] + m[2, 2]


def test_array_of_mat33(backend, rng):
    ms = rng.standard_normal((4, 3, 3)).astype(np.float32)
    pts = rng.standard_normal((4, 3)).astype(np.float32)
    out, diag = kl.zeros(4, dtype=kl.vec3), kl.zeros(4, dtype=float)
    run(transform_points, 4, kl.array(ms, dtype=kl.mat33), kl.array(pts, dtype=kl.vec3),
        out, diag)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nj->ni", ms, pts), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(diag.numpy(), np.trace(ms, axis1=1, axis2=2), rtol=1e-6)


@kl.kernel
def store_components_into_vec_array(a: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    a[i][1] = float(i)


def test_assigning_a_component_of_an_array_element(backend):
    a = kl.zeros(3, dtype=kl.vec3)
    run(store_components_into_vec_array, 3, a)
    expected = np.zeros((3, 3), np.float32)
    expected[:, 1] = np.arange(3)
    np.testing.assert_array_equal(a.numpy(), expected)


# ---- launches -----------------------------------------------------------------------------

def test_zero_dim_launch_runs_nothing(backend):
    out = kl.full(3, 5, dtype=kl.int32)
    run(tid_1d, 0, out)
    np.testing.assert_array_equal(out.numpy(), [5, 5, 5])


def test_kernel_source_ir_mentions_the_kernel():
    text = kl.source(tid_1d, "ir")
    assert "tid_1d" in text and "tid" in text



@kl.kernel
def row_sums(m: kl.array2d(dtype=float), out: kl.array1d(dtype=float)):
    i, j = kl.tid()
    kl.atomic_add(out, i, m[i, j])


def test_warp_fixed_ndim_array_annotations(backend):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = kl.array2d(data, dtype=float)
    out = kl.zeros(3)
    kl.launch(row_sums, (3, 4), inputs=[m, out])
    assert m.ndim == 2
    np.testing.assert_allclose(out.numpy(), data.sum(axis=1))
