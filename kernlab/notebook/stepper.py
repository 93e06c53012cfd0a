"""``kl.lab.step``: micrograd's view of a real kernel — one thread, line by line, through
the forward replay and the reverse sweep, with every local's primal and adjoint value;
with ``mode="tangent"``, through the tangent (forward-mode) sweep, with every local's
value and tangent.

The trace is computed once (``trace.trace_thread``, on copies of the arrays); the widget
only moves over it. State for tests and scripts: ``.position``, ``.step`` (the Step),
``.current`` (local name -> value after that line), ``.arrays`` (adjoint arrays then),
``.steps``; ``next()``, ``prev()``, ``reset()`` do what the buttons do.
"""
from __future__ import annotations

import ipywidgets as widgets

from .display import FILL, RichRepr, escape, fmt, highlight, html_table, kernel_source
from .trace import trace_thread


class StepView(RichRepr, widgets.VBox):
    view_kind = "step"  # kernlab's view type (mime.view_bundle)

    def __init__(self, kernel, dim, inputs, tid=0, seeds=None, max_steps=None,
                 mode="adjoint"):
        kwargs = {} if max_steps is None else {"max_steps": max_steps}
        self.kernel = kernel
        self.trace = trace_thread(kernel, dim, inputs, tid=tid, seeds=seeds, mode=mode,
                                  **kwargs)
        self.mode = self.trace.mode
        # what a local's companion is called in the tables: its adjoint or its tangent
        self.companion = "tangent" if self.mode == "tangent" else "adjoint"
        self.steps = self.trace.steps
        self._source = kernel_source(kernel)
        self.prev_button = widgets.Button(description="◀ Prev", layout={"width": "7em"})
        self.next_button = widgets.Button(description="Next ▶", layout={"width": "7em"})
        self.reset_button = widgets.Button(description="Reset", layout={"width": "7em"})
        self.slider = widgets.IntSlider(value=0, min=0, max=max(0, len(self.steps) - 1),
                                        description="step", continuous_update=True,
                                        layout={"width": "28em", "min_width": "0"})
        self.header = widgets.HTML()
        self.source_view = widgets.HTML(layout=dict(FILL, flex="3 1 0%"))
        self.values_view = widgets.HTML(layout=dict(FILL, flex="2 1 0%"))
        self.arrays_view = widgets.HTML()
        self.prev_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.reset_button.on_click(lambda _: self.reset())
        self.slider.observe(lambda _: self._render(), names="value")
        controls = widgets.HBox([self.reset_button, self.prev_button, self.next_button,
                                 self.slider])
        super().__init__([self.header, controls,
                          widgets.HBox([self.source_view, self.values_view]),
                          self.arrays_view])
        self._render()

    # ---- state -------------------------------------------------------------------------

    @property
    def position(self) -> int:
        return self.slider.value

    @position.setter
    def position(self, value: int):
        self.slider.value = max(0, min(int(value), len(self.steps) - 1))

    @property
    def step(self):
        return self.steps[self.position] if self.steps else None

    @property
    def current(self) -> dict:
        return dict(self.step.values) if self.steps else {}

    @property
    def arrays(self) -> dict:
        return dict(self.step.arrays) if self.steps else {}

    def next(self):
        self.position = self.position + 1

    def prev(self):
        self.position = self.position - 1

    def reset(self):
        self.position = 0

    # ---- rendering ---------------------------------------------------------------------

    def _render(self):
        step = self.step
        if step is None:
            self.header.value = "<b>no steps recorded</b>"
            return
        k = self.position
        cut = " (trace cut here)" if self.trace.truncated and k == len(self.steps) - 1 else ""
        self.header.value = (
            f"<div><b>kernel <code>{escape(self.kernel.key)}</code></b>, thread "
            f"{escape(self.trace.tid)} · step {k + 1} of {len(self.steps)}{escape(cut)} · "
            f"<b>{escape(step.section)}</b>"
            + (f" ({escape(step.phase)})" if step.section == "reverse" else "")
            + (" (values and their tangents, in program order)"
               if step.section == "tangent" else "")
            + f" · line {step.line}"
            + "".join(f" · {escape(loop)}" for loop in step.loops) + "</div>")
        self.source_view.value = self._source_html(step)
        self.values_view.value = self._values_html(k)
        self.arrays_view.value = self._arrays_html(step)

    def _source_html(self, step) -> str:
        lines, first, file = self._source
        if step.file == file and first <= step.line < first + len(lines):
            return highlight("\n".join(lines), "python", hl_lines=[step.line - first + 1],
                             linenostart=first, linenos=True, fit=True)
        # a line of an inlined func: show it on its own
        return f"<div>in <code>{escape(step.file)}</code></div>" + highlight(
            step.text, "python", hl_lines=[1], linenostart=step.line, linenos=True, fit=True)

    def rows(self, position: int | None = None) -> list:
        """(name, value, adjoint) for each of the kernel's locals at a step; in mode
        "tangent", (name, value, tangent)."""
        step = self.steps[self.position if position is None else position]
        values, prefix = step.values, self.trace.prefix
        return [(name, values.get(name), values.get(f"{prefix}{name}"))
                for name in self.trace.primal_vars]

    def _values_html(self, k: int) -> str:
        rows = self.rows(k)
        before = self.rows(k - 1) if k > 0 else rows
        changed = [j for j, (a, b) in enumerate(zip(rows, before)) if a != b]
        table = [(n, fmt(v), fmt(a)) for n, v, a in rows]
        return html_table(["local", "value", self.companion], table, bold_rows=changed)

    def _arrays_html(self, step) -> str:
        parts = []
        for name, data in step.arrays.items():
            text = "(too large to show per step)" if data is None else fmt(data.reshape(-1)) \
                if data.ndim == 1 else escape(str(data.tolist()))
            parts.append(f"<div><code>{escape(name)}</code> = {text}</div>")
        return "".join(parts)

    # ---- repr and static fallback -----------------------------------------------------

    def _text(self) -> str:
        tid = self.trace.tid[0] if len(self.trace.tid) == 1 else self.trace.tid
        sweep = ", tangent sweep" if self.mode == "tangent" else ""
        return (f"<kernlab step: kernel '{self.kernel.key}' thread {tid}{sweep} "
                f"({len(self.steps)} steps)>")

    def _html(self) -> str:
        rows = []
        prefix = self.trace.prefix
        for step in self.steps:
            vals = ", ".join(f"{n}={fmt(step.values.get(n))}" for n in self.trace.primal_vars
                             if n in step.values)
            adjs = ", ".join(f"{prefix}{n}={fmt(step.values[f'{prefix}{n}'])}"
                             for n in self.trace.primal_vars if f"{prefix}{n}" in step.values)
            rows.append((step.phase, step.line,
                         ", ".join(str(loop.iteration) for loop in step.loops),
                         step.text.strip(), vals, adjs))
        head = f"<div><b>{escape(self._text())}</b></div>"
        tail = ""
        if self.steps:  # what the thread left in the adjoint (tangent) arrays
            tail = (f"<div style='margin-top: 4px'>after the last step:</div>"
                    + self._arrays_html(self.steps[-1]))
        return head + html_table(["phase", "line", "iteration", "source", "values",
                                  f"{self.companion}s"], rows) + tail
