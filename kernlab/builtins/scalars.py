"""Scalar predicates and selections: abs, sign, step, nonzero, min/max/clamp, isnan & co.,
the integer bit operations, and the vector reductions min/max/argmin/argmax.

Float min/max follow C's fmin/fmax, as Warp does: a NaN operand is "missing", so the other
operand wins, and NaN comes out only when both are NaN. ``clamp(x, lo, hi)`` is
``min(max(lo, x), hi)``. Their derivatives send the adjoint to the operand the forward
picked. Bit operations on 8- and 16-bit integers compute in 32 bits and truncate, as C's
integer promotion does (``int8(1) << 8 == 0``).
"""
from __future__ import annotations

import numpy as np
from .llvm_ir import ir

from ..types import (bfloat16, bool_, float16, float32, float64, int32, int64, type_repr, uint32,
                     uint64)
from .core import _np_div
from .registry import builtin, sig


def _zero_like(x):
    return np.zeros_like(x) if np.ndim(x) else x.dtype.type(0)


# ---- sign and friends -------------------------------------------------------------------

def _sign_ref(x):
    if np.ndim(x):
        return np.where(x < 0, -1, 1).astype(x.dtype)
    return x.dtype.type(-1 if x < 0 else 1)


builtin("abs", [sig("N", ret="T"), sig("V", ret="V")], lambda x: np.abs(x).astype(x.dtype)
        if np.ndim(x) else x.dtype.type(abs(x)),
        llvm=lambda cx, x: cx.abs(x), cuda="abs({0})",
        grad=lambda g, x, r, adj: (g.mul(adj, g.sign(x)) if x.type.is_scalar
                                   else g.cw_mul(adj, g.vsign(x)),))

# Warp's sign: -1 for x < 0, else 1 (so sign(0) == 1); componentwise on vectors.
builtin("sign", [sig("N", ret="T"), sig("V", ret="V")], _sign_ref,
        llvm=lambda cx, x: cx.b.select(cx.cmp("<", x, cx.const(0)), cx.const(-1), cx.const(1)),
        cuda="kl_sign({0})", differentiable=False)

builtin("vsign", [sig("V", ret="V")],
        lambda v: np.where(v < 0, -1, 1).astype(v.dtype),
        llvm=lambda cx, x: cx.b.select(cx.cmp("<", x, cx.const(0)), cx.const(-1), cx.const(1)),
        cuda="kl_sign({0})", differentiable=False)

# step(x) = 1 for x < 0, else 0 (Warp's definition)
builtin("step", [sig("N", ret="T")], lambda x: x.dtype.type(1 if x < 0 else 0),
        llvm=lambda cx, x: cx.b.select(cx.cmp("<", x, cx.const(0)), cx.const(1), cx.const(0)),
        cuda="kl_step({0})", differentiable=False)

builtin("nonzero", [sig("N", ret="T")], lambda x: x.dtype.type(0 if x == 0 else 1),
        llvm=lambda cx, x: cx.b.select(cx.cmp("==", x, cx.const(0)), cx.const(0),
                                       cx.const(1)),
        cuda="kl_nonzero({0})", differentiable=False)


def _float_test(name, ref, llvm_float, int_answer, every):
    """isfinite / isnan / isinf; on a vector or matrix, isfinite asks every component and the
    other two any component (as Warp)."""
    def llvm(cx, x):
        if not cx.types[0].is_float:
            return ir.Constant(ir.IntType(1), int(int_answer))
        bits = llvm_float(cx, x)
        if not isinstance(bits.type, ir.VectorType):
            return bits
        parts = cx._elements(bits)
        out = parts[0]
        for p in parts[1:]:
            out = (cx.b.and_ if every else cx.b.or_)(out, p)
        return out

    def numpy(x):
        found = np.asarray(ref(x))
        return np.bool_(found.all() if every else found.any())

    builtin(name, [sig("N", ret=bool_), sig("V", ret=bool_), sig("M", ret=bool_)], numpy,
            llvm=llvm, cuda=f"kl_{name}({{0}})", differentiable=False)


