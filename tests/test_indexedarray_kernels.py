"""kl.indexedarray as a kernel parameter (Warp's ``wp.indexedarray``): reads, writes,
atomics, partial indexing, shapes, generic funcs and gradients, against NumPy fancy
indexing on the same data (and analytic derivatives)."""
from typing import Any

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import LaunchError


@kl.kernel
def scale_1d(a: kl.indexedarray(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = a[i]
    a[i] = 2.0 * a[i]
    kl.atomic_add(a, i, 1.0)


def test_1d_reads_writes_and_atomics_go_to_the_selected_elements(backend):
    x_np = np.arange(10, dtype=np.float32) * 1.5
    idx_np = np.array([7, 2, 9, 0], dtype=np.int32)
    x = kl.array(x_np, dtype=float)
    ia = kl.indexedarray1d(x, [kl.array(idx_np, dtype=int)])
    out = kl.zeros(4, dtype=float)
    kl.launch(scale_1d, 4, inputs=[ia], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), x_np[idx_np])
    expect = x_np.copy()
    expect[idx_np] = 2.0 * x_np[idx_np] + 1.0
    np.testing.assert_array_equal(x.numpy(), expect)


@kl.kernel
def rows_2d(a: kl.indexedarray2d[float], out: kl.array2d(dtype=float),
            shape: kl.array(dtype=int)):
    i, j = kl.tid()
    row = a[i]  # the view of the remaining axis
    out[i, j] = row[j] + a[i, j]
    if i == 0 and j == 0:
        shape[0] = a.shape[0]
        shape[1] = a.shape[1]
        shape[2] = row.shape[0]


def test_2d_partial_indexing_and_shape(backend):
    rng = np.random.default_rng(2)
    x_np = rng.normal(size=(5, 4)).astype(np.float32)
    rows = np.array([4, 0, 2], dtype=np.int32)
    ia = kl.indexedarray2d(kl.array(x_np, dtype=float), [kl.array(rows, dtype=int), None])
    out, shape = kl.zeros((3, 4), dtype=float), kl.zeros(3, dtype=int)
    kl.launch(rows_2d, (3, 4), inputs=[ia], outputs=[out, shape])
    np.testing.assert_array_equal(out.numpy(), 2 * x_np[rows])
    np.testing.assert_array_equal(shape.numpy(), [3, 4, 4])


@kl.func
def total(a: kl.indexedarray(dtype=Any), n: int):
    s = a.dtype(0)
    for k in range(n):
        s += a[k]
    return s


@kl.kernel
def sums(a: kl.indexedarray(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    out[0] = total(a, a.shape[0])


def test_generic_func_takes_an_indexedarray(backend):
    x_np = np.linspace(-1.0, 2.0, 8)
    idx_np = np.array([1, 1, 6, 3], dtype=np.int32)  # an index may repeat
    ia = kl.indexedarray1d(kl.array(x_np, dtype=kl.float64), [kl.array(idx_np, dtype=int)])
    out = kl.zeros(1, dtype=kl.float64)
    kl.launch(sums, 1, inputs=[ia], outputs=[out])
    assert out.numpy()[0] == pytest.approx(x_np[idx_np].sum(), rel=1e-15)


@kl.kernel
def cube(a: kl.indexedarray(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = a[i] * a[i] * a[i]


def test_gradient_reaches_the_viewed_array(backend):
    x_np = np.arange(6, dtype=np.float32) * 0.5 + 1.0
    idx_np = np.array([4, 1, 3], dtype=np.int32)
    x = kl.array(x_np, dtype=float, requires_grad=True)
    y = kl.zeros(3, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(cube, 3, inputs=[kl.indexedarray1d(x, [kl.array(idx_np, dtype=int)])],
                  outputs=[y])
    tape.backward(grads={y: kl.ones(3, dtype=float)})
    expect = np.zeros(6)
    expect[idx_np] = 3.0 * x_np[idx_np].astype(np.float64) ** 2  # d(x^3)/dx
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-6)


def test_a_plain_array_is_no_indexedarray(backend):
    with pytest.raises(LaunchError, match="indexedarray"):
        kl.launch(cube, 3, inputs=[kl.zeros(3, dtype=float)], outputs=[kl.zeros(3, dtype=float)])


@kl.struct
class Holder:
    picked: kl.indexedarray[float]
    scale: float


@kl.kernel
def through_struct(h: Holder, out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = h.picked[i] * h.scale
    kl.atomic_add(h.picked, i, 1.0)


def test_indexedarray_field_of_a_struct(backend):
    x_np = np.array([1.0, -2.0, 3.0, 4.5], dtype=np.float32)
    idx_np = np.array([3, 0], dtype=np.int32)
    x = kl.array(x_np, dtype=float)
    h = Holder()
    h.picked = kl.indexedarray1d(x, [kl.array(idx_np, dtype=int)])
    h.scale = 3.0
    out = kl.zeros(2, dtype=float)
    kl.launch(through_struct, 2, inputs=[h], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), 3.0 * x_np[idx_np])
    expect = x_np.copy()
    expect[idx_np] += 1.0
    np.testing.assert_array_equal(x.numpy(), expect)
