"""Scalar, vector, matrix and array types: plain data, shared by every stage.

Type objects are callable in Python the way Warp's are: ``float32(1.5)`` gives a NumPy
scalar, ``vec3(1, 2, 3)`` a NumPy array of shape (3,), ``mat22(...)`` one of shape (2, 2).
"""
from __future__ import annotations

import ctypes
import math
import typing
from dataclasses import dataclass

import numpy as np


class Type:
    """Base of all kernel types."""

    is_scalar = is_vector = is_matrix = is_array = is_tile = False

    @property
    def is_float(self) -> bool:
        return False

    @property
    def scalar(self) -> "Scalar":
        """The element scalar type (the type itself for scalars)."""
        raise TypeError(f"{self} has no scalar element type")

    @property
    def __name__(self) -> str:  # Warp's type objects are classes: wp.vec3.__name__
        return repr(self)


@dataclass(frozen=True)
class Scalar(Type):
    name: str
    kind: str  # 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
    bits: int

    is_scalar = True

    @property
    def np(self) -> np.dtype:
        if self.name == "bfloat16":
            return _bfloat16_dtype()
        found = _NP_DTYPES.get((self.kind, self.bits))
        if found is None:  # (np.dtype parses its name: microseconds each, at every launch)
            found = _NP_DTYPES[self.kind, self.bits] = np.dtype(
                {"f": f"float{self.bits}", "i": f"int{self.bits}", "u": f"uint{self.bits}",
                 "b": "bool"}[self.kind])
        return found

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

    @property
    def _type_(self):
        """The ctypes type of one value (Warp's ``wp.int8._type_``; float16 is its bits)."""
        if self.kind == "f":
            return {16: ctypes.c_uint16, 32: ctypes.c_float, 64: ctypes.c_double}[self.bits]
        if self.kind == "b":
            return ctypes.c_bool
        return getattr(ctypes, f"c_{'u' if self.kind == 'u' else ''}int{self.bits}")

    _length_ = 1

    def __call__(self, x=0):
        if self.kind == "b":
            return BoolValue(x)
        if self.kind in "iu" and not isinstance(x, (np.ndarray, np.generic)):
            x = _wrap(int(x), self)  # wp.uint8(-1) == 255, as in C
        with np.errstate(over="ignore", invalid="ignore"):
            out = _value_class(self)(x)
        if self.kind == "f" and isinstance(x, (int, np.integer)) and not isinstance(x, bool) \
                and self.name != "bfloat16":
            out._given = int(x)  # shown as Warp shows it: float32(-1) prints -1
        return out

    def __instancecheck__(self, x) -> bool:
        """``isinstance(x, kl.float32)``: whether x is a value of this type, as Warp's
        type objects (classes) answer: what ``kl.float32(...)`` gives, a struct's field."""
        if self.kind == "b":
            return isinstance(x, BoolValue)
        try:
            return isinstance(x, _value_class(self))
        except TypeError:  # bfloat16 without ml_dtypes: no value can be one
            return False

    def __repr__(self):
        return self.name

    __str__ = __repr__


_NP_DTYPES: dict = {}  # (kind, bits) -> NumPy's dtype (Scalar.np)


def _bfloat16_dtype() -> np.dtype:
    """NumPy's bfloat16 dtype (from the ml_dtypes package, as Warp's ``.numpy()`` uses where
    it is installed): arrays store its 16 bits, and its arithmetic rounds every result to
    nearest even, as Warp's does."""
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("bfloat16 in kernlab needs the ml_dtypes package (pip install "
                        "ml_dtypes, or the kernlab[bfloat16] extra)") from None
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(t) -> bool:
    """Whether t is bfloat16 or a vector/matrix/array of it: its registers are float32
    (rounded to bfloat16 after every operation) and its memory 16 bits."""
    try:
        return t.scalar.name == "bfloat16"
    except (AttributeError, TypeError):  # not a type, or one without a scalar
        return False


def numpy_kind(dtype) -> str:
    """A NumPy dtype's kind letter, with ml_dtypes' bfloat16 (kind 'V') as the float it is."""
    dtype = np.dtype(dtype)
    return "f" if dtype.name == "bfloat16" else dtype.kind


