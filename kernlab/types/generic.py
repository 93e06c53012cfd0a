"""Constrained generic scalars (Warp's ``Int``, ``Float`` and ``Scalar``) and
``is_generic``, which tells a generic pattern from a concrete type.

Part of kernlab.types, which re-exports every name here (and names its classes' module).
"""
from __future__ import annotations

from .arrays import ArrayType, Tile
from .scalars import ANY, FLOATS, INTS, Type
from .vectors import Matrix, Vector


class ScalarSet(Type):
    """A constrained generic scalar in an annotation, Warp's ``wp.Int``, ``wp.Float`` and
    ``wp.Scalar``: like ``Any`` it takes the argument's type, but only one of ``members``.
    It may stand alone or as the dtype of a vector, matrix or array pattern
    (``vector(3, kl.Int)``, ``array(dtype=kl.Float)``). A Python int argument is int32, a
    float float32, as everywhere else."""

    def __init__(self, name: str, members: tuple, doc: str):
        self.name, self.members = name, tuple(members)
        self._doc = doc

    def accepts(self, t) -> bool:
        """Whether the concrete type t is one of the members."""
        return t in self.members

    def __reduce__(self):  # pickled and copied by name: there is one of each
        return (_scalar_set_named, (self.name,))

    def __repr__(self):
        return self.name

    __str__ = __repr__


Int = ScalarSet("Int", INTS, "any integer scalar type (int8 .. uint64; a Python int is int32)")
Float = ScalarSet("Float", FLOATS, "any floating-point scalar type (float16, bfloat16, float32, "
                  "float64; a Python float is float32)")
GenericScalar = ScalarSet("Scalar", INTS + FLOATS, "any integer or floating-point scalar "
                          "type, not bool")
SCALAR_SETS = {s.name: s for s in (Int, Float, GenericScalar)}


def _scalar_set_named(name: str) -> ScalarSet:
    return SCALAR_SETS[name]


def is_generic(t) -> bool:
    """Whether a type still has an ``Any`` or a constrained generic (``Int``, ``Float``,
    ``Scalar``) in it (a generic parameter)."""
    if t is ANY or isinstance(t, ScalarSet):
        return True
    if isinstance(t, Vector) and t.length is ANY:
        return True
    if isinstance(t, Tile):
        return t.tile_shape is ANY or is_generic(t.dtype)
    if isinstance(t, (ArrayType, Vector, Matrix)):
        return is_generic(t.dtype)
    return False
