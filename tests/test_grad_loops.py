"""Gradients through loops with loop-carried state (where Warp 1.19 is silently wrong).

Each kernel maps x[i] to y[i] through a loop; the expected gradient comes from an analytic
formula or from float64 central differences of a plain-Python re-implementation. Inputs lie
near 1 so that forty iterations stay finite.
"""
import numpy as np
import pytest

import kernlab as kl

F64 = kl.array(dtype=kl.float64)
NS = [0, 1, 2, 5, 40]
XS = np.array([0.9, 0.97, 1.03, 1.1])
loop_counts = pytest.mark.parametrize("n", NS)


def run(kernel, xn, *params):
    """Forward y = kernel(x, *params) inside a tape, then backward with dy = 1."""
    x = kl.array(xn, dtype=kl.float64, requires_grad=True)
    y = kl.zeros(len(xn), dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, len(xn), inputs=[x, *params], outputs=[y])
    tape.backward(grads={y: kl.ones(len(xn), dtype=kl.float64)})
    return y.numpy().copy(), x.grad.numpy().copy()


def check(kernel, ref, *params, xs=XS):
    """The kernel's values match ref and its gradient matches ref's central differences."""
    y, grad = run(kernel, xs, *params)
    eps = 1e-6
    expected = [(ref(v + eps) - ref(v - eps)) / (2 * eps) for v in xs]
    np.testing.assert_allclose(y, [ref(v) for v in xs], rtol=1e-10)
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


# --- a counted loop: v = x^n ----------------------------------------------------------------

@kl.kernel
def power32(x: kl.array(dtype=float), n: int, y: kl.array(dtype=float)):
    i = kl.tid()
    v = 1.0
    for k in range(n):
        v = v * x[i]
    y[i] = v


