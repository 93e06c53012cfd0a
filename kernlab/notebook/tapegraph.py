"""What a Tape recorded, as data, as an inline SVG graph, and replayed backward one record
at a time.

``TapeModel`` names the arrays (keyword names given by the caller, else their name in the
notebook, else the kernel parameter they were passed as) and lists each record with the
arrays it reads and writes. ``BackwardReplay`` runs the records' adjoints one by one,
newest first, **on copies** of the arrays and their gradients (on the CPU): the real
arrays and the tape are never touched, so stepping can be repeated and never disturbs
gradients a real ``tape.backward()`` produced. It starts from zero gradients plus the
seeds (``loss`` gets 1, ``grads`` maps arrays to seed values; by default every array that
some record writes and no later record reads is seeded with ones).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.nodes import Op
from ..runtime.tape import RecordedArrayOp, RecordedLaunch, _array_op_adjoint
from .display import escape, fmt, user_name


@dataclass
class RecordInfo:
    index: int
    kind: str                  # "launch", or the array op: "clone", "copy", "assign"
    label: str
    kernel: object = None      # the Kernel of a launch
    reads: list = field(default_factory=list)   # array names
    writes: list = field(default_factory=list)


class TapeModel:
    def __init__(self, tape, names: dict | None = None):
        import kernlab as kl

        self.tape = tape
        self.raw = list(tape.records)
        self.arrays: dict = {}      # name -> array (the real one)
        self._by_id: dict = {}      # id(array) -> name
        for name, a in (names or {}).items():  # the caller's names win over the notebook's
            self._name(a, name, given=True)
        self.records: list[RecordInfo] = []
        for k, rec in enumerate(self.raw):
            if isinstance(rec, RecordedLaunch):
                cmd = rec.launch
                func = cmd.kernel.ir
                loads = {i.args[0] for i in func.body.walk() if i.op is Op.LOAD}
                stores = {i.args[0] for i in func.body.walk() if i.op in (Op.STORE, Op.ATOMIC)}
                info = RecordInfo(k, "launch", f"{cmd.kernel.key} dim={_dim(cmd.dim)}",
                                  cmd.kernel)
                for p, a in zip(func.params, cmd.params):
                    if isinstance(a, kl.array):
                        name = self._name(a, p.name)
                        if p.value in loads:
                            info.reads.append(name)
                        if p.value in stores:
                            info.writes.append(name)
            else:
                src, dest = self._name(rec.src, "src"), self._name(rec.dest, "dest")
                info = RecordInfo(k, rec.kind, f"{rec.kind} {src} → {dest}", None,
                                  [src], [dest])
            self.records.append(info)

    def _name(self, a, hint: str, given: bool = False) -> str:
        name = self._by_id.get(id(a))
        if name is None:
            base = hint if given else user_name(a, hint)
            name, n = base, 1
            while name in self.arrays:
                n += 1
                name = f"{base}#{n}"
            self.arrays[name] = a
            self._by_id[id(a)] = name
        return name

    def name_of(self, a) -> str | None:
        return self._by_id.get(id(a))

    def terminal_outputs(self) -> list[str]:
        """Arrays some record writes and no later record reads."""
        out = []
        for k, rec in enumerate(self.records):
            for name in rec.writes:
                later = any(name in r.reads for r in self.records[k + 1:])
                if not later and name not in out:
                    out.append(name)
        return out

    def grad_norms(self) -> dict:
        """name -> the norm of the real array's gradient now (None without one)."""
        return {name: _norm(a.grad.numpy() if a.grad is not None else None)
                for name, a in self.arrays.items()}


def _dim(dim) -> str:
    return str(dim[0]) if len(dim) == 1 else "×".join(map(str, dim))


def _norm(g):
    return None if g is None else float(np.linalg.norm(np.asarray(g, np.float64)))


# ---- stepping backward on copies -------------------------------------------------------------

class BackwardReplay:
    def __init__(self, model: TapeModel, loss=None, grads: dict | None = None):
        import kernlab as kl

        self.model = model
        seeds: dict = {}
        if loss is not None:
            seeds[self._seed_name(loss)] = 1.0
        for a, g in (grads or {}).items():
            seeds[self._seed_name(a)] = g.numpy() if isinstance(g, kl.array) else g
        if not seeds:
            seeds = {name: 1.0 for name in model.terminal_outputs()}
        self.seeds = seeds
        self.copies = {}
        for name, a in model.arrays.items():
            c = kl.array(np.array(a.numpy(), copy=True), dtype=a.dtype)
            if a.grad is not None or name in seeds:
                c.requires_grad = True
                if name in seeds:
                    g = c.grad.numpy()
                    g[...] = np.broadcast_to(np.asarray(seeds[name], g.dtype), g.shape)
            self.copies[name] = c
        self.snapshots = [self._snapshot()]

    def _seed_name(self, a) -> str:
        name = self.model.name_of(a)
        if name is None:
            raise ValueError("a seeded array is not one the tape recorded")
        return name

    def _snapshot(self) -> dict:
        return {name: (None if c.grad is None else np.array(c.grad.numpy()))
                for name, c in self.copies.items()}

    def __len__(self) -> int:
        return len(self.model.records) + 1

    def grads_at(self, position: int) -> dict:
        """name -> gradient after the newest ``position`` records were reversed."""
        while len(self.snapshots) <= position:
            k = len(self.model.records) - len(self.snapshots)
            self._reverse(self.model.raw[k])
            self.snapshots.append(self._snapshot())
        return self.snapshots[position]

    def norms_at(self, position: int) -> dict:
        return {name: _norm(g) for name, g in self.grads_at(position).items()}

    def record_at(self, position: int) -> int | None:
        """The index of the record the step to ``position`` reversed (None at 0)."""
        return None if position == 0 else len(self.model.records) - position

    def _reverse(self, rec):
        import kernlab as kl

        if isinstance(rec, RecordedLaunch):
            cmd = rec.launch
            params = [self.copies[self.model.name_of(a)] if isinstance(a, kl.array) else a
                      for a in cmd.params]
            adj = [p.grad if isinstance(p, kl.array) else None for p in params]
            for k, kept in rec.snapshots.items():  # in-place updates: the values it read
                if kept is not None:
                    params[k] = kept
            kl.launch(cmd.kernel, cmd.dim, inputs=params, adj_inputs=adj, adjoint=True,
                      device="cpu")
            return
        # clone / copy / assign: the same adjoint Tape.backward runs, on the copies
        dest = self.copies[self.model.name_of(rec.dest)]
        src = self.copies[self.model.name_of(rec.src)]
        _array_op_adjoint(RecordedArrayOp(rec.kind, dest, src, rec.info))


