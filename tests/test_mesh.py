"""kl.Mesh and the mesh queries in kernels (Warp's wp.Mesh), against independent references.

The references are computed here with NumPy in float64, by other algorithms than the
kernels use: the closest point by projecting onto each triangle's plane and otherwise
taking the nearest point of its three edges, over all triangles; rays by the
Moeller-Trumbore test over all triangles; box queries by comparing every triangle's box;
inside/outside by where a point lies in a cube; gradients by central finite differences.
"""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import KernelIndexError, KernelTypeError, LaunchError

# test_cuda's NVRTC corpus compiles only these of this file's kernels (a point query and a
# ray query, each with its BVH walk); the emulated-CUDA variants of the tests compile
# every kernel's CUDA C.
NVRTC_CORPUS = ("closest", "rays")

V3 = kl.array(dtype=kl.vec3)
F = kl.array(dtype=float)
I = kl.array(dtype=int)


# ---- meshes and references ------------------------------------------------------------------

def soup(n=40, seed=3):
    """n separate random triangles in the unit box (no shared corners, so no ties)."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0.0, 1.0, (n, 1, 3))
    P = (centers + rng.uniform(-0.15, 0.15, (n, 3, 3))).reshape(-1, 3).astype(np.float32)
    return P, np.arange(3 * n, dtype=np.int32)


def cube(open_top=False):
    """The unit cube [0, 1]^3, faces wound outward; open_top drops the two z=1 triangles."""
    P = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float32)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    if open_top:
        quads = quads[:-1]
    T = [i for a, b, c, d in quads for i in (a, b, c, a, c, d)]
    return P, np.array(T, np.int32)


def make_mesh(P, T, **kw):
    return kl.Mesh(kl.array(P, dtype=kl.vec3), kl.array(T, dtype=kl.int32), **kw)


def segment_closest(a, b, p):
    ab = b - a
    t = np.clip(np.dot(p - a, ab) / np.dot(ab, ab), 0.0, 1.0)
    return a + t * ab


def triangle_closest(a, b, c, p):
    """Closest point of triangle abc to p: the plane projection if inside, else an edge's."""
    n = np.cross(b - a, c - a)
    q = p - np.dot(p - a, n) / np.dot(n, n) * n
    area = np.dot(n, n)
    wa = np.dot(np.cross(b - q, c - q), n) / area
    wb = np.dot(np.cross(c - q, a - q), n) / area
    if wa >= 0 and wb >= 0 and 1 - wa - wb >= 0:
        return q
    cands = [segment_closest(a, b, p), segment_closest(b, c, p), segment_closest(c, a, p)]
    return min(cands, key=lambda x: np.linalg.norm(x - p))


def brute_closest(P, T, p):
    """(distance, face, closest point) over every triangle, in float64."""
    P = P.astype(np.float64)
    best = (np.inf, -1, None)
    for f, (i, j, k) in enumerate(T.reshape(-1, 3)):
        q = triangle_closest(P[i], P[j], P[k], p)
        d = np.linalg.norm(q - p)
        if d < best[0]:
            best = (d, f, q)
    return best


def brute_ray(P, T, o, d, every=False):
    """(t, face, u, v, cos of dir and normal) of the nearest hit with t >= 0 (Moeller-
    Trumbore; u, v the weights of the first and second corner), or None; with every, the
    list of all the hits' t."""
    P = P.astype(np.float64)
    best = None
    hits = []
    for f, (i, j, k) in enumerate(T.reshape(-1, 3)):
        a, b, c = P[i], P[j], P[k]
        e1, e2 = b - a, c - a
        h = np.cross(d, e2)
        det = np.dot(e1, h)
        if abs(det) < 1e-12:
            continue
        s = o - a
        wb = np.dot(s, h) / det
        q = np.cross(s, e1)
        wc = np.dot(d, q) / det
        t = np.dot(e2, q) / det
        if wb < 0 or wc < 0 or wb + wc > 1 or t < 0:
            continue
        hits.append(t)
        if best is None or t < best[0]:
            n = np.cross(e1, e2)
            best = (t, f, 1 - wb - wc, wb, np.dot(d, n) / np.linalg.norm(n))
    return hits if every else best


