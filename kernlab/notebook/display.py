"""Rendering shared by the magic and the widgets: listings, highlighting, tables, reprs.

Listings come from ``kl.source`` (the public API); a listing that cannot be produced is
kept as its error text instead of raising, so one missing backend never breaks a view.
IR listings end each line with ``# file:line`` (the IR printer's comments); ``line_map``
reads those back, which is how a user's line is linked to the generated lines.
"""
from __future__ import annotations

import html
import inspect
import re
from dataclasses import dataclass

import numpy as np

TARGETS = ("ir", "llvm", "cuda", "ptx")
TARGET_TITLES = {"ir": "IR", "llvm": "LLVM IR", "cuda": "CUDA C", "ptx": "PTX"}
_LEXERS = {"python": "python", "ir": "kernlab-ir", "llvm": "llvm", "cuda": "cuda", "ptx": "text",
           "text": "text"}
# A generated line's origin: a trailing '# file:line' (the IR) marks that line; a comment
# line '// file:line: source' (CUDA C) or '; file:line: source' marks the lines below it.
_ORIGIN = re.compile(r"(?:#|;|//)\s*(cell \[\d+\]|\S+):(\d+)\s*$")
_ORIGIN_ABOVE = re.compile(r"^\s*(?://|;|#)\s*(cell \[\d+\]|\S+?):(\d+):")
# Colours are JupyterLab's theme variables with a light-theme fallback (nbconvert's HTML,
# GitHub and VS Code define no --jp-* variables), so a view reads in light and dark themes.
# Highlights are translucent: the text keeps the theme's colour on top of them.
HIGHLIGHT_COLOR = "rgba(255, 196, 0, 0.30)"
# An ipywidget pane next to another in an HBox: takes the room left and may shrink below its
# content's width (its listings scroll), so the box never outgrows the output.
FILL = {"flex": "1 1 0%", "min_width": "0"}
FONT_COLOR = "var(--jp-content-font-color1, #1f1f1f)"
MUTED_COLOR = "var(--jp-content-font-color2, #616161)"
BORDER = "1px solid var(--jp-border-color2, #e0e0e0)"
# Listings are monospace in every front end, also where a stylesheet sets <pre> otherwise.
MONOSPACE = ("var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, "
             "monospace)")


def escape(text) -> str:
    return html.escape(str(text), quote=True)


# ---- listings ------------------------------------------------------------------------------

@dataclass
class Listing:
    """One listing of a kernel: its text, or why there is none. Displays itself."""

    kernel: str
    target: str
    adjoint: bool
    text: str = ""
    error: str = ""
    source: tuple | None = None  # the kernel's (lines, first line, file), for linking
    tangent: bool = False  # forward mode: the tangent kernel's listing (of the adjoint's
                           # tangent with adjoint=True)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def kind(self) -> str:
        """Which of the kernel's listings: "forward", "adjoint" or "tangent"."""
        return "tangent" if self.tangent else "adjoint" if self.adjoint else "forward"

    @property
    def title(self) -> str:
        tail = {"forward": "", "adjoint": " (adjoint)", "tangent": " (tangent)"}[self.kind]
        if self.tangent and self.adjoint:
            tail = " (tangent of the adjoint)"
        return TARGET_TITLES[self.target] + tail

    def body(self) -> str:
        return self.text if self.ok else self.error

    def __repr__(self):
        return self.body()

    def _repr_html_(self):
        head = f"<div><b>{escape(self.title)}</b> of kernel <code>{escape(self.kernel)}</code>"
        if not self.ok:
            return head + f"<pre>{escape(self.error)}</pre></div>"
        return head + highlight(self.text, self.target) + "</div>"

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        from .mime import listing_bundle
        return listing_bundle(self)


def get_listing(kernel, target: str, adjoint: bool = False, tangent: bool = False) -> Listing:
    """``kl.source(kernel, target, adjoint, tangent=tangent)`` as a Listing; failures become
    its error text."""
    from ..kernel import source

    out = Listing(kernel.key, target, adjoint, tangent=tangent)
    try:
        out.source = kernel_source(kernel)
    except (OSError, TypeError):  # no source Python can find (defined in an exec'd string)
        pass
    try:
        out.text = source(kernel, target, adjoint=adjoint, tangent=tangent)
    except Exception as exc:  # noqa: BLE001 - a listing's failure is shown, not raised
        out.error = describe_failure(target, exc)
    return out


def describe_failure(target: str, exc: BaseException) -> str:
    report = getattr(exc, "report", None)  # a KernelError: its message first
    reason = (report() if callable(report) else str(exc)).strip() or type(exc).__name__
    if target in ("cuda", "ptx"):
        if isinstance(exc, ImportError):
            reason = f"this kernlab has no CUDA backend ({reason})"
        return f"not available: {reason}"
    return f"{type(exc).__name__}: {reason}"


