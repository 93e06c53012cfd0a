"""kernlab's own MIME types: the JSON payloads the JupyterLab extension (``extension/``) renders.

Every bundle built here also carries text/plain and text/html, so a frontend without the
extension (classic Notebook, nbconvert, GitHub, nbval) shows the static fallback instead.
The payloads hold plain text and numbers only; the extension puts every string into the
page as text (``textContent``), never as HTML, and so do the fallbacks (``escape``).

``application/vnd.kernlab.source+json`` (version 1): a kernel's source and its listings::

    {"version": 1, "kernel": "saxpy", "file": "cell [3]", "first_line": 2,
     "source": ["def saxpy(...):", ...],
     "listings": [{"target": "ir", "adjoint": false, "tangent": false, "title": "IR",
                   "text": "...", "error": "",
                   "origins": [["cell [3]", 4] or null, one per line]}]}

``tangent`` (added in version 1; absent means false) marks a forward-mode listing. The
extension shows one tab per target holding that target's forward, adjoint and tangent
listings side by side.

``origins`` is ``display.line_map`` of the listing (read off its ``# file:line`` and
``// file:line:`` comments): the user line each generated line came from. Hovering user
line n highlights the listing lines whose origin is ``[file, n]``.

``application/vnd.kernlab.tape+json`` (version 1): what a Tape recorded::

    {"version": 1, "title": "<kernlab tape: ...>",
     "arrays": [{"name", "shape", "dtype", "device", "size", "requires_grad",
                 "values": [...], "grad": [...] or null, "grad_norm": "1.5" or null,
                 "truncated": bool}],
     "records": [{"index", "kind", "label", "reads": [names], "writes": [names],
                  "kernel": index into "kernels" or null}],
     "kernels": [a source+json payload holding the kernel's adjoint IR listing]}

Values are formatted as text (``display.fmt``), so NaN and Inf survive JSON.

``application/vnd.kernlab.view+json`` (version 1): a ``kl.lab`` view (inspect, tape,
grads, step). Its data is only ``{"version": 1, "view": "tape"}``; the live ipywidget's model
id is in the output's metadata, ``{"application/vnd.kernlab.view+json": {"model_id": ...}}``
(metadata, so saved outputs compare equal from run to run, as nbval wants). The bundle holds
no ``application/vnd.jupyter.widget-view+json``: JupyterLab would prefer it and, once the
model is gone (a reopened notebook, a new kernel), show "Error displaying widget: model not
found" in place of everything else. The extension (``extension/src/view.ts``) renders the
rest of the bundle and shows the live widget on top only while its model exists; every other
front end (nbconvert, with or without stored widget state, classic Notebook, VS Code, GitHub)
skips the type and shows kernlab's type or text/html. To get a plain widget view in a front
end without kernlab's extension, display it inside a box: ``ipywidgets.Box([view])``.

Cell diagnostics need no payload: a failing ``%%kernel`` cell's error output already holds
the location, machine-readably, in the documented form of every KernelError (its
``evalue``)::

      --> cell [7], line 4, in kernel 'broken'
       4 |     x[i] = sin(x[i], 2.0)
         |            ^^^^^^^^^^^^^^

(line counted from the ``%%kernel`` line, columns from the carets); a Python
``SyntaxError`` in the cell is located from its traceback's ``line N`` and caret line.
The extension parses exactly these (``extension/src/diagnostic/parse.ts``);
``tests/test_extension.py`` holds the Python side to that form.
"""
from __future__ import annotations

import sys

import numpy as np

from .display import (Listing, escape, file_key, fmt, get_listing, highlight, html_table,
                      kernel_source, line_map)

SOURCE_MIME = "application/vnd.kernlab.source+json"
TAPE_MIME = "application/vnd.kernlab.tape+json"
VIEW_MIME = "application/vnd.kernlab.view+json"
VERSION = 1
PREVIEW = 16  # array elements (values and gradients) a tape payload carries per array


# ---- kernels and listings ----------------------------------------------------------------------

def listing_payload(listing: Listing) -> dict:
    origins = [list(o) if o else None for o in line_map(listing.text)] if listing.ok else []
    return {"target": listing.target, "adjoint": listing.adjoint,
            "tangent": listing.tangent, "title": listing.title,
            "text": listing.text if listing.ok else "", "error": listing.error,
            "origins": origins}


def source_payload(name: str, source, listings) -> dict:
    """``source`` is ``display.kernel_source``'s (lines, first line, file), or None."""
    lines, first, file = source if source else ([], 1, "")
    return {"version": VERSION, "kernel": str(name), "file": file_key(file) if file else "",
            "first_line": first, "source": list(lines),
            "listings": [listing_payload(lst) for lst in listings]}


def source_of(kernel):
    """The kernel's source (as ``display.kernel_source``), or None where Python has none."""
    try:
        return kernel_source(kernel)
    except (OSError, TypeError):
        return None


def kernel_listings(kernel) -> list:
    """What a displayed kernel shows: its typed IR, forward and adjoint."""
    return [get_listing(kernel, "ir", False), get_listing(kernel, "ir", True)]


def kernel_bundle(kernel) -> dict:
    """A kernel's display: source next to its IR listings (kl.Kernel's _repr_mimebundle_)."""
    source = source_of(kernel)
    listings = kernel_listings(kernel)
    return {"text/plain": repr(kernel),
            "text/html": _kernel_html(kernel.key, source, listings),
            SOURCE_MIME: source_payload(kernel.key, source, listings)}


