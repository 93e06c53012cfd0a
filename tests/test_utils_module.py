"""kl.utils: reductions, scans, sorts, run-length encoding and casts, checked against
NumPy computations of the same quantities."""
import numpy as np
import pytest

import kernlab as kl


def test_array_sum_whole_axis_and_count():
    rng = np.random.default_rng(1)
    data = rng.random((4, 5, 3))
    a = kl.array(data, dtype=kl.float64)
    assert np.isclose(kl.utils.array_sum(a), data.sum())
    for axis in (0, 1, -1):
        got = kl.utils.array_sum(a, axis=axis).numpy()
        np.testing.assert_allclose(got, data.sum(axis=axis, keepdims=True))
    out = kl.zeros((4, 1, 3), dtype=kl.float64)
    assert kl.utils.array_sum(a, out=out, value_count=2, axis=1) is out
    np.testing.assert_allclose(out.numpy(), data[:, :2].sum(axis=1, keepdims=True))
    # whole-array sums of vectors are component-wise; value_count counts elements
    v = kl.array(data.reshape(-1, 3), dtype=kl.vec3d)
    np.testing.assert_allclose(kl.utils.array_sum(v, value_count=7),
                               data.reshape(-1, 3)[:7].sum(axis=0))


def test_array_inner_matches_numpy():
    rng = np.random.default_rng(2)
    x, y = rng.random((6, 2)), rng.random((6, 2))
    a, b = kl.array(x, dtype=kl.vec2d), kl.array(y, dtype=kl.vec2d)
    assert np.isclose(kl.utils.array_inner(a, b), (x * y).sum())
    m, n = rng.random((3, 4)).astype(np.float32), rng.random((3, 4)).astype(np.float32)
    got = kl.utils.array_inner(kl.array(m), kl.array(n), axis=0).numpy()
    np.testing.assert_allclose(got, (m * n).sum(axis=0, keepdims=True), rtol=1e-6)
    assert kl.utils.array_inner(kl.array(m), kl.array(n), count=0) == 0.0


def test_reduction_errors():
    a = kl.ones((2, 3), dtype=kl.float32)
    with pytest.raises(IndexError, match=r"array_sum\(\) axis 2 is out of bounds"):
        kl.utils.array_sum(a, axis=2)
    with pytest.raises(ValueError, match="same shape"):
        kl.utils.array_inner(a, kl.ones(6, dtype=kl.float32))
    with pytest.raises(RuntimeError, match=r"out array should have shape \(1,\)$"):
        kl.utils.array_sum(a, out=kl.zeros(2, dtype=kl.float32))
    with pytest.raises(RuntimeError, match="Unsupported data type: int32$"):
        kl.utils.array_sum(kl.ones(3, dtype=kl.int32))


def test_array_scan_inclusive_exclusive_strided():
    data = np.array([4, -1, 7, 0, 3], dtype=np.int64)
    base = np.zeros(10, dtype=np.int64)
    base[::2] = data
    src = kl.array(base, dtype=kl.int64)[::2]
    inc_base = kl.full(10, -9, dtype=kl.int64)
    exc = kl.empty(5, dtype=kl.int64)
    kl.utils.array_scan(src, inc_base[::2], True)
    kl.utils.array_scan(src, exc, False)
    np.testing.assert_array_equal(inc_base.numpy()[::2], np.cumsum(data))
    np.testing.assert_array_equal(inc_base.numpy()[1::2], -9)  # only the view is written
    np.testing.assert_array_equal(exc.numpy(), np.concatenate([[0], np.cumsum(data)[:-1]]))
    with pytest.raises(RuntimeError, match=r"Unsupported data type: vec3h$"):
        kl.utils.array_scan(kl.zeros(2, dtype=kl.vec3h), kl.zeros(2, dtype=kl.vec3h))


@pytest.mark.parametrize("dtype,np_dtype", [(kl.int32, np.int32), (kl.float32, np.float32),
                                            (kl.uint64, np.uint64), (kl.float64, np.float64)])
def test_radix_sort_pairs_is_a_stable_sort(dtype, np_dtype):
    rng = np.random.default_rng(3)
    n = 50
    keys = rng.integers(0, 9, n).astype(np_dtype)
    if np.issubdtype(np_dtype, np.floating) or np.issubdtype(np_dtype, np.signedinteger):
        keys = keys - np_dtype(4)
    vals = np.arange(n, dtype=np.int32)
    k = kl.array(np.concatenate([keys, keys]), dtype=dtype)
    v = kl.array(np.concatenate([vals, vals]), dtype=kl.int32)
    kl.utils.radix_sort_pairs(k, v, n)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(k.numpy()[:n], keys[order])
    np.testing.assert_array_equal(v.numpy()[:n], vals[order])


