"""The kernel language: assignment (tuple unpacking, augmented assignment, atomic updates of
array elements).

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import numpy as np
import pytest

import kernlab as kl
from helpers import f32, i32, line_of, run


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


@kl.kernel
def bool_atomic(flags: kl.array(dtype=kl.bool)):
    i = kl.tid()
    flags[i] += True


@kl.kernel
def bool_atomic_call(flags: kl.array(dtype=kl.bool)):
    i = kl.tid()
    kl.atomic_max(flags, i, True)


def test_atomics_on_bool_arrays_are_refused_at_the_users_line():
    for k, text in ((bool_atomic, "flags[i] += True"),
                    (bool_atomic_call, "kl.atomic_max(flags, i, True)")):
        with pytest.raises(kl.KernelTypeError) as err:
            k.ir  # noqa: B018
        assert "not of bool" in str(err.value)
        assert err.value.loc.line == line_of(k, text)
