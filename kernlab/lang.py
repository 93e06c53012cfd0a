"""The kernel language's Python-side names: builtins, tid, atomics, print, adjoint, constant.

Inside a kernel the frontend recognises these objects by identity. Outside one, builtins
still work on Python and NumPy values (they run the NumPy reference), as in Warp.
"""
from __future__ import annotations

import numpy as np

from .builtins import REGISTRY
from .builtins.bits import PUBLIC as BIT_BUILTINS
from .builtins.decompositions import PUBLIC as DECOMPOSITION_BUILTINS
from .builtins.expand import EXPANSIONS, call_on_python_values
from .builtins.matrices import PUBLIC as MATRIX_BUILTINS
from .builtins.approx import PUBLIC as APPROX_BUILTINS
from .builtins.random import PUBLIC as RANDOM_BUILTINS
from .builtins.reference import TILE_FORMS as _TILE_DOCS
from .builtins.spatial import PUBLIC as SPATIAL_BUILTINS
from .types import Type, to_type


class BuiltinFunction:
    """``kl.sin`` and friends: a name the frontend maps to a builtin record."""

    def __init__(self, name: str, builtin: str | None = None):
        self.__name__ = name
        self.builtin = builtin or name

    def __call__(self, *args, dtype=None):
        if self.builtin in EXPANSIONS:  # quaternion/transform math: run its expansion
            target = to_type(dtype) if dtype is not None else None
            out = call_on_python_values(self.builtin, args, target)  # writes args in place
            if self.builtin in ("transform_set_translation", "transform_set_rotation"):
                if not isinstance(args[0], np.ndarray):
                    raise TypeError(f"{self.builtin}() writes its first argument: pass a "
                                    f"transform value, not {type(args[0]).__name__}")
                return None
            if out is not NotImplemented:
                return out
        record = REGISTRY[self.builtin]
        vals = [a if isinstance(a, np.ndarray) else np.asarray(a)[()] for a in args]
        vals = [v.astype(np.float32) if isinstance(v, np.floating) and v.dtype == np.float64
                and not isinstance(a, np.floating) else v for v, a in zip(vals, args)]
        out = record.numpy(*vals)
        # a scalar result is a NumPy scalar (dot of two vectors), never a 0-d array
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out

    def __repr__(self):
        return f"<kernlab builtin {self.__name__}>"


class _ReferenceDoc:
    """BuiltinFunction's ``__doc__``: the class's own docstring on the class, and on each
    builtin (``kl.sin.__doc__``, ``help`` texts) its entry in builtins/reference.py."""

    def __init__(self, class_doc: str):
        self.class_doc = class_doc

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.class_doc
        from .builtins.reference import docstring
        return docstring(obj.__name__)


BuiltinFunction.__doc__ = _ReferenceDoc(BuiltinFunction.__doc__)


class SpecialForm:
    """A name whose meaning the frontend handles itself (tid, atomics, print, ...)."""

    def __init__(self, name: str, doc: str = ""):
        self.__name__ = name
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"kl.{self.__name__}() can only be called inside a kernel or func")

    def __repr__(self):
        return f"<kernlab {self.__name__}>"


# Builtins users call by name (operators and internal helpers are not exported).
PUBLIC_BUILTINS = [
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
    "log", "log2", "log10", "sqrt", "pow", "abs", "sign", "floor", "ceil", "round", "min",
    "max", "clamp", "lerp", "smoothstep", "where", "dot", "cross", "length", "length_sq",
    "normalize", "outer", "transpose", "determinant", "mul", "trunc",
    "rint", "frac", "cbrt", "degrees", "radians", "copysign", "step", "nonzero", "isfinite",
    "isnan", "isinf", "argmin", "argmax", "add", "sub", "div", "mod", "floordiv", "neg",
    "bit_and", "bit_or", "bit_xor", "lshift", "rshift", "invert", "cw_mul", "cw_div",
    "erf", "erfc", "erfinv", "erfcinv", "trace",
]
FUNCTIONS = {name: BuiltinFunction(name) for name in PUBLIC_BUILTINS + SPATIAL_BUILTINS
             + RANDOM_BUILTINS + MATRIX_BUILTINS + BIT_BUILTINS
             + DECOMPOSITION_BUILTINS + APPROX_BUILTINS}
FUNCTIONS["transformation"] = BuiltinFunction("transformation")
FUNCTIONS["select"] = BuiltinFunction("select")  # Warp's order: (cond, if_false, if_true)

# Warp's tile functions (frontend/tiles.py reads their compile-time arguments; the builtins
# are in builtins/tiles.py and builtins/tile_ops.py; what each does is builtins/reference.py's
# TILE_FORMS).
class _TileForm(SpecialForm):
    """``tile(x)`` in kernels; ``tile[dtype, M, N]`` the type of such a tile (Warp's
    annotation for a func parameter that takes a tile)."""

    def __getitem__(self, args):
        from .types import ANY, Tile, _literal, to_type
        dtype, *shape = args if isinstance(args, tuple) else (args,)
        if len(shape) == 1 and isinstance(shape[0], tuple):  # tile[dtype, (M, N)]
            shape = list(shape[0])
        if not shape:  # tile[dtype]: a func parameter taking a tile of any shape
            return Tile(to_type(dtype), ANY)
        shape = [_literal(n) for n in shape]  # tile[dtype, Literal[M], ...]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape):
            raise TypeError("tile[dtype, M, ...] takes an element type and positive integer "
                            "extents")
        return Tile(to_type(dtype), tuple(shape))


