"""Tuples as kernel values (Warp's): ``t = (1, 2.5, v)``, ``t = f()`` of a func or builtin
with several results, ``t[k]``, ``len(t)``, ``a, b = t``.

A tuple exists only at compile time: a tuple local is a fixed number of slots, each an
ordinary local variable (or a struct local), so a tuple assigned again (in a branch, a
loop) updates its slots as any local is updated. Reading the name gives back a Python
tuple of the slots' current values, which the rest of the frontend already understands
(unpacking, passing the parts on, ``*t``).
"""
from __future__ import annotations

from ..errors import KernelTypeError
from ..ir.nodes import Value, Var
from ..types import int32
from . import structs


class TupleLocal:
    """A named tuple local: its slots (Var or a struct local), in order."""

    def __init__(self, slots: list):
        self.slots = slots

    def __len__(self):
        return len(self.slots)


def assign(lo, name: str, value, current) -> None:
    """``name = value`` where value is a tuple (or name already holds one)."""
    if not isinstance(value, tuple):
        raise KernelTypeError(f"'{name}' holds a tuple; it cannot become a single value",
                              lo.b.loc)
    if current is not None and not isinstance(current, TupleLocal):
        raise KernelTypeError(f"'{name}' is a single value; it cannot become a tuple",
                              lo.b.loc)
    if current is not None and len(current) != len(value):
        raise KernelTypeError(f"'{name}' holds a tuple of {len(current)} values; it cannot "
                              f"take one of {len(value)}", lo.b.loc)
    slots = []
    for k, item in enumerate(value):
        if structs.is_structish(item):
            slots.append(item)  # struct parts are held as struct locals are
            continue
        if isinstance(item, tuple):
            raise KernelTypeError("tuples inside tuples are not supported", lo.b.loc)
        old = current.slots[k] if current is not None else None
        want = old.type if isinstance(old, Var) else None
        v = lo.value(item, want)
        if old is None or not isinstance(old, Var):
            old = lo.b.new_var(v.type, f"{name}_{k}")
        elif v.type != old.type:
            raise KernelTypeError(f"cannot assign a {v.type} to part {k} of '{name}', which "
                                  f"is a {old.type}", lo.b.loc)
        lo.b.store(old, v)
        slots.append(old)
    lo.scope.names[name] = TupleLocal(slots)


def read(lo, local: TupleLocal) -> tuple:
    return tuple(lo.b.load(s) if isinstance(s, Var) else s for s in local.slots)


def index(lo, items: tuple, raw: list):
    """``t[k]``: k a constant (negative counts from the end), or, where every part has one
    type, an integer computed at run time."""
    from .exprs import Lit
    if len(raw) != 1:
        raise KernelTypeError("a tuple takes one index", lo.b.loc)
    k = raw[0]
    n = len(items)
    if isinstance(k, Lit) and isinstance(k.value, int) and not isinstance(k.value, bool):
        if not -n <= k.value < n:
            raise KernelTypeError(f"tuple index {k.value} is out of range for a tuple of "
                                  f"{n} values", lo.b.loc)
        return items[k.value]
    k = lo.int_index(k)
    vals = [lo.value(x) if not structs.is_structish(x) else None for x in items]
    if not vals or any(v is None or v.type != vals[0].type for v in vals):
        raise KernelTypeError("a tuple index computed at run time needs a tuple whose "
                              "values all have one type", lo.b.loc)
    out = vals[-1]
    for j in range(n - 2, -1, -1):  # select the j-th part where k == j
        hit = lo.b.eq(k, lo.b.const(j, k.type if isinstance(k, Value) else int32))
        out = lo.b.call("where", [hit, vals[j], out])
    return out


class TuplePattern:
    """A func parameter annotated ``tuple[int, float]`` or ``tuple[vec3, ...]`` (any
    number of one type): what tuple arguments it accepts. Not a kernlab Type (a tuple is
    no run-time value), so it answers no to every kind question a Type answers."""

    is_scalar = is_vector = is_matrix = is_array = is_tile = False

    def __init__(self, items: tuple, variadic: bool):
        self.items = items
        self.variadic = variadic

    @staticmethod
    def from_annotation(ann) -> "TuplePattern | None":
        """The pattern of a ``tuple[...]`` annotation; None for any other annotation."""
        import typing
        from ..generics import as_type
        if typing.get_origin(ann) is not tuple:
            return None
        args = typing.get_args(ann)
        variadic = len(args) == 2 and args[1] is Ellipsis
        return TuplePattern((as_type(args[0]),) if variadic else
                            tuple(as_type(a) for a in args), variadic)

    def fits(self, items: tuple, fit) -> bool:
        """Whether a tuple of these items fits; ``fit(type, item)`` tells for one item."""
        if self.variadic:
            return all(fit(self.items[0], x) for x in items)
        return len(items) == len(self.items) and all(
            fit(t, x) for t, x in zip(self.items, items))

    def __str__(self):
        inner = f"{self.items[0]}, ..." if self.variadic else \
            ", ".join(str(t) for t in self.items)
        return f"tuple[{inner}]"