def listing_bundle(listing: Listing) -> dict:
    """One listing (what ``%%kernel --show`` displays), linked to the kernel's source."""
    return {"text/plain": repr(listing), "text/html": listing._repr_html_(),
            SOURCE_MIME: source_payload(listing.kernel, listing.source, [listing])}


def _kernel_html(name: str, source, listings) -> str:
    parts = [f"<div><b>kernel <code>{escape(name)}</code></b></div>"]
    if source:
        lines, first, _ = source
        parts.append(highlight("\n".join(lines), "python", linenostart=first, linenos=True))
    for lst in listings:
        body = highlight(lst.text, lst.target) if lst.ok else f"<pre>{escape(lst.error)}</pre>"
        parts.append(f"<details><summary>{escape(lst.title)}</summary>{body}</details>")
    return "<div>" + "".join(parts) + "</div>"


# ---- tapes -------------------------------------------------------------------------------------

def tape_payload(model) -> dict:
    """A ``tapegraph.TapeModel`` as data: arrays with their values and gradients now, records
    with what they read and write, and each launched kernel's adjoint listing."""
    kernels: list = []
    index_of: dict = {}
    records = []
    for rec in model.records:
        k = None
        if rec.kernel is not None:
            k = index_of.get(id(rec.kernel))
            if k is None:
                k = index_of[id(rec.kernel)] = len(kernels)
                kernels.append(source_payload(rec.kernel.key, source_of(rec.kernel),
                                              [get_listing(rec.kernel, "ir", adjoint=True)]))
        records.append({"index": rec.index, "kind": rec.kind, "label": rec.label,
                        "reads": list(rec.reads), "writes": list(rec.writes), "kernel": k})
    norms = model.grad_norms()
    arrays = [_array_payload(name, a, norms.get(name)) for name, a in model.arrays.items()]
    return {"version": VERSION, "title": tape_title(model), "arrays": arrays,
            "records": records, "kernels": kernels}


def tape_title(model) -> str:
    launches = sum(1 for r in model.records if r.kind == "launch")
    ops = len(model.records) - launches
    memory = model.tape.memory()  # the copies the tape keeps for in-place updates
    kept = f", keeps {memory}" if memory.snapshots else ""
    return (f"<kernlab tape: {launches} launch{'es' if launches != 1 else ''}, "
            f"{ops} array op{'s' if ops != 1 else ''}, {len(model.arrays)} arrays{kept}>")


def _array_payload(name: str, a, norm) -> dict:
    values = _preview(a)
    grad = _preview(a.grad) if a.grad is not None else None
    return {"name": name, "shape": [int(n) for n in a.shape], "dtype": str(a.dtype),
            "device": str(a.device), "size": int(a.size), "requires_grad": bool(a.requires_grad),
            "values": values, "grad": grad, "grad_norm": None if norm is None else fmt(norm),
            "truncated": int(a.size) > PREVIEW}


def _preview(a) -> list[str]:
    """The first PREVIEW elements of an array, each as text (a vector as '(x, y, z)')."""
    arr = np.asarray(a.numpy())
    n = int(a.size)
    elements = arr.reshape((n,) + arr.shape[len(a.shape):]) if n else arr.reshape(0)
    return [fmt(elements[k]) for k in range(min(n, PREVIEW))]


def tape_html(model) -> str:
    """The static fallback: the graph as SVG and the records as a table."""
    from .tapegraph import tape_svg

    rows = [(f"#{r.index}", r.label, ", ".join(r.reads), ", ".join(r.writes))
            for r in model.records]
    return (f"<div><b>{escape(tape_title(model))}</b></div>"
            + tape_svg(model, model.grad_norms())
            + html_table(["record", "what", "reads", "writes"], rows))


def tape_bundle(model) -> dict:
    """A tape's display: the interactive graph, with a static SVG and table as fallback."""
    return {"text/plain": tape_title(model), "text/html": tape_html(model),
            TAPE_MIME: tape_payload(model)}


# ---- the widgets' bundles ---------------------------------------------------------------------

def view_bundle(obj) -> tuple[dict, dict]:
    """A ``display.RichRepr``'s bundle as (data, metadata): its text and HTML forms, kernlab's
    own type where it has one, and for a live widget the view type with its model id."""
    plain = getattr(obj, "_plain", obj._text)  # a view may say more in text than its repr
    data = {"text/plain": plain(), "text/html": obj._html()}
    data.update(extra_mime(obj))
    metadata: dict = {}
    model_id = getattr(obj, "model_id", None)  # an ipywidget's; None once it is closed
    if getattr(obj, "view_kind", None) and model_id:
        data[VIEW_MIME] = {"version": VERSION, "view": obj.view_kind}
        metadata[VIEW_MIME] = {"model_id": str(model_id)}
    return data, metadata


def extra_mime(obj) -> dict:
    """kernlab's MIME data for a widget's bundle, rendered by the extension where the live
    widget is not shown: the inspector's kernel, the tape view's tape."""
    inspector = sys.modules.get("kernlab.notebook.inspector")
    if inspector is not None and isinstance(obj, inspector.InspectView):
        return {SOURCE_MIME: source_payload(obj.kernel.key, obj._source,
                                            list(obj.listings.values()))}
    tapeview = sys.modules.get("kernlab.notebook.tapeview")
    if tapeview is not None and isinstance(obj, tapeview.TapeView):
        return {TAPE_MIME: tape_payload(obj.model)}
    return {}
