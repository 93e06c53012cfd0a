"""Random numbers and Perlin noise called on Python values give the kernel's numbers.

``kl.rand_init(42)`` in Python takes the integer overload (as in a kernel, not a float32
one); ``kl.randf(state)`` returns the next float and leaves a Python state as it was (Warp
passes it by value there); ``kl.noise(state, x)`` in 1 to 4 dimensions equals the same call
in a kernel. The kernel's numbers are the reference; the first draws are also checked
against the PCG hash written out here with Python integers.
"""
import numpy as np

import kernlab as kl

M = 0xFFFFFFFF


def pcg(state: int) -> int:
    """Warp's rand_pcg, on Python ints."""
    b = (state * 747796405 + 2891336453) & M
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & M
    return (c >> 22) ^ c


@kl.kernel
def draws(seed: int, x: float, v2: kl.vec2, v3: kl.vec3, v4: kl.vec4,
          out: kl.array(dtype=float), states: kl.array(dtype=kl.uint32)):
    s = kl.rand_init(seed)
    states[0] = s
    states[1] = kl.rand_init(seed, 7)
    out[0] = kl.noise(s, x)
    out[1] = kl.noise(s, v2)
    out[2] = kl.noise(s, v3)
    out[3] = kl.noise(s, v4)
    out[4] = kl.pnoise(s, v2, 3, 5)
    out[5] = kl.randf(s)   # advances s
    out[6] = kl.randf(s)


def test_python_calls_match_the_kernel():
    v2, v3 = kl.vec2(0.3, 1.7), kl.vec3(0.3, 1.7, -2.2)
    v4 = kl.vec4(0.3, 1.7, -2.2, 5.5)
    out, states = kl.zeros(7, dtype=float), kl.zeros(2, dtype=kl.uint32)
    kl.launch(draws, 1, inputs=[42, 0.37, v2, v3, v4, out, states])

    s = kl.rand_init(42)
    assert int(s) == pcg(42) == int(states.numpy()[0])
    assert int(kl.rand_init(42, 7)) == pcg((42 + pcg(7)) & M) == int(states.numpy()[1])
    py = [kl.noise(s, 0.37), kl.noise(s, v2), kl.noise(s, v3), kl.noise(s, v4),
          kl.pnoise(s, v2, 3, 5)]
    np.testing.assert_array_equal(np.array(py, np.float32), out.numpy()[:5])

    first = kl.randf(s)
    assert first == np.float32((pcg(pcg(42)) >> 8) / 16777216.0) == out.numpy()[5]
    assert kl.randf(s) == first and int(s) == pcg(42)  # the Python state is a value
    nxt = kl.randf(kl.randu(s))  # advancing explicitly gives the kernel's second draw
    assert nxt == out.numpy()[6]


def test_a_written_value_argument_is_written_in_place():
    # transform_set_* write their first argument (a transform value) in Python too
    t = kl.transform_identity()
    assert kl.transform_set_translation(t, kl.vec3(1.0, 2.0, 3.0)) is None
    kl.transform_set_rotation(t, kl.quat(0.0, 0.6, 0.0, 0.8))
    np.testing.assert_array_equal(np.asarray(t), np.float32([1, 2, 3, 0, 0.6, 0, 0.8]))