_INT_VALUES: dict = {}


def _no_pow(self, *args):
    raise TypeError(f"'**' is not defined for {type(self).__name__} values (as in Warp: "
                    "raise floats to powers)")


def _is_kernel_array(x) -> bool:
    from .runtime.array import array  # lazily: types is below the runtime
    return isinstance(x, array)


def _defer_to_arrays(base, name):
    """``wp.float32(5) + a`` with a kernlab array a is the array's (a kernel, as in Warp),
    not NumPy's (which would compute on a host copy)."""
    op = getattr(base, name)

    def method(self, other):
        return NotImplemented if _is_kernel_array(other) else op(self, other)
    method.__name__ = name
    return method


_BINARY = ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__")


def _shown(self) -> str:
    """Warp's ``str`` of a scalar value: the number (an integer as an integer; a float made
    from a Python int as that int, since Warp keeps the number it was given)."""
    given = getattr(self, "_given", None)
    if given is not None and float(self) == given:
        return str(given)
    return str(self.item())


def _value_class(s: Scalar) -> type:
    """The Python-side value type of a scalar (what ``wp.int8(3)`` returns): the NumPy
    scalar with Warp's ``.value`` (the Python number), ``str`` and ``repr`` (``int8(-1)``);
    integers refuse ``**`` (Warp has no integer power)."""
    cls = _INT_VALUES.get(s.name)
    if cls is None and s.name == "bfloat16":  # ml_dtypes' scalar type cannot be subclassed
        cls = _INT_VALUES[s.name] = s.np.type
    if cls is None:
        body = {"__slots__": ("_given",) if s.is_float else (), "__module__": __name__,
                "value": property(lambda self: self.item(), doc="the Python number"),
                "__str__": _shown,
                "__repr__": lambda self: f"{type(self).__name__}({_shown(self)})"}
        body.update({n: _defer_to_arrays(s.np.type, n) for n in _BINARY})
        if s.is_int:
            body.update(__pow__=_no_pow, __rpow__=_no_pow)
        cls = type(s.name, (s.np.type,), body)
        _INT_VALUES[s.name] = cls
    return cls


class BoolValue:
    """A bool value on the Python side (what ``kl.bool_(x)`` returns), as Warp's: truthy
    like the number it was given, ``.value``, ``str`` True/False, ``repr`` bool(True); NumPy
    reads it as a NumPy bool (NumPy's bool type cannot be subclassed)."""

    __slots__ = ("value",)
    __module__ = __name__

    def __init__(self, x=False):
        self.value = x.value if isinstance(x, BoolValue) else x

    def __bool__(self) -> bool:
        return bool(self.value != 0)

    def __int__(self) -> int:
        return int(bool(self))

    __index__ = __int__

    def __float__(self) -> float:
        return float(bool(self))

    def __eq__(self, other):
        try:
            return bool(self) == bool(other)
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(bool(self))

    def __str__(self):
        return str(bool(self))

    def __repr__(self):
        return f"bool({self})"

    def __array__(self, dtype=None, copy=None):
        return np.asarray(bool(self), dtype=dtype or np.bool_)

    def item(self) -> bool:
        return bool(self)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.bool_)


def _wrap(value: int, s: Scalar) -> int:
    value &= (1 << s.bits) - 1
    return value - (1 << s.bits) if s.kind == "i" and value >> (s.bits - 1) else value


