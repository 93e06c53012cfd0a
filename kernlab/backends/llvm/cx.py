"""The lowering context that builtin records call: ``cx.arith``, ``cx.mul``, ``cx.cast`` ...

Each builtin's ``llvm=`` lambda receives this object and LLVM values. For one call,
``cx.types`` holds the kernlab types of the operands and ``cx.ret`` the result type, so
``cx.const(0)`` means "zero of the result type" and integer operations know whether they
are signed. Registers hold float/double, i32/i64 and i1; vectors are ``<n x T>`` and
matrices ``<r*c x T>`` in row-major order.
"""
from __future__ import annotations

import math

import numpy as np
from . import textir as ir

from ...builtins.linalg import cofactor_expand, det_expand
from .tiles import TileContext, storage_type
from ...types import Matrix, Scalar, Tile, Type, Vector, float32, float64, is_bfloat16

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()

# float16 registers are LLVM half: every operation rounds to half, as Warp's CPU half does
_FLOAT_TYPES = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}
_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}


def ll_type(t: Type) -> ir.Type:
    """The register type of a kernlab value type (bfloat16: a float holding a bfloat16
    value; every builtin's result of that type is rounded, see BuiltinContext)."""
    if isinstance(t, Scalar):
        if t.kind == "f":
            if t.name == "bfloat16":
                return ir.FloatType()
            return _FLOAT_TYPES[t.bits]
        return I1 if t.kind == "b" else ir.IntType(t.bits)
    if isinstance(t, (Vector, Matrix)):
        return ir.VectorType(ll_type(t.dtype), t.length)
    if isinstance(t, Tile):  # a pointer to a buffer of its scalars (tiles.py)
        return storage_type(t).as_pointer()
    raise TypeError(f"{t} has no LLVM register type")


def slot_type(t: Type) -> ir.Type:
    """What a local of type t occupies: its register, or a tile's whole buffer."""
    return storage_type(t) if isinstance(t, Tile) else ll_type(t)


def mem_type(s: Scalar) -> ir.Type:
    """How a scalar is stored in memory (bool takes a byte, bfloat16 its 16 bits)."""
    if s.name == "bfloat16":
        return ir.IntType(16)
    return I8 if s.kind == "b" else ll_type(s)


# bfloat16 is the upper half of a float32: widening is a shift, narrowing rounds to nearest
# even (a NaN stays a quiet NaN), as Warp's float_to_bfloat16 does

