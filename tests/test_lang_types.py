"""The kernel language: scalar types, casts and how literals take their types.

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import numpy as np

import kernlab as kl
from helpers import f32, i32, run


def f64(data):
    return kl.array(np.asarray(data, np.float64), dtype=kl.float64)


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
