"""The kernel language: every construct and type of API.md's "Kernel language" section.

Each test launches a small kernel on every CPU backend and compares with what NumPy (or
plain arithmetic) computes independently.
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kernlab as kl


def f32(data):
    return kl.array(np.asarray(data, np.float32), dtype=kl.float32)


def f64(data):
    return kl.array(np.asarray(data, np.float64), dtype=kl.float64)


def i32(data):
    return kl.array(np.asarray(data, np.int32), dtype=kl.int32)


def run(kernel, dim, *args):
    kl.launch(kernel, dim, inputs=list(args))


# ---- scalar types -------------------------------------------------------------------------

@kl.kernel
def scale_f32(x: kl.float32, a: kl.array(dtype=kl.float32), out: kl.array(dtype=kl.float32)):
    i = kl.tid()
    out[i] = x * a[i] + kl.float32(0.25)


def test_float32_parameter_and_arrays(backend):
    a = np.array([1.5, -2.0, 3.25], np.float32)
    out = kl.zeros(3, dtype=kl.float32)
    run(scale_f32, 3, np.float32(1.5), f32(a), out)
    assert out.numpy().dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), np.float32(1.5) * a + np.float32(0.25))


@kl.kernel
def third_f64(x: kl.float64, out: kl.array(dtype=kl.float64)):
    i = kl.tid()
    out[i] = x / kl.float64(i + 3)


def test_float64_keeps_double_precision(backend):
    out = kl.zeros(2, dtype=kl.float64)
    run(third_f64, 2, 1.0, out)
    expected = 1.0 / np.array([3.0, 4.0])
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.numpy()[0] != np.float64(np.float32(1.0) / np.float32(3.0))


@kl.kernel
def add_i32(a: kl.array(dtype=kl.int32), k: kl.int32, out: kl.array(dtype=kl.int32)):
    i = kl.tid()
    out[i] = a[i] * k - 7


def test_int32(backend):
    a = np.array([1, -20, 300000], np.int32)
    out = kl.zeros(3, dtype=kl.int32)
    run(add_i32, 3, i32(a), 5, out)
    np.testing.assert_array_equal(out.numpy(), a * 5 - 7)


@kl.kernel
def add_i64(a: kl.array(dtype=kl.int64), k: kl.int64, out: kl.array(dtype=kl.int64)):
    i = kl.tid()
    out[i] = a[i] + k


def test_int64_holds_values_beyond_int32(backend):
    a = np.array([2**40, -(2**41), 5], np.int64)
    out = kl.zeros(3, dtype=kl.int64)
    run(add_i64, 3, kl.array(a, dtype=kl.int64), 2**33, out)
    np.testing.assert_array_equal(out.numpy(), a + 2**33)


@kl.kernel
def add_u32(a: kl.array(dtype=kl.uint32), k: kl.uint32, out: kl.array(dtype=kl.uint32)):
    i = kl.tid()
    out[i] = a[i] + k


def test_uint32_holds_values_beyond_int32(backend):
    a = np.array([3_000_000_000, 7], np.uint32)
    out = kl.zeros(2, dtype=kl.uint32)
    run(add_u32, 2, kl.array(a, dtype=kl.uint32), 1_000_000_000, out)
    np.testing.assert_array_equal(out.numpy(), a + np.uint32(1_000_000_000))


def test_uint32_addition_wraps_modulo_2_to_the_32(backend):
    a = np.array([4_000_000_000], np.uint32)
    out = kl.zeros(1, dtype=kl.uint32)
    run(add_u32, 1, kl.array(a, dtype=kl.uint32), 1_000_000_000, out)
    assert out.numpy()[0] == (4_000_000_000 + 1_000_000_000) % 2**32


@kl.kernel
def pick_bool(flag: kl.bool, mask: kl.array(dtype=kl.bool), out: kl.array(dtype=kl.int32)):
    i = kl.tid()
    if flag and mask[i]:
        out[i] = 1
    else:
        out[i] = 2


def test_bool_parameter_and_array(backend):
    mask = np.array([True, False, True])
    out = kl.zeros(3, dtype=kl.int32)
    run(pick_bool, 3, True, kl.array(mask, dtype=kl.bool), out)
    np.testing.assert_array_equal(out.numpy(), np.where(mask, 1, 2))
    run(pick_bool, 3, False, kl.array(mask, dtype=kl.bool), out)
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])


@kl.kernel
def python_annotations(x: float, n: int, a: kl.array(dtype=float), b: kl.array(dtype=int)):
    i = kl.tid()
    a[i] = x * float(i)
    b[i] = n + i


def test_python_float_and_int_annotations_mean_float32_and_int32(backend):
    a, b = kl.zeros(3, dtype=kl.float32), kl.zeros(3, dtype=kl.int32)
    run(python_annotations, 3, 0.5, 10, a, b)
    assert [p.type for p in python_annotations.params[:2]] == [kl.float32, kl.int32]
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(b.numpy(), [10, 11, 12])


# ---- thread indices -----------------------------------------------------------------------

@kl.kernel
def tid_1d(out: kl.array(dtype=kl.int32)):
    i = kl.tid()
    out[i] = i


@kl.kernel
def tid_2d(out: kl.array(dtype=kl.int32, ndim=2)):
    i, j = kl.tid()
    out[i, j] = i * 10 + j


@kl.kernel
def tid_3d(out: kl.array(dtype=kl.int32, ndim=3)):
    i, j, k = kl.tid()
    out[i, j, k] = i * 100 + j * 10 + k


def test_tid_1d(backend):
    out = kl.zeros(5, dtype=kl.int32)
    run(tid_1d, 5, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(5))


def test_tid_2d(backend):
    out = kl.zeros((3, 4), dtype=kl.int32)
    run(tid_2d, (3, 4), out)
    i, j = np.indices((3, 4))
    np.testing.assert_array_equal(out.numpy(), i * 10 + j)


def test_tid_3d(backend):
    out = kl.zeros((2, 3, 4), dtype=kl.int32)
    run(tid_3d, (2, 3, 4), out)
    i, j, k = np.indices((2, 3, 4))
    np.testing.assert_array_equal(out.numpy(), i * 100 + j * 10 + k)


def test_tid_2d_on_a_launch_large_enough_to_run_in_parallel(backend):
    out = kl.zeros((300, 301), dtype=kl.int32)
    run(tid_2d, (300, 301), out)
    i, j = np.indices((300, 301))
    np.testing.assert_array_equal(out.numpy(), i * 10 + j)


# ---- assignment ---------------------------------------------------------------------------

@kl.kernel
def tuple_swap(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    x, y = a[0], a[1]
    x, y = y, x
    out[0] = x
    out[1] = y


def test_tuple_unpacking_and_swap(backend):
    out = kl.zeros(2, dtype=float)
    run(tuple_swap, 1, f32([1.0, 2.0]), out)
    np.testing.assert_array_equal(out.numpy(), [2.0, 1.0])


@kl.kernel
def reassign_param(x: float, out: kl.array(dtype=float)):
    x = x + 1.0
    out[0] = x


def test_scalar_parameter_can_be_reassigned(backend):
    out = kl.zeros(1, dtype=float)
    run(reassign_param, 1, 2.0, out)
    assert out.numpy()[0] == 3.0


@kl.kernel
def aug_locals(x: float, n: int, out: kl.array(dtype=float), iout: kl.array(dtype=int)):
    y = x
    y += 2.0
    y -= 0.5
    y *= 3.0
    y /= 4.0
    k = n
    k += 5
    k -= 1
    k *= 3
    out[0] = y
    iout[0] = k


def test_augmented_assignment_on_locals(backend):
    out, iout = kl.zeros(1, dtype=float), kl.zeros(1, dtype=int)
    run(aug_locals, 1, 1.5, 4, out, iout)
    y = np.float32(1.5)
    y = (((y + np.float32(2.0)) - np.float32(0.5)) * np.float32(3.0)) / np.float32(4.0)
    assert out.numpy()[0] == y
    assert iout.numpy()[0] == (4 + 5 - 1) * 3


@kl.kernel
def aug_components(out: kl.array(dtype=kl.vec3)):
    v = kl.vec3(1.0, 2.0, 3.0)
    v[0] += 1.0
    v.x = v.x * 2.0
    v.y = 2.0
    v[2] *= 4.0
    v.z -= 1.0
    out[0] = v


def test_augmented_and_plain_assignment_to_vector_components(backend):
    out = kl.zeros(1, dtype=kl.vec3)
    run(aug_components, 1, out)
    np.testing.assert_array_equal(out.numpy()[0], [4.0, 2.0, 11.0])


@kl.kernel
def accumulate_into_zero(v: float, a: kl.array(dtype=float)):
    i = kl.tid()
    a[0] += v


def test_augmented_add_on_array_element_is_atomic(backend):
    a = kl.zeros(1, dtype=float)
    run(accumulate_into_zero, 1000, 0.5, a)
    assert a.numpy()[0] == 500.0


@kl.kernel
def count_into_zero(a: kl.array(dtype=int), f: kl.array(dtype=float)):
    i = kl.tid()
    a[0] += 1
    f[0] += 0.5


def test_augmented_add_is_atomic_on_a_launch_large_enough_to_run_in_parallel(backend):
    n = 2**18
    a, f = kl.zeros(1, dtype=int), kl.zeros(1, dtype=float)
    run(count_into_zero, n, a, f)
    assert a.numpy()[0] == n
    assert f.numpy()[0] == n * 0.5  # every partial sum is exact in float32


@kl.kernel
def add_into_quadrants(a: kl.array(dtype=float, ndim=2), out: kl.array(dtype=float, ndim=2)):
    i, j = kl.tid()
    out[i % 2, j % 2] += a[i, j]


def test_augmented_add_into_a_2d_array_element_is_atomic(backend):
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    out = kl.zeros((2, 2), dtype=float)
    run(add_into_quadrants, (8, 8), kl.array(a, dtype=float), out)
    np.testing.assert_array_equal(out.numpy(), a.reshape(4, 2, 4, 2).sum(axis=(0, 2)))


@kl.kernel
def subtract_into_zero(a: kl.array(dtype=int)):
    i = kl.tid()
    a[0] -= i


def test_augmented_sub_on_array_element_is_atomic(backend):
    a = i32([0])
    run(subtract_into_zero, 100, a)
    assert a.numpy()[0] == -sum(range(100))


@kl.kernel
def histogram(values: kl.array(dtype=int), counts: kl.array(dtype=int)):
    i = kl.tid()
    counts[values[i]] += 1


def test_augmented_add_into_computed_indices(backend):
    values = np.array([0, 2, 2, 1, 2, 0, 3, 2], np.int32)
    counts = kl.zeros(4, dtype=int)
    run(histogram, len(values), i32(values), counts)
    np.testing.assert_array_equal(counts.numpy(), np.bincount(values, minlength=4))


@kl.kernel
def scale_and_divide_elements(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] *= 3.0
    a[i] /= 2.0


def test_augmented_mul_and_div_on_array_elements(backend):
    data = np.array([1.0, -2.0, 5.0], np.float32)
    a = f32(data)
    run(scale_and_divide_elements, 3, a)
    np.testing.assert_array_equal(a.numpy(), data * np.float32(3) / np.float32(2))


@kl.kernel
def add_vec_into_array(v: kl.vec3, a: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    a[0] += v


def test_augmented_add_of_vectors_into_array_is_atomic(backend):
    a = kl.zeros(1, dtype=kl.vec3)
    run(add_vec_into_array, 64, (1.0, 2.0, 0.5), a)
    np.testing.assert_array_equal(a.numpy()[0], [64.0, 128.0, 32.0])


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


# ---- funcs --------------------------------------------------------------------------------

@kl.func
def square(x: float):
    return x * x


@kl.func
def sum_of_squares(x: float, y: float):
    return square(x) + square(y)


@kl.func
def sign_of(x: float):
    if x < 0.0:
        return -1.0
    if x == 0.0:
        return 0.0
    return 1.0


@kl.func
def scaled(v: kl.vec3, s: float):
    return v * s


@kl.kernel
def use_funcs(a: kl.array(dtype=float), b: kl.array(dtype=float),
              out: kl.array(dtype=float), signs: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = sum_of_squares(a[i], b[i])
    signs[i] = sign_of(a[i])


def test_funcs_calling_funcs(backend):
    a = np.array([1.0, -2.0, 0.0], np.float32)
    b = np.array([0.5, 3.0, -1.0], np.float32)
    out, signs = kl.zeros(3, dtype=float), kl.zeros(3, dtype=float)
    run(use_funcs, 3, f32(a), f32(b), out, signs)
    np.testing.assert_array_equal(out.numpy(), a * a + b * b)
    np.testing.assert_array_equal(signs.numpy(), np.sign(a))


@kl.kernel
def use_vec_func(out: kl.array(dtype=kl.vec3)):
    out[0] = scaled(kl.vec3(1.0, 2.0, 3.0), 2.0)


def test_func_returning_a_vector(backend):
    out = kl.zeros(1, dtype=kl.vec3)
    run(use_vec_func, 1, out)
    np.testing.assert_array_equal(out.numpy()[0], [2.0, 4.0, 6.0])


@kl.func
def clobber(v: kl.vec3):
    v[0] = 100.0
    return v[0]


@kl.kernel
def func_args_are_copies(out: kl.array(dtype=kl.vec3), r: kl.array(dtype=float)):
    p = kl.vec3(1.0, 2.0, 3.0)
    r[0] = clobber(p)
    out[0] = p


def test_func_arguments_are_values_not_references(backend):
    out, r = kl.zeros(1, dtype=kl.vec3), kl.zeros(1, dtype=float)
    run(func_args_are_copies, 1, out, r)
    assert r.numpy()[0] == 100.0
    np.testing.assert_array_equal(out.numpy()[0], [1.0, 2.0, 3.0])


@kl.func
def uses_y_locally(x: float):
    y = x * 10.0
    return y


@kl.kernel
def func_locals_are_private(out: kl.array(dtype=float)):
    y = 1.0
    z = uses_y_locally(2.0)
    out[0] = y
    out[1] = z
    out[2] = uses_y_locally(3.0)


def test_func_locals_do_not_clobber_the_callers_locals(backend):
    out = kl.zeros(3, dtype=float)
    run(func_locals_are_private, 1, out)
    np.testing.assert_array_equal(out.numpy(), [1.0, 20.0, 30.0])


@kl.kernel
def sum_of_signs(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    s = float(0.0)
    for k in range(a.shape[0]):
        s += sign_of(a[k])
    out[0] = s


def test_func_with_early_returns_called_in_a_loop(backend):
    data = np.array([-2.0, 3.0, 0.0, 5.0, 1.0, -0.5], np.float32)
    out = kl.zeros(1, dtype=float)
    run(sum_of_signs, 1, f32(data), out)
    assert out.numpy()[0] == np.sign(data).sum()


# ---- operators ----------------------------------------------------------------------------

@kl.kernel
def float_ops(a: kl.array(dtype=float), b: kl.array(dtype=float), out: kl.array(dtype=float,
                                                                             ndim=2)):
    i = kl.tid()
    x, y = a[i], b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = x ** y
    out[i, 7] = -x


def test_float_arithmetic_operators(backend):
    a = np.array([7.5, 2.0, 9.0], np.float32)
    b = np.array([2.0, 0.5, 4.0], np.float32)
    out = kl.zeros((3, 8), dtype=float)
    run(float_ops, 3, f32(a), f32(b), out)
    expected = np.stack([a + b, a - b, a * b, a / b, np.floor_divide(a, b), np.fmod(a, b),
                         a ** b, -a], axis=1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@kl.kernel
def float_floordiv_negative(a: kl.array(dtype=float), b: kl.array(dtype=float),
                            out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = a[i] // b[i]


def test_float_floordiv_floors_negative_quotients(backend):
    a = np.array([-7.0, 7.0, -0.5], np.float32)
    b = np.array([2.0, -2.0, 4.0], np.float32)
    out = kl.zeros(3, dtype=float)
    run(float_floordiv_negative, 3, f32(a), f32(b), out)
    np.testing.assert_array_equal(out.numpy(), np.floor(a / b))


@kl.kernel
def float_mod(a: kl.array(dtype=float), b: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = a[i] % b[i]


def test_float_modulo_takes_the_sign_of_the_dividend_like_warp(backend):
    # Warp's '%' on floats is C's fmod: -7.0 % 2.0 == -1.0 (Python would give 1.0).
    a = np.array([-7.0, 7.0, -7.5], np.float32)
    b = np.array([2.0, -2.0, 2.0], np.float32)
    out = kl.zeros(3, dtype=float)
    run(float_mod, 3, f32(a), f32(b), out)
    np.testing.assert_array_equal(out.numpy(), np.fmod(a, b))


@kl.kernel
def int_ops(a: kl.array(dtype=int), b: kl.array(dtype=int), out: kl.array(dtype=int, ndim=2)):
    i = kl.tid()
    x, y = a[i], b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = -x


def test_int_arithmetic_operators_on_positive_operands(backend):
    a = np.array([7, 20, 3], np.int32)
    b = np.array([2, 6, 5], np.int32)
    out = kl.zeros((3, 7), dtype=int)
    run(int_ops, 3, i32(a), i32(b), out)
    expected = np.stack([a + b, a - b, a * b, a // b, a // b, a % b, -a], axis=1)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_int_true_division_truncates_toward_zero_like_c_and_warp(backend):
    # Warp (and C) integer '/' truncates: -7 / 2 == -3, 7 / -2 == -3.
    a = np.array([-7, 7, -8, -1], np.int32)
    b = np.array([2, -2, 3, 5], np.int32)
    out = kl.zeros((4, 7), dtype=int)
    run(int_ops, 4, i32(a), i32(b), out)
    np.testing.assert_array_equal(out.numpy()[:, 3], np.trunc(a / b).astype(np.int32))


def test_int_floordiv_truncates_like_c_and_warp(backend):
    # Warp's '//' on ints is C's division: -7 // 2 == -3 (Python would give -4).
    a = np.array([-7, 7, -8, -1], np.int32)
    b = np.array([2, -2, 3, 5], np.int32)
    out = kl.zeros((4, 7), dtype=int)
    run(int_ops, 4, i32(a), i32(b), out)
    np.testing.assert_array_equal(out.numpy()[:, 4], np.trunc(a / b).astype(np.int32))


def test_int_modulo_takes_the_sign_of_the_dividend_like_c_and_warp(backend):
    # Warp's '%' on ints is C's remainder: -7 % 2 == -1 (Python would give 1).
    a = np.array([-7, 7, -8, 9], np.int32)
    b = np.array([2, -2, 3, 4], np.int32)
    out = kl.zeros((4, 7), dtype=int)
    run(int_ops, 4, i32(a), i32(b), out)
    np.testing.assert_array_equal(out.numpy()[:, 5], np.fmod(a, b))


_DIVISION_SCRIPT = """
import numpy as np
import kernlab as kl

