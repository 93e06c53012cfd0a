"""Perlin noise (kl.noise, kl.pnoise, kl.curlnoise; kernlab/perlin.py).

The expected values come from a float64 NumPy model written here in another form: the
noise as the tensor-product sum over the cell's corners (not nested interpolations), with
its gradient by the product rule, validated against its own finite differences. Only the
lattice hash and the corner gradients are Warp's definition (integer arithmetic, exact).
Where warp-lang is installed, the values and gradients are also compared with Warp's.
"""
import itertools

import numpy as np
import pytest

import kernlab as kl

# test_cuda's NVRTC corpus compiles only these of this file's kernels (the 3-d curl: the
# noise tree with its gradient and Hessian); the emulated-CUDA variants of the tests
# compile every kernel's CUDA C.
NVRTC_CORPUS = ("curl3",)

M32 = 0xFFFFFFFF
PRIMES = (73856093, 19349663, 53471161, 10000019)
PERIODS = (3, 4, 5, 2)
SEED = 42


# ---- the float64 model ---------------------------------------------------------------------

def pcg(s):
    """Warp's PCG output hash on uint64 arrays holding uint32 values."""
    s = np.asarray(s, np.uint64)
    b = (s * np.uint64(747796405) + np.uint64(2891336453)) & np.uint64(M32)
    c = (((b >> ((b >> np.uint64(28)) + np.uint64(4))) ^ b) * np.uint64(277803737)) \
        & np.uint64(M32)
    return (c >> np.uint64(22)) ^ c


def rand_init(seed, offset=None):
    seed = np.uint64(int(seed) & M32)
    if offset is None:
        return pcg(seed)
    return pcg((seed + pcg(np.uint64(offset))) & np.uint64(M32))


def randf(s):
    s = pcg(s)
    return s, (s >> np.uint64(8)).astype(np.float64) / 2.0 ** 24


def lattice_gradient(state, idx):
    """The unit gradient at integer points idx (m, n): a hash of the coordinates and the
    state, then n uniform numbers (1-d: one in [-1, 1))."""
    m, n = idx.shape
    terms = [(idx[:, k].astype(np.int64) & M32).astype(np.uint64) * np.uint64(PRIMES[k])
             & np.uint64(M32) for k in range(n)]
    h = (terms[-1] + np.uint64(state)) & np.uint64(M32)
    for t in terms[:-1]:
        h = h ^ t
    if n == 1:
        _, r = randf(h)
        return (2.0 * r - 1.0)[:, None]
    comps = []
    for _ in range(n):
        h, r = randf(h)
        comps.append(r - 0.5)
    g = np.stack(comps, axis=1)
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def fade(t):
    return t * t * t * (t * (t * 6 - 15) + 10)


def fade_slope(t):
    return 30 * t * t * (t - 1) ** 2


def perlin(state, x, periods=None):
    """Value (m,) and gradient (m, n) of Perlin noise at the points x (m, n), float64."""
    x = np.asarray(x, np.float64)
    m, n = x.shape
    f = np.floor(x)
    lo = f.astype(np.int64)
    d = x - f
    if periods is not None:
        p = np.asarray(periods[:n], np.int64)
        lo = np.fmod(lo, p)  # C's remainder, as Warp's
        hi = np.fmod(lo + 1, p)
    else:
        hi = lo + 1
    s, ds = fade(d), fade_slope(d)
    value, grad = np.zeros(m), np.zeros((m, n))
    for corner in itertools.product((0, 1), repeat=n):
        c = np.array(corner)
        g = lattice_gradient(state, np.where(c == 1, hi, lo))
        dot = np.sum((d - c) * g, axis=1)
        w = np.where(c == 1, s, 1 - s)
        dw = np.where(c == 1, ds, -ds)
        weight = np.prod(w, axis=1)
        value += weight * dot
        for j in range(n):
            others = np.prod(np.delete(w, j, axis=1), axis=1)
            grad[:, j] += others * dw[:, j] * dot + weight * g[:, j]
    return value, grad


