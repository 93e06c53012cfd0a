"""``kl.lab.grads``: arrays' values and gradients, refreshed in place after each backward.

A small array (up to ``TABLE_LIMIT`` numbers) is a table of index, value and gradient; a
larger one is a matplotlib plot (1-D: value and gradient against the index; 2-D and up:
heat maps) rendered to a PNG in an Image widget. ``refresh()`` re-renders into the same
widgets, so no new output appears; every live view refreshes after ``Tape.backward``.
"""
from __future__ import annotations

import base64
import io

import ipywidgets as widgets
import numpy as np

from . import live
from .display import RichRepr, escape, fmt, html_table, user_name

TABLE_LIMIT = 64  # numbers (elements x components) shown as a table; more are plotted


class GradsView(RichRepr, widgets.VBox):
    view_kind = "grads"  # kernlab's view type (mime.view_bundle)

    def __init__(self, arrays: dict):
        self.arrays = dict(arrays)
        self.refreshes = 0
        self.panels = {}
        for name, a in self.arrays.items():
            title = widgets.HTML()
            body = widgets.HTML() if _numbers(a) <= TABLE_LIMIT else widgets.Image(format="png")
            self.panels[name] = (title, body)
        super().__init__([widgets.VBox(list(p)) for p in self.panels.values()])
        self._fill()
        live.register(self)

    def data(self) -> dict:
        """name -> (values, gradient or None), as NumPy copies of what is shown."""
        return {name: (np.array(a.numpy()),
                       None if a.grad is None else np.array(a.grad.numpy()))
                for name, a in self.arrays.items()}

    def refresh(self):
        """Re-render from the arrays' current values and gradients, in place."""
        self._fill()
        self.refreshes += 1

    def close(self):
        live.unregister(self)
        super().close()

    def _fill(self):
        for name, (values, grad) in self.data().items():
            title, body = self.panels[name]
            title.value = _title(name, self.arrays[name], grad)
            if isinstance(body, widgets.Image):
                body.value = plot_png(name, values, grad, self.arrays[name].ndim)
            else:
                body.value = _table(values, grad, self.arrays[name].ndim)

    # ---- repr and static fallback -----------------------------------------------------

    def _text(self) -> str:
        parts = [f"{name} {tuple(a.shape)} {a.dtype}" for name, a in self.arrays.items()]
        return "<kernlab grads: " + ", ".join(parts) + ">"

    def _html(self) -> str:
        out = [f"<div><b>{escape(self._text())}</b></div>"]
        for name, (values, grad) in self.data().items():
            a = self.arrays[name]
            out.append(_title(name, a, grad))
            if _numbers(a) <= TABLE_LIMIT:
                out.append(_table(values, grad, a.ndim))
            else:
                png = base64.b64encode(plot_png(name, values, grad, a.ndim)).decode()
                out.append(f"<img src='data:image/png;base64,{png}'/>")
        return "".join(out)


def named_arrays(arrays, named: dict) -> dict:
    """Positional arrays get their notebook name (or a0, a1, ...); keywords keep theirs."""
    out = {}
    for k, a in enumerate(arrays):
        out[user_name(a, f"a{k}")] = a
    out.update(named)
    return out


def _numbers(a) -> int:
    return int(np.asarray(a.numpy()).size)


def _title(name, a, grad) -> str:
    norm = "no gradient (requires_grad=False)" if grad is None else \
        f"|grad| = {fmt(float(np.linalg.norm(grad.astype(np.float64))))}"
    return (f"<div><b><code>{escape(name)}</code></b> {escape(tuple(a.shape))} "
            f"{escape(a.dtype)} · {escape(norm)}</div>")


def _table(values, grad, ndim) -> str:
    rows = []
    for idx in np.ndindex(values.shape[:ndim]):
        label = idx[0] if len(idx) == 1 else idx
        rows.append((label, fmt(values[idx]), "-" if grad is None else fmt(grad[idx])))
    return html_table(["index", "value", "grad"], rows)


def plot_png(name, values, grad, ndim) -> bytes:
    """Values and gradient as a PNG: lines for 1-D scalars, heat maps otherwise."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [("value", values)] + ([("grad", grad)] if grad is not None else [])
    fig = Figure(figsize=(4.2 * len(panels), 2.6), dpi=80)
    FigureCanvasAgg(fig)
    for k, (label, data) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), k + 1)
        data = np.asarray(data, np.float64)
        if ndim == 1 and data.ndim == 1:
            ax.plot(data, lw=1)
            ax.set_xlabel("index")
        else:
            flat = data.reshape(data.shape[0], -1)
            if label == "grad":  # diverging colours, centred on zero
                top = float(np.max(np.abs(flat))) or 1.0
                image = ax.imshow(flat, aspect="auto", interpolation="nearest",
                                  cmap="RdBu_r", vmin=-top, vmax=top)
            else:
                image = ax.imshow(flat, aspect="auto", interpolation="nearest")
            fig.colorbar(image, ax=ax)
        ax.set_title(f"{name} {label}", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
