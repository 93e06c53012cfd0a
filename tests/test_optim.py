"""kl.optim.Adam and kl.optim.SGD (Warp's warp.optim): each step against the update rule
written out in float64 NumPy."""
import numpy as np
import pytest

import kernlab as kl
import kernlab.optim  # noqa: F401  (as `import warp.optim`)


def adam_reference(p, grads, lr, b1, b2, eps):
    p = np.array(p, np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


def test_adam_float32_follows_the_update_rule():
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=50).astype(np.float32)
    grads = [rng.normal(size=50) for _ in range(4)]
    x = kl.array(p0)
    g = kl.zeros(50)
    opt = kl.optim.Adam([x], lr=0.05, betas=(0.8, 0.99), eps=1e-6)
    for gk in grads:
        g.assign(gk.astype(np.float32))
        opt.step([g])
    assert opt.t == 4
    np.testing.assert_allclose(x.numpy(), adam_reference(p0, grads, 0.05, 0.8, 0.99, 1e-6),
                               rtol=1e-5, atol=1e-6)


def test_adam_vec3_and_float16():
    rng = np.random.default_rng(4)
    p0 = rng.normal(size=(6, 3)).astype(np.float32)
    grads = [rng.normal(size=(6, 3)) for _ in range(3)]
    x = kl.array(p0, dtype=kl.vec3)
    h = kl.array(p0[:, 0].astype(np.float16), dtype=kl.float16)
    opt = kl.optim.Adam([x, h], lr=0.1)
    assert opt.m[1].dtype == kl.float32  # float16 parameters keep float32 moments
    for gk in grads:
        opt.step([kl.array(gk.astype(np.float32), dtype=kl.vec3),
                  kl.array(gk[:, 0].astype(np.float16), dtype=kl.float16)])
    np.testing.assert_allclose(x.numpy(), adam_reference(p0, grads, 0.1, 0.9, 0.999, 1e-8),
                               rtol=1e-5, atol=1e-6)
    ref_h = adam_reference(p0[:, 0].astype(np.float16),
                           [gk[:, 0].astype(np.float16) for gk in grads], 0.1, 0.9, 0.999, 1e-8)
    np.testing.assert_allclose(h.numpy().astype(np.float64), ref_h, atol=4e-3)  # half steps


@pytest.mark.parametrize("momentum,dampening,weight_decay,nesterov",
                         [(0.0, 0.0, 0.0, False), (0.9, 0.1, 0.01, False),
                          (0.9, 0.0, 0.0, True)])
def test_sgd_follows_the_update_rule(momentum, dampening, weight_decay, nesterov):
    rng = np.random.default_rng(5)
    p0 = rng.normal(size=20).astype(np.float32)
    grads = [rng.normal(size=20) for _ in range(3)]
    x = kl.array(p0)
    opt = kl.optim.SGD([x], lr=0.1, momentum=momentum, dampening=dampening,
                       weight_decay=weight_decay, nesterov=nesterov)
    p, buf = p0.astype(np.float64), None
    for gk in grads:
        opt.step([kl.array(gk.astype(np.float32))])
        g = gk + weight_decay * p
        if momentum:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - 0.1 * g
    np.testing.assert_allclose(x.numpy(), p, rtol=1e-5, atol=1e-6)


def test_sgd_on_vectors():
    x = kl.array(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), dtype=kl.vec2)
    kl.optim.SGD([x], lr=0.5).step([kl.array(np.ones((2, 2), np.float32), dtype=kl.vec2)])
    np.testing.assert_array_equal(x.numpy(), [[0.5, 1.5], [2.5, 3.5]])


def test_optimizer_errors_name_the_problem():
    x = kl.zeros(4)
    with pytest.raises(TypeError, match="dtype"):
        kl.optim.Adam([x]).step([kl.zeros(4, dtype=kl.float64)])
    with pytest.raises(ValueError, match="shape"):
        kl.optim.SGD([x]).step([kl.zeros(5)])
    with pytest.raises(RuntimeError, match="not supported"):
        kl.optim.Adam([kl.zeros(4, dtype=kl.float64)])
    with pytest.raises(RuntimeError, match=r"parameters must be set before calling step\(\)"):
        kl.optim.Adam().step([x])
