"""Warp 1.19's tape, launch and autograd API on kernlab: expected values are analytic."""
import numpy as np
import pytest

import kernlab as kl


@kl.kernel
def scale2(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * 2.0


@kl.kernel
def square(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i]


@kl.kernel
def total(x: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(out, 0, x[i])


@kl.kernel
def chain(x: kl.array(dtype=float), y: kl.array(dtype=float), z: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i]
    z[i] = y[i] * 3.0


def f32(values):
    return kl.array(np.asarray(values, np.float32), dtype=float, requires_grad=True)


def test_stores_consume_gradients_so_overwritten_values_get_none():
    x, s = f32([1.0, 2.0, 3.0]), f32([5.0, 6.0, 7.0])
    y, loss = kl.zeros(3, requires_grad=True), kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(scale2, 3, inputs=[x], outputs=[y])  # dead: overwritten by the copy
        kl.copy(y, s)
        kl.launch(total, 3, inputs=[y], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_array_equal(s.grad.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_retain_grad_keeps_the_seed():
    x = f32([1.0, 2.0])
    y = kl.zeros(2, requires_grad=True)
    y.retain_grad = True
    with kl.Tape() as tape:
        kl.launch(square, 2, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])


def test_seeded_output_is_consumed_and_input_gradients_accumulate():
    x = f32([1.0, 2.0])
    y = kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square, 2, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.ones(2)})
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0])
    tape.backward(grads={y: kl.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])
    assert tape.gradients[x] is x.grad
    tape.zero()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_write_then_read_in_one_kernel():
    x = f32([1.0, 2.0])
    y, z = kl.zeros(2, requires_grad=True), kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(chain, 2, inputs=[x, y, z])
    tape.backward(grads={z: kl.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_record_func_runs_in_the_backward_pass_and_its_arrays_are_zeroed():
    x = f32([1.0, 2.0])
    y = kl.zeros(2, requires_grad=True)
    calls = []

    def backward():  # y = 5 x, by hand
        calls.append(1)
        x.grad.assign(x.grad.numpy() + 5.0 * y.grad.numpy())

    with kl.Tape() as tape:
        y.assign(5.0 * x.numpy())
        tape.record_func(backward, arrays=[x, y])
    tape.backward(grads={y: kl.ones(2)})
    assert calls == [1]
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])
    tape.zero()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0])
    with pytest.raises(RuntimeError):
        tape.record_func(backward, arrays=[kl.zeros(2)])  # no gradient


def test_tapes_do_not_nest_and_scopes_must_match():
    with pytest.raises(RuntimeError):
        with kl.Tape():
            with kl.Tape():
                pass
    tape = kl.Tape()
    with pytest.raises(RuntimeError, match="scope not present"):
        tape.record_scope_end()
    tape.record_scope_begin("a")
    tape.record_scope_end()
    assert tape.scopes == []


def test_visualize_folds_repeated_launches(tmp_path):
    x, z = f32([1.0, 2.0]), kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        tape.record_scope_begin("loop")
        for _ in range(5):
            kl.launch(total, 2, inputs=[x], outputs=[z])
        tape.record_scope_end()
    path = tmp_path / "tape.dot"
    dot = tape.visualize(str(path))
    assert dot.startswith("digraph") and "repeated 5x" in dot and "loop" in dot
    assert dot.count("total") == 1 and "array: dtype=" in dot
    assert path.read_text() == dot


def test_adjoint_launch_none_means_the_arrays_own_gradient():
    x = f32([1.0, 2.0, 3.0])
    y = kl.zeros(3, requires_grad=True)
    y.grad.fill_(1.0)
    kl.launch(square, 3, inputs=[x, y], adj_inputs=[None, None], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


@kl.kernel
def overwrite_and_scale(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = 3.0 * x[i]
    y[i] = 2.0 * x[i]  # overwrites: y = 2 x in the end


def test_a_store_consumes_only_the_arrays_own_gradient():
    """As in Warp 1.19 (adj_array_store zeroes the element only when the adjoint buffer is
    buf.grad): a buffer passed in adj_outputs belongs to the caller and is read, not zeroed;
    y.grad (given as None, or as the array itself) is consumed. By hand, in reverse order:
    the second store's adjoint reads the seed g (dx += 2 g), then the first store's reads
    the element again: g if the buffer was not zeroed (dx = 2 g + 3 g), 0 if it was
    (dx = 2 g)."""
    x = f32([1.0, 2.0])
    seed = kl.array(np.array([1.0, 10.0], np.float32), dtype=float)
    kl.launch(overwrite_and_scale, 2, inputs=[x], outputs=[kl.zeros(2)],
              adj_inputs=[x.grad], adj_outputs=[seed], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 50.0])  # 2 g + 3 g
    np.testing.assert_array_equal(seed.numpy(), [1.0, 10.0])    # left alone
    for given in (None, "own"):
        x.grad.zero_()
        y = kl.zeros(2, requires_grad=True)
        y.grad.assign(np.array([1.0, 10.0], np.float32))
        kl.launch(overwrite_and_scale, 2, inputs=[x], outputs=[y], adj_inputs=[None],
                  adj_outputs=[y.grad if given == "own" else None], adjoint=True)
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 20.0])  # 2 g + 3 * 0
        np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0])   # consumed
    x.grad.zero_()
    y = kl.zeros(2, requires_grad=True)
    y.retain_grad = True
    y.grad.assign(np.array([1.0, 10.0], np.float32))
    kl.launch(overwrite_and_scale, 2, inputs=[x], outputs=[y], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 50.0])  # retain_grad: never zeroed


