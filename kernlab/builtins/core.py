"""Operators, comparisons, casts, constructors and component access.

Integer division and remainder follow C (and Warp): ``/`` truncates toward zero, ``%``
takes the sign of the dividend; ``//`` floors (Warp 1.19, like Python); a zero divisor
gives 0 instead of trapping. On floats ``//`` is floor(a / b) and ``%`` is fmod.
"""
from __future__ import annotations

import numpy as np
from .llvm_ir import ir

from ..types import Matrix, Type, Vector, bool_, int32
from .registry import REGISTRY, builtin, sig


def _np_type(t: Type):
    return t.scalar.np.type


def _add_sigs():  # tiles (types.Tile) add element-wise, as vectors do
    return [sig("N", "N", ret="T"), sig("V", "V", ret="V"), sig("M", "M", ret="M"),
            sig("L", "L", ret="L")]


# ---- arithmetic -----------------------------------------------------------------------

builtin("add", _add_sigs(), lambda a, b: a + b,
        llvm=lambda cx, a, b: cx.arith("add", a, b), cuda="({0} + {1})",
        grad=lambda g, a, b, r, adj: (adj, adj), linear_in="all")

builtin("sub", _add_sigs(), lambda a, b: a - b,
        llvm=lambda cx, a, b: cx.arith("sub", a, b), cuda="({0} - {1})",
        grad=lambda g, a, b, r, adj: (adj, g.neg(adj)), linear_in="all")

builtin("neg", [sig("N", ret="T"), sig("V", ret="V"), sig("M", ret="M"), sig("L", ret="L")],
        lambda a: -a,
        llvm=lambda cx, a: cx.neg(a), cuda="(-{0})",
        grad=lambda g, a, r, adj: (g.neg(adj),), linear_in="all")


def _mul_ret_mv(b):
    m, v = b["M"], b["V"]
    return Vector(m.rows, m.dtype) if m.cols == v.length else None


def _mul_ret_vm(b):  # v * M is the row vector v^T M, as Warp
    m, v = b["M"], b["V"]
    return Vector(m.cols, m.dtype) if m.rows == v.length else None


def _np_mul(a, b, types=None, ret=None):
    if types is not None and (types[0].is_tile or types[1].is_tile):  # element-wise
        return np.asarray(a * b, ret.scalar.np)
    if np.ndim(a) == 1 and np.ndim(b) == 2:  # v^T M == M^T v
        return _np_mul(b.T, a)
    if np.ndim(a) == 2 and np.ndim(b) >= 1:
        if a.dtype == np.float16:  # each product and each partial sum rounded to half, over
            cols = b if b.ndim == 2 else b[:, None]  # k in order, as compiled (and in Warp);
            acc = a[:, :1] * cols[:1]                # NumPy's half matmul rounds only once
            for k in range(1, a.shape[1]):
                acc = acc + a[:, k:k + 1] * cols[k:k + 1]
            return acc if b.ndim == 2 else acc[:, 0]
        return (a @ b).astype(a.dtype)
    return a * b


def _mul_grad(g, a, b, r, adj):
    ta, tb = a.type, b.type
    if ta.is_matrix and (tb.is_vector or tb.is_matrix):
        return g.mul(adj, g.transpose(b)) if tb.is_matrix else g.outer(adj, b), \
            g.mul(g.transpose(a), adj)
    if ta.is_vector and tb.is_matrix:  # r = v^T M: adj_v = M adj, adj_M = v adj^T
        return g.mul(b, adj), g.outer(a, adj)
    if ta.is_scalar and not tb.is_scalar:
        return g.inner(adj, b), g.mul(a, adj)
    if tb.is_scalar and not ta.is_scalar:
        return g.mul(adj, b), g.inner(adj, a)
    return g.mul(adj, b), g.mul(adj, a)


class _TileTileSig:
    """(L, L) of one type with scalar elements: element-wise."""

    params = ("L", "L")

    def match(self, types):
        if len(types) == 2 and types[0].is_tile and types[0] == types[1] \
                and types[0].dtype.is_scalar:
            return {"L": types[0]}
        return None

    def result(self, bind):
        return bind["L"]

    def __str__(self):
        return "(L, L) -> L (element-wise, scalar elements)"


