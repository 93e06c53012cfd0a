"""Notebooks as nbconvert HTML: what a student gets from ``jupyter nbconvert --to html``.

* Every tutorial, converted as saved: its listings are monospace and no token carries a
  lexer error box (Pygments' ``class="err"`` span, or the inline red border of its default
  style), in code cells and in outputs.
* The kl.lab views, run in a real kernel and converted with and without the notebook's
  widget state stored: each one shows its saved rendering (the widget-free part of its
  bundle), never an empty output or a widget that needs a live model.

Skips without nbconvert, nbclient or ipykernel.
"""
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbconvert = pytest.importorskip("nbconvert")
pytest.importorskip("ipywidgets")
pytest.importorskip("pygments")

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
RED_BOX = re.compile(r"border:\s*1px solid #(?:ff0000|f00)\b", re.I)
MONO = ("monospace", "Menlo", "Consolas", "Courier")


class Pres(HTMLParser):
    """Each <pre> in the page with the inline styles of it and of its enclosing elements."""

    VOID = {"br", "img", "hr", "input", "meta", "link", "col", "area", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.pres = [], []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        a = dict(attrs)
        self.stack.append((tag, a.get("style") or "", a.get("class") or ""))
        if tag == "pre":
            self.pres.append(list(self.stack))

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                del self.stack[k:]
                break


def html_of(nb) -> str:
    exporter = nbconvert.HTMLExporter()
    body, _ = exporter.from_notebook_node(nb)
    return body


def output_listings(page: str) -> list:
    """The <pre>s that kernlab's highlighter wrote into outputs (inline-styled, in an output
    area), each as the chain of (tag, style, class) down to it."""
    parser = Pres()
    parser.feed(page)
    return [chain for chain in parser.pres
            if any("jp-OutputArea-output" in cls for _, _, cls in chain)
            and "line-height" in chain[-1][1]]


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_a_tutorial_as_html_has_monospace_listings_and_no_error_boxes(path):
    page = html_of(nbformat.read(path, as_version=4))
    assert 'class="err"' not in page, "a lexer error box in the HTML"
    assert not RED_BOX.search(page), "a lexer error box (inline style) in an output"
    for chain in output_listings(page):
        fonts = [style for _, style, _ in chain if "font-family" in style]
        assert fonts and any(m in fonts[-1] for m in MONO), chain[-1]


def test_every_tutorial_is_checked():
    assert len(TUTORIALS) >= 9


VIEWS = r'''
import numpy as np
import kernlab as kl
kl.config.cpu_backend = "interp"

@kl.kernel
def square(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i]

@kl.kernel
def total(y: kl.array(dtype=float), loss: kl.array(dtype=float)):
    kl.atomic_add(loss, 0, y[kl.tid()])

x = kl.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
y = kl.zeros(3, requires_grad=True)
loss = kl.zeros(1, requires_grad=True)
tape = kl.Tape()
with tape:
    kl.launch(square, 3, inputs=[x, y])
    kl.launch(total, 3, inputs=[y, loss])
tape.backward(loss=loss)
'''
SHOWN = {  # cell -> (its text/plain, a piece of its saved HTML only the view would write)
    "kl.lab.inspect(square)": ("<kernlab inspect: kernel 'square'", "<summary>IR</summary>"),
    "kl.lab.tape(tape, x=x, y=y, loss=loss)": ("<kernlab tape: 2 launches", "<svg"),
    "kl.lab.grads(x=x)": ("<kernlab grads: x (3,) float32>", "|grad| = 7.48331"),
    "kl.lab.step(square, 3, [x, y], tid=1)": ("<kernlab step: kernel 'square' thread 1",
                                               "y[i] = x[i] * x[i]"),
    "kl.lab.step(square, 3, [x, y], tid=1, mode='tangent')": (
        "<kernlab step: kernel 'square' thread 1, tangent sweep", "tan_y"),
}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import os
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(VIEWS)] + [nbformat.v4.new_code_cell(c) for c in SHOWN]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env_path] if env_path else []))
    try:
        out = {}
        for store in (False, True):
            run = nbformat.from_dict(json.loads(json.dumps(nb)))
            nbclient.NotebookClient(run, timeout=300, kernel_name="python3",
                                    store_widget_state=store,
                                    resources={"metadata": {"path": str(tmp_path_factory
                                                                        .mktemp("nb"))}}
                                    ).execute()
            out[store] = run
    finally:
        os.environ["PYTHONPATH"] = env_path
    return out


@pytest.mark.slow
@pytest.mark.parametrize("store", [False, True], ids=["no-widget-state", "widget-state"])
def test_views_convert_to_their_saved_rendering(executed, store):
    nb = executed[store]
    assert ("widgets" in nb.metadata) == store  # the kernel's widgets were stored, or not
    page = html_of(nb)
    for cell, (text, piece) in zip(nb.cells[1:], SHOWN.values()):
        (output,) = cell.outputs
        assert "application/vnd.jupyter.widget-view+json" not in output["data"]
        assert output["data"]["text/plain"].startswith(text)
        assert piece in output["data"]["text/html"]
    # the HTML holds every view's saved rendering, and no widget placeholder
    for piece in ("&lt;kernlab inspect: kernel", "&lt;kernlab tape: 2 launches", "|grad| = 7.48331", "&lt;kernlab step:",
                  "y[i] = x[i] * x[i]"):
        assert piece in page, piece
    # inspect's saved rendering holds the tangent listing beside forward and adjoint
    import html as html_module
    import re
    inspect_html = nb.cells[1].outputs[0]["data"]["text/html"]
    text = html_module.unescape(re.sub(r"<[^>]+>", "", inspect_html))
    assert text.index("kernel square(") < text.index("adjoint kernel square(") \
        < text.index("tangent kernel square(")
    assert "%tan_x" in text
    # no output is a widget placeholder (what the embed manager fills, or leaves empty)
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in page
    assert 'class="err"' not in page and not RED_BOX.search(page)
