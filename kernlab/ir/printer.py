"""Readable IR listings: one instruction per line, ``name:type = op args  # file:line``."""
from __future__ import annotations

import os

import numpy as np

from .nodes import Block, Function, Instr, Op

COMMENT_COLUMN = 60


def print_function(func: Function) -> str:
    params = ", ".join(f"{p.value!r}:{p.type}" for p in func.params)
    kind = "adjoint kernel" if func.is_adjoint else "kernel"
    lines = [f"{kind} {func.name}({params}) {{   # {_where(func.loc)}"]
    if func.vars:
        lines.append("  locals " + ", ".join(f"{v!r}:{v.type}" for v in func.vars))
    split = func.reverse_start if func.is_adjoint else None
    for k, ins in enumerate(func.body.instrs):
        if split is not None and k == 0:
            lines.append("  # ---- forward replay ----")
        if split is not None and k == split:
            lines.append("  # ---- reverse ----")
        _instr(ins, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _where(loc) -> str:
    name = os.path.basename(loc.file) if not loc.file.startswith("<") else loc.file
    return f"{name}:{loc.line}"


def _emit(lines, depth, text, loc):
    line = "  " * depth + text
    pad = max(1, COMMENT_COLUMN - len(line))
    lines.append(f"{line}{' ' * pad}# {_where(loc)}")


def _value(v) -> str:
    return f"{v!r}:{v.type}"


def _const(value) -> str:
    if np.ndim(value) == 0:
        return repr(value.item())
    return "(" + ", ".join(repr(x) for x in np.asarray(value).reshape(-1).tolist()) + ")"


def _instr(ins: Instr, depth: int, lines: list):
    op, a = ins.op, ins.args
    args = ", ".join(map(repr, a))
    lhs = f"{_value(ins.result)} = " if ins.result is not None else ""
    if op is Op.CONST:
        text = f"{lhs}const {_const(ins.attrs['value'])}"
    elif op is Op.TID:
        text = f"{lhs}tid {ins.attrs['dim']}"
    elif op is Op.LOAD_VAR:
        text = f"{lhs}{ins.attrs['var']!r}"
    elif op is Op.STORE_VAR:
        text = f"{ins.attrs['var']!r} = {args}"
    elif op is Op.CALL:
        target = ins.attrs.get("target")
        name = ins.attrs["builtin"].name + (f"<{target}>" if target is not None else "")
        text = f"{lhs}{name}({args})"
    elif op in (Op.LOAD, Op.STORE, Op.ATOMIC):
        arr, rest = a[0], a[1:]
        idx = ", ".join(map(repr, rest[:-1] if op is not Op.LOAD else rest))
        q = "?" if ins.attrs.get("nullable") else ""
        if op is Op.LOAD:
            text = f"{lhs}{arr!r}{q}[{idx}]"
        elif op is Op.STORE:
            text = f"{arr!r}{q}[{idx}] = {rest[-1]!r}"
        else:
            text = f"{lhs}atomic_{ins.attrs['kind']}({arr!r}{q}[{idx}], {rest[-1]!r})"
    elif op is Op.SHAPE:
        text = f"{lhs}{a[0]!r}.shape[{ins.attrs['dim']}]"
    elif op is Op.PRINT:
        text = f"print {ins.attrs['fmt']!r} {args}"
    elif op is Op.PUSH:
        text = f"push {args}"
    elif op is Op.POP:
        text = f"{lhs}pop"
    else:
        return _structured(ins, depth, lines, args, lhs)
    _emit(lines, depth, text, ins.loc)


def _block(block: Block, depth: int, lines: list):
    for ins in block.instrs:
        _instr(ins, depth, lines)


def _structured(ins, depth, lines, args, lhs):
    op = ins.op
    if op is Op.IF:
        _emit(lines, depth, f"if {args}:", ins.loc)
        _block(ins.regions[0], depth + 1, lines)
        if ins.regions[1].instrs:
            lines.append("  " * depth + "else:")
            _block(ins.regions[1], depth + 1, lines)
    elif op is Op.FOR:
        _emit(lines, depth, f"for {ins.attrs['var']!r} in range({args}):", ins.loc)
        _block(ins.regions[0], depth + 1, lines)
    elif op is Op.WHILE:
        cond, body = ins.regions
        _emit(lines, depth, "while:", ins.loc)
        _block(cond, depth + 1, lines)
        lines.append("  " * (depth + 1) + f"-> {cond.result!r}")
        lines.append("  " * depth + "do:")
        _block(body, depth + 1, lines)
    elif op is Op.CUSTOM:
        name = ins.attrs["func"].__name__
        _emit(lines, depth, f"{ins.attrs['out']!r} = {name}({args}) with custom gradient:",
              ins.loc)
        _block(ins.regions[0], depth + 1, lines)
        if ins.regions[1].instrs:
            lines.append("  " * depth + f"gradient ({ins.attrs['func'].grad.__name__}):")
            _block(ins.regions[1], depth + 1, lines)
    else:  # pragma: no cover - every op is printed above
        raise AssertionError(op)