def _abs_cmp(op, ordered):
    def lower(cx, x):
        size = cx.intr("llvm.fabs", x)
        inf = cx.splat(ir.Constant(size.type.element if isinstance(size.type, ir.VectorType)
                                   else size.type, float("inf")), size.type)
        return (cx.b.fcmp_ordered if ordered else cx.b.fcmp_unordered)(op, size, inf)
    return lower


_float_test("isfinite", np.isfinite, _abs_cmp("<", True), True, every=True)
_float_test("isinf", np.isinf, _abs_cmp("==", True), False, every=False)
_float_test("isnan", np.isnan, lambda cx, x: cx.b.fcmp_unordered("uno", x, x), False,
            every=False)


# ---- min, max, clamp --------------------------------------------------------------------

def _fmin_ref(a, b):
    """C fmin, element-wise: a if a <= b, else b unless b is NaN."""
    return np.where(a <= b, a, np.where(b == b, b, a)).astype(np.result_type(a))[()]


def _fmax_ref(a, b):
    return np.where(a >= b, a, np.where(b == b, b, a)).astype(np.result_type(a))[()]


def _select_min(cx, a, b, op):
    b_ok = cx.cmp("==", b, b)
    return cx.b.select(cx.cmp(op, a, b), a, cx.b.select(b_ok, b, a))


def _first_ref(less):
    def ref(a, b, adj):
        first = (a == a) & ((b != b) | ((a < b) if less else (a > b)))
        return np.where(first, adj, 0).astype(np.result_type(adj))[()]
    return ref


def _first_llvm(op):
    def lower(cx, a, b, adj):
        first = cx.b.and_(cx.cmp("==", a, a), cx.b.or_(cx.cmp("!=", b, b), cx.cmp(op, a, b)))
        return cx.b.select(first, adj, ir.Constant(adj.type, None))
    return lower


# The adjoint of min/max(a, b) that reaches a: adj where the forward picked a (a is no NaN,
# and b is NaN or a wins the comparison), else 0; element-wise on vectors.
for _name, _less, _op in (("route_min", True, "<"), ("route_max", False, ">")):
    builtin(_name, [sig("N", "N", "N", ret="T"), sig("V", "V", "V", ret="V")],
            _first_ref(_less), llvm=_first_llvm(_op), cuda=f"kl_{_name}({{0}}, {{1}}, {{2}})",
            # linear in what it routes (the tangent of an adjoint, for HVPs, needs that)
            grad=lambda g, a, b, adj, r, ct, name=_name: (None, None, g.call(name, [a, b, ct])),
            linear_in=(2,))


# adj where a == b or both are NaN (element-wise), else 0: the adjoint of atomic_min/max
# reaches the value that won.
def _same_llvm(cx, a, b):
    both_nan = cx.b.and_(cx.cmp("!=", a, a), cx.cmp("!=", b, b))
    return cx.b.or_(cx.cmp("==", a, b), both_nan)


builtin("route_eq", [sig("N", "N", "N", ret="T"), sig("V", "V", "V", ret="V"),
                     sig("M", "M", "M", ret="M")],
        lambda a, b, adj: np.where((a == b) | ((a != a) & (b != b)), adj, 0)
        .astype(np.result_type(adj))[()],
        llvm=lambda cx, a, b, adj: cx.b.select(_same_llvm(cx, a, b), adj,
                                               ir.Constant(adj.type, None)),
        cuda="kl_route_eq({0}, {1}, {2})",
        # linear in what it routes (the tangent of an adjoint, for HVPs, needs that)
        grad=lambda g, a, b, adj, r, ct: (None, None, g.route_eq(a, b, ct)),
        linear_in=(2,))


def _route(g, a, b, adj, op):
    to_a = getattr(g, f"route_{op}")(a, b, adj)
    return to_a, g.sub(adj, to_a)


