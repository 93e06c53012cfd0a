"""Quaternions, rigid transforms and spatial (6-D) vectors, as Warp defines them.

Every function here is an expansion (expand.py): IR written over the primitive builtins,
so its NumPy value, its lowering on every backend and its derivative all follow from
this one definition. Conventions are Warp's: a quaternion is (x, y, z, w) with w the real
part; a transform is (p, q) stored as (px, py, pz, qx, qy, qz, qw) and maps x to
``quat_rotate(q, x) + p``; a spatial vector is (angular top, linear bottom).

Branches (``quat_from_matrix``, ``normalize``) are selects whose untaken sides are made
finite first, so a zero adjoint through an untaken side never turns into NaN.
"""
from __future__ import annotations

from ..types import Matrix, Quaternion, Transformation, Vector, int32
from .expand import expansion


# ---- small helpers -------------------------------------------------------------------------

def _k(g, x, t):
    return g.const(x, t)


def _c(g, v, i, j=None):
    """Component i (or element i, j) of a vector, quaternion or matrix."""
    if j is None:
        return g.index(v, g.const(i, int32))
    return g.index(v, g.const(i, int32), g.const(j, int32))


def _vec(g, *xs):
    return g.construct(*xs, target=Vector(len(xs), xs[0].type))


def _quat(g, x, y, z, w):
    return g.construct(x, y, z, w, target=Quaternion(4, x.type))


def _xyz(g, v, start=0):
    return _vec(g, *(_c(g, v, start + k) for k in range(3)))


def _mat(g, rows):
    """A matrix from a list of rows of scalars."""
    t = rows[0][0].type
    return g.construct(*(x for r in rows for x in r), target=Matrix(len(rows), len(rows[0]), t))


def _quat_from_parts(g, v, w):
    return _quat(g, _c(g, v, 0), _c(g, v, 1), _c(g, v, 2), w)


def _transform(g, p, q):
    T = q.type.scalar
    parts = [_c(g, p, k) for k in range(3)] + [_c(g, q, k) for k in range(4)]
    return g.construct(*parts, target=Transformation(7, T))


# ---- quaternions -----------------------------------------------------------------------------

@expansion("quat_identity", (), "quat", targeted=True)
def quat_identity(g, target):
    z = _k(g, 0.0, target)
    return _quat(g, z, z, z, _k(g, 1.0, target))


@expansion("quat_from_axis_angle", ("vec3", "float"), "quat")
def quat_from_axis_angle(g, axis, angle):
    half = g.mul(angle, _k(g, 0.5, angle.type))
    return _quat_from_parts(g, g.mul(axis, g.sin(half)), g.cos(half))


@expansion("quat_to_axis_angle", ("quat",), "(vec3, float)")
def quat_to_axis_angle(g, q):
    """(axis, angle), angle in [0, pi]: the axis flips with the sign of w."""
    T = q.type.scalar
    v, w = _xyz(g, q), _c(g, q, 3)
    n = g.normalize(v)
    axis = g.where(g.lt(w, g.zeros(T)), g.neg(n), n)
    angle = g.mul(_k(g, 2.0, T), g.atan2(g.length(v), g.abs(w)))
    return axis, angle


@expansion("quat_to_axis_angle", ("quat", "vec3", "float"), None, writes=(1, 2))
def quat_to_axis_angle_into(g, q, axis, angle):
    """quat_to_axis_angle(q, axis, angle): the results go into axis and angle."""
    return quat_to_axis_angle(g, q)


