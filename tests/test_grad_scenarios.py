"""Tape and adjoint scenarios: seeding, custom ops, recorded launches, array ops, aliasing,
in-place modification, and the gradient checker. Expected values come from analysis or
float64 finite differences of a NumPy re-implementation."""
import inspect

import numpy as np
import pytest

import kernlab as kl


# --- kernels ------------------------------------------------------------------------------

@kl.kernel
def chain_copy(x: kl.array(dtype=float), y: kl.array(dtype=float), z: kl.array(dtype=float),
               s: kl.array(dtype=float)):
    t = kl.tid()
    y[t] = x[t]
    z[t] = y[t]
    s[t] = z[t]


@kl.kernel
def normalize_gravity(v: kl.array(dtype=kl.vec3), m: kl.array(dtype=float), gravity: kl.vec3,
                      dt: float, v_out: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    v_out[i] = v[i] / m[i] + gravity * dt


@kl.kernel
def scale(x: kl.array(dtype=float), s: float, y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * s


@kl.kernel
def sum_of_squares(w: kl.array(dtype=float), loss: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(loss, 0, w[i] * w[i])


@kl.func
def double_if_positive(a: float):
    b = a
    if b > 0.0:
        b = b * 2.0
    return b


@kl.kernel
def aliased_scalars(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    a = x[i]
    b = a
    y[i] = double_if_positive(b) * 3.0


@kl.kernel
def aliased_vectors(v: kl.array(dtype=kl.vec3), out_p: kl.array(dtype=kl.vec3),
                    out_q: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    p = v[i]
    q = p
    q[0] = 5.0
    out_p[i] = p
    out_q[i] = q


@kl.kernel
def sin_and_square(x: kl.array(dtype=float), y: kl.array(dtype=float),
                   z: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = kl.sin(x[i])
    z[i] = x[i] * x[i]


@kl.kernel
def square(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i]


@kl.kernel
def cube(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i] * x[i]


@kl.kernel
def overwrite_input(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = 0.0


@kl.kernel
def double_in_place(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = a[i] * 2.0


@kl.kernel
def square_in_place(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = a[i] * a[i]


@kl.kernel
def sin_times(x: kl.array(dtype=kl.float64), w: kl.array(dtype=kl.float64),
              y: kl.array(dtype=kl.float64)):
    i = kl.tid()
    y[i] = kl.sin(x[i]) * w[i]


@kl.func
def wrongly_differentiated(x: kl.float64):
    return x * x


@kl.func_grad(wrongly_differentiated)
def adj_wrongly_differentiated(x: kl.float64, adj_ret: kl.float64):
    kl.adjoint[x] += 3.0 * x * adj_ret  # should be 2 x


@kl.kernel
def uses_wrong_grad(x: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64)):
    i = kl.tid()
    y[i] = wrongly_differentiated(x[i])


def line_of(kernel, text: str) -> int:
    """The file line number of the first source line of ``kernel`` containing ``text``."""
    lines, first = inspect.getsourcelines(kernel.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


# --- seeding outputs and zero() -----------------------------------------------------------

def _record_chain():
    x = kl.array(np.arange(3), dtype=float, requires_grad=True)
    y, z, s = (kl.zeros(3, requires_grad=True) for _ in range(3))
    tape = kl.Tape()
    with tape:
        kl.launch(chain_copy, 3, inputs=[x], outputs=[y, z, s])
    return tape, x, (y, z, s)


def test_seeding_each_output_through_grads_gives_ones_every_time(backend):
    tape, x, outs = _record_chain()
    for out in outs:
        tape.backward(grads={out: kl.ones(3)})
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])
        tape.zero()


def test_seeding_each_output_through_fill_gives_ones_every_time(backend):
    tape, x, outs = _record_chain()
    for out in outs:
        out.grad.fill_(1.0)
        tape.backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])
        tape.zero()


def test_zero_clears_input_and_seeded_output_grads(backend):
    tape, x, outs = _record_chain()
    for out in outs:
        tape.backward(grads={out: kl.ones(3)})
        tape.zero()
        for a in (x, *outs):
            np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0, 0.0])


# --- the custom-op pattern: launching an adjoint by hand ----------------------------------

def _gravity_fd(vn, mn, g, dt, gout, eps=1e-6):
    """float64 central differences of sum(gout * (v / m + g dt)) w.r.t. v and m."""
    def f(v, m):
        return np.sum(gout * (v / m[:, None] + g * dt))
    dv, dm = np.zeros_like(vn), np.zeros_like(mn)
    for idx in np.ndindex(vn.shape):
        e = np.zeros_like(vn)
        e[idx] = eps
        dv[idx] = (f(vn + e, mn) - f(vn - e, mn)) / (2 * eps)
    for k in range(mn.size):
        e = np.zeros_like(mn)
        e[k] = eps
        dm[k] = (f(vn, mn + e) - f(vn, mn - e)) / (2 * eps)
    return dv, dm


@pytest.mark.parametrize("scalar_adjoints", ["none", "zeros"])
def test_custom_op_adjoint_launch_matches_finite_differences(backend, rng, scalar_adjoints):
    n, dt, g = 5, 0.01, np.array([0.0, -9.8, 0.0])
    vn, mn = rng.uniform(-1, 1, (n, 3)), rng.uniform(0.5, 2.0, n)
    gout = rng.uniform(-1, 1, (n, 3))
    v = kl.array(vn, dtype=kl.vec3, requires_grad=True)
    m = kl.array(mn, dtype=float, requires_grad=True)
    v_out = kl.zeros(n, dtype=kl.vec3, requires_grad=True)
    v_out_grad = kl.array(gout, dtype=kl.vec3)
    gravity = kl.vec3(*g)
    kl.launch(normalize_gravity, n, inputs=[v, m, gravity, dt], outputs=[v_out])
    adj_scalars = [None, None] if scalar_adjoints == "none" else [kl.vec3(0, 0, 0), 0.0]
    kl.launch(normalize_gravity, n, inputs=[v, m, gravity, dt], outputs=[v_out],
              adj_inputs=[v.grad, m.grad, *adj_scalars], adj_outputs=[v_out_grad],
              adjoint=True)
    dv, dm = _gravity_fd(vn.astype(np.float32).astype(np.float64),
                         mn.astype(np.float32).astype(np.float64), g, dt, gout)
    np.testing.assert_allclose(v.grad.numpy(), dv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.grad.numpy(), dm, rtol=1e-5, atol=1e-6)


def test_custom_op_forward_matches_numpy(backend, rng):
    n, dt, g = 4, 0.01, np.array([0.0, -9.8, 0.0])
    vn, mn = rng.uniform(-1, 1, (n, 3)), rng.uniform(0.5, 2.0, n)
    v, m = kl.array(vn, dtype=kl.vec3), kl.array(mn, dtype=float)
    v_out = kl.zeros(n, dtype=kl.vec3)
    kl.launch(normalize_gravity, n, inputs=[v, m, kl.vec3(*g), dt], outputs=[v_out])
    np.testing.assert_allclose(v_out.numpy(), vn / mn[:, None] + g * dt, rtol=1e-6)


# --- recorded launches --------------------------------------------------------------------

def test_recorded_adjoint_launch_runs_only_when_launched(backend):
    x = kl.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = kl.zeros(3, requires_grad=True)
    cmd = kl.launch(scale, 3, inputs=[x, 2.0], outputs=[y], adj_inputs=[x.grad, None],
                    adj_outputs=[kl.ones(3)], adjoint=True, record_cmd=True)
    assert isinstance(cmd, kl.Launch)
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0, 0.0])  # the adjoint ran, not forward


def test_recorded_forward_launch_runs_the_forward(backend):
    x, y = kl.array([1.0, 2.0, 3.0], dtype=float), kl.zeros(3)
    cmd = kl.launch(scale, 3, inputs=[x, 2.0], outputs=[y], record_cmd=True)
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0, 0.0])
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0, 6.0])


