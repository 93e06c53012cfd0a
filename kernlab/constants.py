"""Math constants kernels may use by name (``kl.pi``, ``kl.inf`` ...), with Warp's names.

They are plain Python floats: in a kernel they take the float type of what they meet, as a
literal does.
"""
import math

E = e = math.e
LOG2E = log2e = 1.0 / math.log(2.0)
LOG10E = log10e = 1.0 / math.log(10.0)
LN2 = ln2 = math.log(2.0)
LN10 = ln10 = math.log(10.0)
PHI = phi = (1.0 + math.sqrt(5.0)) / 2.0
PI = pi = math.pi
HALF_PI = half_pi = math.pi / 2.0
TAU = tau = 2.0 * math.pi
INF = inf = math.inf
NAN = nan = math.nan

__all__ = ["E", "e", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10",
           "PHI", "phi", "PI", "pi", "HALF_PI", "half_pi", "TAU", "tau", "INF", "inf",
           "NAN", "nan"]
