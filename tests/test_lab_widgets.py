"""kl.lab widgets: model state, values before and after backward, the stepper's state, reprs.

Expected numbers come from NumPy and calculus, never from kernlab.
"""
import html
import inspect
import os
import re
import sys

import numpy as np
import pytest

widgets = pytest.importorskip("ipywidgets")
pytest.importorskip("pygments")

import kernlab as kl  # noqa: E402
from kernlab.notebook import display as kl_display  # noqa: E402
from kernlab.notebook.mime import VIEW_MIME  # noqa: E402


@kl.kernel
def power(x: kl.array(dtype=float), y: kl.array(dtype=float), n: int):
    i = kl.tid()
    v = 1.0
    for _ in range(n):
        v = v * x[i]
    y[i] = kl.sin(v)


@kl.kernel
def square_sum(y: kl.array(dtype=float), loss: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(loss, 0, y[i] * y[i])


@kl.kernel
def halve_until(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    v = x[i]
    k = 0
    while v > 1.0:
        v = v * 0.5
        k = k + 1
    y[i] = v * float(k)


@kl.kernel
def double2d(x: kl.array(dtype=float, ndim=2), y: kl.array(dtype=float, ndim=2)):
    i, j = kl.tid()
    y[i, j] = 2.0 * x[i, j]


@kl.func
def cube(v: float):
    return v * v * v


@kl.kernel
def in_place(x: kl.array(dtype=float)):
    i = kl.tid()
    j = (i + 1) % x.shape[0]  # another thread's element: no tape copy can make it exact
    x[j] = x[j] * x[j]


@kl.kernel
def apply_cube(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = cube(x[i])


X = np.array([0.5, 1.0, 1.5, 2.0], np.float32)


@pytest.fixture(autouse=True)
def interp(monkeypatch):
    monkeypatch.setattr(kl.config, "cpu_backend", "interp")


@pytest.fixture(autouse=True)
def close_live_views():
    """Views refresh on every backward until closed: close each test's views after it."""
    yield
    from kernlab.notebook import live
    for view in live.live_views():
        view.close()


def text_of(markup):
    """What an HTML fragment reads as (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def numbers_in(markup):
    """The numbers an HTML fragment shows, cell by cell."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", markup))
    return [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)]