def _minmax(name, ref, op, pick, less):
    """min/max(a, b) element-wise, or min/max(v) over a vector's components."""
    def numpy(a, b=None):
        return a[_argbest(a, less)] if b is None else ref(a, b)

    def llvm(cx, a, b=None):
        return _vreduce(cx, a, "<" if less else ">")[0] if b is None \
            else _select_min(cx, a, b, op)

    def grad(g, *rest):
        if len(rest) == 3:  # min(v): the adjoint goes to the component picked
            v, _, adj = rest
            return (g.insert(g.zeros(v.type), getattr(g, f"arg{name}")(v), adj),)
        a, b, _, adj = rest
        return _route(g, a, b, adj, pick)

    builtin(name, [sig("N", "N", ret="T"), sig("V", "V", ret="V"), sig("V", ret="T")],
            numpy, llvm=llvm, cuda=f"kl_{name}({{args}})", grad=grad)
    builtin(f"arg{name}", [sig("V", ret=uint32)],
            lambda v: np.uint32(_argbest(v, less)),
            llvm=lambda cx, v: _vreduce(cx, v, "<" if less else ">")[1],
            cuda=f"kl_arg{name}({{0}})", differentiable=False)


def _clamp_grad(g, x, lo, hi, r, adj):
    m = g.max(lo, x)
    adj_m, adj_hi = _route(g, m, hi, adj, "min")
    adj_lo, adj_x = _route(g, lo, x, adj_m, "max")
    return adj_x, adj_lo, adj_hi


builtin("clamp", [sig("N", "N", "N", ret="T")], lambda x, lo, hi: _fmin_ref(_fmax_ref(lo, x), hi),
        llvm=lambda cx, x, lo, hi: _select_min(cx, _select_min(cx, lo, x, ">="), hi, "<="),
        cuda="kl_clamp({0}, {1}, {2})", grad=_clamp_grad)

builtin("or_", [sig("B", "B", ret=bool_)], lambda a, b: np.bool_(a or b),
        llvm=lambda cx, a, b: cx.b.or_(a, b), cuda="({0} || {1})", differentiable=False)


# ---- vector reductions --------------------------------------------------------------------

def _vreduce(cx, v, op):
    """(best value, its index as uint32) over a vector's components; the first one wins."""
    elems = [cx.b.extract_element(v, ir.Constant(ir.IntType(32), i))
             for i in range(v.type.count)]
    best, at = elems[0], ir.Constant(ir.IntType(32), 0)
    for i, e in enumerate(elems[1:], 1):  # e wins when better, or when best is NaN and e not
        nan_best = cx.b.and_(cx.cmp("!=", best, best), cx.cmp("==", e, e))
        better = cx.b.or_(cx.cmp(op, e, best), nan_best)
        best = cx.b.select(better, e, best)
        at = cx.b.select(better, ir.Constant(ir.IntType(32), i), at)
    return best, at


def _argbest(v, less):
    """The first index of the smallest (largest) component; NaN components lose, as in a
    reduction by fmin (fmax)."""
    best = 0
    for i in range(1, len(v)):
        wins = (v[i] < v[best]) if less else (v[i] > v[best])
        if wins or (v[best] != v[best] and v[i] == v[i]):
            best = i
    return best


_minmax("min", _fmin_ref, "<=", "min", True)
_minmax("max", _fmax_ref, ">=", "max", False)


# ---- component-wise products (Warp's cw_mul, cw_div) ----------------------------------------

_CW = [sig("V", "V", ret="V"), sig("M", "M", ret="M")]
builtin("cw_mul", _CW, lambda a, b: np.multiply(a, b).astype(a.dtype),
        llvm=lambda cx, a, b: cx.arith("mul", a, b), cuda="kl_cw_mul({0}, {1})",
        grad=lambda g, a, b, r, adj: (g.cw_mul(adj, b), g.cw_mul(adj, a)))
builtin("cw_div", _CW, _np_div,
        llvm=lambda cx, a, b: cx.div(a, b), cuda="kl_cw_div({0}, {1})",
        grad=lambda g, a, b, r, adj: (g.cw_div(adj, b), g.neg(g.cw_div(g.cw_mul(adj, r), b))))


# ---- integer bit operations -------------------------------------------------------------

def _np_int(fn):
    """Reference of a bit operation: Python ints, wrapped to the operands' type;
    component by component on integer vectors."""
    def ref(a, *rest):
        if np.ndim(a):
            out = np.array(a, copy=True)
            for k in np.ndindex(out.shape):
                out[k] = ref(np.asarray(a)[k], *(np.asarray(b)[k] for b in rest))
            return out
        t = np.result_type(a)
        bits = t.itemsize * 8
        out = fn(int(a), *(int(b) for b in rest), bits) & ((1 << bits) - 1)
        if t.kind == "i" and out >> (bits - 1):
            out -= 1 << bits
        return t.type(out)
    return ref