def aim_points(P, T, rng, n):
    """Points inside random triangles of the mesh (rays aimed at them mostly hit)."""
    tri = P.astype(np.float64)[T.reshape(-1, 3)[rng.integers(0, len(T) // 3, n)]]
    w = rng.dirichlet([2.0, 2.0, 2.0], n)[:, :, None]
    return (w * tri).sum(axis=1)


# ---- construction and the simple accessors --------------------------------------------------

@kl.kernel
def accessors(mesh: kl.uint64, face: I, u: F, v: F, pos: V3, vel: V3, nrm: V3, pt: V3,
              pv: V3, idx: I):
    i = kl.tid()
    pos[i] = kl.mesh_eval_position(mesh, face[i], u[i], v[i])
    vel[i] = kl.mesh_eval_velocity(mesh, face[i], u[i], v[i])
    nrm[i] = kl.mesh_eval_face_normal(mesh, face[i])
    pt[i] = kl.mesh_get_point(mesh, i)
    pv[i] = kl.mesh_get_velocity(mesh, i)
    idx[i] = kl.mesh_get_index(mesh, i)


def test_accessors_match_numpy(backend):
    P, T = soup(8)
    rng = np.random.default_rng(0)
    Vel = rng.normal(size=P.shape).astype(np.float32)
    T = T[rng.permutation(len(T))].astype(np.int32)  # indices that are not the identity
    mesh = make_mesh(P, T, velocities=kl.array(Vel, dtype=kl.vec3))
    n = 12
    face = rng.integers(0, 8, n).astype(np.int32)
    u, v = rng.uniform(0, 0.5, n).astype(np.float32), rng.uniform(0, 0.5, n).astype(np.float32)
    outs = [kl.zeros(n, dtype=kl.vec3) for _ in range(5)]
    idx = kl.zeros(n, dtype=int)
    kl.launch(accessors, n, inputs=[mesh.id, kl.array(face), kl.array(u), kl.array(v), *outs,
                                    idx])
    tri = T.reshape(-1, 3)[face]
    w = np.stack([u, v, 1 - u - v], axis=1)[:, :, None]
    np.testing.assert_allclose(outs[0].numpy(), (w * P[tri]).sum(axis=1), atol=1e-6)
    np.testing.assert_allclose(outs[1].numpy(), (w * Vel[tri]).sum(axis=1), atol=1e-6)
    n_ = np.cross(P[tri[:, 1]] - P[tri[:, 0]], P[tri[:, 2]] - P[tri[:, 0]])
    np.testing.assert_allclose(outs[2].numpy(), n_ / np.linalg.norm(n_, axis=1)[:, None],
                               atol=1e-5)
    np.testing.assert_allclose(outs[3].numpy(), P[T[:n]], atol=0)
    np.testing.assert_allclose(outs[4].numpy(), Vel[T[:n]], atol=0)
    assert idx.numpy().tolist() == T[:n].tolist()
    assert mesh.points.numpy() is not None and mesh.indices.size == len(T)


def test_a_mesh_without_velocities_gives_zero_velocity(backend):
    P, T = soup(2)
    mesh = make_mesh(P, T)
    outs = [kl.zeros(2, dtype=kl.vec3) for _ in range(5)]
    kl.launch(accessors, 2, inputs=[mesh.id, kl.array(np.array([0, 1], np.int32)),
                                    kl.array(np.float32([0.2, 0.3])),
                                    kl.array(np.float32([0.3, 0.3])), *outs,
                                    kl.zeros(2, dtype=int)])
    assert mesh.velocities is None
    assert not outs[1].numpy().any() and not outs[4].numpy().any()


# ---- closest and furthest points ----------------------------------------------------------

@kl.kernel
def closest(mesh: kl.uint64, x: V3, max_dist: float, found: I, face: I, pos: V3, dist: F):
    i = kl.tid()
    q = kl.mesh_query_point_no_sign(mesh, x[i], max_dist)
    found[i] = int(q.result)
    if q.result:
        face[i] = q.face
        c = kl.mesh_eval_position(mesh, q.face, q.u, q.v)
        pos[i] = c
        dist[i] = kl.length(c - x[i])


@pytest.mark.parametrize("leaf", [1, 4])
def test_closest_point_is_the_brute_force_minimum(backend, leaf):
    P, T = soup(40)
    mesh = make_mesh(P, T, bvh_leaf_size=leaf)
    rng = np.random.default_rng(7)
    X = rng.uniform(-0.3, 1.3, (48, 3)).astype(np.float32)
    n = len(X)
    found, face, pos, dist = (kl.zeros(n, dtype=int), kl.zeros(n, dtype=int),
                              kl.zeros(n, dtype=kl.vec3), kl.zeros(n))
    kl.launch(closest, n, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), 10.0, found, face,
                                  pos, dist])
    ref = [brute_closest(P, T, x.astype(np.float64)) for x in X]
    assert found.numpy().all()
    assert face.numpy().tolist() == [r[1] for r in ref]
    np.testing.assert_allclose(dist.numpy(), [r[0] for r in ref], atol=2e-6)
    np.testing.assert_allclose(pos.numpy(), np.array([r[2] for r in ref]), atol=2e-6)


def test_max_dist_is_strict_and_misses_report_no_result(backend):
    P, T = soup(10)
    mesh = make_mesh(P, T)
    X = np.random.default_rng(1).uniform(-0.5, 1.5, (16, 3)).astype(np.float32)
    ref = np.array([brute_closest(P, T, x.astype(np.float64))[0] for x in X])
    max_dist = float(np.median(ref))
    found = kl.zeros(16, dtype=int)
    kl.launch(closest, 16, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), max_dist, found,
                                   kl.zeros(16, dtype=int), kl.zeros(16, dtype=kl.vec3),
                                   kl.zeros(16)])
    assert found.numpy().tolist() == (ref < max_dist).astype(int).tolist()


