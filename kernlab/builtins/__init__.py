"""The builtin registry: every function a kernel can call, one record each."""
from . import core, linalg, math, scalars, spatial, special  # noqa: F401  (importing registers the records)
from .registry import REGISTRY, Builtin, sig

__all__ = ["REGISTRY", "Builtin", "sig", "lookup"]


def lookup(name: str) -> Builtin | None:
    return REGISTRY.get(name)
