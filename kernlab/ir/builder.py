"""Builder: appends typed instructions to the current block.

The frontend and the autodiff pass both build IR through it. ``b.sin(x)``, ``b.mul(a, c)``
— any builtin name as a method — resolves the overload from the argument types and
raises KernelTypeError at ``b.loc`` when none fits.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..builtins import REGISTRY
from ..builtins.registry import VOID
from ..builtins.expand import (EXPANSIONS, expansion_candidates, find_expansion,
                               run_expansion)
from ..errors import KernelTypeError, SourceLoc
from ..types import Type, bool_, float32, int32, to_type
from .nodes import Block, Function, Instr, Op, Value, Var


class Builder:
    def __init__(self, func: Function, loc: SourceLoc):
        self.func = func
        self.loc = loc
        self._blocks = [func.body]

    @property
    def block(self) -> Block:
        return self._blocks[-1]

    @contextmanager
    def at(self, block: Block):
        """Emit into ``block`` (a region) for the duration of the with-statement."""
        self._blocks.append(block)
        try:
            yield block
        finally:
            self._blocks.pop()

    @contextmanager
    def located(self, loc: SourceLoc):
        saved, self.loc = self.loc, loc
        try:
            yield
        finally:
            self.loc = saved

    def emit(self, op: Op, args=(), type: Type | None = None, name: str = "",
             regions=(), **attrs) -> Value | None:
        result = Value(type, name) if type is not None else None
        self.block.instrs.append(Instr(op, list(args), result, self.loc, attrs, list(regions)))
        return result

    # ---- values ---------------------------------------------------------------------

    def const(self, value, type: Type | None = None) -> Value:
        if type is None:
            type = _PY_CONST.get(value.__class__) or to_type(np.asarray(value).dtype)
        if type.is_scalar:
            value = type.np.type(value)
        else:
            value = np.broadcast_to(np.asarray(value, type.scalar.np), type.shape).copy()
        return self.emit(Op.CONST, (), type, value=value)

    def zeros(self, type: Type) -> Value:
        return self.const(0, type)

    def new_var(self, type: Type, name: str) -> Var:
        var = Var(type, name)
        self.func.vars.append(var)
        return var

    def load(self, var: Var, name: str = "") -> Value:
        return self.emit(Op.LOAD_VAR, (), var.type, name or var.name, var=var)

    def store(self, var: Var, value: Value):
        assert value.type == var.type, (var, value.type)
        self.emit(Op.STORE_VAR, (value,), var=var)

    def cast(self, value: Value, type: Type) -> Value:
        return value if value.type == type else self.call("cast", [value], target=type)

    # ---- builtin calls --------------------------------------------------------------

    def call(self, name: str, args, target: Type | None = None, hint: str = "") -> Value:
        types = [a.type for a in args]
        ex = find_expansion(name, types)
        if ex is not None:  # written as IR over other builtins (builtins/expand.py)
            return run_expansion(ex, self, args, target)
        bi = REGISTRY.get(name)
        ret = bi.resolve(types, target) if bi is not None else None
        if ret is None:
            shown = ", ".join(map(str, types))
            what = f"({shown})" + (f" -> {target}" if target is not None else "")
            options = " | ".join(c for c in (bi.candidates() if bi else "",
                                            expansion_candidates(name)) if c)
            raise KernelTypeError(f"no overload of {name}() accepts {what}\n  candidates: "
                                  f"{options}", self.loc)
        attrs = {"builtin": bi}
        if bi.targeted:
            attrs["target"] = target
        return self.emit(Op.CALL, args, None if ret is VOID else ret, hint, **attrs)

    def __getattr__(self, name):
        if name in REGISTRY or name in EXPANSIONS:
            return lambda *args, target=None: self.call(name, list(args), target)
        raise AttributeError(name)


_PY_CONST = {bool: bool_, int: int32, float: float32}
