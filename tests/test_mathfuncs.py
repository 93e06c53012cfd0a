"""lower_bound, Euler angles, swing-twist and spatial frame changes (kernlab/mathfuncs.py),
checked against NumPy rotation matrices built from axis rotations and against analytic
derivatives."""
import itertools

import numpy as np
import pytest

import kernlab as kl

SEQUENCES = [s for s in itertools.product(range(3), repeat=3) if s[0] != s[1] and s[1] != s[2]]


def axis_matrix(axis, angle):
    """The rotation by angle about coordinate axis 0, 1 or 2 (right-hand rule)."""
    c, s = np.cos(angle), np.sin(angle)
    u, v = [(1, 2), (2, 0), (0, 1)][axis]
    m = np.eye(3)
    m[u, u], m[u, v], m[v, u], m[v, v] = c, -s, s, c
    return m


def quat_matrix(q):
    x, y, z, w = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def euler_matrix(e, i, j, k, third=None):
    """Rotations about the fixed axes i, then j, then k; the third angle is e[k] (Tait-Bryan)
    or, for a proper sequence, ``third``."""
    return axis_matrix(k, e[k] if third is None else third) @ axis_matrix(j, e[j]) \
        @ axis_matrix(i, e[i])


@kl.kernel
def euler_kernel(e: kl.array(dtype=kl.vec3), seq: kl.array(dtype=kl.vec3i),
                 q: kl.array(dtype=kl.quat), back: kl.array(dtype=kl.vec3)):
    t = kl.tid()
    s = seq[t]
    q[t] = kl.quat_from_euler(e[t], s[0], s[1], s[2])
    back[t] = kl.quat_to_euler(q[t], s[0], s[1], s[2])


def run_euler(angles, seqs):
    n = len(angles)
    q, back = kl.zeros(n, dtype=kl.quat), kl.zeros(n, dtype=kl.vec3)
    kl.launch(euler_kernel, n, inputs=[kl.array(np.asarray(angles, np.float32), dtype=kl.vec3),
                                       kl.array(np.asarray(seqs, np.int32), dtype=kl.vec3i)],
              outputs=[q, back])
    return q.numpy().astype(np.float64), back.numpy().astype(np.float64)


def test_quat_from_euler_is_the_product_of_fixed_axis_rotations():
    rng = np.random.default_rng(1)
    seqs = [s for s in SEQUENCES for _ in range(8)]
    angles = rng.uniform(-3.0, 3.0, (len(seqs), 3))
    q, _ = run_euler(angles, seqs)
    for qi, e, (i, j, k) in zip(q, angles, seqs):
        expected = euler_matrix(e, i, j, k, third=e[i] if i == k else None)
        np.testing.assert_allclose(quat_matrix(qi), expected, atol=2e-6)


@pytest.mark.parametrize("near_lock", [False, True])
def test_quat_to_euler_gives_back_the_rotation_for_every_sequence(near_lock):
    rng = np.random.default_rng(2)
    seqs = [s for s in SEQUENCES for _ in range(10)]
    angles = rng.uniform(-1.4, 1.4, (len(seqs), 3))
    for e, (i, j, k) in zip(angles, seqs):
        lock = np.pi / 2 if i != k else np.pi  # where the first and third axes line up
        if near_lock:
            e[j] = rng.choice([-1, 1]) * lock - np.sign(lock) * rng.choice([0.0, 1e-5, 1e-3])
            e[j] = abs(e[j]) if i == k else e[j]
        elif i == k:
            e[j] = abs(e[j]) + 0.1
    q, back = run_euler(angles, seqs)
    for qi, e2, (i, j, k) in zip(q, back, seqs):
        m = 3 - i - j
        rebuilt = euler_matrix(e2, i, j, k, third=e2[m] if i == k else None)
        np.testing.assert_allclose(rebuilt, quat_matrix(qi), atol=2e-5)
        lo, hi = (-np.pi / 2, np.pi / 2) if i != k else (0.0, np.pi)
        assert lo - 1e-5 <= e2[j] <= hi + 1e-5


