"""The builtin registry: every function a kernel can call, one record each."""
from . import (approx, core, linalg, math, random, scalars, spatial, special, tiles,  # noqa: F401
               tile_ops)
from .registry import REGISTRY, Builtin, sig

__all__ = ["REGISTRY", "Builtin", "sig", "lookup"]


def lookup(name: str) -> Builtin | None:
    return REGISTRY.get(name)