@expansion("quat_rpy", ("float", "float", "float"), "quat")
def quat_rpy(g, roll, pitch, yaw):
    """qz(yaw) * qy(pitch) * qx(roll), expanded."""
    T = roll.type
    half = _k(g, 0.5, T)
    cr, sr = g.cos(g.mul(roll, half)), g.sin(g.mul(roll, half))
    cp, sp = g.cos(g.mul(pitch, half)), g.sin(g.mul(pitch, half))
    cy, sy = g.cos(g.mul(yaw, half)), g.sin(g.mul(yaw, half))

    def m3(a, b, c):
        return g.mul(g.mul(a, b), c)
    x = g.sub(m3(cy, sr, cp), m3(sy, cr, sp))
    y = g.add(m3(cy, cr, sp), m3(sy, sr, cp))
    z = g.sub(m3(sy, cr, cp), m3(cy, sr, sp))
    w = g.add(m3(cy, cr, cp), m3(sy, sr, sp))
    return _quat(g, x, y, z, w)


@expansion("quat_between_vectors", ("vec3", "vec3"), "quat")
def quat_between_vectors(g, a, b):
    """The shortest-arc rotation taking the direction of a to that of b: (a x b, 1 + a.b)
    normalised, for unit a and b. Opposite directions are not handled (as in Warp)."""
    a, b = g.normalize(a), g.normalize(b)
    w = g.add(_k(g, 1.0, a.type.scalar), g.dot(a, b))
    return quat_normalize(g, _quat_from_parts(g, g.cross(a, b), w))


@expansion("quat_inverse", ("quat",), "quat")
def quat_inverse(g, q):
    return _quat(g, g.neg(_c(g, q, 0)), g.neg(_c(g, q, 1)), g.neg(_c(g, q, 2)), _c(g, q, 3))


@expansion("mul", ("quat", "quat"), "quat")
def quat_mul(g, a, b):
    """The Hamilton product: vector part a.w b.v + b.w a.v + a.v x b.v."""
    av, bv, aw, bw = _xyz(g, a), _xyz(g, b), _c(g, a, 3), _c(g, b, 3)
    v = g.add(g.add(g.mul(aw, bv), g.mul(bw, av)), g.cross(av, bv))
    return _quat_from_parts(g, v, g.sub(g.mul(aw, bw), g.dot(av, bv)))


@expansion("normalize", ("quat",), "quat")
def quat_normalize(g, q):
    """q / |q|; the zero quaternion gives the identity (as in Warp)."""
    T = q.type.scalar
    n = g.length(q)
    ok = g.gt(n, g.zeros(T))
    safe = g.where(ok, n, _k(g, 1.0, T))
    return g.where(ok, g.div(q, safe), quat_identity(g, T))


def _rotate(g, q, x, sign):
    """Warp's formula, which stays exact for unit q: x (2w^2 - 1) + 2 (v.x) v
    +- 2 w (v cross x)."""
    T = q.type.scalar
    v, w = _xyz(g, q), _c(g, q, 3)
    two = _k(g, 2.0, T)
    c = g.sub(g.mul(two, g.mul(w, w)), _k(g, 1.0, T))
    d = g.mul(two, g.dot(v, x))
    turn = g.mul(g.mul(w, two), g.cross(v, x))
    out = g.add(g.mul(x, c), g.mul(v, d))
    return g.add(out, turn) if sign > 0 else g.sub(out, turn)


@expansion("quat_rotate", ("quat", "vec3"), "vec3")
def quat_rotate(g, q, x):
    return _rotate(g, q, x, +1)


@expansion("quat_rotate_inv", ("quat", "vec3"), "vec3")
def quat_rotate_inv(g, q, x):
    return _rotate(g, q, x, -1)


@expansion("quat_slerp", ("quat", "quat", "float"), "quat")
def quat_slerp(g, a, b, t):
    axis, angle = quat_to_axis_angle(g, quat_mul(g, quat_inverse(g, a), b))
    return quat_mul(g, a, quat_from_axis_angle(g, axis, g.mul(t, angle)))