@kl.kernel
def double_in_place(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = 2.0 * x[i]


def test_an_explicit_buffer_of_an_array_updated_in_place_is_consumed():
    """On purpose unlike Warp: the buffer of an array the kernel reads and overwrites goes
    from d/d(after) to d/d(before), so it is consumed even when passed explicitly. By
    hand: the store reads g and zeroes it, the load adds 2 g: 2 g (Warp keeps the g: 3 g).
    """
    g = kl.array(np.array([1.0, -4.0], np.float32), dtype=float)
    kl.launch(double_in_place, 2, inputs=[f32([0.5, 7.0])], adj_inputs=[g], adjoint=True)
    np.testing.assert_array_equal(g.numpy(), [2.0, -8.0])


def test_launch_objects_keep_the_adjoint_flag_and_take_params_by_name():
    x = f32([1.0, 2.0, 3.0])
    y = kl.zeros(3, requires_grad=True)
    y.grad.fill_(1.0)
    cmd = kl.launch(square, 3, inputs=[x, y], adjoint=True, adj_inputs=[None, None],
                    record_cmd=True)
    assert cmd.adjoint
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
    empty = kl.Launch(square, "cpu")
    out = kl.zeros(2)
    empty.set_param_by_name("x", kl.array(np.array([3.0, 4.0], np.float32), dtype=float))
    empty.set_param_by_name("y", out)
    empty.set_dim(2)
    empty.launch()
    np.testing.assert_array_equal(out.numpy(), [9.0, 16.0])
    with pytest.raises(kl.LaunchError):
        kl.Launch(square, "cpu").launch()  # arrays not set


def test_gradcheck_and_jacobians_of_a_python_function():
    x = kl.array(np.array([1.0, 2.0]), dtype=kl.float64, requires_grad=True)

    def f(a):
        out = kl.zeros_like(a)
        kl.launch(kernel_sq64, a.size, inputs=[a], outputs=[out])
        return out

    jac = kl.autograd.jacobian(f, inputs=[x])[(0, 0)].numpy()
    np.testing.assert_allclose(jac, np.diag([2.0, 4.0]), rtol=1e-12)
    fd = kl.autograd.jacobian_fd(f, inputs=[x], eps=1e-6)[(0, 0)].numpy()
    np.testing.assert_allclose(fd, np.diag([2.0, 4.0]), rtol=1e-6)
    assert kl.autograd.gradcheck(f, inputs=[x], show_summary=False)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])  # restored


