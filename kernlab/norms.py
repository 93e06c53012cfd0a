"""Vector norms as kernel functions (Warp's wp.norm_l1, norm_l2, norm_huber,
norm_pseudo_huber, smooth_normalize): generic over the vector type, differentiated through
their bodies like any @kl.func."""
from typing import Any

from .kernel import func
from .lang import FUNCTIONS

_abs, _dot, _length, _sqrt = (FUNCTIONS[n] for n in ("abs", "dot", "length", "sqrt"))


@func
def norm_l1(v: Any):
    """sum_i |v_i|"""
    total = v[0] - v[0]
    for i in range(len(v)):
        total = total + _abs(v[i])
    return total


@func
def norm_l2(v: Any):
    """sqrt(sum_i v_i^2)"""
    return _length(v)


@func
def norm_huber(v: Any, delta: float = 1.0):
    """|v|^2 / 2 inside the delta ball, delta (|v| - delta / 2) outside it."""
    sq = _dot(v, v)
    if sq <= delta * delta:
        return 0.5 * sq
    return delta * (_sqrt(sq) - 0.5 * delta)


@func
def norm_pseudo_huber(v: Any, delta: float = 1.0):
    """delta sqrt(1 + |v|^2 / delta^2)"""
    sq = _dot(v, v)
    return delta * _sqrt(1.0 + sq / (delta * delta))


@func
def smooth_normalize(v: Any, delta: float = 1.0):
    """v / norm_pseudo_huber(v, delta): like normalize, smooth through v = 0."""
    return v / norm_pseudo_huber(v, delta)
