"""The MIME bundles kernlab emits for the JupyterLab extension: structure, fallbacks, escaping,
and the error form the extension's cell diagnostics read. Also runs the extension's own unit
tests (``jlpm test`` in extension/) where its toolchain is installed.

Expected values come from the kernel source, NumPy and calculus, never from the payload code.
"""
import inspect
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kernlab as kl
from kernlab.notebook.display import Listing, TapeGraph, get_listing
from kernlab.notebook.mime import SOURCE_MIME, TAPE_MIME, VERSION, VIEW_MIME

EXTENSION = Path(__file__).resolve().parents[1] / "extension"
XSS = "<img src=x onerror=alert(1)>"


@kl.kernel
def square(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    v = x[i]
    y[i] = v * v


@kl.kernel
def total(y: kl.array(dtype=float), loss: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(loss, 0, y[i])


@kl.kernel
def marked(x: kl.array(dtype=float)):
    # <img src=x onerror=alert(1)>
    x[kl.tid()] = 1.0


@pytest.fixture(autouse=True)
def interp(monkeypatch):
    monkeypatch.setattr(kl.config, "cpu_backend", "interp")


def line_of(kernel, text) -> int:
    lines, first = inspect.getsourcelines(kernel.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


def strict_json(payload) -> dict:
    """The payload as the frontend receives it (no NaN, nothing JSON cannot hold)."""
    return json.loads(json.dumps(payload, allow_nan=False))


# ---- kernels -------------------------------------------------------------------------------

def test_a_kernel_displays_as_source_json_with_text_and_html_fallbacks():
    bundle = square._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", SOURCE_MIME}
    assert bundle["text/plain"] == repr(square) == "<kernlab kernel square>"
    assert "square" in bundle["text/html"] and "<details>" in bundle["text/html"]


def test_source_payload_holds_the_kernel_source_and_its_ir_listings():
    payload = strict_json(square._repr_mimebundle_()[SOURCE_MIME])
    lines, first = inspect.getsourcelines(square.pyfunc)
    assert payload["version"] == VERSION
    assert payload["kernel"] == "square"
    assert payload["file"] == "test_extension.py"
    assert payload["first_line"] == first
    assert payload["source"] == [ln.rstrip("\n") for ln in lines]
    assert [(lst["title"], lst["adjoint"]) for lst in payload["listings"]] == \
        [("IR", False), ("IR (adjoint)", True)]
    assert payload["listings"][0]["text"] == kl.source(square, "ir")
    assert payload["listings"][1]["text"] == kl.source(square, "ir", adjoint=True)


def test_origins_link_each_listing_line_to_the_user_line_its_comment_names():
    payload = square._repr_mimebundle_()[SOURCE_MIME]
    store = line_of(square, "y[i] = v * v")
    for listing in payload["listings"]:
        text_lines = listing["text"].splitlines()
        assert len(listing["origins"]) == len(text_lines)
        tagged = [k for k, ln in enumerate(text_lines)
                  if ln.rstrip().endswith(f"# test_extension.py:{store}")]
        linked = [k for k, o in enumerate(listing["origins"])
                  if o == ["test_extension.py", store]]
        assert tagged and linked == tagged


def test_a_kernel_that_does_not_compile_still_displays_with_its_error():
    @kl.kernel
    def bad(x: kl.array(dtype=float)):
        x[kl.tid()] = kl.sin(x[0], 2.0)

    bundle = bad._repr_mimebundle_()
    listing = bundle[SOURCE_MIME]["listings"][0]
    assert listing["text"] == "" and listing["origins"] == []
    assert listing["error"].startswith("KernelTypeError: no overload of sin()")
    assert "no overload" in bundle["text/html"]


def test_listing_display_links_to_the_kernel_source():
    listing = get_listing(square, "ir", adjoint=True)
    bundle = listing._repr_mimebundle_()
    assert bundle["text/plain"] == repr(listing) == kl.source(square, "ir", adjoint=True)
    assert bundle["text/html"] == listing._repr_html_()
    payload = strict_json(bundle[SOURCE_MIME])
    assert payload["source"][0].startswith("@kl.kernel")
    assert [lst["title"] for lst in payload["listings"]] == ["IR (adjoint)"]


def test_a_listing_without_source_still_renders():
    listing = Listing("k", "ir", False, text="kernel k() {   # cell:2\n}\n")
    payload = listing._repr_mimebundle_()[SOURCE_MIME]
    assert payload["source"] == [] and payload["listings"][0]["origins"] == [["cell", 2], None]


# ---- escaping ------------------------------------------------------------------------------

def test_markup_in_a_kernel_name_and_source_is_escaped_in_the_html_fallback():
    marked.key = XSS
    try:
        bundle = marked._repr_mimebundle_()
    finally:
        marked.key = "marked"
    html = bundle["text/html"]
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    payload = bundle[SOURCE_MIME]  # JSON keeps the text as it is: the renderer shows it as text
    assert payload["kernel"] == XSS
    assert any(XSS in line for line in payload["source"])


def test_markup_in_array_names_is_escaped_in_the_tape_fallback():
    x, y, loss = arrays()
    tape = record(x, y, loss)
    bundle = TapeGraph(tape, **{XSS: x})._repr_mimebundle_()
    assert "<img" not in bundle["text/html"]
    assert XSS in [a["name"] for a in bundle[TAPE_MIME]["arrays"]]


# ---- tapes ---------------------------------------------------------------------------------

X = np.array([0.5, -1.0, 1.5, 2.0], np.float32)


def arrays():
    return (kl.array(X, requires_grad=True), kl.zeros(4, requires_grad=True),
            kl.zeros(1, requires_grad=True))


def record(x, y, loss):
    tape = kl.Tape()
    with tape:
        kl.launch(square, 4, inputs=[x, y])
        kl.launch(total, 4, inputs=[y, loss])
    return tape


def test_a_tape_displays_as_tape_json_with_text_and_html_fallbacks():
    x, y, loss = arrays()
    bundle = TapeGraph(record(x, y, loss), x=x, y=y, loss=loss)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", TAPE_MIME}
    assert bundle["text/plain"] == "<kernlab tape: 2 launches, 0 array ops, 3 arrays>"
    assert "<svg" in bundle["text/html"]


def test_tape_payload_lists_records_with_reads_writes_and_adjoint_listings():
    x, y, loss = arrays()
    payload = strict_json(TapeGraph(record(x, y, loss), x=x, y=y, loss=loss)
                          ._repr_mimebundle_()[TAPE_MIME])
    records = [(r["index"], r["kind"], r["reads"], r["writes"]) for r in payload["records"]]
    assert records == [(0, "launch", ["x"], ["y"]), (1, "launch", ["y"], ["loss"])]
    kernels = [payload["kernels"][r["kernel"]] for r in payload["records"]]
    assert [k["kernel"] for k in kernels] == ["square", "total"]
    adjoint = kernels[0]["listings"][0]
    assert adjoint["adjoint"] and adjoint["text"] == kl.source(square, "ir", adjoint=True)
    assert kernels[0]["source"][-1].strip() == "y[i] = v * v"


def test_tape_payload_carries_values_and_gradients_per_array():
    x, y, loss = arrays()
    tape = record(x, y, loss)
    tape.backward(loss=loss)
    payload = strict_json(TapeGraph(tape, x=x, y=y, loss=loss)._repr_mimebundle_()[TAPE_MIME])
    by_name = {a["name"]: a for a in payload["arrays"]}
    xs = by_name["x"]
    assert xs["shape"] == [4] and xs["dtype"] == "float32" and xs["requires_grad"]
    assert [float(v) for v in xs["values"]] == X.tolist()
    np.testing.assert_allclose([float(g) for g in xs["grad"]], 2 * X, rtol=1e-5)  # d(x^2)
    assert float(xs["grad_norm"]) == pytest.approx(np.linalg.norm(2 * X), rel=1e-5)
    assert by_name["loss"]["grad"] == ["1"]


def test_tape_payload_previews_long_arrays_and_keeps_non_finite_values_as_text():
    n = 40
    x = kl.array(np.full(n, np.inf, np.float32), requires_grad=True)
    y = kl.zeros(n, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(square, n, inputs=[x, y])
    arr = strict_json(TapeGraph(tape, x=x)._repr_mimebundle_()[TAPE_MIME])["arrays"][0]
    assert arr["size"] == n and arr["truncated"] and len(arr["values"]) == 16
    assert arr["values"][0] == "inf"


def test_the_tape_widget_bundle_also_carries_the_tape_json():
    pytest.importorskip("ipywidgets")
    x, y, loss = arrays()
    view = kl.lab.tape(record(x, y, loss), loss=loss, x=x, y=y)
    try:
        bundle, metadata = view._repr_mimebundle_()
        model_id = view.model_id
    finally:
        view.close()
    # the saved rendering, and the live widget named in metadata only (see view.ts)
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert bundle[VIEW_MIME] == {"version": 1, "view": "tape"}
    assert metadata == {VIEW_MIME: {"model_id": model_id}}
    assert [r["writes"] for r in bundle[TAPE_MIME]["records"]] == [["y"], ["loss"]]


def test_the_inspector_widget_bundle_also_carries_the_source_json():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("pygments")
    view = kl.lab.inspect(square, targets=("ir",))
    bundle, _ = view._repr_mimebundle_()
    assert bundle[VIEW_MIME] == {"version": 1, "view": "inspect"}
    listings = bundle[SOURCE_MIME]["listings"]
    assert [lst["title"] for lst in listings] == ["IR", "IR (adjoint)", "IR (tangent)"]
    assert [(lst["adjoint"], lst["tangent"]) for lst in listings] == [
        (False, False), (True, False), (False, True)]
    # the tangent listing is the tangent kernel kl.source prints, linked to the user's lines
    assert listings[2]["text"] == kl.source(square, "ir", tangent=True)
    assert len(listings[2]["origins"]) == len(listings[2]["text"].splitlines())
    assert any(listings[2]["origins"])


# ---- the error form that cell diagnostics read ------------------------------------------------

# The patterns extension/src/diagnostic/parse.ts applies to a KernelError's text.
WHERE = re.compile(r"^\s*--> (.*?), line (\d+)(?:, in kernel .*)?$")
SNIPPET = re.compile(r"^\s*(\d+) \| (.*)$")
CARET = re.compile(r"^\s*\| ( *)(\^+)\s*$")

BAD_CELL = """%%kernel
def broken(x: array(dtype=float32)):
    i = tid()
    x[i] = sin(x[i], 2.0)
"""


def test_a_failed_kernel_cell_names_its_line_and_columns_as_the_extension_reads_them():
    shell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell.instance()
    shell.run_line_magic("load_ext", "kernlab")
    from IPython.utils.capture import capture_output
    with capture_output():
        result = shell.run_cell(BAD_CELL)
    err = result.error_in_exec
    lines = str(err).splitlines()  # the error output's evalue
    at = next(k for k, ln in enumerate(lines) if WHERE.match(ln))
    file, line = WHERE.match(lines[at]).groups()
    assert re.fullmatch(r"cell(?: \[\d+\])?", file)
    assert int(line) == 4  # counted from the %%kernel line, as the editor counts
    number, code = SNIPPET.match(lines[at + 1]).groups()
    assert int(number) == 4 and code == BAD_CELL.splitlines()[3]
    spaces, carets = CARET.match(lines[at + 2]).groups()
    assert code[len(spaces):len(spaces) + len(carets)] == "sin(x[i], 2.0)"


# ---- the extension's own unit tests -----------------------------------------------------------

def test_extension_unit_tests_pass():
    """``jlpm test`` (jest) in extension/, where ``jlpm install`` has been run there (the
    wheel build runs it: pip install -e . with Node.js on PATH)."""
    node = shutil.which("node")
    jest = EXTENSION / "node_modules" / "jest" / "bin" / "jest.js"
    if node is None or not jest.exists():
        pytest.skip("the extension's toolchain is not installed (Node.js, extension/node_modules)")
    out = subprocess.run([node, str(jest), "--ci", "--silent"], cwd=EXTENSION,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CI": "true"})
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