def test_set_param_at_index_changes_the_recorded_launch(backend):
    x, y = kl.array([1.0, 2.0, 3.0], dtype=float), kl.zeros(3)
    cmd = kl.launch(scale, 3, inputs=[x, 2.0], outputs=[y], record_cmd=True)
    cmd.set_param_at_index(1, 10.0)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [10.0, 20.0, 30.0])
    y2 = kl.zeros(3)
    cmd.set_param_at_index(2, y2)
    cmd.launch()
    np.testing.assert_array_equal(y2.numpy(), [10.0, 20.0, 30.0])


def test_set_param_at_index_changes_an_adjoint_launch(backend):
    x = kl.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = kl.zeros(3)
    cmd = kl.launch(scale, 3, inputs=[x, 2.0], outputs=[y], adj_inputs=[x.grad, None],
                    adj_outputs=[kl.ones(3)], adjoint=True, record_cmd=True)
    cmd.set_param_at_index(5, kl.full(3, 0.5, dtype=float))  # params: x, s, y, adj_x, adj_s, adj_y
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_set_dim_changes_how_many_threads_run(backend):
    x, y = kl.array([1.0, 2.0, 3.0], dtype=float), kl.zeros(3)
    cmd = kl.launch(scale, 3, inputs=[x, 2.0], outputs=[y], record_cmd=True)
    cmd.set_dim(2)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0, 0.0])