@kl.kernel
def power(x: F64, n: int, y: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(n):
        v = v * x[i]
    y[i] = v


def test_power_loop_at_2_with_3_iterations_gives_12(backend):
    x = kl.array([2.0], dtype=float, requires_grad=True)
    y = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(power32, 1, inputs=[x, 3], outputs=[y])
    tape.backward(grads={y: kl.ones(1)})
    assert y.numpy()[0] == 8.0
    assert x.grad.numpy()[0] == 12.0


@loop_counts
def test_power_loop_gradient_is_n_x_to_the_n_minus_1(backend, n):
    y, grad = run(power, XS, n)
    np.testing.assert_allclose(y, XS ** n, rtol=1e-12)
    np.testing.assert_allclose(grad, n * XS ** (n - 1) if n else 0 * XS, rtol=1e-12)


# --- runtime range bounds ---------------------------------------------------------------------

@kl.kernel
def affine_over_range(x: F64, start: int, stop: int, step: int, y: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(start, stop, step):
        v = v * x[i] + 0.01 * kl.float64(k)
    y[i] = v


def affine_over_range_ref(start, stop, step):
    def f(x):
        v = 1.0
        for k in range(start, stop, step):
            v = v * x + 0.01 * k
        return v
    return f


@loop_counts
def test_range_with_runtime_bounds_and_positive_step(backend, n):
    bounds = (3, 3 + 2 * n, 2)
    check(affine_over_range, affine_over_range_ref(*bounds), *bounds)


@loop_counts
def test_range_with_runtime_bounds_and_negative_step(backend, n):
    bounds = (n - 1, -1, -1)
    check(affine_over_range, affine_over_range_ref(*bounds), *bounds)


@loop_counts
def test_range_with_negative_step_of_two(backend, n):
    bounds = (2 * n, 0, -2)
    check(affine_over_range, affine_over_range_ref(*bounds), *bounds)


# --- while ------------------------------------------------------------------------------------

@kl.kernel
def while_counter(x: F64, n: int, y: F64):
    i = kl.tid()
    v = x[i]
    k = int(0)
    while k < n:
        v = kl.sin(v) * x[i] + 0.5
        k += 1
    y[i] = v


def while_counter_ref(n):
    def f(x):
        v, k = x, 0
        while k < n:
            v = np.sin(v) * x + 0.5
            k += 1
        return v
    return f


@loop_counts
def test_while_loop_with_a_counter(backend, n):
    check(while_counter, while_counter_ref(n), n)


# --- break and continue -----------------------------------------------------------------------

@kl.kernel
def break_at_threshold(x: F64, n: int, y: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(n):
        if v > 1.3:
            break
        v = v * x[i]
    y[i] = v


def break_at_threshold_ref(n):
    def f(x):
        v = 1.0
        for _ in range(n):
            if v > 1.3:
                break
            v = v * x
        return v
    return f


@loop_counts
def test_break_at_a_data_dependent_iteration(backend, n):
    check(break_at_threshold, break_at_threshold_ref(n), n)


def test_break_stops_after_the_threshold_is_crossed(backend):
    # 1.1^3 = 1.331 > 1.3: three multiplications, so dy/dx = 3 * 1.1^2
    y, grad = run(break_at_threshold, np.array([1.1]), 40)
    np.testing.assert_allclose(y, [1.1 ** 3], rtol=1e-12)
    np.testing.assert_allclose(grad, [3 * 1.1 ** 2], rtol=1e-12)


@kl.kernel
def skip_every_third(x: F64, n: int, y: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(n):
        if k % 3 == 1:
            continue
        v = v * x[i] + 0.01
    y[i] = v


def skip_every_third_ref(n):
    def f(x):
        v = 1.0
        for k in range(n):
            if k % 3 == 1:
                continue
            v = v * x + 0.01
        return v
    return f


@loop_counts
def test_continue_skips_iterations(backend, n):
    check(skip_every_third, skip_every_third_ref(n), n)


# --- nested loops -----------------------------------------------------------------------------

@kl.kernel
def nested(x: F64, n: int, y: F64):
    i = kl.tid()
    v = x[i]
    for a in range(n):
        for b in range(a % 3 + 1):
            v = v * x[i]
        v = kl.sqrt(v)
    y[i] = v


def nested_ref(n):
    def f(x):
        v = x
        for a in range(n):
            for _ in range(a % 3 + 1):
                v = v * x
            v = np.sqrt(v)
        return v
    return f


@loop_counts
def test_nested_loops_carry_state_through_both_levels(backend, n):
    check(nested, nested_ref(n), n)


# --- early return inside a loop ---------------------------------------------------------------

@kl.kernel
def return_inside_loop(x: F64, n: int, y: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(n):
        v = v * x[i]
        if v > 1.2:
            y[i] = v * 10.0
            return
    y[i] = v


def return_inside_loop_ref(n):
    def f(x):
        v = 1.0
        for _ in range(n):
            v = v * x
            if v > 1.2:
                return v * 10.0
        return v
    return f


@loop_counts
def test_early_return_from_inside_a_loop(backend, n):
    check(return_inside_loop, return_inside_loop_ref(n), n)


# --- variables reassigned across iterations ---------------------------------------------------

@kl.kernel
def shift_pair(x: F64, n: int, y: F64):
    i = kl.tid()
    a = kl.float64(1.0)
    b = x[i]
    for k in range(n):
        a = b
        b = a * x[i]
    y[i] = a + 2.0 * b


@loop_counts
def test_reassigned_pair_across_iterations(backend, n):
    # after n >= 1 iterations a = x^n and b = x^(n+1); with none, a = 1 and b = x
    y, grad = run(shift_pair, XS, n)
    if n == 0:
        np.testing.assert_allclose(grad, 2.0 + 0 * XS, rtol=1e-12)
    else:
        np.testing.assert_allclose(y, XS ** n + 2 * XS ** (n + 1), rtol=1e-12)
        np.testing.assert_allclose(grad, n * XS ** (n - 1) + 2 * (n + 1) * XS ** n,
                                   rtol=1e-12)


@kl.kernel
def rotate_pair(x: F64, n: int, y: F64):
    i = kl.tid()
    a = kl.float64(1.0)
    b = x[i]
    for k in range(n):
        t = a
        a = b
        b = 0.5 * t + 0.5 * b * x[i]
    y[i] = a - b


def rotate_pair_ref(n):
    def f(x):
        a, b = 1.0, x
        for _ in range(n):
            a, b = b, 0.5 * a + 0.5 * b * x
        return a - b
    return f


@loop_counts
def test_values_rotated_through_temporaries_across_iterations(backend, n):
    check(rotate_pair, rotate_pair_ref(n), n)


# --- a loop calling a func --------------------------------------------------------------------

@kl.func
def damped_step(v: kl.float64, x: kl.float64):
    return v * x + 0.1 * kl.sin(v)


@kl.kernel
def loop_calls_func(x: F64, n: int, y: F64):
    i = kl.tid()
    v = x[i]
    for k in range(n):
        v = damped_step(v, x[i])
    y[i] = v


def loop_calls_func_ref(n):
    def f(x):
        v = x
        for _ in range(n):
            v = v * x + 0.1 * np.sin(v)
        return v
    return f


@loop_counts
def test_loop_calling_a_func(backend, n):
    check(loop_calls_func, loop_calls_func_ref(n), n)


# --- accumulating into an array inside a loop -------------------------------------------------

@kl.kernel
def sum_of_powers(x: F64, n: int, total: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(n):
        v = v * x[i]
        kl.atomic_add(total, 0, v)


@loop_counts
def test_loop_accumulating_with_atomic_add(backend, n):
    x = kl.array(XS, dtype=kl.float64, requires_grad=True)
    total = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(sum_of_powers, len(XS), inputs=[x, n], outputs=[total])
    tape.backward(total)
    ks = np.arange(1, n + 1)
    np.testing.assert_allclose(total.numpy(), [np.sum(XS[:, None] ** ks)], rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.sum(ks * XS[:, None] ** (ks - 1), axis=1),
                               rtol=1e-12)


@kl.kernel
def augmented_sum_of_powers(x: F64, n: int, y: F64):
    i = kl.tid()
    v = kl.float64(1.0)
    for k in range(n):
        v = v * x[i]
        y[i] += v


@loop_counts
def test_loop_accumulating_with_augmented_array_assignment(backend, n):
    y, grad = run(augmented_sum_of_powers, XS, n)
    ks = np.arange(1, n + 1)
    np.testing.assert_allclose(y, np.sum(XS[:, None] ** ks, axis=1), rtol=1e-12)
    np.testing.assert_allclose(grad, np.sum(ks * XS[:, None] ** (ks - 1), axis=1), rtol=1e-12)
