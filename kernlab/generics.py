"""Generic funcs and kernels: ``typing.Any`` in annotations, bound to concrete types.

A pattern type may hold ``ANY`` (types.py) where a concrete type will go: ``Any`` itself,
``array(dtype=Any)``, a vector or matrix of ``Any``. A func binds its patterns at each call
(frontend/calls.py); a kernel at each launch, from its argument values (``launch_types``),
or ahead of time through ``kl.overload`` (``declared_types``).
"""
from __future__ import annotations

import ast
import inspect
import re

import numpy as np

from .errors import KernelSyntaxError, KernelTypeError, LaunchError
from .types import ANY, ArrayType, Matrix, ScalarSet, Tile, Type, Vector, bool_, float32, int32, \
    is_generic, numpy_kind, to_type


def annotated_types(pyfunc) -> list[Type]:
    """The parameter types a function's annotations name (patterns where they use Any)."""
    from .frontend.source import annotation_type, parse_function
    found = _evaluated_annotation_types(pyfunc)
    if found is not None:
        return found
    src = parse_function(pyfunc)
    return [annotation_type(pyfunc, a, src) for a in src.tree.args.args]


def _evaluated_annotation_types(pyfunc) -> list[Type] | None:
    """The parameter types from annotations Python has already evaluated, without reading
    and parsing the source (which, for a kernel of thousands of lines, took longer than
    some compiles); None where any parameter needs the source (a string annotation, a
    missing or bad one, whose error names the line) or the signature is not plain."""
    from .runtime.array import array
    code = getattr(pyfunc, "__code__", None)
    if code is None or code.co_posonlyargcount or code.co_kwonlyargcount or \
            code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    hints = getattr(pyfunc, "__annotations__", None) or {}
    types = []
    for name in code.co_varnames[:code.co_argcount]:
        ann = hints.get(name)
        if ann is None or isinstance(ann, str):
            return None
        if isinstance(ann, array):
            types.append(ann.type)
            continue
        try:
            types.append(to_type(ann))
        except TypeError:
            return None
    return types


def as_type(obj) -> Type:
    """An annotation object (a kernlab type, Python type, array annotation) as a Type."""
    from .runtime.array import array
    if isinstance(obj, array):
        return obj.type
    return to_type(obj)


def matches(pattern: Type, actual: Type) -> bool:
    """Whether a concrete type fits a (possibly generic) parameter type."""
    if pattern is ANY:
        return True
    if isinstance(pattern, ScalarSet):
        return pattern.accepts(actual)
    if not is_generic(pattern):
        return pattern == actual
    if isinstance(pattern, ArrayType):  # (an indexedarray is no array, nor the reverse)
        return type(actual) is type(pattern) and pattern.ndim == actual.ndim \
            and (pattern.dtype is ANY or matches(pattern.dtype, actual.dtype))
    if isinstance(pattern, Vector):
        return actual.is_vector and pattern.length in (ANY, actual.length) \
            and matches(pattern.dtype, actual.dtype)
    if isinstance(pattern, Matrix):
        return actual.is_matrix and actual.shape == pattern.shape \
            and matches(pattern.dtype, actual.dtype)
    if isinstance(pattern, Tile):  # tile[dtype]: any shape
        return actual.is_tile and pattern.tile_shape in (ANY, actual.tile_shape) \
            and matches(pattern.dtype, actual.dtype)
    return False


def specialisation_key(key: str, types) -> str:
    """A kernel name for one specialisation: the generic's key and its types, as a name."""
    tail = "_".join(re.sub(r"\W+", "_", str(t)).strip("_") for t in types)
    return f"{key}_{tail}" if tail else key


def declared_types(kernel, arg_types) -> list[Type]:
    """``kl.overload(kernel, [types])`` or ``{name: type}``: the full concrete type list."""
    patterns = annotated_types(kernel.pyfunc)
    names = _param_names(kernel.pyfunc)
    if isinstance(arg_types, dict):
        unknown = set(arg_types) - set(names)
        if unknown:
            raise KernelTypeError(f"kl.overload: kernel '{kernel.key}' has no parameter "
                                  f"{sorted(unknown)[0]!r}", kernel=kernel.key)
        given = [arg_types.get(n) for n in names]
    else:
        given = list(arg_types or [])
        if len(given) != len(patterns):
            raise KernelTypeError(f"kl.overload: kernel '{kernel.key}' takes {len(patterns)} "
                                  f"argument(s), {len(given)} type(s) were given",
                                  kernel=kernel.key)
    out = []
    for name, pattern, obj in zip(names, patterns, given):
        t = pattern if obj is None else as_type(obj)
        if is_generic(t) or not matches(pattern, t):
            raise KernelTypeError(f"kl.overload: parameter '{name}' of kernel '{kernel.key}' "
                                  f"is {pattern}, which {t} does not fit", kernel=kernel.key)
        out.append(t)
    return out