class _MatMulSig:
    """mul(M, M) with matching inner dimensions; separate because it binds two matrices."""

    params = ("M", "M")

    def match(self, types):
        if len(types) == 2 and all(t.is_matrix for t in types) \
                and types[0].dtype == types[1].dtype and types[0].cols == types[1].rows:
            return {"R": Matrix(types[0].rows, types[1].cols, types[0].dtype)}
        return None

    def result(self, bind):
        return bind["R"]

    def __str__(self):
        return "(M[r,k], M[k,c]) -> M[r,c]"


builtin("mul", [sig("N", "N", ret="T"), sig("N", "V", ret="V"), sig("V", "N", ret="V"),
                sig("N", "M", ret="M"), sig("M", "N", ret="M"),
                sig("M", "V", ret=_mul_ret_mv), sig("V", "M", ret=_mul_ret_vm), _MatMulSig(),
                sig("N", "L", ret="L"), sig("L", "N", ret="L"), _TileTileSig()],
        _np_mul, llvm=lambda cx, a, b: cx.mul(a, b), cuda="({0} * {1})", grad=_mul_grad,
        scales=(0, 1), extra={"typed": True})


def _c_int_div(x, y) -> int:
    x, y = int(x), int(y)  # Python ints: NumPy's abs(INT64_MIN) overflows
    if y == 0:
        return 0
    q = abs(x) // abs(y)  # exact integer arithmetic, truncating toward zero like C
    return q if (x < 0) == (y < 0) else -q


def _wrap_int(values, t: np.dtype):
    """Python ints to dtype t with C's wrap-around (INT_MIN / -1 == INT_MIN)."""
    bits = t.itemsize * 8
    span, low = 1 << bits, (1 << (bits - 1)) if t.kind == "i" else 0
    wrapped = [((int(v) + low) % span) - low for v in np.ravel(values)]
    return np.array(wrapped, t).reshape(np.shape(values))


def _np_div(a, b):
    t = np.result_type(a, b)
    if np.issubdtype(t, np.integer):
        q = np.vectorize(_c_int_div, otypes=[object])(np.asarray(a, object),
                                                      np.asarray(b, object))
        return _wrap_int(q, t)[()]
    return (a / b).astype(t) if np.ndim(a) else t.type(a / b)


def _div_grad(g, a, b, r, adj):
    if b.type.is_tile:  # element-wise: d/da = adj / b, d/db = -adj r / b
        da = g.div(adj, b) if a.type.is_tile else g.inner(adj, g.div(g.const(1, a.type), b))
        return da, g.neg(g.div(g.mul(adj, r), b))
    if b.type.is_scalar:
        # -(adj . a) / b^2, in Warp's order of operations (float16 rounds as in Warp)
        return g.div(adj, b), g.neg(g.div(g.inner(adj, a), g.mul(b, b)))
    # s / v, component-wise: d/ds = sum(adj / v), d/dv = -adj r / v
    return g.inner(adj, g.div(g.const(1, a.type), b)), g.neg(g.cw_div(g.cw_mul(adj, r), b))


builtin("div", [sig("N", "N", ret="T"), sig("V", "N", ret="V"), sig("M", "N", ret="M"),
                sig("L", "N", ret="L"), _TileTileSig(),
                sig("N", "L", ret=lambda b: b["L"] if b["L"].dtype.is_scalar else None),
                sig("N", "V", ret="V"), sig("N", "M", ret="M")],
        _np_div, llvm=lambda cx, a, b: cx.div(a, b), cuda="({0} / {1})",  # ints: kl_div
        grad=_div_grad, scales=(0,))