def test_quat_to_euler_recovers_angles_away_from_lock():
    e = np.array([[0.2, -0.1, 0.3], [0.25, -0.4, 0.15]])
    _, back = run_euler(e, [(0, 1, 2), (1, 0, 2)])
    np.testing.assert_allclose(back, e, atol=2e-6)


def test_quat_to_rpy_inverts_quat_rpy():
    rng = np.random.default_rng(3)
    rpy = np.column_stack([rng.uniform(-3, 3, 50), rng.uniform(-1.4, 1.4, 50),
                           rng.uniform(-3, 3, 50)])

    @kl.kernel
    def rpy_kernel(a: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3)):
        t = kl.tid()
        out[t] = kl.quat_to_rpy(kl.quat_rpy(a[t][0], a[t][1], a[t][2]))

    out = kl.zeros(50, dtype=kl.vec3)
    kl.launch(rpy_kernel, 50, inputs=[kl.array(rpy.astype(np.float32), dtype=kl.vec3)],
              outputs=[out])
    np.testing.assert_allclose(out.numpy(), rpy, atol=2e-5)


def test_euler_round_trip_gradient_is_the_identity():
    """e -> quat_from_euler -> quat_to_euler is the identity away from gimbal lock, so the
    vector-Jacobian product of each output component is the matching unit vector."""
    e = kl.array(np.array([[0.3, -0.5, 0.7]], np.float32), dtype=kl.vec3, requires_grad=True)
    seq = kl.array(np.array([[2, 0, 1]], np.int32), dtype=kl.vec3i)
    q = kl.zeros(1, dtype=kl.quat, requires_grad=True)
    back = kl.zeros(1, dtype=kl.vec3, requires_grad=True)
    for c in range(3):
        tape = kl.Tape()
        with tape:
            kl.launch(euler_kernel, 1, inputs=[e, seq], outputs=[q, back])
        seed = np.zeros((1, 3), np.float32)
        seed[0, c] = 1.0
        tape.backward(grads={back: kl.array(seed, dtype=kl.vec3)})
        np.testing.assert_allclose(e.grad.numpy()[0], seed[0], atol=1e-4)
        tape.zero()


@kl.kernel
def twist_kernel(angle: kl.array(dtype=float), swing: kl.array(dtype=float),
                 signed: kl.array(dtype=float), unsigned: kl.array(dtype=float),
                 twist: kl.array(dtype=kl.quat)):
    t = kl.tid()
    axis = kl.vec3(0.0, 0.0, 1.0)
    q = kl.quat_from_axis_angle(kl.vec3(1.0, 0.0, 0.0), swing[t]) * \
        kl.quat_from_axis_angle(axis, angle[t])
    signed[t] = kl.quat_twist_angle_signed(axis, q)
    unsigned[t] = kl.quat_twist_angle(axis, q)
    twist[t] = kl.quat_twist(axis, q)


def test_twist_angles_and_twist_of_a_swing_after_a_twist():
    angle = np.array([-2.5, -0.7, -1e-4, 0.0, 3e-4, 0.9, 2.0, 3.0])
    swing = np.linspace(-0.8, 0.8, len(angle))
    outs = [kl.zeros(len(angle)), kl.zeros(len(angle)), kl.zeros(len(angle), dtype=kl.quat)]
    args = [kl.array(angle.astype(np.float32)), kl.array(swing.astype(np.float32))]
    kl.launch(twist_kernel, len(angle), inputs=args, outputs=outs)
    np.testing.assert_allclose(outs[0].numpy(), angle, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1].numpy(), np.abs(angle), rtol=1e-5, atol=1e-6)
    for q, a in zip(outs[2].numpy(), angle):  # the twist is the rotation about z alone
        np.testing.assert_allclose(quat_matrix(q), axis_matrix(2, a), atol=2e-6)