def _shift_ref(left):
    def fn(a, b, bits):
        n = b & (max(bits, 32) - 1)  # the hardware masks the count of a 32/64-bit shift
        return a << n if left else a >> n
    return fn


def _widened(cx, a, b, op):
    """Run ``op`` in at least 32 bits (C's promotion), then truncate to the operand type."""
    if isinstance(a.type, ir.VectorType):  # an integer vector: component by component
        return cx._gather(a.type, [_widened(cx, x, y, op) for x, y in
                                   zip(cx._elements(a), cx._elements(b))])
    ty, signed = a.type, cx._kind(a) == "i"
    if ty.width >= 32:
        return op(a, cx.b.and_(b, ir.Constant(ty, ty.width - 1)))
    wide = ir.IntType(32)
    ext = cx.b.sext if signed else cx.b.zext
    r = op(ext(a, wide), cx.b.and_(ext(b, wide), ir.Constant(wide, 31)))
    return cx.b.trunc(r, ty)


# scalars, and integer vectors component by component (Warp's &, |, ^, <<, >>, ~ on them)
_INT2 = [sig("I", "I", ret="T"), sig("IV", "IV", ret="V")]
builtin("bit_and", _INT2, _np_int(lambda a, b, bits: a & b),
        llvm=lambda cx, a, b: cx.b.and_(a, b), cuda="({0} & {1})", differentiable=False)
builtin("bit_or", _INT2, _np_int(lambda a, b, bits: a | b),
        llvm=lambda cx, a, b: cx.b.or_(a, b), cuda="({0} | {1})", differentiable=False)
builtin("bit_xor", _INT2, _np_int(lambda a, b, bits: a ^ b),
        llvm=lambda cx, a, b: cx.b.xor(a, b), cuda="({0} ^ {1})", differentiable=False)
builtin("lshift", _INT2, _np_int(_shift_ref(True)),
        llvm=lambda cx, a, b: _widened(cx, a, b, cx.b.shl), cuda="kl_lshift({0}, {1})",
        differentiable=False)
builtin("rshift", _INT2, _np_int(_shift_ref(False)),
        llvm=lambda cx, a, b: _widened(cx, a, b, cx.b.ashr if cx._kind(a) == "i"
                                       else cx.b.lshr),
        cuda="kl_rshift({0}, {1})", differentiable=False)
builtin("invert", [sig("I", ret="T"), sig("IV", ret="V")], _np_int(lambda a, bits: ~a),
        llvm=lambda cx, a: cx.b.not_(a), cuda="(~{0})", differentiable=False)


# ---- atomics: which element types each kind accepts (as Warp) ---------------------------

_INT3264 = (int32, uint32, int64, uint64)
ATOMIC_SCALARS = {
    "add": _INT3264 + (float16, bfloat16, float32, float64),
    "sub": _INT3264 + (float16, bfloat16, float32, float64),
    "min": _INT3264 + (bfloat16, float32, float64),
    "max": _INT3264 + (bfloat16, float32, float64),
    "and": _INT3264, "or": _INT3264, "xor": _INT3264,
    "exch": _INT3264 + (float32, float64), "cas": _INT3264 + (float32, float64),
}
_ATOMIC_WORDS = {
    "add": "[u]int32, [u]int64, float16, bfloat16, float32, or float64",
    "min": "[u]int32, [u]int64, bfloat16, float32, or float64",
    "and": "[u]int32 or [u]int64", "exch": "[u]int32, [u]int64, float32, or float64",
}


def atomic_type_error(kind: str, dtype) -> str | None:
    """Why atomic_<kind> cannot work on an array of dtype, or None when it can."""
    s = dtype.scalar
    if s in ATOMIC_SCALARS[kind]:
        return None
    words = _ATOMIC_WORDS[{"sub": "add", "max": "min", "or": "and", "xor": "and",
                           "cas": "exch"}.get(kind, kind)]
    return (f"atomic_{kind}() operations only work on arrays with {words} as the underlying "
            f"scalar types, but got {type_repr(dtype)} (with scalar type {type_repr(s)})")