def curl(state, x, octaves=1, lacunarity=2.0, gain=0.5):
    """Warp's curlnoise in float64: 2-d, the gradient turned by 90 degrees; 3-d and 4-d,
    the curl of three noise fields (each octave draws the next three states)."""
    x = np.asarray(x, np.float64)
    n = x.shape[1]
    sums = np.zeros((3, len(x), n))
    s = state
    for i in range(octaves):
        p = lacunarity ** i * x
        for k in range(1 if n == 2 else 3):
            sums[k] += gain ** i * perlin(s, p)[1]
            if n > 2 and k < 2:
                s = rand_init(s, (10019689, 13112221)[k])
    g1, g2, g3 = sums
    if n == 2:
        return np.stack([-g1[:, 1], g1[:, 0]], axis=1)
    return np.stack([g3[:, 1] - g2[:, 2], g1[:, 2] - g3[:, 0], g2[:, 0] - g1[:, 1]], axis=1)


def test_the_model_gradient_is_its_own_finite_difference():
    rng = np.random.default_rng(5)
    state = rand_init(SEED)
    for n in (1, 2, 3, 4):
        x = rng.uniform(-4, 4, (20, n))
        _, grad = perlin(state, x)
        h = 1e-6
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            fd = (perlin(state, x + e)[0] - perlin(state, x - e)[0]) / (2 * h)
            np.testing.assert_allclose(grad[:, j], fd, atol=1e-7)


# ---- the kernels (the same source compiles for Warp in warp_results) ------------------------

def _make_kernels(wp):
    def noise_all(seed: int, xs: wp.array(dtype=wp.vec4), out: wp.array(dtype=float, ndim=2)):
        t = wp.tid()
        st = wp.rand_init(seed)
        p = xs[t]
        out[t, 0] = wp.noise(st, p[0])
        out[t, 1] = wp.noise(st, wp.vec2(p[0], p[1]))
        out[t, 2] = wp.noise(st, wp.vec3(p[0], p[1], p[2]))
        out[t, 3] = wp.noise(st, p)
        out[t, 4] = wp.pnoise(st, p[0], 3)
        out[t, 5] = wp.pnoise(st, wp.vec2(p[0], p[1]), 3, 4)
        out[t, 6] = wp.pnoise(st, wp.vec3(p[0], p[1], p[2]), 3, 4, 5)
        out[t, 7] = wp.pnoise(st, p, 3, 4, 5, 2)

    def curl_all(seed: int, octaves: int, xs: wp.array(dtype=wp.vec4),
                 c2: wp.array(dtype=wp.vec2), c3: wp.array(dtype=wp.vec3),
                 c4: wp.array(dtype=wp.vec3)):
        t = wp.tid()
        st = wp.rand_init(seed)
        p = xs[t]
        c2[t] = wp.curlnoise(st, wp.vec2(p[0], p[1]), wp.uint32(octaves), 2.0, 0.5)
        c3[t] = wp.curlnoise(st, wp.vec3(p[0], p[1], p[2]), wp.uint32(octaves))
        c4[t] = wp.curlnoise(st, p, wp.uint32(octaves), 2.0, 0.5)

    def noise_dims(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
                   x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4),
                   out: wp.array(dtype=float, ndim=2)):
        t = wp.tid()
        st = wp.rand_init(seed)
        out[t, 0] = wp.noise(st, x1[t])
        out[t, 1] = wp.noise(st, x2[t])
        out[t, 2] = wp.noise(st, x3[t])
        out[t, 3] = wp.noise(st, x4[t])

    def pnoise_dims(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
                    x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4),
                    out: wp.array(dtype=float, ndim=2)):
        t = wp.tid()
        st = wp.rand_init(seed)
        out[t, 0] = wp.pnoise(st, x1[t], 3)
        out[t, 1] = wp.pnoise(st, x2[t], 3, 4)
        out[t, 2] = wp.pnoise(st, x3[t], 3, 4, 5)
        out[t, 3] = wp.pnoise(st, x4[t], 3, 4, 5, 2)

    def curl_dot(seed: int, octaves: int, w: wp.vec3, x2: wp.array(dtype=wp.vec2),
                 x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4),
                 loss: wp.array(dtype=float)):
        t = wp.tid()
        st = wp.rand_init(seed)
        o = wp.uint32(octaves)
        a = wp.curlnoise(st, x2[t], o)
        wp.atomic_add(loss, 0, a[0] * w[0] + a[1] * w[1]
                      + wp.dot(wp.curlnoise(st, x3[t], o), w)
                      + wp.dot(wp.curlnoise(st, x4[t], o), w))

    return tuple(wp.kernel(f) for f in (noise_all, curl_all, noise_dims, pnoise_dims,
                                        curl_dot))


