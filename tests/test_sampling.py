"""Warp's sampling helpers (sample_unit_*, sample_triangle): each draw sequence against a
plain-Python PCG model written here from Warp's formulas, the state each leaves behind,
the domain and moments of many samples, and, where warp-lang is installed, Warp's own
output for the same seeds."""
import numpy as np
import pytest

import kernlab as kl

M32 = 0xFFFFFFFF
TWO_PI = float(np.float32(2.0 * np.pi))


def pcg(s: int) -> int:
    b = (s * 747796405 + 2891336453) & M32
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & M32
    return (c >> 22) ^ c


class Draws:
    """The randf stream of one thread: rand_init(seed, i), then a float per call."""

    def __init__(self, seed, i):
        self.s = pcg((seed + pcg(i)) & M32)

    def __call__(self):
        self.s = pcg(self.s)
        return (self.s >> 8) / 16777216.0


def _polar(d, cos_phi, solid):
    phi = np.arccos(cos_phi(d()))
    theta = TWO_PI * d()
    r = d() ** (1 / 3) if solid else 1.0
    return [r * np.cos(theta) * np.sin(phi), r * np.sin(theta) * np.sin(phi), r * np.cos(phi)]


def _disk(d):
    r = np.sqrt(d())
    theta = TWO_PI * d()
    return [r * np.cos(theta), r * np.sin(theta)]


def _triangle(d):
    r = np.sqrt(d())
    return [1 - r, d() * r]


# name: (output length, model, check on many samples)
MODELS = {
    "sample_unit_square": (2, lambda d: [d() - 0.5, d() - 0.5], "box"),
    "sample_unit_cube": (3, lambda d: [d() - 0.5, d() - 0.5, d() - 0.5], "box"),
    "sample_unit_ring": (2, lambda d: [np.cos(t := TWO_PI * d()), np.sin(t)], "circle"),
    "sample_unit_disk": (2, _disk, "disk"),
    "sample_unit_sphere": (3, lambda d: _polar(d, lambda u: 1 - 2 * u, True), "ball"),
    "sample_unit_hemisphere_surface": (3, lambda d: _polar(d, lambda u: 1 - u, False),
                                       "half-sphere"),
    "sample_unit_hemisphere": (3, lambda d: _polar(d, lambda u: 1 - u, True), "half-ball"),
    "sample_triangle": (2, _triangle, "triangle"),
}

_KERNELS = {}


def sampler_kernel(name):
    if name not in _KERNELS:
        fn = getattr(kl, name)
        vt = kl.vec2 if MODELS[name][0] == 2 else kl.vec3

        def k(seed: int, out: kl.array(dtype=vt), states: kl.array(dtype=kl.uint32)):
            i = kl.tid()
            state = kl.rand_init(seed, i)
            a = fn(state)
            out[2 * i] = a
            out[2 * i + 1] = fn(state)  # a second sample continues the stream
            states[i] = state
        k.__name__ = k.__qualname__ = f"draw_{name}"
        _KERNELS[name] = kl.kernel(k)
    return _KERNELS[name]


def run(name, n, seed):
    length = MODELS[name][0]
    out = kl.zeros(2 * n, dtype=kl.vec2 if length == 2 else kl.vec3)
    states = kl.zeros(n, dtype=kl.uint32)
    kl.launch(sampler_kernel(name), n, inputs=[seed], outputs=[out, states])
    return out.numpy().reshape(n, 2, length), states.numpy()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_draws_follow_warps_formulas_and_advance_the_state(backend, name):
    n, seed = 5, 17
    got, states = run(name, n, seed)
    for i in range(n):
        d = Draws(seed, i)
        want = [MODELS[name][1](d), MODELS[name][1](d)]
        np.testing.assert_allclose(got[i], want, atol=2e-6, err_msg=f"thread {i}")
        assert states[i] == d.s, f"thread {i}: the state moved by another number of draws"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_samples_fill_their_domain(name):
    """Every sample inside the set, and the first two moments of a uniform sample."""
    x, _ = run(name, 20000, 3)
    x = x.reshape(-1, x.shape[-1]).astype(np.float64)
    kind, eps = MODELS[name][2], 1e-6
    r = np.linalg.norm(x, axis=1)
    if kind == "box":
        assert (x >= -0.5).all() and (x < 0.5).all()
        np.testing.assert_allclose(x.var(axis=0), 1 / 12, rtol=0.05)
    elif kind == "circle":
        np.testing.assert_allclose(r, 1, atol=1e-6)
    elif kind in ("disk", "ball", "half-ball"):
        dim = x.shape[1]
        assert (r <= 1 + eps).all()
        # for a uniform d-ball, E[r^2] = d / (d + 2)
        np.testing.assert_allclose((r ** 2).mean(), dim / (dim + 2), rtol=0.03)
    elif kind == "half-sphere":
        np.testing.assert_allclose(r, 1, atol=1e-5)
        np.testing.assert_allclose(x[:, 2].mean(), 0.5, atol=0.01)  # uniform on z in [0, 1]
    elif kind == "triangle":
        assert (x >= -eps).all() and (x.sum(axis=1) <= 1 + eps).all()
        np.testing.assert_allclose(x.mean(axis=0), 1 / 3, atol=0.01)
    if kind in ("half-sphere", "half-ball"):
        assert (x[:, 2] >= -eps).all()
        np.testing.assert_allclose(x[:, :2].mean(axis=0), 0, atol=0.01)
    elif kind != "triangle":  # symmetric about the origin
        np.testing.assert_allclose(x.mean(axis=0), 0, atol=0.01)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_same_stream_as_warp(name):
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True
    n, seed = 8, 5
    fn = getattr(wp, name)
    vt = wp.vec2 if MODELS[name][0] == 2 else wp.vec3

    def k(seed: int, out: wp.array(dtype=vt), states: wp.array(dtype=wp.uint32)):
        i = wp.tid()
        state = wp.rand_init(seed, i)
        out[2 * i] = fn(state)
        out[2 * i + 1] = fn(state)
        states[i] = state
    k.__name__ = k.__qualname__ = f"warp_draw_{name}"
    kernel = wp.kernel(k, module="unique")
    out = wp.zeros(2 * n, dtype=vt, device="cpu")
    states = wp.zeros(n, dtype=wp.uint32, device="cpu")
    wp.launch(kernel, n, inputs=[seed], outputs=[out, states], device="cpu")
    got, got_states = run(name, n, seed)
    np.testing.assert_allclose(got, out.numpy().reshape(got.shape), atol=2e-6)
    np.testing.assert_array_equal(got_states, states.numpy())