def file_key(path: str) -> str:
    """How the IR printer names a file in its comments."""
    from ..ir.printer import file_label
    return file_label(path)


def line_map(text: str) -> list:
    """For each line of a listing, the (file key, line) it came from, or None."""
    out, above = [], None
    for line in text.splitlines():
        m = _ORIGIN_ABOVE.match(line)
        if m:
            above = (m.group(1), int(m.group(2)))
            out.append(above)
            continue
        m = _ORIGIN.search(line)
        if m:
            out.append((m.group(1), int(m.group(2))))
        elif line.strip() in ("", "{", "}", "};"):
            out.append(None)
        else:
            out.append(above)
    return out


def lines_from(text: str, origin) -> list[int]:
    """The 1-based listing lines that came from ``origin`` (a (file key, line) pair)."""
    return [k + 1 for k, o in enumerate(line_map(text)) if o == origin]


def kernel_source(kernel) -> tuple[list[str], int, str]:
    """The kernel's source lines, the file line of the first one, and the file."""
    lines, first = inspect.getsourcelines(kernel.pyfunc)
    return [ln.rstrip("\n") for ln in lines], first, kernel.pyfunc.__code__.co_filename


# ---- HTML ------------------------------------------------------------------------------------

def highlight(text: str, language: str = "text", hl_lines=(), linenostart: int = 1,
              linenos: bool = False, max_height: str = "32em", fit: bool = False) -> str:
    """Text as highlighted HTML with inline styles (so it survives without CSS);
    ``hl_lines`` (1-based) get a background. ``fit``: for a pane of a live widget (a flex
    item that would otherwise grow to the longest line): the box takes the width it is
    given and long lines scroll inside it."""
    try:
        from pygments import highlight as pyg_highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
    except ImportError:  # pygments is part of kernlab[lab]; plain text without it
        body = f'<pre style="white-space: pre; font-family: {MONOSPACE}">{escape(text)}</pre>'
    else:
        name = _LEXERS.get(language, "text")
        if name == "kernlab-ir":  # ours, found without relying on the installed entry point
            from .irlexer import KernlabIRLexer
            lexer = KernlabIRLexer(stripnl=False)
        else:
            lexer = get_lexer_by_name(name, stripnl=False)
        fmt = HtmlFormatter(noclasses=True, hl_lines=list(hl_lines), linenostart=linenostart,
                            linenos="inline" if linenos else False, nobackground=True,
                            style=theme_style(),
                            prestyles=f"margin: 0; line-height: 1.35; white-space: pre; "
                                      f"font-family: {MONOSPACE}; color: {FONT_COLOR}; "
                                      f"background: transparent; border: none")
        body = pyg_highlight(text, lexer, fmt)
    # fit: a one-column grid whose column may shrink to nothing, so the box's own width
    # never depends on its longest line
    grid = "display: grid; grid-template-columns: minmax(0, 1fr); " if fit else ""
    return (f'<div style="max-height: {max_height}; overflow: auto; font-size: 12px; '
            f'{grid}border: {BORDER}; padding: 2px 4px; color: {FONT_COLOR}; '
            f'background: var(--jp-cell-editor-background, transparent)">{body}</div>')


def _editor(name: str, light: str, extra: str = "") -> str:
    """A token style: JupyterLab's CodeMirror colour ``name``, ``light`` where it is unset.
    (No spaces inside var(): Pygments splits a style on them.)"""
    return (extra + " " if extra else "") + f"var(--jp-mirror-editor-{name}-color,{light})"


_STYLE = None


def theme_style():
    """A Pygments style whose colours are JupyterLab's editor theme variables (the colours
    code cells have, in light and dark themes), with no error boxes."""
    global _STYLE
    if _STYLE is None:
        from pygments.style import Style
        from pygments.token import (Comment, Error, Generic, Keyword, Name, Number, Operator,
                                    String)

        class JupyterThemeStyle(Style):
            name = "kernlab-jupyter"
            background_color = "transparent"
            highlight_color = HIGHLIGHT_COLOR
            line_number_color = "var(--jp-content-font-color3, #9e9e9e)"
            line_number_background_color = "transparent"
            styles = {
                Comment: _editor("comment", "#408080", "italic"),
                Keyword: _editor("keyword", "#008000", "bold"),
                Keyword.Type: _editor("variable-3", "#085"),
                Keyword.Constant: _editor("atom", "#88f"),
                Operator: _editor("operator", "#aa22ff"),
                Operator.Word: _editor("keyword", "#008000", "bold"),
                Name.Builtin: _editor("builtin", "#008000"),
                Name.Function: _editor("def", "#0000ff"),
                Name.Class: _editor("def", "#0000ff", "bold"),
                Name.Decorator: _editor("meta", "#aa22ff"),
                Name.Attribute: _editor("property", "#0055aa"),
                Name.Variable: _editor("variable-2", "#0055aa"),
                Name.Label: _editor("qualifier", "#555"),
                Name.Tag: _editor("tag", "#117700"),
                Number: _editor("number", "#008800"),
                String: _editor("string", "#ba2121"),
                String.Escape: _editor("string-2", "#770088"),
                Generic.Heading: _editor("header", "#0000ff", "bold"),
                Generic.Deleted: _editor("string", "#ba2121"),
                Generic.Inserted: _editor("number", "#008800"),
                Error: _editor("error", "#ff0000"),  # a colour, never a red box
            }

        _STYLE = JupyterThemeStyle
    return _STYLE