@kl.kernel
def furthest(mesh: kl.uint64, x: V3, min_dist: float, found: I, dist: F):
    i = kl.tid()
    q = kl.mesh_query_furthest_point_no_sign(mesh, x[i], min_dist)
    found[i] = int(q.result)
    if q.result:
        dist[i] = kl.length(kl.mesh_eval_position(mesh, q.face, q.u, q.v) - x[i])


def test_furthest_point_is_the_furthest_corner(backend):
    P, T = soup(30)
    mesh = make_mesh(P, T)
    X = np.random.default_rng(2).uniform(0, 1, (20, 3)).astype(np.float32)
    found, dist = kl.zeros(20, dtype=int), kl.zeros(20)
    kl.launch(furthest, 20, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), 0.0, found, dist])
    far = np.linalg.norm(X[:, None, :].astype(np.float64) - P[None], axis=2).max(axis=1)
    assert found.numpy().all()
    np.testing.assert_allclose(dist.numpy(), far, rtol=1e-6)
    kl.launch(furthest, 20, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), 10.0, found, dist])
    assert not found.numpy().any()


# ---- inside and outside ---------------------------------------------------------------------

@kl.kernel
def signs(mesh: kl.uint64, x: V3, threshold: float, out: kl.array(dtype=float, ndim=2)):
    i = kl.tid()
    out[i, 0] = kl.mesh_query_point(mesh, x[i], 100.0).sign
    out[i, 1] = kl.mesh_query_point_sign_normal(mesh, x[i], 100.0).sign
    out[i, 2] = kl.mesh_query_point_sign_winding_number(mesh, x[i], 100.0,
                                                        threshold=threshold).sign
    out[i, 3] = kl.mesh_query_point_sign_normal(mesh, x[i], 100.0, 1.0e-2).sign


def cube_points(n=40, seed=5):
    X = np.random.default_rng(seed).uniform(-0.5, 1.5, (n, 3)).astype(np.float32)
    X[:8] = [[0.5, 0.5, 0.5], [0.1, 0.9, 0.2], [0.99, 0.01, 0.5], [1.2, 0.5, 0.5],
             [0.5, 0.5, -0.01], [1.3, 1.3, 1.3], [-0.2, 0.5, 1.2], [0.5, 0.5, 0.97]]
    inside = np.all((X > 0) & (X < 1), axis=1)
    return X, np.where(inside, -1.0, 1.0)


@pytest.mark.parametrize("winding", [True, False])
def test_signs_of_a_closed_cube(backend, winding):
    P, T = cube()
    mesh = make_mesh(P, T, support_winding_number=winding)
    X, expect = cube_points()
    out = kl.zeros((len(X), 4))
    kl.launch(signs, len(X), inputs=[mesh.id, kl.array(X, dtype=kl.vec3), 0.5, out])
    for col in range(4):
        assert out.numpy()[:, col].tolist() == expect.tolist(), col


def test_winding_number_of_an_open_box_is_its_solid_angle_fraction(backend):
    """Seen from the centre, the box without its top covers 5/6 of the sphere: inside at
    threshold 0.8, outside at 0.9 (an exact winding number, not a ray parity)."""
    P, T = cube(open_top=True)
    mesh = make_mesh(P, T, support_winding_number=True)
    X = np.array([[0.5, 0.5, 0.5]], np.float32)
    out = kl.zeros((1, 4))
    for threshold, sign in ((0.8, -1.0), (0.9, 1.0)):
        kl.launch(signs, 1, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), threshold, out])
        assert out.numpy()[0, 2] == sign


