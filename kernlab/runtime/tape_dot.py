"""Tape.visualize(): the recording as GraphViz DOT text.

Arrays are ellipses (tooltip ``array: dtype=..., shape=...``), kernel launches and array
ops are boxes with one edge per array read (array -> launch) and written (launch -> array).
With ``simplify``, a sequence of records repeated back to back (the same kernels on the
same arrays) is drawn once, labelled "repeated Nx". Scopes become clusters.
"""
from __future__ import annotations

import html

from ..ir.nodes import Op
from .array import array


def _node_name(a) -> str:
    return f"arr{id(a)}"


def _record_parts(rec, tape):
    """(label, reads, writes) of one tape entry."""
    from .tape import RecordedArrayOp
    if isinstance(rec, RecordedArrayOp):
        return f"wp.{rec.kind}", [("src", rec.src)], [("dest", rec.dest)]
    info = tape._info.get(id(rec))
    if info is None:
        name = getattr(rec, "__name__", type(rec).__name__)
        return f"{name} (record_func)", [], []
    cmd = rec
    func = cmd.kernel.ir
    loads = {i.args[0] for i in func.body.walk() if i.op is Op.LOAD}
    stores = {i.args[0] for i in func.body.walk() if i.op in (Op.STORE, Op.ATOMIC)}
    reads, writes = [], []
    for p, a in zip(func.params, cmd.params):
        if isinstance(a, array):
            if p.value in loads or p.value not in stores:
                reads.append((p.name, a))
            if p.value in stores:
                writes.append((p.name, a))
    return cmd.kernel.key, reads, writes


def _signature(parts) -> tuple:
    label, reads, writes = parts
    return (label, tuple(id(a) for _, a in reads), tuple(id(a) for _, a in writes))


def _fold(sigs: list) -> list:
    """[(start, length, repeats)]: runs of a repeated block of records."""
    out, k, n = [], 0, len(sigs)
    while k < n:
        best = (1, 1)
        for length in range(1, min(16, (n - k) // 2) + 1):
            reps = 1
            while k + (reps + 1) * length <= n and \
                    sigs[k + reps * length:k + (reps + 1) * length] == sigs[k:k + length]:
                reps += 1
            if reps > 1 and reps * length > best[0] * best[1]:
                best = (length, reps)
        out.append((k, best[0], best[1]))
        k += best[0] * best[1]
    return out


def tape_to_dot(tape, simplify=True, labels=None, hide_readonly=False, scopes=True,
                direction="LR", keep=()) -> str:
    labels = labels or {}
    entries = [r for r in tape.launches if r is not None]
    parts = [_record_parts(r, tape) for r in entries]
    blocks = _fold([_signature(p) for p in parts]) if simplify else \
        [(k, 1, 1) for k in range(len(parts))]
    written = {id(a) for _, _, ws in parts for _, a in ws}
    names: dict = {}
    for _, reads, writes in parts:
        for pname, a in reads + writes:
            names.setdefault(id(a), labels.get(a, pname))
    lines = ["digraph Tape {", f"\trankdir={direction};",
             '\tnode [fontname="Helvetica"];']
    arrays: dict = {}

    def array_node(a):
        if id(a) in arrays:
            return
        arrays[id(a)] = a
        shape = "x".join(str(s) for s in a.shape)
        tip = html.escape(f"array: dtype={a.dtype}, shape=({shape})", quote=True)
        name = html.escape(str(names.get(id(a), "array")), quote=True)
        lines.append(f'\t{_node_name(a)} [label="{name}", shape=ellipse, tooltip="{tip}"];')

    scope_marks = _scope_marks(tape.scopes) if scopes else {}
    depth = 1
    for start, length, reps in blocks:
        for k in range(start, start + length * reps):
            for name in scope_marks.get(("begin", k), []):
                lines.append("\t" * depth + f"subgraph cluster_{k}_{depth} {{")
                depth += 1
                lines.append("\t" * depth + f'label="{html.escape(str(name), quote=True)}";')
        for k in range(start, start + length):
            label, reads, writes = parts[k]
            node = f"rec{k}"
            text = label if reps == 1 else f"{label} (repeated {reps}x)"
            lines.append("\t" * depth + f'{node} [label="{html.escape(text, quote=True)}", '
                         'shape=box];')
            for _, a in reads:
                if hide_readonly and id(a) not in written and a not in keep:
                    continue
                array_node(a)
                lines.append("\t" * depth + f"{_node_name(a)} -> {node};")
            for _, a in writes:
                array_node(a)
                lines.append("\t" * depth + f"{node} -> {_node_name(a)};")
        for k in range(start, start + length * reps):
            for _ in range(scope_marks.get(("end", k), 0)):
                if depth > 1:
                    depth -= 1
                    lines.append("\t" * depth + "}")
    while depth > 1:
        depth -= 1
        lines.append("\t" * depth + "}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _scope_marks(scopes) -> dict:
    """("begin", record index) -> scope names opened before it; ("end", index) -> number
    of scopes closed after it."""
    marks: dict = {}
    opened: list = []
    for index, name, _ in scopes:
        if name is not None:
            marks.setdefault(("begin", index), []).append(name)
            opened.append(index)
        elif opened:
            start = opened.pop()
            last = max(index - 1, start)
            marks[("end", last)] = marks.get(("end", last), 0) + 1
    return marks
