"""What ``help()`` and the documentation say about each type object: ``kl.vec3.__doc__``
describes vec3, while the classes keep their own docstrings.

Part of kernlab.types, which imports it last (it sets the docstrings of the type classes).
"""
from __future__ import annotations

from .generic import ScalarSet
from .scalars import Scalar, Type
from .vectors import Matrix, Quaternion, Transformation, Vector


_KIND_WORDS = {"f": "floating-point", "i": "signed integer", "u": "unsigned integer",
               "b": "boolean"}


def describe_type(t: Type) -> str:
    """A type object's own docstring: ``kl.vec3.__doc__`` says what vec3 is."""
    if isinstance(t, Scalar):
        if t.kind == "b":
            what = "bool: the boolean scalar type (stored as one byte)"
        else:
            what = f"{t.name}: the {t.bits}-bit {_KIND_WORDS[t.kind]} scalar type"
        if t.name == "bfloat16":
            what = ("bfloat16: the 16-bit brain floating-point scalar type (8 exponent bits, "
                    "7 mantissa bits; computed in float32, rounded to nearest even)")
        return (f"{what}. An annotation and a cast in kernels; in Python, {t.name}(x) gives "
                f"a NumPy scalar. Warp: wp.{t.name}.")
    if isinstance(t, ScalarSet):
        return (f"{t.name}: a generic annotation for {t._doc}, alone or as the dtype of a "
                f"vector, matrix or array; a func or kernel takes the argument's type. "
                f"Warp: wp.{t.name}.")
    if isinstance(t, Quaternion):
        return (f"{t!r}: a quaternion (x, y, z, w) of {t.dtype}; * is the Hamilton product. "
                f"Warp: wp.{t!r}.")
    if isinstance(t, Transformation):
        return (f"{t!r}: a rigid transform of {t.dtype} (translation vec3, rotation quat); * "
                f"composes. Warp: wp.{t!r}.")
    warp = f" Warp: wp.{t!r}." if repr(t).isidentifier() else ""
    if isinstance(t, Vector):
        return (f"{t!r}: a vector of {t.length} {t.dtype}, built from {t.length} scalars or "
                f"one; in Python a NumPy array of shape ({t.length},).{warp}")
    if isinstance(t, Matrix):
        return (f"{t!r}: a {t.rows}x{t.cols} matrix of {t.dtype}, built from {t.rows * t.cols}"
                f" scalars or {t.rows} row vectors; in Python a NumPy array of shape "
                f"({t.rows}, {t.cols}).{warp}")
    return type(t).__dict__.get("_class_doc") or ""


class _DocPerInstance:
    """A class's ``__doc__`` that describes each instance: the class keeps its own docstring,
    while ``kl.vec3.__doc__`` (an instance) is ``describe_type(kl.vec3)``."""

    def __init__(self, class_doc, describe):
        self.class_doc = class_doc
        self.describe = describe

    def __get__(self, obj, owner=None):
        return self.class_doc if obj is None else self.describe(obj)


Scalar.__doc__ = "A scalar type: float16/32/64, the signed and unsigned integers, bool."
Vector.__doc__ = "A vector type: a length and a scalar dtype (vec3 is Vector(3, float32))."
Matrix.__doc__ = "A matrix type: rows, columns and a scalar dtype (mat33 is 3x3 float32)."
for _cls in (Scalar, Vector, Matrix, Quaternion, Transformation, ScalarSet):
    _cls.__doc__ = _DocPerInstance(_cls.__doc__, describe_type)
del _cls
