"""Gradient-descent optimizers over kernlab arrays: ``kl.optim.Adam`` and ``kl.optim.SGD``.

They follow Warp's ``warp.optim`` (and PyTorch's torch.optim): each ``step(grads)`` updates
every parameter array in place, one kernel launch per array, from the gradient arrays given
in the same order. Adam takes float32, float16 (its moments kept in float32) and vec3
arrays, as Warp's does; SGD any float scalar or vector dtype. The update runs outside any
tape: an optimizer step is not differentiated.

    opt = kl.optim.Adam([x], lr=0.01)
    for _ in range(n):
        tape = kl.Tape()
        with tape:
            kl.launch(loss_kernel, ..., inputs=[x, loss])
        tape.backward(loss)
        opt.step([x.grad])
        tape.zero()
"""
from __future__ import annotations

from typing import Any

import kernlab as kl
from .kernel import kernel
from .runtime.array import array, zeros
from .runtime.launch import launch


@kernel
def _adam_scalar(grad: array(dtype=float), m: array(dtype=float), v: array(dtype=float),
                 lr: float, beta1: float, beta2: float, t: float, eps: float,
                 params: array(dtype=float)):
    i = kl.tid()
    g = grad[i]
    m_new = beta1 * m[i] + (1.0 - beta1) * g
    v_new = beta2 * v[i] + (1.0 - beta2) * g * g
    m[i] = m_new
    v[i] = v_new
    m_hat = m_new / (1.0 - kl.pow(beta1, t + 1.0))   # bias corrections
    v_hat = v_new / (1.0 - kl.pow(beta2, t + 1.0))
    params[i] = params[i] - lr * m_hat / (kl.sqrt(v_hat) + eps)


@kernel
def _adam_half(grad: array(dtype=kl.float16), m: array(dtype=float),
               v: array(dtype=float), lr: float, beta1: float, beta2: float, t: float,
               eps: float, params: array(dtype=kl.float16)):
    i = kl.tid()
    g = float(grad[i])
    m_new = beta1 * m[i] + (1.0 - beta1) * g
    v_new = beta2 * v[i] + (1.0 - beta2) * g * g
    m[i] = m_new
    v[i] = v_new
    m_hat = m_new / (1.0 - kl.pow(beta1, t + 1.0))
    v_hat = v_new / (1.0 - kl.pow(beta2, t + 1.0))
    params[i] = params[i] - kl.float16(lr * m_hat / (kl.sqrt(v_hat) + eps))


@kernel
def _adam_vec3(grad: array(dtype=kl.vec3), m: array(dtype=kl.vec3), v: array(dtype=kl.vec3),
               lr: float, beta1: float, beta2: float, t: float, eps: float,
               params: array(dtype=kl.vec3)):
    i = kl.tid()
    g = grad[i]
    m_new = beta1 * m[i] + (1.0 - beta1) * g
    v_new = beta2 * v[i] + (1.0 - beta2) * kl.cw_mul(g, g)
    m[i] = m_new
    v[i] = v_new
    m_hat = m_new / (1.0 - kl.pow(beta1, t + 1.0))
    v_hat = v_new / (1.0 - kl.pow(beta2, t + 1.0))
    root = kl.vec3(kl.sqrt(v_hat[0]), kl.sqrt(v_hat[1]), kl.sqrt(v_hat[2]))
    params[i] = params[i] - lr * kl.cw_div(m_hat, root + kl.vec3(eps, eps, eps))


_ADAM = {kl.float32: (_adam_scalar, kl.float32), kl.float16: (_adam_half, kl.float32),
         kl.vec3: (_adam_vec3, kl.vec3)}


def _check_pair(name, params, grad):
    if not isinstance(grad, array):
        raise TypeError(f"{name}.step: a gradient must be a kernlab array, got {grad!r}")
    if grad.dtype != params.dtype:
        raise TypeError(f"{name} gradient dtype must match parameter dtype {params.dtype}, "
                        f"got {grad.dtype}")
    if grad.shape != params.shape:
        raise ValueError(f"{name} gradient shape must match parameter shape {params.shape}, "
                         f"got {grad.shape}")


