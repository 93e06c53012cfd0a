"""Python-scope quaternion and transform values (``kl.quat(...)``, ``kl.transform(...)``).

A value is a vector value (types.Value: ``q.x`` .. ``q.w``, whole-value ``==``) that also
knows its kernlab type, with a class per type (``type(kl.transform())`` names transformf),
and a transform's ``t.p`` / ``t.q``.
"""
from __future__ import annotations

import inspect

import numpy as np

from .types import Quaternion, Transformation, Value, Vector

_PQ = inspect.Signature([
    inspect.Parameter("p", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=(0.0, 0.0, 0.0)),
    inspect.Parameter("q", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                      default=(0.0, 0.0, 0.0, 1.0)),
])


class SpatialValue(Value):
    _kl = None
    kl_class_type = None  # set on the class of each type's values (value_class)

    def __new__(cls, data, kl_type):
        obj = np.array(data, dtype=kl_type.scalar.np).reshape(kl_type.shape)
        obj = obj.view(value_class(kl_type))
        obj._kl = kl_type
        return obj

    def __array_finalize__(self, obj):
        self._kl = getattr(obj, "_kl", None)

    @property
    def kl_type(self):
        """The kernlab type, while the value still has its shape (not for a slice)."""
        return self._kl if self._kl is not None and self.shape == self._kl.shape else None

    @property
    def p(self):
        return SpatialValue(self[:3], Vector(3, self._kl.scalar))

    @p.setter
    def p(self, value):
        self[:3] = value

    @property
    def q(self):
        return SpatialValue(self[3:7], Quaternion(4, self._kl.scalar))

    @q.setter
    def q(self, value):
        self[3:7] = value


_CLASSES: dict = {}


def value_class(kl_type) -> type:
    """The class of the values of one type, so ``type(kl.transform())`` names transformf."""
    cls = _CLASSES.get(kl_type)
    if cls is None:
        cls = type(kl_type.__name__, (SpatialValue,), {"kl_class_type": kl_type})
        _CLASSES[kl_type] = cls
    return cls


def quaternion_value(t: Quaternion, args):
    """quat(), quat(s), quat(x, y, z, w), quat(v, w), quat(q) (a copy, any scalar type)."""
    if not args:
        return SpatialValue(np.zeros(4), t)
    if len(args) == 1 and np.ndim(args[0]) == 0:
        return SpatialValue(np.full(4, args[0], dtype=np.float64), t)
    flat = [x for a in args for x in np.ravel(np.asarray(a, dtype=np.float64))]
    if len(flat) != 4:
        raise ValueError(f"a quaternion has 4 components, not {len(flat)}")
    return SpatialValue(flat, t)


def transform_value(t: Transformation, args, kwargs):
    """Warp's Python-scope forms: transform() is the identity; transform(s) fills;
    transform(7 values); transform(p[, q]) and transform(p=..., q=...) with q defaulting
    to the identity rotation; transform(t) copies (any scalar type)."""
    if kwargs:
        if len(args) > 2:
            _PQ.bind_partial(**kwargs)  # names an unexpected keyword first
        bound = _PQ.bind(*args, **kwargs)
        bound.apply_defaults()
        return _from_parts(t, *bound.args)
    if not args:
        return SpatialValue([0, 0, 0, 0, 0, 0, 1], t)
    if len(args) == 1:
        value = args[0]
        if isinstance(value, (bool, int, float, np.number, np.bool_)):
            return SpatialValue(np.full(7, value, dtype=np.float64), t)
        if not _is_sequence(value):
            raise TypeError("Invalid argument in transformation constructor: expected a "
                            f"scalar value, got {type(value).__name__}")
        if len(value) == 7:
            return SpatialValue(np.asarray(value, dtype=np.float64), t)
        return _from_parts(t, value, _PQ.parameters["q"].default)
    if len(args) == 2:
        return _from_parts(t, *args)
    if len(args) != 7:
        raise TypeError(f"incompatible number of values given ({len(args)}) when "
                        "constructing a transform; expected 0, 1, or 7")
    return SpatialValue(np.asarray(args, dtype=np.float64), t)


def _from_parts(t, p, q):
    for name, part, n in (("p", p, 3), ("q", q, 4)):
        if not _is_sequence(part):
            raise TypeError(f"Invalid argument '{name}' in transformation constructor: "
                            f"expected a sequence, got {type(part).__name__}")
        if len(part) != n:
            raise ValueError(f"'{name}' of a transform has {n} components, not {len(part)}")
    return SpatialValue(np.concatenate([np.asarray(p, np.float64), np.asarray(q, np.float64)]),
                        t)


def _is_sequence(x) -> bool:
    return not isinstance(x, (str, bytes)) and hasattr(x, "__len__") and np.ndim(x) == 1
