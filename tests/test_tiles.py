"""Tiles (Warp's tile programming model): each op against NumPy, gradients against float64
finite differences, and bad input as kernlab errors naming the kernel and the line.

Every block of a tiled launch is one thread owning its whole tile (Warp on the CPU), so
the expected values are plain NumPy on the same blocks of the arrays.
"""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import GradientError, KernelError, LaunchError

TM, TN = 2, 16


def _complex(a):
    return a[..., 0].astype(np.float64) + 1j * a[..., 1].astype(np.float64)


@kl.kernel
def copy_blocks(a: kl.array2d(dtype=float), b: kl.array2d(dtype=float)):
    i, j = kl.tid()
    t = kl.tile_load(a, shape=(2, 4), offset=(i * 2, j * 4))
    kl.tile_store(b, t, offset=(i * 2, j * 4))


@kl.kernel
def shift_blocks(a: kl.array2d(dtype=float), b: kl.array2d(dtype=float)):
    i, j = kl.tid()  # each block reads 2x4 one row and one column down: past the end reads 0
    t = kl.tile_load(a, shape=(2, 4), offset=(i * 2 + 1, j * 4 + 1))
    kl.tile_store(b, t, offset=(i * 2, j * 4))


def test_load_store_blocks_and_zero_fill(backend, rng):
    a_np = rng.standard_normal((6, 8)).astype(np.float32)
    a, b = kl.array(a_np), kl.zeros((6, 8), dtype=float)
    kl.launch_tiled(copy_blocks, dim=(3, 2), inputs=[a, b], block_dim=8)
    np.testing.assert_array_equal(b.numpy(), a_np)
    kl.launch_tiled(shift_blocks, dim=(3, 2), inputs=[a, b], block_dim=8)
    padded = np.zeros((7, 9), np.float32)
    padded[:6, :8] = a_np
    np.testing.assert_array_equal(b.numpy(), padded[1:, 1:])


@kl.kernel
def fft_rows(x: kl.array2d(dtype=kl.vec2), y: kl.array2d(dtype=kl.vec2),
             z: kl.array2d(dtype=kl.vec2)):
    i, _, _ = kl.tid()
    t = kl.tile_load(x, shape=(TM, TN), offset=(i * TM, 0))
    kl.tile_fft(t)
    kl.tile_store(y, t, offset=(i * TM, 0))
    kl.tile_ifft(t)
    kl.tile_store(z, t, offset=(i * TM, 0))


@kl.kernel
def dft_rows(x: kl.array2d(dtype=kl.vec2d), y: kl.array2d(dtype=kl.vec2d)):
    t = kl.tile_load(x, shape=(2, 12))  # not a power of two: the direct DFT
    kl.tile_ifft(t)
    kl.tile_store(y, t)


def test_fft_of_a_size_that_is_not_a_power_of_two(backend, rng):
    x_np = rng.standard_normal((2, 12, 2))
    x = kl.array(x_np, dtype=kl.vec2d)
    y = kl.zeros_like(x)
    kl.launch_tiled(dft_rows, dim=1, inputs=[x, y], block_dim=8)
    want = 12 * np.fft.ifft(_complex(x_np), axis=-1)
    np.testing.assert_allclose(_complex(y.numpy()), want, atol=1e-12 * 12 * np.abs(x_np).sum())


