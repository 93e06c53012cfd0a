"""Readable IR listings: one instruction per line, ``name:type = op args  # file:line``."""
from __future__ import annotations

import os
import threading

import numpy as np

from ..errors import _pretty_file
from .nodes import Block, Function, Op

COMMENT_COLUMN = 60
_INDENT = tuple("  " * d for d in range(32))


class _Names:
    """Per-function names: values numbered in order of appearance and locals made unique,
    so a listing (and the cache key hashed from it) does not depend on what else the
    process compiled before."""

    def __init__(self, func: Function):
        self.values: dict = {}
        self.vars: dict = {}
        self.types: dict = {}  # id(type) -> its text (a vector's str is costly)
        seen: dict = {}
        for var in func.vars:
            n = seen.get(var.name, 0)
            seen[var.name] = n + 1
            self.vars[var] = f"${var.name}" if n == 0 else f"${var.name}.{n}"

    def value(self, v) -> str:
        name = self.values.get(v)
        if name is None:
            name = self.values[v] = f"%{v.name or 't'}{len(self.values)}"
        return name

    def var(self, v) -> str:
        name = self.vars.get(v)
        return name if name is not None else repr(v)

    def typed(self, v) -> str:
        """``%name:type``."""
        name = self.values.get(v)
        if name is None:
            name = self.values[v] = f"%{v.name or 't'}{len(self.values)}"
        t = v.type
        text = self.types.get(id(t))
        if text is None:
            text = self.types[id(t)] = str(t)
        return f"{name}:{text}"


_names: _Names | None = None
_locations = True
_printing = threading.RLock()


def print_function(func: Function, locations: bool = True) -> str:
    """The listing of ``func``; with locations=False without the ``# file:line`` comments
    (the text the disk-cache key hashes: moving a kernel in its file keeps its code)."""
    global _names, _locations
    with _printing:  # one listing at a time: threads that compile at once share these globals
        _names, _locations = _Names(func), locations
        try:
            return _print(func)
        finally:
            _names, _locations = None, True