# --- clone, copy and assign inside a tape -------------------------------------------------

def test_gradient_flows_through_clone_copy_assign(backend):
    xn = np.array([0.5, -1.0, 2.0, 3.0], np.float32)
    x = kl.array(xn, dtype=float, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        c = kl.clone(x)
        d = kl.zeros_like(x)
        kl.copy(d, c)
        w = kl.zeros_like(x)
        w.assign(d)
        kl.launch(sum_of_squares, 4, inputs=[w], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy(), [np.sum(xn * xn)], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xn, rtol=1e-6)


def test_copy_with_offsets_moves_gradient_for_the_copied_range_only(backend):
    xn = np.arange(1.0, 7.0, dtype=np.float32)
    x = kl.array(xn, dtype=float, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        d = kl.zeros_like(x)
        kl.copy(d, x, dest_offset=1, src_offset=2, count=3)  # d[1:4] = x[2:5]
        kl.launch(sum_of_squares, 6, inputs=[d], outputs=[loss])
    tape.backward(loss)
    expected = np.zeros(6)
    expected[2:5] = 2 * xn[2:5]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


# --- aliasing -----------------------------------------------------------------------------

def test_alias_through_func_with_branch_gives_6_or_3(backend):
    xn = np.array([1.5, -2.0, 0.25, -0.5], np.float32)
    x = kl.array(xn, dtype=float, requires_grad=True)
    y = kl.zeros(4, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(aliased_scalars, 4, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.ones(4)})
    np.testing.assert_allclose(y.numpy(), np.where(xn > 0, 6 * xn, 3 * xn))
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 3.0, 6.0, 3.0])


def test_writing_a_component_of_a_vector_copy_leaves_the_original_unchanged(backend):
    vn = np.array([[1.0, 2.0, 3.0], [-4.0, 0.5, 6.0]], np.float32)
    v = kl.array(vn, dtype=kl.vec3)
    out_p, out_q = kl.zeros(2, dtype=kl.vec3), kl.zeros(2, dtype=kl.vec3)
    kl.launch(aliased_vectors, 2, inputs=[v], outputs=[out_p, out_q])
    expected_q = vn.copy()
    expected_q[:, 0] = 5.0
    np.testing.assert_array_equal(out_p.numpy(), vn)
    np.testing.assert_array_equal(out_q.numpy(), expected_q)