@kl.kernel
def older_forms(mesh: kl.uint64, x: V3, out: kl.array(dtype=float, ndim=2), faces: I):
    i = kl.tid()
    sign = float(0.0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    ok = kl.mesh_query_point(mesh, x[i], 100.0, sign, face, u, v)
    out[i, 0] = float(ok)
    out[i, 1] = sign
    p = kl.mesh_eval_position(mesh, face, u, v)
    out[i, 2] = kl.length(p - x[i])
    ok2 = kl.mesh_query_point_no_sign(mesh, x[i], 0.02, face, u, v)
    out[i, 3] = float(ok2)
    ok3 = kl.mesh_query_point_sign_normal(mesh, x[i], 100.0, sign, face, u, v, epsilon=1e-3)
    out[i, 4] = sign * float(ok3)
    ok4 = kl.mesh_query_point_sign_winding_number(mesh, x[i], 100.0, sign, face, u, v, 2.0,
                                                  0.5)
    out[i, 5] = sign * float(ok4)
    faces[i] = face


def test_output_argument_forms(backend):
    P, T = cube()
    mesh = make_mesh(P, T, support_winding_number=True)
    X, expect = cube_points(12)
    out, faces = kl.zeros((12, 6)), kl.zeros(12, dtype=int)
    kl.launch(older_forms, 12, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), out, faces])
    o = out.numpy()
    ref = np.array([brute_closest(P, T, x.astype(np.float64))[0] for x in X])
    assert o[:, 0].tolist() == [1.0] * 12
    assert o[:, 1].tolist() == expect.tolist()
    np.testing.assert_allclose(o[:, 2], ref, atol=2e-6)
    assert o[:, 3].tolist() == (ref < 0.02).astype(float).tolist()
    assert o[:, 4].tolist() == expect.tolist() and o[:, 5].tolist() == expect.tolist()


# ---- rays -----------------------------------------------------------------------------------

@kl.kernel
def rays(mesh: kl.uint64, o: V3, d: V3, max_t: float, out: kl.array(dtype=float, ndim=2),
         face: I, normal: V3):
    i = kl.tid()
    q = kl.mesh_query_ray(mesh, o[i], d[i], max_t)
    out[i, 0] = float(q.result)
    out[i, 1] = q.t
    out[i, 2] = q.u
    out[i, 3] = q.v
    out[i, 4] = q.sign
    face[i] = q.face
    normal[i] = q.normal
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    sign = float(0.0)
    n = kl.vec3()
    f = int(0)
    out[i, 5] = float(kl.mesh_query_ray(mesh, o[i], d[i], max_t, t, u, v, sign, n, f))
    out[i, 6] = t
    out[i, 7] = float(kl.mesh_query_ray_count_intersections(mesh, o[i], d[i]))
    out[i, 8] = float(kl.mesh_query_ray_anyhit(mesh, o[i], d[i], max_t))


def test_rays_find_the_nearest_hit(backend):
    P, T = soup(40)
    mesh = make_mesh(P, T)
    rng = np.random.default_rng(11)
    O = rng.uniform(-0.5, 1.5, (48, 3)).astype(np.float32)
    D = (aim_points(P, T, rng, 48) - O).astype(np.float32)
    D[:4] = [[1, 0, 0], [0, -1, 0], [0, 0, 2], [0, 0.5, 0]]  # zero components
    D[:4] *= np.sign(0.5 - O[:4])
    out, face, normal = kl.zeros((48, 9)), kl.zeros(48, dtype=int), kl.zeros(48, dtype=kl.vec3)
    kl.launch(rays, 48, inputs=[mesh.id, kl.array(O, dtype=kl.vec3), kl.array(D, dtype=kl.vec3),
                                1.0e6, out, face, normal])
    o = out.numpy()
    hits = 0
    for i in range(48):
        ref = brute_ray(P, T, O[i].astype(np.float64), D[i].astype(np.float64))
        assert o[i, 0] == (ref is not None) and o[i, 5] == o[i, 0] == o[i, 8], i
        assert o[i, 7] == len(brute_ray(P, T, O[i].astype(np.float64),
                                        D[i].astype(np.float64), every=True)), i
        if ref is None:
            continue
        hits += 1
        t, f, u, v, cos = ref
        assert face.numpy()[i] == f
        if abs(cos) < 0.05 * np.linalg.norm(D[i]):
            continue  # grazing: t and u, v are ill-conditioned in float32
        np.testing.assert_allclose(o[i, [1, 2, 3, 6]], [t, u, v, t], rtol=1e-4, atol=1e-5)
        assert np.sign(o[i, 4]) == -np.sign(cos)  # > 0: the ray meets the front
        n = np.cross(P[T[3 * f + 1]] - P[T[3 * f]], P[T[3 * f + 2]] - P[T[3 * f]])
        np.testing.assert_allclose(normal.numpy()[i], n / np.linalg.norm(n), atol=1e-5)
    assert hits > 20
    ts = o[:, 1][o[:, 0] == 1]
    limit = float(np.median(ts))
    kl.launch(rays, 48, inputs=[mesh.id, kl.array(O, dtype=kl.vec3), kl.array(D, dtype=kl.vec3),
                                limit, out, face, normal])
    assert int(out.numpy()[:, 0].sum()) == int((ts < limit).sum())
    assert int(out.numpy()[:, 8].sum()) == int((ts < limit).sum())


