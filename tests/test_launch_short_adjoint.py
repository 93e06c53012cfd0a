"""The short path of small adjoint launches (runtime/launch_short_adjoint.py):
``kl.launch(..., adjoint=True)``, recorded adjoint launches and a tape's replay of small
launches skip the general path after the kernel's first adjoint launch. Results must equal
the general path's and analytic or float64 finite-difference values; gradients passed as
None or 0 mean the array's own .grad; bad arguments get the general path's errors; threads
each get their own result."""
import threading

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm import runner as runner_mod
from kernlab.errors import GradientError, LaunchError
from kernlab.runtime import launch as launch_mod

N = 1000  # threads: below the parallel threshold


@kl.kernel
def saxpy_out(x: kl.array(dtype=float), y: kl.array(dtype=float), z: kl.array(dtype=float),
              a: float):
    i = kl.tid()
    z[i] = a * x[i] + y[i]


@kl.kernel
def sin_sum(x: kl.array(dtype=float), a: float, loss: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(loss, 0, a * kl.sin(x[i]) + x[i] * x[i])


@kl.kernel
def squares_in_place(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] * x[i]


@kl.kernel
def shifted(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i + 1]


@kl.kernel
def row_sums(m: kl.array(dtype=float, ndim=2), out: kl.array(dtype=float)):
    i = kl.tid()
    s = float(0.0)
    for j in range(m.shape[1]):
        s += m[i, j] * m[i, j]
    out[i] = s


@pytest.fixture(autouse=True)
def fresh_short_paths():
    """Each test makes its kernels' short paths afresh (general_only leaves False)."""
    kernels = (saxpy_out, sin_sum, squares_in_place, shifted, row_sums)
    for k in kernels:
        k._quick_adjoint = None
    yield
    for k in kernels:
        k._quick_adjoint = None


def no_runner_launch(monkeypatch):
    """Make Runner.launch (the general path's call) fail: a launch that succeeds after this
    took the short path."""
    def refuse(*args, **kwargs):
        raise AssertionError("the general launch path ran")
    monkeypatch.setattr(runner_mod.Runner, "launch", refuse)


def general_only(monkeypatch):
    monkeypatch.setattr(launch_mod._QuickAdjoint, "make", classmethod(lambda cls, k: False))


def values(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3)]


def saxpy_adjoint(xs, ys, gz, a, own, monkeypatch=None):
    """One kl.launch(adjoint=True) of saxpy_out after a warm-up; (adj_x, adj_y, adj_z)."""
    x, y, z = kl.array(xs, requires_grad=own), kl.array(ys, requires_grad=own), \
        kl.zeros(len(xs), requires_grad=own)
    if own:  # None: each array's own .grad
        adj = [None, None, None, None]
        z.grad.assign(kl.array(gz))
        grads = [x.grad, y.grad, z.grad]
    else:
        grads = [kl.zeros(len(xs)), kl.zeros(len(xs)), kl.array(gz)]
        adj = grads + [0.0]
    kl.launch(saxpy_out, len(xs), inputs=[x, y, z, a])
    warm = [kl.zeros(len(xs)) for _ in range(3)]
    kl.launch(saxpy_out, len(xs), inputs=[x, y, z, a], adjoint=True, adj_inputs=warm + [0.0])
    if monkeypatch is not None:
        no_runner_launch(monkeypatch)
    kl.launch(saxpy_out, len(xs), inputs=[x, y, z, a], adjoint=True, adj_inputs=adj)
    return [g.numpy() for g in grads]