def test_gradients_through_a_vector_and_its_modified_copy(backend, rng):
    vn = rng.uniform(-1, 1, (2, 3))
    gp, gq = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))
    v = kl.array(vn, dtype=kl.vec3, requires_grad=True)
    out_p = kl.zeros(2, dtype=kl.vec3, requires_grad=True)
    out_q = kl.zeros(2, dtype=kl.vec3, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(aliased_vectors, 2, inputs=[v], outputs=[out_p, out_q])
    tape.backward(grads={out_p: kl.array(gp, dtype=kl.vec3),
                         out_q: kl.array(gq, dtype=kl.vec3)})
    expected = gp + gq * np.array([0.0, 1.0, 1.0])  # q[0] is the constant 5
    np.testing.assert_allclose(v.grad.numpy(), expected, rtol=1e-6)


# --- more tape behaviour ------------------------------------------------------------------

def test_gradients_of_two_outputs_of_one_kernel_add_up(backend):
    xn = np.array([0.1, 0.7, -1.3], np.float32)
    x = kl.array(xn, dtype=float, requires_grad=True)
    y, z = kl.zeros(3, requires_grad=True), kl.zeros(3, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(sin_and_square, 3, inputs=[x], outputs=[y, z])
    tape.backward(grads={y: kl.ones(3), z: kl.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xn) + 2 * xn, rtol=1e-6)


def test_backward_twice_without_zero_doubles_the_gradient(backend):
    xn = np.array([1.0, 2.0, -3.0], np.float32)
    x = kl.array(xn, dtype=float, requires_grad=True)
    y = kl.zeros(3, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square, 3, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.ones(3)})
    tape.backward(grads={y: kl.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * xn))


def test_reset_forgets_the_recording_and_the_tape_records_again(backend):
    xn = np.array([1.0, 2.0, -3.0], np.float32)
    x = kl.array(xn, dtype=float, requires_grad=True)
    y = kl.zeros(3, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square, 3, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.ones(3)})
    tape.reset()
    assert tape.launches == []
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    y3 = kl.zeros(3, requires_grad=True)
    with tape:
        kl.launch(cube, 3, inputs=[x], outputs=[y3])
    tape.backward(grads={y3: kl.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 3 * xn * xn)


def test_tape_launches_lists_the_recorded_launches_in_order(backend):
    x = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    y, z = kl.zeros(2, requires_grad=True), kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square, 2, inputs=[x], outputs=[y])
        kl.launch(cube, 2, inputs=[y], outputs=[z])
    assert [type(cmd) for cmd in tape.launches] == [kl.Launch, kl.Launch]
    assert [cmd.kernel for cmd in tape.launches] == [square, cube]


# --- modifying what a recorded kernel read -------------------------------------------------

def test_filling_an_input_after_recording_raises_naming_the_array(backend):
    x = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = kl.zeros(2, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square, 2, inputs=[x], outputs=[y])
    x.fill_(3.0)
    with pytest.raises(kl.GradientError, match="'x'"):
        tape.backward(grads={y: kl.ones(2)})


