"""Slices and negative indices (mixed into the Lowerer).

``v[1:3]`` of a vector is a new vector of those components, ``m[:2]`` of a matrix a matrix
of those rows; ``v[-1]`` counts from the end. Bounds must be constants (the result's
type depends on them). A constant slice of a 1-D array may only be ``*``-unpacked into a
call (its elements); its stop must be given, since the array's length is known only when
the kernel runs.
"""
from __future__ import annotations

import ast

from ..errors import KernelTypeError, KernelValueError
from ..ir.nodes import Value
from ..types import Matrix, Vector, int32
from . import arrayviews
from .calls import StarSource
from .exprs import Lit


class ViewMixin:
    def expr_Subscript(self, node):
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        has_slice = any(isinstance(i, ast.Slice) for i in idx)
        if not has_slice and not any(_negative_literal(i) for i in idx):
            return super().expr_Subscript(node)
        base = self.expr(node.value)
        if not isinstance(base, Value):
            return super().expr_Subscript(node)
        t = base.type
        if t.is_array:
            if not has_slice:
                raise KernelValueError("array indices cannot be negative for arrays; "
                                       "count from 0", self.b.loc)
            ref = arrayviews.subscript(self, arrayviews.whole(self, base), idx)
            ref.star = lambda: self.array_slice(base, idx)  # ``*a[2:5]`` unpacks elements
            return arrayviews.resolve(self, ref)
        if not (t.is_vector or t.is_matrix):
            raise KernelTypeError(f"a value of type {t} cannot be sliced", self.b.loc)
        extents = (t.length,) if t.is_vector else (t.rows, t.cols)
        if len(idx) > len(extents):
            raise KernelTypeError(f"too many indices for a {t}", self.b.loc)
        if not has_slice:
            raw = [self.expr(i) for i in idx]
            raw = [Lit(x.value + n) if isinstance(x, Lit) and isinstance(x.value, int)
                   and x.value < 0 else x for x, n in zip(raw, extents)]
            return self.component_call("index", base, raw)
        if t.is_matrix and len(idx) == 2:
            return self.matrix_block(base, idx)
        picks = _slice_range(self.slice_bounds(idx[0]), extents[0], self)
        parts = [self.b.call("index", [base, self.b.const(k, int32)]) for k in picks]
        if not parts:
            raise KernelValueError("a slice of a vector or matrix must not be empty",
                                   self.b.loc)
        if t.is_vector:
            return self.b.call("construct", parts, Vector(len(parts), t.dtype))
        return self.b.call("construct", parts, Matrix(len(parts), t.cols, t.dtype))

    def matrix_block(self, base, idx):
        t = base.type
        rows = _rows_or_one(self, idx[0], t.rows)
        cols = _rows_or_one(self, idx[1], t.cols)
        parts = [self.b.call("index", [base, self.b.const(r, int32), self.b.const(c, int32)])
                 for r in rows[0] for c in cols[0]]
        if not parts:
            raise KernelValueError("a slice of a matrix must not be empty", self.b.loc)
        if rows[1] and cols[1]:
            return parts[0]
        if rows[1] or cols[1]:
            return self.b.call("construct", parts, Vector(len(parts), t.dtype))
        return self.b.call("construct", parts, Matrix(len(rows[0]), len(cols[0]), t.dtype))

    def slice_bounds(self, node):
        """(start, stop, step) of a slice node as ints or None; constants only."""
        out = []
        for part in (node.lower, node.upper, node.step):
            if part is None:
                out.append(None)
                continue
            x = self.expr(part)
            if not (isinstance(x, Lit) and isinstance(x.value, int)
                    and not isinstance(x.value, bool)):
                raise KernelValueError("Slice component must be a compile-time constant "
                                       "integer", self.b.loc)
            out.append(x.value)
        if out[2] == 0:
            raise KernelValueError("slice step cannot be zero", self.b.loc)
        return tuple(out)

    def array_slice(self, arr, idx):
        if arr.type.ndim != 1 or len(idx) != 1:
            raise KernelTypeError("only a constant slice of a 1-D array can be unpacked "
                                  "with *", self.b.loc)
        start, stop, step = self.slice_bounds(idx[0])
        if stop is None:
            raise KernelValueError("unpacking an array slice requires explicit upper bound",
                                   self.b.loc)
        if (start is not None and start < 0) or stop < 0:
            raise KernelValueError("slice bounds cannot be negative for arrays", self.b.loc)
        if step is not None and step < 0:
            raise KernelValueError("slice step cannot be negative for arrays", self.b.loc)
        picks = range(start or 0, stop, step or 1)
        return StarSource([self.load_element(arr, [self.b.const(k, int32)], None)
                           for k in picks])


def _negative_literal(node) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
        and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int)


def _slice_range(bounds, n, lowerer):
    return list(range(*slice(*bounds).indices(n)))


def _rows_or_one(lowerer, node, n):
    """(indices, is_single) for one axis of a matrix subscript."""
    if isinstance(node, ast.Slice):
        return _slice_range(lowerer.slice_bounds(node), n, lowerer), False
    x = lowerer.expr(node)
    if not (isinstance(x, Lit) and isinstance(x.value, int)):
        raise KernelValueError("an index beside a slice must be a constant", lowerer.b.loc)
    k = x.value + n if x.value < 0 else x.value
    if not 0 <= k < n:
        raise KernelTypeError(f"index {x.value} is out of range (0..{n - 1})", lowerer.b.loc)
    return [k], True
