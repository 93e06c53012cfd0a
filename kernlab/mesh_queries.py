"""The kernel side of ``kl.Mesh``: the geometry and the BVH walks behind the ``mesh_*``
kernel functions, written in kernlab's kernel language so every backend runs one definition.

kernlab/mesh.py builds the tree on the host and describes its layout (``HEADER``, the node
records in ``bvh``, the boxes in ``bounds``); frontend/mesh.py lowers each ``mesh_*`` call to
a call of one of the funcs here. The walks find *which* triangle (an integer, with an empty
custom gradient); the barycentric coordinates, distances and hit parameters are recomputed
from that triangle by differentiable funcs, so reverse mode differentiates with respect to
the query point, the ray and the barycentrics, never into the mesh's points (see
kernlab/mesh.py's module doc).
"""
import kernlab as kl
from .mesh import FLT_MAX, HEADER, MeshQueryPoint, MeshQueryRay


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


# ---- the walks ------------------------------------------------------------------------------

@kl.func
def node_of(bvh: Ints, k: int):
    """(skip, first slot, end slot, is leaf) of node k."""
    base = HEADER + 4 * k
    return bvh[base], bvh[base + 1], bvh[base + 2], bvh[base + 3] != 0


@kl.func
def slot_face(bvh: Ints, s: int) -> int:
    return bvh[HEADER + 4 * bvh[2] + s]


@kl.func
def bary_point(a: kl.vec3, b: kl.vec3, c: kl.vec3, w: kl.vec2) -> kl.vec3:
    """The point of triangle abc with barycentrics (w[0], w[1]) at a and b."""
    return w[0] * a + w[1] * b + (1.0 - w[0] - w[1]) * c


@kl.func
def closest_in_leaf(points: Vec3s, indices: Ints, bvh: Ints, p: kl.vec3, start: int,
                    end: int, best: float, face: int):
    """(best, face) after the faces in slots start..end-1: the squared distance from p to
    the closest of them and its face where nearer than best, else best and face unchanged."""
    for s in range(start, end):
        f = slot_face(bvh, s)
        a, b, c = tri_points(points, indices, f)
        if not is_sliver(a, b, c):
            d = kl.length_sq(bary_point(a, b, c, closest_bary(a, b, c, p)) - p)
            if d < best:
                best = d
                face = f
    return best, face


@kl.func
def closest_face(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                 max_dist: float) -> int:
    """The face with the point closest to p nearer than max_dist, or -1. A first descent
    towards the nearer child gives a close candidate, so the walk prunes from the start."""
    best = max_dist * max_dist
    face = int(-1)
    k = int(0)
    if bvh[2] > 0:
        skip, start, end, leaf = node_of(bvh, k)
        while not leaf:
            right = bvh[HEADER + 4 * (k + 1)]
            if box_dist_sq(p, bounds[2 * k + 2], bounds[2 * k + 3]) <= \
                    box_dist_sq(p, bounds[2 * right], bounds[2 * right + 1]):
                k = k + 1
            else:
                k = right
            skip, start, end, leaf = node_of(bvh, k)
        best, face = closest_in_leaf(points, indices, bvh, p, start, end, best, face)
    k = 0
    while k < bvh[2]:
        skip, start, end, leaf = node_of(bvh, k)
        if box_dist_sq(p, bounds[2 * k], bounds[2 * k + 1]) > best:
            k = skip
        else:
            if leaf:
                best, face = closest_in_leaf(points, indices, bvh, p, start, end, best, face)
            k += 1
    return face


