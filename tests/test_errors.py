"""Errors: the right KernelError class, the user's line and a caret; launch errors name the
parameter; out-of-bounds accesses raise IndexError and leave the process usable.

Expected line numbers are read from the kernel's own source with inspect, never hard-coded.
"""

import numpy as np
import pytest

import kernlab as kl
from helpers import line_of




def compile_error(kernel, cls):
    """The error kl.source raises when it first compiles ``kernel``."""
    with pytest.raises(cls) as info:
        kl.source(kernel, "ir")
    return info.value


def assert_points_at(err, obj, needle: str, caret: str | None = None):
    """err names the line of ``obj`` holding ``needle``, shows it, and puts a caret under it
    (exactly under ``caret`` when given)."""
    line = line_of(obj, needle)
    assert isinstance(err, kl.KernelError)
    assert err.loc is not None and err.loc.line == line
    text = str(err)
    assert f"line {line}" in text
    rows = text.splitlines()
    k = next((k for k, r in enumerate(rows) if needle in r and "|" in r), None)
    assert k is not None, f"the user's line is not shown:\n{text}"
    assert k + 1 < len(rows) and "^" in rows[k + 1], f"no caret under the line:\n{text}"
    shown = rows[k].split("| ", 1)[1]
    marks = rows[k + 1].split("| ", 1)[1]
    start, end = marks.index("^"), len(marks.rstrip())
    assert set(marks[start:end]) == {"^"} and end <= len(shown)
    if caret is not None:
        assert shown[start:end] == caret, f"caret under {shown[start:end]!r}:\n{text}"


def test_error_classes_are_kernel_errors():
    for cls in (kl.KernelSyntaxError, kl.KernelNameError, kl.KernelTypeError, kl.LaunchError):
        assert issubclass(cls, kl.KernelError)


# ---- unsupported syntax -------------------------------------------------------------------

@kl.kernel
def uses_list_comprehension(a: kl.array(dtype=float)):
    x = [1.0 for _ in range(3)]


@kl.kernel
def uses_with(a: kl.array(dtype=float)):
    with open("somefile"):
        a[0] = 1.0


@kl.kernel
def uses_try(a: kl.array(dtype=float)):
    try:
        a[0] = 1.0
    except IndexError:
        a[1] = 1.0


@kl.kernel
def uses_lambda(a: kl.array(dtype=float)):
    f = lambda x: x + 1.0  # noqa: E731
    a[0] = 1.0


@kl.kernel
def uses_fstring(a: kl.array(dtype=float)):
    print(f"value {a[0]}")


@kl.kernel
def uses_del(a: kl.array(dtype=float)):
    x = 1.0
    del x


@kl.kernel
def uses_import(a: kl.array(dtype=float)):
    import math
    a[0] = 1.0


