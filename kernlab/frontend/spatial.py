"""Quaternion and transform calls (mixed into the Lowerer): the generic constructors
``types.quaternion(...)`` / ``types.transformation(...)``, ``transform(p=..., q=...)``,
reading and writing ``t.p`` / ``t.q``, and builtins that write their arguments
(``transform_set_translation(t, p)``, ``quat_to_axis_angle(q, axis, angle)``).

The math itself lives in builtins/spatial.py; this file only maps call shapes onto it.
"""
from __future__ import annotations

import ast

from .. import lang, types
from ..builtins.expand import EXPANSIONS, find_expansion
from ..errors import KernelSyntaxError, KernelTypeError
from ..types import Quaternion, Transformation, Vector, float32, to_type
from .exprs import Lit, PyObj

NOT_SPATIAL = object()
TRANSFORM_PARTS = {"p": "transform_get_translation", "q": "transform_get_rotation"}


class SpatialMixin:
    def spatial_call(self, obj, args, kwargs, node):
        """The call's value if it is one of this file's shapes, else NOT_SPATIAL."""
        if obj is types.quaternion or obj is types.transformation:
            return self.construct_spatial_generic(obj is types.quaternion, args, kwargs)
        if isinstance(obj, Transformation) and not kwargs.keys() - {"p", "q"}:
            return self.construct_transform(obj, args, kwargs)
        if isinstance(obj, lang.BuiltinFunction) and not kwargs and any(
                ex.writes for ex in EXPANSIONS.get(obj.builtin, ())):
            return self.call_writing(obj.builtin, args, node)
        return NOT_SPATIAL

    def construct_spatial_generic(self, is_quat, args, kwargs):
        """``types.quaternion(x, y, z, w)``, ``types.quaternion(q, dtype=float16)``,
        ``types.transformation(p, q)``: the scalar type from ``dtype=`` or the values."""
        extra = set(kwargs) - {"dtype"}
        if extra:
            raise KernelTypeError(f"{'quaternion' if is_quat else 'transformation'}() got an "
                                  f"unexpected keyword argument '{sorted(extra)[0]}'",
                                  self.b.loc)
        dtype = kwargs.get("dtype")
        if dtype is not None:
            dtype = to_type(self.const_arg("dtype", dtype))
        else:
            typed = [a.type for a in args if not isinstance(a, (Lit, PyObj))]
            dtype = typed[0].scalar if typed else float32
        target = Quaternion(4, dtype) if is_quat else Transformation(7, dtype)
        if is_quat:
            return self.construct(target, args)
        return self.construct_transform(target, args, {}, copy_casts=True)

    def construct_transform(self, target, args, kwargs, copy_casts=False):
        """A transform from nothing (zeros), a scalar (filled), 7 scalars, (p[, q]), a copy,
        or ``p=``/``q=`` keywords (missing q: the identity rotation)."""
        T = target.scalar
        if kwargs:
            if args:
                raise KernelTypeError("transform() takes p and q either by position or by "
                                      "keyword", self.b.loc)
            p = kwargs.get("p")
            p = self.value(p, T) if p is not None else self.b.zeros(Vector(3, T))
            q = kwargs.get("q")
            q = self.value(q, T) if q is not None else self.b.quat_identity(target=T)
            return self.b.transformation(p, q)
        vals = [self.value(a, T) for a in args]
        if len(vals) == 1 and isinstance(vals[0].type, Transformation):
            src = vals[0].type.scalar
            if src != T and not copy_casts:
                raise KernelTypeError("copy constructing a transform requires matching source "
                                      f"and target dtypes, got `{src}` and `{T}`", self.b.loc)
        elif vals and not all(v.type.is_scalar for v in vals):
            parts = [v.type for v in vals]
            if not (parts[0] == Vector(3, parts[0].scalar) and len(parts) <= 2
                    and (len(parts) == 1 or isinstance(parts[1], Quaternion))):
                raise KernelTypeError(f"a transform is built from (p: vec3, q: quat), not "
                                      f"({', '.join(map(str, parts))})", self.b.loc)
            if len(vals) == 1:
                return self.b.transformation(vals[0])
        elif len(vals) not in (0, 1, 7):
            raise KernelTypeError(f"incompatible number of values given ({len(vals)}) when "
                                  "constructing a transform; expected 0, 1, or 7", self.b.loc)
        return self.construct(target, vals)

    def call_writing(self, name, args, node):
        """A builtin that writes arguments (``transform_set_translation(t, p)``,
        ``quat_to_axis_angle(q, axis, angle)``, ``randf(state)``): its first results are
        assigned to them; the call's value is the rest, if any."""
        vals = [self.value(a) for a in args]
        ex = find_expansion(name, [v.type for v in vals])
        result = self.b.call(name, vals)
        if ex is None or not ex.writes:
            return result
        results = result if isinstance(result, tuple) else (result,)
        for k, v in zip(ex.writes, results):
            target = node.args[k]
            if not isinstance(target, (ast.Name, ast.Subscript, ast.Attribute)):
                raise KernelSyntaxError(f"{name}() writes its argument {k + 1}, which must be "
                                        "a variable or an element", self.b.loc)
            self.assign(target, v)
        rest = results[len(ex.writes):]
        return rest[0] if len(rest) == 1 else (rest or None)

    def transform_part(self, base, attr):
        return self.b.call(TRANSFORM_PARTS[attr], [base])

    def assign_transform_part(self, target, value):
        """``t.p = v`` / ``t.q = r``: t = transform_set_*(t, value)."""
        load = ast.copy_location(_as_load(target.value), target)
        t = self.value(self.expr(load))
        if not isinstance(t.type, Transformation):
            raise KernelSyntaxError(f"cannot assign to attribute '.{target.attr}'", self.b.loc)
        name = "transform_set_translation" if target.attr == "p" else "transform_set_rotation"
        self.assign(target.value, self.b.call(name, [t, self.value(value, t.type.scalar)]))


def _as_load(target):
    import copy
    node = copy.deepcopy(target)
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node