def html_table(headers, rows, bold_rows=()) -> str:
    head = "".join(f"<th style='text-align: left; padding: 0 8px; border-bottom: {BORDER}; "
                   f"color: {MUTED_COLOR}'>{escape(h)}</th>" for h in headers)
    body = []
    for k, row in enumerate(rows):
        style = " style='font-weight: bold; background: %s'" % HIGHLIGHT_COLOR \
            if k in bold_rows else ""
        cells = "".join(f"<td style='padding: 0 8px; text-align: left; "
                        f"font-family: {MONOSPACE}'>{escape(c)}</td>" for c in row)
        body.append(f"<tr{style}>{cells}</tr>")
    # margin: 0 - JupyterLab centres tables in HTML outputs; a view's tables sit on the left
    return (f"<table style='border-collapse: collapse; font-size: 12px; color: {FONT_COLOR}; "
            f"background: transparent; margin: 0'><tr>{head}</tr>" + "".join(body)
            + "</table>")


def fmt(value) -> str:
    """A short, deterministic rendering of a number, vector or matrix."""
    if value is None:
        return "-"
    arr = np.asarray(value)
    if arr.ndim == 0:
        x = arr.item()
        if isinstance(x, bool):
            return str(x)
        if isinstance(x, int):
            return str(x)
        return f"{x:.6g}"
    return "(" + ", ".join(fmt(v) for v in arr) + ")"


# ---- rich objects ----------------------------------------------------------------------------

class RichRepr:
    """A deterministic ``__repr__`` (``_text``) and a static HTML form (``_html``): the
    rendering a saved notebook keeps; where the object is a widget, the live widget shows
    on top of it in JupyterLab while its model lives (see ``mime.view_bundle``).
    (Not an abc.ABC: ABCMeta conflicts with the metaclass of the ipywidgets it is mixed
    into, so the two required methods raise instead.)"""

    def _text(self) -> str:  # pragma: no cover - every subclass defines it
        """The plain-text form: stable across runs (nbval compares it)."""
        raise NotImplementedError(f"{type(self).__name__} must define _text()")

    def _html(self) -> str:  # pragma: no cover - every subclass defines it
        """A static HTML form for saved notebooks and viewers without widgets."""
        raise NotImplementedError(f"{type(self).__name__} must define _html()")

    def __repr__(self):
        return self._text()

    def _repr_html_(self):
        return self._html()

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        """The saved rendering (text/plain, text/html, kernlab's own type where there is
        one) and, for a widget, kernlab's view type naming the live model in the output's
        metadata. No widget view: a saved notebook must never show a missing model
        (``mime.view_bundle``; the extension's ``view.ts`` puts the live widget on top)."""
        from .mime import view_bundle
        data, metadata = view_bundle(self)
        return (data, metadata) if metadata else data  # IPython takes either form


class TapeGraph(RichRepr):
    """A Tape as kernlab's tape MIME type: in JupyterLab an interactive graph (arrays with
    their values and gradients; a launch shows its adjoint listing), elsewhere a static
    SVG and table. Keyword arrays name the arrays in the graph. No widgets needed."""

    def __init__(self, tape, **names):
        from .tapegraph import TapeModel
        self.model = TapeModel(tape, names)

    def _text(self) -> str:
        from .mime import tape_title
        return tape_title(self.model)

    def _html(self) -> str:
        from .mime import tape_html
        return tape_html(self.model)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        from .mime import tape_bundle
        return tape_bundle(self.model)


def user_name(obj, default: str) -> str:
    """The name ``obj`` has in the IPython user namespace (by identity), else ``default``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return default
    shell = get_ipython()
    if shell is None:
        return default
    for name, value in shell.user_ns.items():
        if value is obj and not name.startswith("_"):
            return name
    return default
