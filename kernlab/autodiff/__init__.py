"""Automatic differentiation as IR-to-IR transforms: reverse mode (adjoint kernels) and
forward mode (tangent kernels)."""
from .forward import tangent_mode
from .reverse import reverse_mode

__all__ = ["reverse_mode", "tangent_mode"]