def line_of(kernel, text):
    lines, first = inspect.getsourcelines(kernel.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


def ir_lines_from(kernel, line, adjoint=False, tangent=False):
    """Listing lines whose '# file:line' comment names ``line`` (read off the text)."""
    tag = f"{os.path.basename(kernel.pyfunc.__code__.co_filename)}:{line}"
    text = kl.source(kernel, "ir", adjoint=adjoint, tangent=tangent)
    return [k + 1 for k, ln in enumerate(text.splitlines()) if ln.rstrip().endswith(tag)]


def analytic_power_grad(x, n=3):
    x = x.astype(np.float64)
    return n * x ** (n - 1) * np.cos(x ** n)


def record(x, y, loss):
    tape = kl.Tape()
    with tape:
        kl.launch(power, 4, inputs=[x, y, 3])
        kl.launch(square_sum, 4, inputs=[y, loss])
    return tape


def arrays():
    x = kl.array(X, requires_grad=True)
    y = kl.zeros(4, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    return x, y, loss


def assert_deterministic_repr(view, again, pattern):
    text = repr(view)
    assert re.fullmatch(pattern, text), text
    assert repr(again) == text
    assert "0x" not in text and "model" not in text
    bundle, metadata = view._repr_mimebundle_()
    assert bundle["text/plain"].splitlines()[0] == text  # inspect's adds its IR listings
    assert "<" in bundle["text/html"]
    # no widget view in the saved output: it would show "model not found" once reopened
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert bundle[VIEW_MIME]["version"] == 1
    assert metadata == {VIEW_MIME: {"model_id": view.model_id}}
    assert again._repr_mimebundle_()[0] == bundle  # what nbval compares is deterministic


# ---- inspect ----------------------------------------------------------------------------------

def test_inspect_lays_out_source_tabs_and_controls():
    view = kl.lab.inspect(power)
    top, source, tabs = view.children  # the source above the tabs: listings get the width
    assert isinstance(top, widgets.Dropdown)
    assert isinstance(source, widgets.HTML)
    assert isinstance(tabs, widgets.Tab)
    assert tuple(tabs.titles) == ("IR", "LLVM IR", "CUDA C", "PTX")
    assert "v = v * x[i]" in text_of(source.value)


def test_selecting_a_user_line_highlights_the_lines_generated_from_it():
    view = kl.lab.inspect(power)
    line = line_of(power, "v = v * x[i]")
    view.select(line)
    expected = ir_lines_from(power, line)
    assert expected and view.highlighted("ir") == expected
    assert kl_display.HIGHLIGHT_COLOR in view.panes["ir"].value
    assert view.highlighted("ir", adjoint=True) == ir_lines_from(power, line, adjoint=True)
    tangent = ir_lines_from(power, line, tangent=True)
    assert tangent and view.highlighted("ir", tangent=True) == tangent
    view.select(None)
    assert view.highlighted("ir") == []
    assert kl_display.HIGHLIGHT_COLOR not in view.panes["ir"].value


def test_inspect_shows_forward_adjoint_and_tangent_side_by_side():
    view = kl.lab.inspect(power)
    pane = text_of(view.panes["ir"].value)
    assert pane.index("forward") < pane.index("kernel power(") < pane.index("adjoint") \
        < pane.index("adjoint kernel power(") < pane.index("tangent") \
        < pane.index("tangent kernel power(")
    assert "repeat(3, minmax(0, 1fr))" in view.panes["ir"].value  # three columns
    assert "white-space: pre;" in view.panes["ir"].value  # comments never wrap
    # the tangent of sin(v) is cos(v) times v's tangent: the column holds that listing
    assert "%tan_x" in pane and "cos(" in pane.split("tangent kernel power(")[1]


def test_inspect_static_and_plain_forms_carry_the_tangent_listing():
    view = kl.lab.inspect(power, targets=("ir",))
    page = text_of(view._repr_html_())
    assert page.index("forward") < page.index("adjoint kernel power(") \
        < page.index("tangent kernel power(")
    bundle, _ = view._repr_mimebundle_()
    plain = bundle["text/plain"]
    assert plain.startswith("<kernlab inspect: kernel 'power' (3 listings)>")
    assert plain.index("--- IR ---") < plain.index("--- IR (adjoint) ---") \
        < plain.index("--- IR (tangent) ---") < plain.index("tangent kernel power(")
    assert repr(view) == "<kernlab inspect: kernel 'power' (3 listings)>"


def test_inspect_keeps_only_the_listings_asked_for():
    view = kl.lab.inspect(power, targets=("ir", "cuda"), listings=("adjoint", "forward"))
    assert repr(view) == "<kernlab inspect: kernel 'power' (4 listings)>"  # 2 targets x 2
    assert "repeat(2, minmax(0, 1fr))" in view.panes["ir"].value  # two columns
    page = text_of(view._repr_html_())
    assert "adjoint kernel power(" in page and "tangent kernel power(" not in page
    assert page.index("forward") < page.index("adjoint kernel power(")  # the tabs' order
    plain = view._repr_mimebundle_()[0]["text/plain"]
    assert "--- IR (adjoint) ---" in plain and "(tangent)" not in plain
    payload = view._repr_mimebundle_()[0]["application/vnd.kernlab.source+json"]
    assert sorted((x["target"], x["adjoint"], x["tangent"]) for x in payload["listings"]) == \
        [("cuda", False, False), ("cuda", True, False), ("ir", False, False), ("ir", True, False)]
    with pytest.raises(ValueError, match="listings must be some of forward, adjoint, tangent"):
        kl.lab.inspect(power, listings=("reverse",))


def test_inspect_of_a_kernel_without_adjoint_shows_forward_and_the_reason():
    view = kl.lab.inspect(in_place)
    pane = text_of(view.panes["ir"].value)
    assert "kernel in_place(" in pane
    assert "GradientError" in pane and "x[j] = x[j] * x[j]" in pane  # the reason at its line
    assert "adjoint kernel" not in pane


def test_line_dropdown_offers_the_kernel_lines_that_generate_code():
    view = kl.lab.inspect(power)
    values = [v for _, v in view.line_select.options]
    assert None in values
    assert (os.path.basename(__file__), line_of(power, "y[i] = kl.sin(v)")) in values


def test_lines_of_an_inlined_func_link_to_the_listing():
    view = kl.lab.inspect(apply_cube)
    origin = (os.path.basename(__file__), line_of(cube, "return v * v * v"))
    assert origin in [v for _, v in view.line_select.options]
    view.select(origin[1])
    assert view.highlighted("ir") == ir_lines_from(apply_cube, origin[1])
    assert view.highlighted("ir")


def test_listing_that_fails_shows_its_error_in_its_tab(monkeypatch):
    kernel_module = sys.modules["kernlab.kernel"]
    real = kernel_module.source

    def fake(k, target="ir", adjoint=False, tangent=False):
        if target == "llvm":
            raise RuntimeError("LLVM is being rebuilt")
        if target in ("cuda", "ptx"):
            raise ImportError("no module named cuda")
        return real(k, target, adjoint, tangent=tangent)

    monkeypatch.setattr(kernel_module, "source", fake)
    view = kl.lab.inspect(power)
    assert "RuntimeError: LLVM is being rebuilt" in view.panes["llvm"].value
    assert "not available:" in view.panes["cuda"].value
    assert "not available:" in view.panes["ptx"].value
    assert repr(view) == "<kernlab inspect: kernel 'power' (3 listings)>"  # IR: 3 kinds


def test_cuda_listing_lines_link_back_when_the_backend_exists():
    view = kl.lab.inspect(power)
    listing = view.listings[("cuda", "forward")]
    if not listing.ok:
        assert listing.error.startswith("not available:")
        return
    view.select(line_of(power, "v = v * x[i]"))
    marked = view.highlighted("cuda")
    assert marked and all(listing.text.splitlines()[k - 1].strip() for k in marked)


def test_inspect_repr_is_short_and_deterministic():
    assert_deterministic_repr(kl.lab.inspect(power), kl.lab.inspect(power),
                              r"<kernlab inspect: kernel 'power' \(\d+ listings\)>")
    assert "<details>" in kl.lab.inspect(power)._repr_html_()


# ---- grads ------------------------------------------------------------------------------------

def test_grads_shows_small_arrays_as_tables_and_updates_in_place_after_backward():
    x, y, loss = arrays()
    view = kl.lab.grads(x=x, loss=loss)
    children = list(view.children)
    title, table = view.panels["x"]
    assert isinstance(table, widgets.HTML) and "index" in table.value
    assert np.all(view.data()["x"][1] == 0)
    tape = record(x, y, loss)
    tape.backward(loss=loss)
    assert view.refreshes == 1
    assert list(view.children) == children and view.panels["x"][1] is table  # in place
    xs = X.astype(np.float64)
    expected = 2 * np.sin(xs ** 3) * analytic_power_grad(X)
    np.testing.assert_allclose(view.data()["x"][1], expected, rtol=1e-5)
    shown = np.array(numbers_in(table.value)).reshape(4, 3)  # index, value, grad
    np.testing.assert_allclose(shown[:, 2], expected, rtol=1e-5)
    assert numbers_in(title.value)[-1] == pytest.approx(np.linalg.norm(expected), rel=1e-5)


def test_grads_plots_large_arrays_and_redraws_after_backward():
    x = kl.array(np.linspace(0.1, 1.0, 300), dtype=float, requires_grad=True)
    y = kl.zeros(300, requires_grad=True)
    view = kl.lab.grads(x=x)
    image = view.panels["x"][1]
    assert isinstance(image, widgets.Image)
    before = bytes(image.value)
    assert before.startswith(b"\x89PNG")
    with kl.Tape() as tape:
        kl.launch(power, 300, inputs=[x, y, 3])
    tape.backward(grads={y: kl.ones(300)})
    assert view.panels["x"][1] is image and bytes(image.value) != before
    assert "data:image/png;base64," in view._repr_html_()


def test_grads_takes_notebook_names_for_positional_arrays():
    InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell
    x, _, _ = arrays()
    InteractiveShell.instance().user_ns["xs_for_grads"] = x
    view = kl.lab.grads(x)
    assert list(view.arrays) == ["xs_for_grads"]


def test_closed_grads_view_is_not_refreshed():
    x, y, loss = arrays()
    view = kl.lab.grads(x=x)
    view.close()
    record(x, y, loss).backward(loss=loss)
    assert view.refreshes == 0


def test_a_failing_view_warns_but_backward_completes(monkeypatch):
    x, y, loss = arrays()
    view = kl.lab.grads(x=x)

    def broken():
        raise RuntimeError("display gone")

    monkeypatch.setattr(view, "refresh", broken)
    tape = record(x, y, loss)
    with pytest.warns(UserWarning, match="display gone"):
        tape.backward(loss=loss)
    assert np.any(x.grad.numpy() != 0)
    view.close()


def test_grads_repr_is_deterministic():
    x, _, loss = arrays()
    assert_deterministic_repr(kl.lab.grads(x=x, loss=loss), kl.lab.grads(x=x, loss=loss),
                              r"<kernlab grads: x \(4,\) float32, loss \(1,\) float32>")


# ---- tape -------------------------------------------------------------------------------------

def test_tape_lists_records_with_the_arrays_they_read_and_write():
    x, y, loss = arrays()
    view = kl.lab.tape(record(x, y, loss), loss=loss, x=x, y=y)
    recs = view.model.records
    assert [r.label for r in recs] == ["power dim=4", "square_sum dim=4"]
    assert (recs[0].reads, recs[0].writes) == (["x"], ["y"])
    assert (recs[1].reads, recs[1].writes) == (["y"], ["loss"])
    svg = view.graph.value
    assert svg.startswith("<svg") and "#0 power" in svg and "#1 square_sum" in svg
    assert [v for _, v in view.record_select.options] == [0, 1]


def test_selecting_a_record_shows_its_adjoint_listing():
    x, y, loss = arrays()
    view = kl.lab.tape(record(x, y, loss), loss=loss)
    view.selected = 0
    assert "adjoint kernel power(" in text_of(view.record_view.value)
    view.selected = 1
    assert "adjoint kernel square_sum(" in text_of(view.record_view.value)


def test_stepping_backward_shows_gradients_record_by_record():
    x, y, loss = arrays()
    tape = record(x, y, loss)
    view = kl.lab.tape(tape, loss=loss, x=x, y=y)
    ys = np.sin(X.astype(np.float64) ** 3)
    assert view.norms == {"x": 0.0, "y": 0.0, "loss": 1.0}
    view.step_backward()  # reverses square_sum: d loss / d y = 2 y
    assert view.selected == 1
    np.testing.assert_allclose(view.grads["y"], 2 * ys, rtol=1e-5)
    assert not np.any(view.grads["x"])
    view.back_button.click()  # reverses power
    assert view.position == 2 and view.selected == 0
    np.testing.assert_allclose(view.grads["x"], 2 * ys * analytic_power_grad(X), rtol=1e-5)
    view.undo_button.click()
    assert view.position == 1 and not np.any(view.grads["x"])
    view.reset_button.click()
    assert view.position == 0


def test_stepping_runs_on_copies_and_leaves_the_real_gradients_alone():
    x, y, loss = arrays()
    tape = record(x, y, loss)
    tape.backward(loss=loss)
    real = x.grad.numpy().copy()
    view = kl.lab.tape(tape, loss=loss, x=x)
    view.position = 2
    np.testing.assert_allclose(view.grads["x"], real, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.numpy(), real)
    assert view.model.grad_norms()["x"] == pytest.approx(float(np.linalg.norm(real)))


def test_default_seed_is_the_array_nothing_later_reads():
    x, y, loss = arrays()
    view = kl.lab.tape(record(x, y, loss))
    assert list(view.replay.seeds) == ["loss"]


def test_tape_view_shows_array_ops_and_steps_through_them():
    x, y, loss = arrays()
    with kl.Tape() as tape:
        kl.launch(power, 4, inputs=[x, y, 3])
        z = kl.clone(y)
        kl.launch(square_sum, 4, inputs=[z, loss])
    view = kl.lab.tape(tape, loss=loss, x=x, y=y, z=z)
    assert [r.kind for r in view.model.records] == ["launch", "clone", "launch"]
    assert (view.model.records[1].reads, view.model.records[1].writes) == (["y"], ["z"])
    view.position = 2  # square_sum and the clone reversed: the gradient reached y
    ys = np.sin(X.astype(np.float64) ** 3)
    np.testing.assert_allclose(view.grads["y"], 2 * ys, rtol=1e-5)
    assert "clone y → z" in view.record_view.value


def test_tape_view_refreshes_real_norms_after_backward():
    x, y, loss = arrays()
    tape = record(x, y, loss)
    view = kl.lab.tape(tape, loss=loss, x=x)
    assert "|grad| 1" not in view.graph.value  # no backward yet: every gradient is 0
    tape.backward(loss=loss)
    assert "|grad| 1" in view.graph.value  # the seeded loss
    norm = np.linalg.norm(2 * np.sin(X.astype(np.float64) ** 3) * analytic_power_grad(X))
    assert any(v == pytest.approx(norm, rel=1e-5) for v in numbers_in(view.grads_view.value))
    view.close()


def test_tape_repr_is_deterministic():
    x, y, loss = arrays()
    tape = record(x, y, loss)
    assert_deterministic_repr(kl.lab.tape(tape, loss=loss), kl.lab.tape(tape, loss=loss),
                              r"<kernlab tape: 2 launches, 0 array ops, 3 arrays>")


# ---- step -------------------------------------------------------------------------------------

def steps_at(view, text, section):
    line = line_of(view.kernel, text)
    return [s for s in view.steps if s.line == line and s.section == section]


def test_stepper_state_after_n_steps():
    x = kl.array(X)
    view = kl.lab.step(power, 4, [x, kl.zeros(4), 3], tid=2)
    assert view.position == 0
    view.next()
    view.next()  # the parameters, i = tid(), then v = 1.0
    assert view.position == 2
    assert view.step.line == line_of(power, "v = 1.0")
    assert view.current["i"] == 2 and view.current["v"] == 1.0
    view.next_button.click()
    view.next_button.click()
    view.next_button.click()  # the for line, the loop's setup, then the first iteration
    assert view.step.line == line_of(power, "v = v * x[i]")
    assert view.step.iteration == (0,)
    assert view.current["v"] == pytest.approx(1.5)
    view.prev_button.click()
    assert view.position == 4
    view.reset_button.click()
    assert view.position == 0 and view.slider.value == 0
    view.slider.value = 5
    assert view.current["v"] == pytest.approx(1.5)


def test_stepper_forward_replay_follows_the_loop_iterations():
    view = kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], tid=2)
    forward = steps_at(view, "v = v * x[i]", "forward")
    assert [s.iteration for s in forward] == [(0,), (1,), (2,)]
    np.testing.assert_allclose([s.values["v"] for s in forward], [1.5, 1.5 ** 2, 1.5 ** 3],
                               rtol=1e-6)
    sections = [s.section for s in view.steps]
    assert sections == sorted(sections)  # every forward step before every reverse step


