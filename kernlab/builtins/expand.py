"""Builtins written as IR over other builtins (expansions).

An expansion is one function ``expand(g, *args)`` that builds its result by calling other
builtins on ``g`` (``g.mul(a, b)``, ``g.index(q, g.const(3))``). That one definition is
every fact about it: the frontend expands a call in place, so the interpreter, LLVM and
CUDA backends run the primitives it calls and reverse mode differentiates them; on Python
values the same function runs on ``NumpyBuilder``, whose calls run the primitives' NumPy
references. Quaternion and transform math (spatial.py) and the random numbers (random.py)
are written this way.

Signatures name argument kinds (``"quat"``, ``"vec3"``, ``"float"``, ``"vector"`` for any
vector, ``"int"``/``"uint32"`` for integers); the float arguments share one scalar type.
An expansion may also overload a primitive builtin for the kinds it names (``mul`` of two
quaternions is the Hamilton product); it is tried first. One that ``writes`` arguments
(``randf(state)``, ``transform_set_translation(t, p)``) returns their new values first;
the frontend (frontend/spatial.py) assigns them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..types import Matrix, Quaternion, Transformation, Type, Vector, float32
from .registry import REGISTRY

EXPANSIONS: dict[str, list["Expansion"]] = {}


def _kind_of(t: Type) -> str | None:
    if t.is_scalar:
        return "float" if t.is_float else None
    if not t.is_float:
        return None
    if isinstance(t, Quaternion):
        return "quat"
    if isinstance(t, Transformation):
        return "transform"
    if type(t) is Vector:
        return f"vec{t.length}"
    if type(t) is Matrix:
        return f"mat{t.rows}{t.cols}"
    return None


# "vector" is any vector (quaternions, transforms and integer vectors too), "matrix" any
# matrix; all the arguments such a signature names have one type.
_ANY_KINDS = ("vector", "matrix")
# "int" is any integer scalar, "uint32" that one type (random number states), "bool" a
# bool; these need not share the float arguments' scalar type.
_INT_KINDS = ("int", "uint32", "bool")


def _fits(kind: str, t: Type) -> bool:
    if kind == "vector":
        return t.is_vector
    if kind == "matrix":
        return t.is_matrix
    if kind == "int":
        return t.is_scalar and t.is_int
    if kind == "uint32":
        return t.is_scalar and t.kind == "u" and t.bits == 32
    if kind == "bool":
        return t.is_scalar and t.kind == "b"
    return _kind_of(t) == kind


def type_of_kind(kind: str, dtype) -> Type:
    """The kernlab type of argument kind ``kind`` over scalar ``dtype``."""
    if kind == "float":
        return dtype
    if kind == "quat":
        return Quaternion(4, dtype)
    if kind == "transform":
        return Transformation(7, dtype)
    if kind.startswith("vec"):
        return Vector(int(kind[3:]), dtype)
    if kind.startswith("mat"):
        return Matrix(int(kind[3]), int(kind[4]), dtype)
    raise ValueError(kind)


@dataclass
class Expansion:
    name: str
    params: tuple        # argument kinds
    ret: str | None      # result kind, for signatures shown in errors
    expand: Callable     # (g, *args[, target=T]) -> Value (or a tuple of Values)
    targeted: bool = False  # takes dtype= (no arguments to infer it from)
    writes: tuple = ()   # arguments (by position) that receive the first results, in order;
    #                      the call's value is what remains (randf(state) updates state)

    def matches(self, types) -> bool:
        if len(types) != len(self.params):
            return False
        scalars = {t.scalar for t, k in zip(types, self.params) if k not in _INT_KINDS}
        shaped = {t for t, k in zip(types, self.params) if k in _ANY_KINDS}
        return all(_fits(k, t) for k, t in zip(self.params, types)) and len(scalars) <= 1 \
            and len(shaped) <= 1

    def __str__(self):
        return f"{self.name}({', '.join(self.params)})" + (f" -> {self.ret}" if self.ret
                                                             else "")


def expansion(name: str, params, ret=None, targeted=False, writes=()):
    """Decorator: register ``expand`` as builtin ``name`` for argument kinds ``params``."""
    def register(fn):
        EXPANSIONS.setdefault(name, []).append(
            Expansion(name, tuple(params), ret, fn, targeted, tuple(writes)))
        return fn
    return register


def find_expansion(name: str, types) -> Expansion | None:
    for ex in EXPANSIONS.get(name, ()):
        if ex.matches(types):
            return ex
    return None


def run_expansion(ex: Expansion, g, args, target):
    if ex.targeted:
        return ex.expand(g, *args, target=target or float32)
    return ex.expand(g, *args)


def expansion_candidates(name: str) -> str:
    return " | ".join(str(ex) for ex in EXPANSIONS.get(name, ()))


# ---- evaluation on Python values ----------------------------------------------------------

class NpValue:
    """A NumPy value with its kernlab type: what an IR Value is to the Builder."""

    __slots__ = ("type", "value")

    def __init__(self, type: Type, value):
        self.type = type
        self.value = value


class NumpyBuilder:
    """Runs expansions on NumPy values: ``g.mul(a, b)`` runs mul's NumPy reference."""

    def const(self, value, type: Type | None = None) -> NpValue:
        type = type or (float32 if isinstance(value, float) else _int_type())
        return NpValue(type, _as(value, type))

    def zeros(self, type: Type) -> NpValue:
        return self.const(0, type)

    def cast(self, value: NpValue, type: Type) -> NpValue:
        return value if value.type == type else self.call("cast", [value], target=type)

    def call(self, name: str, args, target: Type | None = None):
        types = [a.type for a in args]
        ex = find_expansion(name, types)
        if ex is not None:
            return run_expansion(ex, self, args, target)
        record = REGISTRY.get(name)
        ret = record.resolve(types, target) if record is not None else None
        if ret is None:
            raise TypeError(f"no overload of {name}() accepts "
                            f"({', '.join(map(str, types))})")
        vals = [a.value for a in args]
        with np.errstate(all="ignore"):
            out = record.numpy(*vals, target=target) if record.targeted \
                else record.numpy(*vals)
        return NpValue(ret, _as(out, ret))

    def __getattr__(self, name):
        if name in REGISTRY or name in EXPANSIONS:
            return lambda *args, target=None: self.call(name, list(args), target)
        raise AttributeError(name)