@kl.func
def furthest_face(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                  min_dist: float) -> int:
    """The face with the point furthest from p further than min_dist, or -1."""
    best = min_dist * min_dist
    face = int(-1)
    k = int(0)
    while k < bvh[2]:
        skip, start, end, leaf = node_of(bvh, k)
        if box_far_sq(p, bounds[2 * k], bounds[2 * k + 1]) < best:
            k = skip
        else:
            if leaf:
                for s in range(start, end):
                    f = slot_face(bvh, s)
                    a, b, c = tri_points(points, indices, f)
                    if not is_sliver(a, b, c):
                        w = furthest_bary(a, b, c, p)
                        q = bary_point(a, b, c, w)
                        d = kl.length_sq(q - p)
                        if d > best:
                            best = d
                            face = f
            k += 1
    return face


@kl.func
def ray_face(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
             d: kl.vec3, max_t: float):
    """(face, det) of the nearest hit with 0 <= t < max_t; face -1 when none."""
    best = max_t
    face = int(-1)
    sign = float(0.0)
    k = int(0)
    while k < bvh[2]:
        skip, first, end, leaf = node_of(bvh, k)
        hit, t0 = ray_box(start, d, bounds[2 * k], bounds[2 * k + 1])
        if not hit or t0 >= best:
            k = skip
        else:
            if leaf:
                for s in range(first, end):
                    f = slot_face(bvh, s)
                    a, b, c = tri_points(points, indices, f)
                    h, t, u, v, det, n = ray_triangle(start, d, a, b, c)
                    if h and t < best and t >= 0.0:
                        best = t
                        face = f
                        sign = det
            k += 1
    return face, sign


@kl.func
def count_hits(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
               d: kl.vec3) -> int:
    """How many faces the ray meets at t >= 0."""
    n = int(0)
    k = int(0)
    while k < bvh[2]:
        skip, first, end, leaf = node_of(bvh, k)
        hit, t0 = ray_box(start, d, bounds[2 * k], bounds[2 * k + 1])
        if not hit:
            k = skip
        else:
            if leaf:
                for s in range(first, end):
                    a, b, c = tri_points(points, indices, slot_face(bvh, s))
                    h, t, u, v, det, nrm = ray_triangle(start, d, a, b, c)
                    if h and t >= 0.0:
                        n += 1
            k += 1
    return n


@kl.func
def any_hit(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
            d: kl.vec3, max_t: float) -> bool:
    """Whether the ray meets a face at 0 <= t < max_t (stops at the first found)."""
    found = False
    k = int(0)
    while k < bvh[2] and not found:
        skip, first, end, leaf = node_of(bvh, k)
        hit, t0 = ray_box(start, d, bounds[2 * k], bounds[2 * k + 1])
        if not hit or t0 >= max_t:
            k = skip
        else:
            if leaf:
                for s in range(first, end):
                    a, b, c = tri_points(points, indices, slot_face(bvh, s))
                    h, t, u, v, det, nrm = ray_triangle(start, d, a, b, c)
                    if h and t < max_t and t >= 0.0:
                        found = True
            k += 1
    return found


@kl.func
def inside_by_rays(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s,
                   p: kl.vec3) -> float:
    """-1 when most of the three rays along +x, +y, +z first meet a face from behind (p is
    inside a closed mesh), else 1."""
    votes = int(0)
    for i in range(3):
        d = kl.vec3(0.0)
        d[i] = 1.0
        face, sign = ray_face(points, indices, bvh, bounds, p, d, float(FLT_MAX))
        if face >= 0 and sign < 0.0:
            votes += 1
    if votes >= 2:
        return -1.0
    return 1.0


@kl.func
def winding_number(points: Vec3s, indices: Ints, bvh: Ints, p: kl.vec3) -> float:
    """The generalized winding number of the mesh at p, summed exactly over all faces."""
    total = float(0.0)
    for f in range(bvh[1]):
        a, b, c = tri_points(points, indices, f)
        total += solid_angle(a, b, c, p)
    return total / (4.0 * 3.14159265358979)


@kl.func
def corner_angle(e: kl.vec3, f: kl.vec3) -> float:
    return kl.acos(kl.dot(kl.normalize(e), kl.normalize(f)))