# ---- box queries ----------------------------------------------------------------------------

@kl.kernel
def boxes(mesh: kl.uint64, lo: V3, hi: V3, count: I, mask: kl.array(dtype=int, ndim=2),
          count2: I):
    i = kl.tid()
    q = kl.mesh_query_aabb(mesh, lo[i], hi[i])
    f = int(0)
    while kl.mesh_query_aabb_next(q, f):
        count[i] += 1
        mask[i, f] += 1
    for g in kl.mesh_query_aabb(mesh, lo[i], hi[i]):
        count2[i] += 1


def test_box_queries_visit_every_overlapping_triangle_once(backend):
    P, T = soup(40)
    mesh = make_mesh(P, T, bvh_leaf_size=2)
    rng = np.random.default_rng(4)
    lo = rng.uniform(-0.2, 1.0, (24, 3)).astype(np.float32)
    hi = (lo + rng.uniform(0.1, 0.7, (24, 3))).astype(np.float32)
    count, count2 = kl.zeros(24, dtype=int), kl.zeros(24, dtype=int)
    mask = kl.zeros((24, 40), dtype=int)
    kl.launch(boxes, 24, inputs=[mesh.id, kl.array(lo, dtype=kl.vec3),
                                 kl.array(hi, dtype=kl.vec3), count, mask, count2])
    tri = P[T.reshape(-1, 3)]
    tlo, thi = tri.min(axis=1), tri.max(axis=1)
    expect = np.all((lo[:, None] <= thi[None]) & (hi[:, None] >= tlo[None]), axis=2)
    np.testing.assert_array_equal(mask.numpy(), expect.astype(int))
    np.testing.assert_array_equal(count.numpy(), expect.sum(axis=1))
    np.testing.assert_array_equal(count2.numpy(), expect.sum(axis=1))
    assert expect.sum() > 30 and (expect.sum(axis=1) == 0).any()


# ---- refit ----------------------------------------------------------------------------------

def test_refit_follows_moved_points(backend):
    P, T = soup(30)
    pts = kl.array(P, dtype=kl.vec3)
    mesh = kl.Mesh(pts, kl.array(T, dtype=kl.int32))
    moved = (P * np.float32(2.0) + np.float32(3.0)).astype(np.float32)
    pts.assign(moved)
    mesh.refit()
    X = np.random.default_rng(9).uniform(2.5, 5.5, (24, 3)).astype(np.float32)
    found, face, pos, dist = (kl.zeros(24, dtype=int), kl.zeros(24, dtype=int),
                              kl.zeros(24, dtype=kl.vec3), kl.zeros(24))
    kl.launch(closest, 24, inputs=[mesh.id, kl.array(X, dtype=kl.vec3), 100.0, found, face,
                                   pos, dist])
    ref = [brute_closest(moved, T, x.astype(np.float64)) for x in X]
    assert face.numpy().tolist() == [r[1] for r in ref]
    np.testing.assert_allclose(dist.numpy(), [r[0] for r in ref], atol=5e-6)


# ---- gradients ------------------------------------------------------------------------------

@kl.kernel
def eval_loss(mesh: kl.uint64, face: I, u: F, v: F, w: V3, loss: F):
    i = kl.tid()
    p = kl.mesh_eval_position(mesh, face[i], u[i], v[i])
    q = kl.mesh_eval_velocity(mesh, face[i], u[i], v[i])
    kl.atomic_add(loss, 0, kl.dot(w[i], p) + kl.length_sq(q))


