"""Calling a @kl.func from Python, as Warp allows: its Python body runs on Python and NumPy
values (kl.sin and the other builtins work there too), after the overload the arguments
fit is chosen. Arguments keep their Python values: ``x / 0.0`` raises ZeroDivisionError,
as the test of this behaviour in Warp expects.
"""
from __future__ import annotations

import inspect

import numpy as np

from .generics import annotated_types, matches, value_type
from .types import ANY, BoolValue, is_generic


def call_func(func, args, kwargs):
    """Run the overload of ``func`` that ``args``/``kwargs`` fit; RuntimeError if none."""
    for strict in (True, False):
        for pyfunc in reversed(func.overloads):
            bound = _bind(pyfunc, args, kwargs, strict)
            if bound is not None:
                with np.errstate(over="ignore"):  # integers wrap, as in a kernel
                    return pyfunc(*bound.args, **bound.kwargs)
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    if len(args) == 1 and not kwargs:
        shown += ","
    raise RuntimeError(f"Error calling function '{func.key}', no overload found for "
                       f"arguments ({shown})")


def _bind(pyfunc, args, kwargs, strict):
    try:
        bound = inspect.signature(pyfunc).bind(*args, **kwargs)
        types = annotated_types(pyfunc)
    except Exception:  # noqa: BLE001 — the arguments do not bind, or annotations are bad
        return None
    names = list(inspect.signature(pyfunc).parameters)
    for name, t in zip(names, types):
        if name in bound.arguments and not _fits(t, bound.arguments[name], strict):
            return None
    return bound


def _fits(t, value, strict: bool) -> bool:
    if t is ANY:
        return True
    if t.is_scalar:
        if isinstance(value, (bool, np.bool_, BoolValue)):
            return t.kind == "b"
        if isinstance(value, (int, np.integer)):
            if isinstance(value, np.integer):
                return np.dtype(type(value)) == t.np or not strict and t.kind in "iuf"
            return t.kind in "iu" and (t.bits == 32 or not strict) or not strict and \
                t.is_float
        if isinstance(value, np.floating):
            return np.dtype(type(value)) == t.np or not strict and t.is_float
        if isinstance(value, float):
            return t.is_float and (t.bits == 32 or not strict and t.bits != 64)
        return False
    actual = value_type(value, t)
    if actual is None:
        return False
    if is_generic(t) or t.is_array:
        return matches(t, actual)
    return actual.shape == t.shape and (not strict or actual.scalar == t.scalar
                                        or not isinstance(value, np.ndarray))
