"""Arithmetic on whole arrays at Python scope: ``a + b``, ``a * 2.0``, ``-a``, ``a += b``.

Each operator runs a generic kernel over the elements, so it works on every device and is
recorded on an active tape like any launch: gradients flow through array arithmetic. The
operands are arrays of the same shape, or an array and a number (or one element), which is
broadcast (the kernel reads it through a zero stride). The result has the array's dtype;
for vector and matrix arrays a plain number stays a scalar, so ``v * 2.0`` scales vectors.
Non-contiguous operands are read through contiguous copies (differentiable, like kl.copy).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ArrayError
from ..kernel import kernel
from ..lang import tid
from .array import array
from .array_convert import element_value
from .launch import launch

_A = array(dtype=Any)


@kernel
def _add(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] + b[i * sb]


@kernel
def _sub(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] - b[i * sb]


@kernel
def _mul(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] * b[i * sb]


@kernel
def _div(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] / b[i * sb]


@kernel
def _floordiv(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] // b[i * sb]


@kernel
def _mod(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] % b[i * sb]


@kernel
def _pow(a: _A, sa: int, b: _A, sb: int, out: _A):
    i = tid()
    out[i] = a[i * sa] ** b[i * sb]


@kernel
def _neg(a: _A, out: _A):
    i = tid()
    out[i] = -a[i]


KERNELS = {"add": _add, "sub": _sub, "mul": _mul, "div": _div, "floordiv": _floordiv,
           "mod": _mod, "pow": _pow}


def _flat(a: array) -> array:
    return a.contiguous().flatten() if a.ndim > 1 or not a.is_contiguous else a


def _operand(x, like: array) -> tuple:
    """(1-D array, stride 0 or 1) for one operand of an operation with array ``like``."""
    if isinstance(x, array):
        if x.shape != like.shape:
            raise ArrayError(f"array arithmetic needs operands of the same shape: "
                             f"{like.shape} and {x.shape}")
        if x.device != like.device:
            raise ArrayError(f"array arithmetic between {like.device} and {x.device}")
        return _flat(x), 1
    if isinstance(x, (np.ndarray, list, tuple)) and np.ndim(x) > len(like.dtype.shape):
        x = array(x, dtype=like.dtype, device=like.device)  # NumPy data: one more array
        return _operand(x, like)
    dtype = like.dtype
    if not dtype.is_scalar and np.ndim(x) == 0:
        dtype = dtype.scalar  # a number scales vectors and matrices
    values = element_value(x, dtype).reshape((1,) + dtype.shape)
    return array(values, dtype=dtype, device=like.device), 0


def binary(name: str, lhs, rhs, out: array | None = None) -> array:
    """lhs (name) rhs where at least one side is an array."""
    like = lhs if isinstance(lhs, array) else rhs
    (a, sa), (b, sb) = _operand(lhs, like), _operand(rhs, like)
    result = out if out is not None else _new(like, lhs, rhs)
    flat = _flat(result) if result.is_contiguous else None
    if flat is None:
        raise ArrayError("in-place array arithmetic needs a contiguous array")
    if like.size:
        launch(KERNELS[name], dim=like.size, inputs=[a, sa, b, sb], outputs=[flat],
               device=like.device)
    return result


def negate(a: array) -> array:
    result = _new(a, a)
    if a.size:
        launch(_neg, dim=a.size, inputs=[_flat(a)], outputs=[_flat(result)], device=a.device)
    return result


def _new(like: array, *operands) -> array:
    from .array_create import empty
    grad = any(isinstance(x, array) and x.requires_grad for x in operands)
    return empty(like.shape, dtype=like.dtype, device=like.device, requires_grad=grad)
