"""kl.tid() in a launch with more or fewer dimensions than the kernel reads, as Warp 1.19:
``i = kl.tid()`` in a 2-D launch is the row index (the leading index), ``i, j = kl.tid()``
in a 3-D launch the first two; indices past the launch's are 0. Every thread of the launch
runs. The expected counts come from NumPy's unravel_index over the launch shape."""
import numpy as np
import pytest

import kernlab as kl


@kl.kernel
def count1(out: kl.array(dtype=int)):
    i = kl.tid()
    kl.atomic_add(out, i, 1)


@kl.kernel
def count2(out: kl.array(dtype=int, ndim=2)):
    i, j = kl.tid()
    kl.atomic_add(out, i, j, 1)


@kl.kernel
def count3(out: kl.array(dtype=int, ndim=3)):
    i, j, k = kl.tid()
    kl.atomic_add(out, i, j, k, 1)


def expected(launch, ndim, shape):
    want = np.zeros(shape, int)
    for flat in range(int(np.prod(launch))):
        coords = np.unravel_index(flat, launch) + (0,) * ndim
        want[tuple(coords[:ndim])] += 1
    return want


@pytest.mark.parametrize("kernel, ndim, launch, shape", [
    (count1, 1, (2, 3), (6,)),
    (count1, 1, (2, 3, 4), (6,)),
    (count2, 2, (2, 3, 2), (2, 3)),
    (count2, 2, (4,), (4, 1)),
    (count3, 3, (2, 3), (2, 3, 1)),
    (count2, 2, (2, 1, 3, 2), (2, 1)),
])
def test_tid_gives_the_leading_indices(backend, kernel, ndim, launch, shape):
    out = kl.zeros(shape, dtype=int)
    kl.launch(kernel, launch, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), expected(launch, ndim, shape))
    assert out.numpy().sum() == np.prod(launch)  # every thread ran once


@kl.kernel
def scale(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(y, i, 3.0 * x[i] * x[i])


def test_gradient_of_a_kernel_reading_fewer_indices(backend):
    # launched (4, 2): each i runs twice, so y = 2 * 3 x^2 and dy/dx = 12 x
    xs = np.array([0.5, -1.0, 2.0, 3.0], np.float32)
    x = kl.array(xs, requires_grad=True)
    y = kl.zeros(4, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(scale, (4, 2), inputs=[x], outputs=[y])
    np.testing.assert_allclose(y.numpy(), 6.0 * xs**2, rtol=1e-6)
    tape.backward(grads={y: kl.array(np.ones(4, np.float32))})
    np.testing.assert_allclose(x.grad.numpy(), 12.0 * xs, rtol=1e-6)
