"""The base of every kernel type, the scalar types and their Python-side values.

``Type`` and ``ANY`` (``typing.Any`` in an annotation), the scalars (float16 .. uint64, bool,
bfloat16) with the value classes their calls return (``float32(1.5)``, ``bool_(1)``), the
tuples Warp names them by, and ``to_type``, which turns an annotation or a dtype into a Type.

Part of kernlab.types, which re-exports every name here (and names its classes' module).
"""
from __future__ import annotations

import ctypes
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
    from ..runtime.array import array  # lazily: types is below the runtime
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
        body = {"__slots__": ("_given",) if s.is_float else (),
                "__module__": Scalar.__module__,  # (kernlab.types: see __init__.py)
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