@kl.func
def sign_by_normals(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                    max_dist: float, epsilon: float):
    """(face, sign) for mesh_query_point_sign_normal: the closest face, and the side of p
    against the angle-weighted normal of every face whose distance is within a tolerance
    (epsilon times the average edge length) of the closest."""
    tol = bounds[2 * bvh[2]][0] * epsilon
    tol_sq = tol * tol
    best = max_dist
    face = int(-1)
    normal = kl.vec3(0.0)
    k = int(0)
    while k < bvh[2]:
        skip, start, end, leaf = node_of(bvh, k)
        reach = (best + tol) * (best + tol)
        if box_dist_sq(p, bounds[2 * k], bounds[2 * k + 1]) > reach:
            k = skip
        else:
            if leaf:
                for s in range(start, end):
                    f = slot_face(bvh, s)
                    a, b, c = tri_points(points, indices, f)
                    if not is_sliver(a, b, c):
                        e0 = b - a
                        e1 = c - a
                        e2 = c - b
                        w = closest_bary(a, b, c, p)
                        q = bary_point(a, b, c, w)
                        dist = kl.sqrt(kl.length_sq(q - p))
                        if dist < best + tol:
                            weight = float(0.0)
                            qa = q - a
                            qb = q - b
                            qc = q - c
                            if kl.length_sq(qa) < tol_sq:
                                weight = corner_angle(e0, e1)
                            elif kl.length_sq(qb) < tol_sq:
                                weight = corner_angle(e2, -e0)
                            elif kl.length_sq(qc) < tol_sq:
                                weight = corner_angle(-e1, -e2)
                            else:
                                s0 = kl.dot(e0, qa)
                                s2 = kl.dot(e2, qb)
                                s1 = kl.dot(e1, qa)
                                n0 = kl.dot(e0, e0)
                                n1 = kl.dot(e1, e1)
                                n2 = kl.dot(e2, e2)
                                if kl.length_sq(qa) * n0 - s0 * s0 < tol_sq * n0 or \
                                        kl.length_sq(qb) * n2 - s2 * s2 < tol_sq * n2 or \
                                        kl.length_sq(qa) * n1 - s1 * s1 < tol_sq * n1:
                                    weight = 3.14159265359  # on an edge
                                else:
                                    weight = 2.0 * 3.14159265359
                            fn = weight * kl.normalize(kl.cross(e0, e1))
                            if dist > best - tol:  # as close as the closest: add its normal
                                normal = normal + fn
                                if dist < best:
                                    best = dist
                                    face = f
                            else:
                                best = dist
                                face = f
                                normal = fn
            k += 1
    sign = float(0.0)
    if face >= 0:
        a, b, c = tri_points(points, indices, face)
        w = closest_bary(a, b, c, p)
        q = bary_point(a, b, c, w)
        if kl.dot(normal, p - q) > 0.0:
            sign = 1.0
        else:
            sign = -1.0
    return face, sign


@kl.func
def closest_result(points: Vec3s, indices: Ints, face: int, sign: float,
                   p: kl.vec3) -> MeshQueryPoint:
    """The query's result for the face the walk found (-1: none); u, v recomputed here, so
    reverse mode differentiates them with respect to p."""
    w = kl.vec2(0.0, 0.0)
    if face >= 0:
        a, b, c = tri_points(points, indices, face)
        w = closest_bary(a, b, c, p)
    return point_result(face, sign, w)


@kl.func
def point_result(face: int, sign: float, w: kl.vec2) -> MeshQueryPoint:
    """A point query's result from the face found (-1: none) and its barycentrics."""
    out = MeshQueryPoint()
    if face >= 0:
        out.result = True
        out.sign = sign
        out.face = face
        out.u = w[0]
        out.v = w[1]
    return out


@kl.func
def query_point_no_sign(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                        max_dist: float) -> MeshQueryPoint:
    face = closest_face(points, indices, bvh, bounds, p, max_dist)
    return closest_result(points, indices, face, 0.0, p)


