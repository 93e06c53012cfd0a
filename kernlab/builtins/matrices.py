"""Matrix helpers Warp programs use: inverse (and inverse_approx), diag, get_diag, skew, ddot.

Every function here is an expansion (expand.py): IR over the scalar primitives, so each
backend runs it and reverse mode differentiates it without a rule of its own. The inverse
is the adjugate over the determinant, both built from memoised minors (Laplace expansion
along the first remaining row), so a 4x4 inverse shares its 2x2 minors; its derivative is
that of the formula, which is -inv^T adj inv^T. As in Warp, a matrix whose determinant is
exactly zero has the zero matrix as its inverse (and a zero gradient).
"""
from __future__ import annotations

from ..errors import KernelTypeError
from ..types import Matrix, Vector, int32
from .expand import expansion


def _c(g, v, i, j=None):
    if j is None:
        return g.index(v, g.const(i, int32))
    return g.index(v, g.const(i, int32), g.const(j, int32))


def _matrix(g, rows, cols, elems, scalar):
    """A rows x cols matrix from a row-major list of scalars."""
    return g.construct(*elems, target=Matrix(rows, cols, scalar))


def _reject(g, message):
    raise KernelTypeError(message, getattr(g, "loc", None))


# ---- inverse -----------------------------------------------------------------------------

class _Minors:
    """Determinants of the square submatrices of m, each built once."""

    def __init__(self, g, m):
        self.g, self.n = g, m.type.rows
        self.e = [[_c(g, m, i, j) for j in range(self.n)] for i in range(self.n)]
        self.memo = {}

    def det(self, rows: tuple, cols: tuple):
        key = (rows, cols)
        if key in self.memo:
            return self.memo[key]
        g = self.g
        if len(rows) == 1:
            out = self.e[rows[0]][cols[0]]
        else:
            out = None
            for k, c in enumerate(cols):
                term = g.mul(self.e[rows[0]][c], self.det(rows[1:], cols[:k] + cols[k + 1:]))
                out = term if out is None else (g.sub if k % 2 else g.add)(out, term)
        self.memo[key] = out
        return out

    def cofactor(self, i, j):
        full = tuple(range(self.n))
        d = self.det(full[:i] + full[i + 1:], full[:j] + full[j + 1:])
        return self.g.neg(d) if (i + j) % 2 else d


def _inverse(g, m):
    T, n = m.type.scalar, m.type.rows
    mi = _Minors(g, m)
    cof = [[mi.cofactor(i, j) for j in range(n)] for i in range(n)]
    det = None
    for j in range(n):  # along row 0, reusing the cofactors
        term = g.mul(mi.e[0][j], cof[0][j])
        det = term if det is None else g.add(det, term)
    zero = g.zeros(T)
    ok = g.ne(det, zero)
    rcp = g.div(g.const(1.0, T), g.where(ok, det, g.const(1.0, T)))
    # the adjugate is the transpose of the cofactor matrix
    adj = _matrix(g, n, n, [cof[j][i] for i in range(n) for j in range(n)], T)
    return g.where(ok, g.mul(adj, rcp), g.zeros(m.type))


# inverse_approx is Warp's inverse with an approximate reciprocal on the GPU; its CPU path
# (and every kernlab backend) divides exactly
for _kind in ("mat22", "mat33", "mat44"):
    expansion("inverse", (_kind,), _kind)(_inverse)
    expansion("inverse_approx", (_kind,), _kind)(_inverse)


# ---- diagonals, skew, double contraction ---------------------------------------------------

@expansion("diag", ("vector",), "matrix")
def diag(g, v):
    n, T = v.type.length, v.type.scalar
    zero = g.zeros(T)
    parts = [_c(g, v, i) if i == j else zero for i in range(n) for j in range(n)]
    return _matrix(g, n, n, parts, T)


@expansion("get_diag", ("matrix",), "vector")
def get_diag(g, m):
    t = m.type
    if t.rows != t.cols:
        _reject(g, f"get_diag() takes a square matrix, not {t} ({t.rows}x{t.cols})")
    return g.construct(*(_c(g, m, i, i) for i in range(t.rows)),
                       target=Vector(t.rows, t.scalar))


@expansion("skew", ("vec3",), "mat33")
def skew(g, v):
    """[v]x: the matrix with skew(v) @ x == cross(v, x)."""
    T = v.type.scalar
    x, y, z = (_c(g, v, k) for k in range(3))
    zero = g.zeros(T)
    return _matrix(g, 3, 3, [zero, g.neg(z), y, z, zero, g.neg(x), g.neg(y), x, zero], T)


@expansion("ddot", ("matrix", "matrix"), "float")
def ddot(g, a, b):
    """The sum of a[i, j] * b[i, j] over all i, j."""
    return g.inner(a, b)


PUBLIC = ["inverse", "inverse_approx", "diag", "get_diag", "skew", "ddot"]