def test_stepper_reverse_sweep_shows_adjoints_line_by_line():
    view = kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], tid=2)
    xv = 1.5
    (at_sin,) = steps_at(view, "y[i] = kl.sin(v)", "reverse")
    assert at_sin.values["adj_v"] == pytest.approx(np.cos(xv ** 3), rel=1e-5)
    reverse = steps_at(view, "v = v * x[i]", "reverse")
    assert [s.iteration for s in reverse] == [(2,), (1,), (0,)]
    assert all(s.loops[0].reverse for s in reverse)
    np.testing.assert_allclose([s.values["adj_v"] for s in reverse],
                               [np.cos(xv ** 3) * xv ** k for k in (1, 2, 3)], rtol=1e-5)
    adj_x = [s.arrays["adj_x"][2] for s in reverse]
    np.testing.assert_allclose(adj_x, [np.cos(xv ** 3) * xv ** 2 * k for k in (1, 2, 3)],
                               rtol=1e-5)
    view.position = len(view.steps) - 1
    assert view.arrays["adj_x"][2] == pytest.approx(analytic_power_grad(X)[2], rel=1e-5)
    assert not np.any(np.delete(view.arrays["adj_x"], 2))  # one thread touched only x[2]


def test_stepper_seeds_are_configurable():
    view = kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], tid=2,
                       seeds={"y": np.array([0.0, 0.0, 2.0, 0.0])})
    (at_sin,) = steps_at(view, "y[i] = kl.sin(v)", "reverse")
    assert at_sin.values["adj_v"] == pytest.approx(2 * np.cos(1.5 ** 3), rel=1e-5)
    with pytest.raises(ValueError, match="seeds name no parameter"):
        kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], seeds={"q": 1.0})