@kl.func
def query_point_rays(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                     max_dist: float) -> MeshQueryPoint:
    face = closest_face(points, indices, bvh, bounds, p, max_dist)
    sign = float(0.0)
    if face >= 0:
        sign = inside_by_rays(points, indices, bvh, bounds, p)
    return closest_result(points, indices, face, sign, p)


@kl.func
def query_point_normal(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                       max_dist: float, epsilon: float) -> MeshQueryPoint:
    face, sign = sign_by_normals(points, indices, bvh, bounds, p, max_dist, epsilon)
    return closest_result(points, indices, face, sign, p)


@kl.func
def query_point_winding(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                        max_dist: float, accuracy: float, threshold: float) -> MeshQueryPoint:
    """The sign by the winding number (exact: ``accuracy`` is not needed); a mesh built
    without support_winding_number falls back to rays, as Warp's does."""
    face = closest_face(points, indices, bvh, bounds, p, max_dist)
    sign = float(0.0)
    if face >= 0:
        if bvh[3] == 0:
            sign = inside_by_rays(points, indices, bvh, bounds, p)
        elif winding_number(points, indices, bvh, p) > threshold:
            sign = -1.0
        else:
            sign = 1.0
    return closest_result(points, indices, face, sign, p)


@kl.func
def query_furthest(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                   min_dist: float) -> MeshQueryPoint:
    face = furthest_face(points, indices, bvh, bounds, p, min_dist)
    w = kl.vec2(0.0, 0.0)
    if face >= 0:
        a, b, c = tri_points(points, indices, face)
        w = furthest_bary(a, b, c, p)
    return point_result(face, 0.0, w)


@kl.func
def query_ray(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
              d: kl.vec3, max_t: float) -> MeshQueryRay:
    face, sign = ray_face(points, indices, bvh, bounds, start, d, max_t)
    out = MeshQueryRay()
    if face >= 0:
        a, b, c = tri_points(points, indices, face)
        hit, t, u, v, det, n = ray_triangle(start, d, a, b, c)
        out.result = True
        out.sign = det
        out.face = face
        out.t = t
        out.u = u
        out.v = v
        out.normal = kl.normalize(n)
    return out


@kl.func
def eval_at(values: Vec3s, indices: Ints, face: int, u: float, v: float) -> kl.vec3:
    if values.shape[0] == 0:
        return kl.vec3(0.0)
    a, b, c = tri_points(values, indices, face)
    return u * a + v * b + (1.0 - u - v) * c


@kl.func
def index_at(indices: Ints, i: int) -> int:
    return indices[i]


@kl.func
def face_normal(points: Vec3s, indices: Ints, face: int) -> kl.vec3:
    a, b, c = tri_points(points, indices, face)
    return kl.normalize(kl.cross(b - a, c - a))


@kl.func
def vertex_value(values: Vec3s, indices: Ints, i: int) -> kl.vec3:
    if values.shape[0] == 0:
        return kl.vec3(0.0)
    return values[indices[i]]


@kl.func
def box_next(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, lo: kl.vec3,
             hi: kl.vec3, k: int, slot: int, end: int):
    """(found, face, k, slot, end): the next face whose box overlaps [lo, hi], and the
    walk's state (the next node, and the leaf's slots still to test)."""
    found = False
    face = int(-1)
    while not found and (slot < end or k < bvh[2]):
        if slot < end:
            f = slot_face(bvh, slot)
            slot += 1
            a, b, c = tri_points(points, indices, f)
            flo = kl.min(kl.min(a, b), c)
            fhi = kl.max(kl.max(a, b), c)
            if boxes_overlap(lo, hi, flo, fhi):
                found = True
                face = f
        else:
            skip, start, stop, leaf = node_of(bvh, k)
            if boxes_overlap(lo, hi, bounds[2 * k], bounds[2 * k + 1]):
                if leaf:
                    slot = start
                    end = stop
                k += 1
            else:
                k = skip
    return found, face, k, slot, end


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
def sphere_next(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, center: kl.vec3,
                r_sq: float, k: int, slot: int, end: int):
    """As box_next, for the faces within a sphere (radius squared r_sq)."""
    found = False
    face = int(-1)
    while not found and (slot < end or k < bvh[2]):
        if slot < end:
            f = slot_face(bvh, slot)
            slot += 1
            if sphere_touches(points, indices, f, center, r_sq):
                found = True
                face = f
        else:
            skip, start, stop, leaf = node_of(bvh, k)
            if box_dist_sq(center, bounds[2 * k], bounds[2 * k + 1]) <= r_sq:
                if leaf:
                    slot = start
                    end = stop
                k += 1
            else:
                k = skip
    return found, face, k, slot, end


