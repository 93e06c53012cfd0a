"""Array views, Warp's constructor arguments, copies and indexed arrays at Python scope and
in kernels. Expected values come from NumPy doing the same slicing on its own copy."""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import ArrayError


@kl.kernel
def _double(x: kl.array2d(dtype=float), y: kl.array2d(dtype=float)):
    i, j = kl.tid()
    y[i, j] = 2.0 * x[i, j]


@kl.kernel
def _sum1d(x: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(out, 0, x[i] * x[i])


def _grid(shape=(4, 6)):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("key", [
    (slice(1, None), slice(None, None, 2)), (slice(None, None, -1),), (-1,),
    (slice(-3, -1), slice(5, 0, -2)), (2, slice(1, 4)), (slice(3, 3),)])
def test_slices_match_numpy_and_share_memory(key):
    host = _grid()
    a = kl.array(host.copy(), dtype=float)
    v = a[key]
    np.testing.assert_array_equal(v.numpy(), host[key])
    v.fill_(-1.0)  # writes land in the source
    expected = host.copy()
    expected[key] = -1.0
    np.testing.assert_array_equal(a.numpy(), expected)


def test_zero_step_and_out_of_range():
    a = kl.zeros(4)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        a[::0]
    with pytest.raises(IndexError):
        a[4]


def test_kernel_reads_and_writes_through_strided_views():
    host = _grid((6, 8))
    a = kl.array(host.copy(), dtype=float)
    out = kl.zeros((8, 6), dtype=float)
    kl.launch(_double, dim=(3, 4), inputs=[a[::2, 1::2]], outputs=[out.transpose()[1::2, ::2]])
    expected = np.zeros((8, 6), np.float32)
    expected.T[1::2, ::2] = 2.0 * host[::2, 1::2]
    np.testing.assert_array_equal(out.numpy(), expected)


def test_view_bounds_are_checked_in_kernels():
    a = kl.zeros((4, 4), dtype=float)
    with pytest.raises(IndexError):
        kl.launch(_double, dim=(4, 4), inputs=[a[:2, :]], outputs=[kl.zeros((4, 4))])


def test_view_gradients_land_in_the_source_gradient():
    x = kl.array(_grid((3, 4)), dtype=float, requires_grad=True)
    loss = kl.zeros(1, dtype=float, requires_grad=True)
    col = x[:, 1]
    assert col.grad is not None and not col.is_contiguous
    with kl.Tape() as tape:
        kl.launch(_sum1d, dim=3, inputs=[col], outputs=[loss])
    tape.backward(loss=loss)
    expected = np.zeros((3, 4), np.float32)
    expected[:, 1] = 2.0 * _grid((3, 4))[:, 1]  # d(sum x^2)/dx = 2x on the column
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_reshape_flatten_transpose_view():
    host = _grid((2, 6))
    a = kl.array(host.copy(), dtype=float, requires_grad=True)
    r = a.reshape((3, -1))
    assert r.shape == (3, 4) and r.grad.shape == (3, 4)
    np.testing.assert_array_equal(r.numpy(), host.reshape(3, 4))
    np.testing.assert_array_equal(a.flatten().numpy(), host.ravel())
    t = a.transpose()
    assert t.shape == (6, 2) and t.strides == (4, 24) and not t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), host.T)
    np.testing.assert_array_equal(t.contiguous().numpy(), host.T)
    with pytest.raises(RuntimeError, match="cannot reshape array of shape"):
        a.reshape((5, 2))
    with pytest.raises(RuntimeError, match="non-contiguous"):
        t.reshape(12)
    v = kl.array(host.reshape(3, 4), dtype=kl.vec4).view(float)
    assert v.shape == (3, 4)
    bits = a.view(kl.int32)
    np.testing.assert_array_equal(bits.numpy(), host.view(np.int32))
    with pytest.raises(TypeError, match="cannot create an array view"):
        a.view(kl.float64)


def test_constructor_from_pointer_strides_and_capacity():
    host = _grid((3, 4))
    a = kl.array(host, dtype=float, copy=False)
    assert a.ptr == host.ctypes.data and a._ref is host
    t = kl.array(ptr=a.ptr, dtype=float, shape=(4, 3), strides=(4, 16), device="cpu")
    np.testing.assert_array_equal(t.numpy(), host.T)
    s = kl.zeros((3, 3), dtype=kl.int32, strides=(16, 4))
    assert s.capacity == 4 + 2 * 16 + 2 * 4 and s.strides == (16, 4)
    assert kl.empty((0, 3), dtype=kl.int32, strides=(4, 16)).ptr is None
    with pytest.raises(ValueError, match="Invalid number of strides"):
        kl.empty((2, 3), strides=(4,))
    with pytest.raises(NotImplementedError, match="Negative strides"):
        kl.empty((3, 3), dtype=kl.int32, strides=(16, -4))
    with pytest.raises(ValueError, match="Array shapes must be non-negative"):
        kl.zeros((2, -1))


def test_deleter_runs_once_when_the_array_goes():
    calls = []
    host = np.zeros(4, np.float32)
    a = kl.array(ptr=host.ctypes.data, dtype=float, shape=4, device="cpu",
                 deleter=lambda p, n: calls.append((p, n)))
    del a
    assert calls == [(host.ctypes.data, 16)]


def test_vector_dtype_from_multiples_and_empty_lists():
    a = kl.array(np.arange(24, dtype=np.float32).reshape(4, 6), dtype=kl.vec3)
    assert a.shape == (4, 2)
    np.testing.assert_array_equal(a.numpy().ravel(), np.arange(24))
    assert kl.array([], dtype=kl.vec2).shape == (0,)


