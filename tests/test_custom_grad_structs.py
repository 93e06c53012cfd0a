"""Custom gradients of funcs that take structs: ``kl.adjoint[x.field]`` names a struct
parameter's field (nested too), with ``+=``, component writes (``kl.adjoint[x.v].y = ...``,
``kl.adjoint[x.v][0] += ...``), for struct values and elements of struct arrays. The
expected gradients are what the custom gradient says, worked out by hand with NumPy."""
import numpy as np

import kernlab as kl


@kl.struct
class Inner:
    w: float


@kl.struct
class Body:
    s: float
    v: kl.vec3
    inner: Inner


@kl.func
def energy(b: Body):
    return b.s * b.v[0] + b.v[1] * b.inner.w


@kl.func_grad(energy)
def energy_grad(b: Body, adj_ret: float):
    kl.adjoint[b.s] += 3.0 * adj_ret * b.s       # a made-up gradient: it must be used as is
    kl.adjoint[b.v][0] += 2.0 * adj_ret
    kl.adjoint[b.v].y = 5.0 * adj_ret
    kl.adjoint[b.inner.w] += b.v[2] * adj_ret


@kl.kernel
def from_array(bodies: kl.array(dtype=Body), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = energy(bodies[i])


@kl.kernel
def from_fields(s: kl.array(dtype=float), v: kl.array(dtype=kl.vec3),
                w: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    b = Body()
    b.s = s[i] * s[i]
    b.v = v[i]
    b.inner.w = w[i]
    out[i] = energy(b)


S = np.array([1.5, -2.0], np.float32)
V = np.array([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]], np.float32)
W = np.array([0.5, 7.0], np.float32)
SEED = np.array([1.0, 2.0], np.float32)  # d loss / d out


def test_struct_array_elements(backend):
    bodies = []
    for k in range(2):
        b = Body()
        b.s, b.v = float(S[k]), kl.vec3(*V[k])
        b.inner.w = float(W[k])
        bodies.append(b)
    arr = kl.array(bodies, dtype=Body, requires_grad=True)
    out = kl.zeros(2, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(from_array, 2, inputs=[arr], outputs=[out])
    np.testing.assert_allclose(out.numpy(), S * V[:, 0] + V[:, 1] * W, rtol=1e-6)
    tape.backward(grads={out: kl.array(SEED)})
    g = arr.grad.numpy()
    np.testing.assert_allclose(g["s"], 3.0 * SEED * S, rtol=1e-6)
    want_v = np.zeros((2, 3), np.float32)
    want_v[:, 0], want_v[:, 1] = 2.0 * SEED, 5.0 * SEED
    np.testing.assert_allclose(g["v"], want_v, rtol=1e-6)
    np.testing.assert_allclose(g["inner"]["w"], V[:, 2] * SEED, rtol=1e-6)


def test_struct_values_chain_back(backend):
    s, v, w = (kl.array(a, requires_grad=True) if a.ndim == 1 else
               kl.array(a, dtype=kl.vec3, requires_grad=True) for a in (S, V, W))
    out = kl.zeros(2, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(from_fields, 2, inputs=[s, v, w], outputs=[out])
    tape.backward(grads={out: kl.array(SEED)})
    # b.s = s^2, so ds = (3 adj b.s) * 2 s with b.s = s^2
    np.testing.assert_allclose(s.grad.numpy(), 3.0 * SEED * S**2 * 2.0 * S, rtol=1e-6)
    want_v = np.zeros((2, 3), np.float32)
    want_v[:, 0], want_v[:, 1] = 2.0 * SEED, 5.0 * SEED
    np.testing.assert_allclose(v.grad.numpy(), want_v, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), V[:, 2] * SEED, rtol=1e-6)
