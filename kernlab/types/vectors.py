"""Vectors, matrices, quaternions and transforms: their types and Python-side values.

The type classes (``Vector``, ``Matrix``, ``Quaternion``, ``Transformation``), the value
class ``Value`` their calls return in Python, the factories (``vector``, ``matrix``,
``quaternion``, ``transformation``) that give one object per type, and the named types
(vec2b .. vec4ul, mat22h .. mat44d, quat, transform, spatial_vector ...).

Part of kernlab.types, which re-exports every name here (and names its classes' module).
"""
from __future__ import annotations

import math
import typing
from dataclasses import dataclass

import numpy as np

from .scalars import ANY, SUFFIX, Scalar, Type, float16, float32, float64, to_type


def _literal(x):
    """``Literal[3]`` as 3 (a bare value as itself)."""
    if typing.get_origin(x) is typing.Literal:
        args = typing.get_args(x)
        if len(args) != 1:
            raise TypeError(f"Expected a single Literal value, got Literal{list(args)}")
        return args[0]
    return x


def _extent(what: str, x) -> int:
    n = _literal(x)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise TypeError(f"{what} must be a positive integer, got {n!r}")
    return int(n)


@dataclass(frozen=True)
class Vector(Type):
    length: int
    dtype: Scalar

    is_vector = True
    _wp_generic_type_str_ = "vec_t"  # Warp's name for the family (code that checks it)

    def __class_getitem__(cls, params):
        """``Vector[dtype, Literal[n]]`` (or a bare n): the vector type, as
        ``vector(n, dtype)`` gives it."""
        if not isinstance(params, tuple) or len(params) != 2:
            got = len(params) if isinstance(params, tuple) else 1
            raise TypeError(f"Vector requires 2 parameters (dtype, length), got {got}")
        return vector(_extent("Vector length", params[1]), params[0])

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

    # Warp's class attributes: element type, shape, number of components
    _type_ = property(lambda self: self.dtype)
    _wp_scalar_type_ = property(lambda self: self.dtype)
    _shape_ = property(lambda self: self.shape)
    _length_ = property(lambda self: self.length)

    @property
    def __name__(self) -> str:
        return f"vec{self.length}{SUFFIX.get(self.dtype, self.dtype.name)}"

    def __call__(self, *args):
        return _construct(self, args)

    def __instancecheck__(self, x) -> bool:
        return _is_value_of(self, x)

    def __repr__(self):
        suffix = {float32: "", float64: "d"}.get(self.dtype)
        if suffix is not None and 2 <= self.length <= 4:
            return f"vec{self.length}{suffix}"
        if self.dtype in SUFFIX and 2 <= self.length <= 4:
            return self.__name__
        return f"vector({self.length}, {self.dtype})"

    __str__ = __repr__


@dataclass(frozen=True)
class Matrix(Type):
    rows: int
    cols: int
    dtype: Scalar

    is_matrix = True
    _wp_generic_type_str_ = "mat_t"

    def __class_getitem__(cls, params):
        """``Matrix[dtype, Literal[rows], Literal[cols]]``: as ``matrix((rows, cols),
        dtype)``."""
        if not isinstance(params, tuple) or len(params) != 3:
            got = len(params) if isinstance(params, tuple) else 1
            raise TypeError(f"Matrix requires 3 parameters (dtype, rows, cols), got {got}")
        return matrix((_extent("Matrix rows", params[1]), _extent("Matrix cols", params[2])),
                      params[0])

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

    _type_ = property(lambda self: self.dtype)
    _wp_scalar_type_ = property(lambda self: self.dtype)
    _shape_ = property(lambda self: self.shape)
    _length_ = property(lambda self: self.length)

    @property
    def __name__(self) -> str:
        return f"mat{self.rows}{self.cols}{SUFFIX.get(self.dtype, self.dtype.name)}"

    def __call__(self, *args):
        return _construct(self, args)

    def __instancecheck__(self, x) -> bool:
        return _is_value_of(self, x)

    def __repr__(self):
        suffix = {float32: "", float64: "d"}.get(self.dtype)
        if suffix is not None and self.rows == self.cols and 2 <= self.rows <= 4:
            return f"mat{self.rows}{self.cols}{suffix}"
        if self.dtype in SUFFIX and self.rows == self.cols and 2 <= self.rows <= 4:
            return self.__name__
        return f"matrix(({self.rows}, {self.cols}), {self.dtype})"

    __str__ = __repr__


@dataclass(frozen=True)
class Quaternion(Vector):
    """A quaternion (x, y, z, w): a 4-vector whose ``*`` is the Hamilton product."""

    def __class_getitem__(cls, dtype):  # Quaternion[float32]: quaternion(float32)
        return quaternion(dtype)

    def __call__(self, *args):
        from ..spatial_values import quaternion_value
        return quaternion_value(self, args)

    @property
    def __name__(self) -> str:
        return f"quat{SUFFIX.get(self.dtype, self.dtype.name)}"

    def __repr__(self):
        return "quat" + _SPATIAL_SUFFIX.get(self.dtype.name, f"[{self.dtype}]")

    __str__ = __repr__