float16 = Scalar("float16", "f", 16)  # stored as half; arithmetic rounds to half per op
float32 = Scalar("float32", "f", 32)
float64 = Scalar("float64", "f", 64)
int8 = Scalar("int8", "i", 8)
uint8 = Scalar("uint8", "u", 8)
int16 = Scalar("int16", "i", 16)
uint16 = Scalar("uint16", "u", 16)
int32 = Scalar("int32", "i", 32)
uint32 = Scalar("uint32", "u", 32)
int64 = Scalar("int64", "i", 64)
uint64 = Scalar("uint64", "u", 64)
bool_ = Scalar("bool", "b", 8)
# Google's brain float: float32's 8 exponent bits, 7 mantissa bits; stored as 16 bits,
# computed in float32 and rounded to nearest even after every operation (as Warp does)
bfloat16 = Scalar("bfloat16", "f", 16)
BoolValue._kl_type = bool_  # the kernel type of a kl.bool_(...) argument
FLOATS = (float16, bfloat16, float32, float64)
INTS = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
SCALARS = FLOATS + INTS + (bool_,)
# Warp's names for the same tuples
float_types, int_types = FLOATS, INTS
scalar_types = INTS + FLOATS
scalar_and_bool_types = scalar_types + (bool_,)
non_atomic_types = (int8, uint8, int16, uint16)
# the suffix of the named vector/matrix types: vec3ub is a vector of 3 uint8
SUFFIX = {int8: "b", uint8: "ub", int16: "s", uint16: "us", int32: "i", uint32: "ui",
          int64: "l", uint64: "ul", float16: "h", float32: "f", float64: "d"}


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
        from .spatial_values import quaternion_value
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
        from .spatial_values import transform_value
        return transform_value(self, args, kwargs)

    @property
    def __name__(self) -> str:
        return f"transform{SUFFIX.get(self.dtype, self.dtype.name)}"

    def __repr__(self):
        return "transform" + _SPATIAL_SUFFIX.get(self.dtype.name, f"[{self.dtype}]")

    __str__ = __repr__


_SPATIAL_SUFFIX = {"float32": "", "float64": "d", "float16": "h"}


@dataclass(frozen=True)
class ArrayType(Type):
    dtype: Type  # Scalar, Vector or Matrix
    ndim: int

    is_array = True

    def __repr__(self):
        return f"array({self.dtype}, ndim={self.ndim})"

    __str__ = __repr__


@dataclass(frozen=True)
class IndexedArrayType(ArrayType):
    """Warp's ``indexedarray``: an array seen through one int32 index array per axis
    (``a[i]`` is ``data[idx0[i]]``). A kernel parameter of this type is flattened by the
    front end into the data array and one index array per axis (frontend/views.py
    ``Indexed``), so no backend knows the type; an axis the indexedarray does not index
    gets the identity index array at the launch."""

    def __repr__(self):
        return f"indexedarray({self.dtype}, ndim={self.ndim})"

    __str__ = __repr__


@dataclass(frozen=True)
class Tile(Type):
    """A tile: a fixed-shape block of values (scalars or vectors) held by one thread block,
    as in Warp's tile programming model. kernlab runs every block as one thread (what Warp
    does on the CPU, block_dim 1), so a tile is a value of the thread that owns it: a NumPy
    array in the interpreter, one register of all its scalars (row-major, each element's
    components together) in LLVM, a fixed-size local array in CUDA C.

    ``tile_shape`` is the tile's shape as Warp gives it (``t.shape``); ``shape`` is the
    shape of its storage (``tile_shape`` plus the element's own shape), as for vectors and
    matrices, and ``length`` the number of scalars."""
    dtype: Type  # Scalar or Vector
    tile_shape: tuple

    is_tile = True
    MAX_SCALARS = 1 << 14  # a tile is a register of at most this many scalars

    @property
    def scalar(self) -> Scalar:
        return self.dtype.scalar

    @property
    def is_float(self) -> bool:
        return self.dtype.is_float

    @property
    def shape(self) -> tuple:
        return tuple(self.tile_shape) + tuple(self.dtype.shape)

    @property
    def size(self) -> int:
        """How many elements the tile has."""
        n = 1
        for d in self.tile_shape:
            n *= d
        return n

    @property
    def length(self) -> int:
        return self.size * (self.dtype.length if self.dtype.is_vector or self.dtype.is_matrix
                            else 1)

    @property
    def nbytes(self) -> int:
        return self.length * self.scalar.nbytes

    def __repr__(self):
        shape = "Any" if self.tile_shape is ANY else tuple(self.tile_shape)
        return f"tile({self.dtype}, {shape})"

    __str__ = __repr__