def test_stepper_works_on_copies():
    x, y = kl.array(X, requires_grad=True), kl.zeros(4, requires_grad=True)
    kl.lab.step(power, 4, [x, y, 3], tid=1)
    np.testing.assert_array_equal(y.numpy(), 0)
    np.testing.assert_array_equal(x.grad.numpy(), 0)


def test_stepper_counts_while_loop_iterations():
    x = kl.array(np.array([5.0], np.float32))
    view = kl.lab.step(halve_until, 1, [x, kl.zeros(1)], tid=0)
    forward = steps_at(view, "v = v * 0.5", "forward")
    assert [s.iteration for s in forward] == [(0,), (1,), (2,)]
    np.testing.assert_allclose([s.values["v"] for s in forward], [2.5, 1.25, 0.625])
    reverse = steps_at(view, "v = v * 0.5", "reverse")
    assert [(s.iteration, s.phase) for s in reverse] == [
        ((2,), "replay"), ((2,), "adjoint"), ((1,), "replay"), ((1,), "adjoint"),
        ((0,), "replay"), ((0,), "adjoint")]
    np.testing.assert_allclose([s.values["adj_v"] for s in reverse if s.phase == "adjoint"],
                               [1.5, 0.75, 0.375])  # d y / d v_k = k_final * 0.5^(3 - k)
    view.position = len(view.steps) - 1
    assert view.arrays["adj_x"][0] == pytest.approx(3 * 0.5 ** 3)  # y = 3 x / 8