@kl.kernel
def uses_slice(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    out[0] = a[1:3]


def test_list_comprehension_is_a_syntax_error():
    err = compile_error(uses_list_comprehension, kl.KernelSyntaxError)
    assert_points_at(err, uses_list_comprehension, "x = [1.0 for",
                     caret="[1.0 for _ in range(3)]")


def test_with_statement_is_a_syntax_error():
    err = compile_error(uses_with, kl.KernelSyntaxError)
    assert_points_at(err, uses_with, 'with open("somefile"):')


def test_try_statement_is_a_syntax_error():
    err = compile_error(uses_try, kl.KernelSyntaxError)
    assert_points_at(err, uses_try, "try:")


def test_lambda_is_a_syntax_error():
    err = compile_error(uses_lambda, kl.KernelSyntaxError)
    assert_points_at(err, uses_lambda, "f = lambda", caret="lambda x: x + 1.0")


def test_fstring_is_a_syntax_error():
    err = compile_error(uses_fstring, kl.KernelSyntaxError)
    assert_points_at(err, uses_fstring, 'print(f"value', caret='f"value {a[0]}"')


def test_del_is_a_syntax_error():
    err = compile_error(uses_del, kl.KernelSyntaxError)
    assert_points_at(err, uses_del, "del x", caret="del x")


def test_import_inside_a_kernel_is_a_syntax_error():
    err = compile_error(uses_import, kl.KernelSyntaxError)
    assert_points_at(err, uses_import, "import math", caret="import math")


def test_slice_is_a_syntax_error():
    err = compile_error(uses_slice, kl.KernelSyntaxError)
    assert_points_at(err, uses_slice, "a[1:3]")


# ---- unknown names ------------------------------------------------------------------------

@kl.kernel
def uses_unknown_name(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = undefined_thing + 1.0  # noqa: F821


@kl.kernel
def calls_unknown_function(a: kl.array(dtype=float)):
    a[0] = no_such_function(1.0)  # noqa: F821


@kl.kernel
def uses_unknown_attribute(a: kl.array(dtype=float)):
    a[0] = kl.no_such_builtin(1.0)


def test_unknown_name_is_a_name_error():
    err = compile_error(uses_unknown_name, kl.KernelNameError)
    assert_points_at(err, uses_unknown_name, "undefined_thing + 1.0", caret="undefined_thing")
    assert "undefined_thing" in err.message


def test_unknown_function_is_a_name_error():
    err = compile_error(calls_unknown_function, kl.KernelNameError)
    assert_points_at(err, calls_unknown_function, "no_such_function(1.0)",
                     caret="no_such_function")


def test_unknown_module_attribute_is_a_name_error():
    err = compile_error(uses_unknown_attribute, kl.KernelNameError)
    assert_points_at(err, uses_unknown_attribute, "kl.no_such_builtin(1.0)")
    assert "no_such_builtin" in str(err)


# ---- funcs --------------------------------------------------------------------------------

@kl.func
def two_args(x: float, y: float):
    return x + y


@kl.kernel
def calls_with_too_few(a: kl.array(dtype=float)):
    a[0] = two_args(1.0)


@kl.kernel
def calls_with_too_many(a: kl.array(dtype=float)):
    a[0] = two_args(1.0, 2.0, 3.0)


@kl.func
def mixes_precisions(x: float, y: kl.float64):
    return x * y


@kl.kernel
def calls_bad_func(a: kl.array(dtype=float)):
    a[0] = mixes_precisions(1.0, kl.float64(2.0))


def test_func_called_with_too_few_arguments():
    err = compile_error(calls_with_too_few, kl.KernelTypeError)
    assert_points_at(err, calls_with_too_few, "two_args(1.0)", caret="two_args(1.0)")
    assert "two_args" in err.message


def test_func_called_with_too_many_arguments():
    err = compile_error(calls_with_too_many, kl.KernelTypeError)
    assert_points_at(err, calls_with_too_many, "two_args(1.0, 2.0, 3.0)")


def test_error_inside_a_func_names_the_funcs_line():
    err = compile_error(calls_bad_func, kl.KernelTypeError)
    assert_points_at(err, mixes_precisions, "return x * y", caret="x * y")


# ---- type mismatches ----------------------------------------------------------------------

@kl.kernel
def adds_float32_and_float64(x: kl.float32, y: kl.float64, a: kl.array(dtype=float)):
    a[0] = x + y


@kl.kernel
def assigns_float64_to_float32_local(y: kl.float64, a: kl.array(dtype=float)):
    x = float(1.0)
    x = y
    a[0] = x


@kl.kernel
def multiplies_int_by_float_literal(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = i * 2.0


@kl.kernel
def stores_vec3_into_float_array(a: kl.array(dtype=float)):
    a[0] = kl.vec3(1.0, 2.0, 3.0)


@kl.kernel
def missing_annotation(a: kl.array(dtype=float),
                       scale):
    a[0] = 1.0


def test_float32_plus_float64_is_a_type_error():
    err = compile_error(adds_float32_and_float64, kl.KernelTypeError)
    assert_points_at(err, adds_float32_and_float64, "a[0] = x + y", caret="x + y")
    assert "float32" in err.message and "float64" in err.message


def test_assigning_float64_to_a_float32_local_is_a_type_error():
    err = compile_error(assigns_float64_to_float32_local, kl.KernelTypeError)
    assert_points_at(err, assigns_float64_to_float32_local, "x = y")
    assert "float64" in err.message and "float32" in err.message


def test_int_times_float_literal_is_a_type_error_as_in_warp():
    err = compile_error(multiplies_int_by_float_literal, kl.KernelTypeError)
    assert_points_at(err, multiplies_int_by_float_literal, "a[i] = i * 2.0", caret="i * 2.0")


def test_storing_a_vec3_into_a_float_array_is_a_type_error():
    err = compile_error(stores_vec3_into_float_array, kl.KernelTypeError)
    assert_points_at(err, stores_vec3_into_float_array, "a[0] = kl.vec3(")
    assert "vec3" in err.message


def test_missing_annotation_is_a_type_error_naming_the_parameter():
    err = compile_error(missing_annotation, kl.KernelTypeError)
    assert_points_at(err, missing_annotation, "                       scale)", caret="scale")
    assert "scale" in err.message


# ---- when errors appear -------------------------------------------------------------------

def test_defining_a_bad_kernel_raises_nothing_until_it_is_compiled():
    @kl.kernel
    def bad(a: kl.array(dtype=float)):
        a[0] = not_defined_anywhere  # noqa: F821

    err = compile_error(bad, kl.KernelNameError)
    assert_points_at(err, bad, "not_defined_anywhere")


def test_compile_error_is_raised_at_launch_and_again_on_the_next_try(backend):
    a = kl.zeros(3, dtype=float)
    for _ in range(2):
        with pytest.raises(kl.KernelTypeError) as info:
            kl.launch(multiplies_int_by_float_literal, 3, inputs=[a])
        assert_points_at(info.value, multiplies_int_by_float_literal, "a[i] = i * 2.0")


# ---- launch arguments ---------------------------------------------------------------------

@kl.kernel
def axpy(alpha: float, n: int, x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = alpha * x[i] + float(n)


@kl.kernel
def offset_points(offset: kl.vec3, pts: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    pts[i] = pts[i] + offset


def launch_error(kernel, *inputs):
    with pytest.raises(kl.LaunchError) as info:
        kl.launch(kernel, 3, inputs=list(inputs))
    return info.value


def test_launch_with_too_few_arguments(backend):
    err = launch_error(axpy, 1.0, 2, kl.zeros(3, dtype=float))
    assert "axpy" in str(err) and "4" in str(err) and "3" in str(err)
    assert all(name in str(err) for name in ("alpha", "n", "x", "y"))


def test_launch_with_too_many_arguments(backend):
    x = kl.zeros(3, dtype=float)
    err = launch_error(axpy, 1.0, 2, x, x, x)
    assert "axpy" in str(err) and "5" in str(err)


def test_launch_with_wrong_dtype_names_the_parameter(backend):
    err = launch_error(axpy, 1.0, 2, kl.zeros(3, dtype=kl.float64), kl.zeros(3, dtype=float))
    assert "'x'" in str(err) and "float64" in str(err)


def test_launch_with_wrong_ndim_names_the_parameter(backend):
    err = launch_error(axpy, 1.0, 2, kl.zeros(3, dtype=float), kl.zeros((3, 1), dtype=float))
    assert "'y'" in str(err) and "2" in str(err)


def test_launch_with_a_numpy_array_names_the_parameter(backend):
    # A float32 NumPy array is passed as it is (Warp does that on the CPU); a float64 one
    # cannot be a float32 array and is refused.
    err = launch_error(axpy, 1.0, 2, np.zeros(3, np.float64), kl.zeros(3, dtype=float))
    assert "'x'" in str(err)


def test_launch_with_a_float_for_an_int_parameter_names_the_parameter(backend):
    err = launch_error(axpy, 1.0, 2.5, kl.zeros(3, dtype=float), kl.zeros(3, dtype=float))
    assert "'n'" in str(err) and "axpy" in str(err)


def test_launch_with_a_vector_of_the_wrong_length_names_the_parameter(backend):
    err = launch_error(offset_points, (1.0, 2.0), kl.zeros(3, dtype=kl.vec3))
    assert "'offset'" in str(err) and "offset_points" in str(err)


def test_launch_with_an_array_for_a_scalar_parameter_names_the_parameter(backend):
    x = kl.zeros(3, dtype=float)
    err = launch_error(axpy, x, 2, x, x)
    assert "'alpha'" in str(err)


def test_rejected_launch_runs_nothing(backend):
    y = kl.full(3, 7.0, dtype=kl.float32)
    launch_error(axpy, 1.0, 2, np.ones(3, np.float64), y)
    np.testing.assert_array_equal(y.numpy(), [7.0, 7.0, 7.0])


# ---- out-of-bounds accesses ---------------------------------------------------------------

@kl.kernel
def write_at(a: kl.array(dtype=float), idx: int):
    a[idx] = 1.0


@kl.kernel
def read_at(a: kl.array(dtype=float), out: kl.array(dtype=float), idx: kl.int64):
    out[0] = a[idx]


@kl.kernel
def sum_first(a: kl.array(dtype=float), n: int, out: kl.array(dtype=float)):
    s = float(0.0)
    for k in range(n):
        s += a[k]
    out[0] = s


@kl.kernel
def read_2d(a: kl.array(dtype=float, ndim=2), out: kl.array(dtype=float), j: int):
    i = kl.tid()
    out[i] = a[i, j]


def assert_index_error(err, kernel, needle, index, shape):
    text = str(err)
    assert isinstance(err, IndexError)
    assert kernel.key in text
    assert f"line {line_of(kernel, needle)}" in text
    assert str(index) in text
    assert str(shape) in text


@pytest.mark.parametrize("idx", [3, 4, -1, -4, 2**31 - 1])
def test_out_of_bounds_write_raises_index_error(backend, idx):
    a = kl.zeros(3, dtype=float)
    with pytest.raises(IndexError) as info:
        kl.launch(write_at, 1, inputs=[a, idx])
    assert_index_error(info.value, write_at, "a[idx] = 1.0", idx, (3,))


@pytest.mark.parametrize("idx", [3, -1, 2**40])
def test_out_of_bounds_read_raises_index_error(backend, idx):
    a, out = kl.zeros(3, dtype=float), kl.zeros(1, dtype=float)
    with pytest.raises(IndexError) as info:
        kl.launch(read_at, 1, inputs=[a, out, idx])
    assert_index_error(info.value, read_at, "out[0] = a[idx]", idx, (3,))


def test_out_of_bounds_read_inside_a_loop(backend):
    a, out = kl.ones(4, dtype=float), kl.zeros(1, dtype=float)
    with pytest.raises(IndexError) as info:
        kl.launch(sum_first, 1, inputs=[a, 6, out])
    assert_index_error(info.value, sum_first, "s += a[k]", 4, (4,))


def test_out_of_bounds_on_the_second_axis(backend):
    a, out = kl.zeros((3, 4), dtype=float), kl.zeros(3, dtype=float)
    with pytest.raises(IndexError) as info:
        kl.launch(read_2d, 3, inputs=[a, out, 4])
    assert_index_error(info.value, read_2d, "out[i] = a[i, j]", 4, (3, 4))


@kl.kernel
def shift_left(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = a[i + 1]


def test_out_of_bounds_in_one_thread_of_a_large_launch(backend):
    n = 100_000
    a, out = kl.zeros(n, dtype=float), kl.zeros(n, dtype=float)
    with pytest.raises(IndexError) as info:
        kl.launch(shift_left, n, inputs=[a, out])
    assert_index_error(info.value, shift_left, "out[i] = a[i + 1]", n, (n,))


def test_a_launch_after_an_out_of_bounds_error_still_works(backend):
    a = kl.zeros(3, dtype=float)
    with pytest.raises(IndexError):
        kl.launch(write_at, 1, inputs=[a, 10])
    b = kl.zeros(3, dtype=float)
    kl.launch(write_at, 1, inputs=[b, 2])
    np.testing.assert_array_equal(b.numpy(), [0.0, 0.0, 1.0])
    out = kl.zeros(1, dtype=float)
    kl.launch(sum_first, 1, inputs=[kl.ones(4, dtype=float), 4, out])
    assert out.numpy()[0] == 4.0