noise_all, curl_all, noise_dims, pnoise_dims, curl_dot = _make_kernels(kl)


def points(n, lo=-6.0, hi=6.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, (n, 4)).astype(np.float32)


def run_noise_all(wp, xs):
    out = wp.zeros((len(xs), 8), dtype=float)
    wp.launch(noise_all, len(xs), inputs=[SEED, wp.array(xs, dtype=wp.vec4)], outputs=[out])
    return out.numpy()


def run_curl_all(wp, kernel, xs, octaves):
    n = len(xs)
    c2, c3, c4 = wp.zeros(n, dtype=wp.vec2), wp.zeros(n, dtype=wp.vec3), \
        wp.zeros(n, dtype=wp.vec3)
    wp.launch(kernel, n, inputs=[SEED, octaves, wp.array(xs, dtype=wp.vec4)],
              outputs=[c2, c3, c4])
    return c2.numpy(), c3.numpy(), c4.numpy()


def expected_noise(xs):
    """The eight columns of noise_all from the float64 model; pnoise's coordinates must be
    non-negative (as in Warp)."""
    x = xs.astype(np.float64)
    state = rand_init(SEED)
    cols = [perlin(state, x[:, :n])[0] for n in (1, 2, 3, 4)]
    cols += [perlin(state, x[:, :n], PERIODS)[0] for n in (1, 2, 3, 4)]
    return np.stack(cols, axis=1)


# ---- values --------------------------------------------------------------------------------

def test_noise_and_pnoise_match_the_float64_model(backend):
    xs = points(40, 0.0, 9.0)
    xs[:12] = points(12, -9.0, 9.0, seed=1)  # negative coordinates (noise only)
    got, want = run_noise_all(kl, xs), expected_noise(xs)
    np.testing.assert_allclose(got[:, :4], want[:, :4], rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[12:, 4:], want[12:, 4:], rtol=0, atol=2e-6)
    assert np.abs(want).max() > 0.3  # the field is not trivially small


def test_noise_is_zero_at_every_lattice_point(backend):
    xs = np.random.default_rng(2).integers(-20, 20, (16, 4)).astype(np.float32)
    assert np.all(run_noise_all(kl, xs)[:, :4] == 0.0)
    assert np.all(run_noise_all(kl, np.abs(xs)) == 0.0)  # pnoise: non-negative coordinates


def test_pnoise_repeats_with_its_period_and_is_noise_within_one_period(backend):
    # coordinates on a 1/64 grid, so adding whole periods is exact in float32
    rng = np.random.default_rng(3)
    xs = (rng.integers(0, 64 * 2, (24, 4)) / 64.0).astype(np.float32)  # in [0, 2): noise
    shifted = xs + np.array(PERIODS, np.float32) * rng.integers(1, 4, (24, 4))
    base, moved = run_noise_all(kl, xs), run_noise_all(kl, shifted.astype(np.float32))
    np.testing.assert_array_equal(moved[:, 4:], base[:, 4:])
    # below period - 1 on every axis the lattice does not wrap: pnoise is noise
    inside = np.all(xs < np.array(PERIODS) - 1, axis=1)
    assert inside.sum() >= 4
    np.testing.assert_array_equal(base[inside, 4:], base[inside, :4])


def test_curlnoise_matches_the_float64_model(backend):
    xs = points(12, -3.0, 3.0, seed=4)
    state = rand_init(SEED)
    for octaves in (1, 3):
        c2, c3, c4 = run_curl_all(kl, curl_all, xs, octaves)
        x = xs.astype(np.float64)
        np.testing.assert_allclose(c2, curl(state, x[:, :2], octaves), atol=1e-5)
        np.testing.assert_allclose(c3, curl(state, x[:, :3], octaves), atol=1e-5)
        np.testing.assert_allclose(c4, curl(state, x, octaves), atol=1e-5)
    c2, c3, c4 = run_curl_all(kl, curl_all, xs, 0)
    assert not c2.any() and not c3.any() and not c4.any()  # no octaves: a zero vector


@kl.kernel
def curl3(seed: int, octaves: int, xs: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3)):
    t = kl.tid()
    out[t] = kl.curlnoise(kl.rand_init(seed), xs[t], kl.uint32(octaves), 2.0, 0.5)


