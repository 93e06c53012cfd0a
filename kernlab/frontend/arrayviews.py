"""Sub-array views inside kernels: ``row = a[i]``, ``a[i][j]``, ``sub = a[1:5, ::2]``.

A view is resolved while the kernel is compiled, never stored at run time: an ArrayRef
remembers the array it views and, for each of that array's axes, either a fixed index or a
range (start, step, length). Indexing a view with its own indices turns them into indices
of the underlying array (``start + k * step``), so every access is an ordinary load, store
or atomic on the kernel's array parameter: backends, bounds checks (against the whole
array) and reverse-mode autodiff see nothing new, and gradients flow through views as
through direct indexing. ``view.shape[d]`` is the range's length (0 past the view's
dimensions, as Warp gives), ``view.ndim`` its number of ranges.

Views are compile-time names: a local may hold one (``row = a[i]``), kernels index it,
take its shape, pass it to atomics; it cannot be reassigned to another view or returned.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import KernelTypeError, KernelValueError
from ..ir.nodes import Op, Value
from ..types import int32


@dataclass
class Axis:
    """One axis of the viewed array: a fixed index (``at``) or a range of it."""

    at: Value | None = None
    start: object = 0  # int (a constant) or Value, for ranges
    step: object = 1
    length: object = None  # int or Value


@dataclass
class ArrayRef:
    base: Value  # an array parameter (or another name for one)
    axes: list
    star: object = None  # () -> StarSource, for ``*a[2:5]`` in a call (views.py)

    @property
    def ranges(self) -> list:
        return [ax for ax in self.axes if ax.at is None]

    @property
    def ndim(self) -> int:
        return len(self.ranges)

    @property
    def name(self) -> str:
        return self.base.name or "array"


@dataclass
class ViewShape:
    ref: ArrayRef


def whole(lo, base: Value) -> ArrayRef:
    return ArrayRef(base, [Axis(length=lo.b.emit(Op.SHAPE, [base], int32, dim=d))
                           for d in range(base.type.ndim)])


def _int(lo, x) -> Value:
    return x if isinstance(x, Value) else lo.b.const(int(x), int32)


def _i32(lo, v: Value) -> Value:
    return lo.b.cast(v, int32)


def _op(lo, name, a, b):
    """a (name) b on ints, folded when both are constants."""
    if isinstance(a, int) and isinstance(b, int):
        return {"add": a + b, "sub": a - b, "mul": a * b}[name]
    if name == "mul" and (a == 1 or b == 1):
        return b if a == 1 else a
    if name == "add" and (a == 0 or b == 0):
        return b if a == 0 else a
    return lo.b.call(name, [_int(lo, a), _int(lo, b)])


def _const(x):
    """The Python int of a constant index expression result, else None."""
    from .exprs import Lit
    if isinstance(x, Lit) and isinstance(x.value, int) and not isinstance(x.value, bool):
        return x.value
    return None


def subscript(lo, ref: ArrayRef, idx_nodes) -> "ArrayRef | Value":
    """ref[idx...]: integers fix an axis, slices narrow it; every range consumed gives an
    element (a load)."""
    ranges = ref.ranges
    if len(idx_nodes) > len(ranges):
        raise KernelTypeError(f"Incorrect number of indices specified for array indexing: "
                              f"a view of array '{ref.name}' has {len(ranges)} dimension(s) "
                              f"but {len(idx_nodes)} index(es) were given", lo.b.loc)
    new, k = [], 0
    for ax in ref.axes:
        if ax.at is not None or k >= len(idx_nodes):
            new.append(ax)
            continue
        node = idx_nodes[k]
        k += 1
        if isinstance(node, ast.Slice):
            new.append(_narrow(lo, ax, node))
        else:
            i = _index(lo, ax, lo.expr(node) if isinstance(node, ast.AST) else node)
            new.append(Axis(at=_i32(lo, _int(lo, _op(lo, "add", ax.start,
                                                    _op(lo, "mul", i, ax.step))))))
    return ArrayRef(ref.base, new)


def _index(lo, ax: Axis, x):
    """An index into a range: a negative constant counts from the end (as in Warp's
    views)."""
    c = _const(x)
    if c is not None:
        if c < 0:
            return _op(lo, "add", ax.length, c)
        return c
    return _i32(lo, lo.int_index(x))


def _narrow(lo, ax: Axis, node: ast.Slice) -> Axis:
    """The part of a range a slice selects (Python's rules, constants folded)."""
    parts = [None if p is None else lo.expr(p) for p in (node.lower, node.upper, node.step)]
    consts = [None if p is None else _const(p) for p in parts]
    step = 1 if parts[2] is None else consts[2]
    if step == 0:
        raise KernelValueError("Slice step cannot be zero", lo.b.loc)
    n = ax.length
    if isinstance(n, int) and all(p is None or c is not None for p, c in zip(parts, consts)):
        start, stop, step = slice(consts[0], consts[1], step).indices(n)
        length = len(range(start, stop, step))
    else:
        start, length, step = _runtime_slice(lo, n, parts, step)
    return Axis(start=_op(lo, "add", ax.start, _op(lo, "mul", start, ax.step)),
                step=_op(lo, "mul", step, ax.step), length=length)


def _runtime_slice(lo, n, parts, step):
    """(start, length, step) of a slice whose bounds or length are known when the kernel
    runs: Python's slice.indices computed in the kernel."""
    b = lo.b

    def v(x):
        return _i32(lo, _int(lo, x))

    def call(name, *xs):
        return b.call(name, [v(x) for x in xs])

    def where(c, x, y):
        return b.call("where", [c, v(x), v(y)])

    n = v(n)
    s = v(1 if parts[2] is None else (step if step is not None else lo.int_index(parts[2])))
    pos = call("gt", s, 0)
    lower = where(pos, 0, -1)
    upper = where(pos, n, call("sub", n, 1))

    def bound(x, default):
        if x is None:
            return default
        x = v(_const(x) if _const(x) is not None else lo.int_index(x))
        x = where(call("lt", x, 0), call("add", x, n), x)
        return call("min", call("max", x, lower), upper)

    start = bound(parts[0], where(pos, 0, call("sub", n, 1)))
    stop = bound(parts[1], where(pos, n, -1))
    span = where(pos, call("sub", stop, start), call("sub", start, stop))
    mag = where(pos, s, call("sub", 0, s))
    length = call("floordiv", call("add", call("max", span, 0), call("sub", mag, 1)), mag)
    return start, length, s


def bind(lo, name: str, current, value) -> None:
    """``name = view``: the name stands for the view from here on. A name holding a view
    takes another view only at the kernel's top level (a view is fixed when the kernel is
    compiled, so it cannot depend on which branch or iteration ran)."""
    if not isinstance(value, ArrayRef):
        raise KernelTypeError(f"'{name}' is an array view; it cannot become a value",
                              lo.b.loc)
    if current is not None:
        if not isinstance(current, ArrayRef):
            raise KernelTypeError(f"'{name}' is a local value; it cannot become an array view",
                                  lo.b.loc)
        if lo.b.block is not lo.func.body:
            raise KernelTypeError(f"array view '{name}' can only be rebound outside if/for/"
                                  "while blocks", lo.b.loc)
    lo.scope.names[name] = value


def resolve(lo, ref: ArrayRef):
    """The view itself, or the element it names once every axis is fixed."""
    if ref.ndim:
        return ref
    return lo.load_element(ref.base, [ax.at for ax in ref.axes], None)


def indices(lo, ref: ArrayRef, extra: list) -> list:
    """Indices of the underlying array for ref[extra...] (every range consumed)."""
    if len(extra) != ref.ndim:
        raise KernelTypeError(f"Incorrect number of indices specified for array indexing: "
                              f"a view of array '{ref.name}' has {ref.ndim} dimension(s) "
                              f"but {len(extra)} index(es) were given", lo.b.loc)
    it = iter(extra)
    out = []
    for ax in ref.axes:
        if ax.at is not None:
            out.append(ax.at)
        else:
            i = _i32(lo, lo.int_index(next(it)))
            out.append(_i32(lo, _int(lo, _op(lo, "add", ax.start, _op(lo, "mul", i, ax.step)))))
    return out


def shape(lo, ref: ArrayRef, d: int) -> Value:
    ranges = ref.ranges
    if d >= len(ranges):
        return lo.b.const(0, int32)
    return _i32(lo, _int(lo, ranges[d].length))