def launch_types(kernel, values) -> list[Type]:
    """The concrete parameter types a launch of a generic kernel with ``values`` needs:
    a declared overload that fits them, else the types the values have."""
    patterns = annotated_types(kernel.pyfunc)
    names = _param_names(kernel.pyfunc)
    if len(values) != len(patterns):
        raise LaunchError(f"kernel '{kernel.key}' takes {len(patterns)} argument(s) "
                          f"({', '.join(names)}), but {len(values)} were given in inputs and "
                          "outputs", kernel=kernel.key)
    out = []
    for name, pattern, value in zip(names, patterns, values):
        if not is_generic(pattern):
            out.append(pattern)
            continue
        t = value_type(value, pattern)
        if t is None or not matches(pattern, t):
            raise LaunchError(f"kernel '{kernel.key}': parameter '{name}' ({pattern}) cannot "
                              f"take {type(value).__name__} {value!r:.60}", kernel=kernel.key)
        out.append(t)
    for types in kernel._specialisations:  # a declared overload may convert (float -> f64)
        if all(_fits_declared(t, d) for t, d in zip(out, types)):
            return list(types)
    return out


def _fits_declared(inferred: Type, declared: Type) -> bool:
    if inferred == declared:
        return True
    return inferred.is_scalar and declared.is_scalar and inferred in (int32, float32) \
        and (declared.is_float or inferred.is_int and declared.is_int)


def value_type(value, pattern: Type | None = None) -> Type | None:
    """The kernel type of a launch or Python argument value, or None if it has none."""
    from .runtime.array import array
    from .runtime.indexed import indexedarray
    if isinstance(value, (array, indexedarray)):
        return value.type if hasattr(value, "type") else ArrayType(value.dtype, value.ndim)
    t = getattr(value, "_kl_type", None) or getattr(type(value), "_kl_type", None)
    if isinstance(t, Type):
        return t
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, int):
        return int32
    if isinstance(value, float):
        return float32
    if isinstance(value, np.generic):
        try:
            return to_type(value.dtype)
        except TypeError:
            return None
    if isinstance(value, (np.ndarray, list, tuple)):
        a = np.asarray(value)
        if numpy_kind(a.dtype) not in "biuf":  # bfloat16 included
            return None
        el = pattern.dtype if isinstance(pattern, (Vector, Matrix)) and not \
            is_generic(pattern.dtype) else (float32 if a.dtype == np.float64 and not isinstance(value, np.ndarray)
                      else to_type(a.dtype))
        if a.ndim == 1:
            return Vector(a.shape[0], el)
        if a.ndim == 2:
            return Matrix(a.shape[0], a.shape[1], el)
    return None


def _param_names(pyfunc) -> list[str]:
    from .frontend.source import parse_function
    return [a.arg for a in parse_function(pyfunc).tree.args.args]


# ---- kl.overload: declaring the variants of a generic kernel -------------------------------

def overload(target, arg_types=None):
    """Warp's ``wp.overload``: ``overload(kernel, [types])`` or ``overload(kernel, {name:
    type})`` declares the variant of a generic kernel for those types and returns it; as a
    decorator on a function of the same name, its annotations give the types."""
    from .kernel import Func, Kernel, _bound_in_caller, _user_facing
    if isinstance(target, Kernel):
        return target.specialise(_user_facing(declared_types, target, arg_types))
    if callable(target) and arg_types is None:
        existing = _bound_in_caller(target.__name__, within=("kernlab.kernel", __name__))
        if isinstance(existing, Func):
            return existing.add_overload(target)
        generic = existing if isinstance(existing, Kernel) and existing.param_types is None \
            else _registered_kernel(target)
        if generic is None:
            raise TypeError(f"@kl.overload: no generic kernel or func named "
                            f"'{target.__name__}' is defined before it")
        _check_overload_stub(target)
        generic.specialise(_user_facing(declared_types, generic,
                                        _user_facing(_stub_types, target)))
        return generic  # the decorated name stays the generic kernel, as in Warp
    raise TypeError(f"kl.overload takes a kernel and its argument types, not {target!r}")


def _stub_types(stub) -> list:
    return annotated_types(stub)


def _registered_kernel(stub):
    """The generic kernel of the stub's module defined by a function of the stub's
    qualified name (a kernel registered under a custom key, ``kl.kernel(name=...)``)."""
    from .kernel import get_module
    found = [k for k in get_module(stub.__module__).generics.values()
             if k.pyfunc.__qualname__ == stub.__qualname__]
    if len(found) > 1:
        keys = ", ".join(repr(k.key) for k in found)
        raise RuntimeError(f"Ambiguous kernel lookup for '{stub.__module__}."
                           f"{stub.__qualname__}': it matches several custom-named kernels "
                           f"({keys}); pass the kernel object to kl.overload(kernel, types) "
                           "instead of using the decorator form")
    return found[0] if found else None


def _check_overload_stub(stub) -> None:
    """A decorator overload is a signature only: its body may hold pass, ``...`` and a
    docstring, and it returns nothing (no return annotation, or ``-> None``)."""
    ret = getattr(stub, "__annotations__", {}).get("return", None)
    if ret is not None and ret is not type(None) and ret not in ("None", "NoneType",
                                                                 "types.NoneType"):
        raise TypeError(f"Return annotations are not allowed on @wp.overload stubs "
                        f"(kl.overload of '{stub.__name__}'): omit the return annotation "
                        "or use `-> None`")
    from .frontend.source import parse_function
    src = parse_function(stub)
    for node in src.tree.body:
        if isinstance(node, ast.Pass) or isinstance(node, ast.Expr) and isinstance(
                node.value, ast.Constant) and (node.value.value is ... or
                                               isinstance(node.value.value, str)):
            continue
        raise KernelSyntaxError(f"kl.overload stub '{stub.__name__}' declares types only: its "
                                "body may hold pass, ... and a docstring", src.loc(node))