TILE_FORMS = {name: (_TileForm if name == "tile" else SpecialForm)(
                  name, f"{form.signature}: {form.summary}")
              for name, form in _TILE_DOCS.items()}
TILE_FORMS_BY_ID = {id(f): name for name, f in TILE_FORMS.items()}

tid = SpecialForm("tid", "This thread's index: i = tid(), or i, j = tid() for a 2-D launch.")
atomic_add = SpecialForm("atomic_add", "atomic_add(array, index..., value): returns the old value")
atomic_sub = SpecialForm("atomic_sub", "atomic_sub(array, index..., value): returns the old value")
atomic_min = SpecialForm("atomic_min", "atomic_min(array, index..., value): returns the old value")
atomic_max = SpecialForm("atomic_max", "atomic_max(array, index..., value): returns the old value")
printf = SpecialForm("printf", "printf(fmt, *values): C-style formatted debug output")
kprint = SpecialForm("print", "print(*values): debug output from a kernel")
class ExpectForm(SpecialForm):
    """expect_eq / expect_neq / expect_near. Outside a kernel (a func run from Python) they
    compare the Python values and print a message when the expectation fails, as in Warp."""

    def __call__(self, a, b, tolerance=1e-6):
        a, b = np.asarray(a), np.asarray(b)
        if self.__name__ == "expect_near":
            ok = bool(np.all(np.abs(a - b) <= tolerance))
        else:
            ok = a.shape == b.shape and bool(np.all(a == b))
            ok = ok if self.__name__ == "expect_eq" else not ok
        if not ok:
            print(f"{self.__name__} failed: {a} vs {b}")
        return None


expect_eq = ExpectForm("expect_eq", "expect_eq(a, b): print a message if a != b (the kernel "
                        "goes on)")
expect_neq = ExpectForm("expect_neq", "expect_neq(a, b): print a message if a == b (the kernel "
                         "goes on)")
expect_near = ExpectForm("expect_near", "expect_near(a, b, tolerance=1e-6): print a message "
                          "if some component differs by more than tolerance")
EXPECTS = {expect_eq: "eq", expect_neq: "neq", expect_near: "near"}
atomic_and = SpecialForm("atomic_and", "atomic_and(array, index..., value): bitwise and; "
                         "returns the old value")
atomic_or = SpecialForm("atomic_or", "atomic_or(array, index..., value): bitwise or; returns "
                        "the old value")
atomic_xor = SpecialForm("atomic_xor", "atomic_xor(array, index..., value): bitwise xor; "
                         "returns the old value")
atomic_exch = SpecialForm("atomic_exch", "atomic_exch(array, index..., value): writes value, "
                          "returns the old value")
atomic_cas = SpecialForm("atomic_cas", "atomic_cas(array, index..., compare, value): writes "
                         "value if the element equals compare; returns the old value")
ATOMICS = {atomic_cas: "cas", atomic_add: "add", atomic_sub: "sub", atomic_min: "min", atomic_max: "max",
           atomic_and: "and", atomic_or: "or", atomic_xor: "xor", atomic_exch: "exch"}


class MatrixForm(SpecialForm):
    """identity / matrix_from_rows / matrix_from_cols: matrices built from their arguments
    (the frontend lowers them to a constant or to the ``construct`` builtin); in Python they
    give NumPy matrices."""

    def __call__(self, *args, n=None, dtype=None):
        if self.__name__ == "identity":
            count = n if n is not None else args[0]
            el = to_type(dtype if dtype is not None else float)
            return np.eye(int(count), dtype=el.np)
        rows = np.stack([np.asarray(a) for a in args])
        return rows if self.__name__ == "matrix_from_rows" else rows.T.copy()


identity = MatrixForm("identity", "identity(n, dtype=float): the n x n identity matrix")
matrix_from_rows = MatrixForm("matrix_from_rows", "matrix_from_rows(*rows): a matrix of rows")
matrix_from_cols = MatrixForm("matrix_from_cols", "matrix_from_cols(*cols): a matrix of cols")
MATRIX_FORMS = (identity, matrix_from_rows, matrix_from_cols)

grad = SpecialForm("grad", "grad(f)(x, ...): in a kernel, the partial derivatives of the func "
                   "or builtin f at x, ... (one value, or a tuple for several arguments)")


def static(value):
    """``kl.static(expr)`` in a kernel: expr is evaluated in Python when the kernel is
    compiled, and its value used as a constant (Warp's wp.static). In Python: the value."""
    return value


class _Adjoint:
    """``kl.adjoint[x] += ...`` inside a custom gradient function."""

    def __getitem__(self, key):
        raise RuntimeError("kl.adjoint[...] is only meaningful inside a @kl.func_grad body")


adjoint = _Adjoint()
adjoint.__doc__ = ("adjoint[x] += value: inside a @kl.func_grad body, adds value to the "
                   "gradient of the forward func's parameter x.")


def constant(value):
    """A module-level constant a kernel may read (Warp's wp.constant): the value itself."""
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        return value
    raise TypeError(f"kl.constant() takes a number or a vector/matrix value, not {value!r}")


def python_type(obj) -> Type | None:
    """A kernlab type named by a Python object used as a cast (float, kl.float64, ...)."""
    if obj in (float, int, bool) or isinstance(obj, Type):
        return to_type(obj)
    return None