def test_retain_grad_rules():
    with pytest.raises(ValueError):
        kl.zeros(3, retain_grad=True)
    a = kl.zeros(3, requires_grad=True, retain_grad=True)
    assert a.retain_grad
    a.requires_grad = False
    assert not a.retain_grad


def test_empty_array_interface_and_strides():
    a = kl.zeros((1, 0), dtype=kl.vec2)
    na = np.asarray(a)
    assert na.shape == (1, 0, 2) and na.strides == (0, 8, 4)


def test_copy_rules_and_strided_copies():
    src = kl.array(_grid((4, 4)), dtype=float)
    dst = kl.zeros((2, 2), dtype=float)
    kl.copy(dst, src[::2, 1::2])
    np.testing.assert_array_equal(dst.numpy(), _grid((4, 4))[::2, 1::2])
    with pytest.raises(ArrayError, match="Source offset must be non-negative"):
        kl.copy(dst, src, src_offset=-1)
    with pytest.raises(ArrayError, match="must be integers"):
        kl.copy(dst, src, count=2.0)
    with pytest.raises(RuntimeError, match=r"destination shape=\(4, 2\), source shape=\(2, 4\)"):
        kl.copy(kl.zeros((8, 2), dtype=float)[::2], src[::2, :])
    with pytest.raises(RuntimeError, match="only supported for 1-D"):
        kl.copy(dst, src[::2, ::2], count=2)
    line = kl.zeros(4, dtype=float)
    kl.copy(line, src[1, ::2], dest_offset=1, src_offset=1, count=1)
    np.testing.assert_array_equal(line.numpy(), [0, _grid((4, 4))[1, 2], 0, 0])


def test_indexed_arrays_read_and_copy():
    host = _grid((5, 5))
    a = kl.array(host, dtype=float)
    idx = kl.array([4, 0, 2], dtype=kl.int32)
    sel = a[idx, idx]
    assert isinstance(sel, kl.indexedarray) and sel.shape == (3, 3)
    np.testing.assert_array_equal(sel.numpy(), host[[4, 0, 2]][:, [4, 0, 2]])
    out = kl.zeros_like(sel)
    kl.copy(out, sel)
    np.testing.assert_array_equal(out.numpy(), host[np.ix_([4, 0, 2], [4, 0, 2])])
    kl.copy(a[idx], kl.zeros((3, 5), dtype=float))
    assert not a.numpy()[[4, 0, 2]].any() and a.numpy()[1].tolist() == host[1].tolist()


@pytest.mark.parametrize("dtype", [kl.float32, kl.float64, kl.int32, kl.uint32])
def test_array_arithmetic_matches_numpy(dtype):
    host = np.array([1, 2, 3], dtype=dtype.np)
    a, s = kl.array(host, dtype=dtype), dtype.np.type(5)
    assert isinstance(np.sin(a), np.ndarray) and isinstance(host * a, np.ndarray)  # NumPy's
    np.testing.assert_array_equal((a + s).numpy(), host + s)
    np.testing.assert_array_equal((s - a).numpy(), s - host)
    np.testing.assert_array_equal((a * a).numpy(), host * host)
    np.testing.assert_array_equal((s % a).numpy(), s % host)
    b = kl.array(host, dtype=dtype)
    b += a
    np.testing.assert_array_equal(b.numpy(), 2 * host)


def test_array_arithmetic_is_differentiable_on_a_tape():
    x = kl.array([1.0, -2.0, 3.0], dtype=float, requires_grad=True)
    loss = kl.zeros(1, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        y = x * x - 3.0 * x  # dy/dx = 2x - 3
        kl.launch(_sum1d, dim=3, inputs=[y.view(float)], outputs=[loss])
    tape.backward(loss=loss)
    xs = np.array([1.0, -2.0, 3.0])
    # _sum1d sums y^2, so d/dx = 2 y (2x - 3)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (xs * xs - 3 * xs) * (2 * xs - 3))


def test_vector_arrays_scale_by_numbers():
    v = kl.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=kl.vec3)
    np.testing.assert_array_equal((v * 2.0).numpy(), 2 * np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal((-v).numpy(), -np.arange(6).reshape(2, 3))
    with pytest.raises(ArrayError, match="same shape"):
        v + kl.zeros(3, dtype=kl.vec3)


def test_numpy_operands_and_ufuncs():
    a = kl.array([1.0, 2.0, 3.0], dtype=float)
    r = a * np.float32(2.0)  # the array on the left: a kernel, an array back
    assert isinstance(r, kl.array)
    np.testing.assert_array_equal(r.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal((a + np.ones(3, np.float32)).numpy(), [2.0, 3.0, 4.0])
    assert isinstance(np.ones(3, np.float32) + a, np.ndarray)  # NumPy on the left: NumPy's
    np.testing.assert_array_equal(np.isfinite(a), [True, True, True])  # ufuncs read it


def test_indexedarray_spellings():
    from typing import Literal
    assert kl.indexedarray[kl.int32, Literal[2]].ndim == 2
    a = kl.array([10, 11, 12, 13], dtype=kl.int32)
    sel = kl.indexedarray1d(a, [kl.array([3, 1], dtype=kl.int32)])
    np.testing.assert_array_equal(sel.numpy(), [13, 11])
    with pytest.raises(IndexError):
        kl.indexedarray(a, [kl.array([4], dtype=kl.int32)])
