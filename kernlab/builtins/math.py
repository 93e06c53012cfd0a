"""Scalar math: transcendental functions, rounding, min/max and friends.

Each derivative is written with other builtins, evaluated at the forward values.
Functions without an LLVM intrinsic call the C math library (``tanf``/``tan``).
"""
from __future__ import annotations

import numpy as np

from ..types import bool_
from .registry import builtin, sig

FLOAT1 = [sig("F", ret="T")]
FLOAT2 = [sig("F", "F", ret="T")]


def _unary(name, ref, grad, intrinsic=None, libm=None, cuda=None, differentiable=True,
           llvm=None):
    if llvm is None and intrinsic:
        llvm = lambda cx, x: cx.intr(intrinsic, x)  # noqa: E731
    elif llvm is None:
        llvm = lambda cx, x: cx.libm(libm or name, x)  # noqa: E731
    builtin(name, FLOAT1, lambda x: x.dtype.type(_quiet(ref, x)), llvm=llvm,
            cuda=cuda or f"{name}({{0}})", grad=grad, differentiable=differentiable)


def _quiet(ref, x):
    """ref(x) without NumPy's warnings: log(0) is -inf and exp(100) inf, as compiled code
    (and Warp at Python scope) give them, silently."""
    with np.errstate(all="ignore"):
        return ref(x)


def one(g, x):
    return g.const(1.0, x.type)


_unary("sin", np.sin, lambda g, x, r, adj: (g.mul(adj, g.cos(x)),), intrinsic="llvm.sin")
_unary("cos", np.cos, lambda g, x, r, adj: (g.neg(g.mul(adj, g.sin(x))),),
       intrinsic="llvm.cos")
_unary("tan", np.tan, lambda g, x, r, adj: (g.mul(adj, g.add(one(g, x), g.mul(r, r))),))


# asin / acos, as Warp: the argument is first clamped to [-1, 1] with fmin / fmax (so 2 -> 1
# and a NaN -> -1), and the slope +-1/sqrt(1 - x^2) counts only where that root is > 0
# (0 at |x| >= 1 and for NaN, instead of an infinity).
def _unit_clamped(x):
    return np.fmin(np.fmax(x, x.dtype.type(-1)), x.dtype.type(1))


def _unit_clamped_llvm(cx, name, x):
    lo, hi = cx.const(-1.0), cx.const(1.0)  # the result type is the argument type
    return cx.libm(name, cx.intr("llvm.minnum", cx.intr("llvm.maxnum", x, lo), hi))


def _inverse_root_grad(g, x, adj):
    d = g.sqrt(g.sub(one(g, x), g.mul(x, x)))
    return g.where(g.gt(d, g.zeros(x.type)), g.div(adj, d), g.zeros(x.type))


_unary("asin", lambda x: np.arcsin(_unit_clamped(x)), lambda g, x, r, adj: (
    _inverse_root_grad(g, x, adj),), cuda="asin(kl_unit_clamp({0}))",
    llvm=lambda cx, x: _unit_clamped_llvm(cx, "asin", x))
_unary("acos", lambda x: np.arccos(_unit_clamped(x)), lambda g, x, r, adj: (
    g.neg(_inverse_root_grad(g, x, adj)),), cuda="acos(kl_unit_clamp({0}))",
    llvm=lambda cx, x: _unit_clamped_llvm(cx, "acos", x))
_unary("atan", np.arctan, lambda g, x, r, adj: (
    g.div(adj, g.add(one(g, x), g.mul(x, x))),))
_unary("sinh", np.sinh, lambda g, x, r, adj: (g.mul(adj, g.cosh(x)),))
_unary("cosh", np.cosh, lambda g, x, r, adj: (g.mul(adj, g.sinh(x)),))
_unary("tanh", np.tanh, lambda g, x, r, adj: (g.mul(adj, g.sub(one(g, x), g.mul(r, r))),))
_unary("exp", np.exp, lambda g, x, r, adj: (g.mul(adj, r),), intrinsic="llvm.exp")
_unary("log", np.log, lambda g, x, r, adj: (g.div(adj, x),), intrinsic="llvm.log")
_unary("log2", np.log2, lambda g, x, r, adj: (
    g.div(adj, g.mul(x, g.const(np.log(2.0), x.type))),), intrinsic="llvm.log2")
_unary("log10", np.log10, lambda g, x, r, adj: (
    g.div(adj, g.mul(x, g.const(np.log(10.0), x.type))),), intrinsic="llvm.log10")
_unary("sqrt", np.sqrt, lambda g, x, r, adj: (
    g.div(adj, g.mul(g.const(2.0, x.type), r)),), intrinsic="llvm.sqrt")
_unary("floor", np.floor, None, intrinsic="llvm.floor", differentiable=False)
_unary("ceil", np.ceil, None, intrinsic="llvm.ceil", differentiable=False)
# Half away from zero, like C's round() and Warp (NumPy's round is half to even).
def _round_half_away(x):
    t = np.trunc(x)
    frac = x - t  # exact in floating point, unlike x + 0.5
    return t + np.sign(x) if abs(frac) >= 0.5 else t


_unary("round", _round_half_away, None,
       intrinsic="llvm.round", differentiable=False)

