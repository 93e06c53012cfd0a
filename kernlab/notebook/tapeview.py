"""``kl.lab.tape``: a Tape's records as a graph, each record's adjoint listing, and a
backward pass you step through one record at a time.

Stepping runs the records' adjoints on copies (see ``tapegraph.BackwardReplay``): the
real arrays keep the gradients ``tape.backward()`` gave them. The table shows, per array,
the gradient norm at the current step next to the real array's gradient norm now.
State: ``.position`` (records reversed so far), ``.selected`` (record index),
``.grads`` (name -> gradient at this step), ``.norms``; ``step_backward()``,
``step_forward()``, ``reset()`` do what the buttons do; ``refresh()`` re-reads the real
gradients (called after every ``tape.backward()``).
"""
from __future__ import annotations

import ipywidgets as widgets

from . import live
from .display import FILL, RichRepr, escape, fmt, get_listing, highlight, html_table
from .tapegraph import BackwardReplay, TapeModel, tape_svg


class TapeView(RichRepr, widgets.VBox):
    view_kind = "tape"  # kernlab's view type (mime.view_bundle)

    def __init__(self, tape, loss=None, grads=None, names: dict | None = None):
        self.model = TapeModel(tape, names)
        self.replay = BackwardReplay(self.model, loss=loss, grads=grads)
        n = len(self.model.records)
        self.graph = widgets.HTML()
        self.record_select = widgets.Select(
            options=[(f"#{r.index} {r.label}", r.index) for r in self.model.records],
            value=n - 1 if n else None, rows=min(max(n, 2), 8),
            layout={"width": "20em", "min_width": "12em"})
        self.record_view = widgets.HTML(layout=FILL)
        self.back_button = widgets.Button(description="Step backward ▶",
                                          layout={"width": "11em"})
        self.undo_button = widgets.Button(description="◀ Undo step", layout={"width": "9em"})
        self.reset_button = widgets.Button(description="Reset", layout={"width": "6em"})
        self.slider = widgets.IntSlider(value=0, min=0, max=n, description="reversed",
                                        layout={"width": "24em", "min_width": "0"})
        self.status = widgets.HTML()
        self.grads_view = widgets.HTML()
        self.back_button.on_click(lambda _: self.step_backward())
        self.undo_button.on_click(lambda _: self.step_forward())
        self.reset_button.on_click(lambda _: self.reset())
        self.slider.observe(lambda _: self._on_position(), names="value")
        self.record_select.observe(lambda _: self._render(), names="value")
        controls = widgets.HBox([self.reset_button, self.undo_button, self.back_button,
                                 self.slider])
        super().__init__([self.graph, widgets.HBox([self.record_select, self.record_view]),
                          controls, self.status, self.grads_view])
        self._render()
        live.register(self)

    # ---- state -------------------------------------------------------------------------

    @property
    def position(self) -> int:
        return self.slider.value

    @position.setter
    def position(self, value: int):
        self.slider.value = max(0, min(int(value), len(self.model.records)))

    @property
    def selected(self):
        return self.record_select.value

    @selected.setter
    def selected(self, index: int):
        self.record_select.value = index

    @property
    def grads(self) -> dict:
        return self.replay.grads_at(self.position)

    @property
    def norms(self) -> dict:
        return self.replay.norms_at(self.position)

    def step_backward(self):
        self.position = self.position + 1

    def step_forward(self):
        self.position = self.position - 1

    def reset(self):
        self.position = 0

    def refresh(self):
        self._render()

    def close(self):
        live.unregister(self)
        super().close()

    # ---- rendering ---------------------------------------------------------------------

    def _on_position(self):
        index = self.replay.record_at(self.position)
        if index is not None and index != self.selected:
            self.record_select.value = index  # re-renders through its observer
        else:
            self._render()

    def _render(self):
        n, k = len(self.model.records), self.position
        norms = self.norms
        first_done = n - k if k else None
        # before stepping, the graph shows what tape.backward() left in the real arrays
        shown = norms if k else self.model.grad_norms()
        self.graph.value = tape_svg(self.model, shown, self.selected, first_done)
        self.record_view.value = self._record_html(self.selected)
        seeds = ", ".join(sorted(self.replay.seeds))
        last = self.replay.record_at(k)
        what = "nothing reversed yet" if last is None else \
            f"reversed #{last} {self.model.records[last].label}"
        self.status.value = (f"<div>{k} of {n} records reversed · {escape(what)} · seeds: "
                             f"{escape(seeds or '-')} · stepping runs on copies</div>")
        real = self.model.grad_norms()
        rows = [(name, tuple(a.shape), fmt(norms.get(name)), fmt(real.get(name)))
                for name, a in self.model.arrays.items()]
        self.grads_view.value = html_table(["array", "shape", "|grad| at this step",
                                            "|grad| of the array now"], rows)

    def _record_html(self, index) -> str:
        if index is None:
            return ""
        rec = self.model.records[index]
        head = (f"<div><b>#{rec.index} {escape(rec.label)}</b> · reads "
                f"{escape(', '.join(rec.reads) or '-')} · writes "
                f"{escape(', '.join(rec.writes) or '-')}</div>")
        if rec.kernel is None:
            return head + (f"<div>adjoint: grad of <code>{escape(rec.reads[0])}</code> += "
                           f"grad of <code>{escape(rec.writes[0])}</code>"
                           + ("" if rec.kind == "clone" else "; that part of it is zeroed")
                           + "</div>")
        listing = get_listing(rec.kernel, "ir", adjoint=True)
        body = highlight(listing.text, "ir", max_height="20em", fit=True) if listing.ok else \
            f"<pre>{escape(listing.error)}</pre>"
        return head + body

    # ---- repr and static fallback -----------------------------------------------------

    def _text(self) -> str:
        from .mime import tape_title
        return tape_title(self.model)  # with the copies kept for in-place updates

    def _html(self) -> str:
        real = self.model.grad_norms()
        rows = [(f"#{r.index}", r.label, ", ".join(r.reads), ", ".join(r.writes))
                for r in self.model.records]
        return (f"<div><b>{escape(self._text())}</b></div>"
                + tape_svg(self.model, real)
                + html_table(["record", "what", "reads", "writes"], rows))