def test_stepper_steps_into_an_inlined_func():
    view = kl.lab.step(apply_cube, 4, [kl.array(X), kl.zeros(4)], tid=3)
    line = line_of(cube, "return v * v * v")
    inside = [s for s in view.steps if s.line == line]
    assert {s.section for s in inside} == {"forward", "reverse"}
    view.position = view.steps.index(inside[0])
    assert "return v * v * v" in text_of(view.source_view.value)
    view.position = len(view.steps) - 1
    assert view.arrays["adj_x"][3] == pytest.approx(3 * 2.0 ** 2)


def test_stepper_takes_a_2d_thread_index():
    x = kl.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    view = kl.lab.step(double2d, (2, 3), [x, kl.zeros((2, 3))], tid=(1, 2))
    view.position = len(view.steps) - 1
    assert (view.current["i"], view.current["j"]) == (1, 2)
    expected = np.zeros((2, 3))
    expected[1, 2] = 2.0
    np.testing.assert_array_equal(view.arrays["adj_x"], expected)
    with pytest.raises(ValueError, match="outside"):
        kl.lab.step(double2d, (2, 3), [x, kl.zeros((2, 3))], tid=(2, 0))


def test_stepper_shows_source_values_and_adjoints():
    view = kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], tid=2)
    view.position = sum(s.section == "forward" for s in view.steps)  # first reverse step
    assert "reverse" in view.header.value
    assert kl_display.HIGHLIGHT_COLOR in view.source_view.value
    assert "adjoint" in view.values_view.value
    assert [r[0] for r in view.rows()] == ["n", "i", "v", "_"]


