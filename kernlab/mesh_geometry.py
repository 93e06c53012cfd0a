"""Triangle, box and ray geometry in kernlab's kernel language, for the mesh queries.

Nothing here knows the BVH: the closest and furthest points of a triangle (as
barycentrics), distances from a point to a box, the ray-box slab test, watertight
ray-triangle intersection, the solid angle a triangle subtends and whether a face meets a
sphere. kernlab/mesh_walks.py walks the tree with these funcs to find a face and
kernlab/mesh_queries.py recomputes a query's result from that face with them, so reverse
mode differentiates them with respect to the query point, the ray and the barycentrics.
"""
import kernlab as kl
from .mesh import FLT_MAX


# ---- geometry in the kernel language --------------------------------------------------------

Vec3s = kl.array(dtype=kl.vec3)
Ints = kl.array(dtype=kl.int32)


@kl.func
def tri_points(points: Vec3s, indices: Ints, face: int):
    return points[indices[face * 3]], points[indices[face * 3 + 1]], \
        points[indices[face * 3 + 2]]


@kl.func
def closest_bary(a: kl.vec3, b: kl.vec3, c: kl.vec3, p: kl.vec3) -> kl.vec2:
    """(weight of a, weight of b) of the point of triangle abc closest to p, by the
    Voronoi region of p (vertex, edge or face)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = kl.dot(ab, ap)
    d2 = kl.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return kl.vec2(1.0, 0.0)
    bp = p - b
    d3 = kl.dot(ab, bp)
    d4 = kl.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return kl.vec2(0.0, 1.0)
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return kl.vec2(1.0 - t, t)
    cp = p - c
    d5 = kl.dot(ab, cp)
    d6 = kl.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return kl.vec2(0.0, 0.0)
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        s = d2 / (d2 - d6)
        return kl.vec2(1.0 - s, 0.0)
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        s = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return kl.vec2(0.0, 1.0 - s)
    inv = 1.0 / (va + vb + vc)
    wb = vb * inv
    wc = vc * inv
    return kl.vec2(1.0 - wb - wc, wb)


@kl.func
def furthest_bary(a: kl.vec3, b: kl.vec3, c: kl.vec3, p: kl.vec3) -> kl.vec2:
    """The corner of abc furthest from p, as barycentrics (ties go to the later corner)."""
    da = kl.length_sq(p - a)
    db = kl.length_sq(p - b)
    dc = kl.length_sq(p - c)
    if da > db and da > dc:
        return kl.vec2(1.0, 0.0)
    if db > dc:
        return kl.vec2(0.0, 1.0)
    return kl.vec2(0.0, 0.0)


@kl.func
def is_sliver(a: kl.vec3, b: kl.vec3, c: kl.vec3) -> bool:
    e0 = b - a
    e1 = c - a
    e2 = c - b
    n = kl.cross(e0, e1)
    return kl.length(n) / (kl.dot(e0, e0) + kl.dot(e1, e1) + kl.dot(e2, e2)) < 1.0e-6


@kl.func
def box_dist_sq(p: kl.vec3, lo: kl.vec3, hi: kl.vec3) -> float:
    d = kl.vec3(kl.min(hi[0], kl.max(lo[0], p[0])) - p[0],
                kl.min(hi[1], kl.max(lo[1], p[1])) - p[1],
                kl.min(hi[2], kl.max(lo[2], p[2])) - p[2])
    return kl.dot(d, d)


@kl.func
def box_far_sq(p: kl.vec3, lo: kl.vec3, hi: kl.vec3) -> float:
    x = kl.max(kl.abs(p[0] - lo[0]), kl.abs(p[0] - hi[0]))
    y = kl.max(kl.abs(p[1] - lo[1]), kl.abs(p[1] - hi[1]))
    z = kl.max(kl.abs(p[2] - lo[2]), kl.abs(p[2] - hi[2]))
    return x * x + y * y + z * z


@kl.func
def ray_box(start: kl.vec3, d: kl.vec3, lo: kl.vec3, hi: kl.vec3):
    """(hit, entry t) of the ray start + t d with a box; a zero component of d is handled
    as a slab the start must lie in."""
    tmin = float(-FLT_MAX)
    tmax = float(FLT_MAX)
    inside = True
    for i in range(3):
        if d[i] == 0.0:
            if start[i] < lo[i] or start[i] > hi[i]:
                inside = False
        else:
            r = 1.0 / d[i]
            t1 = (lo[i] - start[i]) * r
            t2 = (hi[i] - start[i]) * r
            tmin = kl.max(kl.min(t1, t2), tmin)
            tmax = kl.min(kl.max(t1, t2), tmax)
    return inside and tmax >= 0.0 and tmax >= tmin, tmin


@kl.func
def longest_axis(d: kl.vec3) -> int:
    x = kl.abs(d[0])
    y = kl.abs(d[1])
    z = kl.abs(d[2])
    if x > y and x > z:
        return 0
    if y > z:
        return 1
    return 2


@kl.func
def cross2(a: float, b: float, c: float, d: float) -> float:
    """a b - c d, the products in double precision."""
    return float(kl.float64(a) * kl.float64(b) - kl.float64(c) * kl.float64(d))


@kl.func
def ray_triangle(start: kl.vec3, d: kl.vec3, a: kl.vec3, b: kl.vec3, c: kl.vec3):
    """Watertight ray-triangle intersection (Woop, Benthin, Wald 2013): (hit, t, u, v,
    det, normal) with the hit at start + t d = u a + v b + (1 - u - v) c; det < 0 when the
    ray meets the back of the face (normal = (b - a) x (c - a))."""
    kz = longest_axis(d)
    kx = (kz + 1) % 3
    ky = (kx + 1) % 3
    if d[kz] < 0.0:
        tmp = kx
        kx = ky
        ky = tmp
    sx = d[kx] / d[kz]
    sy = d[ky] / d[kz]
    sz = 1.0 / d[kz]
    pa = a - start
    pb = b - start
    pc = c - start
    ax = pa[kx] - sx * pa[kz]
    ay = pa[ky] - sy * pa[kz]
    bx = pb[kx] - sx * pb[kz]
    by = pb[ky] - sy * pb[kz]
    cx = pc[kx] - sx * pc[kz]
    cy = pc[ky] - sy * pc[kz]
    wa = cross2(cx, by, cy, bx)
    wb = cross2(ax, cy, ay, cx)
    wc = cross2(bx, ay, by, ax)
    hit = True
    if (wa < 0.0 or wb < 0.0 or wc < 0.0) and (wa > 0.0 or wb > 0.0 or wc > 0.0):
        hit = False
    det = wa + wb + wc
    if det == 0.0:
        hit = False
    tt = wa * (sz * pa[kz]) + wb * (sz * pb[kz]) + wc * (sz * pc[kz])
    if (det > 0.0 and tt < 0.0) or (det < 0.0 and tt > 0.0):
        hit = False
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    if hit:
        r = 1.0 / det
        u = wa * r
        v = wb * r
        t = tt * r
    return hit, t, u, v, det, kl.cross(b - a, c - a)


@kl.func
def solid_angle(a: kl.vec3, b: kl.vec3, c: kl.vec3, p: kl.vec3) -> float:
    """The signed solid angle triangle abc subtends at p (Van Oosterom and Strackee)."""
    qa = a - p
    qb = b - p
    qc = c - p
    la = kl.length(qa)
    lb = kl.length(qb)
    lc = kl.length(qc)
    if la == 0.0 or lb == 0.0 or lc == 0.0:
        return 0.0
    qa = qa / la
    qb = qb / lb
    qc = qc / lc
    num = kl.dot(qa, kl.cross(qb - qa, qc - qa))
    if num == 0.0:
        return 0.0
    return 2.0 * kl.atan2(num, 1.0 + kl.dot(qa, qb) + kl.dot(qa, qc) + kl.dot(qb, qc))


@kl.func
def bary_point(a: kl.vec3, b: kl.vec3, c: kl.vec3, w: kl.vec2) -> kl.vec3:
    """The point of triangle abc with barycentrics (w[0], w[1]) at a and b."""
    return w[0] * a + w[1] * b + (1.0 - w[0] - w[1]) * c


@kl.func
def corner_angle(e: kl.vec3, f: kl.vec3) -> float:
    return kl.acos(kl.dot(kl.normalize(e), kl.normalize(f)))


@kl.func
def sphere_touches(points: Vec3s, indices: Ints, f: int, center: kl.vec3,
                   r_sq: float) -> bool:
    """Whether face f comes within sqrt(r_sq) of center: its box first, then its closest
    point (a zero-area face as its longest edge)."""
    a, b, c = tri_points(points, indices, f)
    if box_dist_sq(center, kl.min(kl.min(a, b), c), kl.max(kl.max(a, b), c)) > r_sq:
        return False
    ab = b - a
    ac = c - a
    n = kl.cross(ab, ac)
    q = kl.vec3(0.0)
    if kl.dot(n, n) == 0.0:
        bc = c - b
        lab = kl.dot(ab, ab)
        lac = kl.dot(ac, ac)
        lbc = kl.dot(bc, bc)
        e0 = b
        e1 = c
        n2 = lbc
        if lab >= lac and lab >= lbc:
            e0 = a
            e1 = b
            n2 = lab
        elif lac >= lbc:
            e0 = a
            e1 = c
            n2 = lac
        t = float(0.0)
        if n2 > 0.0:
            t = kl.clamp(kl.dot(center - e0, e1 - e0) / n2, 0.0, 1.0)
        q = e0 + t * (e1 - e0)
    else:
        w = closest_bary(a, b, c, center)
        q = bary_point(a, b, c, w)
    return kl.length_sq(q - center) <= r_sq


@kl.func
def boxes_overlap(alo: kl.vec3, ahi: kl.vec3, blo: kl.vec3, bhi: kl.vec3) -> bool:
    return not (alo[0] > bhi[0] or alo[1] > bhi[1] or alo[2] > bhi[2] or ahi[0] < blo[0]
                or ahi[1] < blo[1] or ahi[2] < blo[2])
