"""Vector and matrix builtins: dot, cross, length, normalize, outer, transpose, determinant.

Matrix-vector and matrix-matrix products are ``mul`` (in core.py, shared with ``*``).
Determinants and cofactors are written once, as Laplace expansion over an abstract
"arithmetic" (``ar``), and run both on NumPy scalars and on LLVM values.
"""
from __future__ import annotations

import numpy as np

from ..types import Matrix, int32
from .registry import builtin, sig


# dot takes integer vectors too (Warp does); its derivative only reaches float ones
builtin("dot", [sig("V", "V", ret="T")],
        lambda a, b: (a * b).sum(dtype=a.dtype),
        llvm=lambda cx, a, b: cx.reduce_add(cx.arith("mul", a, b)), cuda="dot({0}, {1})",
        grad=lambda g, a, b, r, adj: (g.mul(adj, b), g.mul(adj, a)))


def _cross_ret(b):
    return b["V"] if b["V"].length == 3 else None


def _np_cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]], a.dtype)


builtin("cross", [sig("FV", "FV", ret=_cross_ret)], _np_cross,
        llvm=lambda cx, a, b: cx.cross(a, b), cuda="cross({0}, {1})",
        grad=lambda g, a, b, r, adj: (g.cross(b, adj), g.cross(adj, a)))

builtin("length_sq", [sig("FV", ret="T")], lambda v: (v * v).sum(dtype=v.dtype),
        llvm=lambda cx, v: cx.reduce_add(cx.arith("mul", v, v)), cuda="length_sq({0})",
        grad=lambda g, v, r, adj: (g.mul(g.mul(adj, g.const(2.0, r.type)), v),))


def _np_length(v):
    return v.dtype.type(np.sqrt((v * v).sum(dtype=v.dtype)))


builtin("length", [sig("FV", ret="T")], _np_length,
        llvm=lambda cx, v: cx.intr("llvm.sqrt", cx.reduce_add(cx.arith("mul", v, v))),
        cuda="length({0})",
        grad=lambda g, v, r, adj: (g.where(g.gt(r, g.zeros(r.type)),
                                           g.mul(g.div(adj, r), v), g.zeros(v.type)),))


def _np_normalize(v):
    n = _np_length(v)
    return (v / n).astype(v.dtype) if n > 0 else np.zeros_like(v)


def _normalize_grad(g, v, r, adj):
    n = g.length(v)
    d = g.div(g.sub(adj, g.mul(g.dot(adj, r), r)), n)
    return (g.where(g.gt(n, g.zeros(n.type)), d, g.zeros(v.type)),)


builtin("normalize", [sig("FV", ret="V")], _np_normalize,
        llvm=lambda cx, v: cx.normalize(v), cuda="normalize({0})", grad=_normalize_grad)


class _OuterSig:
    params = ("V", "V")

    def match(self, types):  # any numeric vectors (Warp 1.19 takes integer ones too)
        if len(types) == 2 and all(t.is_vector and t.dtype.kind != "b" for t in types) \
                and types[0].dtype == types[1].dtype:
            return {"R": Matrix(types[0].length, types[1].length, types[0].dtype)}
        return None

    def result(self, bind):
        return bind["R"]

    def __str__(self):
        return "(vector[n], vector[m]) -> matrix[n, m]"


builtin("outer", [_OuterSig()], lambda a, b: np.outer(a, b).astype(a.dtype),
        llvm=lambda cx, a, b: cx.outer(a, b), cuda="outer({0}, {1})",
        grad=lambda g, a, b, r, adj: (g.mul(adj, b), g.mul(g.transpose(adj), a)))


def _transpose_ret(b):
    m = b["M"]
    return Matrix(m.cols, m.rows, m.dtype)


builtin("transpose", [sig("M", ret=_transpose_ret)], lambda m: m.T.copy(),
        llvm=lambda cx, m: cx.transpose(m), cuda="transpose({0})",
        grad=lambda g, m, r, adj: (g.transpose(adj),))


# ---- determinants by Laplace expansion over an abstract arithmetic ---------------------

def det_expand(ar, m, n):
    """Determinant of the n x n matrix whose element (i, j) is m(i, j)."""
    if n == 1:
        return m(0, 0)
    total = None
    for j in range(n):
        minor = _minor(m, 0, j)
        term = ar.mul(m(0, j), det_expand(ar, minor, n - 1))
        total = term if total is None else (ar.sub if j % 2 else ar.add)(total, term)
    return total


def cofactor_expand(ar, m, n):
    """Row-major list of the cofactors C(i, j) = (-1)^(i+j) det(minor(i, j))."""
    if n == 1:
        return [ar.one()]
    out = []
    for i in range(n):
        for j in range(n):
            d = det_expand(ar, _minor(m, i, j), n - 1)
            out.append(ar.neg(d) if (i + j) % 2 else d)
    return out


def _minor(m, row, col):
    return lambda i, j: m(i + (i >= row), j + (j >= col))


class _NumpyArith:
    def __init__(self, dtype):
        self.t = dtype.type

    def add(self, a, b):
        return self.t(a + b)

    def sub(self, a, b):
        return self.t(a - b)

    def mul(self, a, b):
        return self.t(a * b)

    def neg(self, a):
        return self.t(-a)

    def one(self):
        return self.t(1)


def _square(b):
    m = b["M"]
    return m.dtype if m.rows == m.cols else None


def _np_det(m):
    return det_expand(_NumpyArith(m.dtype), lambda i, j: m[i, j], m.shape[0])


def _np_cofactor(m):
    n = m.shape[0]
    return np.array(cofactor_expand(_NumpyArith(m.dtype), lambda i, j: m[i, j], n),
                    m.dtype).reshape(n, n)


builtin("determinant", [sig("FM", ret=_square)], _np_det,
        llvm=lambda cx, m: cx.determinant(m), cuda="determinant({0})",
        grad=lambda g, m, r, adj: (g.mul(adj, g.cofactor(m)),))

builtin("cofactor", [sig("FM", ret=lambda b: b["M"] if _square(b) else None)], _np_cofactor,
        llvm=lambda cx, m: cx.cofactor(m), cuda="kl_cofactor({0})", differentiable=False)



def _np_trace(m):
    return m.dtype.type(np.trace(m))


def _llvm_trace(cx, m):
    n = cx.types[0].rows
    diag = [cx.b.extract_element(m, cx.const(i * n + i, int32)) for i in range(n)]
    acc = diag[0]
    for d in diag[1:]:
        acc = cx.arith("add", acc, d)
    return acc


# trace(m): the sum of the diagonal; its adjoint is adj times the identity
builtin("trace", [sig("M", ret=lambda b: b["T"] if _square(b) else None)], _np_trace,
        llvm=_llvm_trace, cuda="kl_trace({0})",
        grad=lambda g, m, r, adj: (g.mul(adj, g.const(np.eye(m.type.rows), m.type)),))
