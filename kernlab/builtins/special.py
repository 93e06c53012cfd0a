"""The error function family: erf, erfc, erfinv, erfcinv.

erf and erfc come from the C math library. erfinv has no libm function: the CPU code
starts from Giles' polynomial approximation ("Approximating the erfinv function", 2010)
and takes two Newton steps on erf(r) = x, all in double precision, then rounds to the
argument's type. The NumPy reference solves erf(r) = x by bisection instead, so the two
are independent. erfcinv(y) is erfinv(1 - y).
"""
from __future__ import annotations

import math

from .llvm_ir import ir

from .registry import builtin, sig

_FLOAT1 = [sig("F", ret="T")]
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0

# Giles' single-precision coefficients, highest order first: central (w < 5) and tail.
_CENTRAL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
            0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_TAIL = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _erfinv_ref(x: float) -> float:
    """erf(r) = x by bisection in float64 (|x| >= 1 gives +-inf, or NaN beyond)."""
    x = float(x)
    if math.isnan(x) or abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    lo, hi = -6.0, 6.0  # erf(+-6) is +-1 in float64
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if math.erf(mid) < x:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _vec(fn):
    return lambda x: x.dtype.type(fn(float(x)))


def _erfinv_llvm(cx, x, complement=False):
    b, d = cx.b, ir.DoubleType()
    ty = x.type
    xd = cx.float_convert(x, d)
    one = ir.Constant(d, 1.0)
    if complement:
        xd = b.fsub(one, xd)
    w = b.fneg(cx.libm("log", b.fmul(b.fsub(one, xd), b.fadd(one, xd))))

    def poly(coeffs, t):
        p = ir.Constant(d, coeffs[0])
        for c in coeffs[1:]:
            p = b.fadd(ir.Constant(d, c), b.fmul(p, t))
        return p

    central = poly(_CENTRAL, b.fsub(w, ir.Constant(d, 2.5)))
    tail = poly(_TAIL, b.fsub(cx.intr("llvm.sqrt", w), ir.Constant(d, 3.0)))
    r0 = b.fmul(b.select(b.fcmp_ordered("<", w, ir.Constant(d, 5.0)), central, tail), xd)
    r = r0
    for _ in range(2):  # Newton on erf(r) - x
        slope = b.fmul(ir.Constant(d, _TWO_OVER_SQRT_PI),
                       cx.libm("exp", b.fneg(b.fmul(r, r))))
        r = b.fsub(r, b.fdiv(b.fsub(cx.libm("erf", r), xd), slope))
    edge = b.fcmp_unordered(">=", cx.intr("llvm.fabs", xd), one)  # +-1, beyond, NaN
    inf = b.select(b.fcmp_ordered("<", xd, ir.Constant(d, 0.0)), ir.Constant(d, -math.inf),
                   ir.Constant(d, math.inf))
    at_edge = b.select(b.fcmp_ordered("==", cx.intr("llvm.fabs", xd), one), inf,
                       ir.Constant(d, math.nan))
    out = b.select(edge, at_edge, r)
    return cx.float_convert(out, ty)


def _gauss(g, x):
    """2/sqrt(pi) exp(-x^2), the slope of erf."""
    return g.mul(g.const(_TWO_OVER_SQRT_PI, x.type), g.exp(g.neg(g.mul(x, x))))


builtin("erf", _FLOAT1, _vec(math.erf), llvm=lambda cx, x: cx.libm("erf", x),
        cuda="erf({0})", grad=lambda g, x, r, adj: (g.mul(adj, _gauss(g, x)),))
builtin("erfc", _FLOAT1, _vec(math.erfc), llvm=lambda cx, x: cx.libm("erfc", x),
        cuda="erfc({0})", grad=lambda g, x, r, adj: (g.neg(g.mul(adj, _gauss(g, x))),))


def _inv_slope(g, r):
    """sqrt(pi)/2 exp(r^2) = 1 / erf'(r), the slope of erfinv at erf(r)."""
    return g.mul(g.const(_SQRT_PI_OVER_2, r.type), g.exp(g.mul(r, r)))


builtin("erfinv", _FLOAT1, _vec(_erfinv_ref), llvm=_erfinv_llvm, cuda="kl_erfinv({0})",
        grad=lambda g, x, r, adj: (g.mul(adj, _inv_slope(g, r)),))
builtin("erfcinv", _FLOAT1, _vec(lambda y: _erfinv_ref(1.0 - y)),
        llvm=lambda cx, x: _erfinv_llvm(cx, x, complement=True), cuda="kl_erfcinv({0})",
        grad=lambda g, x, r, adj: (g.neg(g.mul(adj, _inv_slope(g, r))),))
