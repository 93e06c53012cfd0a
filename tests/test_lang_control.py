"""The kernel language: control flow (if/elif/else, conditional expressions, loops, break,
continue, return).

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import numpy as np
import pytest

import kernlab as kl
from helpers import f32, i32, run


# ---- control flow -------------------------------------------------------------------------

@kl.kernel
def classify(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    i = kl.tid()
    x = a[i]
    if x < 0.0:
        out[i] = -1
    elif x == 0.0:
        out[i] = 0
    elif x < 10.0:
        out[i] = 1
    else:
        out[i] = 2


def test_if_elif_else(backend):
    data = np.array([-3.0, 0.0, 4.0, 50.0], np.float32)
    out = kl.zeros(4, dtype=int)
    run(classify, 4, f32(data), out)
    np.testing.assert_array_equal(out.numpy(), np.select([data < 0, data == 0, data < 10],
                                                         [-1, 0, 1], 2))


@kl.kernel
def abs_ifexp(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    x = a[i]
    out[i] = x if x > 0.0 else -x


def test_conditional_expression(backend):
    data = np.array([-1.5, 2.0, 0.0], np.float32)
    out = kl.zeros(3, dtype=float)
    run(abs_ifexp, 3, f32(data), out)
    np.testing.assert_array_equal(out.numpy(), np.abs(data))


@kl.kernel
def ifexp_guards_read(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = a[i] if i < a.shape[0] else -1.0


def test_conditional_expression_evaluates_only_the_chosen_branch(backend):
    out = kl.zeros(4, dtype=float)
    run(ifexp_guards_read, 4, f32([1.0, 2.0]), out)
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, -1.0, -1.0])


@kl.kernel
def sum_constant_range(out: kl.array(dtype=int)):
    s = int(0)
    for k in range(10):
        s += k
    out[0] = s


def test_for_range_stop_constant(backend):
    out = kl.zeros(1, dtype=int)
    run(sum_constant_range, 1, out)
    assert out.numpy()[0] == sum(range(10))


@kl.kernel
def sum_range_start_stop_step(out: kl.array(dtype=int)):
    s = int(0)
    for k in range(3, 20, 4):
        s += k
    t = int(0)
    for k in range(2, 6):
        t += k
    out[0] = s
    out[1] = t


@kl.kernel
def sum_constant_negative_step(out: kl.array(dtype=int)):
    s = int(0)
    for k in range(10, 0, -3):
        s += k
    out[0] = s


def test_for_range_all_constant_negative_step(backend):
    out = kl.zeros(1, dtype=int)
    run(sum_constant_negative_step, 1, out)
    assert out.numpy()[0] == sum(range(10, 0, -3))


def test_for_range_start_stop_step_constant(backend):
    out = kl.zeros(2, dtype=int)
    run(sum_range_start_stop_step, 1, out)
    np.testing.assert_array_equal(out.numpy(), [sum(range(3, 20, 4)), sum(range(2, 6))])


@kl.kernel
def sum_runtime_range(start: int, stop: int, step: int, out: kl.array(dtype=int)):
    s = int(0)
    count = int(0)
    for k in range(start, stop, step):
        s += k
        count += 1
    out[0] = s
    out[1] = count


@pytest.mark.parametrize("start, stop, step", [(0, 10, 1), (2, 17, 3), (5, 5, 1), (9, 2, 1),
                                               (10, -3, -2), (4, 0, -1), (0, 5, -1)])
def test_for_range_runtime_bounds_and_steps(backend, start, stop, step):
    out = kl.zeros(2, dtype=int)
    run(sum_runtime_range, 1, start, stop, step, out)
    r = range(start, stop, step)
    np.testing.assert_array_equal(out.numpy(), [sum(r), len(r)])


@kl.kernel
def sum_runtime_stop(n: int, out: kl.array(dtype=int)):
    s = int(0)
    for k in range(n):
        s += k * k
    out[0] = s


def test_for_range_runtime_stop(backend):
    out = kl.zeros(1, dtype=int)
    run(sum_runtime_stop, 1, 7, out)
    assert out.numpy()[0] == sum(k * k for k in range(7))


@kl.kernel
def reverse_copy(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    n = a.shape[0]
    j = int(0)
    for k in range(n - 1, -1, -1):
        out[j] = a[k]
        j += 1


def test_for_range_constant_negative_step(backend):
    data = np.arange(5, dtype=np.float32)
    out = kl.zeros(5, dtype=float)
    run(reverse_copy, 1, f32(data), out)
    np.testing.assert_array_equal(out.numpy(), data[::-1])


@kl.kernel
def collatz_steps(a: kl.array(dtype=int), out: kl.array(dtype=int)):
    i = kl.tid()
    n = a[i]
    steps = int(0)
    while n != 1:
        if n % 2 == 0:
            n = n / 2
        else:
            n = 3 * n + 1
        steps += 1
    out[i] = steps


def _collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop(backend):
    data = [1, 6, 7, 27]
    out = kl.zeros(4, dtype=int)
    run(collatz_steps, 4, i32(data), out)
    np.testing.assert_array_equal(out.numpy(), [_collatz(n) for n in data])


@kl.kernel
def first_negative(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    found = int(-1)
    for k in range(a.shape[0]):
        if a[k] < 0.0:
            found = k
            break
    out[0] = found


def test_break_leaves_the_loop(backend):
    data = np.array([1.0, 2.0, -1.0, 3.0, -5.0], np.float32)
    out = kl.zeros(1, dtype=int)
    run(first_negative, 1, f32(data), out)
    assert out.numpy()[0] == int(np.argmax(data < 0))


@kl.kernel
def while_break(limit: int, out: kl.array(dtype=int)):
    k = int(0)
    while True:
        k += 1
        if k * k > limit:
            break
    out[0] = k


def test_break_leaves_a_while_true_loop(backend):
    out = kl.zeros(1, dtype=int)
    run(while_break, 1, 50, out)
    assert out.numpy()[0] == 8  # first k with k*k > 50


@kl.kernel
def sum_odd(n: int, out: kl.array(dtype=int)):
    s = int(0)
    for k in range(n):
        if k % 2 == 0:
            continue
        s += k
    out[0] = s


def test_continue_skips_the_rest_of_the_body(backend):
    out = kl.zeros(1, dtype=int)
    run(sum_odd, 1, 10, out)
    assert out.numpy()[0] == sum(k for k in range(10) if k % 2)


@kl.kernel
def while_continue(n: int, out: kl.array(dtype=int)):
    k = int(0)
    s = int(0)
    while k < n:
        k += 1
        if k % 3 == 0:
            continue
        s += k
    out[0] = s


def test_continue_in_a_while_loop(backend):
    out = kl.zeros(1, dtype=int)
    run(while_continue, 1, 10, out)
    assert out.numpy()[0] == sum(k for k in range(1, 11) if k % 3)


@kl.kernel
def nested_break(out: kl.array(dtype=int)):
    count = int(0)
    for i in range(4):
        for j in range(10):
            if j > i:
                break
            count += 1
    out[0] = count


def test_break_leaves_only_the_inner_loop(backend):
    out = kl.zeros(1, dtype=int)
    run(nested_break, 1, out)
    assert out.numpy()[0] == sum(i + 1 for i in range(4))


@kl.kernel
def early_return(n: int, out: kl.array(dtype=int)):
    i = kl.tid()
    if i >= n:
        return
    out[i] = 7


def test_early_return_in_a_kernel(backend):
    out = kl.zeros(5, dtype=int)
    run(early_return, 5, 3, out)
    np.testing.assert_array_equal(out.numpy(), [7, 7, 7, 0, 0])


@kl.kernel
def return_from_loop(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    i = kl.tid()
    for k in range(a.shape[0]):
        if a[k] > 2.0:
            out[i] = k
            return
    out[i] = -1


def test_return_inside_a_loop_skips_the_rest_of_the_kernel(backend):
    out = kl.zeros(2, dtype=int)
    run(return_from_loop, 2, f32([1.0, 3.0, 5.0]), out)
    np.testing.assert_array_equal(out.numpy(), [1, 1])
    run(return_from_loop, 2, f32([1.0, 0.0]), out)
    np.testing.assert_array_equal(out.numpy(), [-1, -1])


@kl.kernel
def select_and_where(c: kl.array(dtype=int), x: kl.array(dtype=float),
                     s: kl.array(dtype=float), w: kl.array(dtype=float)):
    i = kl.tid()
    s[i] = kl.select(c[i] > 0, x[i] * 2.0, x[i] * 3.0)  # Warp: (cond, if_false, if_true)
    w[i] = kl.where(c[i] > 0, x[i] * 2.0, x[i] * 3.0)   # (cond, if_true, if_false)


def test_select_takes_value_if_false_first_and_where_value_if_true(backend):
    c = kl.array([1, 0], dtype=int)
    x = kl.array([1.0, 1.0], dtype=float, requires_grad=True)
    s, w = kl.zeros(2, dtype=float, requires_grad=True), kl.zeros(2, dtype=float)
    with kl.Tape() as tape:
        kl.launch(select_and_where, 2, inputs=[c, x, s, w])
    np.testing.assert_array_equal(s.numpy(), [3.0, 2.0])
    np.testing.assert_array_equal(w.numpy(), [2.0, 3.0])
    tape.backward(grads={s: kl.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 2.0])  # d/dx of the chosen branch
