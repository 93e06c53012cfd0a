"""Small matrix decompositions as Warp computes them: svd3, svd2, qr3, eig3.

The 3x3 ones follow the method of McAdams et al., "Computing the Singular Value
Decomposition of 3x3 matrices with minimal branching and elementary floating point
operations" (2011), which Warp uses, with Warp's constants and number of sweeps, so the
factors come out with the same signs and order as Warp's:

* a fixed number of cyclic Jacobi sweeps (4 in float32, 8 in float64) diagonalises a
  symmetric matrix; each step is a Givens rotation from an approximate angle (exact
  enough because the sweeps are repeated), and the rotations are accumulated as a
  quaternion;
* svd3 runs that on A^T A to get V, sorts the columns of A V by decreasing length (a swap
  negates one column so V stays a rotation), and a Givens QR of A V gives U and the
  singular values (the last one negative when det A < 0, as in Warp);
* qr3 is that Givens QR on its own; eig3 the Jacobi sweeps on A's lower triangle.

Each is an expansion (expand.py), straight-line IR over scalar primitives, with selects
in place of branches (their untaken sides kept finite). Reverse and forward mode
differentiate the computation itself: the derivative of the factors this fixed number of
sweeps produces, which matches the analytic derivative of the decomposition as far as
the sweeps have converged, and stays finite where singular values repeat.
"""
from __future__ import annotations

import math

from ..types import Matrix, Vector, float64, int32
from .expand import expansion


