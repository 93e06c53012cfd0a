"""The builtin registry: every function a kernel can call, one record each."""
from . import core, linalg, math, random, scalars, spatial, special, tiles, tile_ops  # noqa: F401
from .registry import REGISTRY, Builtin, sig

__all__ = ["REGISTRY", "Builtin", "sig", "lookup"]


def lookup(name: str) -> Builtin | None:
    return REGISTRY.get(name)