def test_eval_gradients_with_respect_to_barycentrics_match_finite_differences():
    P, T = soup(6)
    rng = np.random.default_rng(8)
    Vel = rng.normal(size=P.shape).astype(np.float32)
    mesh = make_mesh(P, T, velocities=kl.array(Vel, dtype=kl.vec3))
    n = 6
    face = np.arange(n, dtype=np.int32)
    U, Vv = rng.uniform(0, 0.5, n), rng.uniform(0, 0.5, n)
    W = rng.normal(size=(n, 3))
    u = kl.array(U.astype(np.float32), requires_grad=True)
    v = kl.array(Vv.astype(np.float32), requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(eval_loss, n, inputs=[mesh.id, kl.array(face), u, v,
                                        kl.array(W.astype(np.float32), dtype=kl.vec3), loss])
    tape.backward(loss)
    tri = T.reshape(-1, 3)[face]
    P64, V64 = P.astype(np.float64)[tri], Vel.astype(np.float64)[tri]

    def f(U, Vv):
        w = np.stack([U, Vv, 1 - U - Vv], axis=1)[:, :, None]
        return np.sum(W * (w * P64).sum(axis=1)) + np.sum((w * V64).sum(axis=1) ** 2)

    h = 1e-6
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        gu = (f(U + e, Vv) - f(U - e, Vv)) / (2 * h)
        gv = (f(U, Vv + e) - f(U, Vv - e)) / (2 * h)
        np.testing.assert_allclose([u.grad.numpy()[k], v.grad.numpy()[k]], [gu, gv],
                                   rtol=1e-4, atol=1e-4)


@kl.kernel
def distance(mesh: kl.uint64, x: V3, d: F):
    i = kl.tid()
    q = kl.mesh_query_point(mesh, x[i], 10.0)
    c = kl.mesh_eval_position(mesh, q.face, q.u, q.v)
    d[i] = kl.length(c - x[i])


@kl.kernel
def ray_t(mesh: kl.uint64, o: V3, dirs: V3, t: F):
    i = kl.tid()
    t[i] = kl.mesh_query_ray(mesh, o[i], dirs[i], 1.0e6).t


def fd_grad(f, x, h=1e-6):
    g = np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        g[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_closest_distance_and_ray_gradients_match_finite_differences():
    P, T = soup(20)
    mesh = make_mesh(P, T)
    rng = np.random.default_rng(12)
    X = rng.uniform(-0.3, 1.3, (10, 3)).astype(np.float32)
    x = kl.array(X, dtype=kl.vec3, requires_grad=True)
    d = kl.zeros(10, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(distance, 10, inputs=[mesh.id, x, d])
    tape.backward(grads={d: kl.ones(10)})
    for i in range(10):
        want = fd_grad(lambda y: brute_closest(P, T, y)[0], X[i].astype(np.float64))
        np.testing.assert_allclose(x.grad.numpy()[i], want, rtol=1e-3, atol=1e-4)

    O = rng.uniform(-0.5, 1.5, (10, 3)).astype(np.float32)
    D = (aim_points(P, T, rng, 10) - O).astype(np.float32)
    o = kl.array(O, dtype=kl.vec3, requires_grad=True)
    dirs = kl.array(D, dtype=kl.vec3, requires_grad=True)
    t = kl.zeros(10, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(ray_t, 10, inputs=[mesh.id, o, dirs, t])
    tape.backward(grads={t: kl.ones(10)})
    checked = 0
    for i in range(10):
        o64, d64 = O[i].astype(np.float64), D[i].astype(np.float64)
        ref = brute_ray(P, T, o64, d64)
        if ref is None:
            assert not o.grad.numpy()[i].any()
            continue
        if abs(ref[4]) < 0.05 * np.linalg.norm(d64):
            continue  # grazing: ill-conditioned in float32
        checked += 1
        np.testing.assert_allclose(o.grad.numpy()[i],
                                   fd_grad(lambda y: brute_ray(P, T, y, d64)[0], o64),
                                   rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(dirs.grad.numpy()[i],
                                   fd_grad(lambda y: brute_ray(P, T, o64, y)[0], d64),
                                   rtol=1e-3, atol=1e-4)
    assert checked >= 5


def test_the_mesh_points_get_no_gradient_as_in_warp():
    P, T = soup(4)
    pts = kl.array(P, dtype=kl.vec3, requires_grad=True)
    mesh = kl.Mesh(pts, kl.array(T, dtype=kl.int32))
    x = kl.array(np.float32([[0.5, 0.5, 0.5]]), dtype=kl.vec3, requires_grad=True)
    d = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(distance, 1, inputs=[mesh.id, x, d])
    tape.backward(grads={d: kl.ones(1)})
    assert x.grad.numpy().any() and not pts.grad.numpy().any()


# ---- bad input ------------------------------------------------------------------------------

def test_bad_meshes_are_refused_with_the_reason():
    P, T = soup(2)
    pts = kl.array(P, dtype=kl.vec3)
    with pytest.raises(RuntimeError, match=r"triangle 1 \(\[3, 4, 99\]\) are out of range"):
        kl.Mesh(pts, kl.array(np.int32([0, 1, 2, 3, 4, 99]), dtype=kl.int32))
    with pytest.raises(RuntimeError, match="out of range"):
        kl.Mesh(pts, kl.array(np.int32([0, 1, -1]), dtype=kl.int32))
    with pytest.raises(RuntimeError, match="type int32"):
        kl.Mesh(pts, kl.array(T.astype(np.float32)))
    with pytest.raises(RuntimeError, match="three indices per triangle"):
        kl.Mesh(pts, kl.array(np.int32([0, 1]), dtype=kl.int32))
    with pytest.raises(RuntimeError, match="flattened 1d"):
        kl.Mesh(pts, kl.array(T.reshape(2, 3), dtype=kl.int32))
    with pytest.raises(RuntimeError, match="vec3"):
        kl.Mesh(kl.array(P), kl.array(T, dtype=kl.int32))
    with pytest.raises(ValueError, match="bvh_leaf_size"):
        kl.Mesh(pts, kl.array(T, dtype=kl.int32), bvh_leaf_size=0)
    with pytest.raises(RuntimeError, match="only be called inside a kernel"):
        kl.mesh_query_point(0, (0, 0, 0), 1.0)


@kl.kernel
def eval_face(mesh: kl.uint64, f: int, out: V3):
    out[0] = kl.mesh_eval_position(mesh, f, 0.2, 0.3)


def test_out_of_range_faces_and_dead_ids_are_clear_errors(backend):
    P, T = soup(2)
    mesh = make_mesh(P, T)
    out = kl.zeros(1, dtype=kl.vec3)
    with pytest.raises(KernelIndexError, match=r"mesh\.indices' read by 'mesh_eval_position"):
        kl.launch(eval_face, 1, inputs=[mesh.id, 2, out])
    with pytest.raises(KernelIndexError, match="out of bounds"):
        kl.launch(eval_face, 1, inputs=[mesh.id, -1, out])
    with pytest.raises(LaunchError, match="not the id of a live kl.Mesh"):
        kl.launch(eval_face, 1, inputs=[12345, 0, out])


def test_kernel_errors_name_the_call():
    @kl.kernel
    def not_a_param(out: V3):
        out[0] = kl.mesh_eval_position(kl.uint64(5), 0, 0.2, 0.3)

    with pytest.raises(KernelTypeError, match="uint64 parameter"):
        kl.launch(not_a_param, 1, inputs=[kl.zeros(1, dtype=kl.vec3)])

    @kl.kernel
    def wrong_type(mesh: kl.uint64, out: V3):
        out[0] = kl.mesh_query_point(mesh, 1.0, 2.0).u * kl.vec3(1.0)

    with pytest.raises(KernelTypeError, match="argument 'point' must be vec3"):
        kl.launch(wrong_type, 1, inputs=[0, kl.zeros(1, dtype=kl.vec3)])

    @kl.kernel
    def bad_output(mesh: kl.uint64, out: V3):
        s = float(0.0)
        f = float(0.0)
        u = float(0.0)
        v = float(0.0)
        kl.mesh_query_point(mesh, out[0], 2.0, s, f, u, v)

    with pytest.raises(KernelTypeError, match="output 'face' is int32"):
        kl.launch(bad_output, 1, inputs=[0, kl.zeros(1, dtype=kl.vec3)])

    @kl.kernel
    def mixed(grid: kl.uint64, out: V3):
        q = kl.hash_grid_query(grid, out[0], 1.0)
        out[0] = kl.mesh_eval_position(grid, 0, 0.2, 0.3)

    with pytest.raises(KernelTypeError, match="already uses it as a hash grid id"):
        kl.launch(mixed, 1, inputs=[0, kl.zeros(1, dtype=kl.vec3)])


@kl.kernel
def spheres(mesh: kl.uint64, c: V3, r: F, mask: kl.array(dtype=int, ndim=2)):
    i = kl.tid()
    for f in kl.mesh_query_sphere(mesh, c[i], r[i]):
        mask[i, f] += 1


def test_sphere_queries_visit_the_triangles_within_the_radius(backend):
    P, T = soup(40)
    P[3:6] = P[3]  # a zero-area face: its nearest point is its (collapsed) corner
    mesh = make_mesh(P, T, bvh_leaf_size=2)
    rng = np.random.default_rng(6)
    C = rng.uniform(-0.2, 1.2, (20, 3)).astype(np.float32)
    R = rng.uniform(0.0, 0.3, 20).astype(np.float32)
    R[0] = -1.0  # a negative radius is zero
    mask = kl.zeros((20, 40), dtype=int)
    kl.launch(spheres, 20, inputs=[mesh.id, kl.array(C, dtype=kl.vec3), kl.array(R), mask])
    P64 = P.astype(np.float64)
    expect = np.zeros((20, 40), int)
    for i in range(20):
        for f in range(40):
            a, b, c = P64[T[3 * f: 3 * f + 3]]
            if f == 1:
                d = np.linalg.norm(a - C[i])
            else:
                d = np.linalg.norm(triangle_closest(a, b, c, C[i].astype(np.float64)) - C[i])
            expect[i, f] = d <= max(R[i], 0.0)
    np.testing.assert_array_equal(mask.numpy(), expect)
    assert expect.sum() > 10


@kl.kernel
def kind_by_branch(mesh: kl.uint64, use_sphere: bool, lo: kl.vec3, hi: kl.vec3, c: kl.vec3,
                   r: float, mask: I):
    if use_sphere:
        q = kl.mesh_query_sphere(mesh, c, r)
    else:
        q = kl.mesh_query_aabb(mesh, lo, hi)
    f = int(0)
    while kl.mesh_query_next(q, f):
        mask[f] += 1


def test_a_query_chosen_by_a_runtime_branch_is_the_one_that_ran(backend):
    P, T = soup(40)
    mesh = make_mesh(P, T)
    lo, hi, c, r = (0.2, 0.2, 0.2), (0.6, 0.6, 0.6), (0.5, 0.5, 0.5), 0.2
    tri = P.astype(np.float64)[T.reshape(-1, 3)]
    box = np.all((np.array(lo) <= tri.max(axis=1)) & (np.array(hi) >= tri.min(axis=1)), axis=1)
    near = np.array([np.linalg.norm(triangle_closest(*t, np.array(c)) - c) <= r for t in tri])
    assert box.sum() != near.sum()
    for use_sphere, expect in ((True, near), (False, box)):
        mask = kl.zeros(40, dtype=int)
        kl.launch(kind_by_branch, 1, inputs=[mesh.id, use_sphere, lo, hi, c, r, mask])
        np.testing.assert_array_equal(mask.numpy(), expect.astype(int))


@kl.func
def triangle_area(mesh_id: kl.uint64, tri: int) -> float:
    m = kl.mesh_get(mesh_id)
    a = m.points[m.indices[tri * 3]]
    b = m.points[m.indices[tri * 3 + 1]]
    c = m.points[m.indices[tri * 3 + 2]]
    return kl.length(kl.cross(b - a, c - a)) * 0.5 + kl.mesh_eval_position(mesh_id, tri, 0.5,
                                                                           0.5)[0] * 0.0


@kl.kernel
def total_area(mesh_id: kl.uint64, out: F):
    kl.atomic_add(out, 0, triangle_area(mesh_id, kl.tid()))


def test_mesh_get_through_a_func_differentiates_into_the_points():
    """As Warp's test_grad.test_mesh_grad: the id passed on to a func, mesh_get's arrays read
    there; the points' gradient is the area gradient (float64 finite differences)."""
    P = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    T = np.array([0, 1, 2, 0, 2, 3, 0, 3, 1, 1, 3, 2], np.int32)
    pts = kl.array(P, dtype=kl.vec3, requires_grad=True)
    mesh = kl.Mesh(pts, kl.array(T, dtype=kl.int32))
    out = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(total_area, 4, inputs=[mesh.id, out])
    tape.backward(loss=out)

    def area(Q):
        t = Q[T.reshape(-1, 3)]
        return 0.5 * np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1).sum()

    assert out.numpy()[0] == pytest.approx(area(P.astype(np.float64)), rel=1e-6)
    fd = np.zeros((4, 3))
    for i in range(4):
        for k in range(3):
            e = np.zeros((4, 3))
            e[i, k] = 1e-6
            fd[i, k] = (area(P + e) - area(P - e)) / 2e-6
    np.testing.assert_allclose(pts.grad.numpy(), fd, rtol=1e-4, atol=1e-5)
