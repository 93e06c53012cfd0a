"""In-place updates whose adjoint needs the overwritten values: under a kl.Tape the tape copies
what a launch is about to overwrite (autodiff/inplace.py, runtime/tape.py), and gradients are
exact. Expected values come from float64 finite differences of NumPy re-implementations of
the same recurrences, from the out-of-place version of the same program, or by hand."""
import numpy as np
import pytest

import kernlab as kl
from kernlab.runtime import storage

# ---- notebook 07's thrown ball, stepped in place and out of place ---------------------------

K_DRAG, DT, STEPS = 0.02, 0.01, 60


@kl.kernel
def ball_step_in_place(p: kl.array(dtype=kl.vec2), v: kl.array(dtype=kl.vec2), k_drag: float,
                       dt: float):
    i = kl.tid()
    vi = v[i]
    a = kl.vec2(0.0, -9.81) - k_drag * kl.length(vi) * vi
    v[i] = vi + a * dt            # nonlinear in the old v: the tape keeps v
    p[i] = p[i] + v[i] * dt       # linear in the old p (nothing kept); reads the new v


@kl.kernel
def ball_step(p: kl.array(dtype=kl.vec2), v: kl.array(dtype=kl.vec2), k_drag: float,
              dt: float, p_new: kl.array(dtype=kl.vec2), v_new: kl.array(dtype=kl.vec2)):
    i = kl.tid()
    vi = v[i]
    a = kl.vec2(0.0, -9.81) - k_drag * kl.length(vi) * vi
    v_new[i] = vi + a * dt
    p_new[i] = p[i] + v_new[i] * dt