# ---- the graph ---------------------------------------------------------------------------------

# Colours: JupyterLab's theme variables (light-theme fallbacks for nbconvert and other front
# ends), fills translucent so the theme's text colour reads on them in light and dark themes.
_INK = "var(--jp-content-font-color1, #1f1f1f)"
_EDGE = "var(--jp-content-font-color3, #9e9e9e)"
_PAPER = "var(--jp-layout-color0, #fff)"
_ARRAY_EDGE = "var(--jp-content-font-color2, #555)"
_LAUNCH = "rgba(74, 111, 181, 0.18)"
_LAUNCH_EDGE = "var(--jp-brand-color1, #4a6fb5)"
_DONE = "rgba(60, 170, 60, 0.28)"
_SELECTED = "var(--jp-warn-color0, #e07000)"
_GRAD = "var(--jp-error-color1, #a33)"


def tape_svg(model: TapeModel, norms: dict | None = None, selected: int | None = None,
             reversed_from: int | None = None) -> str:
    """Records and array versions as a left-to-right dataflow graph (inline SVG, laid out
    here: no graphviz). Each write makes a new version of the array. ``reversed_from``:
    records with this index or later are drawn as already reversed."""
    norms = norms or {}
    col: dict = {}
    version: dict = {}
    nodes: list = []   # (key, kind, label, sub)
    edges: list = []
    last_node: dict = {}

    def array_node(name):
        key = ("a", name, version.get(name, 0))
        if key not in col:
            col[key] = 0
            nodes.append(key)
        last_node[name] = key
        return key

    for rec in model.records:
        rkey = ("r", rec.index)
        inputs = [array_node(n) for n in rec.reads]
        col[rkey] = 1 + max((col[k] for k in inputs), default=0)
        nodes.append(rkey)
        edges += [(k, rkey) for k in inputs]
        for name in rec.writes:
            version[name] = version.get(name, 0) + 1
            akey = array_node(name)
            col[akey] = col[rkey] + 1
            edges.append((rkey, akey))
    for name in model.arrays:
        if name not in last_node:
            array_node(name)

    rows: dict = {}
    pos: dict = {}
    for key in nodes:
        c = col[key]
        rows[c] = rows.get(c, 0) + 1
        pos[key] = (20 + c * 170, 24 + (rows[c] - 1) * 58)
    width = 20 + (max(col.values(), default=0) + 1) * 170
    height = 24 + max(rows.values(), default=1) * 58
    # viewBox + max-width: a long tape shrinks to its output's width instead of being cut off
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" style="max-width: 100%; height: auto; '
           f'fill: {_INK}" font-family="monospace" font-size="11">',
           '<defs><marker id="kl-arrow" viewBox="0 0 10 10" refX="10" refY="5" '
           'markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
           f'<path d="M 0 0 L 10 5 L 0 10 z" style="fill: {_EDGE}"/></marker></defs>']
    for a, b in edges:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        out.append(f'<path d="M {x1 + 130} {y1 + 14} C {x1 + 150} {y1 + 14}, {x2 - 20} '
                   f'{y2 + 14}, {x2} {y2 + 14}" style="fill: none; stroke: {_EDGE}" '
                   'marker-end="url(#kl-arrow)"/>')
    for key in nodes:
        x, y = pos[key]
        if key[0] == "r":
            rec = model.records[key[1]]
            done = reversed_from is not None and rec.index >= reversed_from
            fill = _DONE if done else _LAUNCH
            stroke, sw = (_SELECTED, 3) if rec.index == selected else (_LAUNCH_EDGE, 1)
            out.append(f'<rect x="{x}" y="{y}" width="130" height="28" rx="6" '
                       f'style="fill: {fill}; stroke: {stroke}; stroke-width: {sw}"/>')
            label = f"#{rec.index} {rec.kernel.key if rec.kernel else rec.kind}"
            out.append(f'<text x="{x + 65}" y="{y + 18}" text-anchor="middle">'
                       f'{escape(label[:18])}</text>')
        else:
            _, name, v = key
            out.append(f'<ellipse cx="{x + 65}" cy="{y + 14}" rx="65" ry="14" '
                       f'style="fill: {_PAPER}; stroke: {_ARRAY_EDGE}"/>')
            label = f"{name}@{v}" if v else name  # not y′: in a course that reads as dy
            out.append(f'<text x="{x + 65}" y="{y + 18}" text-anchor="middle">'
                       f'{escape(label[:18])}</text>')
            if last_node.get(name) == key and norms.get(name) is not None:
                out.append(f'<text x="{x + 65}" y="{y + 42}" text-anchor="middle" '
                           f'style="fill: {_GRAD}">|grad| {escape(fmt(norms[name]))}</text>')
    out.append("</svg>")
    return "".join(out)
