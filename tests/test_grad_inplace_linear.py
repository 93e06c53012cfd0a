"""An array element read and then overwritten in the same kernel: exact gradients when the
old value is only used linearly (no adjoint needs it), a GradientError naming the line that
needs it otherwise. Expected values are derived by hand from the update rules."""
import inspect

import numpy as np
import pytest

import kernlab as kl


def run(kernel, y0, x0, seed_y):
    y = kl.array(y0, dtype=kl.float64, requires_grad=True)
    x = kl.array(x0, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, dim=len(x0), inputs=[y, x])
    tape.backward(grads={y: kl.array(seed_y, dtype=kl.float64)})
    return y.numpy(), y.grad.numpy(), x.grad.numpy()


@kl.kernel
def scaled_update(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    y[i] = 3.0 * y[i] - x[i] * x[i]          # y' = 3y - x^2


@kl.kernel
def accumulate_in_loop(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    for k in range(3):
        y[i] = y[i] + kl.sin(x[i]) * kl.float64(k)   # y' = y + 3 sin(x)
    y[i] += x[i]                                     # y'' = y' + x  (an atomic add)


@kl.kernel
def squares_in_place(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    y[i] = y[i] * y[i] + x[i]


@kl.kernel
def scales_by_another_array(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    y[i] = y[i] * x[i]


@kl.kernel
def branches_on_the_old_value(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    if y[i] > 0.0:
        y[i] = x[i]


Y0, X0, SEED = np.array([0.5, -2.0, 4.0]), np.array([0.3, 1.1, -0.7]), np.array([1.0, 2.0, -1.0])


def test_linear_update_in_place_has_exact_gradients(backend):
    y, gy, gx = run(scaled_update, Y0, X0, SEED)
    np.testing.assert_allclose(y, 3 * Y0 - X0 ** 2)
    np.testing.assert_allclose(gy, 3 * SEED)
    np.testing.assert_allclose(gx, -2 * X0 * SEED)


def test_accumulation_in_a_loop_and_plus_equals_have_exact_gradients(backend):
    y, gy, gx = run(accumulate_in_loop, Y0, X0, SEED)
    np.testing.assert_allclose(y, Y0 + 3 * np.sin(X0) + X0)
    np.testing.assert_allclose(gy, SEED)
    np.testing.assert_allclose(gx, (3 * np.cos(X0) + 1) * SEED)


def test_component_assignment_to_an_array_element_has_exact_gradients(backend):
    @kl.kernel
    def set_x(v: kl.array(dtype=kl.vec3d), x: kl.array(dtype=kl.float64)):
        i = kl.tid()
        v[i][0] = x[i] * 2.0
        v[i] = v[i] * 3.0

    v0 = np.arange(6.0).reshape(2, 3)
    v = kl.array(v0, dtype=kl.vec3d, requires_grad=True)
    x = kl.array([1.0, -1.0], dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(set_x, dim=2, inputs=[v, x])
    tape.backward(grads={v: kl.array(np.ones((2, 3)), dtype=kl.vec3d)})
    np.testing.assert_allclose(v.numpy(), [[6.0, 3.0, 6.0], [-6.0, 12.0, 15.0]])
    np.testing.assert_allclose(v.grad.numpy(), [[0.0, 3.0, 3.0], [0.0, 3.0, 3.0]])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_nonlinear_uses_of_the_old_value_get_exact_gradients_from_the_tapes_copy(backend):
    # the tape copies y before the launch; gradients are those of the values before it
    y, gy, gx = run(squares_in_place, Y0, X0, SEED)        # y' = y^2 + x
    np.testing.assert_allclose(gy, 2 * Y0 * SEED)
    np.testing.assert_allclose(gx, SEED)
    y, gy, gx = run(scales_by_another_array, Y0, X0, SEED)  # y' = y x
    np.testing.assert_allclose(gy, X0 * SEED)
    np.testing.assert_allclose(gx, Y0 * SEED)
    y, gy, gx = run(branches_on_the_old_value, Y0, X0, SEED)  # y' = x where y > 0
    np.testing.assert_allclose(gy, np.where(Y0 > 0, 0.0, SEED))
    np.testing.assert_allclose(gx, np.where(Y0 > 0, SEED, 0.0))


@kl.kernel
def squares_reversed(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    j = 2 - i
    y[j] = y[j] * y[j] + x[i]


@kl.kernel
def scales_a_fixed_element(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    y[0] = y[0] * x[i]


@kl.kernel
def branches_on_a_gathered_value(y: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    if y[i] > 0.0:
        y[i] = x[i]
    y[i + 0] = y[i + 0] * 2.0


@pytest.mark.parametrize("kernel,line", [(squares_reversed, "y[j] = y[j] * y[j] + x[i]"),
                                         (scales_a_fixed_element, "y[0] = y[0] * x[i]"),
                                         (branches_on_a_gathered_value, "if y[i] > 0.0:")])
def test_nonlinear_use_of_another_threads_element_is_refused_at_its_line(kernel, line):
    with pytest.raises(kl.GradientError) as info:
        kernel.adjoint_ir
    src, first = inspect.getsourcelines(kernel.pyfunc)
    needed = first + next(k for k, s in enumerate(src) if line in s)
    assert f"used at line {needed}" in str(info.value)
    assert "own element" in str(info.value)
