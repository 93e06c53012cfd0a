"""Compiler limits and odd inputs are KernelErrors naming the kernel and the line, never an
internal exception (RecursionError, TypeError, an LLVM parse failure, a bare IndexError)."""
import math
import textwrap

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import GradientError, KernelLimitError


def compile_source(tmp_path, source: str, name: str = "k"):
    """Define the kernel of ``source`` (a file, so the frontend can read it) and compile it;
    return the error it raises."""
    path = tmp_path / f"{name}_source.py"
    path.write_text("import kernlab as kl\n" + source)
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(kl.KernelError) as info:
        kl.launch(namespace[name], 1, inputs=[kl.zeros(1, dtype=float)])
    return info.value, path.read_text().splitlines()


def line_with(lines, needle: str) -> int:
    hits = [k + 1 for k, text in enumerate(lines) if needle in text]
    assert len(hits) == 1
    return hits[0]


@pytest.mark.parametrize("terms", [1200, 1800])
def test_an_expression_with_thousands_of_operands_is_a_limit_error(tmp_path, terms):
    source = textwrap.dedent(f"""
        @kl.kernel
        def k(a: kl.array(dtype=float)):
            x = a[0]
            a[0] = {'x' + ' + x' * terms}
        """)
    err, lines = compile_source(tmp_path, source)
    assert isinstance(err, KernelLimitError)
    assert err.kernel == "k" and err.loc.line == line_with(lines, "a[0] = x + x")
    assert "nested too deeply" in str(err)


def test_a_long_chain_of_funcs_is_a_limit_error_at_the_kernel_line(tmp_path):
    funcs = "@kl.func\ndef f0(x: float):\n    return x + 1.0\n" + "".join(
        f"@kl.func\ndef f{i}(x: float):\n    return f{i - 1}(x) + 1.0\n" for i in range(1, 400))
    source = funcs + "@kl.kernel\ndef k(a: kl.array(dtype=float)):\n    a[0] = f399(a[0])\n"
    err, lines = compile_source(tmp_path, source)
    assert isinstance(err, KernelLimitError)
    assert err.kernel == "k" and err.loc.line == line_with(lines, "a[0] = f399(a[0])")


def test_a_moderately_long_func_chain_still_compiles_and_runs(tmp_path):
    funcs = "@kl.func\ndef f0(x: float):\n    return x + 1.0\n" + "".join(
        f"@kl.func\ndef f{i}(x: float):\n    return f{i - 1}(x) + 1.0\n" for i in range(1, 40))
    path = tmp_path / "chain40.py"
    path.write_text("import kernlab as kl\n" + funcs +
                    "@kl.kernel\ndef k(a: kl.array(dtype=float)):\n    a[0] = f39(a[0])\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    a = kl.zeros(1, dtype=float)
    kl.launch(namespace["k"], 1, inputs=[a])
    assert a.numpy()[0] == 40.0


def test_a_very_long_name_is_a_limit_error(tmp_path):
    name = "v" * 2000
    source = f"@kl.kernel\ndef k(a: kl.array(dtype=float)):\n    {name} = a[0]\n" \
             f"    a[0] = {name} + 1.0\n"
    err, lines = compile_source(tmp_path, source)
    assert isinstance(err, KernelLimitError)
    assert err.loc.line == 4 and "2000 characters" in str(err)


def test_printf_of_an_array_is_a_type_error(tmp_path):
    # (print(a) prints Warp's placeholder line: tests/test_print_adjoint.py)
    err, lines = compile_source(tmp_path, "@kl.kernel\ndef k(a: kl.array(dtype=float)):\n"
                                          "    kl.printf('%f', a)\n")
    assert isinstance(err, kl.KernelError) and isinstance(err, TypeError)
    assert err.loc.line == 4 and "cannot show an array ('a')" in str(err)


@pytest.mark.parametrize("expr, expected", [
    ("(-8.0) ** (1.0 / 3.0)", math.nan),  # C's pow: NaN, not a complex number
    ("0.0 ** -1.0", math.inf),
    ("10.0 ** 400.0", math.inf),
    ("(-2.0) ** 3.0", -8.0),
])
def test_constant_powers_fold_as_the_kernel_computes_them(tmp_path, expr, expected):
    path = tmp_path / "power.py"
    path.write_text(f"import kernlab as kl\n@kl.kernel\ndef k(a: kl.array(dtype=float)):\n"
                    f"    a[0] = {expr}\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    a = kl.zeros(1, dtype=float)
    kl.launch(namespace["k"], 1, inputs=[a])
    np.testing.assert_equal(a.numpy()[0], np.float32(expected))


def test_a_huge_integer_power_is_an_error_not_a_hang(tmp_path):
    err, lines = compile_source(tmp_path, "@kl.kernel\ndef k(a: kl.array(dtype=float)):\n"
                                          "    a[0] = float(9 ** 9 ** 9)\n")
    assert err.loc.line == 4 and "64-bit" in str(err)


@kl.kernel
def two_params(a: kl.array(dtype=float), b: float):
    a[0] = b


def test_set_param_at_index_out_of_range_names_the_kernel():
    cmd = kl.launch(two_params, 1, inputs=[kl.zeros(1, dtype=float), 1.0], record_cmd=True)
    with pytest.raises(kl.KernelError, match="'two_params'.*index 5"):
        cmd.set_param_at_index(5, 1.0)


@kl.kernel
def copy_values(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i]


def test_backward_with_a_non_scalar_loss_is_a_gradient_error():
    x = kl.ones(5, dtype=float, requires_grad=True)
    y = kl.zeros(5, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(copy_values, 5, inputs=[x], outputs=[y])
    with pytest.raises(GradientError, match=r"shape \(5,\)"):
        tape.backward(loss=y)
    assert not x.grad.numpy().any()


@kl.kernel
def constant_remainders(out: kl.array(dtype=float), iout: kl.array(dtype=int), a: float,
                        n: int):
    out[0] = -(1.0 % 1)  # the long fuzzer's find: mod(float32, int32) had no overload
    out[1] = -7.5 % 2.0
    out[2] = a % 2.0
    iout[0] = -7 % 3
    iout[1] = n % 3


def test_constant_remainders_fold_as_the_kernel_computes_them(backend):
    out, iout = kl.zeros(3, dtype=float), kl.zeros(2, dtype=int)
    kl.launch(constant_remainders, 1, inputs=[out, iout, -7.5, -7])
    # C's remainder (math.fmod for floats): the sign of the dividend, folded or not
    assert out.numpy().tolist() == [-0.0, math.fmod(-7.5, 2.0), math.fmod(-7.5, 2.0)]
    assert iout.numpy().tolist() == [-1, -1]


@kl.kernel
def constant_floor_divisions(out: kl.array(dtype=float), iout: kl.array(dtype=int), a: float,
                             n: int):
    out[0] = 7.5 // 2  # the long fuzzer's find: floordiv(float32, int32) had no overload
    out[1] = a // 2.0
    iout[0] = -7 // 2
    iout[1] = n // 2


def test_constant_floor_divisions_fold_as_the_kernel_computes_them(backend):
    out, iout = kl.zeros(2, dtype=float), kl.zeros(2, dtype=int)
    kl.launch(constant_floor_divisions, 1, inputs=[out, iout, 7.5, -7])
    assert out.numpy().tolist() == [math.floor(7.5 / 2), math.floor(7.5 / 2.0)]
    assert iout.numpy().tolist() == [-4, -4]
