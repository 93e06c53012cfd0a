"""print() as Warp 1.19 lays it out, and what it prints in adjoint kernels: the forward replay
prints the forward line again, then the reverse sweep prints ``adj: `` and the adjoint of
the printed value at that point (the gradient that flowed back from its later uses, plus a
parameter's adjoint passed in). Expected adjoints are worked out by hand below."""
import typing

import numpy as np

import kernlab as kl


@kl.kernel
def scaled(x: float, y: kl.array(dtype=float)):
    print(x)
    y[0] = x * 3.0


def test_adjoint_print_shows_the_gradient_flowing_back(backend, capfd):
    y = kl.zeros(1, dtype=float)
    # d(3x)/dx times the 2.0 seeded in y's adjoint, plus the 0.5 passed in for x
    kl.launch(scaled, 1, inputs=[1.5, y], adj_inputs=[0.5, kl.array([2.0], dtype=float)],
              adjoint=True)
    kl.synchronize()
    assert capfd.readouterr().out == "1.5\nadj: 6.5\n"


@kl.kernel
def squared_norm(v: kl.array(dtype=kl.vec3), out: kl.array(dtype=float)):
    w = v[0]
    print(w)
    out[0] = kl.dot(w, w)


def test_tape_backward_prints_forward_line_then_vector_adjoint(backend, capfd):
    v = kl.array([kl.vec3(1.0, -2.0, 0.5)], dtype=kl.vec3, requires_grad=True)
    out = kl.zeros(1, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(squared_norm, 1, inputs=[v, out])
    kl.synchronize()
    assert capfd.readouterr().out == "1 -2 0.5 \n"
    tape.backward(loss=out)
    kl.synchronize()
    # d|w|^2/dw = 2w, Warp's vector layout: "adj:" then each component after a space
    expected = 2.0 * np.array([1.0, -2.0, 0.5])
    assert capfd.readouterr().out == "1 -2 0.5 \nadj: " + " ".join(
        "%g" % c for c in expected) + "\n"
    np.testing.assert_allclose(v.grad.numpy()[0], expected)


@kl.kernel
def traced(m: kl.mat22, n: int, flag: kl.bool, a: kl.array(dtype=float),
           out: kl.array(dtype=float)):
    print(m)
    print(n)
    print(flag)
    print(a)
    out[0] = m[0, 1] * 4.0 + m[1, 0]


def test_matrix_int_bool_and_array_layouts(backend, capfd):
    out = kl.zeros(1, dtype=float)
    a = kl.zeros(2, dtype=float)
    kl.launch(traced, 1, inputs=[kl.mat22(1.0, 2.0, 3.0, 4.0), 7, True, a, out],
              adj_inputs=[kl.mat22(0.0, 0.0, 0.0, 0.0), 5, False, None,
                          kl.array([1.0], dtype=float)], adjoint=True)
    kl.synchronize()
    forward = "1 2 \n3 4 \n7\nTrue\n<type without print implementation>\n"
    # reverse order; d(4 m01 + m10)/dm = [[0, 4], [1, 0]]; an int's or bool's adjoint is
    # the one passed in; an array shows the placeholder
    reverse = ("adj: <type without print implementation>\nadj: False\nadj: 5\n"
               "adj: 0 4\n     1 0\n")
    assert capfd.readouterr().out == forward + reverse


@kl.kernel
def labelled(x: float, v: kl.vec2):
    print("x is", x, v)
    kl.printf("%g\n", x)


def test_several_values_keep_one_line_and_printf_has_no_adjoint(backend, capfd):
    kl.launch(labelled, 1, inputs=[0.25, kl.vec2(1.0, 2.5)])
    kl.synchronize()
    assert capfd.readouterr().out == "x is 0.25 [1, 2.5]\n0.25\n"
    kl.launch(labelled, 1, inputs=[0.25, kl.vec2(1.0, 2.5)],
              adj_inputs=[3.0, kl.vec2(0.5, 1.0)], adjoint=True)
    kl.synchronize()
    # the replay prints both lines; the reverse sweep the printf's nothing, then the
    # print's items in order: the label as it is, x's and v's adjoints (passed in)
    assert capfd.readouterr().out == ("x is 0.25 [1, 2.5]\n0.25\n"
                                      "adj: x is\nadj: 3\nadj: 0.5 1\n")


@kl.kernel
def generic_print(x: typing.Any):
    print(x)


def test_a_generic_kernel_takes_a_bfloat16_vector(backend, capfd):
    # the value's type is inferred from its NumPy dtype (ml_dtypes' bfloat16 is kind 'V')
    bf = kl.types.vector(2, kl.bfloat16)
    kl.launch(generic_print, 1, inputs=[bf(0.5, -3.0)], adj_inputs=[bf(2.0, 0.25)],
              adjoint=True)
    kl.synchronize()
    assert capfd.readouterr().out == "0.5 -3 \nadj: 2 0.25\n"


@kl.kernel
def loop_sum(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    s = float(0.0)
    for i in range(2):
        t = x[i] * float(i + 1)
        print(t)
        s += t * t
    y[0] = s


def test_print_in_a_loop_replays_once_and_reverses_per_iteration(backend, capfd):
    x = kl.array([1.5, -0.5], dtype=float, requires_grad=True)
    y = kl.zeros(1, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(loop_sum, 1, inputs=[x, y])
    kl.synchronize()
    capfd.readouterr()
    tape.backward(loss=y)
    kl.synchronize()
    t = np.array([1.5 * 1, -0.5 * 2])
    # the replay prints t per iteration; the reverse sweep d(sum t^2)/dt = 2t, last first
    expected = "".join("%g\n" % v for v in t) + "".join("adj: %g\n" % (2 * v) for v in t[::-1])
    assert capfd.readouterr().out == expected
    np.testing.assert_allclose(x.grad.numpy(), 2 * t * [1, 2])