class _Ops:
    """Scalar arithmetic on IR values of one float type, spelled short."""

    def __init__(self, g, T):
        self.g, self.T = g, T

    def k(self, x):
        return self.g.const(float(x), self.T)

    def add(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = self.g.add(out, x)
        return out

    def sub(self, a, b):
        return self.g.sub(a, b)

    def mul(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = self.g.mul(out, x)
        return out

    def neg(self, a):
        return self.g.neg(a)

    def div(self, a, b):
        return self.g.div(a, b)

    def sel(self, c, a, b):
        return self.g.where(c, a, b)

    def rsqrt(self, x):
        return self.g.div(self.k(1.0), self.g.sqrt(x))


def _elements(g, m, n):
    return [[g.index(m, g.const(i, int32), g.const(j, int32)) for j in range(n)]
            for i in range(n)]


def _matrix(g, rows):
    n = len(rows)
    return g.construct(*(x for r in rows for x in r), target=Matrix(n, n, rows[0][0].type))


def _vector(g, xs):
    return g.construct(*xs, target=Vector(len(xs), xs[0].type))


def _sweeps(T):
    return 8 if T == float64 else 4


def _eps(T):
    return 1e-12 if T == float64 else 1e-6


# ---- Jacobi eigenanalysis of a symmetric 3x3 matrix -------------------------------------------

def _approx_givens(o, a11, a12, a22):
    """(c, s) of the half-angle of the rotation that nearly zeroes a12; where the exact
    angle would exceed pi/8, the pi/8 rotation itself."""
    ch = o.mul(o.k(2.0), o.sub(a11, a22))
    sh = a12
    big = o.g.lt(o.mul(o.k(3.0 + math.sqrt(8.0)), sh, sh), o.mul(ch, ch))
    norm2 = o.add(o.mul(ch, ch), o.mul(sh, sh))
    w = o.rsqrt(o.sel(big, norm2, o.k(1.0)))  # finite where the select drops it
    return (o.sel(big, o.mul(w, ch), o.k(math.cos(math.pi / 8))),
            o.sel(big, o.mul(w, sh), o.k(math.sin(math.pi / 8))))


def _conjugate(o, s, q, x, y, z):
    """One Jacobi step on the symmetric s = [s11, s21, s22, s31, s32, s33]: rotate in the
    (1, 2) plane, fold the rotation into the quaternion q = [x, y, z, w], then cycle the
    axes so the next step works on the next pair."""
    s11, s21, s22, s31, s32, s33 = s
    ch, sh = _approx_givens(o, s11, s21, s22)
    scale = o.add(o.mul(ch, ch), o.mul(sh, sh))
    a = o.div(o.sub(o.mul(ch, ch), o.mul(sh, sh)), scale)
    b = o.div(o.mul(o.k(2.0), sh, ch), scale)
    nb = o.neg(b)
    t11 = o.add(o.mul(a, o.add(o.mul(a, s11), o.mul(b, s21))),
                o.mul(b, o.add(o.mul(a, s21), o.mul(b, s22))))
    t21 = o.add(o.mul(a, o.add(o.mul(nb, s11), o.mul(a, s21))),
                o.mul(b, o.add(o.mul(nb, s21), o.mul(a, s22))))
    t22 = o.add(o.mul(nb, o.add(o.mul(nb, s11), o.mul(a, s21))),
                o.mul(a, o.add(o.mul(nb, s21), o.mul(a, s22))))
    t31 = o.add(o.mul(a, s31), o.mul(b, s32))
    t32 = o.add(o.mul(nb, s31), o.mul(a, s32))
    # q <- q * (rotation by the half-angle (ch, sh) about axis z)
    tmp = [o.mul(q[i], sh) for i in range(3)]
    shw = o.mul(sh, q[3])
    q = [o.mul(qi, ch) for qi in q]
    q[z] = o.add(q[z], shw)
    q[3] = o.sub(q[3], tmp[z])
    q[x] = o.add(q[x], tmp[y])
    q[y] = o.sub(q[y], tmp[x])
    return [t22, t32, s33, t21, t31, t11], q


def _jacobi(o, s):
    """The unit quaternion of the rotation V with V^T S V nearly diagonal."""
    zero, one = o.k(0.0), o.k(1.0)
    q = [zero, zero, zero, one]
    for _ in range(_sweeps(o.T)):
        for x, y, z in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
            s, q = _conjugate(o, s, q, x, y, z)
    return q


def _quat_matrix(o, q):
    x, y, z, w = q
    one, two = o.k(1.0), o.k(2.0)
    xx, yy, zz = o.mul(x, x), o.mul(y, y), o.mul(z, z)
    xz, xy, yz = o.mul(x, z), o.mul(x, y), o.mul(y, z)
    wx, wy, wz = o.mul(w, x), o.mul(w, y), o.mul(w, z)
    return [[o.sub(one, o.mul(two, o.add(yy, zz))), o.mul(two, o.sub(xy, wz)),
             o.mul(two, o.add(xz, wy))],
            [o.mul(two, o.add(xy, wz)), o.sub(one, o.mul(two, o.add(xx, zz))),
             o.mul(two, o.sub(yz, wx))],
            [o.mul(two, o.sub(xz, wy)), o.mul(two, o.add(yz, wx)),
             o.sub(one, o.mul(two, o.add(xx, yy)))]]


def _matmul(o, a, b, transpose_a=False):
    def at(i, k):
        return a[k][i] if transpose_a else a[i][k]
    return [[o.add(*(o.mul(at(i, k), b[k][j]) for k in range(3))) for j in range(3)]
            for i in range(3)]


# ---- Givens QR of a 3x3 matrix ----------------------------------------------------------------

def _qr_givens(o, a1, a2):
    """(c, s) of the half-angle rotation that zeroes a2 against the pivot a1."""
    eps = o.k(_eps(o.T))
    rho = o.g.sqrt(o.add(o.mul(a1, a1), o.mul(a2, a2)))
    sh = o.sel(o.g.gt(rho, eps), a2, o.k(0.0))
    ch = o.add(o.g.abs(a1), o.g.max(rho, eps))
    neg = o.g.lt(a1, o.k(0.0))
    sh, ch = o.sel(neg, ch, sh), o.sel(neg, sh, ch)
    w = o.rsqrt(o.add(o.mul(ch, ch), o.mul(sh, sh)))
    return o.mul(ch, w), o.mul(sh, w)


def _rotate_rows(o, m, p, r, ch, sh):
    """Rows p and r of m rotated by the Givens (ch, sh): Q^T m."""
    a = o.sub(o.k(1.0), o.mul(o.k(2.0), sh, sh))
    b = o.mul(o.k(2.0), ch, sh)
    nb = o.neg(b)
    out = [row[:] for row in m]
    out[p] = [o.add(o.mul(a, m[p][j]), o.mul(b, m[r][j])) for j in range(3)]
    out[r] = [o.add(o.mul(nb, m[p][j]), o.mul(a, m[r][j])) for j in range(3)]
    return out


def _qr(o, b):
    """(Q, R) with b = Q R, Q a rotation, R upper triangular: three Givens rotations
    zeroing (2, 1), (3, 1) and (3, 2)."""
    ch1, sh1 = _qr_givens(o, b[0][0], b[1][0])
    r = _rotate_rows(o, b, 0, 1, ch1, sh1)
    ch2, sh2 = _qr_givens(o, r[0][0], r[2][0])
    r = _rotate_rows(o, r, 0, 2, ch2, sh2)
    ch3, sh3 = _qr_givens(o, r[1][1], r[2][1])
    r = _rotate_rows(o, r, 1, 2, ch3, sh3)
    # b = G1 G2 G3 R: Q is the product of the three rotations
    g1, g2, g3 = (_givens_matrix(o, p, q, ch, sh) for p, q, ch, sh in
                  ((0, 1, ch1, sh1), (0, 2, ch2, sh2), (1, 2, ch3, sh3)))
    return _sparse_matmul(o, _sparse_matmul(o, g1, g2), g3), r


def _givens_matrix(o, p, r, ch, sh):
    """The rotation whose transpose _rotate_rows applies; 0 and 1 stay Python numbers."""
    a = o.sub(o.k(1.0), o.mul(o.k(2.0), sh, sh))
    b = o.mul(o.k(2.0), ch, sh)
    m = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    m[p][p], m[r][r], m[p][r], m[r][p] = a, a, o.neg(b), b
    return m


def _sparse_matmul(o, a, b):
    """a @ b where entries may be the Python numbers 0.0 and 1.0 (skipped / not multiplied)."""
    out = []
    for i in range(3):
        row = []
        for j in range(3):
            terms = []
            for k in range(3):
                x, y = a[i][k], b[k][j]
                if isinstance(x, float) and x == 0.0 or isinstance(y, float) and y == 0.0:
                    continue
                if isinstance(x, float):
                    terms.append(y)
                elif isinstance(y, float):
                    terms.append(x)
                else:
                    terms.append(o.mul(x, y))
            if not terms:
                row.append(0.0)
            elif len(terms) == 1 and all(isinstance(t, float) for t in terms):
                row.append(terms[0])
            else:
                row.append(o.add(*[o.k(t) if isinstance(t, float) else t for t in terms]))
        out.append(row)
    return out


def _value(o, x):
    return o.k(x) if isinstance(x, float) else x


def _square(g, o, rows):
    return _matrix(g, [[_value(o, x) for x in r] for r in rows])


def _sort_columns(o, b, v):
    """Columns of b (and v alongside) in order of decreasing length; each swap negates the
    column moved right, so v stays a rotation."""
    rho = [o.add(*(o.mul(b[i][j], b[i][j]) for i in range(3))) for j in range(3)]
    b, v = [r[:] for r in b], [r[:] for r in v]
    for p, r in ((0, 1), (0, 2), (1, 2)):
        c = o.g.lt(rho[p], rho[r])
        for m in (b, v):
            for i in range(3):
                x, y = m[i][p], m[i][r]
                m[i][p], m[i][r] = o.sel(c, y, x), o.sel(c, o.neg(x), y)
        rho[p], rho[r] = o.sel(c, rho[r], rho[p]), o.sel(c, rho[p], rho[r])
    return b, v


def _symmetric(m):
    """[s11, s21, s22, s31, s32, s33]: the lower triangle of m."""
    return [m[0][0], m[1][0], m[1][1], m[2][0], m[2][1], m[2][2]]


def _svd3(g, A):
    o = _Ops(g, A.type.scalar)
    a = _elements(g, A, 3)
    ata = _matmul(o, a, a, transpose_a=True)
    v = _quat_matrix(o, _jacobi(o, _symmetric(ata)))
    b, v = _sort_columns(o, _matmul(o, a, v), v)
    u, r = _qr(o, b)
    return (_square(g, o, u), _vector(g, [r[0][0], r[1][1], r[2][2]]), _square(g, o, v))


def _qr3(g, A):
    o = _Ops(g, A.type.scalar)
    q, r = _qr(o, _elements(g, A, 3))
    zero = o.k(0.0)  # below the diagonal R is zero by construction
    r = [[x if j >= i else zero for j, x in enumerate(row)] for i, row in enumerate(r)]
    return _square(g, o, q), _square(g, o, r)


def _eig3(g, A):
    o = _Ops(g, A.type.scalar)
    a = _elements(g, A, 3)
    q = _quat_matrix(o, _jacobi(o, _symmetric(a)))
    d = _matmul(o, _matmul(o, q, a, transpose_a=True), q)
    return _square(g, o, q), _vector(g, [d[0][0], d[1][1], d[2][2]])


def _svd2(g, A):
    o = _Ops(g, A.type.scalar)
    (a11, a12), (a21, a22) = _elements(g, A, 2)
    zero, one, half = o.k(0.0), o.k(1.0), o.k(0.5)
    ata11 = o.add(o.mul(a11, a11), o.mul(a21, a21))
    ata12 = o.add(o.mul(a11, a12), o.mul(a21, a22))
    ata22 = o.add(o.mul(a12, a12), o.mul(a22, a22))
    trace, diff = o.add(ata11, ata22), o.sub(ata11, ata22)
    disc = o.add(o.mul(diff, diff), o.mul(o.k(4.0), ata12, ata12))
    double = g.eq(disc, zero)  # a repeated singular value: A is a multiple of a rotation
    root = g.sqrt(o.sel(double, one, disc))
    lam1, lam2 = o.mul(o.add(trace, root), half), o.mul(o.sub(trace, root), half)
    inv_s1 = o.rsqrt(lam1)
    s1, s2 = o.div(one, inv_s1), g.sqrt(o.sel(double, one, lam2))
    two_ata12 = o.mul(o.k(2.0), ata12)
    vy, vx = o.add(o.sub(diff, root), two_ata12), o.sub(o.add(diff, root), two_ata12)
    len2 = o.add(o.mul(vx, vx), o.mul(vy, vy))
    flat = g.eq(len2, zero)
    inv_len = o.rsqrt(o.sel(flat, one, len2))
    diag = o.k(math.sqrt(0.5))
    v11, v21 = o.sel(flat, diag, o.mul(vx, inv_len)), o.sel(flat, diag, o.mul(vy, inv_len))
    u11 = o.mul(o.add(o.mul(a11, v11), o.mul(a12, v21)), inv_s1)
    u21 = o.mul(o.add(o.mul(a21, v11), o.mul(a22, v21)), inv_s1)
    det_sign = g.sign(o.sub(o.mul(a11, a22), o.mul(a12, a21)))
    u12, u22 = o.mul(o.neg(u21), det_sign), o.mul(u11, det_sign)
    same = g.sqrt(o.mul(half, trace))

    def mat2(x11, x12, x21, x22):
        return g.construct(x11, x12, x21, x22, target=Matrix(2, 2, o.T))
    eye = mat2(one, zero, zero, one)
    # A^T A = s^2 I: A is s times an orthogonal matrix, so V = I and U = A / s (Warp
    # returns U = I here, which is right only when A is a multiple of the identity)
    scaled = g.gt(same, zero)
    u_same = g.where(scaled, g.mul(A, o.div(one, o.sel(scaled, same, one))), eye)
    U = g.where(double, u_same, mat2(u11, u12, u21, u22))
    V = g.where(double, eye, mat2(v11, o.neg(v21), v21, v11))
    sigma = g.where(double, _vector(g, [same, same]), _vector(g, [s1, s2]))
    return U, sigma, V


def _into(fn, n_out):
    """The out-argument form: fn(A, out1, ...) assigns fn(A)'s results to the outs."""
    def expand(g, A, *outs):
        assert len(outs) == n_out
        return fn(g, A)
    return expand


expansion("svd3", ("mat33",), "(mat33, vec3, mat33)")(_svd3)
expansion("svd3", ("mat33", "mat33", "vec3", "mat33"), None, writes=(1, 2, 3))(
    _into(_svd3, 3))
expansion("svd2", ("mat22",), "(mat22, vec2, mat22)")(_svd2)
expansion("svd2", ("mat22", "mat22", "vec2", "mat22"), None, writes=(1, 2, 3))(
    _into(_svd2, 3))
expansion("qr3", ("mat33",), "(mat33, mat33)")(_qr3)
expansion("qr3", ("mat33", "mat33", "mat33"), None, writes=(1, 2))(_into(_qr3, 2))
expansion("eig3", ("mat33",), "(mat33, vec3)")(_eig3)
expansion("eig3", ("mat33", "mat33", "vec3"), None, writes=(1, 2))(_into(_eig3, 2))

PUBLIC = ["svd3", "svd2", "qr3", "eig3"]
