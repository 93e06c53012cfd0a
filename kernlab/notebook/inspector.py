"""``kl.lab.inspect``: a kernel's source next to its listings, linked line by line.

Tabs hold each target's forward, adjoint and tangent (forward-mode) listings side by side:
the typed IR, LLVM IR, CUDA C and PTX; a listing that cannot be produced shows why (a
kernel without an adjoint shows the reason and its line in place of the adjoint). Choosing one of the user's
lines in the dropdown re-renders the source and every listing with that line, and the
generated lines that came from it, highlighted. The link comes from the ``file:line``
comments the listings carry (the IR's ``# cell:line``); a listing without them (today's
optimised LLVM IR) says so. Hover linking needs JavaScript: the JupyterLab extension's job.
"""
from __future__ import annotations

import linecache

import ipywidgets as widgets

from .display import (TARGET_TITLES, TARGETS, RichRepr, escape, file_key, get_listing,
                      highlight, kernel_source, line_map)

NO_LINE = None
STATIC_LIMIT = 8000  # characters of a non-IR listing kept in the static HTML fallback
# A target's listings, in the order its tab shows them: the kernel, its adjoint (reverse
# mode) and its tangent kernel (forward mode).
KINDS = ("forward", "adjoint", "tangent")


class InspectView(RichRepr, widgets.VBox):
    view_kind = "inspect"  # kernlab's view type (mime.view_bundle)

    def __init__(self, kernel, targets=TARGETS, kinds=KINDS):
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise ValueError(f"kl.lab.inspect: listings must be some of {', '.join(KINDS)}; "
                             f"got {', '.join(map(repr, unknown or kinds)) or 'none'}")
        self.kernel = kernel
        self.targets = tuple(targets)
        self.kinds = tuple(k for k in KINDS if k in kinds)  # in the tabs' order
        kernel.ir  # a kernel that does not compile fails here, with the user's line
        self.listings = {(t, kind): get_listing(kernel, t, adjoint=kind == "adjoint",
                                                tangent=kind == "tangent")
                         for t in self.targets for kind in self.kinds}
        self._maps = {key: line_map(lst.text) if lst.ok else [] for key, lst in
                      self.listings.items()}
        self._source = kernel_source(kernel)
        self.line_select = widgets.Dropdown(options=self._line_options(), value=NO_LINE,
                                            description="user line",
                                            layout={"width": "40em", "max_width": "100%"})
        # the source above the tabs: forward and adjoint side by side need the width
        self.source_view = widgets.HTML(layout={"width": "auto"})
        self.panes = {t: widgets.HTML(layout={"width": "auto"}) for t in self.targets}
        self.tabs = widgets.Tab(children=[self.panes[t] for t in self.targets],
                                titles=[TARGET_TITLES[t] for t in self.targets],
                                layout={"width": "auto"})
        self.line_select.observe(lambda _: self._render(), names="value")
        super().__init__([self.line_select, self.source_view, self.tabs])
        self._render()

    # ---- state -------------------------------------------------------------------------

    @property
    def selected(self):
        """The chosen user line as (file key, line), or None."""
        return self.line_select.value

    def select(self, line: int | None, file: str | None = None):
        """Choose a user line by number (of the kernel's file unless ``file`` is given)."""
        if line is None:
            self.line_select.value = NO_LINE
            return
        self.line_select.value = (file_key(file or self._source[2]), int(line))

    def highlighted(self, target: str, adjoint: bool = False, tangent: bool = False) -> list[int]:
        """The 1-based lines of a listing (the forward one, the adjoint's with ``adjoint``,
        the tangent kernel's with ``tangent``) that came from the selected user line."""
        if self.selected is None:
            return []
        kind = "tangent" if tangent else "adjoint" if adjoint else "forward"
        return [k + 1 for k, o in enumerate(self._maps[(target, kind)]) if o == self.selected]

    @property
    def available(self) -> list:
        return [key for key, lst in self.listings.items() if lst.ok]

    # ---- rendering ---------------------------------------------------------------------

    def _line_options(self) -> list:
        lines, first, file = self._source
        key = file_key(file)
        counts: dict = {}
        for m in self._maps.values():
            for origin in m:
                if origin is not None:
                    counts[origin] = counts.get(origin, 0) + 1
        options = [("(none)", NO_LINE)]
        for k, text in enumerate(lines):
            origin = (key, first + k)
            if text.strip() and origin in counts:
                options.append((f"{first + k:>4} | {text.strip()[:60]}", origin))
        own = {value for _, value in options}
        for origin in sorted(o for o in counts if o not in own):  # lines of inlined funcs
            text = _line_text(origin)
            options.append((f"{origin[0]}:{origin[1]} | {text[:50]}", origin))
        return options

    def _render(self):
        lines, first, file = self._source
        sel = self.selected
        hl = [sel[1] - first + 1] if sel is not None and sel[0] == file_key(file) else []
        self.source_view.value = highlight("\n".join(lines), "python", hl_lines=hl,
                                           linenostart=first, linenos=True, fit=True)
        for t in self.targets:
            self.panes[t].value = side_by_side(
                [self._pane_body(t, kind) for kind in self.kinds], fit=True, titles=self.kinds)

    def _pane_body(self, target: str, kind: str) -> str:
        listing = self.listings[(target, kind)]
        if not listing.ok:
            return f"<pre style='white-space: pre-wrap'>{escape(listing.error)}</pre>"
        note = ""
        if self.selected is not None and not any(self._maps[(target, kind)]):
            note = "<div><i>this listing carries no source-line comments</i></div>"
        lines = self.highlighted(target, kind == "adjoint", kind == "tangent")
        return note + highlight(listing.text, target, hl_lines=lines, fit=True)

    # ---- repr and static fallback -----------------------------------------------------

    def _text(self) -> str:
        n = len(self.available)
        return f"<kernlab inspect: kernel '{self.kernel.key}' ({n} listings)>"

    def _plain(self) -> str:
        """The text/plain form: the summary, then the IR's forward, adjoint and tangent
        listings one after another (a terminal has no room for columns)."""
        parts = [self._text()]
        target = "ir" if "ir" in self.targets else self.targets[0]
        for kind in self.kinds:
            listing = self.listings[(target, kind)]
            parts.append(f"--- {listing.title} ---\n{listing.body().rstrip()}")
        return "\n\n".join(parts)

    def _html(self) -> str:
        lines, first, _ = self._source
        parts = [f"<div><b>{escape(self._text())}</b></div>",
                 highlight("\n".join(lines), "python", linenostart=first, linenos=True)]
        for t in self.targets:
            bodies = [self._static_body(t, kind) for kind in self.kinds]
            parts.append(f"<details><summary>{escape(TARGET_TITLES[t])}</summary>"
                         f"{side_by_side(bodies, titles=self.kinds)}</details>")
        return "".join(parts)


    def _static_body(self, target: str, kind: str) -> str:
        listing = self.listings[(target, kind)]
        if not listing.ok:
            return f"<pre style='white-space: pre-wrap'>{escape(listing.error)}</pre>"
        if target == "ir" or len(listing.text) <= STATIC_LIMIT:
            return highlight(listing.text, target)
        n = listing.text.count("\n")  # keep saved notebooks small: long ones live in the widget
        flag = {"forward": "", "adjoint": ", adjoint=True", "tangent": ", tangent=True"}[kind]
        return (f"<div>{n} lines: see the live widget or <code>kl.source(kernel, "
                f"{target!r}{flag})</code></div>")


