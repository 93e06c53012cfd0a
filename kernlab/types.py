"""Scalar, vector, matrix and array types: plain data, shared by every stage.

Type objects are callable in Python the way Warp's are: ``float32(1.5)`` gives a NumPy
scalar, ``vec3(1, 2, 3)`` a NumPy array of shape (3,), ``mat22(...)`` one of shape (2, 2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class Type:
    """Base of all kernel types."""

    is_scalar = is_vector = is_matrix = is_array = False

    @property
    def is_float(self) -> bool:
        return False

    @property
    def scalar(self) -> "Scalar":
        """The element scalar type (the type itself for scalars)."""
        raise TypeError(f"{self} has no scalar element type")


@dataclass(frozen=True)
class Scalar(Type):
    name: str
    kind: str  # 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
    bits: int

    is_scalar = True

    @property
    def np(self) -> np.dtype:
        return np.dtype({"f": f"float{self.bits}", "i": f"int{self.bits}",
                         "u": f"uint{self.bits}", "b": "bool"}[self.kind])

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def scalar(self) -> "Scalar":
        return self

    @property
    def nbytes(self) -> int:
        return 1 if self.kind == "b" else self.bits // 8

    @property
    def shape(self) -> tuple:
        return ()

    def __call__(self, x=0):
        return self.np.type(x)

    def __repr__(self):
        return self.name

    __str__ = __repr__


float32 = Scalar("float32", "f", 32)
float64 = Scalar("float64", "f", 64)
int32 = Scalar("int32", "i", 32)
int64 = Scalar("int64", "i", 64)
uint32 = Scalar("uint32", "u", 32)
bool_ = Scalar("bool", "b", 8)
SCALARS = (float32, float64, int32, int64, uint32, bool_)
FLOATS = (float32, float64)
INTS = (int32, int64, uint32)


@dataclass(frozen=True)
class Vector(Type):
    length: int
    dtype: Scalar

    is_vector = True

    @property
    def scalar(self) -> Scalar:
        return self.dtype

    @property
    def is_float(self) -> bool:
        return self.dtype.is_float

    @property
    def shape(self) -> tuple:
        return (self.length,)

    @property
    def nbytes(self) -> int:
        return self.length * self.dtype.nbytes

    def __call__(self, *args):
        return _construct(self, args)

    def __repr__(self):
        suffix = {float32: "", float64: "d"}.get(self.dtype)
        if suffix is not None and 2 <= self.length <= 4:
            return f"vec{self.length}{suffix}"
        return f"vector({self.length}, {self.dtype})"

    __str__ = __repr__


@dataclass(frozen=True)
class Matrix(Type):
    rows: int
    cols: int
    dtype: Scalar

    is_matrix = True

    @property
    def scalar(self) -> Scalar:
        return self.dtype

    @property
    def is_float(self) -> bool:
        return self.dtype.is_float

    @property
    def shape(self) -> tuple:
        return (self.rows, self.cols)

    @property
    def length(self) -> int:
        return self.rows * self.cols

    @property
    def nbytes(self) -> int:
        return self.length * self.dtype.nbytes

    def __call__(self, *args):
        return _construct(self, args)

    def __repr__(self):
        suffix = {float32: "", float64: "d"}.get(self.dtype)
        if suffix is not None and self.rows == self.cols and 2 <= self.rows <= 4:
            return f"mat{self.rows}{self.cols}{suffix}"
        return f"matrix(({self.rows}, {self.cols}), {self.dtype})"

    __str__ = __repr__


@dataclass(frozen=True)
class ArrayType(Type):
    dtype: Type  # Scalar, Vector or Matrix
    ndim: int

    is_array = True

    def __repr__(self):
        return f"array({self.dtype}, ndim={self.ndim})"

    __str__ = __repr__


def _construct(t, args):
    """Python-side value of a vector/matrix type: a NumPy array of its shape and dtype."""
    if len(args) == 0:
        return np.zeros(t.shape, t.dtype.np)
    if len(args) == 1:
        a = np.asarray(args[0], dtype=t.dtype.np)
        if a.ndim == 0:
            return np.full(t.shape, a, t.dtype.np)
        return a.reshape(t.shape).copy()
    return np.array(args, dtype=t.dtype.np).reshape(t.shape)


def vector(length: int, dtype=float32) -> Vector:
    return Vector(int(length), to_type(dtype))


def matrix(shape, dtype=float32) -> Matrix:
    rows, cols = shape
    return Matrix(int(rows), int(cols), to_type(dtype))


vec2, vec3, vec4 = (Vector(n, float32) for n in (2, 3, 4))
vec2d, vec3d, vec4d = (Vector(n, float64) for n in (2, 3, 4))
mat22, mat33, mat44 = (Matrix(n, n, float32) for n in (2, 3, 4))
mat22d, mat33d, mat44d = (Matrix(n, n, float64) for n in (2, 3, 4))


_PY_TYPES = {float: float32, int: int32, bool: bool_}
_NP_TYPES = {s.np: s for s in SCALARS}


def to_type(t) -> Type:
    """Normalise an annotation or dtype argument to a kernlab Type (float -> float32 ...)."""
    if isinstance(t, Type):
        return t
    if t in _PY_TYPES:
        return _PY_TYPES[t]
    try:
        return _NP_TYPES[np.dtype(t)]
    except (TypeError, KeyError):
        raise TypeError(f"{t!r} is not a kernlab type") from None


def strides_from_shape(shape, dtype) -> tuple:
    """Byte strides of a C-ordered array of this shape and element type (Warp's helper)."""
    t = to_type(dtype)
    step = t.scalar.np.itemsize * int(np.prod(t.shape, dtype=np.int64))
    strides = []
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= int(n)
    return tuple(reversed(strides))


def type_of_numpy(a: np.ndarray, dtype: Type | None = None) -> tuple[Type, tuple]:
    """The element type and array shape that a NumPy array maps to (for vector dtypes the
    trailing axes are the element's)."""
    if dtype is None:
        return to_type(a.dtype), a.shape
    inner = dtype.shape
    if inner and a.shape[a.ndim - len(inner):] != inner:
        raise ValueError(f"data of shape {a.shape} does not end in {inner} for dtype {dtype}")
    return dtype, a.shape[: a.ndim - len(inner)]