class Adam:
    """Adam (Kingma & Ba): per element, running means of the gradient (``m``) and of its
    square (``v``), bias-corrected, give the step ``lr * m_hat / (sqrt(v_hat) + eps)``."""

    def __init__(self, params=None, lr=0.001, betas=(0.9, 0.999), eps=1e-08):
        self.m: list = []
        self.v: list = []
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.t = 0
        self.set_params(params)

    def set_params(self, params):
        """Parameters to optimize (a list of arrays, or None to set later); moment buffers
        are made for each, kept where shape and dtype still fit."""
        self.params = params
        if not params:
            return
        self.m = (self.m + [None] * len(params))[:len(params)]
        self.v = (self.v + [None] * len(params))[:len(params)]
        for k, p in enumerate(params):
            if p.dtype not in _ADAM:
                raise RuntimeError(f"kl.optim.Adam: parameters of dtype {p.dtype} are not "
                                   "supported (float32, float16 or vec3)")
            moment = _ADAM[p.dtype][1]
            for buf in (self.m, self.v):
                if buf[k] is None or buf[k].shape != p.shape or buf[k].dtype != moment:
                    buf[k] = zeros(p.shape, dtype=moment, device=p.device)

    def reset_internal_state(self):
        for buf in self.m + self.v:
            buf.zero_()
        self.t = 0

    def step(self, grad):
        if self.params is None:
            raise RuntimeError("kl.optim.Adam parameters must be set before calling step(), "
                               "got None")
        for k, p in enumerate(self.params):
            self.step_detail(grad[k], self.m[k], self.v[k], self.lr, self.beta1, self.beta2,
                             self.t, self.eps, p)
        self.t += 1

    @staticmethod
    def step_detail(g, m, v, lr, beta1, beta2, t, eps, params):
        """One Adam update of one parameter array (``t``: the steps taken before)."""
        _check_pair("kl.optim.Adam", params, g)
        if params.dtype not in _ADAM:
            raise RuntimeError(f"kl.optim.Adam: parameters of dtype {params.dtype} are not "
                               "supported (float32, float16 or vec3)")
        launch(_ADAM[params.dtype][0], params.size, device=params.device, record_tape=False,
               inputs=[g, m, v, float(lr), float(beta1), float(beta2), float(t), float(eps),
                       params])


@kernel
def _sgd(grad: array(dtype=Any), b: array(dtype=Any), lr: float, momentum: float,
         dampening: float, weight_decay: float, nesterov: int, t: int,
         params: array(dtype=Any)):
    i = kl.tid()
    g = grad[i]
    if weight_decay != 0.0:
        g = g + weight_decay * params[i]
    if momentum != 0.0:
        buf = g  # the first step starts the momentum buffer at the gradient
        if t > 0:
            buf = momentum * b[i] + (1.0 - dampening) * g
        b[i] = buf
        if nesterov == 1:
            g = g + momentum * buf
        else:
            g = buf
    params[i] = params[i] - lr * g


class SGD:
    """Stochastic gradient descent with optional momentum (``dampening``, Nesterov) and
    weight decay, as torch.optim.SGD."""

    def __init__(self, params=None, lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        self.b: list = []
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov
        self.t = 0
        self.set_params(params)

    def set_params(self, params):
        self.params = params
        if not params:
            return
        self.b = (self.b + [None] * len(params))[:len(params)]
        for k, p in enumerate(params):
            if self.b[k] is None or self.b[k].shape != p.shape or self.b[k].dtype != p.dtype:
                self.b[k] = zeros(p.shape, dtype=p.dtype, device=p.device)

    def reset_internal_state(self):
        for buf in self.b:
            buf.zero_()
        self.t = 0

    def step(self, grad):
        if self.params is None:
            raise RuntimeError("kl.optim.SGD parameters must be set before calling step(), "
                               "got None")
        for k, p in enumerate(self.params):
            self.step_detail(grad[k], self.b[k], self.lr, self.momentum, self.dampening,
                             self.weight_decay, self.nesterov, self.t, p)
        self.t += 1

    @staticmethod
    def step_detail(g, b, lr, momentum, dampening, weight_decay, nesterov, t, params):
        _check_pair("kl.optim.SGD", params, g)
        if b.dtype != params.dtype:
            raise TypeError(f"kl.optim.SGD: the momentum buffer's dtype {b.dtype} differs "
                            f"from the parameter's {params.dtype}")
        launch(_sgd, params.size, device=params.device, record_tape=False,
               inputs=[g, b, float(lr), float(momentum), float(dampening),
                       float(weight_decay), int(bool(nesterov)), int(t), params])
