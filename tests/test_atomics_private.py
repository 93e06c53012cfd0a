"""Atomics into a few addresses, which the LLVM backend privatises per worker thread
(backends/llvm/entry.py, _Private): the results must be those of NumPy on every backend
(integers exactly, float sums within reassociation error of a float64 sum), whether the
launch runs inline or split over the workers, in kernels and in adjoints; the cases that
must not be privatised (the returned value used, a large array, an argument sharing the
array's memory) stay correct, and an index out of range is still reported."""
from typing import Any

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm.entry import private_candidates

SIZES = [1000, 200_003]  # inline on the calling thread; split over the workers


@kl.kernel
def total(x: kl.array(dtype=Any), out: kl.array(dtype=Any)):
    i = kl.tid()
    kl.atomic_add(out, 0, x[i])


@kl.kernel
def total_sub(x: kl.array(dtype=int), out: kl.array(dtype=int)):
    i = kl.tid()
    kl.atomic_sub(out, 0, x[i])
    kl.atomic_add(out, 1, x[i] * 2)


@kl.kernel
def extremes(x: kl.array(dtype=Any), lo: kl.array(dtype=Any), hi: kl.array(dtype=Any)):
    i = kl.tid()
    kl.atomic_min(lo, 0, x[i])
    kl.atomic_max(hi, 0, x[i])


@kl.kernel
def histogram(idx: kl.array(dtype=int), bins: kl.array(dtype=int)):
    i = kl.tid()
    kl.atomic_add(bins, idx[i], 1)