class AnyType(Type):
    """``typing.Any`` in an annotation: a generic func or kernel takes the argument's type
    (a func at each call, a kernel at each launch); ``array(dtype=Any)`` any element type."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "Any"

    __str__ = __repr__


ANY = AnyType()


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


_PY_TYPES = {float: float32, int: int32, bool: bool_}


def _np_types() -> dict:
    """NumPy dtype -> scalar type, for the scalars NumPy has here (bfloat16 needs
    ml_dtypes)."""
    out = {}
    for s in SCALARS:
        try:
            out[s.np] = s
        except TypeError:
            pass
    return out


_NP_TYPES = _np_types()


def to_type(t) -> Type:
    """Normalise an annotation or dtype argument to a kernlab Type (float -> float32 ...)."""
    if isinstance(t, Type):
        return t
    if t is typing.Any:
        return ANY
    if isinstance(getattr(t, "kl_class_type", None), Type):  # type(kl.quat()): its type
        return t.kl_class_type
    if getattr(t, "is_annotation", False) is True and isinstance(getattr(t, "type", None),
                                                                   Type):
        return t.type  # an array or indexedarray annotation object: its kernel type
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


# ---- Warp's type helpers (wp.types.*) ------------------------------------------------------

# (as Warp's: the scalars with a native NumPy type, so not bfloat16)
np_dtype_to_warp_type = {d.type: s for d, s in _NP_TYPES.items() if s is not bfloat16}
np_dtype_to_warp_type.update({d: s for d, s in _NP_TYPES.items() if s is not bfloat16})
warp_type_to_np_dtype = {s: d.type for d, s in _NP_TYPES.items() if s is not bfloat16}


def dtype_from_numpy(numpy_dtype) -> Scalar:
    """The kernlab scalar type of a NumPy dtype (``np.float16`` -> float16)."""
    try:
        return _NP_TYPES[np.dtype(numpy_dtype)]
    except (TypeError, KeyError):
        raise TypeError(f"cannot convert {numpy_dtype!r} to a kernlab type") from None


def dtype_to_numpy(t) -> np.dtype:
    """The NumPy dtype of a kernlab scalar type (``float16`` -> dtype('float16'))."""
    try:
        return to_type(t).scalar.np if to_type(t).is_scalar else None
    except TypeError:
        pass
    raise TypeError(f"cannot convert {t!r} to a NumPy dtype")


def type_repr(t) -> str:
    """Warp's spelling of a type in messages: int8, vec3ub, mat22f, vector(length=5, ...)."""
    if isinstance(t, Vector):
        if t.dtype in SUFFIX and t.length <= 4:
            return f"vec{t.length}{SUFFIX[t.dtype]}"
        return f"vector(length={t.length}, dtype={type_repr(t.dtype)})"
    if isinstance(t, Matrix):
        if t.dtype in SUFFIX and t.rows == t.cols and t.rows <= 4:
            return f"mat{t.rows}{t.cols}{SUFFIX[t.dtype]}"
        return f"matrix(shape=({t.rows}, {t.cols}), dtype={type_repr(t.dtype)})"
    if isinstance(t, Scalar):
        return t.name
    return getattr(t, "__name__", str(t))


def type_is_vector(t) -> bool:
    return isinstance(t, Vector)


def type_is_matrix(t) -> bool:
    return isinstance(t, Matrix)


def type_is_int(t) -> bool:
    return t is int or (isinstance(t, Scalar) and t.is_int)


def type_is_float(t) -> bool:
    return t is float or (isinstance(t, Scalar) and t.is_float)


def type_scalar_type(t):
    """The scalar of a vector/matrix type; a scalar type itself (float -> float32)."""
    if isinstance(t, Type) and not t.is_array:
        return t.scalar
    return to_type(t)


def type_size(t) -> int:
    """Number of components: 1 for scalars, the length of a vector or matrix."""
    return t.length if isinstance(t, (Vector, Matrix)) else 1


def type_size_in_bytes(t) -> int:
    if t in (int, float):
        return 4
    if t is bool:
        return 1
    t = to_type(t)
    return t.nbytes


def types_equal(a, b) -> bool:
    """Whether two type annotations name the same kernlab type (float == float32)."""
    try:
        return to_type(a) == to_type(b)
    except TypeError:
        return a == b


# ---- what help() and the documentation say about each type object --------------------------

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