@expansion("quat_to_matrix", ("quat",), "mat33")
def quat_to_matrix(g, q):
    """Columns are the rotated basis vectors."""
    T = q.type.scalar
    one, zero = _k(g, 1.0, T), g.zeros(T)
    basis = [(one, zero, zero), (zero, one, zero), (zero, zero, one)]
    cols = [_rotate(g, q, _vec(g, *e), +1) for e in basis]
    return g.transpose(g.construct(*cols, target=Matrix(3, 3, T)))


def _sqrt_pos(g, x):
    """sqrt(x) where x > 0, else 1: finite on the side a select does not take."""
    T = x.type
    return g.sqrt(g.where(g.gt(x, g.zeros(T)), x, _k(g, 1.0, T)))


def _quat_from_matrix(g, m):
    T = m.type.scalar

    def e(i, j):
        return _c(g, m, i, j)
    half, one = _k(g, 0.5, T), _k(g, 1.0, T)
    tr = g.add(g.add(e(0, 0), e(1, 1)), e(2, 2))

    def case(arg, big, rest):
        """The component named by ``big`` is h/2, the rest are sums times 0.5/h."""
        h = _sqrt_pos(g, g.add(arg, one))
        inv = g.div(half, h)
        comps = {big: g.mul(half, h)}
        for k, (i, j, s) in rest.items():
            pair = (g.add if s > 0 else g.sub)(e(i, j), e(j, i))
            comps[k] = g.mul(pair, inv)
        return _quat(g, comps[0], comps[1], comps[2], comps[3])
    q_w = case(tr, 3, {0: (2, 1, -1), 1: (0, 2, -1), 2: (1, 0, -1)})
    q_x = case(g.sub(e(0, 0), g.add(e(1, 1), e(2, 2))), 0,
               {1: (0, 1, 1), 2: (2, 0, 1), 3: (2, 1, -1)})
    q_y = case(g.sub(e(1, 1), g.add(e(2, 2), e(0, 0))), 1,
               {2: (1, 2, 1), 0: (0, 1, 1), 3: (0, 2, -1)})
    q_z = case(g.sub(e(2, 2), g.add(e(0, 0), e(1, 1))), 2,
               {0: (2, 0, 1), 1: (1, 2, 1), 3: (1, 0, -1)})
    y_big = g.gt(e(1, 1), e(0, 0))
    z_big = g.gt(e(2, 2), g.where(y_big, e(1, 1), e(0, 0)))
    q = g.where(z_big, q_z, g.where(y_big, q_y, q_x))
    q = g.where(g.ge(tr, g.zeros(T)), q_w, q)
    return quat_normalize(g, q)


for _kind in ("mat33", "mat44"):
    expansion("quat_from_matrix", (_kind,), "quat")(_quat_from_matrix)


# ---- transforms ------------------------------------------------------------------------------

@expansion("transform_identity", (), "transform", targeted=True)
def transform_identity(g, target):
    z = _k(g, 0.0, target)
    return _transform(g, _vec(g, z, z, z), quat_identity(g, target))


@expansion("transformation", ("vec3", "quat"), "transform")
def transformation(g, p, q):
    return _transform(g, p, q)


@expansion("transformation", ("vec3",), "transform")
def transformation_p(g, p):
    return _transform(g, p, quat_identity(g, p.type.scalar))


@expansion("transform_expand", ("vec7",), "transform")
def transform_expand(g, v):
    """A flat 7-vector (px, py, pz, qx, qy, qz, qw) read as a transform."""
    return g.construct(*(_c(g, v, k) for k in range(7)),
                       target=Transformation(7, v.type.scalar))


@expansion("transform_get_translation", ("transform",), "vec3")
def transform_get_translation(g, t):
    return _xyz(g, t)


@expansion("transform_get_rotation", ("transform",), "quat")
def transform_get_rotation(g, t):
    return _quat(g, *(_c(g, t, 3 + k) for k in range(4)))


