"""How print() lays out a value, as Warp 1.19 prints it, in kernels and in adjoint kernels.

``print(x)`` of one value (Warp's form) prints one line as Warp's print does:

* a scalar with its own format (%g for floats, integers as integers), a bool as True/False;
* a vector or quaternion as its components, each as a float (%g) followed by a space;
* a matrix as one such line per row;
* a transform as ``(px py pz) (qx qy qz qw)``;
* a struct or an array as the placeholder ``<type without print implementation>``.

kernlab's print also takes several values and labels (``print("x:", x, v)``): those show a
vector or matrix as a bracketed list, on one line (the backends' ``{}``).

In an adjoint kernel the forward replay prints the forward line again, and the reverse sweep
prints each printed item's adjoint at that point as Warp's adj_print does: ``adj: `` and the
scalar, ``adj:`` and each component after a space, a matrix's later rows indented under the
first, a transform as above, a label or placeholder as its text (autodiff/reverse.py,
rev_PRINT), reading the ``shows`` attribute of the print's instruction: the items it showed,
a text or a Value each. Each function here emits one PRINT instruction whose ``{}`` take
scalars only; ``attrs`` go onto it.
"""
from __future__ import annotations

from ..types import Matrix, Quaternion, Transformation, float32, int32
from .builder import Builder
from .nodes import Op, Value

UNPRINTABLE = "<type without print implementation>"


def is_placeholder(t) -> bool:
    """print() shows structs and arrays as UNPRINTABLE."""
    return bool(t.is_array or getattr(t, "is_struct", False))


def warp_form(b: Builder, v: Value, adjoint: bool = False, **attrs) -> None:
    """Print v (a scalar, vector or matrix) on its own as Warp does; with adjoint, as
    Warp prints an adjoint."""
    t = v.type
    head = "adj: " if adjoint else ""
    if t.is_scalar:
        _emit(b, head + "{}", [v], attrs)
    elif isinstance(t, Matrix):
        if adjoint:  # "adj: a b" then "     c d"
            rows = [("adj:" if i == 0 else "    ") + " {}" * t.cols for i in range(t.rows)]
        else:        # "a b " per row
            rows = ["{} " * t.cols for _ in range(t.rows)]
        parts = [_as_float(b, v, i, j) for i in range(t.rows) for j in range(t.cols)]
        _emit(b, "\n".join(rows), parts, attrs)
    elif isinstance(t, Transformation):
        parts = [_as_float(b, v, k) for k in range(7)]
        _emit(b, head + "({} {} {}) ({} {} {} {})", parts, attrs)
    elif t.is_vector:
        fmt = "adj:" + " {}" * t.length if adjoint else \
            " ".join(["{}"] * t.length) if isinstance(t, Quaternion) else "{} " * t.length
        _emit(b, fmt, [_as_float(b, v, k) for k in range(t.length)], attrs)


def text(b: Builder, line: str, adjoint: bool = False, **attrs) -> None:
    """A line of text (a label, the placeholder); with adjoint after ``adj: ``."""
    _emit(b, ("adj: " if adjoint else "") + line, [], attrs)


def _emit(b: Builder, fmt: str, parts: list, attrs: dict) -> None:
    b.emit(Op.PRINT, parts, fmt=fmt, printf=False, **attrs)


def _as_float(b: Builder, v: Value, *index: int) -> Value:
    component = b.call("index", [v, *(b.const(k, int32) for k in index)])
    return component if component.type == float32 else b.cast(component, float32)