def _print(func: Function) -> str:
    params = ", ".join(f"{_v(p.value)}:{p.type}" for p in func.params)
    kind = "adjoint kernel" if func.is_adjoint else "kernel"
    if getattr(func, "is_tangent", False):
        kind = "tangent of adjoint kernel" if func.is_adjoint else "tangent kernel"
    lines = [f"{kind} {func.name}({params}) {{" + (f"   # {_where(func.loc)}" if _locations
                                                  else "")]
    if func.vars:
        lines.append("  locals " + ", ".join(f"{_names.var(v)}:{v.type}" for v in func.vars))
    instrs = func.body.instrs
    split = func.reverse_start if func.is_adjoint else None
    if split is None:
        _instrs(instrs, 1, lines)
    else:  # the section markers go before the first instruction of each section
        if instrs:
            lines.append("  # ---- forward replay ----")
        _instrs(instrs[:split], 1, lines)
        if split < len(instrs):
            lines.append("  # ---- reverse ----")
        _instrs(instrs[split:], 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def file_label(path: str) -> str:
    """How listings name a file: a notebook cell as 'cell [N]', a file by its basename."""
    pretty = _pretty_file(path)
    return os.path.basename(pretty) if pretty == path else pretty


def _where(loc) -> str:
    return f"{file_label(loc.file)}:{loc.line}"


def _emit(lines, depth, text, loc):
    line = _INDENT[depth] + text if depth < len(_INDENT) else "  " * depth + text
    if not _locations:
        lines.append(line)
        return
    pad = max(1, COMMENT_COLUMN - len(line))
    lines.append(f"{line}{' ' * pad}# {_where(loc)}")


def _v(v) -> str:
    return _names.value(v)


def _var(ins) -> str:
    return _names.var(ins.attrs["var"])


def _value(v) -> str:
    return _names.typed(v)


def _const(value) -> str:
    ndim = getattr(value, "ndim", None)
    if (np.ndim(value) if ndim is None else ndim) == 0:
        return repr(value.item())
    return "(" + ", ".join(repr(x) for x in np.asarray(value).reshape(-1).tolist()) + ")"


_CALL, _LOAD_VAR, _STORE_VAR, _CONST = Op.CALL, Op.LOAD_VAR, Op.STORE_VAR, Op.CONST
_ACCESS = (Op.LOAD, Op.STORE, Op.ATOMIC)


def _instrs(instrs, depth: int, lines: list):
    """Print a block's instructions. The printer runs over every instruction of the IR
    (twice per compile: the cache key hashes the listing), so the naming of operands and
    results (_Names.value, _Names.typed) and the common ops are written out here rather
    than called per instruction: this loop is about twice as fast as one call per step."""
    names = _names
    values, types = names.values, names.types
    get_value, get_type = values.get, types.get
    get_var = names.vars.get  # (_Names.var written out: a local's name is never empty)
    locations = _locations
    indent = _INDENT[depth] if depth < len(_INDENT) else "  " * depth
    for ins in instrs:
        op, a, res = ins.op, ins.args, ins.result
        # values are numbered in order of appearance: operands, then the result
        if a:
            parts = []
            for v in a:
                name = get_value(v)
                if name is None:
                    name = values[v] = f"%{v.name or 't'}{len(values)}"
                parts.append(name)
            args = ", ".join(parts)
        else:
            args = ""
        if res is not None:
            name = get_value(res)
            if name is None:
                name = values[res] = f"%{res.name or 't'}{len(values)}"
            t = res.type
            shown = get_type(id(t))
            if shown is None:
                shown = types[id(t)] = str(t)
            lhs = f"{name}:{shown} = "
        else:
            lhs = ""
        if op is _CALL:
            attrs = ins.attrs
            target = attrs.get("target")
            text = f"{lhs}{attrs['builtin'].name}({args})" if target is None else \
                f"{lhs}{attrs['builtin'].name}<{target}>({args})"
        elif op is _LOAD_VAR:
            var = ins.attrs["var"]
            text = f"{lhs}{get_var(var) or repr(var)}"
        elif op is _STORE_VAR:
            var = ins.attrs["var"]
            text = f"{get_var(var) or repr(var)} = {args}"
        elif op is _CONST:
            text = f"{lhs}const {_const(ins.attrs['value'])}"
        elif op is Op.TID:
            text = f"{lhs}tid {ins.attrs['dim']}"
        elif op in _ACCESS:
            text = _access(ins, op, lhs)
        elif op is Op.SHAPE:
            text = f"{lhs}{_v(a[0])}.shape[{ins.attrs['dim']}]"
        elif op is Op.PRINT:
            text = f"print {ins.attrs['fmt']!r} {args}"
        elif op is Op.PUSH:
            text = f"push {args}"
        elif op is Op.POP:
            text = f"{lhs}pop"
        else:
            _structured(ins, depth, lines, args, lhs)
            continue
        if locations:
            _emit(lines, depth, text, ins.loc)
        else:
            lines.append(indent + text)


def _access(ins, op, lhs) -> str:
    arr, rest = ins.args[0], ins.args[1:]
    idx = ", ".join(map(_v, rest[:-1] if op is not Op.LOAD else rest))
    q = "?" if ins.attrs.get("nullable") else ""
    if op is Op.LOAD:
        return f"{lhs}{_v(arr)}{q}[{idx}]"
    if op is Op.STORE:
        return f"{_v(arr)}{q}[{idx}] = {_v(rest[-1])}"
    return f"{lhs}atomic_{ins.attrs['kind']}({_v(arr)}{q}[{idx}], {_v(rest[-1])})"


def _block(block: Block, depth: int, lines: list):
    _instrs(block.instrs, depth, lines)


def _structured(ins, depth, lines, args, lhs):
    op = ins.op
    if op is Op.IF:
        _emit(lines, depth, f"if {args}:", ins.loc)
        _block(ins.regions[0], depth + 1, lines)
        if ins.regions[1].instrs:
            lines.append("  " * depth + "else:")
            _block(ins.regions[1], depth + 1, lines)
    elif op is Op.FOR:
        _emit(lines, depth, f"for {_var(ins)} in range({args}):", ins.loc)
        _block(ins.regions[0], depth + 1, lines)
    elif op is Op.WHILE:
        cond, body = ins.regions
        _emit(lines, depth, "while:", ins.loc)
        _block(cond, depth + 1, lines)
        lines.append("  " * (depth + 1) + f"-> {_v(cond.result)}")
        lines.append("  " * depth + "do:")
        _block(body, depth + 1, lines)
    elif op is Op.CUSTOM:
        name, out = ins.attrs["func"].__name__, ins.attrs["out"]
        lhs = f"{_names.var(out)} = " if out is not None else ""
        kind = "replay" if ins.attrs.get("replay") else "custom gradient"
        _emit(lines, depth, f"{lhs}{name}({args}) with {kind}:", ins.loc)
        _block(ins.regions[0], depth + 1, lines)
        if ins.regions[1].instrs:
            f = ins.attrs["func"]
            what = f"replay ({f.replay.__name__})" if ins.attrs.get("replay") else \
                f"gradient ({f.grad.__name__})"
            lines.append("  " * depth + f"{what}:")
            _block(ins.regions[1], depth + 1, lines)
    else:  # pragma: no cover - every op is printed above
        raise AssertionError(op)


def canonical_ir(func: Function) -> str:
    """The printed IR without what does not change the machine code: the ``# file:line``
    comments (error messages read them from the live Function). The printer already numbers
    values in order of appearance, not by the process-wide counter."""
    return print_function(func, locations=False)


def identities(func: Function) -> str:
    """What the printed IR leaves out: which Var each access names (two locals may share a
    name) and the bounds-check site of each array access."""
    index = {v: f"v{k}" for k, v in enumerate(func.vars)}
    out: list = []
    _identities(func.body.instrs, index, out)
    return " ".join(out)


def _identities(instrs, index: dict, out: list):
    """identities() of a block, in program order (as Block.walk, without its generators)."""
    for ins in instrs:
        attrs = ins.attrs
        if "var" in attrs:
            out.append(index[attrs["var"]])
        if "site" in attrs:
            out.append(f"s{attrs['site']}")
        if ins.regions:
            for region in ins.regions:
                _identities(region.instrs, index, out)


def canonical_parts(func: Function) -> tuple:
    """(canonical_ir, identities) of ``func``, made once per Function: the part of a
    compiled variant's cache key that comes from the IR. Kept with an IR in the cache
    (runtime/ir_cache.py), so a warm start does not print the IR again."""
    parts = getattr(func, "_canonical", None)
    if parts is None:
        parts = func._canonical = (canonical_ir(func), identities(func))
    return parts