_unary("rint", np.rint, None, intrinsic="llvm.rint", differentiable=False)  # half to even
# frac(x) = x - trunc(x): slope 1 between integers (Warp's adjoint is 0 there; ours is right)
_unary("frac", lambda x: x - np.trunc(x), lambda g, x, r, adj: (adj,), cuda="kl_frac({0})",
       llvm=lambda cx, x: cx.b.fsub(x, cx.intr("llvm.trunc", x)))
_unary("cbrt", np.cbrt, lambda g, x, r, adj: (
    g.div(adj, g.mul(g.const(3.0, x.type), g.mul(r, r))),))
_DEG = 180.0 / np.pi


def _scale(name, factor):
    builtin(name, FLOAT1, lambda x: x.dtype.type(x * x.dtype.type(factor)),
            llvm=lambda cx, x: cx.b.fmul(x, cx.const(factor)),
            cuda=f"kl_{name}({{0}})",
            grad=lambda g, x, r, adj: (g.mul(adj, g.const(factor, x.type)),))


_scale("degrees", _DEG)
_scale("radians", 1.0 / _DEG)


def _copysign_grad(g, x, y, r, adj):
    # |x| sign(y): slope +1 where x and y have the same sign bit, -1 elsewhere; 0 for y
    same = g.eq(g.copysign(one(g, x), x), g.copysign(one(g, x), y))
    return g.where(same, adj, g.neg(adj)), None


builtin("copysign", FLOAT2, lambda x, y: x.dtype.type(np.copysign(x, y)),
        llvm=lambda cx, x, y: cx.intr("llvm.copysign", x, y), cuda="copysign({0}, {1})",
        grad=_copysign_grad)

builtin("atan2", FLOAT2, lambda y, x: y.dtype.type(np.arctan2(y, x)),
        llvm=lambda cx, y, x: cx.libm("atan2", y, x), cuda="atan2({0}, {1})",
        grad=lambda g, y, x, r, adj: (
            g.div(g.mul(adj, x), g.add(g.mul(x, x), g.mul(y, y))),
            g.neg(g.div(g.mul(adj, y), g.add(g.mul(x, x), g.mul(y, y))))))

builtin("pow", FLOAT2, lambda x, y: x.dtype.type(np.power(x, y)),
        llvm=lambda cx, x, y: cx.intr("llvm.pow", x, y), cuda="pow({0}, {1})",
        grad=lambda g, x, y, r, adj: (
            g.mul(adj, g.mul(y, g.pow(x, g.sub(y, one(g, y))))),
            g.mul(adj, g.where(g.gt(x, g.zeros(x.type)), g.mul(r, g.log(x)),
                               g.zeros(x.type)))))


builtin("and_", [sig("B", "B", ret=bool_)], lambda a, b: np.bool_(a and b),
        llvm=lambda cx, a, b: cx.b.and_(a, b), cuda="({0} && {1})", differentiable=False)


def _lerp_ref(a, b, t):
    return (a * (t.dtype.type(1) - t) + b * t).astype(np.result_type(a, t)) if np.ndim(a) \
        else a * (t.dtype.type(1) - t) + b * t


def _lerp_grad(g, a, b, t, r, adj):
    s = g.sub(one(g, t), t)
    return g.mul(adj, s), g.mul(adj, t), g.inner(adj, g.sub(b, a))


builtin("lerp", [sig("F", "F", "F", ret="T"), sig("FV", "FV", "F", ret="V"),
                 sig("FM", "FM", "F", ret="M")], _lerp_ref,
        llvm=lambda cx, a, b, t: cx.lerp(a, b, t), cuda="lerp({0}, {1}, {2})",
        grad=_lerp_grad)


def _smoothstep_ref(e0, e1, x):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.fmin(np.fmax((x - e0) / (e1 - e0), 0), 1)  # a NaN t becomes 0, as Warp
    return x.dtype.type(t * t * (3 - 2 * t))


def _smoothstep_grad(g, e0, e1, x, r, adj):
    # r = t^2 (3 - 2t), t = clamp((x - e0) / (e1 - e0)); dr/dt = 6 t (1 - t)
    w = g.sub(e1, e0)
    t_raw = g.div(g.sub(x, e0), w)
    inside = g.and_(g.gt(t_raw, g.zeros(x.type)), g.lt(t_raw, one(g, x)))
    drdt = g.mul(g.const(6.0, x.type), g.mul(t_raw, g.sub(one(g, x), t_raw)))
    slope = g.div(g.mul(adj, drdt), w)
    # t depends on e0 through -(1 - t)/w and on e1 through -t/w; each selected by `inside`
    # (not multiplied by a zero dx: with e0 == e1, t_raw is infinite and 0 * inf is NaN)
    zero = g.zeros(x.type)
    de0 = g.where(inside, g.neg(g.mul(slope, g.sub(one(g, x), t_raw))), zero)
    de1 = g.where(inside, g.neg(g.mul(slope, t_raw)), zero)
    return de0, de1, g.where(inside, slope, zero)


builtin("smoothstep", [sig("F", "F", "F", ret="T")], _smoothstep_ref,
        llvm=lambda cx, e0, e1, x: cx.smoothstep(e0, e1, x), cuda="smoothstep({0}, {1}, {2})",
        grad=_smoothstep_grad)