def test_curlnoise_3d_is_divergence_free():
    """By the float32 kernel's own forward-mode Jacobian (trace zero to round-off) and by
    central differences of its values."""
    n = 16
    xs = points(n, -3.0, 3.0, seed=6)[:, :3]
    for octaves in (1, 2):
        jac = np.zeros((n, 3, 3))
        for j in range(3):
            u = np.zeros((n, 3), np.float32)
            u[:, j] = 1.0
            out = kl.zeros(n, dtype=kl.vec3)
            (tan,) = kl.jvp(curl3, n, inputs=[SEED, octaves, kl.array(xs, dtype=kl.vec3)],
                            tan_inputs=[None, None, kl.array(u, dtype=kl.vec3)],
                            outputs=[out])
            jac[:, :, j] = tan.numpy()
        scale = np.abs(jac).max(axis=(1, 2))
        assert scale.min() > 0.5
        np.testing.assert_array_less(np.abs(np.trace(jac, axis1=1, axis2=2)), 1e-5 * scale)
        h = 1.0 / 256  # exact steps in float32
        div = np.zeros(n)
        for j in range(3):
            e = np.zeros(3, np.float32)
            e[j] = h
            plus, minus = kl.zeros(n, dtype=kl.vec3), kl.zeros(n, dtype=kl.vec3)
            kl.launch(curl3, n, inputs=[SEED, octaves, kl.array(xs + e, dtype=kl.vec3)],
                      outputs=[plus])
            kl.launch(curl3, n, inputs=[SEED, octaves, kl.array(xs - e, dtype=kl.vec3)],
                      outputs=[minus])
            div += (plus.numpy()[:, j].astype(np.float64) - minus.numpy()[:, j]) / (2 * h)
        # O(h^2) truncation and float32 rounding / h, against entries of size `scale`
        np.testing.assert_array_less(np.abs(div), 2e-3 * scale * octaves ** 2)


# ---- gradients -----------------------------------------------------------------------------

def dims_inputs(xs, requires_grad=True):
    return [kl.array(np.ascontiguousarray(xs[:, 0]), dtype=float, requires_grad=requires_grad)] \
        + [kl.array(np.ascontiguousarray(xs[:, :n]), dtype=getattr(kl, f"vec{n}"),
                    requires_grad=requires_grad) for n in (2, 3, 4)]


def reverse_gradients(kernel, xs):
    ins = dims_inputs(xs)
    out = kl.zeros((len(xs), 4), dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, len(xs), inputs=[SEED] + ins, outputs=[out])
    tape.backward(grads={out: kl.ones((len(xs), 4), dtype=float)})
    return [a.grad.numpy().reshape(len(xs), -1) for a in ins]


def test_noise_gradients_by_reverse_mode_match_the_model(backend):
    xs = points(16, 0.0, 9.0, seed=7)
    state = rand_init(SEED)
    x = xs.astype(np.float64)
    for kernel, periods in ((noise_dims, None), (pnoise_dims, PERIODS)):
        grads = reverse_gradients(kernel, xs)
        for n, g in zip((1, 2, 3, 4), grads):
            np.testing.assert_allclose(g, perlin(state, x[:, :n], periods)[1], atol=2e-5)


def test_noise_gradients_by_forward_mode_match_the_model(backend):
    xs = points(8, -5.0, 5.0, seed=8)
    u = np.random.default_rng(9).normal(size=(8, 4)).astype(np.float32)
    out = kl.zeros((8, 4), dtype=float)
    (tan,) = kl.jvp(noise_dims, 8, inputs=[SEED] + dims_inputs(xs, False),
                    tan_inputs=[None] + dims_inputs(u, False), outputs=[out])
    state, x = rand_init(SEED), xs.astype(np.float64)
    for n in (1, 2, 3, 4):
        want = np.sum(perlin(state, x[:, :n])[1] * u[:, :n], axis=1)
        np.testing.assert_allclose(tan.numpy()[:, n - 1], want, atol=5e-5)


def curl_model_jacobian(x, octaves, h=1e-6):
    """d curl / dx of the float64 model by central differences: (m, 3 or 2, n)."""
    state = rand_init(SEED)
    cols = []
    for j in range(x.shape[1]):
        e = np.zeros(x.shape[1])
        e[j] = h
        cols.append((curl(state, x + e, octaves) - curl(state, x - e, octaves)) / (2 * h))
    return np.stack(cols, axis=2)


