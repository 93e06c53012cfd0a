"""Warp's type helpers (``wp.types.type_repr``, ``types_equal`` ...) and the conversions
between kernlab types and NumPy's (``dtype_from_numpy``, ``type_of_numpy`` ...).

Part of kernlab.types, which re-exports every name here.
"""
from __future__ import annotations

import numpy as np

from .scalars import _NP_TYPES, SUFFIX, Scalar, Type, bfloat16, to_type
from .vectors import Matrix, Vector


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