def test_radix_sort_pairs_bit_range_and_errors():
    keys = np.array([9, 2, 6, 3, 12, 5], dtype=np.int32)
    k = kl.array(np.concatenate([keys, keys]), dtype=kl.int32)
    v = kl.array(np.arange(12), dtype=kl.int32)
    kl.utils.radix_sort_pairs(k, v, 6, begin_bit=1, end_bit=3)  # compares bits 1..2
    order = np.argsort((keys >> 1) & 3, kind="stable")
    np.testing.assert_array_equal(k.numpy()[:6], keys[order])
    with pytest.raises(RuntimeError, match=r"Invalid radix sort bit range \[0, 33\)"):
        kl.utils.radix_sort_pairs(k, v, 6, end_bit=33)
    with pytest.raises(RuntimeError, match="2\\*count elements"):
        kl.utils.radix_sort_pairs(k, v, 7)
    with pytest.raises(RuntimeError, match="requires a contiguous keys array"):
        kl.utils.radix_sort_pairs(k[::2], v, 3)


def test_segmented_sort_pairs():
    keys = np.array([5.0, -1.0, 3.0, 8.0, 2.0, 2.0, 0.0], dtype=np.float32)
    k = kl.array(np.concatenate([keys, keys]), dtype=kl.float32)
    v = kl.array(np.arange(14), dtype=kl.int32)
    kl.utils.segmented_sort_pairs(k, v, 7, kl.array([0, 3], dtype=kl.int32),
                                  kl.array([3, 6], dtype=kl.int32))
    expect_k, expect_v = keys.copy(), np.arange(7)
    for s, e in ((0, 3), (3, 6)):
        order = np.argsort(keys[s:e], kind="stable") + s
        expect_k[s:e], expect_v[s:e] = keys[order], order
    np.testing.assert_array_equal(k.numpy()[:7], expect_k)
    np.testing.assert_array_equal(v.numpy()[:7], expect_v)
    with pytest.raises(ValueError, match="Invalid segment range at index 0"):
        kl.utils.segmented_sort_pairs(k, v, 7, kl.array([4, 8], dtype=kl.int32))
    with pytest.raises(TypeError, match="count must be an integer"):
        kl.utils.segmented_sort_pairs(k, v, 1.5, kl.array([0, 1], dtype=kl.int32))


def test_runlength_encode():
    data = np.array([3, 3, -1, -1, -1, 4, 3, 3], dtype=np.int32)
    vals, lens = kl.empty(8, dtype=kl.int32), kl.empty(8, dtype=kl.int32)
    runs = kl.utils.runlength_encode(kl.array(data), vals, lens)
    assert runs == 4
    np.testing.assert_array_equal(vals.numpy()[:4], [3, -1, 4, 3])
    np.testing.assert_array_equal(lens.numpy()[:4], [2, 3, 1, 2])
    count = kl.zeros(1, dtype=kl.int32)
    assert kl.utils.runlength_encode(kl.array(data), vals, lens, run_count=count,
                                     value_count=3) is count
    assert count.numpy()[0] == 2
    with pytest.raises(RuntimeError, match="Unsupported data type: float32$"):
        kl.utils.runlength_encode(kl.zeros(2), kl.zeros(2), kl.zeros(2, dtype=kl.int32))


def test_array_cast():
    src = kl.array(np.array([1.75, -2.5, 3.0], dtype=np.float32))
    dst = kl.zeros(3, dtype=kl.int32)
    kl.utils.array_cast(src, dst)
    np.testing.assert_array_equal(dst.numpy(), [1, -2, 3])  # C casts truncate
    vecs = kl.array(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=kl.vec2)
    flat = kl.zeros(4, dtype=kl.float64)
    kl.utils.array_cast(vecs, flat, count=1)  # flattened: one vec2 is two scalars
    np.testing.assert_array_equal(flat.numpy(), [1.0, 2.0, 0.0, 0.0])
    with pytest.raises(RuntimeError, match=r"Array shapes do not match"):
        kl.utils.array_cast(kl.zeros((2, 3)), kl.zeros((3, 2), dtype=kl.float64))
    with pytest.raises(RuntimeError, match=r"Cast count \(5\) exceeds"):
        kl.utils.array_cast(src, dst, count=5)
