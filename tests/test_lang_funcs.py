"""The kernel language: funcs, module constants, globals and closures.

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import numpy as np

import kernlab as kl
from helpers import f32, run


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
