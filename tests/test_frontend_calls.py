"""Calls in kernels: func overloads, generics (Any), keyword arguments and defaults, tuple
returns, *-unpacking, slices, reversed ranges, for-each loops, kl.static, and calling
funcs from Python. Expected values are worked out by hand or with NumPy."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kernlab as kl


@kl.func
def twice(x: int):
    return x * 2


@kl.func
def twice(x: float):  # noqa: F811 — an overload, as in Warp
    return x * 2.5


@kl.func
def twice(x: kl.vec3):  # noqa: F811
    return x * 3.0


@kl.kernel
def overload_kernel(out_i: kl.array(dtype=int), out_f: kl.array(dtype=float),
                    out_v: kl.array(dtype=kl.vec3)):
    out_i[0] = twice(21)
    out_f[0] = twice(2.0)
    out_v[0] = twice(kl.vec3(1.0, 2.0, 3.0))


def test_overloads_pick_by_argument_type():
    oi, of, ov = kl.zeros(1, dtype=int), kl.zeros(1, dtype=float), kl.zeros(1, dtype=kl.vec3)
    kl.launch(overload_kernel, 1, inputs=[oi, of, ov])
    assert oi.numpy()[0] == 42
    assert of.numpy()[0] == 5.0
    np.testing.assert_array_equal(ov.numpy()[0], [3.0, 6.0, 9.0])


def test_same_signature_replaces():
    @kl.func
    def pick(x: int):
        return x + 1

    first = pick

    @kl.func
    def pick(x: int):  # noqa: F811
        return x + 100

    assert pick is first and len(pick.overloads) == 1

    @kl.kernel
    def k(out: kl.array(dtype=int)):
        out[0] = pick(1)

    out = kl.zeros(1, dtype=int)
    kl.launch(k, 1, inputs=[out])
    assert out.numpy()[0] == 101


@kl.func
def with_defaults(a: int = 123, b: int = 234) -> int:
    return a + b


@kl.kernel
def defaults_kernel(out: kl.array(dtype=int)):
    out[0] = with_defaults()
    out[1] = with_defaults(111)
    out[2] = with_defaults(111, 222)
    out[3] = with_defaults(a=111)
    out[4] = with_defaults(b=111)


def test_keywords_and_defaults():
    out = kl.zeros(5, dtype=int)
    kl.launch(defaults_kernel, 1, inputs=[out])
    assert out.numpy().tolist() == [357, 345, 333, 345, 234]
    assert with_defaults(b=1) == 124  # from Python: the Python body runs


@kl.func
def sum_diff(a: float, b: float):
    return a + b, a - b


@kl.kernel
def tuple_kernel(x: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    s, d = sum_diff(x[i], 2.0)
    out[i] = s * d


def test_tuple_return_and_gradient():
    x = kl.array(np.array([1.0, 3.0], np.float32), requires_grad=True)
    out = kl.zeros(2, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(tuple_kernel, 2, inputs=[x, out])
    np.testing.assert_allclose(out.numpy(), [1.0 - 4.0, 9.0 - 4.0])  # x^2 - 4
    tape.backward(grads={out: kl.array(np.ones(2, np.float32))})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])  # d(x^2 - 4)/dx


@kl.func
def scaled(a: Any, s: float):
    return a * s


@kl.kernel
def generic_kernel(a: kl.array(dtype=Any), out: kl.array(dtype=Any)):
    i = kl.tid()
    out[i] = scaled(a[i], 2.0)


def test_generic_kernel_and_func_specialise_per_launch():
    a = kl.array(np.array([1.0, 2.0], np.float32))
    out = kl.zeros(2, dtype=float)
    kl.launch(generic_kernel, 2, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0])
    v = kl.array(np.array([[1, 2, 3]], np.float32), dtype=kl.vec3)
    vout = kl.zeros(1, dtype=kl.vec3)
    kl.launch(generic_kernel, 1, inputs=[v, vout])
    np.testing.assert_allclose(vout.numpy(), [[2.0, 4.0, 6.0]])
    assert len(generic_kernel._specialisations) == 2


@kl.kernel
def fill_kernel(out: kl.array(dtype=Any), value: Any):
    out[kl.tid()] = value


def test_overload_declares_a_variant():
    variant = kl.overload(fill_kernel, {"out": kl.array(dtype=kl.float64),
                                        "value": kl.float64})
    assert variant.param_types == [kl.array(dtype=kl.float64).type, kl.float64]
    out = kl.zeros(3, dtype=kl.float64)
    kl.launch(fill_kernel, 3, inputs=[out, 0.1])  # a Python float fits the float64 variant
    np.testing.assert_array_equal(out.numpy(), [0.1, 0.1, 0.1])


@kl.kernel
def unpack_kernel(a: kl.array(dtype=float), out: kl.array(dtype=kl.vec4)):
    v = kl.vec2(5.0, 10.0)
    w = kl.vec4(1.0, 2.0, 3.0, 4.0)
    out[0] = kl.vec4(*v, *v)
    out[1] = kl.vec4(0.0, *w[1:3], 7.0)
    out[2] = kl.vec4(*a[0:4])
    out[3] = kl.vec4(w[-1], w[-2], kl.max(*v), 0.0)
    out[4] = kl.vec4(*w[-2:], *w[:2])


def test_star_unpacking_slices_and_negative_indices():
    a = kl.array(np.arange(6, dtype=np.float32))
    out = kl.zeros(5, dtype=kl.vec4)
    kl.launch(unpack_kernel, 1, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), [[5, 10, 5, 10], [0, 2, 3, 7], [0, 1, 2, 3],
                                                [4, 3, 10, 0], [3, 4, 1, 2]])


def test_array_slice_needs_constant_stop():
    @kl.kernel
    def k(a: kl.array(dtype=float), n: int, out: kl.array(dtype=kl.vec3)):
        out[0] = kl.vec3(*a[:n])

    with pytest.raises(kl.KernelValueError, match="compile-time constant integer$") as info:
        kl.launch(k, 1, inputs=[kl.zeros(4), 3, kl.zeros(1, dtype=kl.vec3)])
    assert isinstance(info.value, kl.WarpCodegenValueError) and info.value.loc is not None


@kl.kernel
def loops_kernel(start: int, stop: int, step: int, out: kl.array(dtype=int),
                 total: kl.array(dtype=float)):
    n = int(0)
    for i in reversed(range(start, stop, step)):
        out[n] = i
        n += 1
    s = float(0.0)
    for c in kl.vec3(1.0, 2.0, 4.0):
        s += c
    for row in kl.mat22(1.0, 2.0, 3.0, 4.0):
        s += row[1] * 10.0
    total[0] = s + float(n) * 1000.0


@pytest.mark.parametrize("bounds", [(-2, 8, 3), (9, -3, -2), (10, 8, 4), (0, 5, 1), (5, 0, -1)])
def test_reversed_range_and_for_each(bounds):
    out = kl.zeros(16, dtype=int)
    total = kl.zeros(1, dtype=float)
    kl.launch(loops_kernel, 1, inputs=[*bounds, out, total])
    expected = list(reversed(range(*bounds)))
    assert out.numpy()[: len(expected)].tolist() == expected
    assert total.numpy()[0] == 7.0 + 60.0 + 1000.0 * len(expected)


SCALE = 3


@kl.kernel
def static_kernel(out: kl.array(dtype=int)):
    out[0] = kl.static(SCALE * 7)


def test_static_is_evaluated_at_compile_time():
    out = kl.zeros(1, dtype=int)
    kl.launch(static_kernel, 1, inputs=[out])
    assert out.numpy()[0] == 21


def test_constructors_with_keywords():
    @kl.kernel
    def k(out: kl.array(dtype=float)):
        v = kl.types.vector(1.5, length=3)
        m = kl.types.matrix(1.0, 2.0, 3.0, 4.0, shape=(2, 2))
        d = kl.types.vector(length=2, dtype=kl.float64)
        out[0] = v[2] + m[1, 0] + float(d[1])

    out = kl.zeros(1)
    kl.launch(k, 1, inputs=[out])
    assert out.numpy()[0] == 4.5


def test_python_call_picks_overload_or_says_none_fits():
    assert twice(2) == 4 and twice(2.0) == 5.0
    np.testing.assert_array_equal(twice(kl.vec3(1.0, 1.0, 1.0)), [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match=r"^Error calling function 'twice', no overload "
                                           r"found for arguments \('a',\)$"):
        twice("a")


def test_kernel_constructor_and_error_aliases():
    def body(out: kl.array(dtype=float)):
        out[0] = 2.0

    k = kl.Kernel(func=body, key="made_by_hand")
    assert k.key == "made_by_hand"
    out = kl.zeros(1)
    kl.launch(k, 1, inputs=[out])
    assert out.numpy()[0] == 2.0
    assert issubclass(kl.KernelTypeError, TypeError)
    assert kl.WarpCodegenTypeError is kl.KernelTypeError
    assert issubclass(kl.WarpCodegenAttributeError, AttributeError)
    assert issubclass(kl.WarpCodegenKeyError, KeyError)


def test_error_text_ends_with_the_message():
    @kl.kernel
    def bad(out: kl.array(dtype=float)):
        out[0] = kl.vec3(*1.0)

    with pytest.raises(kl.KernelTypeError) as info:
        kl.launch(bad, 1, inputs=[kl.zeros(1)])
    text = str(info.value)
    assert text.endswith(info.value.message)
    assert "Starred expressions are only supported for" in text
    assert "out[0] = kl.vec3(*1.0)" in text  # the user's line is shown


@kl.func
def row_sum(r: kl.array(dtype=float)):
    s = float(0.0)
    for j in range(r.shape[0]):
        s += r[j]
    return s


@kl.kernel
def view_kernel(a: kl.array2d(dtype=float), sums: kl.array(dtype=float),
                mid: kl.array(dtype=float)):
    i = kl.tid()
    row = a[i]
    sums[i] = row_sum(row)
    part = row[1:3]
    mid[i] = part[0] * 10.0 + part[1] + float(len(part)) * 100.0
    row[0] = float(row.shape[0])
    kl.atomic_add(row, 3, 0.5)
    a[i][2] += 1.0


def test_array_views_in_kernels():
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    a = kl.array(data)
    sums, mid = kl.zeros(2), kl.zeros(2)
    kl.launch(view_kernel, 2, inputs=[a, sums, mid])
    np.testing.assert_allclose(sums.numpy(), data.sum(axis=1))
    np.testing.assert_allclose(mid.numpy(), data[:, 1] * 10 + data[:, 2] + 200.0)
    expected = data.copy()
    expected[:, 0] = 4.0
    expected[:, 3] += 0.5
    expected[:, 2] += 1.0
    np.testing.assert_allclose(a.numpy(), expected)


@kl.kernel
def view_grad_kernel(a: kl.array2d(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    row = a[i]
    out[i] = row[0] * row[1]


def test_gradient_flows_through_a_view():
    data = np.array([[2.0, 3.0], [5.0, 7.0]], np.float32)
    a = kl.array(data, requires_grad=True)
    out = kl.zeros(2, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(view_grad_kernel, 2, inputs=[a, out])
    tape.backward(grads={out: kl.array(np.ones(2, np.float32))})
    np.testing.assert_allclose(a.grad.numpy(), data[:, ::-1])  # d(x*y) = (y, x)


@kl.func
def cube(x: float):
    y = x * x
    return y * x


@kl.kernel
def grad_in_forward(x: kl.array(dtype=float), d: kl.array(dtype=float),
                    da: kl.array(dtype=float), db: kl.array(dtype=float)):
    i = kl.tid()
    g = kl.grad(cube)
    d[i] = g(x[i])
    a, b = kl.grad(kl.atan2)(x[i], 2.0)
    da[i] = a
    db[i] = b


def test_grad_of_a_func_in_forward_code():
    xs = np.array([0.5, -1.0, 3.0], np.float32)
    x = kl.array(xs)
    d, da, db = kl.zeros(3), kl.zeros(3), kl.zeros(3)
    kl.launch(grad_in_forward, 3, inputs=[x, d, da, db])
    np.testing.assert_allclose(d.numpy(), 3 * xs**2, rtol=1e-6)  # d(x^3)/dx
    r2 = xs**2 + 4.0  # atan2(y, x) with y = xs, x = 2: d/dy = x/r2, d/dx = -y/r2
    np.testing.assert_allclose(da.numpy(), 2.0 / r2, rtol=1e-6)
    np.testing.assert_allclose(db.numpy(), -xs / r2, rtol=1e-6)


@kl.kernel
def null_aware(a: kl.array(dtype=int), out: kl.array(dtype=int)):
    i = kl.tid()
    if a and a[i] == 0:
        out[i] = -1
    else:
        out[i] = 1


def test_null_array_is_false_and_never_read():
    out = kl.zeros(2, dtype=int)
    kl.launch(null_aware, 2, inputs=[None, out])
    assert out.numpy().tolist() == [1, 1]
    kl.launch(null_aware, 2, inputs=[kl.array(np.array([0, 5], np.int32)), out])
    assert out.numpy().tolist() == [-1, 1]


def test_matrix_builders_and_copies():
    @kl.kernel
    def k(out: kl.array(dtype=kl.mat22), eye: kl.array(dtype=kl.mat33d)):
        r0 = kl.vec2(1.0, 2.0)
        r1 = kl.vec2(3.0, 4.0)
        out[0] = kl.matrix_from_rows(r0, r1)
        out[1] = kl.matrix_from_cols(r0, r1)
        out[2] = kl.matrix(out[0], shape=(2, 2))
        eye[0] = kl.identity(n=3, dtype=kl.float64)

    out, eye = kl.zeros(3, dtype=kl.mat22), kl.zeros(1, dtype=kl.mat33d)
    kl.launch(k, 1, inputs=[out, eye])
    rows = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(out.numpy(), [rows, rows.T, rows])
    np.testing.assert_array_equal(eye.numpy()[0], np.eye(3))
    np.testing.assert_array_equal(kl.matrix_from_cols(kl.vec2(1.0, 2.0), kl.vec2(3.0, 4.0)),
                                  rows.T)


@kl.kernel
def view_slices(a: kl.array2d(dtype=int), lo: int, hi: int, step: int,
                out: kl.array(dtype=int)):
    s = a[::2, -1]       # rows 0, 2, 4 of the last column
    out[0] = s.shape[0]
    out[1] = s[2]
    r = a[3::-1, 0]      # rows 3, 2, 1, 0 of column 0
    out[2] = r.shape[0] * 100 + r[0] * 10 + r[3]
    d = a[lo:hi:step, 1]  # bounds and step known at run time
    out[3] = d.shape[0]
    out[4] = d[d.shape[0] - 1]
    out[5] = a.shape[3] + s.shape[1]  # past the dimensions: 0, as in Warp


@pytest.mark.parametrize("lo,hi,step", [(1, 6, 2), (5, 0, -2), (0, 6, 1), (4, 1, -1)])
def test_view_slices_follow_python_semantics(lo, hi, step):
    data = np.arange(18, dtype=np.int32).reshape(6, 3)
    out = kl.zeros(6, dtype=int)
    kl.launch(view_slices, 1, inputs=[kl.array(data), lo, hi, step, out])
    d = data[lo:hi:step, 1]
    r = data[3::-1, 0]
    assert out.numpy().tolist() == [3, data[4, -1], 400 + r[0] * 10 + r[3], len(d), d[-1], 0]


@kl.kernel
def slice_assign_kernel(out: kl.array(dtype=kl.vec4), flags: kl.array(dtype=int)):
    v = kl.vec4(1.0, 2.0, 3.0, 4.0)
    v[1:3] = kl.vec2(20.0, 30.0)
    v[-1] = 40.0
    w = kl.vec4(0.0, 0.0, 0.0, 0.0)
    w[::2] = kl.vec2(5.0, 6.0)
    w[1:] += kl.vec3(1.0, 1.0, 1.0)
    out[0] = v
    out[1] = w
    flags[0] = int(v == kl.vec4(1.0, 20.0, 30.0, 40.0))
    flags[1] = int(v != w)
    m = kl.mat22(1.0, 2.0, 3.0, 4.0)
    m[-1] = kl.vec2(7.0, 8.0)
    flags[2] = int(m[1, 0] == 7.0 and m == kl.mat22(1.0, 2.0, 7.0, 8.0))


def test_slice_and_negative_assignment_and_vector_equality():
    out, flags = kl.zeros(2, dtype=kl.vec4), kl.zeros(3, dtype=int)
    kl.launch(slice_assign_kernel, 1, inputs=[out, flags])
    np.testing.assert_array_equal(out.numpy(), [[1, 20, 30, 40], [5, 1, 7, 1]])
    assert flags.numpy().tolist() == [1, 1, 1]


def test_slice_assignment_of_the_wrong_length_is_an_error():
    @kl.kernel
    def bad():
        v = kl.vec4(1.0, 2.0, 3.0, 4.0)
        v[1:] = kl.vec2(5.0, 6.0)

    with pytest.raises(kl.KernelValueError, match=r"isn't compatible with the given slice "
                                                   r"\(expected 3\)\.$"):
        kl.launch(bad, 1)


@kl.kernel
def any_length(v: kl.types.vector(Any, float), out: kl.array(dtype=int)):
    out[0] = len(v)


def test_generic_vector_length():
    out = kl.zeros(1, dtype=int)
    kl.launch(any_length, 1, inputs=[kl.vec3(1.0, 2.0, 3.0), out])
    assert out.numpy()[0] == 3
    kl.launch(any_length, 1, inputs=[kl.vec2(1.0, 2.0), out])
    assert out.numpy()[0] == 2


FMT33 = "%d " * 33


def test_printf_takes_at_most_32_values():
    @kl.kernel
    def loud():
        kl.printf(FMT33, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                  18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32)

    with pytest.raises(RuntimeError, match="passed to `printf` is 32$"):
        kl.launch(loud, 1)


def test_empty_vector_slices_compare_equal():
    vec0 = kl.types.vector(0, float)

    @kl.kernel
    def k(out: kl.array(dtype=int)):
        v = kl.vec4(1.0, 2.0, 3.0, 4.0)
        out[0] = int(v[4:] == vec0())
        out[1] = int(v[:-9] != vec0())
        out[2] = int(v[::-1] == kl.vec4(4.0, 3.0, 2.0, 1.0))

    out = kl.zeros(3, dtype=int)
    kl.launch(k, 1, inputs=[out])
    assert out.numpy().tolist() == [1, 0, 1]


@kl.kernel
def component_writes(x: kl.array(dtype=float), y: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    y[i][0] = 2.0 * x[i]
    y[i].z = x[i] * x[i]
    y[i][1] += 5.0 * x[i]


def test_component_writes_into_array_elements_have_chain_rule_gradients():
    xs = np.array([1.5, -2.0], np.float32)
    x = kl.array(xs, requires_grad=True)
    y = kl.array(np.ones((2, 3), np.float32), dtype=kl.vec3, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(component_writes, 2, inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), np.stack([2 * xs, 1 + 5 * xs, xs**2], axis=1))
    tape.backward(grads={y: kl.array(np.ones((2, 3), np.float32), dtype=kl.vec3)})
    # d/dx of (2x + (1 + 5x) + x^2) = 7 + 2x
    np.testing.assert_allclose(x.grad.numpy(), 7 + 2 * xs, rtol=1e-6)


def test_component_multiply_assign_on_an_array_is_exact_under_a_tape():
    @kl.kernel
    def scale(x: kl.array(dtype=float), y: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        y[i][0] *= x[i]  # the adjoint needs the old y[i]: the tape keeps it

    x = kl.array(np.full(1, 2.0, np.float32), requires_grad=True)
    y = kl.array(np.array([[3.0, 1.0, 1.0]], np.float32), dtype=kl.vec3, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(scale, 1, inputs=[x, y])
    tape.backward(grads={y: kl.array(np.ones((1, 3), np.float32), dtype=kl.vec3)})
    np.testing.assert_allclose(x.grad.numpy(), [3.0])  # d(y0 x)/dx = the old y0
    np.testing.assert_allclose(y.grad.numpy(), [[2.0, 1.0, 1.0]])


@kl.kernel
def from_ptr(a: kl.array2d(dtype=float), out: kl.array(dtype=float)):
    flat = kl.array(ptr=a.ptr, shape=(6,), dtype=float)
    out[0] = flat[4]
    cube = kl.array(ptr=a.ptr, shape=(3, 2), dtype=float)
    out[1] = cube[2, 1]
    cube[0, 1] = 100.0


def test_array_from_the_pointer_of_a_parameter_reads_it_row_major():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, out = kl.array(data), kl.zeros(2)
    kl.launch(from_ptr, 1, inputs=[a, out])
    assert out.numpy().tolist() == [4.0, 5.0]
    expected = data.copy()
    expected.reshape(-1)[1] = 100.0
    np.testing.assert_array_equal(a.numpy(), expected)


@kl.func
def scaled_sum(x: float, y: float):
    return x + y


@kl.func_grad(scaled_sum)
def scaled_sum_grad(x: float, y: float, adj_ret: float):
    kl.adjoint[x] += 10.0 * adj_ret
    kl.adjoint[y] += 20.0 * adj_ret


@kl.func
def scaled_sum(x: kl.vec2):  # noqa: F811 — an overload with a gradient of its own
    return x[0] + x[1]


@kl.func_grad(scaled_sum)
def scaled_sum_grad_vec(x: kl.vec2, adj_ret: float):
    kl.adjoint[x] += kl.vec2(3.0, 4.0) * adj_ret


@kl.kernel
def custom_overloads(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = scaled_sum(a[i], a[i]) + scaled_sum(kl.vec2(a[i], 2.0 * a[i]))


def test_each_overload_keeps_its_own_custom_gradient():
    a = kl.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    out = kl.zeros(2, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(custom_overloads, 2, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), [5.0, 10.0])  # 2a + 3a
    tape.backward(grads={out: kl.array(np.ones(2, np.float32))})
    # the custom rules say: 10 + 20 from the first, 3 + 2 * 4 from the second
    np.testing.assert_allclose(a.grad.numpy(), [41.0, 41.0])