def _int_type():
    from ..types import int32
    return int32


def _as(value, t: Type):
    if t.is_scalar:
        return t.np.type(value)
    return np.broadcast_to(np.asarray(value, t.scalar.np), t.shape).copy()


def python_type_of(value, want_kinds=(), ints: bool = False) -> Type:
    """The kernlab type of a Python-side argument: its own (kernlab values carry one), or
    from its NumPy shape and dtype; a 4- or 7-vector may stand for a quat or transform.
    Numbers become float32 unless ``ints``: then integers keep an integer type as in a
    kernel (a Python int is int32, a NumPy integer its own type)."""
    t = getattr(value, "kl_type", None)
    if t is not None:
        return t
    a = np.asarray(value)
    if ints and a.dtype.kind in "iub":
        if not isinstance(value, (np.ndarray, np.generic)):
            a = a.astype(np.bool_ if a.dtype.kind == "b" else np.int32)
    elif a.dtype.kind not in "f" or not isinstance(value, (np.ndarray, np.generic)):
        a = a.astype(np.float32)
    from ..types import to_type
    el = to_type(a.dtype)
    if a.ndim == 0:
        return el
    if a.ndim == 1:
        return Vector(a.shape[0], el)
    return Matrix(a.shape[0], a.shape[1], el)


def call_on_python_values(name: str, args, target=None):
    """``kl.quat_rotate(q, v)`` outside a kernel: run the expansion on NumPy values."""
    g = NumpyBuilder()
    try:
        types = [python_type_of(a) for a in args]
        exact = [python_type_of(a, ints=True) for a in args]
        if exact != types and find_expansion(name, exact) is not None:
            types = exact  # kl.rand_init(42): the int32 overload, as in a kernel
    except (TypeError, ValueError, IndexError):
        if name in REGISTRY:
            return NotImplemented
        raise
    if find_expansion(name, types) is None and name in REGISTRY:
        return NotImplemented  # a primitive's own arguments (kl.mul of two matrices)
    vals = [NpValue(t, _as(np.asarray(a), t)) for a, t in zip(args, types)]
    if find_expansion(name, types) is None:  # plain arrays standing for quats/transforms
        for ex in EXPANSIONS.get(name, ()):
            if len(ex.params) == len(vals):
                trial = [_as_kind(v, k) for v, k in zip(vals, ex.params)]
                if ex.matches([v.type for v in trial]):
                    vals = trial
                    break
    ex = find_expansion(name, [v.type for v in vals])
    out = g.call(name, vals, target)
    if ex is not None and ex.writes:
        # an argument the call writes: a NumPy array (a transform ...) is written in
        # place; a scalar (a random state) is passed by value and stays as it was, as in
        # Warp's Python scope; the call's value is what remains (None if nothing does)
        parts = out if isinstance(out, tuple) else (out,)
        for k, v in zip(ex.writes, parts):
            if isinstance(args[k], np.ndarray) and args[k].flags.writeable \
                    and np.shape(args[k]) == np.shape(v.value):
                args[k][...] = v.value
        rest = parts[len(ex.writes):]
        if not rest:
            return None
        out = rest[0] if len(rest) == 1 else rest
    return tuple(_to_python(o) for o in out) if isinstance(out, tuple) else _to_python(out)


def _as_kind(v: NpValue, kind: str) -> NpValue:
    t = v.type
    if kind == "float" and t.is_scalar and not t.is_float:
        return NpValue(float32, np.float32(v.value))
    if t.is_scalar or kind == "float":
        return v
    try:
        want = type_of_kind(kind, t.scalar)
    except ValueError:
        return v
    if want.shape == t.shape:
        return NpValue(want, v.value)
    return v


def _to_python(v: NpValue):
    if v.type.is_scalar:  # a NumPy scalar, never a 0-d array (dot of two vectors ...)
        return np.asarray(v.value)[()] if isinstance(v.value, np.ndarray) else v.value
    return v.type(v.value) if isinstance(v.type, (Quaternion, Transformation)) else v.value