# transform_set_*(t, x) write the new transform into t (frontend/spatial.py, lang.py);
# the *_copy forms return it.
@expansion("transform_set_translation_copy", ("transform", "vec3"), "transform")
@expansion("transform_set_translation", ("transform", "vec3"), "transform", writes=(0,))
def transform_set_translation_copy(g, t, p):
    return _transform(g, p, transform_get_rotation(g, t))


@expansion("transform_set_rotation_copy", ("transform", "quat"), "transform")
@expansion("transform_set_rotation", ("transform", "quat"), "transform", writes=(0,))
def transform_set_rotation_copy(g, t, q):
    return _transform(g, transform_get_translation(g, t), q)


@expansion("transform_multiply", ("transform", "transform"), "transform")
def transform_multiply(g, a, b):
    aq = transform_get_rotation(g, a)
    p = g.add(_rotate(g, aq, transform_get_translation(g, b), +1),
              transform_get_translation(g, a))
    return _transform(g, p, quat_mul(g, aq, transform_get_rotation(g, b)))


expansion("mul", ("transform", "transform"), "transform")(transform_multiply)


@expansion("transform_inverse", ("transform",), "transform")
def transform_inverse(g, t):
    q_inv = quat_inverse(g, transform_get_rotation(g, t))
    return _transform(g, g.neg(_rotate(g, q_inv, transform_get_translation(g, t), +1)), q_inv)


@expansion("transform_point", ("transform", "vec3"), "vec3")
def transform_point(g, t, x):
    return g.add(transform_get_translation(g, t),
                 _rotate(g, transform_get_rotation(g, t), x, +1))


@expansion("transform_vector", ("transform", "vec3"), "vec3")
def transform_vector(g, t, x):
    return _rotate(g, transform_get_rotation(g, t), x, +1)


def _affine(g, m, x, w):
    """The first three rows of m @ (x, w) for a 4x4 m."""
    rows = []
    for i in range(3):
        acc = g.mul(_c(g, m, i, 3), w) if w is not None else None
        for j in range(3):
            term = g.mul(_c(g, m, i, j), _c(g, x, j))
            acc = term if acc is None else g.add(acc, term)
        rows.append(acc)
    return _vec(g, *rows)


@expansion("transform_point", ("mat44", "vec3"), "vec3")
def transform_point_matrix(g, m, x):
    return _affine(g, m, x, _k(g, 1.0, m.type.scalar))


@expansion("transform_vector", ("mat44", "vec3"), "vec3")
def transform_vector_matrix(g, m, x):
    return _affine(g, m, x, None)


@expansion("transform_to_matrix", ("transform",), "mat44")
def transform_to_matrix(g, t):
    return transform_compose(g, transform_get_translation(g, t), transform_get_rotation(g, t),
                             None)


@expansion("transform_compose", ("vec3", "quat", "vec3"), "mat44")
def transform_compose(g, p, q, s):
    """[R diag(s) | p] over (0, 0, 0, 1); s None means no scaling."""
    T = q.type.scalar
    r = quat_to_matrix(g, q)
    rows = []
    for i in range(3):
        row = [_c(g, r, i, j) if s is None else g.mul(_c(g, s, j), _c(g, r, i, j))
               for j in range(3)]
        rows.append(row + [_c(g, p, i)])
    zero = g.zeros(T)
    rows.append([zero, zero, zero, _k(g, 1.0, T)])
    return _mat(g, rows)


@expansion("transform_from_matrix", ("mat44",), "transform")
def transform_from_matrix(g, m):
    p = _vec(g, *(_c(g, m, i, 3) for i in range(3)))
    return _transform(g, p, _quat_from_matrix(g, m))


@expansion("transform_decompose", ("mat44",), "(vec3, quat, vec3)")
def transform_decompose(g, m):
    """(p, q, s): s holds the lengths of the first three columns."""
    p = _vec(g, *(_c(g, m, i, 3) for i in range(3)))
    cols = [_vec(g, *(_c(g, m, i, j) for i in range(3))) for j in range(3)]
    scale = [g.length(c) for c in cols]
    unit = [g.div(c, n) for c, n in zip(cols, scale)]
    rot = g.transpose(g.construct(*unit, target=Matrix(3, 3, m.type.scalar)))
    return p, _quat_from_matrix(g, rot), _vec(g, *scale)


