"""Automatic differentiation as IR-to-IR transforms: reverse mode (adjoint kernels) and
forward mode (tangent kernels).

The transforms are imported on first use: a launch needs only the in-place bookkeeping
(inplace.py), and a warm start whose adjoint IR comes from the cache (runtime/ir_cache.py)
never builds one."""

__all__ = ["reverse_mode", "tangent_mode"]


def __getattr__(name):
    if name == "reverse_mode":
        from .reverse import reverse_mode
        return reverse_mode
    if name == "tangent_mode":
        from .forward import tangent_mode
        return tangent_mode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