@kl.kernel
def kernel_sq64(a: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    i = kl.tid()
    out[i] = a[i] * a[i]


@kl.func
def wrong_sq(x: float):
    return x * x


@kl.func_grad(wrong_sq)
def adj_wrong_sq(x: float, adj_ret: float):
    kl.adjoint[x] -= 2.0 * x * adj_ret


@kl.kernel
def uses_wrong(a: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = wrong_sq(a[i])


def test_gradcheck_raises_on_request_and_masks_limit_the_work():
    a, out = f32([1.0, 2.0, 3.0]), kl.zeros(3, requires_grad=True)
    with pytest.raises(ValueError):
        kl.autograd.gradcheck(uses_wrong, 3, [a], [out], raise_exception=True,
                              show_summary=False)
    jac = kl.autograd.jacobian(square, 3, [a], [out], max_outputs_per_var=2)[(0, 0)].numpy()
    np.testing.assert_array_equal(jac[:2], [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
    assert np.all(np.isnan(jac[2]))
    assert list(kl.autograd.jacobian(square, 3, [a], [out],
                                     input_output_mask=[("x", "y")])) == [(0, 0)]


def test_gradcheck_tape_checks_each_launch_and_skips_disabled_kernels():
    a, out = f32([1.0, 2.0]), kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square, 2, inputs=[a], outputs=[out])
    assert kl.autograd.gradcheck_tape(tape, show_summary=False)
    with kl.Tape() as tape:
        kl.launch(uses_wrong, 2, inputs=[a], outputs=[out])
    assert not kl.autograd.gradcheck_tape(tape, show_summary=False)
    off = kl.kernel(enable_backward=False)(uses_wrong.pyfunc)
    with kl.Tape() as tape:
        kl.launch(off, 2, inputs=[a], outputs=[out])
    assert kl.autograd.gradcheck_tape(tape, show_summary=False)
    with pytest.warns(UserWarning, match="enable_backward"):
        tape.backward(grads={out: kl.ones(2)})


@kl.kernel
def expectations(a: kl.array(dtype=int), v: kl.vec3):
    i = kl.tid()
    kl.expect_eq(a[i], i)
    kl.expect_neq(a[i], -1)
    kl.expect_near(v, kl.vec3(1.0, 2.0, 3.0), 0.01)


def test_expectations_print_and_do_not_abort(capfd):
    a = kl.array(np.array([0, 1, 7]), dtype=int)
    kl.launch(expectations, 3, inputs=[a, kl.vec3(1.0, 2.0, 3.5)])
    text = capfd.readouterr().out
    assert text.count("expect_eq() failed") == 1 and "Actual: 7" in text
    assert text.count("expect_near() failed") == 3
    assert "expect_neq" not in text


@kl.func
def counted(counter: kl.array(dtype=int), tid: int, slots: kl.array(dtype=int)):
    k = kl.atomic_add(counter, 0, 1)
    slots[tid] = k
    return k


@kl.func_replay(counted)
def counted_replay(counter: kl.array(dtype=int), tid: int, slots: kl.array(dtype=int)):
    return slots[tid]


@kl.kernel
def scatter_square(x: kl.array(dtype=float), counter: kl.array(dtype=int),
                   slots: kl.array(dtype=int), y: kl.array(dtype=float)):
    t = kl.tid()
    k = counted(counter, t, slots)
    y[k] = x[k] * x[k]


def test_func_replay_makes_an_atomic_index_differentiable():
    n = 16
    x = kl.array(np.arange(n, dtype=np.float32), dtype=float, requires_grad=True)
    counter, slots = kl.zeros(1, dtype=int), kl.zeros(n, dtype=int)
    y = kl.zeros(n, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(scatter_square, n, inputs=[x, counter, slots], outputs=[y])
    tape.backward(grads={y: kl.ones(n)})
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * np.arange(n))
    assert counter.numpy()[0] == n  # the atomic ran once per thread, not again on replay


@kl.func
def two_outputs(x: float, y: float):
    return x * 3.0 + y / 3.0, y * y


@kl.func_grad(two_outputs)
def adj_two_outputs(x: float, y: float, adj_ret0: float, adj_ret1: float):
    kl.adjoint[x] += 3.0 * adj_ret0
    kl.adjoint[y] += adj_ret0 / 3.0 + 2.0 * y * adj_ret1


@kl.kernel
def run_two(xs: kl.array(dtype=float), ys: kl.array(dtype=float), a: kl.array(dtype=float),
            b: kl.array(dtype=float)):
    i = kl.tid()
    p, q = two_outputs(xs[i], ys[i])
    a[i] = p
    b[i] = q


def test_custom_gradient_of_a_func_returning_a_tuple():
    xs, ys = f32([1.0, 2.0]), f32([3.0, 4.0])
    a, b = kl.zeros(2, requires_grad=True), kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(run_two, 2, inputs=[xs, ys], outputs=[a, b])
    tape.backward(grads={a: kl.ones(2), b: kl.full(2, 2.0)})
    np.testing.assert_allclose(xs.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(ys.grad.numpy(), 1.0 / 3.0 + 2.0 * 2.0 * np.array([3.0, 4.0]),
                               rtol=1e-6)


@kl.func
def write_cube(i: int, xs: kl.array(dtype=float), ys: kl.array(dtype=float)):
    ys[i] = xs[i] * xs[i] * xs[i]


@kl.func_grad(write_cube)
def adj_write_cube(i: int, xs: kl.array(dtype=float), ys: kl.array(dtype=float)):
    kl.adjoint[xs][i] += 3.0 * xs[i] * xs[i] * kl.adjoint[ys][i]


@kl.kernel
def run_cube(xs: kl.array(dtype=float), ys: kl.array(dtype=float)):
    i = kl.tid()
    write_cube(i, xs, ys)


def test_custom_gradient_writing_array_adjoints():
    xs, ys = f32([1.0, 2.0, 3.0]), kl.zeros(3, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(run_cube, 3, inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: kl.full(3, 2.0)})
    np.testing.assert_allclose(xs.grad.numpy(), 2.0 * 3.0 * np.array([1.0, 4.0, 9.0]))


def test_overlapping_copies_get_the_chain_rules_gradient():
    # Warp 1.19 leaves the incoming gradient in place here (a documented limitation,
    # [1, 1, 1, 1]); y_new = [y0, y0, y1, y2], so d sum(y_new) / dy = [2, 1, 1, 0]
    y = kl.array(np.arange(1.0, 5.0, dtype=np.float32), dtype=float, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.copy(y, y, dest_offset=1, src_offset=0, count=3)
        kl.launch(total, 4, inputs=[y], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 1.0, 1.0, 0.0])


def test_verify_autograd_array_access_warns_at_the_overwrite(monkeypatch, capsys):
    monkeypatch.setattr(kl.config, "verify_autograd_array_access", True)
    a, c = f32([1.0, 2.0]), f32([3.0, 4.0])
    b = kl.zeros(2, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square, 2, inputs=[a], outputs=[b])
        assert a._is_read and not b._is_read
        kl.launch(scale2, 2, inputs=[c], outputs=[a])  # overwrites what square read
    assert "has already been read from in a previous launch" in capsys.readouterr().err
    tape.backward(grads={b: kl.ones(2)})  # the tape copied a before scale2 overwrote it
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])  # 2a of the values square read
    tape.reset()
    assert not a._is_read


def test_kernel_adj_reports_reads_and_writes():
    args = chain.adj.args
    assert [(x.label, x.is_read, x.is_write) for x in args] == [
        ("x", True, False), ("y", True, True), ("z", False, True)]


@kl.kernel
def set_component(x: kl.array(dtype=float), y: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    y[i][1] = x[i] * 3.0  # a read-modify-write of y[i]


@kl.kernel
def stale_times(x: kl.array(dtype=float), w: kl.array(dtype=float), y: kl.array(dtype=float),
                out: kl.array(dtype=float)):
    i = kl.tid()
    v = y[i]
    y[i] = x[i]
    out[i] = v * w[i]  # d out / d w needs the old y[i]


def test_component_writes_into_an_array_element_have_the_right_gradient():
    x = f32([1.0, 2.0])
    y = kl.array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32), dtype=kl.vec3,
                 requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(set_component, 2, inputs=[x, y])
    np.testing.assert_array_equal(y.numpy(), [[1.0, 3.0, 3.0], [4.0, 6.0, 6.0]])
    seed = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    tape.backward(grads={y: kl.array(seed, dtype=kl.vec3)})
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 15.0])  # 3 * seed[:, 1]
    # the overwritten component gets nothing; the kept ones pass their seed through
    np.testing.assert_array_equal(y.grad.numpy(), [[1.0, 0.0, 3.0], [4.0, 0.0, 6.0]])


