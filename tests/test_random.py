"""Warp's per-thread random numbers: values against a plain-Python PCG written here."""
import numpy as np

import kernlab as kl

M32 = 0xFFFFFFFF


def pcg(s: int) -> int:
    b = (s * 747796405 + 2891336453) & M32
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & M32
    return (c >> 22) ^ c


def next_float(s: int):
    s = pcg(s)
    return s, (s >> 8) / 16777216.0


@kl.kernel
def draws(seed: int, f: kl.array(dtype=float), g: kl.array(dtype=float),
          n: kl.array(dtype=int), v: kl.array(dtype=kl.vec3),
          states: kl.array(dtype=kl.uint32)):
    i = kl.tid()
    state = kl.rand_init(seed, i)
    f[i] = kl.randf(state)
    g[i] = kl.randf(state, -2.0, 3.0)
    n[i] = kl.randi(state)
    v[i] = kl.sample_unit_sphere_surface(state)
    states[i] = state


def test_draws_match_the_pcg_reference(backend):
    n_threads, seed = 5, 42
    f, g = kl.zeros(n_threads, dtype=float), kl.zeros(n_threads, dtype=float)
    n, v = kl.zeros(n_threads, dtype=int), kl.zeros(n_threads, dtype=kl.vec3)
    states = kl.zeros(n_threads, dtype=kl.uint32)
    kl.launch(draws, n_threads, inputs=[seed], outputs=[f, g, n, v, states])
    for i in range(n_threads):
        s = pcg((seed + pcg(i)) & M32)
        s, want_f = next_float(s)
        s, u = next_float(s)
        s = pcg(s)
        want_n = s - (1 << 32) if s >= 1 << 31 else s
        s, u1 = next_float(s)
        s, u2 = next_float(s)
        phi, theta = np.arccos(1 - 2 * u1), 2 * np.pi * u2
        want_v = [np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)]
        assert f.numpy()[i] == np.float32(want_f)
        np.testing.assert_allclose(g.numpy()[i], 5 * u - 2, rtol=1e-6)
        assert n.numpy()[i] == want_n
        np.testing.assert_allclose(v.numpy()[i], want_v, atol=1e-5)
        assert states.numpy()[i] == s


@kl.kernel
def normal_draws(seed: int, out: kl.array(dtype=float), states: kl.array(dtype=kl.uint32)):
    i = kl.tid()
    state = kl.rand_init(seed, i)
    out[i] = kl.randn(state)
    states[i] = state


def test_randn_is_box_muller_on_two_draws(backend):
    n_threads, seed = 6, 7
    out, states = kl.zeros(n_threads), kl.zeros(n_threads, dtype=kl.uint32)
    kl.launch(normal_draws, n_threads, inputs=[seed], outputs=[out, states])
    for i in range(n_threads):
        s = pcg((seed + pcg(i)) & M32)
        s, u1 = next_float(s)
        s, u2 = next_float(s)
        expected = np.sqrt(-2.0 * np.log(u1 + 5.96e-8)) * np.cos(2.0 * np.pi * u2)
        assert abs(out.numpy()[i] - expected) < 2e-6 * max(1.0, abs(expected))
        assert states.numpy()[i] == s  # the state moved on by two draws


def test_randn_is_standard_normal():
    out = kl.zeros(200000)
    kl.launch(normal_draws, 200000, inputs=[3], outputs=[out, kl.zeros(200000, dtype=kl.uint32)])
    x = out.numpy()
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1.0) < 0.01