def test_stepper_steps_a_tangent_sweep_line_by_line():
    x, y = kl.array(X), kl.zeros(4)
    view = kl.lab.step(power, 4, [x, y, 3], tid=2, mode="tangent")
    xv = 1.5
    assert {s.section for s in view.steps} == {"tangent"}  # one sweep, in program order
    loop = steps_at(view, "v = v * x[i]", "tangent")
    assert [s.iteration for s in loop] == [(0,), (1,), (2,)]
    # v = x^k and, beside it, its tangent d(x^k)/dx = k x^(k-1) (x's tangent is 1)
    np.testing.assert_allclose([s.values["v"] for s in loop], [xv, xv ** 2, xv ** 3],
                               rtol=1e-6)
    np.testing.assert_allclose([s.values["tan_v"] for s in loop],
                               [1.0, 2 * xv, 3 * xv ** 2], rtol=1e-6)
    view.position = len(view.steps) - 1
    assert view.arrays["tan_y"][2] == pytest.approx(analytic_power_grad(X)[2], rel=1e-5)
    assert not np.any(np.delete(view.arrays["tan_y"], 2))  # one thread wrote only y[2]
    np.testing.assert_array_equal(view.arrays["tan_x"], 1.0)  # the default direction
    assert ("v", pytest.approx(xv ** 3), pytest.approx(3 * xv ** 2)) == view.rows()[2]
    assert "tangent" in text_of(view.values_view.value)
    assert "tangent" in text_of(view.header.value)
    np.testing.assert_array_equal(y.numpy(), 0)  # on copies
    np.testing.assert_array_equal(x.numpy(), X)