@kl.kernel
def miss(p: kl.array(dtype=kl.vec2), target: kl.vec2, loss: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(loss, 0, kl.length_sq(p[i] - target))


V0 = np.array([[20.0, 10.0], [15.0, 14.0], [25.0, 6.0]])
TARGET = (40.0, 5.0)


def ball_in_place(v0, p0):
    p = kl.array(p0, dtype=kl.vec2, requires_grad=True)
    v = kl.array(v0, dtype=kl.vec2, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(STEPS):
            kl.launch(ball_step_in_place, len(v0), inputs=[p, v, K_DRAG, DT])
        kl.launch(miss, len(v0), inputs=[p, TARGET, loss])
    memory = tape.memory()
    tape.backward(loss)
    return loss.numpy()[0], p.grad.numpy(), v.grad.numpy(), memory


def ball_out_of_place(v0, p0):
    ps = [kl.array(p0, dtype=kl.vec2, requires_grad=True)]
    vs = [kl.array(v0, dtype=kl.vec2, requires_grad=True)]
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(STEPS):
            ps.append(kl.zeros(len(v0), dtype=kl.vec2, requires_grad=True))
            vs.append(kl.zeros(len(v0), dtype=kl.vec2, requires_grad=True))
            kl.launch(ball_step, len(v0), inputs=[ps[-2], vs[-2], K_DRAG, DT],
                      outputs=[ps[-1], vs[-1]])
        kl.launch(miss, len(v0), inputs=[ps[-1], TARGET, loss])
    assert tape.memory().snapshots == 0  # nothing is overwritten: nothing kept
    tape.backward(loss)
    return loss.numpy()[0], ps[0].grad.numpy(), vs[0].grad.numpy()


def ball_loss_f64(v0, p0):
    p, v = p0.astype(np.float64), v0.astype(np.float64)
    for _ in range(STEPS):
        a = np.array([0.0, -9.81]) - K_DRAG * np.linalg.norm(v, axis=1, keepdims=True) * v
        v = v + a * DT
        p = p + v * DT
    return float(np.sum((p - np.array(TARGET)) ** 2))


def central_differences(f, x, h):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        grad[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


def test_the_ball_stepped_in_place_has_the_out_of_place_gradients(backend):
    p0 = np.zeros_like(V0)
    loss, gp, gv, memory = ball_in_place(V0, p0)
    loss2, gp2, gv2 = ball_out_of_place(V0, p0)
    assert loss == loss2
    np.testing.assert_allclose(gv, gv2, rtol=2e-6, atol=1e-6)  # float32 round-off
    np.testing.assert_allclose(gp, gp2, rtol=2e-6, atol=1e-6)
    # and both are the gradient: float64 finite differences of the same recurrence
    np.testing.assert_allclose(gv, central_differences(lambda v: ball_loss_f64(v, p0), V0,
                                                       1e-4), rtol=2e-3)
    np.testing.assert_allclose(gp, central_differences(lambda p: ball_loss_f64(V0, p), p0,
                                                       1e-4), rtol=2e-3)
    # the tape kept v (3 vec2 = 24 bytes) before each step, and never p (a linear update)
    assert memory == kl.runtime.tape.TapeMemory(STEPS, STEPS * 24)


# ---- float64 programs against finite differences --------------------------------------------

@kl.kernel
def sine_map(x: kl.array(dtype=kl.float64), v: kl.array(dtype=kl.float64), dt: kl.float64):
    i = kl.tid()
    x[i] = kl.sin(x[i]) * x[i] + v[i] * dt
    kl.atomic_add(x, i, 0.5 * x[i] * v[i])   # an atomic add on the thread's own element
    if x[i] > 10.0:                          # a branch on the new value
        x[i] = 10.0


@kl.kernel
def loop_in_place(x: kl.array(dtype=kl.float64), v: kl.array(dtype=kl.float64), n: int):
    i = kl.tid()
    if i < x.shape[0]:                       # launched with spare threads
        for k in range(n):
            x[i] = x[i] + 0.2 * kl.sin(x[i] * x[i] + v[i])
            if k == 1:
                continue
            x[i] = x[i] * x[i] * 0.2 + x[i]


@kl.kernel
def vec_and_grid(p: kl.array(dtype=kl.vec3d, ndim=2), w: kl.array(dtype=kl.float64, ndim=2)):
    i, j = kl.tid()
    p[i, j] = p[i, j] * kl.length(p[i, j]) * w[i, j]
    p[i, j][1] = kl.cos(p[i, j][0])          # a component write after a nonlinear read


@kl.kernel
def reads_after_its_store(x: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64)):
    i = kl.tid()
    x[i] = x[i] * x[i]
    y[i] = y[i] + kl.exp(x[i])               # sees the new x


@kl.kernel
def sum_sq(x: kl.array(dtype=kl.float64), w: kl.array(dtype=kl.float64),
           loss: kl.array(dtype=kl.float64)):
    i = kl.tid()
    kl.atomic_add(loss, 0, w[i] * x[i] * x[i])


def np_sine_map(x, v, dt):
    x = np.sin(x) * x + v * dt
    x = x + 0.5 * x * v
    return np.where(x > 10.0, 10.0, x)


def np_loop(x, v, n):
    for k in range(n):
        x = x + 0.2 * np.sin(x * x + v)
        if k != 1:
            x = x * x * 0.2 + x
    return x


X0 = np.array([0.3, 1.2, -0.5, 0.9])
VV = np.array([0.1, 0.2, -0.3, 0.4])
W = np.array([1.0, -2.0, 0.5, 1.5])


def taped_loss(kernel, x0, extra, steps):
    """Launch kernel(x, *extra) steps times in place, then loss = sum w x^2: the loss and
    the gradients of x (before the first step) and of each array in extra."""
    x = kl.array(x0, dtype=kl.float64, requires_grad=True)
    extra = [kl.array(e, dtype=kl.float64, requires_grad=True) if isinstance(e, np.ndarray)
             else e for e in extra]
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(steps):
            kl.launch(kernel, len(x0) + (3 if kernel is loop_in_place else 0),
                      inputs=[x, *extra])
        kl.launch(sum_sq, len(x0), inputs=[x, kl.array(W, dtype=kl.float64), loss])
    tape.backward(loss)
    grads = [e.grad.numpy() for e in extra if isinstance(e, kl.array)]
    return loss.numpy()[0], x.grad.numpy(), grads, tape


@pytest.mark.parametrize("case", ["sine_map", "loop_in_place"])
def test_many_steps_in_place_match_float64_finite_differences(backend, case):
    steps = 12 if case == "sine_map" else 2  # the loop's map grows fast
    if case == "sine_map":
        kernel, dt = sine_map, 0.1
        extra = [VV, dt]

        def f(x, v):
            for _ in range(steps):
                x = np_sine_map(x, v, dt)
            return float(np.sum(W * x * x))
    else:
        kernel, n = loop_in_place, 3
        extra = [VV, n]

        def f(x, v):
            for _ in range(steps):
                x = np_loop(x, v, n)
            return float(np.sum(W * x * x))
    loss, gx, (gv,), tape = taped_loss(kernel, X0, extra, steps)
    np.testing.assert_allclose(loss, f(X0, VV), rtol=1e-12)
    np.testing.assert_allclose(gx, central_differences(lambda x: f(x, VV), X0, 1e-6),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gv, central_differences(lambda v: f(X0, v), VV, 1e-6),
                               rtol=1e-6, atol=1e-8)
    assert tape.memory() == kl.runtime.tape.TapeMemory(steps, steps * X0.nbytes)


def test_vectors_components_and_2d_launches_in_place(backend):
    rng = np.random.default_rng(3)
    p0, w0 = rng.uniform(0.5, 1.0, (2, 3, 3)), rng.uniform(0.5, 1.0, (2, 3))
    seed = rng.normal(size=(2, 3, 3))

    def f(p, w):
        for _ in range(3):
            p = p * np.linalg.norm(p, axis=-1, keepdims=True) * w[..., None]
            p = p.copy()
            p[..., 1] = np.cos(p[..., 0])
        return float(np.sum(seed * p))

    p = kl.array(p0, dtype=kl.vec3d, requires_grad=True)
    w = kl.array(w0, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(3):
            kl.launch(vec_and_grid, (2, 3), inputs=[p, w])
    tape.backward(grads={p: kl.array(seed, dtype=kl.vec3d)})
    np.testing.assert_allclose(p.grad.numpy(), central_differences(lambda q: f(q, w0), p0,
                                                                   1e-6), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy(), central_differences(lambda q: f(p0, q), w0,
                                                                   1e-6), rtol=1e-6, atol=1e-8)
    assert tape.memory().bytes == 3 * p0.nbytes


def test_a_read_after_the_store_sees_the_new_value(backend):
    y0 = np.array([0.5, -0.5, 1.0, 2.0])

    def f(x, y):
        for _ in range(2):
            x = x * x
            y = y + np.exp(x)
        return float(np.sum(W * x * x) + np.sum(y))

    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    y = kl.array(y0, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(2):
            kl.launch(reads_after_its_store, 4, inputs=[x, y])
        kl.launch(sum_sq, 4, inputs=[x, kl.array(W, dtype=kl.float64), loss])
    tape.backward(grads={loss: kl.ones(1, dtype=kl.float64), y: kl.ones(4, dtype=kl.float64)})
    np.testing.assert_allclose(x.grad.numpy(), central_differences(lambda q: f(q, y0), X0,
                                                                   1e-6), rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), np.ones(4))  # y is updated linearly
    assert tape.memory().snapshots == 2  # x before each launch; y (linear) never


# ---- two kernels stepping two arrays in place (copy on write) -------------------------------

@kl.kernel
def kick(v: kl.array(dtype=kl.float64), x: kl.array(dtype=kl.float64), dt: kl.float64):
    i = kl.tid()
    v[i] = v[i] - kl.sin(x[i]) * dt          # linear in v, needs x


@kl.kernel
def drift(x: kl.array(dtype=kl.float64), v: kl.array(dtype=kl.float64), dt: kl.float64):
    i = kl.tid()
    x[i] = x[i] + v[i] * dt                  # linear in both (dt is a parameter)


def test_a_later_launch_overwriting_what_an_adjoint_needs_is_copied_first(backend):
    steps, dt = 20, 0.05

    def f(x, v):
        for _ in range(steps):
            v = v - np.sin(x) * dt
            x = x + v * dt
        return float(np.sum(W * x * x))

    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    v = kl.array(VV, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(steps):
            kl.launch(kick, 4, inputs=[v, x, dt])
            kl.launch(drift, 4, inputs=[x, v, dt])
        kl.launch(sum_sq, 4, inputs=[x, kl.array(W, dtype=kl.float64), loss])
    # kick's adjoint needs x: each drift copies x first; nothing else is kept
    assert tape.memory() == kl.runtime.tape.TapeMemory(steps, steps * X0.nbytes)
    assert "20 snapshot(s), 640 B" in repr(tape)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), central_differences(lambda q: f(q, VV), X0,
                                                                   1e-6), rtol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), central_differences(lambda q: f(X0, q), VV,
                                                                   1e-6), rtol=1e-6)


# ---- the gradient's meaning: one array, two versions ----------------------------------------

def test_x_grad_is_the_gradient_of_the_values_before_the_launch_as_torch_clone_then_update():
    """y = x; x = x^2 (in place); loss = sum(x) + 3 sum(y). PyTorch's clone-then-update
    (x1 = x0.clone() ** 2) gives d loss / d x0 = 2 x0 + 3: so does x.grad here; the
    gradient of the updated version (1) is consumed on the way, as a store consumes it."""
    @kl.kernel
    def keep(x: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64)):
        i = kl.tid()
        y[i] = x[i] * 3.0

    @kl.kernel
    def square(x: kl.array(dtype=kl.float64)):
        i = kl.tid()
        x[i] = x[i] * x[i]

    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    y = kl.zeros(4, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(keep, 4, inputs=[x, y])
        kl.launch(square, 4, inputs=[x])
    tape.backward(grads={x: kl.ones(4, dtype=kl.float64), y: kl.ones(4, dtype=kl.float64)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * X0 + 3)
    np.testing.assert_allclose(x.numpy(), X0 ** 2)  # the forward result is untouched


def test_a_manual_adjoint_launch_takes_the_values_before_the_launch():
    x = kl.array(X0, dtype=kl.float64)
    before = kl.clone(x)
    kl.launch(sine_map, 4, inputs=[x, kl.array(VV, dtype=kl.float64), 0.1])
    gx, gv = kl.array(W, dtype=kl.float64), kl.zeros(4, dtype=kl.float64)
    kl.launch(sine_map, 4, inputs=[before, kl.array(VV, dtype=kl.float64), 0.1],
              adj_inputs=[gx, gv, 0.0], adjoint=True)
    fd = central_differences(lambda q: float(W @ np_sine_map(q, VV, 0.1)), X0, 1e-6)
    np.testing.assert_allclose(gx.numpy(), fd, rtol=1e-6)



def test_a_manual_adjoint_launch_on_the_overwritten_array_is_refused():
    """Warp's silent error: the adjoint launched by hand on the array the forward launch
    overwrote would differentiate at the new values. Refused, naming the line; a write since
    (the values restored) lifts it."""
    x = kl.array(X0, dtype=kl.float64)
    v = kl.array(VV, dtype=kl.float64)
    kl.launch(sine_map, 4, inputs=[x, v, 0.1])
    gx, gv = kl.array(W, dtype=kl.float64), kl.zeros(4, dtype=kl.float64)
    with pytest.raises(kl.GradientError, match="holds what the forward launch wrote") as err:
        kl.launch(sine_map, 4, inputs=[x, v, 0.1], adj_inputs=[gx, gv, 0.0], adjoint=True)
    assert err.value.kernel == "sine_map" and err.value.loc is not None
    x.assign(kl.array(X0, dtype=kl.float64))  # the values before the launch, restored
    kl.launch(sine_map, 4, inputs=[x, v, 0.1], adj_inputs=[gx, gv, 0.0], adjoint=True)
    fd = central_differences(lambda q: float(W @ np_sine_map(q, VV, 0.1)), X0, 1e-6)
    np.testing.assert_allclose(gx.numpy(), fd, rtol=1e-6)

# ---- memory, copies and what stays refused ----------------------------------------------------

def test_no_copy_is_made_outside_a_tape_or_for_linear_updates(monkeypatch):
    copies = []
    real = storage.transfer
    monkeypatch.setattr(storage, "transfer", lambda *a, **k: copies.append(1) or real(*a, **k))
    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    v = kl.array(VV, dtype=kl.float64, requires_grad=True)
    for _ in range(3):
        kl.launch(sine_map, 4, inputs=[x, v, 0.1])
    assert copies == []
    np.testing.assert_allclose(x.numpy(), np_sine_map(np_sine_map(np_sine_map(X0, VV, 0.1),
                                                                  VV, 0.1), VV, 0.1))
    with kl.Tape() as tape:
        kl.launch(drift, 4, inputs=[x, v, 0.1])                  # linear: nothing to keep
        kl.launch(sine_map, 4, inputs=[x, v, 0.1], record_tape=False)  # not recorded
    assert copies == [] and tape.memory() == kl.runtime.tape.TapeMemory(0, 0)
    with tape:
        kl.launch(sine_map, 4, inputs=[x, v, 0.1])
    assert len(copies) == 1 and tape.memory().bytes == X0.nbytes
    tape.reset()
    assert tape.memory().snapshots == 0


@kl.kernel
def squares_the_neighbour(x: kl.array(dtype=kl.float64)):
    i = kl.tid()
    j = (i + 1) % x.shape[0]
    x[j] = kl.sin(x[j])


@kl.kernel
def uses_an_atomics_result(x: kl.array(dtype=kl.float64), v: kl.array(dtype=kl.float64)):
    i = kl.tid()
    old = kl.atomic_add(x, i, v[i])
    x[i] = old * old


@kl.kernel
def takes_a_max_in_place(x: kl.array(dtype=kl.float64), v: kl.array(dtype=kl.float64)):
    i = kl.tid()
    x[i] = kl.sin(x[i])
    kl.atomic_max(x, i, v[i])


@pytest.mark.parametrize("kernel,words", [
    (squares_the_neighbour, ["x[j] = kl.sin(x[j])", "own element"]),
    (uses_an_atomics_result, ["atomic_add"]),
    (takes_a_max_in_place, ["atomic_max"])])
def test_overwrites_a_copy_cannot_fix_keep_the_clear_error(backend, kernel, words):
    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    inputs = [x] if kernel is squares_the_neighbour else [x, kl.array(VV, dtype=kl.float64)]
    with kl.Tape() as tape:
        kl.launch(kernel, 4, inputs=inputs)
    with pytest.raises(kl.GradientError) as info:
        tape.backward(grads={x: kl.ones(4, dtype=kl.float64)})
    assert info.value.kernel == kernel.key
    for w in words[1:]:
        assert w in str(info.value)
    if kernel is squares_the_neighbour:
        import inspect
        src, first = inspect.getsourcelines(kernel.pyfunc)
        assert info.value.lineno == first + next(k for k, s in enumerate(src) if words[0] in s)


def test_filling_an_array_an_adjoint_needs_is_still_refused():
    """Only recorded launches are copied for: x.fill_ after the launch is refused."""
    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(sum_sq, 4, inputs=[x, kl.array(W, dtype=kl.float64), loss])
    x.fill_(1.0)
    with pytest.raises(kl.GradientError, match="'x' was modified after kernel 'sum_sq'"):
        tape.backward(loss)


def test_hvp_of_a_tape_with_in_place_copies(backend):
    """H·u through sine_map (store, atomic add on the own element, branch on the new
    value), with respect to x before the launch: float64 central differences of NumPy's
    loss twice (Σ w sine_map(x)²; the map is elementwise, so H is diagonal)."""
    def loss_of(x0):
        return float(W @ np_sine_map(x0, VV, 0.1) ** 2)

    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(sine_map, 4, inputs=[x, kl.array(VV, dtype=kl.float64), 0.1])
        kl.launch(sum_sq, 4, inputs=[x, kl.array(W, dtype=kl.float64), loss])
    u = np.array([1.0, -0.5, 2.0, 0.25])
    hv = tape.hvp(loss, {x: u})[x].numpy()
    h = 1e-4
    d2 = (np.array([loss_of(X0 + h * e) for e in np.eye(4)]) - 2 * loss_of(X0)
          + np.array([loss_of(X0 - h * e) for e in np.eye(4)])) / h ** 2
    np.testing.assert_allclose(hv, d2 * u, rtol=1e-5)


def test_the_lab_tape_view_shows_the_copies_and_steps_backward_on_them():
    pytest.importorskip("ipywidgets")
    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    v = kl.array(VV, dtype=kl.float64, requires_grad=True)
    loss = kl.zeros(1, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(2):
            kl.launch(sine_map, 4, inputs=[x, v, 0.1])
        kl.launch(sum_sq, 4, inputs=[x, kl.array(W, dtype=kl.float64), loss])
    view = kl.lab.tape(tape, loss=loss)
    assert repr(view).endswith("keeps 2 snapshot(s), 64 B>")
    view.position = 3  # every record reversed, on the view's own copies
    f = lambda q: float(np.sum(W * np_sine_map(np_sine_map(q, VV, 0.1), VV, 0.1) ** 2))
    np.testing.assert_allclose(view.grads["x"], central_differences(f, X0, 1e-6), rtol=1e-6)


def test_the_saved_tape_rendering_names_the_copies_too():
    """The tape's memory figure is in every form of its display: the widget's repr, the
    TapeGraph, and the tape payload the JupyterLab extension draws (its title)."""
    pytest.importorskip("ipywidgets")
    from kernlab.notebook.display import TapeGraph
    from kernlab.notebook.mime import TAPE_MIME
    x = kl.array(X0, dtype=kl.float64, requires_grad=True)
    v = kl.array(VV, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(3):
            kl.launch(sine_map, 4, inputs=[x, v, 0.1])
    # three launches each copy x (4 float64s) before overwriting it: 3 copies of 32 bytes
    for shown in (repr(kl.lab.tape(tape)), repr(TapeGraph(tape)),
                  TapeGraph(tape)._repr_mimebundle_()[TAPE_MIME]["title"]):
        assert shown.endswith("keeps 3 snapshot(s), 96 B>"), shown
