"""Reverse-mode automatic differentiation as an IR-to-IR transform."""
from .reverse import reverse_mode

__all__ = ["reverse_mode"]
