"""The kernel side of ``kl.Mesh``: the funcs behind the ``mesh_*`` kernel functions,
written in kernlab's kernel language so every backend runs one definition.

kernlab/mesh.py builds the tree on the host and describes its layout; frontend/mesh.py
lowers each ``mesh_*`` call to a call of one of the funcs here. The work is in two modules
beneath this one: kernlab/mesh_walks.py walks the BVH to find *which* triangle (an integer,
with an empty custom gradient), with the triangle, box and ray tests of
kernlab/mesh_geometry.py; the funcs here then recompute the barycentric coordinates,
distances and hit parameters from that triangle by differentiable funcs, so reverse mode
differentiates with respect to the query point, the ray and the barycentrics, never into
the mesh's points (see kernlab/mesh.py's module doc). The walks that are a query's whole
answer (``any_hit``, ``count_hits``) and the box and sphere walks' steps are named here too,
so frontend/mesh.py finds every func in this one module.
"""
import kernlab as kl
from .mesh import MeshQueryPoint, MeshQueryRay
from .mesh_geometry import Ints, Vec3s, closest_bary, furthest_bary, ray_triangle, tri_points
from .mesh_walks import (closest_face, furthest_face, inside_by_rays, ray_face,
                         sign_by_normals, winding_number)
from .mesh_walks import any_hit, box_next, box_or_sphere_next, count_hits, sphere_next  # noqa: F401


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