@kl.kernel
def histogram_2d(idx: kl.array(dtype=int), bins: kl.array(dtype=float, ndim=2)):
    i = kl.tid()
    kl.atomic_add(bins, idx[i] % 4, idx[i] // 4, 0.5)


@kl.kernel
def vec_total(v: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    kl.atomic_add(out, 0, v[i])


@kl.kernel
def tickets(counter: kl.array(dtype=int), got: kl.array(dtype=int)):
    i = kl.tid()
    got[i] = kl.atomic_add(counter, 0, 1)


@kl.kernel
def add_and_read(acc: kl.array(dtype=float), other: kl.array(dtype=float),
                 seen: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(acc, 0, 1.0)
    seen[i] = other[0]


@kl.kernel
def scale_by_first(a: kl.array(dtype=float), x: kl.array(dtype=float),
                   y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = a[0] * x[i] + a[1] * x[i] * x[i]


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("n", SIZES)
def test_sums(backend, n):
    if backend == "interp" and n > 1000:
        pytest.skip("the interpreter is slow and has no workers")
    x32 = _rng(1).standard_normal(n).astype(np.float32)
    out = kl.zeros(1, dtype=kl.float32)
    kl.launch(total, n, inputs=[kl.array(x32), out])
    exact = np.sum(x32.astype(np.float64))
    # each float32 add rounds: n roundings of the running sum at most
    assert abs(out.numpy()[0] - exact) <= n * np.finfo(np.float32).eps * np.sum(np.abs(x32))
    x64 = x32.astype(np.float64) * 1e3
    out = kl.zeros(1, dtype=kl.float64)
    kl.launch(total, n, inputs=[kl.array(x64), out])
    np.testing.assert_allclose(out.numpy()[0], np.sum(x64), rtol=1e-10, atol=1e-9)
    xi = _rng(2).integers(-1000, 1000, n).astype(np.int64)
    out = kl.array(np.array([7], np.int64))
    kl.launch(total, n, inputs=[kl.array(xi), out])
    assert out.numpy()[0] == 7 + int(xi.sum())
    xi32 = xi.astype(np.int32)
    out = kl.zeros(2, dtype=int)
    kl.launch(total_sub, n, inputs=[kl.array(xi32), out])
    assert out.numpy().tolist() == [-int(xi32.sum()), 2 * int(xi32.sum())]


@pytest.mark.parametrize("n", SIZES)
def test_min_max(backend, n):
    if backend == "interp" and n > 1000:
        pytest.skip("the interpreter is slow and has no workers")
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.uint32):
        x = (_rng(3).standard_normal(n) * 1e4).astype(dtype) if dtype != np.uint32 else \
            _rng(3).integers(5, 2**31, n).astype(np.uint32)
        info = np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype)
        lo, hi = kl.array(np.array([info.max], dtype)), kl.array(np.array([info.min], dtype))
        kl.launch(extremes, n, inputs=[kl.array(x), lo, hi])
        assert lo.numpy()[0] == x.min() and hi.numpy()[0] == x.max(), dtype
        # starting values that win stay
        lo, hi = kl.array(np.array([x.min() - 1], dtype)), kl.array(np.array([x.max()], dtype))
        kl.launch(extremes, n, inputs=[kl.array(x), lo, hi])
        assert lo.numpy()[0] == x.min() - 1 and hi.numpy()[0] == x.max()


@pytest.mark.parametrize("n", SIZES)
def test_histograms(backend, n):
    if backend == "interp" and n > 1000:
        pytest.skip("the interpreter is slow and has no workers")
    idx = _rng(4).integers(0, 256, n).astype(np.int32)
    bins = kl.array(np.arange(256, dtype=np.int32))  # added to, not replaced
    kl.launch(histogram, n, inputs=[kl.array(idx), bins])
    np.testing.assert_array_equal(bins.numpy(), np.arange(256) + np.bincount(idx, minlength=256))
    bins2 = kl.zeros((4, 64), dtype=float)
    kl.launch(histogram_2d, n, inputs=[kl.array(idx), bins2])
    expect = 0.5 * np.bincount(idx, minlength=256).reshape(64, 4).T
    np.testing.assert_array_equal(bins2.numpy(), expect)
    # a strided view of a bigger array: only the view's elements change
    base = kl.zeros(512, dtype=int)
    kl.launch(histogram, n, inputs=[kl.array(idx), base[::2]])
    expect = np.zeros(512, np.int64)
    expect[::2] = np.bincount(idx, minlength=256)
    np.testing.assert_array_equal(base.numpy(), expect)


def test_vector_sum(backend):
    v = _rng(5).standard_normal((70_001, 3)).astype(np.float32)
    out = kl.zeros(1, dtype=kl.vec3)
    kl.launch(vec_total, len(v), inputs=[kl.array(v, dtype=kl.vec3), out])
    np.testing.assert_allclose(out.numpy()[0], v.astype(np.float64).sum(0), rtol=1e-4, atol=1e-2)


def test_what_is_not_privatised_stays_right(backend):
    n = 100_000
    counter, got = kl.zeros(1, dtype=int), kl.zeros(n, dtype=int)
    kl.launch(tickets, n, inputs=[counter, got])
    assert counter.numpy()[0] == n
    assert np.array_equal(np.sort(got.numpy()), np.arange(n))  # every ticket once
    # a bins array bigger than a private copy may be
    idx = _rng(6).integers(0, 5000, n).astype(np.int32)
    bins = kl.zeros(5000, dtype=int)
    kl.launch(histogram, n, inputs=[kl.array(idx), bins])
    np.testing.assert_array_equal(bins.numpy(), np.bincount(idx, minlength=5000))
    # the same memory passed twice: each thread reads what it (and others before) added
    acc = kl.zeros(1, dtype=float)
    seen = kl.zeros(5, dtype=float)
    kl.launch(add_and_read, 5, inputs=[acc, acc, seen])
    assert acc.numpy()[0] == 5.0 and set(seen.numpy().tolist()) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert seen.numpy()[0] >= 1.0  # thread 0 ran first and saw its own add


def test_index_out_of_range_is_reported(backend):
    idx = np.zeros(10, np.int32)
    idx[7] = 256
    bins = kl.zeros(256, dtype=int)
    with pytest.raises(IndexError, match="histogram"):
        kl.launch(histogram, 10, inputs=[kl.array(idx), bins])
        kl.synchronize()


@pytest.mark.parametrize("n", SIZES)
def test_adjoint_of_a_uniform_load(backend, n):
    """y = a[0] x + a[1] x^2: every thread's adjoint adds into adj_a[0] and adj_a[1]."""
    if backend == "interp" and n > 1000:
        pytest.skip("the interpreter is slow and has no workers")
    x = _rng(7).standard_normal(n).astype(np.float32)
    seed = _rng(8).standard_normal(n).astype(np.float32)
    a = kl.array(np.array([0.5, -2.0], np.float32), requires_grad=True)
    xs, y = kl.array(x, requires_grad=True), kl.zeros(n, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(scale_by_first, n, inputs=[a, xs, y])
    y.grad = kl.array(seed)
    tape.backward()
    x64, s64 = x.astype(np.float64), seed.astype(np.float64)
    expect = [np.sum(x64 * s64), np.sum(x64 * x64 * s64)]
    tol = n * np.finfo(np.float32).eps * np.array([np.sum(np.abs(x64 * s64)),
                                                   np.sum(np.abs(x64 * x64 * s64))])
    assert np.all(np.abs(a.grad.numpy() - expect) <= tol)
    np.testing.assert_allclose(xs.grad.numpy(), s64 * (0.5 - 4.0 * x64), rtol=1e-5, atol=1e-5)


def test_which_arrays_are_privatised(backend):
    """The LLVM backend's decision, checked on the kernels' IR and on a launch."""
    if backend != "llvm":
        pytest.skip("the decision is the LLVM backend's")
    assert private_candidates(histogram.ir) == [1]
    assert private_candidates(tickets.ir) == []  # the returned value is used
    assert private_candidates(add_and_read.ir) == [0]  # passed twice: decided per launch
    assert private_candidates(scale_by_first.adjoint_ir) == [3]  # adj_a
    assert private_candidates(histogram.ir, verify_fp=True) == []
    runner = histogram.compiled("llvm")
    kl.launch(histogram, 4, inputs=[kl.zeros(4, dtype=int), kl.zeros(256, dtype=int)])
    kl.launch(histogram, 4, inputs=[kl.zeros(4, dtype=int), kl.zeros(5000, dtype=int)])
    assert (frozenset(), frozenset({1})) in runner._fast_fns  # 256 bins: private
    assert (frozenset(), frozenset()) in runner._fast_fns  # 5000 bins: atomics
    runner = add_and_read.compiled("llvm")

    def privatised(args):
        values = []
        for pack, arg in zip(runner._plan, args):
            pack(arg, values)
        return runner._privatised(values)
    acc = kl.zeros(1)
    assert privatised([acc, kl.zeros(1), kl.zeros(1)]) == {0}
    assert privatised([acc, acc, kl.zeros(1)]) == frozenset()  # the same memory twice
    big = kl.zeros(8)
    assert privatised([big[0:1], big[1:2], kl.zeros(1)]) == {0}  # views, apart
    assert privatised([big[0:2], big[1:3], kl.zeros(1)]) == frozenset()  # overlapping


@kl.kernel
def total_2d(x: kl.array(dtype=float, ndim=2), out: kl.array(dtype=float),
             top: kl.array(dtype=int)):
    i, j = kl.tid()
    kl.atomic_add(out, 0, x[i, j])
    kl.atomic_max(top, j % 3, i * 1000 + j)


def test_two_dimensional_launch(backend):
    shape = (20, 41) if backend == "interp" else (300, 701)  # split over the workers
    x = _rng(9).standard_normal(shape).astype(np.float32)
    out, top = kl.zeros(1), kl.array(np.full(3, -5, np.int32))
    kl.launch(total_2d, x.shape, inputs=[kl.array(x), out, top])
    exact = np.sum(x.astype(np.float64))
    assert abs(out.numpy()[0] - exact) <= x.size * np.finfo(np.float32).eps * np.abs(x).sum()
    j = np.arange(shape[1])
    assert top.numpy().tolist() == [(shape[0] - 1) * 1000 + j[j % 3 == r].max()
                                    for r in range(3)]