def side_by_side(bodies, fit: bool = False, titles=KINDS) -> str:
    """Listings (forward, adjoint, tangent) in columns, each scrolling on its own. ``fit``
    (a live widget's pane): a grid of minmax(0, 1fr) columns, whose width never depends on
    the longest line (a flex row inside an ipywidget grows to it, past the output's edge)."""
    pairs = list(zip(titles, bodies))
    if fit:
        cols = "".join(f"<div style='min-width: 0'><div><b>{title}</b></div>{body}</div>"
                       for title, body in pairs)
        return (f"<div style='display: grid; grid-template-columns: repeat({len(pairs)}, "
                f"minmax(0, 1fr)); gap: 8px; align-items: start'>{cols}</div>")
    cols = "".join(
        f"<div style='flex: 1 1 0; min-width: 0'><div><b>{title}</b></div>{body}</div>"
        for title, body in pairs)
    return f"<div style='display: flex; gap: 8px; align-items: flex-start'>{cols}</div>"


def _line_text(origin) -> str:
    """A source line for an origin (file key, line); keys of real files are basenames,
    so look the file up among the ones linecache holds."""
    name, line = origin
    for path in list(linecache.cache):
        if path == name or path.endswith("/" + name):
            return linecache.getline(path, line).strip()
    return ""
