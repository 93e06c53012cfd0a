"""Warp's "approximate" arithmetic: ``div_approx``.

On a GPU Warp may lower these to fast hardware approximations; on the CPU it divides
exactly. kernlab divides exactly everywhere (CPU and CUDA), which is within any accuracy
the approximate forms promise, so each is an expansion over ``div`` and its derivative
is ``div``'s.
"""
from __future__ import annotations

from .expand import expansion

PUBLIC = ["div_approx"]  # kl.div_approx (lang.py exports these)

for _a, _b in (("float", "float"), ("vector", "float"), ("float", "vector"),
               ("matrix", "float"), ("float", "matrix")):
    def _div_approx(g, a, b):
        return g.div(a, b)
    expansion("div_approx", (_a, _b), _a if _a != "float" else _b)(_div_approx)
