"""&, |, ^, <<, >>, ~ and the bitwise atomics on integer vectors (Warp applies them
component by component), against NumPy on the same components."""
import numpy as np
import pytest

import kernlab as kl


def _kernel(vt):
    @kl.kernel
    def bits(a: kl.array(dtype=vt), b: kl.array(dtype=vt), s: kl.array(dtype=vt),
             out: kl.array2d(dtype=vt)):
        i = kl.tid()
        out[i, 0] = a[i] & b[i]
        out[i, 1] = a[i] | b[i]
        out[i, 2] = a[i] ^ b[i]
        out[i, 3] = a[i] << s[i]
        out[i, 4] = a[i] >> s[i]
        out[i, 5] = ~a[i]
        out[i, 6] = kl.bit_xor(kl.bit_and(a[i], b[i]), kl.invert(b[i]))
    return bits


@pytest.mark.parametrize("scalar", [kl.int8, kl.uint16, kl.int32, kl.uint32, kl.int64])
def test_bit_operators_on_integer_vectors(backend, scalar):
    vt = kl.types.vector(3, scalar)
    npt = scalar.np
    info = np.iinfo(npt)
    rng = np.random.default_rng(11)
    n = 6
    a = rng.integers(info.min, info.max, (n, 3), dtype=npt, endpoint=True)
    b = rng.integers(info.min, info.max, (n, 3), dtype=npt, endpoint=True)
    s = rng.integers(0, 7, (n, 3)).astype(npt)  # counts below every width
    out = kl.zeros((n, 7), dtype=vt)
    kl.launch(_kernel(vt), n, inputs=[kl.array(a, dtype=vt), kl.array(b, dtype=vt),
                                      kl.array(s, dtype=vt)], outputs=[out])
    got = out.numpy()
    wide = a.astype(np.int64) if scalar.bits < 64 else a
    expect = [a & b, a | b, a ^ b,
              (wide << s.astype(wide.dtype)).astype(npt),  # C: shift in >= 32 bits, truncate
              a >> s, ~a, (a & b) ^ ~b]
    for k, e in enumerate(expect):
        np.testing.assert_array_equal(got[:, k], e, err_msg=f"operation {k}")


@kl.kernel
def atomics(o: kl.array(dtype=kl.vec3i), v: kl.array(dtype=kl.vec3i)):
    i = kl.tid()
    kl.atomic_and(o, 0, v[i])
    kl.atomic_or(o, 1, v[i])
    kl.atomic_xor(o, 2, v[i])
    o[3] += v[i]


def test_bitwise_atomics_on_integer_vectors(backend):
    rng = np.random.default_rng(4)
    v = rng.integers(0, 1 << 20, (16, 3)).astype(np.int32)
    o_np = np.array([[-1, -1, -1], [0, 0, 0], [0, 0, 0], [5, 6, 7]], dtype=np.int32)
    o = kl.array(o_np, dtype=kl.vec3i)
    kl.launch(atomics, 16, inputs=[o, kl.array(v, dtype=kl.vec3i)])
    np.testing.assert_array_equal(o.numpy(), [np.bitwise_and.reduce(v, 0),
                                              np.bitwise_or.reduce(v, 0),
                                              np.bitwise_xor.reduce(v, 0),
                                              o_np[3] + v.sum(0)])


@kl.kernel
def float_bits(a: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3)):
    out[0] = a[0] & a[0]


def test_float_vectors_have_no_bit_operators(backend):
    with pytest.raises(kl.KernelTypeError, match="bit_and"):
        kl.launch(float_bits, 1, inputs=[kl.zeros(1, dtype=kl.vec3)],
                  outputs=[kl.zeros(1, dtype=kl.vec3)])