kl.config.cpu_backend = {backend!r}
kl.config.cache_dir = {cache!r}


@kl.kernel
def divide(a: kl.array(dtype=int), b: kl.array(dtype=int), out: kl.array(dtype=int, ndim=2)):
    i = kl.tid()
    out[i, 0] = a[i] / b[i]
    out[i, 1] = a[i] // b[i]
    out[i, 2] = a[i] % b[i]


a = kl.array(np.array({a}, np.int32), dtype=kl.int32)
b = kl.array(np.array({b}, np.int32), dtype=kl.int32)
out = kl.full((len({a}), 3), 99, dtype=kl.int32)
kl.launch(divide, len({a}), inputs=[a, b, out])
print(out.numpy().tolist())
"""


def run_division(backend, tmp_path, a, b):
    """[[a/b, a//b, a%b], ...] from a child process, so that a hardware trap (SIGFPE)
    fails the calling test instead of killing the test session."""
    script = tmp_path / "divide.py"
    script.write_text(_DIVISION_SCRIPT.format(backend=backend, cache=str(tmp_path / "c"),
                                              a=a, b=b))
    root = str(pathlib.Path(kl.__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=root, timeout=300, env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr}"
    return proc.stdout.strip()


def test_int_division_by_zero_gives_zero_and_does_not_crash(backend, tmp_path):
    assert run_division(backend, tmp_path, [7, -7, 0], [0, 0, 0]) == \
        "[[0, 0, 0], [0, 0, 0], [0, 0, 0]]"


def test_int_min_divided_by_minus_one_wraps_and_does_not_crash(backend, tmp_path):
    # The quotient 2**31 does not fit an int32; two's complement wraps it to -2**31.
    # (x86's idiv traps here, so a backend must guard it as it guards a zero divisor.)
    assert run_division(backend, tmp_path, [-2**31], [-1]) == f"[[{-2**31}, {-2**31}, 0]]"


@kl.kernel
def powers(a: kl.array(dtype=float), out: kl.array(dtype=float, ndim=2)):
    i = kl.tid()
    x = a[i]
    out[i, 0] = x ** 2.0
    out[i, 1] = x ** 0.5
    out[i, 2] = x ** 2


def test_power_operator_with_literal_exponents(backend):
    a = np.array([4.0, 2.25, 9.0], np.float32)
    out = kl.zeros((3, 3), dtype=float)
    run(powers, 3, f32(a), out)
    np.testing.assert_allclose(out.numpy(), np.stack([a ** 2, np.sqrt(a), a ** 2], axis=1),
                               rtol=1e-6)


@kl.kernel
def compare_all(a: kl.array(dtype=float), b: kl.array(dtype=float),
                out: kl.array(dtype=kl.bool, ndim=2)):
    i = kl.tid()
    x, y = a[i], b[i]
    out[i, 0] = x == y
    out[i, 1] = x != y
    out[i, 2] = x < y
    out[i, 3] = x <= y
    out[i, 4] = x > y
    out[i, 5] = x >= y


def test_comparison_operators(backend):
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([2.0, 2.0, 1.0], np.float32)
    out = kl.zeros((3, 6), dtype=kl.bool)
    run(compare_all, 3, f32(a), f32(b), out)
    expected = np.stack([a == b, a != b, a < b, a <= b, a > b, a >= b], axis=1)
    np.testing.assert_array_equal(out.numpy(), expected)


@kl.kernel
def in_unit_interval(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    i = kl.tid()
    x = a[i]
    if 0 < x < 1:
        out[i] = 1
    else:
        out[i] = 0


def test_chained_comparison(backend):
    data = np.array([-0.5, 0.0, 0.5, 1.0, 2.0], np.float32)
    out = kl.zeros(5, dtype=int)
    run(in_unit_interval, 5, f32(data), out)
    np.testing.assert_array_equal(out.numpy(), ((0 < data) & (data < 1)).astype(np.int32))


@kl.kernel
def guarded_and(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    i = kl.tid()
    n = a.shape[0]
    if i < n and a[i] > 0.0:
        out[i] = 1


def test_and_short_circuits_so_out_of_range_reads_never_happen(backend):
    out = kl.zeros(6, dtype=int)
    run(guarded_and, 6, f32([1.0, -1.0, 2.0]), out)
    np.testing.assert_array_equal(out.numpy(), [1, 0, 1, 0, 0, 0])


@kl.kernel
def guarded_or(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    i = kl.tid()
    if i >= a.shape[0] or a[i] < 0.0:
        out[i] = 1


def test_or_short_circuits_so_out_of_range_reads_never_happen(backend):
    out = kl.zeros(5, dtype=int)
    run(guarded_or, 5, f32([1.0, -1.0, 2.0]), out)
    np.testing.assert_array_equal(out.numpy(), [0, 1, 0, 1, 1])


@kl.kernel
def count_leading_positive(a: kl.array(dtype=float), out: kl.array(dtype=int)):
    j = int(0)
    while j < a.shape[0] and a[j] > 0.0:
        j += 1
    out[0] = j


def test_short_circuit_in_a_while_condition(backend):
    out = kl.zeros(1, dtype=int)
    run(count_leading_positive, 1, f32([1.0, 2.0, 3.0]), out)
    assert out.numpy()[0] == 3
    run(count_leading_positive, 1, f32([1.0, -2.0, 3.0]), out)
    assert out.numpy()[0] == 1


@kl.kernel
def truthiness(n: int, x: float, out: kl.array(dtype=int)):
    out[0] = 0
    out[1] = 0
    out[2] = 0
    if n:
        out[0] = 1
    if x:
        out[1] = 1
    if not n:
        out[2] = 1


@pytest.mark.parametrize("n, x", [(0, 0.0), (3, 0.0), (0, -0.5), (-1, 2.0)])
def test_numbers_as_conditions_test_for_nonzero(backend, n, x):
    out = kl.zeros(3, dtype=int)
    run(truthiness, 1, n, x, out)
    np.testing.assert_array_equal(out.numpy(), [n != 0, x != 0, n == 0])


@kl.kernel
def logic(a: kl.array(dtype=kl.bool), b: kl.array(dtype=kl.bool),
          out: kl.array(dtype=kl.bool, ndim=2)):
    i = kl.tid()
    out[i, 0] = a[i] and b[i]
    out[i, 1] = a[i] or b[i]
    out[i, 2] = not a[i]


def test_and_or_not_values(backend):
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    out = kl.zeros((4, 3), dtype=kl.bool)
    run(logic, 4, kl.array(a, dtype=kl.bool), kl.array(b, dtype=kl.bool), out)
    np.testing.assert_array_equal(out.numpy(), np.stack([a & b, a | b, ~a], axis=1))


# ---- casts --------------------------------------------------------------------------------

@kl.kernel
def casts(a: kl.array(dtype=float), fo: kl.array(dtype=float), io: kl.array(dtype=int),
          i64: kl.array(dtype=kl.int64), d: kl.array(dtype=kl.float64)):
    i = kl.tid()
    x = a[i]
    io[i] = int(x)
    fo[i] = float(i) + 0.5
    i64[i] = kl.int64(x) * kl.int64(1000000000)
    d[i] = kl.float64(i) / kl.float64(3.0)


def test_float_and_int_casts(backend):
    data = np.array([2.7, -2.7, 0.2], np.float32)
    fo, io = kl.zeros(3, dtype=float), kl.zeros(3, dtype=int)
    i64, d = kl.zeros(3, dtype=kl.int64), kl.zeros(3, dtype=kl.float64)
    run(casts, 3, f32(data), fo, io, i64, d)
    np.testing.assert_array_equal(io.numpy(), np.trunc(data).astype(np.int32))
    np.testing.assert_array_equal(fo.numpy(), np.arange(3) + 0.5)
    np.testing.assert_array_equal(i64.numpy(), np.trunc(data).astype(np.int64) * 10**9)
    np.testing.assert_array_equal(d.numpy(), np.arange(3) / 3.0)


@kl.kernel
def narrow(a: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float32),
           iout: kl.array(dtype=kl.int32)):
    i = kl.tid()
    out[i] = kl.float32(a[i])
    iout[i] = kl.int32(kl.int64(a[i]))


def test_float32_and_int32_casts_narrow(backend):
    data = np.array([1.0 / 3.0, -5.9], np.float64)
    out, iout = kl.zeros(2, dtype=kl.float32), kl.zeros(2, dtype=kl.int32)
    run(narrow, 2, f64(data), out, iout)
    np.testing.assert_array_equal(out.numpy(), data.astype(np.float32))
    np.testing.assert_array_equal(iout.numpy(), [0, -5])


# ---- vectors and matrices -----------------------------------------------------------------

@kl.kernel
def build_vectors(x: float, out: kl.array(dtype=kl.vec3), outd: kl.array(dtype=kl.vec3d)):
    out[0] = kl.vec3(x, 2.0, 3.0)
    out[1] = kl.vec3(x)
    outd[0] = kl.vec3d(kl.float64(x), kl.float64(1.0) / kl.float64(3.0), kl.float64(0.0))


def test_vector_constructors(backend):
    out, outd = kl.zeros(2, dtype=kl.vec3), kl.zeros(1, dtype=kl.vec3d)
    run(build_vectors, 1, 1.5, out, outd)
    np.testing.assert_array_equal(out.numpy(), [[1.5, 2.0, 3.0], [1.5, 1.5, 1.5]])
    assert outd.numpy().dtype == np.float64
    np.testing.assert_array_equal(outd.numpy()[0], [1.5, 1.0 / 3.0, 0.0])


@kl.kernel
def build_matrices(m2: kl.array(dtype=kl.mat22), m3: kl.array(dtype=kl.mat33)):
    m2[0] = kl.mat22(1.0, 2.0, 3.0, 4.0)
    m3[0] = kl.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    m3[1] = kl.mat33(kl.vec3(1.0, 2.0, 3.0), kl.vec3(4.0, 5.0, 6.0), kl.vec3(7.0, 8.0, 9.0))


def test_matrix_constructors_are_row_major(backend):
    m2, m3 = kl.zeros(1, dtype=kl.mat22), kl.zeros(2, dtype=kl.mat33)
    run(build_matrices, 1, m2, m3)
    np.testing.assert_array_equal(m2.numpy()[0], [[1.0, 2.0], [3.0, 4.0]])
    expected = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(m3.numpy()[0], expected)
    np.testing.assert_array_equal(m3.numpy()[1], expected)


@kl.kernel
def vec_scalar_ops(v: kl.vec3, s: float, out: kl.array(dtype=kl.vec3)):
    out[0] = s * v
    out[1] = v * s
    out[2] = v / s
    out[3] = v + v
    out[4] = v - kl.vec3(1.0)
    out[5] = -v


@pytest.mark.parametrize("as_value", [tuple, np.array, lambda v: kl.vec3(*v)],
                         ids=["tuple", "numpy", "kl.vec3"])
def test_vector_arithmetic(backend, as_value):
    v = np.array([1.0, -2.0, 4.0], np.float32)
    s = np.float32(2.5)
    out = kl.zeros(6, dtype=kl.vec3)
    run(vec_scalar_ops, 1, as_value([1.0, -2.0, 4.0]), s, out)
    expected = np.stack([s * v, v * s, v / s, v + v, v - 1, -v])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-7)


@kl.kernel
def mat_ops(m: kl.mat33, v: kl.vec3, s: float, mout: kl.array(dtype=kl.mat33),
            vout: kl.array(dtype=kl.vec3)):
    mout[0] = s * m
    vout[0] = m * v
    vout[1] = m @ v
    vout[2] = kl.mul(m, v)


def test_scalar_times_matrix_and_matrix_times_vector(backend, rng):
    m = rng.standard_normal((3, 3)).astype(np.float32)
    v = rng.standard_normal(3).astype(np.float32)
    mout, vout = kl.zeros(1, dtype=kl.mat33), kl.zeros(3, dtype=kl.vec3)
    run(mat_ops, 1, m, v, 2.0, mout, vout)
    np.testing.assert_allclose(mout.numpy()[0], 2.0 * m, rtol=1e-6)
    for k in range(3):
        np.testing.assert_allclose(vout.numpy()[k], m @ v, rtol=1e-5, atol=1e-6)


@kl.kernel
def components(v: kl.vec3, m: kl.mat33, r: int, c: int, out: kl.array(dtype=float)):
    out[0] = v[0]
    out[1] = v.y
    out[2] = v.z
    out[3] = v[r]
    out[4] = m[1, 2]
    out[5] = m[r, c]


def test_component_and_matrix_element_access(backend):
    v = np.array([1.0, 2.0, 3.0], np.float32)
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    out = kl.zeros(6, dtype=float)
    run(components, 1, v, m, 2, 0, out)
    np.testing.assert_array_equal(out.numpy(), [v[0], v[1], v[2], v[2], m[1, 2], m[2, 0]])


@kl.kernel
def copy_then_write(out: kl.array(dtype=kl.vec3)):
    p = kl.vec3(1.0, 2.0, 3.0)
    q = p
    q[0] = 10.0
    q.y = 20.0
    out[0] = p
    out[1] = q


def test_component_assignment_writes_a_copy_not_an_alias(backend):
    out = kl.zeros(2, dtype=kl.vec3)
    run(copy_then_write, 1, out)
    np.testing.assert_array_equal(out.numpy(), [[1.0, 2.0, 3.0], [10.0, 20.0, 3.0]])


@kl.kernel
def local_from_array_then_write(a: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3)):
    v = a[0]
    v[1] = 99.0
    out[0] = v


def test_writing_a_loaded_vector_leaves_the_array_unchanged(backend):
    a = kl.array(np.array([[1.0, 2.0, 3.0]], np.float32), dtype=kl.vec3)
    out = kl.zeros(1, dtype=kl.vec3)
    run(local_from_array_then_write, 1, a, out)
    np.testing.assert_array_equal(a.numpy()[0], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out.numpy()[0], [1.0, 99.0, 3.0])


@kl.kernel
def bump_parameter_components(v: kl.vec3, m: kl.mat22, out: kl.array(dtype=float)):
    i = kl.tid()
    v[0] += 1.0
    m[0, 0] += 1.0
    out[i] = v[0] + m[0, 0]


def test_writing_a_vector_parameter_is_private_to_each_thread(backend):
    v = np.array([1.0, 2.0, 3.0], np.float32)
    m = np.eye(2, dtype=np.float32)
    out = kl.zeros(3, dtype=float)
    run(bump_parameter_components, 3, v, m, out)
    np.testing.assert_array_equal(out.numpy(), [(1.0 + 1.0) + (1.0 + 1.0)] * 3)
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])  # the caller's values are untouched
    np.testing.assert_array_equal(m, np.eye(2))


@kl.kernel
def matrix_element_write(out: kl.array(dtype=kl.mat22)):
    m = kl.mat22(1.0, 2.0, 3.0, 4.0)
    n = m
    n[1, 0] = 30.0
    out[0] = m
    out[1] = n


def test_matrix_element_assignment_writes_a_copy(backend):
    out = kl.zeros(2, dtype=kl.mat22)
    run(matrix_element_write, 1, out)
    np.testing.assert_array_equal(out.numpy(), [[[1.0, 2.0], [3.0, 4.0]],
                                                [[1.0, 2.0], [30.0, 4.0]]])


# ---- arrays -------------------------------------------------------------------------------

@kl.kernel
def sum_2d_rows(a: kl.array(dtype=float, ndim=2), out: kl.array(dtype=float)):
    i = kl.tid()
    s = float(0.0)
    for j in range(a.shape[1]):
        s += a[i, j]
    out[i] = s


def test_2d_indexing_and_shape(backend, rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    out = kl.zeros(4, dtype=float)
    run(sum_2d_rows, 4, kl.array(a, dtype=float), out)
    np.testing.assert_allclose(out.numpy(), a.sum(axis=1), rtol=1e-5)


@kl.kernel
def copy_3d(a: kl.array(dtype=float, ndim=3), out: kl.array(dtype=float, ndim=3),
            dims: kl.array(dtype=int)):
    i, j, k = kl.tid()
    out[i, j, k] = a[i, j, k] * 2.0
    if i == 0 and j == 0 and k == 0:
        dims[0] = a.shape[0]
        dims[1] = a.shape[1]
        dims[2] = a.shape[2]


def test_3d_indexing_and_shape(backend, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out, dims = kl.zeros((2, 3, 4), dtype=float), kl.zeros(3, dtype=int)
    run(copy_3d, (2, 3, 4), kl.array(a, dtype=float), out, dims)
    np.testing.assert_array_equal(out.numpy(), a * np.float32(2))
    np.testing.assert_array_equal(dims.numpy(), [2, 3, 4])


@kl.kernel
def vec3_lengths(points: kl.array(dtype=kl.vec3), out: kl.array(dtype=float),
                 shifted: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    p = points[i]
    out[i] = kl.sqrt(p[0] * p[0] + p.y * p.y + p.z * p.z)
    shifted[i] = p + kl.vec3(1.0, 0.0, 0.0)


def test_array_of_vec3(backend, rng):
    pts = rng.standard_normal((5, 3)).astype(np.float32)
    out, shifted = kl.zeros(5, dtype=float), kl.zeros(5, dtype=kl.vec3)
    run(vec3_lengths, 5, kl.array(pts, dtype=kl.vec3), out, shifted)
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(pts, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(shifted.numpy(), pts + np.float32([1, 0, 0]))


@kl.kernel
def transform_points(ms: kl.array(dtype=kl.mat33), pts: kl.array(dtype=kl.vec3),
                     out: kl.array(dtype=kl.vec3), diag: kl.array(dtype=float)):
    i = kl.tid()
    m = ms[i]
    out[i] = m * pts[i]
    diag[i] = m[0, 0] + m[1, 1] + m[2, 2]


def test_array_of_mat33(backend, rng):
    ms = rng.standard_normal((4, 3, 3)).astype(np.float32)
    pts = rng.standard_normal((4, 3)).astype(np.float32)
    out, diag = kl.zeros(4, dtype=kl.vec3), kl.zeros(4, dtype=float)
    run(transform_points, 4, kl.array(ms, dtype=kl.mat33), kl.array(pts, dtype=kl.vec3),
        out, diag)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nj->ni", ms, pts), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(diag.numpy(), np.trace(ms, axis1=1, axis2=2), rtol=1e-6)


@kl.kernel
def store_components_into_vec_array(a: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    a[i][1] = float(i)


def test_assigning_a_component_of_an_array_element(backend):
    a = kl.zeros(3, dtype=kl.vec3)
    run(store_components_into_vec_array, 3, a)
    expected = np.zeros((3, 3), np.float32)
    expected[:, 1] = np.arange(3)
    np.testing.assert_array_equal(a.numpy(), expected)


# ---- constants, globals, closures ---------------------------------------------------------

SCALE = kl.constant(2.5)
COUNT = kl.constant(4)
PLAIN_GLOBAL = 0.75


@kl.kernel
def use_constants(out: kl.array(dtype=float)):
    s = float(0.0)
    for k in range(COUNT):
        s += SCALE
    out[0] = s
    out[1] = PLAIN_GLOBAL * 2.0


def test_module_constants_and_globals(backend):
    out = kl.zeros(2, dtype=float)
    run(use_constants, 1, out)
    np.testing.assert_array_equal(out.numpy(), [4 * 2.5, 1.5])


OFFSET = kl.constant(kl.vec3(1.0, 2.0, 3.0))


@kl.kernel
def use_vector_constant(out: kl.array(dtype=kl.vec3)):
    out[0] = OFFSET * 2.0


def test_vector_module_constant(backend):
    out = kl.zeros(1, dtype=kl.vec3)
    run(use_vector_constant, 1, out)
    np.testing.assert_array_equal(out.numpy()[0], [2.0, 4.0, 6.0])


def make_offset_kernel(offset):
    @kl.kernel
    def add_offset(a: kl.array(dtype=float)):
        i = kl.tid()
        a[i] = a[i] + offset
    return add_offset


def test_closure_variables(backend):
    a, b = f32([1.0, 2.0]), f32([1.0, 2.0])
    run(make_offset_kernel(10.0), 2, a)
    run(make_offset_kernel(-1.0), 2, b)
    np.testing.assert_array_equal(a.numpy(), [11.0, 12.0])
    np.testing.assert_array_equal(b.numpy(), [0.0, 1.0])


# ---- literal rules ------------------------------------------------------------------------

@kl.kernel
def double_f32(a: kl.array(dtype=kl.float32), out: kl.array(dtype=kl.float32)):
    i = kl.tid()
    out[i] = a[i] * 2.0 + 1


@kl.kernel
def double_f64(a: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    i = kl.tid()
    out[i] = a[i] * 2.0 + 1


def test_float_literal_adopts_float32(backend):
    data = np.array([1.0 / 3.0, 2.5], np.float32)
    out = kl.zeros(2, dtype=kl.float32)
    run(double_f32, 2, f32(data), out)
    np.testing.assert_array_equal(out.numpy(), data * np.float32(2) + np.float32(1))


def test_float_literal_adopts_float64(backend):
    data = np.array([1.0 / 3.0, 0.1], np.float64)
    out = kl.zeros(2, dtype=kl.float64)
    run(double_f64, 2, f64(data), out)
    np.testing.assert_array_equal(out.numpy(), data * 2.0 + 1.0)


@kl.kernel
def int_literal_with_float(x: float, out: kl.array(dtype=float)):
    out[0] = 2 * x
    out[1] = x - 1
    out[2] = x / 4


def test_int_literal_with_float_variable(backend):
    out = kl.zeros(3, dtype=float)
    run(int_literal_with_float, 1, 3.0, out)
    np.testing.assert_array_equal(out.numpy(), [6.0, 2.0, 0.75])


# ---- Python builtins ----------------------------------------------------------------------

@kl.kernel
def py_min_max_abs(a: kl.array(dtype=float), b: kl.array(dtype=float),
                   ia: kl.array(dtype=int), out: kl.array(dtype=float, ndim=2),
                   iout: kl.array(dtype=int, ndim=2)):
    i = kl.tid()
    out[i, 0] = min(a[i], b[i])
    out[i, 1] = max(a[i], b[i])
    out[i, 2] = abs(a[i])
    iout[i, 0] = min(ia[i], 0)
    iout[i, 1] = max(ia[i], 0)
    iout[i, 2] = abs(ia[i])


def test_python_min_max_abs(backend):
    a = np.array([1.0, -3.0, 2.0], np.float32)
    b = np.array([0.5, 4.0, -2.0], np.float32)
    ia = np.array([-5, 0, 7], np.int32)
    out, iout = kl.zeros((3, 3), dtype=float), kl.zeros((3, 3), dtype=int)
    run(py_min_max_abs, 3, f32(a), f32(b), i32(ia), out, iout)
    np.testing.assert_array_equal(out.numpy(), np.stack([np.minimum(a, b), np.maximum(a, b),
                                                         np.abs(a)], axis=1))
    np.testing.assert_array_equal(iout.numpy(), np.stack([np.minimum(ia, 0),
                                                          np.maximum(ia, 0), np.abs(ia)],
                                                         axis=1))


@kl.kernel
def py_round(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = round(a[i])


def test_python_round_rounds_half_away_from_zero_like_warp(backend):
    # Warp's round is C's roundf: halves go away from zero (Python's round would give
    # 2.0 for 2.5), and 0.49999997 rounds to 0, not 1.
    x = np.array([0.49999997, 2.5, -2.5, 1.5, -0.49999997, 3.2], np.float32)
    out = kl.zeros(len(x), dtype=float)
    run(py_round, len(x), f32(x), out)
    exact = x.astype(np.float64)  # x + 0.5 is exact in float64
    np.testing.assert_array_equal(out.numpy(), np.trunc(exact + np.copysign(0.5, exact)))


# ---- launches -----------------------------------------------------------------------------

def test_zero_dim_launch_runs_nothing(backend):
    out = kl.full(3, 5, dtype=kl.int32)
    run(tid_1d, 0, out)
    np.testing.assert_array_equal(out.numpy(), [5, 5, 5])


def test_kernel_source_ir_mentions_the_kernel():
    text = kl.source(tid_1d, "ir")
    assert "tid_1d" in text and "tid" in text



@kl.kernel
def row_sums(m: kl.array2d(dtype=float), out: kl.array1d(dtype=float)):
    i, j = kl.tid()
    kl.atomic_add(out, i, m[i, j])


def test_warp_fixed_ndim_array_annotations(backend):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = kl.array2d(data, dtype=float)
    out = kl.zeros(3)
    kl.launch(row_sums, (3, 4), inputs=[m, out])
    assert m.ndim == 2
    np.testing.assert_allclose(out.numpy(), data.sum(axis=1))