@dataclass(frozen=True)
class Transformation(Vector):
    """A rigid transform (p, q): translation vec3 then rotation quaternion, 7 components.
    ``*`` composes transforms. In Python, ``transform()`` is the identity (as in Warp)."""

    def __class_getitem__(cls, dtype):  # Transformation[float32]: transformation(float32)
        return transformation(dtype)

    def __call__(self, *args, **kwargs):
        from ..spatial_values import transform_value
        return transform_value(self, args, kwargs)

    @property
    def __name__(self) -> str:
        return f"transform{SUFFIX.get(self.dtype, self.dtype.name)}"

    def __repr__(self):
        return "transform" + _SPATIAL_SUFFIX.get(self.dtype.name, f"[{self.dtype}]")

    __str__ = __repr__


_SPATIAL_SUFFIX = {"float32": "", "float64": "d", "float16": "h"}


class Value(np.ndarray):
    """A vector or matrix value on the Python side (what ``vec3(1, 2, 3)`` returns): a NumPy
    array of the type's shape, with Warp's manners: ``v.x`` .. ``v.w``, ``==`` compares the
    whole value (a shape mismatch is unequal), and ``str`` prints a Python list."""

    def __eq__(self, other):
        try:
            b = np.asarray(other)
        except Exception:  # noqa: BLE001 - anything that is no array is unequal
            return False
        a = np.asarray(self)
        return a.shape == b.shape and bool(np.all(a == b))

    def __ne__(self, other):
        return not self.__eq__(other)

    # % is C's fmod, as in kernels (NumPy's % would floor)
    def __mod__(self, other):
        return np.fmod(self, other)

    def __rmod__(self, other):
        return np.fmod(other, self)

    def __imod__(self, other):
        self[...] = np.fmod(self, other)
        return self

    # * with a matrix on either side and a vector or matrix on the other is the matrix
    # product, as in kernels and Warp (M * v = M v, v * M = v^T M); otherwise element-wise
    def __mul__(self, other):
        if isinstance(other, Value) and 2 in (self.ndim, other.ndim):
            return np.matmul(self, other)
        return np.ndarray.__mul__(self, other)

    def __rmul__(self, other):
        if isinstance(other, Value) and 2 in (self.ndim, other.ndim):
            return np.matmul(other, self)
        return np.ndarray.__rmul__(self, other)

    def __imul__(self, other):
        if isinstance(other, Value) and 2 in (self.ndim, other.ndim):
            return np.matmul(self, other)  # a new value, as Warp (the shape may change)
        return np.ndarray.__imul__(self, other)

    __hash__ = None

    def __repr__(self):  # Warp's: vec3f([1.0, 2.0, 3.0]), quatf([...])
        if self.ndim not in (1, 2):
            return super().__repr__()
        name = self._type_name() if type(self) is Value else type(self).__name__
        return f"{name}({np.asarray(self).tolist()})"

    def __str__(self):
        a = np.asarray(self)
        if a.ndim == 2:
            return "[" + ",\n ".join(str(row.tolist()) for row in a) + "]"
        return str(a.tolist())


    def _type_name(self) -> str:
        """Warp's name of the value's type (vec3f, mat22d ...) for messages."""
        shape, dt = np.shape(self), to_type(self.dtype)
        t = Vector(shape[0], dt) if len(shape) == 1 else \
            Matrix(shape[0], shape[1], dt) if len(shape) == 2 else None
        return getattr(t, "__name__", type(self).__name__)

    def _no_attribute(self, name):
        return AttributeError(f"'{self._type_name()}' object has no attribute '{name}'")

    def __getattr__(self, name):
        raise self._no_attribute(name)

    def __setattr__(self, name, value):
        # a swizzle or a component past the end is no attribute (Warp); other names may be set
        if name and set(name) <= set("xyzw") and (
                len(name) > 1 or self.ndim != 1 or "xyzw".index(name) >= len(self)):
            raise self._no_attribute(name)
        object.__setattr__(self, name, value)


def _component(k):
    def get(self):
        if self.ndim != 1 or k >= len(self):
            raise self._no_attribute("xyzw"[k])
        return self[k]

    def put(self, value):
        self[k] = value
    return property(get, put)


for _k, _name in enumerate("xyzw"):
    setattr(Value, _name, _component(_k))


def _is_value_of(t, x) -> bool:
    """``isinstance(x, kl.vec3)``: x is a vector/matrix value (what ``kl.vec3(...)`` gives)
    of t's shape and scalar type. (A quaternion or transform is its own type.)"""
    if not isinstance(x, Value) or x.shape != t.shape:
        return False
    try:
        return x.dtype == t.dtype.np
    except TypeError:
        return False


