"""Plain (non-atomic) adjoint accumulation only where each thread owns its gradient element.

The ownership proof (autodiff/ownership.py) is checked on what it decides (which arrays'
adjoints use atomics in the adjoint IR), and the gradients are checked against NumPy
float64 on every backend, including kernels whose threads share elements (``x[i % 2]``,
``x[i]`` next to ``x[i + 1]``) and launches whose gradient arrays overlap (views of one
array), where the runtime must take the all-atomic adjoint."""
import numpy as np
import pytest

import kernlab as kl
from kernlab.autodiff.ownership import owned_arrays
from kernlab.ir.nodes import Op
from kernlab.runtime.launch import _gradients_overlap


def atomic_gradients(kernel) -> set:
    """Names of the gradient arrays the adjoint accumulates into atomically."""
    func = kernel.adjoint_ir
    return {ins.args[0].name for ins in func.body.walk()
            if ins.op is Op.ATOMIC and ins.args[0].name.startswith("adj_")}


@kl.kernel
def reversed_square(x: kl.array(dtype=float), y: kl.array(dtype=float), n: int):
    i = kl.tid()
    j = n - 1 - i
    y[j] = x[j] * x[j]


@kl.kernel
def parity_gather(x: kl.array(dtype=float), w: kl.array(dtype=float),
                  y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i % 2] * w[i]


@kl.kernel
def neighbours(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i + 1]


@kl.kernel
def shifted(x: kl.array(dtype=float), y: kl.array(dtype=float), off: int):
    i = kl.tid()
    y[i] = kl.sin(x[i + off]) + x[i + off]


