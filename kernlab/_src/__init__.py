"""Warp's ``wp._src`` namespace, for code that reaches into it: ``wp._src.types`` is
kernlab.types."""
from .. import types  # noqa: F401