def test_curlnoise_gradients_by_reverse_mode_match_finite_differences(backend):
    xs = points(6, -3.0, 3.0, seed=10)
    w = np.array([0.7, -1.3, 0.4], np.float32)
    ins = dims_inputs(xs)[1:]
    for octaves in (1, 2):
        for a in ins:
            a.grad.zero_()
        loss = kl.zeros(1, dtype=float, requires_grad=True)
        with kl.Tape() as tape:
            kl.launch(curl_dot, len(xs), inputs=[SEED, octaves, kl.vec3(*w)] + ins,
                      outputs=[loss])
        tape.backward(loss)
        x = xs.astype(np.float64)
        for n, a in zip((2, 3, 4), ins):
            jac = curl_model_jacobian(x[:, :n], octaves)
            want = np.einsum("i,mij->mj", w[:jac.shape[1]].astype(np.float64), jac)
            np.testing.assert_allclose(a.grad.numpy(), want, atol=2e-4 * np.abs(want).max())


# ---- against Warp --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def warp_results():
    """Warp 1.19's values and gradients on the CPU, for the same kernels and points."""
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True
    with wp.ScopedDevice("cpu"):
        k_all, k_curl, k_dims, _, k_dot = _make_kernels(wp)
        xs = points(48, 0.0, 9.0, seed=11)
        xs[:16] = points(16, -9.0, 9.0, seed=12)
        out = wp.zeros((len(xs), 8), dtype=float)
        wp.launch(k_all, len(xs), inputs=[SEED, wp.array(xs, dtype=wp.vec4)], outputs=[out])
        curls = {o: run_curl_all(wp, k_curl, xs, o) for o in (1, 3)}
        ins = [wp.array(np.ascontiguousarray(xs[:, 0]), dtype=float, requires_grad=True)] + \
            [wp.array(np.ascontiguousarray(xs[:, :n]), dtype=getattr(wp, f"vec{n}"),
                      requires_grad=True) for n in (2, 3, 4)]
        dims = wp.zeros((len(xs), 4), dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k_dims, len(xs), inputs=[SEED] + ins, outputs=[dims])
        tape.backward(grads={dims: wp.ones((len(xs), 4), dtype=float)})
        grads = [a.grad.numpy().reshape(len(xs), -1) for a in ins]
        cins = [wp.array(np.ascontiguousarray(xs[:, :n]), dtype=getattr(wp, f"vec{n}"),
                         requires_grad=True) for n in (2, 3, 4)]
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k_dot, len(xs), inputs=[SEED, 2, wp.vec3(0.7, -1.3, 0.4)] + cins,
                      outputs=[loss])
        tape.backward(loss)
        curl_grads = [a.grad.numpy() for a in cins]
    return xs, out.numpy(), curls, grads, curl_grads


def skip_on_the_interpreter(backend):
    if backend == "interp":
        pytest.skip("the interpreter is checked against the float64 model; against Warp the "
                    "compiled backends (minutes of interpretation saved)")


def test_values_equal_warps(backend, warp_results):
    skip_on_the_interpreter(backend)
    xs, noise_values, curls, _, _ = warp_results
    got = run_noise_all(kl, xs)
    # pnoise with negative coordinates is outside Warp's contract; compare the rest
    np.testing.assert_allclose(got[:, :4], noise_values[:, :4], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got[16:, 4:], noise_values[16:, 4:], rtol=0, atol=1e-6)
    for octaves, want in curls.items():
        for g, w in zip(run_curl_all(kl, curl_all, xs, octaves), want):
            np.testing.assert_allclose(g, w, rtol=0, atol=2e-6)


def test_gradients_agree_with_warps(backend, warp_results):
    skip_on_the_interpreter(backend)
    xs, _, _, grads, curl_grads = warp_results
    for g, w in zip(reverse_gradients(noise_dims, xs), grads):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-5)
    ins = dims_inputs(xs)[1:]
    loss = kl.zeros(1, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(curl_dot, len(xs), inputs=[SEED, 2, kl.vec3(0.7, -1.3, 0.4)] + ins,
                  outputs=[loss])
    tape.backward(loss)
    for a, w in zip(ins, curl_grads):
        np.testing.assert_allclose(a.grad.numpy(), w, rtol=0, atol=1e-4 * np.abs(w).max())