def bf16_widen(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """16-bit patterns (scalar or vector of i16) -> the floats they are."""
    i32 = _like(bits.type, I32)
    wide = b.shl(b.zext(bits, i32), _const_like(i32, 16))
    return b.bitcast(wide, _like(bits.type, ir.FloatType()))


def bf16_narrow(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Floats (scalar or vector) -> the 16-bit patterns of their nearest bfloat16."""
    i32 = _like(x.type, I32)
    u = b.bitcast(x, i32)
    odd = b.and_(b.lshr(u, _const_like(i32, 16)), _const_like(i32, 1))
    rounded = b.add(u, b.add(_const_like(i32, 0x7FFF), odd))
    nan = b.fcmp_unordered("uno", x, x)
    quiet = b.or_(u, _const_like(i32, 0x00400000))
    u = b.select(nan, quiet, rounded)
    return b.trunc(b.lshr(u, _const_like(i32, 16)), _like(x.type, ir.IntType(16)))


def bf16_round(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Floats rounded to the nearest bfloat16 (still floats)."""
    return bf16_widen(b, bf16_narrow(b, x))


_FLOAT_CLASSES = frozenset((ir.HalfType, ir.FloatType, ir.DoubleType))


def is_float(ty: ir.Type) -> bool:
    cls = type(ty)
    if cls is ir.VectorType:
        cls = type(ty.element)
    return cls in _FLOAT_CLASSES


def _const_like(ty: ir.Type, value) -> ir.Constant:
    """value as a constant of ty, splatted over a vector type."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def _like(ty: ir.Type, element: ir.Type) -> ir.Type:
    """element, or a vector of it as long as ty when ty is a vector."""
    return ir.VectorType(element, ty.count) if isinstance(ty, ir.VectorType) else element


def _mangle(ty: ir.Type) -> str:
    """An overloaded intrinsic's type suffix: f32, f64, f16, i32, v3f32 ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return {ir.HalfType: "f16", ir.FloatType: "f32"}.get(type(ty), "f64")


_CONSTANTS: dict = {}  # (scalar name, value[, sign of a zero]) -> its ir.Constant
_CONSTANTS_MAX = 4096  # emptied when it grows past this (a session compiles many kernels)
_NUMBERS = frozenset([int, float, bool] + [np.dtype(c).type for c in "?bhilqBHILQefd"])


def constant(t: Type, value) -> ir.Constant:
    """An LLVM constant of kernlab type t (value is broadcast over vectors/matrices)."""
    if t.is_scalar:
        # A constant is immutable, so one object serves every use. Python and NumPy numbers
        # that are equal (with the same sign: 0.0 == -0.0) make the same constant of a
        # type; NaN, equal to nothing, is made anew.
        if type(value) in _NUMBERS and value == value:
            key = (t.name, value) if value else (t.name, value, math.copysign(1.0, value))
            c = _CONSTANTS.get(key)
            if c is None:
                if len(_CONSTANTS) >= _CONSTANTS_MAX:
                    _CONSTANTS.clear()
                c = _CONSTANTS[key] = _scalar_const(t, value)
            return c
        return _scalar_const(t, value)
    flat = np.broadcast_to(np.asarray(value, t.scalar.np), t.shape).reshape(-1)
    return ir.Constant(ll_type(t), [_scalar_const(t.scalar, x) for x in flat])


def _scalar_const(s: Scalar, value) -> ir.Constant:
    if s.kind == "f":
        return ir.Constant(ll_type(s), float(value))
    if s.kind == "b":
        return ir.Constant(I1, int(bool(value)))
    return ir.Constant(ll_type(s), int(value) & ((1 << s.bits) - 1))


class BuiltinContext(TileContext):
    """What a builtin's ``llvm`` lambda sees as ``cx``; one per function being built."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder):
        self.module = module
        self.b = builder
        self.types: list[Type] = []
        self.ret: Type | None = None

    def call_builtin(self, builtin, args, types, ret):
        """Lower one CALL: set the operand/result types (``types``, a list the context
        keeps), then run the record's lambda."""
        self.types, self.ret = types, ret
        tile = ret is not None and ret.is_tile
        if not tile:
            for t in types:
                if t.is_tile:
                    tile = True
                    break
        if tile and not builtin.name.startswith("tile"):
            return self.tile_lift(builtin, args, types, ret)  # element-wise (tiles.py)
        out = builtin.llvm(self, *args)
        if out is not None and is_bfloat16(ret) and not ret.is_tile:
            out = bf16_round(self.b, out)  # computed in float, rounded once (as Warp)
        return out

    # ---- helpers --------------------------------------------------------------------------

    def _kind(self, v: ir.Value) -> str:
        """'f', 'b', 'u' or 'i' for a value: floats and bools from the LLVM type, the
        signedness of integers from the operand types of the current call."""
        if is_float(v.type):
            return "f"
        el = v.type.element if isinstance(v.type, ir.VectorType) else v.type
        if el.width == 1:
            return "b"
        kinds = [t.scalar.kind for t in self.types if not t.is_array and t.scalar.is_int]
        return "u" if kinds and kinds[0] == "u" else "i"

    def const(self, value, type: Type | None = None) -> ir.Constant:
        """A constant of ``type`` (default: the current call's result type)."""
        return constant(type or self.ret, value)

    def splat(self, x: ir.Value, like: ir.Type) -> ir.Value:
        """x (a scalar) broadcast to the vector type ``like``; x itself if like is scalar."""
        if not isinstance(like, ir.VectorType) or isinstance(x.type, ir.VectorType):
            return x
        if isinstance(x, ir.Constant):
            return ir.Constant(like, [x] * like.count)
        v = self.b.insert_element(ir.Constant(like, ir.Undefined), x, I32(0))
        return self.b.shuffle_vector(v, ir.Constant(like, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, like.count), [0] * like.count))

    def _elements(self, v: ir.Value) -> list:
        return [self.b.extract_element(v, I32(i)) for i in range(v.type.count)]

    def _gather(self, ty: ir.VectorType, elems) -> ir.Value:
        out = ir.Constant(ty, ir.Undefined)
        for i, e in enumerate(elems):
            out = self.b.insert_element(out, e, I32(i))
        return out

    # ---- arithmetic -----------------------------------------------------------------------

    def arith(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """add / sub / mul, element-wise on vectors and matrices (scalars broadcast)."""
        if a.type is not b.type:  # (one scalar type is one object: no splat)
            a, b = self.splat(a, b.type), self.splat(b, a.type)
        return self._op2(op, a, b)

    def neg(self, a: ir.Value) -> ir.Value:
        """-a; for floats an fneg, so -(0.0) is -0.0 as in NumPy."""
        if is_float(a.type):
            return self.b.fneg(a)
        return self.b.sub(ir.Constant(a.type, None), a)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        ta, tb = self.types
        if ta.is_matrix and tb.is_vector:
            return self._matmul(a, ta.rows, ta.cols, b, 1)
        if ta.is_matrix and tb.is_matrix:
            return self._matmul(a, ta.rows, ta.cols, b, tb.cols)
        if ta.is_vector and tb.is_matrix:  # a row vector: (1 x rows) @ (rows x cols)
            return self._matmul(a, 1, tb.rows, b, tb.cols)
        return self.arith("mul", a, b)

    def _matmul(self, a, rows, inner, b, cols):
        """(rows x inner) @ (inner x cols), both row-major; cols == 1 for a vector."""
        ea, eb = self._elements(a), self._elements(b)
        out = []
        for i in range(rows):
            for j in range(cols):
                acc = None
                for k in range(inner):
                    term = self._op2("mul", ea[i * inner + k], eb[k * cols + j])
                    acc = term if acc is None else self._op2("add", acc, term)
                out.append(acc)
        return self._gather(ll_type(self.ret), out)

    def _op2(self, op, a, b):
        return (_FLOAT_OPS if is_float(a.type) else _INT_OPS)[op](self.b, a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        a, b = self.splat(a, b.type), self.splat(b, a.type)
        if is_float(a.type):
            return self.b.fdiv(a, b)
        return self._int_divrem(a, b, rem=False)

    def mod(self, a: ir.Value, b: ir.Value) -> ir.Value:
        if is_float(a.type):
            return self.b.frem(a, b)
        return self._int_divrem(a, b, rem=True)

    def floordiv(self, a: ir.Value, b: ir.Value) -> ir.Value:
        """floor(a / b) for floats; integers truncate like ``/`` (C and Warp semantics)."""
        if is_float(a.type):
            return self.intr("llvm.floor", self.b.fdiv(a, b))
        q = self._int_divrem(a, b, rem=False)
        if self._kind(a) == "u":
            return q
        r = self._int_divrem(a, b, rem=True)  # q - 1 when inexact and the signs differ
        zero = _const_like(a.type, 0)
        signs_differ = self.b.icmp_signed("<", self.b.xor(r, b), zero)
        fix = self.b.and_(self.b.icmp_signed("!=", r, zero), signs_differ)
        return self.b.sub(q, self.b.zext(fix, a.type))

    def _int_divrem(self, a, b, rem: bool):
        """C division/remainder that never traps: x / 0 == 0, x % 0 == 0, MIN / -1 wraps."""
        ty = a.type
        zero, one = _const_like(ty, 0), _const_like(ty, 1)
        is_zero = self.b.icmp_unsigned("==", b, zero)
        if self._kind(a) == "u":
            safe = self.b.select(is_zero, one, b)
            q = (self.b.urem if rem else self.b.udiv)(a, safe)
            return self.b.select(is_zero, zero, q)
        minus_one = _const_like(ty, -1)
        is_m1 = self.b.icmp_signed("==", b, minus_one)
        safe = self.b.select(self.b.or_(is_zero, is_m1), one, b)
        q = (self.b.srem if rem else self.b.sdiv)(a, safe)
        special = zero if rem else self.b.sub(zero, a)  # x % -1 == 0, x / -1 == -x
        return self.b.select(is_zero, zero, self.b.select(is_m1, special, q))

    def abs(self, x: ir.Value) -> ir.Value:
        kind = self._kind(x)
        if kind == "f":
            return self.intr("llvm.fabs", x)
        if kind == "u":
            return x
        zero = self.splat(ir.Constant(x.type.element if isinstance(x.type, ir.VectorType)
                                      else x.type, 0), x.type)  # integer vectors too
        neg = self.b.icmp_signed("<", x, zero)
        return self.b.select(neg, self.b.sub(zero, x), x)

    def cmp(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        if op not in _CMP_OPS:
            raise ValueError(f"unknown comparison {op!r}")
        kind = self._kind(a)
        if kind == "f":  # Python semantics: NaN compares unequal to everything
            if op == "!=":
                return self.b.fcmp_unordered(op, a, b)
            return self.b.fcmp_ordered(op, a, b)
        if kind in "ub":
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    # ---- intrinsics and libm --------------------------------------------------------------

    def intr(self, name: str, *args: ir.Value) -> ir.Value:
        ty = args[0].type
        symbol = f"{name}.{_mangle(ty)}"  # llvm.fabs.f32, llvm.fabs.v3f32 ...
        fn = self.module.globals.get(symbol)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * len(args)), symbol)
        return self.b.call(fn, list(args))

    def libm(self, name: str, *args: ir.Value) -> ir.Value:
        """Call the C math library: ``tanf`` for float, ``tan`` for double."""
        ty = args[0].type
        if isinstance(ty, ir.HalfType):  # half: the float function, rounded back to half
            wide = [self.b.fpext(a, ir.FloatType()) for a in args]
            return self.b.fptrunc(self.libm(name, *wide), ty)
        symbol = name + ("f" if isinstance(ty, ir.FloatType) else "")
        fn = self.module.globals.get(symbol)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * len(args)), symbol)
        return self.b.call(fn, list(args))

    # ---- casts and constructors -----------------------------------------------------------

    def cast(self, x: ir.Value, src: Type, dst: Type) -> ir.Value:
        return self.convert(x, src.scalar, dst.scalar, ll_type(dst))

    def convert(self, x: ir.Value, src: Scalar, dst: Scalar, to: ir.Type | None = None):
        """Scalar (or element-wise) conversion; float -> int saturates and maps NaN to 0."""
        to = to or ll_type(dst)
        if src == dst:
            return x
        b = self.b
        if "bfloat16" in (src.name, dst.name):  # its register is a float: convert as float32,
            wide = self.convert(x, float32 if src.name == "bfloat16" else src,  # then round
                                float32 if dst.name == "bfloat16" else dst, to)
            return bf16_round(b, wide) if dst.name == "bfloat16" else wide
        if (src.kind == "f" and src.bits == 16 or dst.kind == "f" and dst.bits == 16) \
                and float32 not in (src, dst) and float64 not in (src, dst) \
                and dst.kind != "b":
            # Only half <-> float has an instruction (F16C); any other conversion with half
            # becomes a compiler-rt call (__floatsihf, ...) that the JIT cannot resolve and
            # that would jump to address 0. Integers go through float32 (exact: an integer
            # that float32 rounds is past half's range anyway); double <-> half is
            # float_convert's (rounded once, through float rounded to odd).
            mid = ir.FloatType() if not isinstance(to, ir.VectorType) \
                else ir.VectorType(ir.FloatType(), to.count)
            return self.convert(self.convert(x, src, float32, mid), float32, dst, to)
        if dst.kind == "b":
            zero = ir.Constant(x.type, None)
            return b.fcmp_unordered("!=", x, zero) if src.kind == "f" \
                else b.icmp_unsigned("!=", x, zero)
        if src.kind == "b":
            return b.uitofp(x, to) if dst.kind == "f" else b.zext(x, to)
        if src.kind == "f" and dst.kind == "f":
            return self.float_convert(x, to)
        if src.kind == "f":
            sat = "llvm.fptoui.sat" if dst.kind == "u" else "llvm.fptosi.sat"
            fn = self.module.declare_intrinsic(sat, [to, x.type],
                                               ir.FunctionType(to, [x.type]))
            return b.call(fn, [x])
        if dst.kind == "f":
            return b.uitofp(x, to) if src.kind == "u" else b.sitofp(x, to)
        if dst.bits < src.bits:
            return b.trunc(x, to)
        if dst.bits > src.bits:
            return b.zext(x, to) if src.kind == "u" else b.sext(x, to)
        return x  # int32 <-> uint32: the same bits

    def float_convert(self, x: ir.Value, to: ir.Type) -> ir.Value:
        """Float <-> float, correctly rounded, without the double <-> half helpers of the C
        runtime (not every libgcc has them): double -> half goes through float rounded to
        odd, which keeps the final rounding exact; half -> double through float (exact)."""
        b = self.b
        src = x.type.element if isinstance(x.type, ir.VectorType) else x.type
        dst = to.element if isinstance(to, ir.VectorType) else to
        rank = {ir.HalfType: 0, ir.FloatType: 1, ir.DoubleType: 2}
        if rank[type(dst)] == rank[type(src)]:
            return x
        if rank[type(dst)] > rank[type(src)]:
            if isinstance(src, ir.HalfType) and isinstance(dst, ir.DoubleType):
                x = b.fpext(x, _like(x.type, ir.FloatType()))
            return b.fpext(x, to)
        if isinstance(src, ir.DoubleType) and isinstance(dst, ir.HalfType):
            x = self._to_float_round_odd(x)
        return b.fptrunc(x, to)

    def _to_float_round_odd(self, x):
        b = self.b
        f32, i32 = _like(x.type, ir.FloatType()), _like(x.type, I32)
        t = b.fptrunc(x, f32)  # nearest; step back toward zero when it rounded away
        bits = b.bitcast(t, i32)
        wide = b.fpext(t, x.type)
        away = b.fcmp_ordered(">", self.intr("llvm.fabs", wide), self.intr("llvm.fabs", x))
        bits = b.select(away, b.sub(bits, self.splat(I32(1), i32)), bits)
        inexact = b.fcmp_ordered("!=", b.fpext(b.bitcast(bits, f32), x.type), x)
        odd = b.or_(bits, self.splat(I32(1), i32))
        return b.bitcast(b.select(inexact, odd, bits), f32)

    def construct(self, args) -> ir.Value:
        target = self.ret
        ty = ll_type(target)
        if not args:
            return ir.Constant(ty, None)
        if all(t.is_vector for t in self.types):  # a matrix from its rows
            return self._gather(ty, [e for row in args for e in self._elements(row)])
        elems = [self.convert(a, t.scalar, target.dtype) for a, t in zip(args, self.types)]
        if len(elems) == 1:
            return self.splat(elems[0], ty)
        return self._gather(ty, elems)

    # ---- component access -----------------------------------------------------------------

    def index(self, v: ir.Value, idx) -> ir.Value:
        t = self.types[0]
        if t.is_matrix and len(idx) == 1:  # a row
            base = self.b.mul(self._i32(idx[0]), I32(t.cols))
            row = [self.b.extract_element(v, self.b.add(base, I32(c))) for c in range(t.cols)]
            return self._gather(ll_type(self.ret), row)
        return self.b.extract_element(v, self._element(t, idx))

    def insert(self, v: ir.Value, idx, x: ir.Value) -> ir.Value:
        t = self.types[0]
        if t.is_matrix and len(idx) == 1:
            base = self.b.mul(self._i32(idx[0]), I32(t.cols))
            for c, e in enumerate(self._elements(x)):
                v = self.b.insert_element(v, e, self.b.add(base, I32(c)))
            return v
        return self.b.insert_element(v, x, self._element(t, idx))

    def _i32(self, i: ir.Value) -> ir.Value:
        if i.type.width == 32:
            return i
        return self.b.trunc(i, I32) if i.type.width > 32 else self.b.zext(i, I32)

    def _element(self, t: Type, idx) -> ir.Value:
        if len(idx) == 2:
            return self.b.add(self.b.mul(self._i32(idx[0]), I32(t.cols)), self._i32(idx[1]))
        return self._i32(idx[0])

    def reduce_add(self, v: ir.Value) -> ir.Value:
        if not isinstance(v.type, ir.VectorType):
            return v
        elems = self._elements(v)
        acc = elems[0]
        for e in elems[1:]:
            acc = self._op2("add", acc, e)
        return acc

    # ---- vector and matrix functions ------------------------------------------------------

    def lerp(self, a, b, t):
        one = ir.Constant(t.type, 1.0)
        s = self.b.fsub(one, t)
        return self.b.fadd(self.b.fmul(a, self.splat(s, a.type)),
                           self.b.fmul(b, self.splat(t, b.type)))

    def smoothstep(self, e0, e1, x):
        ty = x.type
        t = self.b.fdiv(self.b.fsub(x, e0), self.b.fsub(e1, e0))
        zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)
        t = self.b.select(self.b.fcmp_unordered("<", t, zero), zero, t)  # NaN -> 0, as Warp
        t = self.b.select(self.b.fcmp_ordered(">", t, one), one, t)
        poly = self.b.fsub(ir.Constant(ty, 3.0), self.b.fmul(ir.Constant(ty, 2.0), t))
        return self.b.fmul(self.b.fmul(t, t), poly)

    def cross(self, a, b):
        a0, a1, a2 = self._elements(a)
        b0, b1, b2 = self._elements(b)
        f = self.b
        return self._gather(a.type, [f.fsub(f.fmul(a1, b2), f.fmul(a2, b1)),
                                     f.fsub(f.fmul(a2, b0), f.fmul(a0, b2)),
                                     f.fsub(f.fmul(a0, b1), f.fmul(a1, b0))])

    def normalize(self, v):
        n = self.intr("llvm.sqrt", self.reduce_add(self.b.fmul(v, v)))
        zero = ir.Constant(n.type, 0.0)
        scaled = self.b.fdiv(v, self.splat(n, v.type))
        return self.b.select(self.b.fcmp_ordered(">", n, zero), scaled,
                             ir.Constant(v.type, None))

    def outer(self, a, b):
        ea, eb = self._elements(a), self._elements(b)
        return self._gather(ll_type(self.ret), [self._op2("mul", x, y) for x in ea for y in eb])

    def transpose(self, m):
        t = self.types[0]
        order = [i * t.cols + j for j in range(t.cols) for i in range(t.rows)]
        mask = ir.Constant(ir.VectorType(I32, len(order)), order)
        return self.b.shuffle_vector(m, ir.Constant(m.type, ir.Undefined), mask)

    def determinant(self, m):
        n, e = self.types[0].rows, self._elements(m)
        return det_expand(_LLVMArith(self.b, e[0].type), lambda i, j: e[i * n + j], n)

    def cofactor(self, m):
        n, e = self.types[0].rows, self._elements(m)
        cof = cofactor_expand(_LLVMArith(self.b, e[0].type), lambda i, j: e[i * n + j], n)
        return self._gather(m.type, cof)


_INT_OPS = {op: getattr(ir.IRBuilder, op) for op in ("add", "sub", "mul")}
_FLOAT_OPS = {op: getattr(ir.IRBuilder, "f" + op) for op in ("add", "sub", "mul")}


class _LLVMArith:
    """The arithmetic det_expand/cofactor_expand run on, over LLVM float values."""

    def __init__(self, builder, ty):
        self.b, self.ty = builder, ty

    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def one(self):
        return ir.Constant(self.ty, 1.0)
