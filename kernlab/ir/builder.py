"""Builder: appends typed instructions to the current block.

The frontend and the autodiff pass both build IR through it. ``b.sin(x)``, ``b.mul(a, c)``
— any builtin name as a method — resolves the overload from the argument types and
raises KernelTypeError at ``b.loc`` when none fits.
"""
from __future__ import annotations

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

    def at(self, block: Block) -> "_At":
        """Emit into ``block`` (a region) for the duration of the with-statement."""
        return _At(self, block)

    def located(self, loc: SourceLoc) -> "_Located":
        """Give the instructions emitted in the with-statement ``loc``."""
        return _Located(self, loc)

    def emit(self, op: Op, args=(), type: Type | None = None, name: str = "",
             regions=(), **attrs) -> Value | None:
        result = Value(type, name) if type is not None else None
        self._blocks[-1].instrs.append(Instr(op, list(args) if args else [], result, self.loc,
                                             attrs, list(regions) if regions else []))
        return result

    # ---- values ---------------------------------------------------------------------

    def const(self, value, type: Type | None = None) -> Value:
        if type is None:
            type = _PY_CONST.get(value.__class__) or to_type(np.asarray(value).dtype)
        if type.is_scalar:
            value = type.np.type(value)
        else:
            value = np.broadcast_to(np.asarray(value, type.scalar.np), type.shape).copy()
        result = Value(type)
        self._blocks[-1].instrs.append(Instr(_CONST, [], result, self.loc, {"value": value}, []))
        return result

    def zeros(self, type: Type) -> Value:
        return self.const(0, type)

    def new_var(self, type: Type, name: str) -> Var:
        var = Var(type, name)
        self.func.vars.append(var)
        return var

    # const, load, store and call append their Instr themselves rather than through emit
    # (its keyword arguments cost a dict repacking per call): they are most of what the
    # front end and the autodiff pass emit

    def load(self, var: Var, name: str = "") -> Value:
        result = Value(var.type, name or var.name)
        self._blocks[-1].instrs.append(Instr(_LOAD_VAR, [], result, self.loc, {"var": var}, []))
        return result

    def store(self, var: Var, value: Value):
        assert value.type is var.type or value.type == var.type, (var, value.type)
        self._blocks[-1].instrs.append(Instr(_STORE_VAR, [value], None, self.loc, {"var": var},
                                             []))

    def cast(self, value: Value, type: Type) -> Value:
        return value if value.type is type or value.type == type \
            else self.call("cast", [value], target=type)

    # ---- builtin calls --------------------------------------------------------------

    def call(self, name: str, args, target: Type | None = None, hint: str = "") -> Value:
        types = [a.type for a in args]
        ex, bi, ret = _resolve(name, types, target)
        if ex is not None:  # written as IR over other builtins (builtins/expand.py)
            return run_expansion(ex, self, args, target)
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
        result = None if ret is VOID else Value(ret, hint)
        self._blocks[-1].instrs.append(Instr(_CALL, list(args), result, self.loc, attrs, []))
        return result

    def __getattr__(self, name):
        if name in REGISTRY or name in EXPANSIONS:
            def method(*args, target=None):
                return self.call(name, list(args), target)
            # kept on the instance, so the next ``b.add`` finds it without coming here (the
            # autodiff pass makes tens of thousands of such calls); it resolves the
            # overload afresh at each call, so a builtin registered later is seen
            self.__dict__[name] = method
            return method
        raise AttributeError(name)


_PY_CONST = {bool: bool_, int: int32, float: float32}
# (module names: ``Op.CALL`` goes through the Enum metaclass's attribute hook, ~0.1 us)
_LOAD_VAR, _STORE_VAR, _CALL, _CONST = Op.LOAD_VAR, Op.STORE_VAR, Op.CALL, Op.CONST


class _At:
    """``with b.at(block)``: a plain class, as a generator-based context manager costs
    several times more and the autodiff pass enters one per region it writes."""

    __slots__ = ("builder", "block")

    def __init__(self, builder: Builder, block: Block):
        self.builder, self.block = builder, block

    def __enter__(self) -> Block:
        self.builder._blocks.append(self.block)
        return self.block

    def __exit__(self, *exc):
        self.builder._blocks.pop()
        return False


class _Located:
    __slots__ = ("builder", "loc", "saved")

    def __init__(self, builder: Builder, loc: SourceLoc):
        self.builder, self.loc = builder, loc

    def __enter__(self):
        self.saved, self.builder.loc = self.builder.loc, self.loc

    def __exit__(self, *exc):
        self.builder.loc = self.saved
        return False


# (name, argument types, target) -> (expansion, builtin, result type, how many expansions
# and signatures the name had): a long kernel calls the same few overloads thousands of
# times. An entry is used only while the registry still holds the same records; the table
# is emptied when it grows past _RESOLVED_MAX (it may hold struct types of redefined cells).
_resolved: dict = {}
_RESOLVED_MAX = 4096


def _resolve(name: str, types: list, target: Type | None):
    """The expansion of builtin ``name`` for these argument types, or else its Builtin
    record and result type (None where no overload fits)."""
    try:
        key = (name, tuple(types), target)
        hit = _resolved.get(key)
    except TypeError:  # an unhashable type: resolve it afresh
        key = hit = None
    exs = EXPANSIONS.get(name, ())
    bi = REGISTRY.get(name)
    if hit is not None and hit[1] is bi and hit[3][0] == len(exs) \
            and hit[3][1] == (len(bi.sigs) if bi else 0):
        return hit[0], bi, hit[2]
    ex = find_expansion(name, types)
    ret = None
    if ex is None and bi is not None:
        ret = bi.resolve(types, target)
    if key is not None and (ex is not None or ret is not None):
        if len(_resolved) >= _RESOLVED_MAX:
            _resolved.clear()
        _resolved[key] = (ex, bi, ret, (len(exs), len(bi.sigs) if bi else 0))
    return ex, bi, ret