# ---- spatial vectors and matrices -------------------------------------------------------------

@expansion("spatial_vector", ("vec3", "vec3"), "vec6")
def spatial_vector(g, w, v):
    return g.construct(*(_c(g, x, k) for x in (w, v) for k in range(3)),
                       target=Vector(6, w.type.scalar))


@expansion("spatial_top", ("vec6",), "vec3")
def spatial_top(g, a):
    return _xyz(g, a)


@expansion("spatial_bottom", ("vec6",), "vec3")
def spatial_bottom(g, a):
    return _xyz(g, a, 3)


@expansion("spatial_dot", ("vec6", "vec6"), "float")
def spatial_dot(g, a, b):
    return g.dot(a, b)


@expansion("spatial_cross", ("vec6", "vec6"), "vec6")
def spatial_cross(g, a, b):
    aw, av, bw, bv = _xyz(g, a), _xyz(g, a, 3), _xyz(g, b), _xyz(g, b, 3)
    return spatial_vector(g, g.cross(aw, bw), g.add(g.cross(av, bw), g.cross(aw, bv)))


@expansion("spatial_cross_dual", ("vec6", "vec6"), "vec6")
def spatial_cross_dual(g, a, b):
    aw, av, bw, bv = _xyz(g, a), _xyz(g, a, 3), _xyz(g, b), _xyz(g, b, 3)
    return spatial_vector(g, g.add(g.cross(aw, bw), g.cross(av, bv)), g.cross(aw, bv))


@expansion("spatial_adjoint", ("mat33", "mat33"), "mat66")
def spatial_adjoint(g, r, s):
    """[[R, 0], [S, R]]."""
    zero = g.zeros(r.type.scalar)
    rows = []
    for i in range(6):
        row = []
        for j in range(6):
            if i < 3:
                row.append(_c(g, r, i, j) if j < 3 else zero)
            else:
                row.append(_c(g, s, i - 3, j) if j < 3 else _c(g, r, i - 3, j - 3))
        rows.append(row)
    return _mat(g, rows)


# ---- matrices from vectors (Warp's spatial tests use them) ----------------------------

def _matrix_from_cols(g, *cols):
    t = cols[0].type
    rows = g.construct(*cols, target=Matrix(len(cols), t.length, t.scalar))
    return g.transpose(rows)


def _matrix_from_rows(g, *rows):
    t = rows[0].type
    return g.construct(*rows, target=Matrix(len(rows), t.length, t.scalar))


for _n in range(1, 7):
    expansion("matrix_from_cols", ("vector",) * _n, "matrix")(_matrix_from_cols)
    expansion("matrix_from_rows", ("vector",) * _n, "matrix")(_matrix_from_rows)


PUBLIC = ["quat_identity", "quat_from_axis_angle", "quat_to_axis_angle", "quat_rpy",
          "quat_between_vectors", "quat_inverse", "quat_rotate", "quat_rotate_inv",
          "quat_slerp", "quat_to_matrix",
          "quat_from_matrix", "transform_identity", "transform_get_translation",
          "transform_get_rotation", "transform_multiply", "transform_inverse",
          "transform_point", "transform_vector", "transform_to_matrix",
          "transform_from_matrix", "transform_compose", "transform_decompose",
          "transform_expand",
          "transform_set_translation_copy", "transform_set_rotation_copy",
          "transform_set_translation", "transform_set_rotation",
          "spatial_top", "spatial_bottom", "spatial_dot", "spatial_cross",
          "spatial_cross_dual", "spatial_adjoint", "matrix_from_cols", "matrix_from_rows"]
