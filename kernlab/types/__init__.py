"""Scalar, vector, matrix and array types: plain data, shared by every stage.

Type objects are callable in Python the way Warp's are: ``float32(1.5)`` gives a NumPy
scalar, ``vec3(1, 2, 3)`` a NumPy array of shape (3,), ``mat22(...)`` one of shape (2, 2).

Every name is imported from here (``from .types import vec3``, ``kl.types.vector``); the
code lives in one module per kind of type, each importing only those before it:

  scalars.py   ``Type``, ``ANY``, the scalar types and their Python values, ``to_type``
  vectors.py   vectors, matrices, quaternions, transforms, their values and named types
  arrays.py    ``ArrayType``, ``IndexedArrayType``, ``Tile``
  generic.py   the constrained generics ``Int``, ``Float``, ``Scalar``; ``is_generic``
  helpers.py   Warp's ``wp.types`` helpers and the conversions to and from NumPy
  docs.py      each type object's ``__doc__`` (imported last: it sets the classes')
"""
from __future__ import annotations

from .scalars import (_BINARY, _INT_VALUES, _NP_DTYPES, _NP_TYPES, _PY_TYPES, ANY,  # noqa: F401
                      FLOATS, INTS, SCALARS, SUFFIX, AnyType, BoolValue, Scalar, Type,
                      _bfloat16_dtype, _defer_to_arrays, _is_kernel_array, _no_pow,
                      _np_types, _shown, _value_class, _wrap, bfloat16, bool_, float16,
                      float32, float64, float_types, int8, int16, int32, int64, int_types,
                      is_bfloat16, non_atomic_types, numpy_kind, scalar_and_bool_types,
                      scalar_types, to_type, uint8, uint16, uint32, uint64)
from .vectors import (_CANONICAL, _SPATIAL_SUFFIX, NAMED, Matrix, Quaternion,  # noqa: F401
                      Transformation, Value, Vector, _component, _construct, _extent,
                      _is_type, _is_value_of, _literal, _shaped, _wrapped, canonical, mat22,
                      mat33, mat44, matrix, quat, quatd, quaternion, quatf, quath,
                      spatial_matrix, spatial_matrixd, spatial_matrixf, spatial_matrixh,
                      spatial_vector, spatial_vectord, spatial_vectorf, spatial_vectorh,
                      transform, transformation, transformd, transformf, transformh, vec2,
                      vec3, vec4, vector, vector_types)
from .arrays import ArrayType, IndexedArrayType, Tile  # noqa: F401
from .generic import (SCALAR_SETS, Float, GenericScalar, Int, ScalarSet,  # noqa: F401
                      _scalar_set_named, is_generic)
from .helpers import (dtype_from_numpy, dtype_to_numpy, np_dtype_to_warp_type,  # noqa: F401
                      strides_from_shape, type_is_float, type_is_int, type_is_matrix,
                      type_is_vector, type_of_numpy, type_repr, type_scalar_type, type_size,
                      type_size_in_bytes, types_equal, warp_type_to_np_dtype)
from .docs import _KIND_WORDS, _DocPerInstance, describe_type  # noqa: F401

globals().update(NAMED)  # vec2b .. vec4ul, mat22h .. mat44d (vectors.py names them)

# The classes are published here, as kernlab.types.X (their repr; pickles, the IR cache's among
# them, find them by that name). One string for all of them, as when they shared one module:
# pickle writes a module name once and refers back to it. (The scalar value classes,
# made on first use, take Scalar's: scalars.py _value_class.)
for _published in (Type, AnyType, Scalar, BoolValue, Vector, Matrix, Quaternion, Transformation,
                   Value, ArrayType, IndexedArrayType, Tile, ScalarSet, _scalar_set_named):
    _published.__module__ = __name__
del _published