def _wrapped(values, np_dtype) -> np.ndarray:
    """values as an array of np_dtype; Python integers out of an integer type's range wrap
    around (uint16 from -2 is 65534), as C's conversions and Warp's constructors do."""
    try:
        return np.asarray(values, dtype=np_dtype)
    except OverflowError:
        np_dtype = np.dtype(np_dtype)
        if np_dtype.kind not in "iu":
            raise
        bits = np_dtype.itemsize * 8
        unsigned = np.asarray(np.asarray(values, dtype=object) % (1 << bits),
                              dtype=np.dtype(f"u{np_dtype.itemsize}"))
        return unsigned.view(np_dtype)


def _construct(t, args):
    """Python-side value of a vector/matrix type: a Value of its shape and dtype."""
    if len(args) == 0:
        out = np.zeros(t.shape, t.dtype.np)
    elif len(args) == 1:
        a = _wrapped(args[0], t.dtype.np)
        out = np.full(t.shape, a, t.dtype.np) if a.ndim == 0 else _shaped(t, a).copy()
    else:
        out = _shaped(t, np.array(_wrapped(args, t.dtype.np)))
    return out.view(Value)


def _shaped(t, a: np.ndarray) -> np.ndarray:
    """a's values in t's shape, or Warp's ValueError naming the count expected."""
    if a.size != math.prod(t.shape):
        kind = "vector" if len(t.shape) == 1 else "matrix"
        raise ValueError(f"Invalid number of arguments in {kind} constructor "
                         f"{getattr(t, '__name__', t)}(...), expected {math.prod(t.shape)} "
                         f"elements, got {a.size}")
    return a.reshape(t.shape)


_CANONICAL: dict = {}


def canonical(t: Type) -> Type:
    """The one object of a vector/matrix/quaternion/transform type: the factories give the
    same object for the same type (``vector(3, float32) is vec3``), as Warp's do."""
    try:
        return _CANONICAL.setdefault(t, t)
    except TypeError:  # unhashable (a pattern holding something odd): as it is
        return t


def vector(length: int, dtype=float32) -> Vector:
    """The vector type of that length and dtype; ``length=Any`` makes a generic pattern."""
    return canonical(Vector(ANY if length is typing.Any else int(length), to_type(dtype)))


def matrix(shape, dtype=float32) -> Matrix:
    """The matrix type of that (rows, cols) shape and dtype; an ``Any`` extent makes a
    generic pattern."""
    if any(n is typing.Any or n is ANY for n in shape):
        return ANY  # generic, like vector(Any, ...)
    if len(shape) != 2:
        raise ValueError(f"Matrix shape must have exactly two dimensions, got {len(shape)} "
                         f"dimension{'s' if len(shape) != 1 else ''} in shape {tuple(shape)}")
    rows, cols = shape
    return canonical(Matrix(int(rows), int(cols), to_type(dtype)))


# The named types: vec2b .. vec4ul for every scalar, mat22h .. mat44d for every float.
NAMED: dict = {}
for _s, _suffix in SUFFIX.items():
    for _n in (2, 3, 4):
        NAMED[f"vec{_n}{_suffix}"] = Vector(_n, _s)
        if _s.is_float:
            NAMED[f"mat{_n}{_n}{_suffix}"] = Matrix(_n, _n, _s)
globals().update(NAMED)
for _t in NAMED.values():
    canonical(_t)
vec2, vec3, vec4 = vec2f, vec3f, vec4f  # noqa: F821 (defined just above)
mat22, mat33, mat44 = mat22f, mat33f, mat44f  # noqa: F821
NAMED.update(vec2=vec2, vec3=vec3, vec4=vec4, mat22=mat22, mat33=mat33, mat44=mat44)
vector_types = tuple(NAMED.values())


def quaternion(*args, dtype=None):
    """``quaternion(dtype)`` is the type; ``quaternion(x, y, z, w, dtype=...)`` a value."""
    if len(args) == 1 and dtype is None and _is_type(args[0]):
        return canonical(Quaternion(4, to_type(args[0])))
    t = Quaternion(4, to_type(dtype) if dtype is not None else float32)
    return t(*args) if args else t


def transformation(*args, dtype=None):
    """``transformation(dtype)`` is the type; ``transformation(p, q, dtype=...)`` a value."""
    if len(args) == 1 and dtype is None and _is_type(args[0]):
        return canonical(Transformation(7, to_type(args[0])))
    t = Transformation(7, to_type(dtype) if dtype is not None else float32)
    return t(*args) if args else t


def _is_type(x) -> bool:
    try:
        to_type(x)
    except (TypeError, ValueError, KeyError):
        return False
    return True


quat = quatf = canonical(Quaternion(4, float32))
quath, quatd = canonical(Quaternion(4, float16)), canonical(Quaternion(4, float64))
transform = transformf = canonical(Transformation(7, float32))
transformh, transformd = canonical(Transformation(7, float16)), \
    canonical(Transformation(7, float64))
spatial_vector = spatial_vectorf = Vector(6, float32)
spatial_vectorh, spatial_vectord = Vector(6, float16), Vector(6, float64)
spatial_matrix = spatial_matrixf = Matrix(6, 6, float32)
spatial_matrixh, spatial_matrixd = Matrix(6, 6, float16), Matrix(6, 6, float64)