def test_stepper_tangent_seeds_pick_the_direction():
    view = kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], tid=2, mode="tangent",
                       seeds={"x": np.array([0.0, 0.0, 2.0, 0.0])})
    view.position = len(view.steps) - 1
    assert view.arrays["tan_y"][2] == pytest.approx(2 * analytic_power_grad(X)[2], rel=1e-5)
    view = kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], tid=1, mode="tangent",
                       seeds={"tan_x": 0.0})
    view.position = len(view.steps) - 1
    assert not np.any(view.arrays["tan_y"])
    with pytest.raises(ValueError, match="not a float"):
        kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], mode="tangent", seeds={"n": 1})
    with pytest.raises(ValueError, match="mode must be"):
        kl.lab.step(power, 4, [kl.array(X), kl.zeros(4), 3], mode="sideways")


def test_stepper_tangent_through_a_while_loop():
    view = kl.lab.step(halve_until, 1, [kl.array(np.array([5.0], np.float32)), kl.zeros(1)],
                       tid=0, mode="tangent")
    body = steps_at(view, "v = v * 0.5", "tangent")
    assert [s.iteration for s in body] == [(0,), (1,), (2,)]
    np.testing.assert_allclose([s.values["tan_v"] for s in body], [0.5, 0.25, 0.125])
    view.position = len(view.steps) - 1
    assert view.arrays["tan_y"][0] == pytest.approx(3 * 0.5 ** 3)  # y = 3 x / 8


def test_tangent_step_repr_and_static_form():
    args = (power, 4, [kl.array(X), kl.zeros(4), 3])
    assert_deterministic_repr(
        kl.lab.step(*args, tid=2, mode="tangent"), kl.lab.step(*args, tid=2, mode="tangent"),
        r"<kernlab step: kernel 'power' thread 2, tangent sweep \(\d+ steps\)>")
    page = text_of(kl.lab.step(*args, tid=2, mode="tangent")._repr_html_())
    assert "tangents" in page and "tan_v=" in page and "adj_" not in page
    # the saved form ends with what the thread left in the tangent arrays: y[2]'s tangent
    tan_y = page.split("after the last step:")[1].split("tan_y = ")[1].split(")")[0]
    np.testing.assert_allclose(numbers_in(tan_y), [0, 0, analytic_power_grad(X)[2], 0],
                               rtol=1e-5)


def test_step_repr_is_deterministic():
    args = (power, 4, [kl.array(X), kl.zeros(4), 3])
    assert_deterministic_repr(kl.lab.step(*args, tid=2), kl.lab.step(*args, tid=2),
                              r"<kernlab step: kernel 'power' thread 2 \(\d+ steps\)>")


# ---- with the magic ---------------------------------------------------------------------------

def test_inspecting_a_kernel_from_a_kernel_cell_shows_the_cell():
    InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "kernlab")
    result = shell.run_cell("%%kernel --quiet\ndef cell_k(x: array(dtype=float32)):\n"
                            "    i = tid()\n    x[i] = x[i] + 1.0\n")
    assert result.success
    view = kl.lab.inspect(shell.user_ns["cell_k"])
    view.select(4)
    assert "x[i] = x[i] + 1.0" in text_of(view.source_view.value)
    assert view.highlighted("ir")


def test_tape_graph_fits_its_output_and_labels_versions_without_primes():
    x, y, loss = arrays()
    svg = kl.lab.tape(record(x, y, loss), loss=loss).graph.value
    width = int(re.search(r'width="(\d+)"', svg).group(1))
    assert f'viewBox="0 0 {width} ' in svg and "max-width: 100%" in svg
    assert "′" not in svg
    assert ">y@1<" in svg  # y written once by the first launch


def test_tape_view_names_arrays_by_keyword_over_their_notebook_names():
    InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell
    shell = InteractiveShell.instance()
    x, y, loss = arrays()
    tape = record(x, y, loss)
    shell.user_ns.update(x_in_notebook=x, y_in_notebook=y)
    try:
        named = kl.lab.tape(tape, loss=loss, state=x)
        assert "state" in named.model.arrays and "x_in_notebook" not in named.model.arrays
        assert named.model.arrays["state"] is x
        plain = kl.lab.tape(tape, loss=loss)  # without a keyword, the notebook's name
        assert plain.model.arrays["y_in_notebook"] is y
    finally:
        del shell.user_ns["x_in_notebook"], shell.user_ns["y_in_notebook"]
