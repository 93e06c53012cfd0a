"""The BVH walks behind the mesh queries, in kernlab's kernel language: each finds *which*
face a query meets (closest, furthest, first hit along a ray, the faces in a box or a
sphere), or counts hits or votes on a sign.

kernlab/mesh.py builds the tree on the host and describes its layout (``HEADER``, the node
records in ``bvh``, the boxes in ``bounds``); the triangle and box tests are
kernlab/mesh_geometry.py's. A walk's result is an integer (or a sign), so each walk has an
empty custom gradient (at the end of this file) and kernlab/mesh_queries.py recomputes the
differentiable part of a result from the face found.
"""
import kernlab as kl
from .mesh import FLT_MAX, HEADER
from .mesh_geometry import (Ints, Vec3s, bary_point, box_dist_sq, box_far_sq, boxes_overlap,
                            closest_bary, corner_angle, furthest_bary, is_sliver, ray_box,
                            ray_triangle, solid_angle, sphere_touches, tri_points)


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


# ---- the walks pick faces: no gradient flows through them -------------------------------
# Each walk is given an empty custom gradient, so reverse mode replays it once to find the
# face again and differentiates only what is recomputed from that face (mesh_queries.py).

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