@kl.func
def box_or_sphere_next(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, lo: kl.vec3,
                       hi: kl.vec3, r_sq: float, is_sphere: bool, k: int, slot: int,
                       end: int):
    """The next step of a query whose kind a branch chose at run time."""
    if is_sphere:
        return sphere_next(points, indices, bvh, bounds, lo, r_sq, k, slot, end)
    return box_next(points, indices, bvh, bounds, lo, hi, k, slot, end)


@kl.func
def boxes_overlap(alo: kl.vec3, ahi: kl.vec3, blo: kl.vec3, bhi: kl.vec3) -> bool:
    return not (alo[0] > bhi[0] or alo[1] > bhi[1] or alo[2] > bhi[2] or ahi[0] < blo[0]
                or ahi[1] < blo[1] or ahi[2] < blo[2])


# ---- the walks pick faces: no gradient flows through them -------------------------------
# Each walk is given an empty custom gradient, so reverse mode replays it once to find the
# face again and differentiates only what is recomputed from that face (the results above).

@kl.func_grad(closest_face)
def _closest_face_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                       max_dist: float, adj_face: int):
    pass


@kl.func_grad(furthest_face)
def _furthest_face_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                        min_dist: float, adj_face: int):
    pass


@kl.func_grad(ray_face)
def _ray_face_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
                   d: kl.vec3, max_t: float, adj_face: int, adj_sign: float):
    pass


@kl.func_grad(count_hits)
def _count_hits_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
                     d: kl.vec3, adj_count: int):
    pass


@kl.func_grad(any_hit)
def _any_hit_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, start: kl.vec3,
                  d: kl.vec3, max_t: float, adj_found: bool):
    pass


@kl.func_grad(inside_by_rays)
def _inside_by_rays_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, p: kl.vec3,
                         adj_sign: float):
    pass


@kl.func_grad(winding_number)
def _winding_number_grad(points: Vec3s, indices: Ints, bvh: Ints, p: kl.vec3,
                         adj_number: float):
    pass


@kl.func_grad(sign_by_normals)
def _sign_by_normals_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s,
                          p: kl.vec3, max_dist: float, epsilon: float, adj_face: int,
                          adj_sign: float):
    pass


@kl.func_grad(sphere_next)
def _sphere_next_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, center: kl.vec3,
                      r_sq: float, k: int, slot: int, end: int, adj_found: bool,
                      adj_face: int, adj_k: int, adj_slot: int, adj_end: int):
    pass


@kl.func_grad(box_or_sphere_next)
def _box_or_sphere_next_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s,
                             lo: kl.vec3, hi: kl.vec3, r_sq: float, is_sphere: bool, k: int,
                             slot: int, end: int, adj_found: bool, adj_face: int, adj_k: int,
                             adj_slot: int, adj_end: int):
    pass


@kl.func_grad(box_next)
def _box_next_grad(points: Vec3s, indices: Ints, bvh: Ints, bounds: Vec3s, lo: kl.vec3,
                   hi: kl.vec3, k: int, slot: int, end: int, adj_found: bool, adj_face: int,
                   adj_k: int, adj_slot: int, adj_end: int):
    pass
