"""kernlab's IR listings are highlighted by their own Pygments lexer: no error tokens, the
IR's names and types get their own token kinds, and the notebook HTML is monospace."""
import pytest

pytest.importorskip("pygments")
from pygments.token import Error, Keyword, Name  # noqa: E402

import kernlab as kl  # noqa: E402
from kernlab.notebook.irlexer import KernlabIRLexer  # noqa: E402


@kl.kernel
def loop_branch(x: kl.array(dtype=float), y: kl.array(dtype=float), n: int):
    i = kl.tid()
    s = float(0.0)
    for k in range(n):
        s = s + x[i] * float(k)
    if x[i] > 0.0:
        y[i] = kl.sin(x[i]) * 2.0 + s
    else:
        y[i] = -1.0e-3


@kl.kernel
def vectors(a: kl.array(dtype=kl.vec3), out: kl.array(dtype=float)):
    i = kl.tid()
    v = a[i] * 2.0
    kl.atomic_add(out, 0, kl.dot(v, kl.normalize(v)))


LISTINGS = [(k, adj, tan) for k in (loop_branch, vectors) for adj in (False, True)
            for tan in (False, True)]


@pytest.mark.parametrize("kernel,adjoint,tangent", LISTINGS)
def test_ir_listings_lex_without_error_tokens(kernel, adjoint, tangent):
    text = kl.source(kernel, "ir", adjoint=adjoint, tangent=tangent)
    tokens = list(KernlabIRLexer().get_tokens(text))
    bad = [v for t, v in tokens if t in Error]
    assert bad == []
    assert "".join(v for _, v in tokens) == text + ("" if text.endswith("\n") else "\n")


def test_ir_token_kinds():
    kinds = {v: t for t, v in KernlabIRLexer().get_tokens("%t3:float32 = mul(%t1, $s)\n")}
    assert kinds["t3"] in Name.Variable
    assert kinds["float32"] in Keyword.Type
    assert kinds["mul"] in Name.Function
    assert kinds["s"] in Name.Variable.Global
    head = {v: t for t, v in KernlabIRLexer().get_tokens("tangent kernel k(%tan_x2?) {\n")}
    assert head["tangent"] in Keyword and head["kernel"] in Keyword
    assert head["tan_x2"] in Name.Variable


def test_lexer_is_found_by_name_when_installed():
    from importlib.metadata import entry_points
    from pygments.lexers import get_lexer_by_name
    if not any(e.name == "kernlab-ir" for e in entry_points(group="pygments.lexers")):
        pytest.skip("kernlab is not installed with its entry points")
    assert isinstance(get_lexer_by_name("kernlab-ir"), KernlabIRLexer)


def test_notebook_listing_html_is_monospace_without_error_boxes():
    from kernlab.notebook.display import highlight
    html = highlight(kl.source(loop_branch, "ir", adjoint=True), "ir")
    assert "monospace" in html
    assert "solid #f00" not in html.lower()  # Pygments' error box
    assert "--jp-mirror-editor-error-color" not in html  # no error token at all
    # as was: read as Python, the IR is full of error tokens; the theme style colours them
    # (JupyterLab's editor error colour) and never draws a box
    as_python = highlight(kl.source(loop_branch, "ir"), "python")
    assert "--jp-mirror-editor-error-color" in as_python
    assert "solid #f00" not in as_python.lower()