def test_a_later_kernel_writing_an_input_is_copied_first_and_the_gradient_stays_exact(backend):
    # square's adjoint needs x; the tape copies x before overwrite_input zeroes it
    x = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = kl.zeros(2, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square, 2, inputs=[x], outputs=[y])
        kl.launch(overwrite_input, 2, inputs=[x])
    assert tape.memory().snapshots == 1 and tape.memory().bytes == 8
    tape.backward(grads={y: kl.ones(2)})
    # x.grad: d(y1 + y2)/dx of the values square read (2x), the zeroed values get nothing
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_element_doubled_in_place_gets_the_exact_gradient(backend):
    a = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(double_in_place, 2, inputs=[a])
    tape.backward(grads={a: kl.array([1.0, -3.0], dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), [2.0, -6.0])  # d(2a)/da = 2, no replay needed


def test_element_overwritten_after_a_nonlinear_read_gets_the_exact_gradient(backend):
    a = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square_in_place, 2, inputs=[a])
    tape.backward(grads={a: kl.array([1.0, -3.0], dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), [2.0, -12.0])  # 2 a_before * seed


@kl.kernel
def square_neighbour_in_place(a: kl.array(dtype=float)):
    i = kl.tid()
    j = (i + 1) % 2
    a[j] = a[j] * a[j]


def test_overwriting_an_element_not_provably_the_threads_own_raises_naming_the_line(backend):
    a = kl.array([1.0, 2.0], dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square_neighbour_in_place, 2, inputs=[a])
    with pytest.raises(kl.GradientError) as info:
        tape.backward(grads={a: kl.ones(2)})
    line = line_of(square_neighbour_in_place, "a[j] = a[j] * a[j]")
    assert info.value.lineno == line
    assert f"line {line}" in str(info.value) and "own element" in str(info.value)


# --- the gradient checker -----------------------------------------------------------------

def _sin_times_args(rng, n=4):
    x = kl.array(rng.uniform(-1, 1, n), dtype=kl.float64)
    w = kl.array(rng.uniform(-1, 1, n), dtype=kl.float64)
    return x, w, kl.zeros(n, dtype=kl.float64)


def test_gradcheck_accepts_a_correct_kernel(backend, rng):
    x, w, y = _sin_times_args(rng)
    assert kl.autograd.gradcheck(sin_times, 4, inputs=[x, w], outputs=[y]) is True


def test_gradcheck_rejects_a_wrong_custom_gradient(backend, rng):
    x = kl.array(rng.uniform(0.5, 1.5, 3), dtype=kl.float64)
    y = kl.zeros(3, dtype=kl.float64)
    assert kl.autograd.gradcheck(uses_wrong_grad, 3, inputs=[x], outputs=[y],
                                 print_report=False) is False


def test_jacobian_agrees_with_finite_difference_jacobian(backend, rng):
    x, w, y = _sin_times_args(rng)
    ad = kl.autograd.jacobian(sin_times, 4, inputs=[x, w], outputs=[y])
    fd = kl.autograd.jacobian_fd(sin_times, 4, inputs=[x, w], outputs=[y], eps=1e-6)
    assert sorted(ad) == sorted(fd) == [(0, 0), (1, 0)]
    for key in ad:
        np.testing.assert_allclose(ad[key], fd[key], rtol=1e-6, atol=1e-8)


def test_jacobian_matches_the_analytic_jacobian(backend, rng):
    x, w, y = _sin_times_args(rng)
    xn, wn = x.numpy().copy(), w.numpy().copy()
    ad = kl.autograd.jacobian(sin_times, 4, inputs=[x, w], outputs=[y])
    np.testing.assert_allclose(ad[(0, 0)], np.diag(np.cos(xn) * wn), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ad[(1, 0)], np.diag(np.sin(xn)), rtol=1e-12, atol=1e-14)


@kl.kernel
def square_into(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i]


def test_same_array_as_read_input_and_written_output_is_refused(backend):
    x = kl.array(np.array([1.0, 2.0, 3.0], np.float32), dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square_into, 3, inputs=[x], outputs=[x])
    with pytest.raises(kl.GradientError, match="same array"):
        tape.backward(grads={x: kl.ones(3)})


def test_refused_backward_leaves_gradients_untouched(backend):
    x = kl.array(np.array([1.0, 2.0], np.float32), dtype=float, requires_grad=True)
    y = kl.zeros(2, requires_grad=True)
    z = kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square_into, 2, inputs=[x], outputs=[y])
        kl.launch(square_into, 2, inputs=[y], outputs=[z])
    y.fill_(5.0)  # modifies what the second launch read
    with pytest.raises(kl.GradientError, match="'x' was modified"):
        tape.backward(grads={z: kl.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_an_output_overwritten_by_a_later_launch_gets_no_gradient(backend):
    # Warp 1.19's rule, and the chain rule: the later store consumes y's gradient, so the
    # overwritten x*x contributes nothing (it used to be refused with a GradientError)
    x = kl.array(np.array([1.0, 2.0], np.float32), dtype=float, requires_grad=True)
    w = kl.array(np.array([3.0, 4.0], np.float32), dtype=float, requires_grad=True)
    y = kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square_into, 2, inputs=[x], outputs=[y])
        kl.launch(square_into, 2, inputs=[w], outputs=[y])  # replaces x*x by w*w
    tape.backward(grads={y: kl.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 8.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0])  # consumed
