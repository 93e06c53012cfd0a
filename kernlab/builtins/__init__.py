"""The builtin registry: every function a kernel can call, one record each."""
from . import (approx, bits, core, decompositions, linalg, math, matrices,  # noqa: F401
               random, scalars, spatial, special, tiles, tile_ops)
from .registry import REGISTRY, Builtin, sig

__all__ = ["REGISTRY", "Builtin", "sig", "lookup"]


def lookup(name: str) -> Builtin | None:
    return REGISTRY.get(name)