def test_a_stale_value_whose_gradient_needs_it_gets_it_from_the_tapes_copy():
    x, w, y, out = f32([1.0]), f32([2.0]), f32([3.0]), kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(stale_times, 1, inputs=[x, w, y, out])
    tape.backward(grads={out: kl.ones(1)})
    np.testing.assert_allclose(w.grad.numpy(), [3.0])  # d(v w)/dw = v = the old y
    np.testing.assert_allclose(y.grad.numpy(), [2.0])  # the old y reaches out through w
    np.testing.assert_allclose(x.grad.numpy(), [0.0])  # y (its new value) is not seeded


def test_module_load_compiles_its_kernels_now():
    src = "def broken(a: kl.array(dtype=float)):\n    i = kl.tid()\n    a[i] = undefined_name\n"
    ns = {"kl": kl}
    import linecache
    fname = "<test_module_load>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    exec(compile(src, fname, "exec"), ns)
    k = kl.kernel(module="test_module_load_mod")(ns["broken"])
    assert k.module is kl.get_module("test_module_load_mod")
    with pytest.raises(kl.KernelError, match="undefined_name"):
        kl.get_module("test_module_load_mod").load(device="cpu")


@kl.func
def sigmoid(x: float):
    return 1.0 / (1.0 + kl.exp(-x))


@kl.func_grad(sigmoid)
def adj_sigmoid(x: float, adj_ret: float):
    s = sigmoid(x)  # the adjoint calls its own forward func (Warp allows this)
    kl.adjoint[x] += adj_ret * s * (1.0 - s)


@kl.kernel
def apply_sigmoid(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = sigmoid(x[i])


def test_a_custom_gradient_may_call_its_own_forward_func():
    xs = np.array([-2.0, 0.0, 1.5])
    x = kl.array(xs, dtype=float, requires_grad=True)
    y = kl.zeros(3, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(apply_sigmoid, 3, inputs=[x, y])
    tape.backward(grads={y: kl.ones(3, dtype=float)})
    s = 1.0 / (1.0 + np.exp(-xs))
    np.testing.assert_allclose(y.numpy(), s, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), s * (1 - s), rtol=1e-5)  # analytic