def test_fft_and_ifft_match_numpy(backend, rng):
    x_np = rng.standard_normal((3 * TM, TN, 2)).astype(np.float32)
    x = kl.array(x_np, dtype=kl.vec2)
    y, z = kl.zeros_like(x), kl.zeros_like(x)
    kl.launch_tiled(fft_rows, dim=[3, 1], inputs=[x, y, z], block_dim=TN // 2)
    want = np.fft.fft(_complex(x_np), axis=-1)
    np.testing.assert_allclose(_complex(y.numpy()), want, atol=2e-5 * np.abs(want).max())
    # the inverse is unnormalised: ifft(fft(x)) = N x
    np.testing.assert_allclose(_complex(z.numpy()), TN * _complex(x_np), atol=1e-4 * TN)


@kl.kernel
def transpose_blocks(x: kl.array2d(dtype=kl.vec2), y: kl.array2d(dtype=kl.vec2)):
    i, j = kl.tid()
    t = kl.tile_load(x, shape=(4, 4), offset=(i * 4, j * 4), storage="shared")
    kl.tile_store(y, kl.tile_transpose(t), offset=(j * 4, i * 4))


@kl.kernel
def transpose_rect(a: kl.array2d(dtype=float), b: kl.array2d(dtype=float)):
    t = kl.tile_load(a, shape=(3, 5))
    kl.tile_store(b, kl.tile_transpose(t))


def test_transpose(backend, rng):
    x_np = rng.standard_normal((8, 8, 2)).astype(np.float32)
    x = kl.array(x_np, dtype=kl.vec2)
    y = kl.zeros_like(x)
    kl.launch_tiled(transpose_blocks, dim=(2, 2), inputs=[x, y], block_dim=16)
    np.testing.assert_array_equal(y.numpy(), x_np.transpose(1, 0, 2))
    a_np = rng.standard_normal((3, 5)).astype(np.float32)
    b = kl.zeros((5, 3), dtype=float)
    kl.launch_tiled(transpose_rect, dim=1, inputs=[kl.array(a_np), b], block_dim=4)
    np.testing.assert_array_equal(b.numpy(), a_np.T)


@kl.kernel
def block_sums(a: kl.array(dtype=float), s: kl.array(dtype=float), old: kl.array(dtype=float)):
    i = kl.tid()
    t = kl.tile_sum(kl.tile(a[i] * 2.0))  # one thread per block: a one-element tile
    before = kl.tile_atomic_add(s, t)
    old[i] = before[0]


def test_tile_sum_and_atomic_add(backend):
    a_np = np.arange(1, 11, dtype=np.float32)
    a, s, old = kl.array(a_np), kl.zeros(1, dtype=float), kl.zeros(10, dtype=float)
    kl.launch(block_sums, dim=10, inputs=[a, s, old])
    assert s.numpy()[0] == pytest.approx(2 * a_np.sum())
    # each atomic add returned what was there before it: partial sums, in some order
    olds = np.sort(old.numpy())
    assert olds[0] == 0 and len(set(olds)) == 10 and olds[-1] < 2 * a_np.sum()


@kl.kernel
def fill_and_combine(a: kl.array2d(dtype=float), out: kl.array2d(dtype=float),
                     sums: kl.array(dtype=float), corner: kl.array(dtype=float)):
    t = kl.tile_ones(shape=(2, 3), dtype=float) * 2.0 + kl.tile_load(a, shape=(2, 3))
    t = t - kl.tile_zeros(shape=(2, 3), dtype=float) - kl.tile_full((2, 3), 0.5) / 2.0
    t = -t
    kl.tile_store(out, t)
    kl.tile_store(sums, kl.tile_sum(t))
    corner[0] = t[1, 2] + kl.tile_extract(t, 0, 0)


def test_constructors_arithmetic_and_indexing(backend, rng):
    a_np = rng.standard_normal((2, 3)).astype(np.float32)
    out, sums, corner = kl.zeros((2, 3), dtype=float), kl.zeros(1, dtype=float), \
        kl.zeros(1, dtype=float)
    kl.launch_tiled(fill_and_combine, dim=1, inputs=[kl.array(a_np), out, sums, corner],
                    block_dim=32)
    want = -(2.0 + a_np - 0.25)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert sums.numpy()[0] == pytest.approx(want.sum(), rel=1e-5)
    assert corner.numpy()[0] == pytest.approx(want[1, 2] + want[0, 0], rel=1e-6)


def test_launch_tiled_passes_block_indices(backend):
    @kl.kernel
    def where(out: kl.array2d(dtype=int)):
        i, j = kl.tid()
        out[i, j] = i * 10 + j

    out = kl.zeros((3, 4), dtype=int)
    kl.launch_tiled(where, dim=(3, 4), inputs=[out], block_dim=64)
    np.testing.assert_array_equal(out.numpy(), np.add.outer(np.arange(3) * 10, np.arange(4)))


@kl.func
def tile_total(t: kl.tile[float, 2, 4]):  # Warp's annotation of a tile parameter
    return kl.tile_sum(t)


@kl.kernel
def sum_through_func(a: kl.array(dtype=float, ndim=2), s: kl.array(dtype=float)):
    kl.tile_store(s, tile_total(kl.tile_load(a, shape=(2, 4))))


def test_a_func_takes_a_tile(backend, rng):
    a_np = rng.standard_normal((2, 4)).astype(np.float32)
    s = kl.zeros(1, dtype=float)
    kl.launch_tiled(sum_through_func, dim=1, inputs=[kl.array(a_np), s], block_dim=8)
    assert s.numpy()[0] == pytest.approx(a_np.sum(), rel=1e-5)


# ---- gradients against float64 finite differences --------------------------------------------

@kl.kernel
def spectrum_pipeline(x: kl.array2d(dtype=kl.vec2d), y: kl.array2d(dtype=kl.vec2d)):
    i, _, _ = kl.tid()
    t = kl.tile_load(x, shape=(2, 8), offset=(i * 2, 0))
    kl.tile_fft(t)
    t = t * 0.5
    kl.tile_store(y, kl.tile_transpose(t), offset=(0, i * 2))
    kl.tile_ifft(t)


@kl.kernel
def weighted_sum(y: kl.array2d(dtype=kl.vec2d), w: kl.array2d(dtype=kl.vec2d),
                 loss: kl.array(dtype=kl.float64)):
    i, j = kl.tid()
    kl.atomic_add(loss, 0, kl.dot(y[i, j], w[i, j]) + y[i, j][0] * y[i, j][1])


@kl.kernel
def energy(a: kl.array(dtype=kl.float64), loss: kl.array(dtype=kl.float64)):
    i = kl.tid()
    kl.tile_atomic_add(loss, kl.tile_sum(kl.tile(a[i] * a[i])))


def _loss_pipeline(x_np, w):
    x = kl.array(x_np, dtype=kl.vec2d, requires_grad=True)
    y = kl.zeros((8, 4), dtype=kl.vec2d, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(spectrum_pipeline, dim=[2, 1], inputs=[x, y], block_dim=4)
        kl.launch(weighted_sum, dim=(8, 4), inputs=[y, w, loss])
    return x, loss, tape


def test_gradient_through_fft_transpose_and_store(backend, rng):
    x_np = rng.standard_normal((4, 8, 2))
    w = kl.array(rng.standard_normal((8, 4, 2)), dtype=kl.vec2d)
    x, loss, tape = _loss_pipeline(x_np, w)
    tape.backward(loss)
    grad = x.grad.numpy()
    fd = np.zeros_like(x_np)
    h = 1e-6
    for idx in np.ndindex(*x_np.shape):
        plus, minus = x_np.copy(), x_np.copy()
        plus[idx] += h
        minus[idx] -= h
        fp = _loss_pipeline(plus, w)[1].numpy()[0]
        fm = _loss_pipeline(minus, w)[1].numpy()[0]
        fd[idx] = (fp - fm) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_gradient_through_tile_sum_and_atomic_add(backend, rng):
    a_np = rng.standard_normal(6)
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(energy, dim=6, inputs=[a, loss])
    assert loss.numpy()[0] == pytest.approx((a_np ** 2).sum())
    tape.backward(loss)
    np.testing.assert_allclose(a.grad.numpy(), 2 * a_np, rtol=1e-12)


@kl.kernel
def element_products(a: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    t = kl.tile_load(a, shape=4) + kl.tile_full(4, kl.float64(1.0))
    out[0] = t[1] * t[2] + t[3] * kl.tile_sum(t)[0]


def test_gradient_through_indexing_and_full(backend, rng):
    a_np = rng.standard_normal(4)
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    out = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(element_products, dim=1, inputs=[a, out], block_dim=1)
    t = a_np + 1
    assert out.numpy()[0] == pytest.approx(t[1] * t[2] + t[3] * t.sum())
    tape.backward(out)
    want = np.full(4, t[3])  # d(t3 * sum t) = t3 for every element, plus sum t for t3
    want[1] += t[2]
    want[2] += t[1]
    want[3] += t.sum()
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-12)


# ---- bad input -------------------------------------------------------------------------------

def _compile_error(fn, *args) -> str:
    with pytest.raises(KernelError) as info:
        kl.launch_tiled(fn, dim=1, inputs=list(args), block_dim=1)
    return str(info.value)


def test_tile_shape_of_the_wrong_rank_names_kernel_and_line():
    @kl.kernel
    def wrong_rank(a: kl.array2d(dtype=float)):
        t = kl.tile_load(a, shape=(4,))
        kl.tile_store(a, t)

    text = _compile_error(wrong_rank, kl.zeros((4, 4), dtype=float))
    assert "wrong_rank" in text and "t = kl.tile_load(a, shape=(4,))" in text
    assert "has 1 dimension(s) but the array has 2" in text


def test_storing_a_tile_of_another_dtype_is_refused():
    @kl.kernel
    def wrong_dtype(a: kl.array(dtype=float), b: kl.array(dtype=kl.float64)):
        kl.tile_store(b, kl.tile_load(a, shape=4))

    text = _compile_error(wrong_dtype, kl.zeros(4, dtype=float), kl.zeros(4, dtype=kl.float64))
    assert "wrong_dtype" in text and "a tile of float32 into an array of float64" in text


@pytest.mark.parametrize("body, message", [
    ("t = kl.tile_load(a, shape=(1, 4100))\n    kl.tile_fft(t)", "at most 4096 points"),
    ("t = kl.tile_load(b, shape=(1, 8))\n    kl.tile_fft(t)", "needs a tile of vec2f or vec2d"),
    ("kl.tile_fft(kl.tile_load(a, shape=(1, 8)))", "pass the local's name"),
    ("t = kl.tile_load(a, shape=(n, 8))", "positive integer constants"),
    ("t = kl.tile_load(a, shape=(1, 8), offset=(0,))", "offset has 1 value(s)"),
    ("t = kl.tile_load(a, shape=(1, 8), storage='global')", "storage must be a constant"),
    ("t = kl.tile_load(a, shape=(256, 256))", "at most 16384"),
    ("t = kl.tile_load(a, shap=(1, 8))", "no parameter 'shap'"),
])
def test_bad_tile_calls(body, message, tmp_path):
    ns = {"kl": kl}
    src = ("def bad(a: kl.array2d(dtype=kl.vec2), b: kl.array2d(dtype=float), n: int):\n"
           f"    {body}\n")
    path = tmp_path / "bad_tiles.py"
    path.write_text(src)
    exec(compile(src, str(path), "exec"), ns)
    kernel = kl.kernel(ns["bad"])
    text = _compile_error(kernel, kl.zeros((1, 8), dtype=kl.vec2), kl.zeros((1, 8), dtype=float),
                          1)
    line = 2 + body.count("\n")  # the call at fault is the body's last line
    assert "'bad'" in text and f"line {line}" in text and message in text, text


def test_launch_tiled_needs_block_dim():
    with pytest.raises(LaunchError, match="block_dim"):
        kl.launch_tiled(copy_blocks, dim=(1, 1), inputs=[])


def test_array_annotation_with_a_literal_ndim():
    from typing import Literal  # Warp's tile tests annotate arrays as array[float, Literal[2]]
    ann = kl.array[float, Literal[2]]
    assert (ann.ndim, ann.dtype) == (2, kl.float32)
    assert kl.array[kl.float64, 3].ndim == 3  # a bare integer, as in Warp
    with pytest.raises(ValueError, match="ndim must be between 1 and 4"):  # Warp's error
        kl.array[float, Literal[5]]
    with pytest.raises(TypeError, match="Expected a single Literal value"):
        kl.array[float, Literal[1, 2]]


# ---- views, element-wise products, reductions, scans, tile_map, atomic-add replay ----------

def _fd_grad(f, x, eps=1e-6):
    """Central differences of the float64 NumPy function f (scalar) at x."""
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@kl.kernel
def view_ops(a: kl.array2d(dtype=kl.float64), b: kl.array2d(dtype=kl.float64),
             c: kl.array(dtype=kl.float64)):
    i = kl.tid()
    t = kl.tile_load(a[i], shape=4, offset=1)  # a row of a 2-D array; the last reads 0
    kl.tile_store(b[i], t * t)
    u = kl.tile_load(a[::2, 1:], shape=(2, 3))  # every other row, from column 1
    kl.tile_atomic_add(c[1:], kl.tile_sum(u))


def _view_ref(a):
    b = np.zeros_like(a)
    b[:, :3] = a[:, 1:4] ** 2
    c = np.zeros(3)
    c[1] = a.shape[0] * a[::2, 1:4].sum()
    return b, c


@pytest.mark.cpu_only("views, reductions, scans and tile_map have no CUDA lowering yet")
def test_tiles_of_array_views(backend, rng):
    a_np = rng.standard_normal((3, 4))
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    b = kl.zeros((3, 4), dtype=kl.float64, requires_grad=True)
    c = kl.zeros(3, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(view_ops, dim=3, inputs=[a, b, c], block_dim=4)
    want_b, want_c = _view_ref(a_np)
    np.testing.assert_allclose(b.numpy(), want_b, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    wb, wc = rng.standard_normal((3, 4)), rng.standard_normal(3)
    b.grad = kl.array(wb, dtype=kl.float64)
    c.grad = kl.array(wc, dtype=kl.float64)
    tape.backward()
    want = _fd_grad(lambda x: (wb * _view_ref(x)[0]).sum() + (wc * _view_ref(x)[1]).sum(),
                    a_np)
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-6, atol=1e-8)


@kl.func
def soft(x: kl.float64, y: kl.float64):
    return kl.sin(x) * y + x * x


@kl.kernel
def reduce_scan_map(a: kl.array2d(dtype=kl.float64), out: kl.array2d(dtype=kl.float64),
                    red: kl.array2d(dtype=kl.float64), arg: kl.array2d(dtype=int)):
    i = kl.tid()
    t = kl.tile_load(a[i], shape=6)
    q = kl.tile_load(a[i], shape=6, offset=6)
    kl.tile_store(red[i], kl.tile_max(t), offset=0)
    kl.tile_store(red[i], kl.tile_min(t), offset=1)
    kl.tile_store(red[i], kl.tile_reduce(kl.mul, t), offset=2)
    kl.tile_store(red[i], kl.tile_reduce(kl.add, q), offset=3)
    kl.tile_store(arg[i], kl.tile_argmax(t), offset=0)
    kl.tile_store(arg[i], kl.tile_argmin(t), offset=1)
    u = kl.tile_scan_inclusive(t) + kl.tile_scan_exclusive(q) * 2.0
    u = u + kl.tile_scan_max_inclusive(t) * 3.0 - kl.tile_scan_min_inclusive(q)
    q4 = q + kl.tile_ones(shape=6, dtype=kl.float64) * 4.0
    u = u + kl.tile_map(soft, t, q) + kl.tile_map(kl.cos, q) + t * q - t / q4
    kl.tile_store(out[i], u + 1.5 / q4)


def _rsm_ref(a):
    t, q = a[:, :6], a[:, 6:]
    red = np.stack([t.max(1), t.min(1), t.prod(1), q.sum(1)], 1)
    excl = np.cumsum(q, 1) - q
    out = np.cumsum(t, 1) + 2 * excl + 3 * np.maximum.accumulate(t, 1) \
        - np.minimum.accumulate(q, 1) + np.sin(t) * q + t * t + np.cos(q) + t * q \
        - t / (q + 4) + 1.5 / (q + 4)
    return out, red


@pytest.mark.cpu_only("views, reductions, scans and tile_map have no CUDA lowering yet")
def test_reductions_scans_and_tile_map(backend, rng):
    a_np = rng.standard_normal((2, 12))
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    out = kl.zeros((2, 6), dtype=kl.float64, requires_grad=True)
    red = kl.zeros((2, 4), dtype=kl.float64, requires_grad=True)
    arg = kl.zeros((2, 2), dtype=int)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(reduce_scan_map, dim=2, inputs=[a, out, red, arg], block_dim=8)
    want_out, want_red = _rsm_ref(a_np)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(red.numpy(), want_red, rtol=1e-12)
    np.testing.assert_array_equal(arg.numpy(), np.stack([a_np[:, :6].argmax(1),
                                                         a_np[:, :6].argmin(1)], 1))
    wo, wr = rng.standard_normal((2, 6)), rng.standard_normal((2, 4))
    out.grad = kl.array(wo, dtype=kl.float64)
    red.grad = kl.array(wr, dtype=kl.float64)
    tape.backward()
    want = _fd_grad(lambda x: (wo * _rsm_ref(x)[0]).sum() + (wr * _rsm_ref(x)[1]).sum(), a_np)
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-6, atol=1e-7)


@kl.kernel
def tile_loop_sum(a: kl.array2d(dtype=kl.float64), c: kl.array(dtype=kl.float64)):
    i = kl.tid()
    s = kl.tile_zeros(shape=1, dtype=kl.float64)
    for j in range(3):  # a tile carried through a loop under a tape (the adjoint's stack)
        t = kl.tile_load(a[i], shape=2, offset=j * 2)
        s += kl.tile_sum(t * t * t)
    kl.tile_store(c, s, offset=i)


@pytest.mark.cpu_only("views, reductions, scans and tile_map have no CUDA lowering yet")
def test_tile_carried_through_a_loop_gradient(backend, rng):
    a_np = rng.standard_normal((2, 6))
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    c = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(tile_loop_sum, dim=2, inputs=[a, c], block_dim=4)
    np.testing.assert_allclose(c.numpy(), (a_np ** 3).sum(1), rtol=1e-12)
    c.grad = kl.array(np.array([1.0, -2.0]), dtype=kl.float64)
    tape.backward()
    np.testing.assert_allclose(a.grad.numpy(), 3 * a_np ** 2 * np.array([[1.0], [-2.0]]),
                               rtol=1e-12)


@kl.kernel
def add_and_use_old(s: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64),
                    out: kl.array(dtype=kl.float64)):
    i = kl.tid()
    t = kl.tile_load(x, shape=4, offset=i * 4)
    old = kl.tile_atomic_add(s, t * 2.0, offset=i * 4 + 1)  # the last block's tile hangs out
    kl.tile_store(out, old * t, offset=i * 4)


def test_tile_atomic_add_result_under_a_tape(backend, rng):
    """The tile tile_atomic_add returns (the values before the add) depends on the order
    blocks run in, as atomic_add's value does: under a tape it is refused with a clear
    error, instead of the zeros its adjoint's replay used to read. Without a tape it is
    the values before the add."""
    s_np, x_np = rng.standard_normal(8), rng.standard_normal(8)
    s = kl.array(s_np, dtype=kl.float64, requires_grad=True)
    x = kl.array(x_np, dtype=kl.float64, requires_grad=True)
    out = kl.zeros(8, dtype=kl.float64, requires_grad=True)
    kl.launch_tiled(add_and_use_old, dim=2, inputs=[s, x, out], block_dim=4)
    old = np.zeros(8)
    old[:7] = s_np[1:8]  # blocks add into disjoint parts of s: no order dependence
    np.testing.assert_allclose(out.numpy(), old * x_np, rtol=1e-12)
    np.testing.assert_allclose(s.numpy()[1:], s_np[1:] + 2 * x_np[:7], rtol=1e-12)
    tape = kl.Tape()
    with pytest.raises(GradientError, match="tile returned by tile_atomic_add") as info:
        with tape:
            kl.launch_tiled(add_and_use_old, dim=2, inputs=[s, x, out], block_dim=4)
        out.grad = kl.array(np.ones(8), dtype=kl.float64)
        tape.backward()
    assert "add_and_use_old" in str(info.value)


@kl.kernel
def shapes_and_casts(a: kl.array2d(dtype=kl.float64), b: kl.array(dtype=kl.float64),
                     s0: kl.array(dtype=kl.float64), s1: kl.array(dtype=kl.float64),
                     big: kl.array2d(dtype=kl.float64), flat: kl.array2d(dtype=kl.float64),
                     ints: kl.array(dtype=kl.float32), folds: kl.array2d(dtype=kl.float64)):
    t = kl.tile_load(a, shape=(3, 4))
    r = kl.tile_load(b, shape=4)
    grown = kl.tile_broadcast(r, shape=(3, 4)) * t  # the row repeated down the rows
    kl.tile_store(big, grown)
    kl.tile_store(s0, kl.tile_sum(grown, axis=0))
    kl.tile_store(s1, kl.tile_sum(t * t, axis=1))
    kl.tile_store(flat, kl.tile_reshape(t, shape=(-1, 1)) * 2.0)
    kl.tile_store(ints, kl.tile_astype(kl.tile_arange(1, 10, 2, dtype=int), dtype=kl.float32))
    kl.tile_store(folds[0], kl.tile_squeeze(kl.tile_reshape(
        kl.tile_reduce(kl.max, t, axis=1), shape=(1, 3, 1))))
    kl.tile_store(folds[1], kl.tile_reduce(kl.mul, t, axis=1))


def _shapes_ref(a, b):
    grown = b[None, :] * a
    return grown, grown.sum(0), (a * a).sum(1), 2 * a.reshape(-1, 1)


@pytest.mark.cpu_only("broadcast, reshape, axis reductions and arange have no CUDA lowering yet")
def test_broadcast_axis_sums_reshape_arange_and_casts(backend, rng):
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal(4)
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    b = kl.array(b_np, dtype=kl.float64, requires_grad=True)
    outs = [kl.zeros(4, dtype=kl.float64, requires_grad=True),
            kl.zeros(3, dtype=kl.float64, requires_grad=True),
            kl.zeros((3, 4), dtype=kl.float64, requires_grad=True),
            kl.zeros((12, 1), dtype=kl.float64, requires_grad=True)]
    ints, folds = kl.zeros(5, dtype=kl.float32), kl.zeros((2, 3), dtype=kl.float64)
    kl.launch_tiled(shapes_and_casts, dim=1, inputs=[a, b, outs[0], outs[1], outs[2], outs[3],
                                                     ints, folds], block_dim=8)
    grown, s0, s1, flat = _shapes_ref(a_np, b_np)
    for got, want in zip(outs, (s0, s1, grown, flat)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(ints.numpy(), np.arange(1, 10, 2, dtype=np.float32))
    np.testing.assert_allclose(folds.numpy(), np.stack([a_np.max(1), a_np.prod(1)]),
                               rtol=1e-12)


@kl.kernel
def shapes_grad(a: kl.array2d(dtype=kl.float64), b: kl.array(dtype=kl.float64),
                s0: kl.array(dtype=kl.float64), s1: kl.array(dtype=kl.float64),
                big: kl.array2d(dtype=kl.float64), flat: kl.array2d(dtype=kl.float64)):
    t = kl.tile_load(a, shape=(3, 4))
    grown = kl.tile_broadcast(kl.tile_load(b, shape=4), shape=(3, 4)) * t
    kl.tile_store(big, grown)
    kl.tile_store(s0, kl.tile_sum(grown, axis=0))
    kl.tile_store(s1, kl.tile_sum(t * t, axis=1))
    kl.tile_store(flat, kl.tile_reshape(t, shape=(-1, 1)) * 2.0)


@pytest.mark.cpu_only("broadcast, reshape, axis reductions and arange have no CUDA lowering yet")
def test_broadcast_axis_sum_and_reshape_gradients(backend, rng):
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal(4)
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    b = kl.array(b_np, dtype=kl.float64, requires_grad=True)
    shapes = [(4,), (3,), (3, 4), (12, 1)]
    outs = [kl.zeros(s, dtype=kl.float64, requires_grad=True) for s in shapes]
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(shapes_grad, dim=1, inputs=[a, b, *outs], block_dim=8)
    ws = [rng.standard_normal(s) for s in shapes]
    for o, w in zip(outs, ws):
        o.grad = kl.array(w, dtype=kl.float64)
    tape.backward()

    def loss(x, y):
        grown, s0, s1, flat = _shapes_ref(x, y)
        return sum((w * v).sum() for w, v in zip(ws, (s0, s1, grown, flat)))

    np.testing.assert_allclose(a.grad.numpy(), _fd_grad(lambda x: loss(x, b_np), a_np),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), _fd_grad(lambda y: loss(a_np, y), b_np),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("body, message", [
    ("t = kl.tile_arange(0, 10, 0, dtype=int)", "step cannot be zero"),
    ("t = kl.tile_arange(5, 5, dtype=int)", "non-empty range"),
    ("t = kl.tile_arange(0, n, dtype=int)", "compile time constants, but stop is not"),
    ("t = kl.tile_arange(1, 2, 3, 4)", "at most 3 positional arguments, got 4"),
    ("t = kl.tile_arange(0.0, 3.5, dtype=kl.int32)", "stop=3.5 has a fractional part"),
    ("t = kl.tile_broadcast(kl.tile_zeros(shape=(2, 3)), shape=(3, 3))", "does not broadcast"),
    ("t = kl.tile_reshape(kl.tile_zeros(shape=(2, 3)), shape=(4, 2))", "cannot take shape"),
    ("t = kl.tile_squeeze(kl.tile_zeros(shape=(1, 2, 1)), axis=(3,))", "out of bounds"),
    ("t = kl.tile_sum(kl.tile_zeros(shape=(2, 3)), axis=2)", "axis 2 is out of bounds"),
    ("t = kl.tile_reduce(kl.sub, kl.tile_zeros(shape=(2, 3)))", "wp.add, wp.mul, wp.max"),
    ("t = kl.tile_map(kl.sin, kl.tile_zeros(shape=(2, 3)), kl.tile_zeros(shape=(3, 2)))",
     "shapes differ"),
])
def test_bad_tile_shape_calls(body, message, tmp_path):
    ns = {"kl": kl}
    src = f"def bad2(n: int):\n    {body}\n"
    path = tmp_path / "bad_tiles2.py"
    path.write_text(src)
    exec(compile(src, str(path), "exec"), ns)
    text = _compile_error(kl.kernel(ns["bad2"]), 3)
    assert "'bad2'" in text and "line 2" in text and message in text, text


@kl.kernel
def max_along_rows(a: kl.array2d(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    kl.tile_store(out, kl.tile_reduce(kl.max, kl.tile_load(a, shape=(2, 3)), axis=1))


@pytest.mark.cpu_only("broadcast, reshape, axis reductions and arange have no CUDA lowering yet")
def test_reduce_along_an_axis_refuses_a_gradient_it_has_not(backend):
    a = kl.array(np.ones((2, 3)), dtype=kl.float64, requires_grad=True)
    out = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    with pytest.raises(KernelError, match="no derivative"):
        tape = kl.Tape()
        with tape:
            kl.launch_tiled(max_along_rows, dim=1, inputs=[a, out], block_dim=4)
        out.grad = kl.array(np.ones(2), dtype=kl.float64)
        tape.backward()


def test_cuda_names_tile_ops_it_does_not_lower(backend):
    if not backend.startswith("cuda"):
        pytest.skip("about the CUDA backend")
    a = kl.zeros((3, 4), dtype=kl.float64)
    with pytest.raises(KernelError, match="not available on the CUDA backend"):
        kl.launch_tiled(view_ops, dim=3, inputs=[a, kl.zeros_like(a), kl.zeros(3, dtype=kl.float64)],
                        block_dim=4)


@kl.kernel
def mixed_elements(v: kl.array(dtype=kl.vec3d), s: kl.array(dtype=kl.float64),
                   m: kl.array(dtype=kl.mat22d), out_v: kl.array(dtype=kl.vec3d),
                   out_m: kl.array(dtype=kl.mat22d), out_s: kl.array(dtype=kl.float64)):
    tv = kl.tile_load(v, shape=4)
    ts = kl.tile_load(s, shape=4)
    tm = kl.tile_load(m, shape=4)
    w = kl.vec3d(1.0, -2.0, 0.5)
    kl.tile_store(out_v, tv * ts + ts * w - w / (ts * ts + kl.tile_ones(shape=4,
                                                                        dtype=kl.float64)))
    kl.tile_store(out_m, tm / ts + kl.mat22d(1.0, 2.0, 3.0, 4.0) * ts)
    kl.tile_store(out_s, kl.tile(kl.untile(kl.tile_sum(ts)) * 2.0), offset=0)


def _mixed_ref(v, s, m):
    w = np.array([1.0, -2.0, 0.5])
    out_v = v * s[:, None] + s[:, None] * w - w / (s * s + 1)[:, None]
    out_m = m / s[:, None, None] + np.array([[1.0, 2.0], [3.0, 4.0]]) * s[:, None, None]
    return out_v, out_m, np.array([2 * s.sum()])


@pytest.mark.cpu_only("mixed element types have no CUDA lowering yet")
def test_tiles_of_vectors_and_matrices_with_scalar_tiles(backend, rng):
    v_np, s_np = rng.standard_normal((4, 3)), rng.uniform(0.5, 2.0, 4)
    m_np = rng.standard_normal((4, 2, 2))
    v = kl.array(v_np, dtype=kl.vec3d, requires_grad=True)
    s = kl.array(s_np, dtype=kl.float64, requires_grad=True)
    m = kl.array(m_np, dtype=kl.mat22d, requires_grad=True)
    out_v = kl.zeros(4, dtype=kl.vec3d, requires_grad=True)
    out_m = kl.zeros(4, dtype=kl.mat22d, requires_grad=True)
    out_s = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(mixed_elements, dim=1, inputs=[v, s, m, out_v, out_m, out_s],
                        block_dim=4)
    want = _mixed_ref(v_np, s_np, m_np)
    for got, w in zip((out_v, out_m, out_s), want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-12)
    ws = [rng.standard_normal(w.shape) for w in want]
    for o, w in zip((out_v, out_m, out_s), ws):
        o.grad = kl.array(w, dtype=o.dtype)
    tape.backward()

    def loss(a, b, c):
        return sum((w * x).sum() for w, x in zip(ws, _mixed_ref(a, b, c)))

    for arr, x, f in ((v, v_np, lambda y: loss(y, s_np, m_np)),
                      (s, s_np, lambda y: loss(v_np, y, m_np)),
                      (m, m_np, lambda y: loss(v_np, s_np, y))):
        np.testing.assert_allclose(arr.grad.numpy(), _fd_grad(f, x), rtol=1e-6, atol=1e-8)


@kl.kernel
def vec_by_vec_tile(v: kl.array(dtype=kl.vec3)):
    t = kl.tile_load(v, shape=4)
    kl.tile_store(v, t * t)


def test_vector_tile_times_vector_tile_is_refused():
    with pytest.raises(KernelError, match="element type must be scalar"):
        kl.launch_tiled(vec_by_vec_tile, dim=1, inputs=[kl.zeros(4, dtype=kl.vec3)],
                        block_dim=4)


@kl.kernel
def put_elements(x: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64),
                 v: kl.array(dtype=kl.vec3d)):
    i = kl.tid()
    a = kl.tile_zeros(shape=4, dtype=kl.float64)
    a[i] = x[i] * x[i]
    b = kl.tile_zeros(shape=4, dtype=kl.vec3d)
    b[i][1] = x[i]
    kl.tile_atomic_add(y, a)
    kl.tile_atomic_add(v, b)


def test_assigning_tile_elements(backend, rng):
    x_np = rng.standard_normal(4)
    x = kl.array(x_np, dtype=kl.float64, requires_grad=True)
    y = kl.zeros(4, dtype=kl.float64, requires_grad=True)
    v = kl.zeros(4, dtype=kl.vec3d, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(put_elements, dim=4, inputs=[x, y, v])  # one thread, one tile, per block
    np.testing.assert_allclose(y.numpy(), x_np ** 2, rtol=1e-12)
    want_v = np.zeros((4, 3))
    want_v[:, 1] = x_np
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-12)
    y.grad = kl.array(np.ones(4), dtype=kl.float64)
    v.grad = kl.array(np.full((4, 3), 3.0), dtype=kl.vec3d)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x_np + 3.0, rtol=1e-12)


@kl.kernel
def matmuls(a: kl.array2d(dtype=kl.float64), b: kl.array2d(dtype=kl.float64),
            c: kl.array2d(dtype=kl.float64), d: kl.array2d(dtype=kl.float64)):
    ta = kl.tile_load(a, shape=(3, 4))
    tb = kl.tile_load(b, shape=(4, 2))
    kl.tile_store(c, kl.tile_matmul(ta, tb))
    acc = kl.tile_load(d, shape=(3, 2))
    kl.tile_matmul(ta * ta, tb, acc, alpha=2.0, beta=0.5)
    kl.tile_store(d, acc)


def _matmul_ref(a, b, d):
    return a @ b, 2.0 * (a * a) @ b + 0.5 * d


@pytest.mark.cpu_only("tile_matmul has no CUDA lowering yet")
def test_tile_matmul(backend, rng):
    a_np, b_np, d_np = (rng.standard_normal(s) for s in ((3, 4), (4, 2), (3, 2)))
    a = kl.array(a_np, dtype=kl.float64, requires_grad=True)
    b = kl.array(b_np, dtype=kl.float64, requires_grad=True)
    c = kl.zeros((3, 2), dtype=kl.float64, requires_grad=True)
    d = kl.array(d_np, dtype=kl.float64, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch_tiled(matmuls, dim=1, inputs=[a, b, c, d], block_dim=8)
    want_c, want_d = _matmul_ref(a_np, b_np, d_np)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    np.testing.assert_allclose(d.numpy(), want_d, rtol=1e-12)
    wc, wd = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    c.grad = kl.array(wc, dtype=kl.float64)
    d.grad = kl.array(wd, dtype=kl.float64)
    tape.backward()

    def loss(x, y):
        cc, dd = _matmul_ref(x, y, d_np)
        return (wc * cc).sum() + (wd * dd).sum()

    np.testing.assert_allclose(a.grad.numpy(), _fd_grad(lambda x: loss(x, b_np), a_np),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), _fd_grad(lambda y: loss(a_np, y), b_np),
                               rtol=1e-6, atol=1e-8)


# The kernels tests/test_cuda.py compiles with NVRTC: all but those using the tile ops the
# CUDA backend does not lower yet (views, reductions, scans, tile_map, broadcast, matmul...).
_CPU_ONLY_KERNELS = {"view_ops", "reduce_scan_map", "tile_loop_sum", "shapes_and_casts",
                     "shapes_grad", "max_along_rows", "mixed_elements", "matmuls"}
NVRTC_CORPUS = [n for n, k in list(globals().items())
                if isinstance(k, kl.Kernel) and n not in _CPU_ONLY_KERNELS]
