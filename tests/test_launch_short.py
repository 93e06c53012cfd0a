"""The short path of small CPU launches (runtime/launch_short.py): after a kernel's first
launch, launches below the parallel threshold skip the general path. They must give the same
results, the same errors (bounds checks, read-only arrays, bad arguments), the same version
counts and in-place bookkeeping, and notice settings changed since. Every expected value is
computed with NumPy."""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import GradientError, KernelFPError, LaunchError
from kernlab.runtime import launch as launch_mod
from kernlab.runtime import launch_short


@kl.kernel
def axpy(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float):
    i = kl.tid()
    y[i] = a * x[i] + y[i]


@kl.kernel
def shifted(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i + 1]  # out of bounds at the last thread when len(x) == threads


@kl.kernel
def reciprocal(y: kl.array(dtype=float), a: float):
    i = kl.tid()
    y[i] = 1.0 / a


@kl.kernel
def counts(y: kl.array(dtype=kl.int32), step: int):
    i = kl.tid()
    y[i] = y[i] + step * i


@kl.kernel
def squares_in_place(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] * x[i]


@kl.kernel
def logs(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = kl.log(x[i] - 5.0)


def short_path_only(monkeypatch):
    """Make the general path fail, so a launch that succeeds took the short one."""
    def refuse(*args, **kwargs):
        raise AssertionError("the general launch path ran")
    monkeypatch.setattr(launch_mod, "_run", refuse)


def general_path_only(monkeypatch):
    monkeypatch.setattr(launch_mod._Quick, "make", classmethod(lambda cls, kernel: False))


def test_a_small_launch_takes_the_short_path_and_matches_numpy(monkeypatch):
    rng = np.random.default_rng(1)
    xs, ys = rng.random(100, np.float32), rng.random(100, np.float32)
    x, y = kl.array(xs), kl.array(ys)
    kl.launch(axpy, 100, inputs=[x, y, 2.0])  # the first launch makes the short path
    assert axpy._quick
    short_path_only(monkeypatch)
    kl.launch(axpy, 100, inputs=[x, y, 0.5])
    kl.launch(axpy, 100, inputs=[x], outputs=[y, 3])  # an int for a float parameter
    expected = ys.copy()
    for a in (2.0, 0.5, 3.0):
        expected = np.float32(a) * xs + expected
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    assert y._version == 3 and x._version == 0


def test_int_parameters_and_a_launch_smaller_than_the_array(monkeypatch):
    y = kl.zeros(10, dtype=kl.int32)
    kl.launch(counts, 10, inputs=[y, 1])
    short_path_only(monkeypatch)
    kl.launch(counts, 4, inputs=[y, -3])
    expected = np.arange(10, dtype=np.int32)
    expected[:4] += -3 * np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(y.numpy(), expected)


def test_the_sign_of_a_zero_scalar_reaches_the_kernel(monkeypatch):
    y = kl.zeros(3)
    kl.launch(reciprocal, 3, inputs=[y, 0.0])
    short_path_only(monkeypatch)
    for a in (0.0, -0.0, 0.0, -0.0, 2.0):  # 0.0 == -0.0: the kept blocks must tell them apart
        kl.launch(reciprocal, 3, inputs=[y, a])
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(y.numpy(), np.float32(1.0) / np.full(3, a, np.float32))


def bounds_error(monkeypatch, general: bool):
    monkeypatch.undo()
    if general:
        general_path_only(monkeypatch)
    x, y = kl.array(np.arange(8, dtype=np.float32)), kl.zeros(8)
    kl.launch(shifted, 7, inputs=[x, y])  # in range; makes the short path
    before = y._version
    with pytest.raises(IndexError) as info:
        kl.launch(shifted, 8, inputs=[x, y])
    assert y._version == before + 1  # some threads wrote before the error, as on the pool
    np.testing.assert_array_equal(y.numpy()[:7], np.arange(1, 8, dtype=np.float32))
    for _ in range(2):  # the blocks kept between launches carry no stale status
        y.zero_()
        kl.launch(shifted, 7, inputs=[x, y])
        kl.launch(shifted, 7, inputs=[x, y])
        np.testing.assert_array_equal(y.numpy()[:7], np.arange(1, 8, dtype=np.float32))
        with pytest.raises(IndexError):
            kl.launch(shifted, 8, inputs=[x, y])
    return info.value


def test_an_index_out_of_bounds_is_the_same_error_on_both_paths(monkeypatch):
    quick = bounds_error(monkeypatch, general=False)
    shifted._quick = None
    general = bounds_error(monkeypatch, general=True)
    assert type(quick) is type(general)
    assert str(quick) == str(general)
    assert "'shifted'" in str(quick) and "x[i + 1]" in str(quick)


def test_bad_arguments_get_the_general_paths_errors(monkeypatch):
    x, y = kl.zeros(4), kl.zeros(4)
    kl.launch(axpy, 4, inputs=[x, y, 1.0])
    assert axpy._quick
    with pytest.raises(LaunchError, match="parameter 'a'.*out of range"):
        kl.launch(axpy, 4, inputs=[x, y, 1e39])
    with pytest.raises(LaunchError, match="parameter 'y'.*float64"):
        kl.launch(axpy, 4, inputs=[x, kl.zeros(4, dtype=kl.float64), 1.0])
    with pytest.raises(LaunchError, match="takes 3 argument"):
        kl.launch(axpy, 4, inputs=[x, y])
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        kl.launch(axpy, 4, inputs=[x, kl.from_numpy(frozen), 1.0])
    # NumPy arrays are converted on the general path, and the launch still runs
    ys = np.zeros(4, np.float32)
    kl.launch(axpy, 4, inputs=[np.ones(4, np.float32), ys, 2.0])
    np.testing.assert_array_equal(ys, np.full(4, 2.0, np.float32))


def test_a_tape_records_a_small_launch_and_backward_gives_the_gradient():
    xs = np.linspace(0.5, 2.0, 6, dtype=np.float32)
    x = kl.array(xs, requires_grad=True)
    y = kl.zeros(6, requires_grad=True)
    kl.launch(axpy, 6, inputs=[x, y, 1.0])  # the short path exists before the tape opens
    assert axpy._quick
    y.zero_()
    with kl.Tape() as tape:
        kl.launch(axpy, 6, inputs=[x, y, 3.0])
    assert len(tape.launches) == 1
    tape.backward(grads={y: kl.ones(6)})
    np.testing.assert_allclose(x.grad.numpy(), np.full(6, 3.0, np.float32))
    np.testing.assert_allclose(y.numpy(), 3.0 * xs, rtol=1e-6)


def test_an_in_place_update_on_the_short_path_still_refuses_a_manual_adjoint(monkeypatch):
    xs = np.array([1.0, 2.0, 3.0], np.float32)
    x = kl.array(xs)
    kl.launch(squares_in_place, 3, inputs=[x])
    short_path_only(monkeypatch)
    kl.launch(squares_in_place, 3, inputs=[x])
    np.testing.assert_array_equal(x.numpy(), xs ** 4)
    monkeypatch.undo()
    with pytest.raises(GradientError, match="written here after being read"):
        kl.launch(squares_in_place, 3, inputs=[x], adj_inputs=[kl.ones(3)], adjoint=True)


def test_a_setting_changed_after_the_short_path_was_made_is_honoured(monkeypatch):
    x, y = kl.full(4, 9.0), kl.zeros(4)
    kl.launch(logs, 4, inputs=[x, y])
    assert logs._quick
    np.testing.assert_allclose(y.numpy(), np.log(np.full(4, 4.0)), rtol=1e-6)
    monkeypatch.setattr(kl.config, "verify_fp", True)
    x2 = kl.ones(4)
    with pytest.raises(KernelFPError):
        kl.launch(logs, 4, inputs=[x2, y])
    monkeypatch.undo()
    kl.launch(logs, 4, inputs=[x2, y])  # NaN stored, no check: as before the setting
    assert np.isnan(y.numpy()).all()


def test_recorded_launches_take_the_short_path_with_their_current_parameters(monkeypatch):
    xs = np.arange(5, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(5)
    cmd = kl.launch(axpy, 5, inputs=[x, y, 2.0], record_cmd=True)
    cmd.launch()  # the general path: makes the short one
    short_path_only(monkeypatch)
    cmd.launch()
    cmd.set_param_at_index(2, -1.0)
    cmd.launch()
    np.testing.assert_allclose(y.numpy(), (2.0 + 2.0 - 1.0) * xs)
    y2 = kl.zeros(5)
    cmd.set_param_by_name("y", y2)
    cmd.launch()
    np.testing.assert_allclose(y2.numpy(), -xs)
    assert y._version == 3 and y2._version == 1


def test_a_launch_at_or_above_the_threshold_runs_the_general_path(monkeypatch):
    from kernlab.backends.llvm.jit import PARALLEL_THRESHOLD
    n = PARALLEL_THRESHOLD
    xs = np.random.default_rng(2).random(n, np.float32)
    x, y = kl.array(xs), kl.zeros(n)
    kl.launch(axpy, 10, inputs=[x, y, 1.0])
    ran = []
    real = launch_mod._run
    monkeypatch.setattr(launch_mod, "_run", lambda *a: ran.append(1) or real(*a))
    kl.launch(axpy, n, inputs=[x, y, 1.0])
    assert ran == [1]
    expected = xs.copy()
    expected[:10] *= 2
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)


def test_a_recorded_launch_remakes_the_short_path_after_a_settings_change(monkeypatch):
    xs = np.arange(4, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(4)
    cmd = kl.launch(axpy, 4, inputs=[x, y, 1.0], record_cmd=True)
    cmd.launch()
    made = axpy._quick
    assert made
    monkeypatch.setattr(kl.config, "bounds_check", False)
    cmd.launch()  # declined (compiled for other settings), ran the general path, remade
    assert axpy._quick and axpy._quick is not made
    monkeypatch.undo()
    cmd.launch()  # and again for the settings restored
    short_path_only(monkeypatch)
    cmd.launch()
    np.testing.assert_allclose(y.numpy(), 4.0 * xs)


def test_numpy_scalars_take_the_short_path_with_the_general_paths_values(monkeypatch):
    xs = np.linspace(-1, 1, 5, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(5)
    kl.launch(axpy, 5, inputs=[x, y, 1.0])
    short_path_only(monkeypatch)
    for a in (np.float32(0.1), np.float64(0.1), np.int64(-2), np.float32(-0.0)):
        y.zero_()
        kl.launch(axpy, 5, inputs=[x, y, a])
        np.testing.assert_array_equal(y.numpy(), np.float32(a) * xs)
    monkeypatch.undo()
    with pytest.raises(LaunchError, match="out of range"):
        kl.launch(axpy, 5, inputs=[x, y, np.float64(1e39)])
    c = kl.zeros(3, dtype=kl.int32)
    kl.launch(counts, 3, inputs=[c, np.int32(2)])
    short_path_only(monkeypatch)
    kl.launch(counts, 3, inputs=[c, np.uint8(3)])
    np.testing.assert_array_equal(c.numpy(), 5 * np.arange(3, dtype=np.int32))


@kl.kernel
def doubled64(x: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64), a: kl.float64):
    i = kl.tid()
    y[i] = a * x[i]


@kl.kernel
def int_copy(x: kl.array(dtype=kl.int32), y: kl.array(dtype=kl.int32)):
    i = kl.tid()
    y[i] = x[i]


@pytest.fixture(params=["ctypes", "ctypes, no native call", "native held", "native released"])
def call_kind(request, monkeypatch):
    """Each way the short path calls the entry: through ctypes (before the native call is
    made, or where it could not be made), the native call keeping the GIL, the native call
    releasing it."""
    if request.param == "ctypes":  # (an earlier test may have made the native call)
        monkeypatch.setattr(launch_short, "_native", {"state": "unmade", "calls": 0})
        monkeypatch.setattr(launch_short, "NATIVE_AFTER", 10**9)
    elif request.param == "ctypes, no native call":
        monkeypatch.setattr(launch_short, "_native", {"state": "failed", "calls": 0})
    else:
        launch_short._make_native()
        assert launch_short._native["state"] == "made"
        monkeypatch.setattr(launch_short, "NATIVE_AFTER", 0)
        if request.param == "native released":
            monkeypatch.setattr(launch_short, "HOLD_GIL_BELOW", 0)
    for k in (axpy, shifted, doubled64):  # plans made under another setting are remade
        k._quick = None
    return request.param


def test_each_call_gives_numpys_values_and_the_general_paths_bounds_error(call_kind,
                                                                         monkeypatch):
    rng = np.random.default_rng(3)
    xs, ys = rng.random(50, np.float32), rng.random(50, np.float32)
    x, y = kl.array(xs), kl.array(ys)
    kl.launch(axpy, 50, inputs=[x, y, 1.0])
    assert axpy._quick
    expected = np.float32(1.0) * xs + ys
    with monkeypatch.context() as m:
        short_path_only(m)
        for a in (2.0, -0.5, 0.0, 3):  # the first calls count, then the native one is made
            kl.launch(axpy, 50, inputs=[x, y, a])
            expected = np.float32(a) * xs + expected
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
        assert y._version == 5
        calls = [type(plan[0]).__name__ for plan in axpy._quick.python.__globals__["LAST"]]
        native = call_kind.startswith("native")
        assert calls == ["builtin_function_or_method" if native else "function"
                         if call_kind == "ctypes" else "partial"]
    with monkeypatch.context() as m:
        general_path_only(m)
        shifted._quick = None
        with pytest.raises(IndexError) as general:
            kl.launch(shifted, 8, inputs=[kl.zeros(8), kl.zeros(8)])
    xb, yb = kl.array(np.arange(8, dtype=np.float32)), kl.zeros(8)
    kl.launch(shifted, 7, inputs=[xb, yb])
    for _ in range(3):  # the plan of a failed launch is not kept with its status set
        with pytest.raises(IndexError) as quick:
            kl.launch(shifted, 8, inputs=[xb, yb])
        kl.launch(shifted, 7, inputs=[xb, yb])
    assert str(quick.value) == str(general.value)
    np.testing.assert_array_equal(yb.numpy()[:7], np.arange(1, 8, dtype=np.float32))


def test_alternating_and_many_argument_signatures_use_their_own_blocks(call_kind,
                                                                       monkeypatch):
    a = kl.array(np.arange(6, dtype=np.float64))
    b = kl.zeros(6, dtype=kl.float64)
    kl.launch(doubled64, 6, inputs=[a, b, 1.0])
    short_path_only(monkeypatch)
    want_a, want_b = np.arange(6, dtype=np.float64), np.zeros(6)
    for step in range(6):  # ping-pong: two plans, each launch the other one
        src, dst = (a, b) if step % 2 == 0 else (b, a)
        kl.launch(doubled64, 6 - step % 2, inputs=[src, dst, 2.0])
        if step % 2 == 0:
            want_b = 2.0 * want_a
        else:
            want_a[:5] = 2.0 * want_b[:5]
    np.testing.assert_array_equal(a.numpy(), want_a)
    np.testing.assert_array_equal(b.numpy(), want_b)
    for k in range(3 * launch_short.PLANS_KEPT):  # new arrays every launch: ids get reused
        xs = np.full(4, float(k))
        x, y = kl.array(xs), kl.zeros(4, dtype=kl.float64)
        kl.launch(doubled64, 4, inputs=[x, y, 0.5])
        np.testing.assert_array_equal(y.numpy(), 0.5 * xs)
        del x, y


def test_an_array_that_fits_another_kernel_gets_this_ones_error(monkeypatch):
    x = kl.array(np.arange(4, dtype=np.float32))
    kl.launch(axpy, 4, inputs=[x, kl.zeros(4), 1.0])
    kl.launch(axpy, 4, inputs=[x, kl.zeros(4), 1.0])  # x keeps its key from the short path
    ints = kl.zeros(4, dtype=kl.int32)
    kl.launch(int_copy, 4, inputs=[ints, kl.zeros(4, dtype=kl.int32)])
    with pytest.raises(LaunchError, match="parameter 'x'.*float32"):
        kl.launch(int_copy, 4, inputs=[x, ints])
    with pytest.raises(LaunchError, match="parameter 'x'.*dimension"):
        kl.launch(axpy, 2, inputs=[kl.zeros((2, 2)), kl.zeros(4), 1.0])
    # an int too large for a float64 is the general path's error, not struct's
    d = kl.zeros(2, dtype=kl.float64)
    kl.launch(doubled64, 2, inputs=[d, d, 1.0])
    with pytest.raises(LaunchError, match="parameter 'a'.*out of range"):
        kl.launch(doubled64, 2, inputs=[d, d, 10**400])


def test_threads_launching_one_kernel_at_once_each_get_their_own_result(call_kind):
    import threading
    n, rounds = 64, 200
    arrays = [(kl.array(np.full(n, float(t), np.float64)), kl.zeros(n, dtype=kl.float64))
              for t in range(4)]
    kl.launch(doubled64, n, inputs=[*arrays[0], 1.0])
    errors = []

    def work(t):
        x, y = arrays[t]
        try:
            for r in range(rounds):
                kl.launch(doubled64, n - t, inputs=[x, y, float(r)])
                if not np.array_equal(y.numpy()[:n - t], np.full(n - t, float(r * t))):
                    errors.append((t, r))
                    return
        except Exception as exc:  # reported below, with the thread
            errors.append((t, exc))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
