"""The kernel language: arithmetic, comparison and logical operators, and Python builtins.

Part of API.md's "Kernel language" section. Each test launches a small kernel on every CPU
backend and compares with what NumPy (or plain arithmetic) computes independently.
"""
import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import kernlab as kl
from helpers import f32, i32, run


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


@pytest.mark.parametrize("column", [3, 4], ids=["true_division", "floordiv"])
def test_int_division_truncates_toward_zero_like_c_and_warp(backend, column):
    # Warp's (and C's) integer '/' truncates: -7 / 2 == -3, 7 / -2 == -3; '//' floors since
    # Warp 1.19, as in Python: -7 // 2 == -4.
    a = np.array([-7, 7, -8, -1], np.int32)
    b = np.array([2, -2, 3, 5], np.int32)
    out = kl.zeros((4, 7), dtype=int)
    run(int_ops, 4, i32(a), i32(b), out)
    want = np.trunc(a / b) if column == 3 else np.floor_divide(a, b)
    np.testing.assert_array_equal(out.numpy()[:, column], want.astype(np.int32))


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
    text = _DIVISION_SCRIPT.format(backend=backend, cache=str(tmp_path / "c"), a=a, b=b)
    if backend.startswith("cuda"):  # a GPU does not trap, and the fake GPU lives here only
        script.write_text(text.replace("kl.config.", "# kl.config.")
                          .replace("print(", "result = ("))
        return str(runpy.run_path(str(script))["result"])
    script.write_text(text)
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
def compare_mixed(f: kl.array(dtype=float), i: kl.array(dtype=int),
                  u: kl.array(dtype=kl.uint32), d: kl.array(dtype=kl.float64),
                  w: kl.array(dtype=kl.int64), b: kl.array(dtype=kl.int8),
                  h: kl.array(dtype=kl.uint16), out: kl.array(dtype=kl.bool, ndim=2)):
    t = kl.tid()
    out[t, 0] = f[t] < i[t]
    out[t, 1] = i[t] < u[t]
    out[t, 2] = w[t] < u[t]
    out[t, 3] = f[t] == d[t]
    out[t, 4] = i[t] >= f[t]
    out[t, 5] = b[t] < h[t]


def test_comparisons_of_mixed_scalar_types_follow_cpp_conversions(backend):
    # Warp compares with C++ operators: the int goes to float32 (16777217 rounds to
    # 16777216), int32 meets uint32 as uint32 (-1 is 4294967295), int64 with uint32 as
    # int64, float32 with float64 as float64, int8 with uint16 as int32.
    f = np.array([16777216.0, 0.5, -2.0], np.float32)
    i = np.array([16777217, -1, -3], np.int32)
    u = np.array([1, 1, 4294967295], np.uint32)
    d = np.array([16777216.0, 0.5, -2.0000001], np.float64)
    w = np.array([-1, 5, 7], np.int64)
    b = np.array([-1, 3, 4], np.int8)
    h = np.array([0, 2, 65535], np.uint16)
    out = kl.zeros((3, 6), dtype=kl.bool)
    run(compare_mixed, 3, f32(f), i32(i), kl.array(u), kl.array(d), kl.array(w),
        kl.array(b), kl.array(h), out)
    expected = np.stack([f < i.astype(np.float32), i.astype(np.uint32) < u,
                         w < u.astype(np.int64), f.astype(np.float64) == d,
                         i.astype(np.float32) >= f, b.astype(np.int32) < h.astype(np.int32)],
                        axis=1)
    assert expected[:, 0].tolist() == [False, False, False]  # the C++ rules, spelled out
    assert expected[:, 1].tolist() == [False, False, True]
    np.testing.assert_array_equal(out.numpy(), expected)


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