def _np_floordiv(a, b):
    t = np.result_type(a, b)
    if np.issubdtype(t, np.integer):
        if b == 0:
            return t.type(0)
        return _wrap_int([int(a) // int(b)], t)[0]  # Python's // floors, as Warp 1.19
    return t.type(np.floor(a / b))


# Integers and floats: floor(a / b), as Warp 1.19 (and Python); a zero divisor gives 0.
builtin("floordiv", [sig("N", "N", ret="T")], _np_floordiv,
        llvm=lambda cx, a, b: cx.floordiv(a, b), cuda="kl_floordiv({0}, {1})",
        differentiable=False)


def _np_mod(a, b):
    t = np.result_type(a, b)
    if np.issubdtype(t, np.integer):
        out = np.where(np.asarray(b) == 0, 0, np.fmod(a, np.where(np.asarray(b) == 0, 1, b)))
        return out.astype(t)[()]
    return np.fmod(a, b).astype(t)[()]


def _mod_grad(g, a, b, r, adj):
    """d/da = 1; d/db = -trunc(a / b) (Warp leaves b without a gradient: that is wrong).
    On vectors trunc(a / b) is (a - r) / b, component-wise."""
    if a.type.is_scalar:
        return adj, g.neg(g.mul(adj, g.trunc(g.div(a, b))))
    return adj, g.neg(g.cw_div(g.cw_mul(adj, g.sub(a, r)), b))


builtin("mod", [sig("N", "N", ret="T"), sig("V", "V", ret="V")], _np_mod,
        llvm=lambda cx, a, b: cx.mod(a, b), cuda="kl_mod({0}, {1})", grad=_mod_grad)

builtin("trunc", [sig("F", ret="T")], np.trunc,
        llvm=lambda cx, a: cx.intr("llvm.trunc", a), cuda="trunc({0})", differentiable=False)


# ---- comparisons and logic --------------------------------------------------------------

def _cmp(name, fn, cuda_op):
    builtin(name, [sig("N", "N", ret=bool_), sig("B", "B", ret=bool_)],
            lambda a, b: np.bool_(fn(a, b)), llvm=lambda cx, a, b: cx.cmp(cuda_op, a, b),
            cuda=f"({{0}} {cuda_op} {{1}})", differentiable=False)


def _vector_equality(name, every):
    """v == w: every component equal; v != w: some component differs (as Warp)."""
    op = "==" if every else "!="
    old = REGISTRY[name]

    def numpy(a, b):
        found = np.asarray(a == b) if every else np.asarray(a != b)
        return np.bool_(found.all() if every else found.any())

    def llvm(cx, a, b):
        bits = cx.cmp(op, a, b)
        if not isinstance(bits.type, ir.VectorType):
            return bits
        parts = [cx.b.extract_element(bits, ir.Constant(ir.IntType(32), i))
                 for i in range(bits.type.count)]
        out = parts[0]
        for p in parts[1:]:
            out = (cx.b.and_ if every else cx.b.or_)(out, p)
        return out

    old.sigs += [sig("V", "V", ret=bool_), sig("M", "M", ret=bool_)]
    old.numpy, old.llvm, old.cuda = numpy, llvm, f"kl_{name}({{0}}, {{1}})"


def comparison_type(a, b):
    """The type in which ``a < b`` (any comparison) of two different scalar types is
    compared. Warp writes comparisons as C++ operators, so its operands meet by C++'s usual
    arithmetic conversions, and kernlab follows them: a float and an integer compare as that
    float (int -> float32 rounds large integers, as in C++); two floats as the wider one;
    integers are first promoted to at least int32 (bool, int8 ... uint16), then a signed and
    an unsigned type of at least its rank compare as the unsigned one (``-1 < uint32(1)``
    is False, as in Warp), and int64 with uint32 as int64. None where Warp has no such
    comparison (float16 with another type: its half struct makes the C++ ambiguous)."""
    if a == b:
        return a
    if not (getattr(a, "is_scalar", False) and getattr(b, "is_scalar", False)) \
            or "float16" in (a.name, b.name) or "bfloat16" in (a.name, b.name):
        return None
    if a.is_float or b.is_float:
        return max((t for t in (a, b) if t.is_float), key=lambda t: t.bits)
    a, b = (int32 if t.kind == "b" or t.bits < 32 else t for t in (a, b))
    if a == b:
        return a
    if a.kind == b.kind:
        return max(a, b, key=lambda t: t.bits)
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    return unsigned if unsigned.bits >= signed.bits else signed


_cmp("eq", lambda a, b: a == b, "==")
_cmp("ne", lambda a, b: a != b, "!=")
_cmp("lt", lambda a, b: a < b, "<")
_cmp("le", lambda a, b: a <= b, "<=")
_cmp("gt", lambda a, b: a > b, ">")
_cmp("ge", lambda a, b: a >= b, ">=")
_vector_equality("eq", every=True)
_vector_equality("ne", every=False)

builtin("not_", [sig("B", ret=bool_)], lambda a: np.bool_(not a),
        llvm=lambda cx, a: cx.b.not_(a), cuda="(!{0})", differentiable=False)

builtin("where", [sig("B", "X", "X", ret="T"), sig("B", "V", "V", ret="V"),
                  sig("B", "M", "M", ret="M")],
        lambda c, a, b: a if c else b, llvm=lambda cx, c, a, b: cx.b.select(c, a, b),
        cuda="({0} ? {1} : {2})",
        grad=lambda g, c, a, b, r, adj: (None, g.where(c, adj, g.zeros(a.type)),
                                         g.where(c, g.zeros(b.type), adj)),
        linear_in=(1, 2))

# Warp's older spelling, with the other order: select(cond, value_if_false, value_if_true)
builtin("select", [sig("B", "X", "X", ret="T"), sig("B", "V", "V", ret="V"),
                   sig("B", "M", "M", ret="M")],
        lambda c, a, b: b if c else a, llvm=lambda cx, c, a, b: cx.b.select(c, b, a),
        cuda="({0} ? {2} : {1})",
        grad=lambda g, c, a, b, r, adj: (None, g.where(c, g.zeros(a.type), adj),
                                         g.where(c, adj, g.zeros(b.type))),
        linear_in=(1, 2))


# ---- casts and constructors ---------------------------------------------------------------

def _np_cast(x, target):
    el = target.scalar
    x = np.asarray(x)
    if el == bool_:
        out = x != 0
    elif el.is_int and (np.issubdtype(x.dtype, np.floating) or x.dtype.name == "bfloat16"):
        out = _saturate(x.astype(np.float64), el.np)  # NaN gives 0, like LLVM's fptosi.sat
    else:
        out = x
    return out.astype(el.np)[()] if target.is_scalar else out.astype(el.np)


def _saturate(xf: np.ndarray, t: np.dtype) -> np.ndarray:
    info = np.iinfo(t)
    big, small = xf >= float(info.max), xf <= float(info.min)
    mid = ~(big | small | np.isnan(xf))
    out = np.zeros(xf.shape, t)
    out[big], out[small] = info.max, info.min
    out[mid] = np.trunc(xf[mid]).astype(np.int64 if t.kind == "i" else np.uint64)
    return out


def _cast_ret(b):
    t, target = b.get("V") or b.get("M") or b.get("L") or b["T"], b["target"]
    if t.is_tile != target.is_tile:  # a tile casts to a tile (tile_astype), element-wise
        return None
    if target.is_scalar and t.is_scalar:
        return target
    if not target.is_scalar and t.shape == target.shape:
        return target
    return None


builtin("cast", [sig("X", ret=_cast_ret), sig("V", ret=_cast_ret), sig("M", ret=_cast_ret),
                 sig("L", ret=_cast_ret)],
        lambda x, target=None: _np_cast(x, target), targeted=True,
        llvm=lambda cx, x: cx.cast(x, cx.types[0], cx.ret), cuda="kl_cast<{T}>({0})",
        grad=lambda g, x, r, adj: (g.cast(adj, x.type) if x.type.is_float else None,),
        linear_in=(0,))


def _construct_ret(b):
    target = b["target"]
    return target if target is not None and (target.is_vector or target.is_matrix) else None


class _ConstructSig:
    """vecN(x1..xN), vecN(s), vecN(), matRC(r*c scalars), matRC(s), matRC(row vectors)."""

    params = ("T...",)

    def match(self, types):
        return {"types": types}

    def result(self, bind):
        target, types = bind["target"], bind["types"]
        if target is None or not (target.is_vector or target.is_matrix):
            return None
        n = target.length
        if all(t.is_scalar and (t.kind != "b") == (target.dtype.kind != "b") for t in types) \
                and len(types) in (0, 1, n):
            return target
        if target.is_matrix and len(types) == target.rows and all(
                t == Vector(target.cols, target.dtype) for t in types):
            return target
        return None

    def __str__(self):
        return "(scalars... | rows...) -> vector/matrix"


def _np_construct(*args, target=None):
    if not args:
        return np.zeros(target.shape, target.dtype.np)
    if len(args) == 1 and np.ndim(args[0]) == 0:
        return np.full(target.shape, args[0], target.dtype.np)
    return np.array([np.asarray(a, target.dtype.np) for a in args]).reshape(target.shape)


def _construct_grad(g, *rest):
    args, adj = rest[:-2], rest[-1]
    if len(args) == 1 and args[0].type.is_scalar:
        return (g.sum(adj),)
    if args and args[0].type.is_vector:  # matrix from rows
        return tuple(g.index(adj, g.const(i)) for i in range(len(args)))
    flat = g.reshape(adj, target=Vector(adj.type.length, adj.type.dtype))
    return tuple(g.index(flat, g.const(i)) for i in range(len(args)))


builtin("construct", [_ConstructSig()], _np_construct, targeted=True,
        llvm=lambda cx, *a: cx.construct(a), cuda="{T}({args})", grad=_construct_grad,
        linear_in="all")


# ---- component access (values, never references) ---------------------------------------

def _index_ret(b):
    t, idx = b["types"][0], b["types"][1:]
    if not all(i.is_scalar and i.is_int for i in idx):
        return None
    if t.is_vector and len(idx) == 1:
        return t.dtype
    if t.is_matrix and len(idx) == 1:
        return Vector(t.cols, t.dtype)
    if t.is_matrix and len(idx) == 2:
        return t.dtype
    return None


class _AnySig:
    def __init__(self, ret, text):
        self.ret, self.text = ret, text

    def match(self, types):
        return {"types": types}

    def result(self, bind):
        return self.ret(bind)

    def __str__(self):
        return self.text


def _np_index(v, *idx):
    return v[tuple(int(i) for i in idx)].copy() if len(idx) == 1 and np.ndim(v) == 2 \
        else v[tuple(int(i) for i in idx)]


def _index_grad(g, v, *rest):
    idx, adj = rest[:-2], rest[-1]
    return (g.insert(g.zeros(v.type), *idx, adj),) + (None,) * len(idx)


builtin("index", [_AnySig(_index_ret, "(vector, int) | (matrix, int[, int])")], _np_index,
        llvm=lambda cx, v, *i: cx.index(v, i), cuda="{0}[{1}]", grad=_index_grad,
        linear_in=(0,))


def _insert_ret(b):
    t, idx, x = b["types"][0], b["types"][1:-1], b["types"][-1]
    part = _index_ret({"types": [t, *idx]})
    return t if part is not None and part == x else None


def _np_insert(v, *rest):
    out = v.copy()
    out[tuple(int(i) for i in rest[:-1])] = rest[-1]
    return out


def _insert_grad(g, v, *rest):
    idx, adj = rest[:-3], rest[-1]
    return (g.insert(adj, *idx, g.zeros(rest[-3].type)),) + (None,) * len(idx) \
        + (g.index(adj, *idx),)


builtin("insert", [_AnySig(_insert_ret, "(vector, int, scalar) | (matrix, int[, int], value)")],
        _np_insert, llvm=lambda cx, v, *rest: cx.insert(v, rest[:-1], rest[-1]),
        cuda="kl_insert({args})", grad=_insert_grad, linear_in=(0, -1))


# ---- helpers the derivative rules use ------------------------------------------------------

builtin("inner", [sig("N", "N", ret="T"), sig("V", "V", ret="T"), sig("M", "M", ret="T"),
                  sig("L", "L", ret="T")],
        lambda a, b: (a * b).sum(dtype=np.result_type(a, b)) if np.ndim(a) else a * b,
        llvm=lambda cx, a, b: cx.reduce_add(cx.arith("mul", a, b)), cuda="kl_inner({0}, {1})",
        grad=lambda g, a, b, r, adj: (g.mul(adj, b), g.mul(adj, a)))


def _sum_ret(b):
    t = b["types"][0]
    return t.dtype if len(b["types"]) == 1 and (t.is_vector or t.is_matrix) else None


builtin("sum", [_AnySig(_sum_ret, "(vector | matrix) -> scalar")],
        lambda v: v.sum(dtype=v.dtype), llvm=lambda cx, v: cx.reduce_add(v),
        cuda="kl_sum({0})", grad=lambda g, v, r, adj: (g.construct(adj, target=v.type),))


def _reshape_ret(b):
    t, target = b["types"][0], b["target"]
    ok = len(b["types"]) == 1 and not t.is_scalar and target is not None \
        and not target.is_scalar and target.length == t.length and target.dtype == t.dtype
    return target if ok else None


builtin("reshape", [_AnySig(_reshape_ret, "(vector | matrix) -> same-length vector | matrix")],
        lambda v, target=None: v.reshape(target.shape).copy(), targeted=True,
        llvm=lambda cx, v: v, cuda="kl_reshape<{T}>({0})",
        grad=lambda g, v, r, adj: (g.reshape(adj, target=v.type),))
