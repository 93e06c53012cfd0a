"""Quaternions, transforms and spatial vectors: values against plain-NumPy formulas written
here from their definitions, and adjoints against float64 central differences of the kernel.

Parametrised over every expansion in the registry (kernlab/builtins/expand.py), so a new
one fails ``test_every_expansion_has_a_case`` until it has a case here.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import kernlab as kl
from kernlab.builtins.expand import EXPANSIONS
from kernlab.builtins.bits import PUBLIC as BITS
from kernlab.builtins.decompositions import PUBLIC as DECOMPOSITIONS
from kernlab.builtins.matrices import PUBLIC as MATRICES
from kernlab.builtins.random import PUBLIC as RANDOM
from kernlab.lang import BuiltinFunction

N = 4  # threads, one sample each


# ---- independent references (float64 NumPy, from the textbook definitions) ----------------

def qmul(a, b):
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.append(aw * bv + bw * av + np.cross(av, bv), aw * bw - av @ bv)


def qconj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]])


def qrot(q, x):
    """(2w^2 - 1) x + 2 (u.x) u + 2 w (u cross x): q v q* for a unit q."""
    u, w = q[:3], q[3]
    return (2 * w * w - 1) * x + 2 * (u @ x) * u + 2 * w * np.cross(u, x)


def qrot_inv(q, x):
    u, w = q[:3], q[3]
    return (2 * w * w - 1) * x + 2 * (u @ x) * u - 2 * w * np.cross(u, x)


def qmat(q):
    return np.stack([qrot(q, e) for e in np.eye(3)], axis=1)


def axis_angle_q(axis, angle):
    return np.append(axis * np.sin(angle / 2), np.cos(angle / 2))


def q_to_axis_angle(q):
    u, w = q[:3], q[3]
    axis = u / np.linalg.norm(u) * (-1 if w < 0 else 1)
    return axis, 2 * np.arctan2(np.linalg.norm(u), abs(w))


def between(a, b):
    """The rotation by the angle between a and b about a x b."""
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    axis = np.cross(a, b)
    return axis_angle_q(axis / np.linalg.norm(axis), np.arccos(np.clip(a @ b, -1, 1)))


def slerp(a, b, t):
    """Shortest-arc slerp of unit quaternions."""
    if a @ b < 0:
        b = -b
    theta = np.arccos(np.clip(a @ b, -1, 1))
    return (np.sin((1 - t) * theta) * a + np.sin(t * theta) * b) / np.sin(theta)


def rpy(r, p, y):
    qx = axis_angle_q(np.array([1.0, 0, 0]), r)
    qy = axis_angle_q(np.array([0, 1.0, 0]), p)
    qz = axis_angle_q(np.array([0, 0, 1.0]), y)
    return qmul(qz, qmul(qy, qx))


def mat_to_q(m):
    """Via the eigenvector of the Bar-Itzhack 4x4 matrix: independent of branch choices."""
    m = m[:3, :3]
    k = np.array([
        [m[0, 0] - m[1, 1] - m[2, 2], m[1, 0] + m[0, 1], m[2, 0] + m[0, 2], m[2, 1] - m[1, 2]],
        [m[1, 0] + m[0, 1], m[1, 1] - m[0, 0] - m[2, 2], m[2, 1] + m[1, 2], m[0, 2] - m[2, 0]],
        [m[2, 0] + m[0, 2], m[2, 1] + m[1, 2], m[2, 2] - m[0, 0] - m[1, 1], m[1, 0] - m[0, 1]],
        [m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1], m[0, 0] + m[1, 1] + m[2, 2]],
    ]) / 3.0
    vals, vecs = np.linalg.eigh(k)
    return vecs[:, np.argmax(vals)]


def same_rotation(q):
    """Quaternions q and -q are one rotation: fix the sign (largest component positive)."""
    q = np.asarray(q, np.float64)
    return q * np.sign(q[np.argmax(np.abs(q))])


def tmul(a, b):
    return np.concatenate([qrot(a[3:], b[:3]) + a[:3], qmul(a[3:], b[3:])])


def tinv(t):
    qi = qconj(t[3:])
    return np.concatenate([-qrot(qi, t[:3]), qi])


def tmat(t, s=(1, 1, 1)):
    m = np.eye(4)
    m[:3, :3] = qmat(t[3:]) * np.asarray(s)
    m[:3, 3] = t[:3]
    return m


def scross(a, b):
    aw, av, bw, bv = a[:3], a[3:], b[:3], b[3:]
    return np.concatenate([np.cross(aw, bw), np.cross(av, bw) + np.cross(aw, bv)])


def scross_dual(a, b):
    aw, av, bw, bv = a[:3], a[3:], b[:3], b[3:]
    return np.concatenate([np.cross(aw, bw) + np.cross(av, bv), np.cross(aw, bv)])


def sadjoint(r, s):
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = r
    out[3:, :3] = s
    return out


# ---- samplers --------------------------------------------------------------------------------

def unit_quat(rng, angle=(0.3, 2.8)):
    axis = rng.normal(size=3)
    return axis_angle_q(axis / np.linalg.norm(axis), rng.uniform(*angle))


def sample(kind, rng):
    if kind == "quat":
        return unit_quat(rng)
    if kind == "vec3":
        return rng.uniform(-1, 1, 3)
    if kind == "vec6":
        return rng.uniform(-1, 1, 6)
    if kind == "float":
        return rng.uniform(0.1, 0.9)
    if kind == "transform":
        return np.concatenate([rng.uniform(-1, 1, 3), unit_quat(rng)])
    if kind in ("mat33", "mat44"):
        n = int(kind[3])
        return rng.uniform(-1, 1, (n, n))
    if kind == "rot33":
        return qmat(unit_quat(rng))
    if kind == "rot44":
        return tmat(sample("transform", rng))
    raise ValueError(kind)


TYPES = {"float": lambda T: T, "quat": kl.types.quaternion,
         "transform": kl.types.transformation, "vec3": lambda T: kl.types.vector(3, T),
         "vec6": lambda T: kl.types.vector(6, T), "mat33": lambda T: kl.types.matrix((3, 3), T),
         "rot33": lambda T: kl.types.matrix((3, 3), T),
         "rot44": lambda T: kl.types.matrix((4, 4), T),
         "mat44": lambda T: kl.types.matrix((4, 4), T),
         "mat66": lambda T: kl.types.matrix((6, 6), T)}


# ---- kernels ---------------------------------------------------------------------------------

def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return kl.kernel(pyfunc)


def make_kernel(fn, ins, out):
    """out[i] = fn(a[i], ...) for 1 to 3 array inputs."""
    if len(ins) == 1:
        def k(a: kl.array(dtype=ins[0]), o: kl.array(dtype=out)):
            i = kl.tid()
            o[i] = fn(a[i])
    elif len(ins) == 2:
        def k(a: kl.array(dtype=ins[0]), b: kl.array(dtype=ins[1]), o: kl.array(dtype=out)):
            i = kl.tid()
            o[i] = fn(a[i], b[i])
    else:
        def k(a: kl.array(dtype=ins[0]), b: kl.array(dtype=ins[1]), c: kl.array(dtype=ins[2]),
              o: kl.array(dtype=out)):
            i = kl.tid()
            o[i] = fn(a[i], b[i], c[i])
    return _named(k, f"call_{fn.__name__}_{len(ins)}")


def axis_angle_kernel(T):
    qt, vt = kl.types.quaternion(T), kl.types.vector(3, T)

    def k(q: kl.array(dtype=qt), axis: kl.array(dtype=vt), angle: kl.array(dtype=T)):
        i = kl.tid()
        a, t = kl.quat_to_axis_angle(q[i])
        axis[i] = a
        angle[i] = t
    return _named(k, "axis_angle")


def decompose_kernel(T):
    mt, vt, qt = kl.types.matrix((4, 4), T), kl.types.vector(3, T), kl.types.quaternion(T)

    def k(m: kl.array(dtype=mt), p: kl.array(dtype=vt), q: kl.array(dtype=qt),
          s: kl.array(dtype=vt)):
        i = kl.tid()
        a, b, c = kl.transform_decompose(m[i])
        p[i] = a
        q[i] = b
        s[i] = c
    return _named(k, "decompose")


@dataclass
class Case:
    name: str          # the expansion it covers
    fn: Callable       # kl.<name> or an operator
    ins: tuple         # sample kinds
    out: str           # output kind
    ref: Callable      # float64 NumPy reference
    canon: bool = False  # compare quaternions up to sign


def F(name):
    return BuiltinFunction(name)


CASES = [
    Case("quat_from_axis_angle", F("quat_from_axis_angle"), ("vec3", "float"), "quat",
         axis_angle_q),
    Case("quat_rpy", F("quat_rpy"), ("float", "float", "float"), "quat", rpy),
    Case("quat_inverse", F("quat_inverse"), ("quat",), "quat", qconj),
    Case("quat_between_vectors", F("quat_between_vectors"), ("vec3", "vec3"), "quat",
         between),
    Case("mul", F("mul"), ("quat", "quat"), "quat", qmul),
    Case("mul", F("mul"), ("transform", "transform"), "transform", tmul),
    Case("normalize", F("normalize"), ("quat",), "quat", lambda q: q / np.linalg.norm(q)),
    Case("quat_rotate", F("quat_rotate"), ("quat", "vec3"), "vec3", qrot),
    Case("quat_rotate_inv", F("quat_rotate_inv"), ("quat", "vec3"), "vec3", qrot_inv),
    Case("quat_slerp", F("quat_slerp"), ("quat", "quat", "float"), "quat", slerp),
    Case("quat_to_matrix", F("quat_to_matrix"), ("quat",), "mat33", qmat),
    Case("quat_from_matrix", F("quat_from_matrix"), ("rot33",), "quat", mat_to_q, canon=True),
    Case("quat_from_matrix", F("quat_from_matrix"), ("rot44",), "quat", mat_to_q, canon=True),
    Case("transformation", F("transformation"), ("vec3", "quat"), "transform",
         lambda p, q: np.concatenate([p, q])),
    Case("transformation", F("transformation"), ("vec3",), "transform",
         lambda p: np.concatenate([p, [0, 0, 0, 1]])),
    Case("transform_get_translation", F("transform_get_translation"), ("transform",), "vec3",
         lambda t: t[:3]),
    Case("transform_get_rotation", F("transform_get_rotation"), ("transform",), "quat",
         lambda t: t[3:]),
    Case("transform_set_translation_copy", F("transform_set_translation_copy"),
         ("transform", "vec3"), "transform", lambda t, p: np.concatenate([p, t[3:]])),
    Case("transform_set_rotation_copy", F("transform_set_rotation_copy"),
         ("transform", "quat"), "transform", lambda t, q: np.concatenate([t[:3], q])),
    Case("transform_set_translation", F("transform_set_translation_copy"),
         ("transform", "vec3"), "transform", lambda t, p: np.concatenate([p, t[3:]])),
    Case("transform_set_rotation", F("transform_set_rotation_copy"),
         ("transform", "quat"), "transform", lambda t, q: np.concatenate([t[:3], q])),
    Case("transform_multiply", F("transform_multiply"), ("transform", "transform"),
         "transform", tmul),
    Case("transform_inverse", F("transform_inverse"), ("transform",), "transform", tinv),
    Case("transform_point", F("transform_point"), ("transform", "vec3"), "vec3",
         lambda t, x: qrot(t[3:], x) + t[:3]),
    Case("transform_vector", F("transform_vector"), ("transform", "vec3"), "vec3",
         lambda t, x: qrot(t[3:], x)),
    Case("transform_point", F("transform_point"), ("mat44", "vec3"), "vec3",
         lambda m, x: (m @ np.append(x, 1))[:3]),
    Case("transform_vector", F("transform_vector"), ("mat44", "vec3"), "vec3",
         lambda m, x: (m @ np.append(x, 0))[:3]),
    Case("transform_to_matrix", F("transform_to_matrix"), ("transform",), "mat44", tmat),
    Case("transform_compose", F("transform_compose"), ("vec3", "quat", "vec3"), "mat44",
         lambda p, q, s: tmat(np.concatenate([p, q]), s)),
    Case("transform_from_matrix", F("transform_from_matrix"), ("rot44",), "transform",
         lambda m: np.concatenate([m[:3, 3], same_rotation(mat_to_q(m))]), canon=True),
    Case("spatial_top", F("spatial_top"), ("vec6",), "vec3", lambda a: a[:3]),
    Case("spatial_bottom", F("spatial_bottom"), ("vec6",), "vec3", lambda a: a[3:]),
    Case("spatial_dot", F("spatial_dot"), ("vec6", "vec6"), "float", np.dot),
    Case("spatial_cross", F("spatial_cross"), ("vec6", "vec6"), "vec6", scross),
    Case("spatial_cross_dual", F("spatial_cross_dual"), ("vec6", "vec6"), "vec6", scross_dual),
    Case("spatial_vector", F("spatial_vector"), ("vec3", "vec3"), "vec6",
         lambda a, b: np.concatenate([a, b])),
    Case("spatial_adjoint", F("spatial_adjoint"), ("mat33", "mat33"), "mat66", sadjoint),
]
# covered by kernels of their own below
SPECIAL = {"quat_identity", "transform_identity", "quat_to_axis_angle", "transform_decompose",
           "matrix_from_cols", "matrix_from_rows"}
SPECIAL |= set(RANDOM)  # tests/test_random.py, tests/test_sampling.py
SPECIAL |= set(MATRICES) | {"transform_expand"}  # tests/test_linalg_more.py
SPECIAL |= set(BITS)  # tests/test_bits.py
SPECIAL |= set(DECOMPOSITIONS)  # tests/test_decompositions.py
SPECIAL |= {"div_approx"}  # tests/test_warp_overloads.py


def jacobians(kernel, inputs, outputs):
    """{(input, output): (adjoint Jacobian, float64 central differences)} as NumPy."""
    def host(x):
        return np.asarray(x.numpy() if hasattr(x, "numpy") else x, np.float64)
    fd = kl.autograd.jacobian_fd(kernel, N, inputs=inputs, outputs=outputs, eps=1e-6)
    ad = kl.autograd.jacobian(kernel, N, inputs=inputs, outputs=outputs)
    return {key: (host(ad[key]), host(fd[key])) for key in fd}


def _ids(cases):
    return [f"{c.name}({','.join(c.ins)})" for c in cases]


def _arrays(case, T, rng):
    data = [np.stack([sample(k, rng) for _ in range(N)]) for k in case.ins]
    arrays = [kl.array(d.astype(T.np), dtype=TYPES[k](T)) for d, k in zip(data, case.ins)]
    return data, arrays


def test_every_expansion_has_a_case():
    covered = {(c.name, tuple(c.ins)) for c in CASES}  # (the *_copy kernels cover both)
    alias = {"rot33": "mat33", "rot44": "mat44"}
    covered = {(n, tuple(alias.get(k, k) for k in ins)) for n, ins in covered}
    missing = [f"{name}{ex.params}" for name, exs in EXPANSIONS.items() for ex in exs
               if (name, ex.params) not in covered and name not in SPECIAL]
    assert not missing


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_value_matches_reference(backend, rng, case, dtype):
    T = getattr(kl, dtype)
    data, arrays = _arrays(case, T, rng)
    out = kl.zeros(N, dtype=TYPES[case.out](T))
    kl.launch(make_kernel(case.fn, [a.dtype for a in arrays], out.dtype), N,
              inputs=arrays, outputs=[out])
    got = out.numpy().astype(np.float64)
    for i in range(N):
        want = np.asarray(case.ref(*(d[i] for d in data)), np.float64)
        g = got[i]
        if case.canon:
            g, want = g.copy(), want.copy()
            g[-4:], want[-4:] = same_rotation(g[-4:]), same_rotation(want[-4:])
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_adjoint_matches_finite_differences(backend, rng, case):
    T = kl.float64
    _, arrays = _arrays(case, T, rng)
    out = kl.zeros(N, dtype=TYPES[case.out](T))
    kernel = make_kernel(case.fn, [a.dtype for a in arrays], out.dtype)
    for key, (ad, fd) in jacobians(kernel, arrays, [out]).items():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6,
                                   err_msg=f"input {key[0]} of {case.name}")


@pytest.mark.parametrize("name", ["quat_identity", "transform_identity"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_identity_with_dtype(backend, name, dtype):
    T = getattr(kl, dtype)
    fn = BuiltinFunction(name)
    out_t = kl.types.quaternion(T) if name == "quat_identity" else kl.types.transformation(T)

    def k(o: kl.array(dtype=out_t)):
        o[0] = fn(dtype=T)
    out = kl.zeros(1, dtype=out_t)
    kl.launch(_named(k, f"{name}_{dtype}"), 1, outputs=[out])
    np.testing.assert_array_equal(out.numpy()[0], [0] * (out_t.length - 1) + [1])


def test_identity_defaults_to_float32(backend):
    @kl.kernel
    def k(o: kl.array(dtype=kl.transform)):
        o[0] = kl.transform_identity()
    out = kl.zeros(1, dtype=kl.transform)
    kl.launch(k, 1, outputs=[out])
    np.testing.assert_array_equal(out.numpy()[0], [0, 0, 0, 0, 0, 0, 1])


def test_quat_to_axis_angle(backend, rng):
    q = np.stack([unit_quat(rng) * (-1) ** i for i in range(N)])  # both signs of w
    qa = kl.array(q, dtype=kl.quatd)
    axis, angle = kl.zeros(N, dtype=kl.vec3d), kl.zeros(N, dtype=kl.float64)
    kernel = axis_angle_kernel(kl.float64)
    kl.launch(kernel, N, inputs=[qa], outputs=[axis, angle])
    for i in range(N):
        want_axis, want_angle = q_to_axis_angle(q[i])
        np.testing.assert_allclose(axis.numpy()[i], want_axis, atol=1e-12)
        np.testing.assert_allclose(angle.numpy()[i], want_angle, atol=1e-12)
    for ad, fd in jacobians(kernel, [qa], [axis, angle]).values():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6)


def test_transform_decompose(backend, rng):
    scale = rng.uniform(0.5, 2.0, (N, 3))
    ts = [sample("transform", rng) for _ in range(N)]
    m = np.stack([tmat(t, s) for t, s in zip(ts, scale)])
    ma = kl.array(m, dtype=kl.mat44d)
    p, q, s = kl.zeros(N, dtype=kl.vec3d), kl.zeros(N, dtype=kl.quatd), kl.zeros(N, dtype=kl.vec3d)
    kernel = decompose_kernel(kl.float64)
    kl.launch(kernel, N, inputs=[ma], outputs=[p, q, s])
    for i in range(N):
        np.testing.assert_allclose(p.numpy()[i], ts[i][:3], atol=1e-12)
        np.testing.assert_allclose(same_rotation(q.numpy()[i]), same_rotation(ts[i][3:]),
                                   atol=1e-12)
        np.testing.assert_allclose(s.numpy()[i], scale[i], atol=1e-12)
    for ad, fd in jacobians(kernel, [ma], [p, q, s]).values():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quat_from_matrix_half_turns(backend, rng, axis):
    """Rotations near pi have a negative trace: each diagonal branch is taken."""
    qs = []
    for _ in range(N):
        a = np.eye(3)[axis] + rng.uniform(-0.1, 0.1, 3)
        qs.append(axis_angle_q(a / np.linalg.norm(a), rng.uniform(2.9, 3.1)))
    m = kl.array(np.stack([qmat(q) for q in qs]), dtype=kl.mat33d)
    out = kl.zeros(N, dtype=kl.quatd)
    kernel = make_kernel(F("quat_from_matrix"), [kl.mat33d], kl.quatd)
    kl.launch(kernel, N, inputs=[m], outputs=[out])
    for i in range(N):
        np.testing.assert_allclose(same_rotation(out.numpy()[i]), same_rotation(qs[i]),
                                   atol=1e-12)
    for ad, fd in jacobians(kernel, [m], [out]).values():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6)


def test_normalize_zero_quat_is_identity_with_finite_gradient(backend):
    q = kl.array(np.zeros((1, 4)), dtype=kl.quatd)
    out = kl.zeros(1, dtype=kl.quatd)
    kernel = make_kernel(F("normalize"), [kl.quatd], kl.quatd)
    kl.launch(kernel, 1, inputs=[q], outputs=[out])
    np.testing.assert_array_equal(out.numpy()[0], [0, 0, 0, 1])
    ad = kl.autograd.jacobian(kernel, 1, inputs=[q], outputs=[out])[(0, 0)]
    assert np.all(np.isfinite(ad.numpy() if hasattr(ad, "numpy") else ad))


def test_transform_parts_read_and_write(backend, rng):
    @kl.kernel
    def k(t: kl.array(dtype=kl.transformd), p: kl.array(dtype=kl.vec3d),
          q: kl.array(dtype=kl.quatd), out: kl.array(dtype=kl.transformd),
          ps: kl.array(dtype=kl.vec3d)):
        i = kl.tid()
        a = t[i]
        ps[i] = a.p + p[i]
        a.q = q[i]
        a.p += p[i]
        out[i] = a
    t = np.stack([sample("transform", rng) for _ in range(N)])
    p, q = rng.uniform(-1, 1, (N, 3)), np.stack([unit_quat(rng) for _ in range(N)])
    out, ps = kl.zeros(N, dtype=kl.transformd), kl.zeros(N, dtype=kl.vec3d)
    kl.launch(k, N, inputs=[kl.array(t, dtype=kl.transformd), kl.array(p, dtype=kl.vec3d),
                            kl.array(q, dtype=kl.quatd)], outputs=[out, ps])
    np.testing.assert_allclose(ps.numpy(), t[:, :3] + p)
    np.testing.assert_allclose(out.numpy(), np.concatenate([t[:, :3] + p, q], axis=1))


def test_constructors_from_parts(backend):
    @kl.kernel
    def k(out_q: kl.array(dtype=kl.quat), out_t: kl.array(dtype=kl.transform),
          out_s: kl.array(dtype=kl.spatial_vector)):
        v = kl.vec3(1.0, 2.0, 3.0)
        out_q[0] = kl.quat(v, 4.0)
        out_t[0] = kl.transform(v, kl.quat(0.0, 0.0, 0.0, 1.0))
        out_s[0] = kl.spatial_vector(v, v * 2.0)
    q, t, s = kl.zeros(1, dtype=kl.quat), kl.zeros(1, dtype=kl.transform), \
        kl.zeros(1, dtype=kl.spatial_vector)
    kl.launch(k, 1, outputs=[q, t, s])
    np.testing.assert_array_equal(q.numpy()[0], [1, 2, 3, 4])
    np.testing.assert_array_equal(t.numpy()[0], [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(s.numpy()[0], [1, 2, 3, 2, 4, 6])


def test_python_scope_values():
    q = kl.quat_from_axis_angle(kl.vec3(0.0, 0.0, 1.0), np.float32(np.pi / 2))
    np.testing.assert_allclose(kl.quat_rotate(q, kl.vec3(1.0, 0.0, 0.0)), [0, 1, 0],
                               atol=1e-6)
    np.testing.assert_array_equal(kl.transform(), [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(kl.quat_identity(), [0, 0, 0, 1])
    assert kl.quat_identity(dtype=kl.float64).dtype == np.float64


def test_mutating_builtins_write_their_argument(backend, rng):
    @kl.kernel
    def k(t: kl.array(dtype=kl.transformd), p: kl.array(dtype=kl.vec3d),
          q: kl.array(dtype=kl.quatd), out: kl.array(dtype=kl.transformd),
          axis: kl.array(dtype=kl.vec3d), angle: kl.array(dtype=kl.float64)):
        i = kl.tid()
        a = t[i]
        kl.transform_set_translation(a, p[i])
        kl.transform_set_rotation(a, q[i])
        out[i] = a
        v = kl.vec3d()
        s = kl.float64(0.0)
        kl.quat_to_axis_angle(q[i], v, s)
        axis[i] = v
        angle[i] = s
    t = np.stack([sample("transform", rng) for _ in range(N)])
    p, q = rng.uniform(-1, 1, (N, 3)), np.stack([unit_quat(rng) for _ in range(N)])
    out, axis, angle = kl.zeros(N, dtype=kl.transformd), kl.zeros(N, dtype=kl.vec3d), \
        kl.zeros(N, dtype=kl.float64)
    kl.launch(k, N, inputs=[kl.array(t, dtype=kl.transformd), kl.array(p, dtype=kl.vec3d),
                            kl.array(q, dtype=kl.quatd)], outputs=[out, axis, angle])
    np.testing.assert_allclose(out.numpy(), np.concatenate([p, q], axis=1))
    for i in range(N):
        want_axis, want_angle = q_to_axis_angle(q[i])
        np.testing.assert_allclose(axis.numpy()[i], want_axis, atol=1e-12)
        np.testing.assert_allclose(angle.numpy()[i], want_angle, atol=1e-12)


def test_python_scope_set_translation_writes_in_place():
    t = kl.transform()
    kl.transform_set_translation(t, kl.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(t, [1, 2, 3, 0, 0, 0, 1])


def test_vector_equality(backend):
    @kl.kernel
    def k(a: kl.array(dtype=kl.quat), b: kl.array(dtype=kl.quat), out: kl.array(dtype=int)):
        i = kl.tid()
        if a[i] == b[i]:
            out[i] = out[i] + 1
        if a[i] != b[i]:
            out[i] = out[i] + 10
    a = kl.array(np.array([[1, 2, 3, 4], [1, 2, 3, 4]], np.float32), dtype=kl.quat)
    b = kl.array(np.array([[1, 2, 3, 4], [1, 2, 3, 5]], np.float32), dtype=kl.quat)
    out = kl.zeros(2, dtype=int)
    kl.launch(k, 2, inputs=[a, b], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [1, 10])


@pytest.mark.parametrize("n", [2, 3])
def test_matrix_from_cols_and_rows(backend, rng, n):
    vt = kl.types.vector(3, kl.float64)
    mt = kl.types.matrix((3, n), kl.float64)
    mt_rows = kl.types.matrix((n, 3), kl.float64)
    fc, fr = F("matrix_from_cols"), F("matrix_from_rows")
    if n == 2:
        def k(a: kl.array(dtype=vt), b: kl.array(dtype=vt), c: kl.array(dtype=vt),
              cols: kl.array(dtype=mt), rows: kl.array(dtype=mt_rows)):
            i = kl.tid()
            cols[i] = fc(a[i], b[i])
            rows[i] = fr(a[i], b[i])
    else:
        def k(a: kl.array(dtype=vt), b: kl.array(dtype=vt), c: kl.array(dtype=vt),
              cols: kl.array(dtype=mt), rows: kl.array(dtype=mt_rows)):
            i = kl.tid()
            cols[i] = fc(a[i], b[i], c[i])
            rows[i] = fr(a[i], b[i], c[i])
    kernel = _named(k, f"from_cols_{n}")
    data = [rng.uniform(-1, 1, (N, 3)) for _ in range(3)]
    ins = [kl.array(d, dtype=vt) for d in data]
    cols, rows = kl.zeros(N, dtype=mt), kl.zeros(N, dtype=mt_rows)
    kl.launch(kernel, N, inputs=ins, outputs=[cols, rows])
    np.testing.assert_array_equal(cols.numpy(), np.stack(data[:n], axis=2))
    np.testing.assert_array_equal(rows.numpy(), np.stack(data[:n], axis=1))
    for ad, fd in jacobians(kernel, ins, [cols, rows]).values():
        np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-6)