@pytest.mark.parametrize("own", [False, True])
def test_an_adjoint_launch_takes_the_short_path_and_equals_the_general_one(monkeypatch, own):
    xs, ys, gz = values()
    short = saxpy_adjoint(xs, ys, gz, 2.5, own, monkeypatch)
    monkeypatch.undo()
    general_only(monkeypatch)
    saxpy_out._quick_adjoint = None
    general = saxpy_adjoint(xs, ys, gz, 2.5, own)
    for s, g in zip(short, general):
        np.testing.assert_array_equal(s, g)
    want_x = (2.5 * gz.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(short[0], want_x, rtol=1e-6)
    np.testing.assert_array_equal(short[1], gz)
    # a store's adjoint consumes the gradient of z only when it is z's own .grad
    np.testing.assert_array_equal(short[2], np.zeros_like(gz) if own else gz)


def test_adjoints_given_as_zero_are_the_arrays_own_gradients(monkeypatch):
    xs, ys, gz = values(seed=1)
    x, y = kl.array(xs, requires_grad=True), kl.array(ys, requires_grad=True)
    z = kl.zeros(N, requires_grad=True)
    args = [x, y, z, -1.5]
    kl.launch(saxpy_out, N, inputs=args, adjoint=True, adj_inputs=[0, 0, 0, None])
    no_runner_launch(monkeypatch)
    z.grad.assign(kl.array(gz))
    kl.launch(saxpy_out, N, inputs=args, adjoint=True, adj_inputs=[0, 0.0, None, None])
    np.testing.assert_allclose(x.grad.numpy(), -1.5 * gz, rtol=1e-6)
    np.testing.assert_array_equal(y.grad.numpy(), gz)
    np.testing.assert_array_equal(z.grad.numpy(), np.zeros(N, np.float32))


def test_overlapping_gradients_take_the_atomic_variant_on_the_short_path(monkeypatch):
    xs, ys, gz = values(seed=2)
    x, y, z = kl.array(xs), kl.array(ys), kl.zeros(N)
    both = kl.zeros(N)  # the gradient of x and of y in one array: atomics needed
    kl.launch(saxpy_out, N, inputs=[x, y, z, 3.0], adjoint=True,
              adj_inputs=[kl.zeros(N), kl.zeros(N), kl.array(gz), 0.0])
    no_runner_launch(monkeypatch)
    for _ in range(2):  # the second from the plan
        kl.launch(saxpy_out, N, inputs=[x, y, z, 3.0], adjoint=True,
                  adj_inputs=[both, both, kl.array(gz), 0.0])
    want = 2 * (3.0 * gz.astype(np.float64) + gz)
    np.testing.assert_allclose(both.numpy(), want, rtol=1e-6)


def test_wrong_adjoint_arguments_get_the_general_paths_errors(monkeypatch):
    xs, ys, gz = values(seed=3)
    x, y, z = kl.array(xs), kl.array(ys), kl.zeros(N)
    good = [kl.zeros(N), kl.zeros(N), kl.array(gz), 0.0]
    kl.launch(saxpy_out, N, inputs=[x, y, z, 1.0], adjoint=True, adj_inputs=good)
    kl.launch(saxpy_out, N, inputs=[x, y, z, 1.0], adjoint=True, adj_inputs=good)
    bad_cases = [
        [kl.zeros(N + 1), kl.zeros(N), kl.zeros(N), 0.0],  # a wrong shape
        [kl.zeros(N), kl.zeros(N), kl.zeros(N)],  # too few
        [kl.zeros(N), np.zeros(N, np.float32), kl.zeros(N), 0.0],  # not a kernlab array
        [kl.zeros(N), kl.zeros(N), kl.zeros(N, dtype=kl.float64), 0.0],  # another dtype
        [kl.zeros(N), kl.zeros(N), kl.zeros(N), "0"],  # a string for a float
    ]
    messages = []
    for adj in bad_cases:
        with pytest.raises(LaunchError) as short:
            kl.launch(saxpy_out, N, inputs=[x, y, z, 1.0], adjoint=True, adj_inputs=adj)
        messages.append(str(short.value))
    assert "has shape (1001,), but 'x' has shape (1000,)" in messages[0]
    general_only(monkeypatch)
    saxpy_out._quick_adjoint = None
    for adj, message in zip(bad_cases, messages):
        with pytest.raises(LaunchError) as general:
            kl.launch(saxpy_out, N, inputs=[x, y, z, 1.0], adjoint=True, adj_inputs=adj)
        assert str(general.value) == message


def test_a_read_only_gradient_is_refused_with_the_general_paths_error():
    x, y, z = (kl.array(v) for v in values(seed=4))
    adj = [kl.zeros(N), kl.zeros(N), kl.zeros(N), 0.0]
    for _ in range(2):
        kl.launch(saxpy_out, N, inputs=[x, y, z, 1.0], adjoint=True, adj_inputs=adj)
    frozen = np.zeros(N, np.float32)
    frozen.flags.writeable = False
    adj[0] = kl.array(frozen, copy=False)
    with pytest.raises(LaunchError, match="read-only"):
        kl.launch(saxpy_out, N, inputs=[x, y, z, 1.0], adjoint=True, adj_inputs=adj)


def test_an_in_place_kernels_manual_adjoint_is_still_refused():
    x = kl.array(values(seed=5)[0])
    before = kl.clone(x)
    g = kl.ones(N)
    kl.launch(squares_in_place, N, inputs=[before], adjoint=True, adj_inputs=[g])
    kl.launch(squares_in_place, N, inputs=[before], adjoint=True, adj_inputs=[kl.ones(N)])
    kl.launch(squares_in_place, N, inputs=[x])
    with pytest.raises(GradientError, match="holds what the forward launch wrote"):
        kl.launch(squares_in_place, N, inputs=[x], adjoint=True, adj_inputs=[kl.ones(N)])


def test_an_index_out_of_bounds_in_the_adjoint_is_the_general_paths_error(monkeypatch):
    x, y = kl.zeros(N), kl.zeros(N)
    fine = [kl.zeros(N + 1), kl.zeros(N)]
    ok = kl.zeros(N + 1)
    for _ in range(2):
        kl.launch(shifted, N, inputs=[ok, y], adjoint=True, adj_inputs=fine)
    with pytest.raises(IndexError) as short:
        kl.launch(shifted, N, inputs=[x, y], adjoint=True, adj_inputs=[kl.zeros(N), kl.zeros(N)])
    general_only(monkeypatch)
    shifted._quick_adjoint = None
    with pytest.raises(IndexError) as general:
        kl.launch(shifted, N, inputs=[x, y], adjoint=True, adj_inputs=[kl.zeros(N), kl.zeros(N)])
    assert str(short.value) == str(general.value)


def loss_and_grad(xs, a, monkeypatch=None):
    """The tape's gradient of sum(a sin x + x^2) (a recorded small launch with an atomic
    add), its second backward through the short path when monkeypatch is given."""
    x = kl.array(xs, requires_grad=True)
    out = None
    for rep in range(2):
        loss = kl.zeros(1, requires_grad=True)
        tape = kl.Tape()
        with tape:
            kl.launch(sin_sum, len(xs), inputs=[x, a, loss])
        if rep == 1 and monkeypatch is not None:
            no_runner_launch(monkeypatch)
        tape.backward(loss)
        out = (loss.numpy()[0], x.grad.numpy().copy())
        tape.zero()
    return out


def test_a_tape_replays_small_launches_on_the_short_path_with_exact_gradients(monkeypatch):
    xs = values(seed=6)[0]
    loss, grad = loss_and_grad(xs, 0.75, monkeypatch)
    monkeypatch.undo()
    x64 = xs.astype(np.float64)
    np.testing.assert_allclose(loss, np.sum(0.75 * np.sin(x64) + x64 * x64), rtol=1e-5)
    np.testing.assert_allclose(grad, 0.75 * np.cos(x64) + 2 * x64, rtol=1e-5, atol=1e-6)
    # float64 finite differences of the float64 loss at a few points
    f = lambda v: np.sum(0.75 * np.sin(v) + v * v)
    for i in (0, 17, 999):
        e = np.zeros_like(x64)
        e[i] = 1e-6
        np.testing.assert_allclose(grad[i], (f(x64 + e) - f(x64 - e)) / 2e-6, rtol=1e-4,
                                   atol=1e-5)
    general_only(monkeypatch)
    sin_sum._quick_adjoint = None
    np.testing.assert_array_equal(loss_and_grad(xs, 0.75)[1], grad)


def test_a_recorded_adjoint_launch_takes_the_short_path(monkeypatch):
    xs, ys, gz = values(seed=7)
    x, y, z = kl.array(xs), kl.array(ys), kl.zeros(N)
    ax, ay = kl.zeros(N), kl.zeros(N)
    cmd = kl.launch(saxpy_out, N, inputs=[x, y, z, 2.0], adjoint=True,
                    adj_inputs=[ax, ay, kl.array(gz), 0.0], record_cmd=True)
    cmd.launch()
    no_runner_launch(monkeypatch)
    cmd.launch()
    np.testing.assert_allclose(ax.numpy(), 2 * (2.0 * gz.astype(np.float64)), rtol=1e-6)
    np.testing.assert_array_equal(ay.numpy(), 2 * gz)


def test_threads_running_adjoint_launches_of_one_kernel_each_get_their_own_result():
    kl.launch(saxpy_out, N, inputs=[kl.zeros(N), kl.zeros(N), kl.zeros(N), 1.0],
              adjoint=True, adj_inputs=[kl.zeros(N), kl.zeros(N), kl.zeros(N), 0.0])
    errors, results = [], {}

    def work(t):
        try:
            x, y, z = (kl.array(v) for v in values(seed=10 + t))
            gz = np.full(N, t + 1, np.float32)
            ax, ay, az = kl.zeros(N), kl.zeros(N), kl.array(gz)
            for _ in range(200):
                kl.launch(saxpy_out, N, inputs=[x, y, z, float(t)], adjoint=True,
                          adj_inputs=[ax, ay, az, 0.0])
            results[t] = (ax.numpy(), ay.numpy(), gz)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t, (ax, ay, gz) in results.items():
        np.testing.assert_allclose(ax, 200 * t * gz.astype(np.float64), rtol=1e-5)
        np.testing.assert_allclose(ay, 200 * gz.astype(np.float64), rtol=1e-5)



def test_a_bounds_check_option_changed_after_the_short_paths_were_made_is_honoured():
    """kernel.options counts its changes in config.changes: both short paths are remade
    for the new option, and again when it is removed."""
    x, y = kl.array(np.arange(N + 1, dtype=np.float32)), kl.zeros(N)
    gx, gy = kl.zeros(N + 1), kl.ones(N)
    for _ in range(3):
        kl.launch(shifted, N, inputs=[x, y])
        kl.launch(shifted, N, inputs=[x, y], adjoint=True, adj_inputs=[gx, gy])
    first, first_adjoint = shifted._quick, shifted._quick_adjoint
    assert first.state[3] is launch_mod._Quick and first_adjoint.state[3] is launch_mod._Quick
    shifted.options["bounds_check"] = False
    try:
        for _ in range(2):
            kl.launch(shifted, N, inputs=[x, y])
            kl.launch(shifted, N, inputs=[x, y], adjoint=True, adj_inputs=[gx, gy])
        assert shifted._quick.state[3] is False and shifted._quick_adjoint.state[3] is False
        np.testing.assert_array_equal(y.numpy(), np.arange(1, N + 1, dtype=np.float32))
        want = np.r_[0.0, 5.0 * np.ones(N)].astype(np.float32)  # 5 adjoints of gy = 1
        np.testing.assert_array_equal(gx.numpy(), want)
    finally:
        del shifted.options["bounds_check"]
    with pytest.raises(IndexError):
        kl.launch(shifted, N, inputs=[kl.zeros(N), y])
    with pytest.raises(IndexError):
        kl.launch(shifted, N, inputs=[kl.zeros(N), y], adjoint=True,
                  adj_inputs=[kl.zeros(N), kl.ones(N)])
    assert shifted._quick is None or shifted._quick.state[3] is launch_mod._Quick


def test_a_kernel_with_loops_gives_its_adjoints_to_the_general_path_once_and_for_all():
    rng = np.random.default_rng(8)
    ms = rng.uniform(-1, 1, (50, 7)).astype(np.float32)
    m, out = kl.array(ms), kl.zeros(50)
    gm, gout = kl.zeros((50, 7)), kl.ones(50)
    for _ in range(3):
        kl.launch(row_sums, 50, inputs=[m, out], adjoint=True, adj_inputs=[gm, gout])
    assert row_sums._quick_adjoint is False
    np.testing.assert_allclose(gm.numpy(), 3 * 2 * ms.astype(np.float64), rtol=1e-6)