@kl.kernel
def loop_window(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    s = float(0.0)
    for k in range(3):
        s += x[i + k] * float(k + 1)
    y[i] = s


@kl.kernel
def reassigned(x: kl.array(dtype=float), y: kl.array(dtype=float), flip: int):
    i = kl.tid()
    j = i
    if flip == 1:
        j = 0
    y[i] = x[j] * 3.0


@kl.kernel
def transpose2d(x: kl.array(dtype=float, ndim=2), y: kl.array(dtype=float, ndim=2)):
    i, j = kl.tid()
    y[i, j] = x[j, i] * x[j, i]


@kl.kernel
def row_of_2d_launch(x: kl.array(dtype=float), y: kl.array(dtype=float, ndim=2)):
    i, j = kl.tid()
    y[i, j] = x[i] * 2.0


@kl.kernel
def two_views(a: kl.array(dtype=float), b: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = 2.0 * a[i] + 3.0 * b[i] * b[i]


@kl.kernel
def mirrored(a: kl.array(dtype=float), b: kl.array(dtype=float), out: kl.array(dtype=float),
             n: int):
    i = kl.tid()
    out[i] = a[i] * b[n - 1 - i]


def test_the_proof_accepts_injective_indices_and_refuses_shared_ones():
    assert atomic_gradients(reversed_square) == set()  # x[n - 1 - i]: one thread each
    assert set(owned_arrays(reversed_square.ir)) == {0, 1}
    assert atomic_gradients(parity_gather) == {"adj_x"}  # x[i % 2]: many threads
    assert atomic_gradients(neighbours) == {"adj_x"}  # x[i] and x[i + 1]: two threads
    assert atomic_gradients(shifted) == set()  # x[i + off], off a parameter
    assert atomic_gradients(loop_window) == {"adj_x"}  # x[i + k], k changes
    assert atomic_gradients(reassigned) == {"adj_x"}  # j is not always i
    assert atomic_gradients(transpose2d) == set()  # x[j, i]: still one thread each
    assert atomic_gradients(row_of_2d_launch) == {"adj_x"}  # every j reads x[i]
    assert atomic_gradients(mirrored) == set()


def _grad(kernel, dim, inputs, out_index, seed, backend):
    arrays = [kl.array(np.asarray(a, np.float32), requires_grad=True)
              if isinstance(a, np.ndarray) else a for a in inputs]
    tape = kl.Tape()
    with tape:
        kl.launch(kernel, dim, inputs=arrays)
    arrays[out_index].grad = kl.array(np.asarray(seed, np.float32))
    tape.backward()
    return [a.grad.numpy() if isinstance(a, kl.array) and a.grad is not None else None
            for a in arrays]


N = 300


def test_reversed_index_gradient(backend):
    x = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    seed = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    gx = _grad(reversed_square, N, [x, np.zeros(N), N], 1, seed, backend)[0]
    np.testing.assert_allclose(gx, 2.0 * x.astype(np.float64) * seed, rtol=1e-5, atol=1e-6)


def test_shared_elements_get_every_contribution(backend):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(2).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    seed = rng.standard_normal(N).astype(np.float32)
    gx, gw, _ = _grad(parity_gather, N, [x, w, np.zeros(N)], 2, seed, backend)
    expect = [np.sum(w[k::2].astype(np.float64) * seed[k::2]) for k in range(2)]
    np.testing.assert_allclose(gx, expect, rtol=1e-4)
    np.testing.assert_allclose(gw, x[np.arange(N) % 2] * seed.astype(np.float64), rtol=1e-5)

    x = rng.standard_normal(N + 1).astype(np.float32)
    gx = _grad(neighbours, N, [x, np.zeros(N)], 1, seed, backend)[0]
    x64, s64 = x.astype(np.float64), seed.astype(np.float64)
    expect = np.zeros(N + 1)
    expect[:-1] += x64[1:] * s64
    expect[1:] += x64[:-1] * s64
    np.testing.assert_allclose(gx, expect, rtol=1e-4, atol=1e-5)

    x = rng.standard_normal(N + 2).astype(np.float32)
    gx = _grad(loop_window, N, [x, np.zeros(N)], 1, seed, backend)[0]
    expect = np.zeros(N + 2)
    for k in range(3):
        expect[k:k + N] += (k + 1) * s64
    np.testing.assert_allclose(gx, expect, rtol=1e-5)


def test_transposed_2d_gradient(backend):
    x = np.random.default_rng(4).standard_normal((5, 7)).astype(np.float32)
    seed = np.random.default_rng(5).standard_normal((7, 5)).astype(np.float32)
    gx = _grad(transpose2d, (7, 5), [x, np.zeros((7, 5))], 1, seed, backend)[0]
    np.testing.assert_allclose(gx, 2.0 * x.astype(np.float64) * seed.T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [9, 140_001])  # inline, and split over the worker threads
def test_overlapping_views_take_the_atomic_adjoint(backend, n):
    """a[1:] and a[:-1] have gradients that are views of a.grad one element apart: with
    plain adds, threads i and i + 1 would both write a.grad[i + 1]."""
    if n > 9 and backend == "interp":
        pytest.skip("the interpreter runs one thread at a time (and slowly)")
    a_np = np.random.default_rng(6).standard_normal(n + 1).astype(np.float32)
    a = kl.array(a_np, requires_grad=True)
    out = kl.zeros(n, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(two_views, n, inputs=[a[1:], a[:-1], out])
    out.grad = kl.ones(n)
    tape.backward()
    expect = np.zeros(n + 1)
    expect[1:] += 2.0
    expect[:-1] += 6.0 * a_np[:-1].astype(np.float64)
    np.testing.assert_allclose(a.grad.numpy(), expect, rtol=1e-5, atol=1e-6)
    assert any("shared" in key for key in two_views._compiled)


def test_overlap_decision():
    func = two_views.adjoint_ir
    a, b = kl.zeros(10), kl.zeros(10)
    assert not _gradients_overlap(func, [None] * 3 + [a, b, kl.zeros(10)])
    assert _gradients_overlap(func, [None] * 3 + [a[1:], a[:-1], kl.zeros(9)])
    assert _gradients_overlap(func, [None] * 3 + [a[::2], a[1::2], kl.zeros(5)]) is True
    # the same view, the same index: each element still has one thread
    assert not _gradients_overlap(func, [None] * 3 + [a, a, b])
    # the same view at i and at n - 1 - i: threads i and n - 1 - i share elements
    assert _gradients_overlap(mirrored.adjoint_ir, [None] * 4 + [a, a, b, None])


def test_same_array_twice_mirrored(backend):
    n = 101
    a_np = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    a = kl.array(a_np, requires_grad=True)
    out = kl.zeros(n, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(mirrored, n, inputs=[a, a, out, n])
    out.grad = kl.ones(n)
    tape.backward()
    a64 = a_np.astype(np.float64)
    np.testing.assert_allclose(a.grad.numpy(), a64[::-1] * 2.0, rtol=1e-5, atol=1e-6)


def test_hessian_vector_product_with_an_array_passed_twice(backend):
    """The tangent of the adjoint accumulates like the adjoint, so it must take the atomic
    variant too when one array is both a[i] and b[n - 1 - i]: loss = sum a[i] a[n-1-i],
    (H v)[k] = 2 v[n - 1 - k]."""
    n = 80_001 if backend != "interp" else 9
    a = kl.array(np.random.default_rng(8).standard_normal(n), dtype=kl.float64,
                 requires_grad=True)
    out = kl.zeros(n, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(mirrored_64, n, inputs=[a, a, out, n])
        kl.launch(sum_into_64, n, inputs=[out, loss])
    v = np.random.default_rng(9).standard_normal(n)
    hv = tape.hvp(loss, {a: kl.array(v, dtype=kl.float64)})[a].numpy()
    np.testing.assert_allclose(hv, 2.0 * v[::-1], rtol=1e-12, atol=1e-12)
    if backend == "llvm":
        assert any("shared" in key and "tangent" in key for key in mirrored_64._compiled)


@kl.kernel
def mirrored_64(a: kl.array(dtype=kl.float64), b: kl.array(dtype=kl.float64),
                out: kl.array(dtype=kl.float64), n: int):
    i = kl.tid()
    out[i] = a[i] * b[n - 1 - i]


@kl.kernel
def sum_into_64(out: kl.array(dtype=kl.float64), loss: kl.array(dtype=kl.float64)):
    i = kl.tid()
    kl.atomic_add(loss, 0, out[i])
