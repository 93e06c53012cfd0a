"""float16 conversions in compiled kernels. Only half <-> float32 has a CPU instruction; the
others once became compiler-rt calls that the JIT could not resolve, and a kernel casting a
float64 to float16 crashed the process. Expected values are NumPy's."""
import numpy as np
import pytest

import kernlab as kl

OTHERS = [kl.int8, kl.uint8, kl.int16, kl.uint16, kl.int32, kl.uint32, kl.int64, kl.uint64,
          kl.float32, kl.float64]


def make(t):
    @kl.kernel
    def through_half(a: kl.array(dtype=t), h: kl.array(dtype=kl.float16),
                     back: kl.array(dtype=t)):
        i = kl.tid()
        h[i] = kl.float16(a[i])
        back[i] = t(h[i])
    return through_half


@pytest.mark.parametrize("t", OTHERS, ids=lambda t: t.__name__)
def test_every_type_converts_to_and_from_float16(backend, t):
    np_t = kl.dtype_to_numpy(t)
    data = np.array([0, 3, 7, 100, 127], dtype=np_t)
    if np_t.kind == "f":
        data = np.array([0.1, -2.5, 1.0e-3, 6.0e4, 1.0 / 3.0], dtype=np_t)
    a = kl.array(data, dtype=t)
    h, back = kl.zeros(5, dtype=kl.float16), kl.zeros(5, dtype=t)
    kl.launch(make(t), dim=5, inputs=[a, h, back])
    want = data.astype(np.float16)
    np.testing.assert_array_equal(h.numpy(), want)
    np.testing.assert_array_equal(back.numpy(), want.astype(np_t))


def test_float64_quaternion_cast_to_float16_has_the_right_gradient(backend):
    qt = kl.types.quaternion(dtype=kl.float64)

    @kl.kernel
    def cast(a: kl.array(dtype=kl.float64), b: kl.array(dtype=kl.float16)):
        q = kl.types.quaternion(qt(a[0], a[1], a[2], a[3]), dtype=kl.float16)
        b[0] = q[0] * kl.float16(2.0)
        b[3] = q[3]

    a = kl.array(np.array([0.25, 0.5, 0.75, 1.0]), dtype=kl.float64, requires_grad=True)
    b = kl.zeros(4, dtype=kl.float16, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(cast, dim=1, inputs=[a, b])
    tape.backward(grads={b: kl.array(np.ones(4, np.float16), dtype=kl.float16)})
    np.testing.assert_array_equal(b.numpy(), [0.5, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 0.0, 0.0, 1.0])  # d b / d a
