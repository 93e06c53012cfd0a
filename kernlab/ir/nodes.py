"""The typed IR: SSA values, explicit local variables, structured control flow.

A kernel is a Function whose body is a Block of Instrs. Every Instr computes at most one
SSA Value (defined exactly once, per execution of its block) and carries the SourceLoc of
the user code it came from. Python locals become Vars — explicit slots read by LOAD_VAR
and written by STORE_VAR — so that values flowing around loops and branches are named
state the autodiff pass can save and restore. Backends promote Vars to registers
(LLVM mem2reg) or C locals.

Control flow is structured: IF, FOR and WHILE own their regions (Blocks). ``break``,
``continue`` and ``return`` never appear in the IR: the frontend turns them into flag
Vars that guard the rest of the body and end the loop, which keeps reverse mode simple.
"""
from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import SourceLoc
from ..types import ArrayType, Type


class Op(enum.Enum):
    CONST = "const"          # attrs: value (a Python/NumPy value of the result type)
    TID = "tid"              # attrs: dim — this thread's index along launch dimension dim
    LOAD_VAR = "load_var"    # attrs: var
    STORE_VAR = "store_var"  # attrs: var; args: value
    CALL = "call"            # attrs: builtin (a Builtin record); args: operands
    LOAD = "load"            # args: array, *indices -> element
    STORE = "store"          # args: array, *indices, value
    ATOMIC = "atomic"        # attrs: kind (add|sub|min|max); args: array, *indices, value -> old
    SHAPE = "shape"          # attrs: dim; args: array -> int32
    IF = "if"                # args: cond; regions: then, else
    FOR = "for"              # attrs: var (the loop index); args: start, stop, step; regions: body
    WHILE = "while"          # regions: cond (its Block.result is the condition), body
    PRINT = "print"          # attrs: fmt; args: values
    CUSTOM = "custom"        # a call of a func with a custom gradient, inlined:
                             # attrs: func, grad, out (Var holding the result); args: operands;
                             # regions: body (the func inlined on the operands' Vars)
    PUSH = "push"            # adjoint (and its tangent) only: args: values to save on the per-thread stack
    POP = "pop"              # adjoint (and its tangent) only: -> the value on top of the per-thread stack

    # Members are singletons compared by identity, so identity hashing is consistent with
    # equality; Enum's own __hash__ (hash of the name, in Python) cost a call per lookup
    # in the tables keyed by op that the passes consult once per instruction.
    __hash__ = object.__hash__


# LOAD, STORE and ATOMIC may carry attrs["nullable"]: the array may be absent (a gradient
# nobody asked for) — a load then yields zero and a store/atomic does nothing.
# They carry attrs["site"]: an index into Function.sites for bounds-check reports. So does a
# CALL of index/insert whose component index is only known at run time.

_ids = itertools.count()
_restored: list | None = None  # while IR is unpickled (runtime/ir_cache.py): its values


def _restore(cls, type_, name, number):
    """A Value or Var read back from a pickle; runtime/ir_cache.py renumbers them."""
    v = cls.__new__(cls)
    v.type, v.name, v.id = type_, name, number
    if _restored is not None:
        _restored.append(v)
    return v


class Value:
    """An SSA value. ``name`` is a hint taken from the user's variable where there is one."""

    __slots__ = ("type", "name", "id")

    def __init__(self, type: Type, name: str = ""):
        self.type = type
        self.name = name
        self.id = next(_ids)

    def __repr__(self):
        return f"%{self.name or 't'}{self.id}"

    def __reduce__(self):
        return _restore, (type(self), self.type, self.name, self.id)


class Var:
    """A mutable local slot of a fixed type (a Python local, a flag, an adjoint)."""

    __slots__ = ("type", "name", "id")

    def __init__(self, type: Type, name: str):
        self.type = type
        self.name = name
        self.id = next(_ids)

    def __repr__(self):
        return f"${self.name}"

    def __reduce__(self):
        return _restore, (type(self), self.type, self.name, self.id)


@dataclass(eq=False, init=False)
class Instr:
    op: Op
    args: list[Value]
    result: Value | None
    loc: SourceLoc
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list["Block"] = field(default_factory=list)

    def __init__(self, op: Op, args: list, result: Value | None, loc: SourceLoc,
                 attrs: dict | None = None, regions: list | None = None):
        # (written by hand: the dataclass's __init__ plus a __post_init__ for the check
        # below cost a second call per instruction, and a long kernel's adjoint has 100,000)
        assert loc.__class__ is SourceLoc or isinstance(loc, SourceLoc), \
            f"{op} needs a SourceLoc"
        self.op = op
        self.args = args
        self.result = result
        self.loc = loc
        self.attrs = {} if attrs is None else attrs
        self.regions = [] if regions is None else regions


@dataclass(eq=False)
class Block:
    instrs: list[Instr] = field(default_factory=list)
    result: Value | None = None  # only a WHILE's cond region yields a value

    def __iter__(self):
        return iter(self.instrs)

    def walk(self):
        """Every instruction in this block and its nested regions, in program order."""
        for ins in self.instrs:
            yield ins
            if ins.regions:
                for region in ins.regions:
                    yield from region.walk()


@dataclass(eq=False)
class Param:
    name: str
    type: Type
    value: Value


@dataclass(eq=False)
class Site:
    """An array access that a bounds check may report on (or a vector/matrix component
    access with a runtime index: then ``shape`` holds its extents and ``kind`` its type).
    A site with a ``guard`` is a runtime check written as such a component access (the
    index is 1 of extent 1 when the check fails): every launch checks it, bounds checks on
    or off, and its failure is a KernelValueError with that message (errors.py)."""

    loc: SourceLoc
    array: str  # the user's name for the array (or the vector)
    shape: tuple | None = None
    kind: str = "array"
    guard: str | None = None


@dataclass(eq=False)
class Function:
    """A kernel (or an adjoint kernel) in IR form."""

    name: str
    params: list[Param]
    body: Block
    loc: SourceLoc
    vars: list[Var] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    ndim: int = 1            # how many tid dimensions the kernel reads (1..3)
    is_adjoint: bool = False
    is_tangent: bool = False  # a tangent kernel (forward mode; of an adjoint for HVPs)
    reverse_start: int | None = None  # adjoint only: index in body where the reverse begins
    owned: dict = field(default_factory=dict)  # adjoint only: param index -> the index (a
    # canonical string) at which each thread owns that array's element: its gradient is
    # accumulated with plain adds (autodiff/ownership.py)
    kept: tuple = ()  # tangent only, without the kernel's effects: indices of the array
    # params whose primal writes it keeps (it reads them back); the runtime passes a copy

    @property
    def array_params(self):
        return [p for p in self.params if isinstance(p.type, ArrayType)]