def test_twist_angle_gradient_is_one():
    angle = kl.array(np.array([0.4, -1.1], np.float32), requires_grad=True)
    swing = kl.array(np.array([0.3, -0.2], np.float32))
    outs = [kl.zeros(2, requires_grad=True), kl.zeros(2, requires_grad=True),
            kl.zeros(2, dtype=kl.quat, requires_grad=True)]
    tape = kl.Tape()
    with tape:
        kl.launch(twist_kernel, 2, inputs=[angle, swing], outputs=outs)
    tape.backward(grads={outs[0]: kl.array(np.ones(2, np.float32))})
    np.testing.assert_allclose(angle.grad.numpy(), [1.0, 1.0], atol=1e-5)


def spatial_cross_matrix(p):
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])


def test_transform_twist_wrench_and_velocity_at_point():
    rng = np.random.default_rng(4)
    p, axis = rng.normal(size=3), rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle, x, r = 0.8, rng.normal(size=6), rng.normal(size=3)
    q = np.append(axis * np.sin(angle / 2), np.cos(angle / 2))

    @kl.kernel
    def frames(t: kl.array(dtype=kl.transform), x: kl.array(dtype=kl.spatial_vector),
               r: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.spatial_vector),
               vel: kl.array(dtype=kl.vec3)):
        out[0] = kl.transform_twist(t[0], x[0])
        out[1] = kl.transform_wrench(t[0], x[0])
        vel[0] = kl.velocity_at_point(x[0], r[0])

    out, vel = kl.zeros(2, dtype=kl.spatial_vector), kl.zeros(1, dtype=kl.vec3)
    kl.launch(frames, 1, inputs=[
        kl.array(np.append(p, q)[None].astype(np.float32), dtype=kl.transform),
        kl.array(x[None].astype(np.float32), dtype=kl.spatial_vector),
        kl.array(r[None].astype(np.float32), dtype=kl.vec3)], outputs=[out, vel])
    R, P = quat_matrix(q), spatial_cross_matrix(p)
    motion = np.block([[R, np.zeros((3, 3))], [P @ R, R]])  # (w, v) -> (R w, R v + p x R w)
    force = np.block([[R, P @ R], [np.zeros((3, 3)), R]])  # (tau, f) -> (R tau + p x R f, R f)
    np.testing.assert_allclose(out.numpy()[0], motion @ x, atol=1e-5)
    np.testing.assert_allclose(out.numpy()[1], force @ x, atol=1e-5)
    np.testing.assert_allclose(vel.numpy()[0], x[3:] + np.cross(x[:3], r), atol=1e-5)


@pytest.mark.parametrize("begin_end", [None, (2, 9)])
def test_lower_bound_matches_searchsorted(begin_end):
    rng = np.random.default_rng(5)
    arr = np.sort(rng.integers(0, 20, 12)).astype(np.float32)
    values = np.concatenate([arr, arr + 0.5, [-1.0, 25.0]]).astype(np.float32)

    @kl.kernel
    def whole(a: kl.array(dtype=float), v: kl.array(dtype=float), out: kl.array(dtype=int)):
        t = kl.tid()
        out[t] = kl.lower_bound(a, v[t])

    @kl.kernel
    def part(a: kl.array(dtype=float), v: kl.array(dtype=float), out: kl.array(dtype=int)):
        t = kl.tid()
        out[t] = kl.lower_bound(a, 2, 9, v[t])

    out = kl.zeros(len(values), dtype=int)
    kl.launch(whole if begin_end is None else part, len(values),
              inputs=[kl.array(arr), kl.array(values)], outputs=[out])
    lo, hi = begin_end or (0, len(arr))
    # the first index in [lo, hi) holding a value >= v; hi - 1 when there is none (Warp's)
    expected = np.minimum(lo + np.searchsorted(arr[lo:hi], values, side="left"), hi - 1)
    np.testing.assert_array_equal(out.numpy(), expected)
