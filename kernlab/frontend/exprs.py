"""Expressions: AST nodes to typed IR values (mixed into the Lowerer).

Literals stay untyped (``Lit``) until they meet a typed operand, then take its type, so
``x * 2.0`` works for float32 and float64 ``x`` alike; an int variable never meets a float
silently (as in Warp: ``i * 2.0`` is a type error; write ``float(i) * 2.0``).
"""
from __future__ import annotations

import ast
import builtins
import math
import operator
import types as _pytypes
from dataclasses import dataclass, field

import numpy as np

from .. import lang
from ..builtins.scalars import atomic_type_error
from ..builtins.core import comparison_type
from ..errors import (KernelAttributeError, KernelNameError, KernelSyntaxError, KernelTypeError,
                      KernelUnsupportedTypeError)
from ..ir.nodes import Op, Site, Value
from ..ir import print_layout, printf as printf_format
from ..types import (Matrix, Transformation, Type, Vector, bool_, float32, int32, int64,
                     to_type)
from . import structs
from .source import is_missing, resolve_global
from .suggest import hint_for_attribute, hint_for_name


@dataclass
class Lit:
    """A Python number not yet given a kernel type. ``source`` is the object it came from
    when that was no plain number (an enum member: ``Color.RED.value`` reads through it)."""

    value: object
    source: object = field(default=None, compare=False, repr=False)

    @property
    def default_type(self) -> Type:
        return {bool: bool_, int: int32}.get(type(self.value), float32)


@dataclass
class PyObj:
    """A compile-time Python object: a module, a type, a builtin, a func."""

    obj: object


@dataclass
class EmptyVector:
    """A vector of no components (``v[4:]`` of a vec4, ``vector(0, float)()``): it exists
    only at compile time; it compares equal to another empty vector."""

    type: Type
    not_a_value = "a vector of length 0 can only be compared (==, !=) with another one"


@dataclass
class ShapeOf:
    array: Value


BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "mul",
          ast.BitAnd: "bit_and", ast.BitOr: "bit_or", ast.BitXor: "bit_xor",
          ast.LShift: "lshift", ast.RShift: "rshift"}


def _fold_div(a, b):
    """``/`` on two constants: ints divide as the kernel would (int32, truncating), as in
    Warp, where ``C / 2`` of an int constant is an int."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    if b == 0:  # IEEE, as the kernel computes it: 2.0 / 0.0 is inf, 0.0 / 0.0 is NaN
        return math.copysign(math.inf, a) * math.copysign(1.0, b) if a == a and a else math.nan
    return a / b


def _fold_pow(a, b):
    """``**`` on two constants as the kernel's pow computes it (C's rules): a negative base
    to a fractional power is NaN, not a complex number; overflow is inf; an integer power
    too large for int64 is an error rather than a huge Python int."""
    if isinstance(a, int) and isinstance(b, int):
        if b >= 0 and abs(a) > 1 and b * (abs(a).bit_length() - 1) > 64:
            raise OverflowError(f"{a} ** {b} does not fit in a 64-bit integer")
        return operator.pow(a, b)
    a, b = float(a), float(b)
    odd = b.is_integer() and abs(b) < 2**53 and int(b) % 2 == 1
    try:
        return math.pow(a, b)
    except OverflowError:
        return -math.inf if (a < 0 and odd) else math.inf
    except ValueError:  # 0 to a negative power, or a negative base to a fractional one
        if a == 0:
            return math.copysign(math.inf, a) if odd else math.inf
        return math.nan


def _fold_mod(a, b):
    """``%`` on two constants as the kernel computes it: C's remainder, with the sign of
    the dividend (fmod for floats; an int zero divisor gives 0, a float one NaN)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return 0
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return math.fmod(a, b) if b != 0 else math.nan


def _fold_floordiv(a, b):
    """``//`` on two constants as the kernel computes it: floored (as in Python and Warp);
    an int zero divisor gives 0, a float one what floor(a / 0.0) is."""
    if isinstance(a, int) and isinstance(b, int):
        return 0 if b == 0 else a // b
    q = _fold_div(float(a), float(b))
    return float(math.floor(q)) if math.isfinite(q) else q


FOLD = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: _fold_div, ast.Pow: _fold_pow, ast.Mod: _fold_mod,
        ast.FloorDiv: _fold_floordiv}
CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
          ast.GtE: "ge"}
PY_BUILTINS = {builtins.min: "min", builtins.max: "max", builtins.abs: "abs",
               builtins.pow: "pow", builtins.round: "round"}
COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}

_UNSEEN = object()
_visitors: dict = {}  # (Lowerer class, "expr_" or "stmt_", AST node class) -> method or None


def visitor(lowerer, prefix: str, node):
    """The Lowerer's method for an AST node (``expr_BinOp``, ``stmt_Assign``), as a plain
    function, or None: looked up once per node class rather than by name per node."""
    key = (lowerer.__class__, prefix, node.__class__)
    try:
        return _visitors[key]
    except KeyError:
        found = _visitors[key] = getattr(lowerer.__class__, prefix + node.__class__.__name__,
                                         None)
        return found


class ExprMixin:
    # ---- typing helpers -------------------------------------------------------------

    def lit_as(self, lit: Lit, t: Type | None) -> Value:
        v = lit.value
        if t is None or not t.is_scalar:
            t = lit.default_type
        elif isinstance(v, float) and not t.is_float:
            t = lit.default_type
        elif isinstance(v, bool) != (t == bool_):
            t = lit.default_type
        if t.is_int and not isinstance(v, bool) and not _fits(v, t):
            raise KernelTypeError(f"the integer constant {v} does not fit in {t}"
                                  + ("; write kl.int64(...)" if _fits(v, int64) else ""),
                                  self.b.loc)
        if t.is_float and isinstance(v, int) and abs(v) > 2**1023:
            raise KernelTypeError(f"the constant {v} is too large for {t}", self.b.loc)
        if -65504 <= v <= 65504:  # fits every kernel type it may become (float16's largest)
            return self.b.const(v, t)  # (an errstate costs more than the constant)
        with np.errstate(over="ignore"):  # 1e300 as a float32 is inf, as at run time
            return self.b.const(v, t)

    def value(self, x, want: Type | None = None) -> Value:
        """Materialise an expression result as a Value (literals take ``want`` if they can)."""
        if isinstance(x, Value):
            return x
        if isinstance(x, Lit):
            return self.lit_as(x, want)
        if isinstance(x, _Tid):
            return self.b.emit(Op.TID, (), int32, dim=0)
        if isinstance(x, PyObj):
            raise KernelTypeError(f"{x.obj!r} cannot be used as a value in a kernel", self.b.loc)
        if hasattr(x, "not_a_value"):
            raise KernelSyntaxError(x.not_a_value, self.b.loc)
        if structs.is_structish(x):
            raise KernelTypeError(f"'{x.name}' is a struct {x.type}, not a single value; "
                                  "use one of its fields", self.b.loc)
        raise KernelTypeError("a tuple cannot be used as a single value here", self.b.loc)

    def values(self, xs) -> list[Value]:
        """Materialise call operands, literals adopting the first typed operand's scalar."""
        for x in xs:
            if x.__class__ is not Value:
                break
        else:  # (all typed already, as most operands are: nothing to materialise)
            return list(xs)
        typed = [x.type for x in xs if isinstance(x, Value) and not x.type.is_array]
        want = next((t for t in typed if t.is_scalar and t != bool_), None)
        if want is None:
            want = next((t.scalar for t in typed if t.is_vector or t.is_matrix or t.is_tile),
                        None)
        return [self.value(x, want) for x in xs]

    def call_builtin(self, name: str, xs, target: Type | None = None) -> Value:
        if name in ("where", "select") and len(xs) == 3:
            xs = [self._where_condition(xs[0]), *xs[1:]]
        for x in xs:
            if isinstance(x, Value) and x.type.is_array:
                raise KernelTypeError(f"{name}() cannot take a whole array; index it first",
                                      self.b.loc)
        vals = self.values(xs)
        if target is None:
            for v in vals:
                if v.type.is_tile:  # frontend/tiles.py
                    mixed = self.tile_mixed(name, vals)
                    if mixed is not None:
                        return mixed
                    break
        return self.b.call(name, vals, target)

    def _where_condition(self, c):
        """where / select take, as in Warp, a bool, an integer (true when not 0) or an array
        (true when not null) as their condition."""
        if isinstance(c, Value) and c.type.is_array:
            return self.truth(c)
        v = self.value(c)
        return self.truth(v) if v.type.is_scalar and v.type.kind in "iu" else v

    def int_index(self, x) -> Value:
        v = self.value(x, int32)
        if not (v.type.is_scalar and v.type.is_int):
            if getattr(self, "slot_write", False):  # Warp's words for a[i].x = v
                raise KernelTypeError("Array slot write indices must be integers or slices, "
                                      f"not {v.type}", self.b.loc)
            raise KernelTypeError(f"an index must be an integer, not {v.type}", self.b.loc)
        return v

    # ---- dispatch --------------------------------------------------------------------

    def expr(self, node):
        if node.__class__ is ast.Constant:  # (emits nothing: no location to set)
            return self.expr_Constant(node)
        b = self.b
        saved = b.loc
        b.loc = self.stack[-1].src.loc(node)  # (self.loc(node), without two calls)
        try:
            visit = visitor(self, "expr_", node)
            if visit is None:
                raise KernelSyntaxError(
                    f"{_describe(node)} is not supported in kernels", b.loc)
            return visit(self, node)
        finally:
            b.loc = saved

    def expr_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return Lit(node.value)
        if isinstance(node.value, str):
            return PyObj(node.value)
        raise KernelSyntaxError(f"constant {node.value!r} is not supported", self.loc(node))

    def expr_Name(self, node):
        found = self.lookup(node.id)
        if found is not None:
            return found
        obj = resolve_global(self.pyfunc, node.id, self.extra_globals)
        if is_missing(obj):
            obj = _bare_builtin(node.id)
        if is_missing(obj):
            hint = hint_for_name(node.id, self.pyfunc, self.scope.names, self.extra_globals)
            raise KernelNameError(f"name '{node.id}' is not defined{hint}", self.b.loc)
        return self.from_python(obj, node.id)

    def from_python(self, obj, name: str):
        """A global or closure value seen from kernel code."""
        if isinstance(obj, (bool, int, float)):
            if type(obj) in (bool, int, float):
                return Lit(obj)
            # an IntEnum/IntFlag member (or another number subclass) is its plain value
            plain = bool if isinstance(obj, bool) else int if isinstance(obj, int) else float
            return Lit(plain(obj), source=obj)
        if isinstance(obj, np.generic):
            return self.b.const(obj, to_type(obj.dtype))
        if isinstance(obj, np.ndarray) and obj.ndim in (1, 2) and obj.dtype.kind in "fiub":
            el = to_type(obj.dtype)
            t = Vector(obj.shape[0], el) if obj.ndim == 1 else Matrix(*obj.shape, el)
            return self.b.const(obj, getattr(obj, "kl_type", None) or t)  # quat, transform
        return PyObj(obj)

    def expr_Attribute(self, node):
        return self.attribute(self.expr(node.value), node)

    def attribute(self, base, node):
        if structs.is_structish(base):
            return structs.get_field(self, base, node.attr)
        if isinstance(base, PyObj):
            try:
                return self.from_python(getattr(base.obj, node.attr), node.attr)
            except AttributeError:
                if getattr(base.obj, "__name__", None) == "kernlab" \
                        and node.attr in ("float", "int"):
                    # in kernels, as in Warp, kl.float(x) / kl.int(x) are the conversions
                    # float(x) / int(x) (to float32 / int32); Python scope has no such names
                    return PyObj({"float": float, "int": int}[node.attr])
                text = ast.unparse(node.value)
                hint = hint_for_attribute(text, base.obj, node.attr)
                raise KernelAttributeError(f"'{text}' has no attribute '{node.attr}'{hint}",
                                           self.b.loc) from None
        if isinstance(base, Lit) and base.source is not None \
                and not node.attr.startswith("_") and hasattr(base.source, node.attr):
            return self.from_python(getattr(base.source, node.attr), node.attr)  # E.A.value
        if isinstance(base, Value) and base.type.is_array and node.attr == "shape":
            return ShapeOf(base)
        if isinstance(base, Value) and node.attr in ("p", "q") \
                and isinstance(base.type, Transformation):
            return self.transform_part(base, node.attr)  # frontend/spatial.py
        if isinstance(base, Value) and base.type.is_vector and node.attr in COMPONENTS:
            k = COMPONENTS[node.attr]
            if k >= base.type.length:
                raise KernelTypeError(f"{base.type} has no component '{node.attr}'", self.b.loc)
            return self.b.index(base, self.b.const(k, int32))
        if isinstance(base, Value) and (base.type.is_scalar or base.type.is_vector
                                        or base.type.is_matrix) \
                and node.attr in ("dtype", "length"):  # attributes of the value's type
            t = base.type
            return PyObj(t.scalar) if node.attr == "dtype" else \
                Lit(t.length if t.is_vector or t.is_matrix else 1)
        if isinstance(base, Value):
            name = getattr(base.type, "__name__", None) or str(base.type)
            raise KernelAttributeError(f"'{name}' object has no attribute '{node.attr}'",
                                       self.b.loc)
        raise KernelSyntaxError(f"attribute '.{node.attr}' is not supported here", self.b.loc)

    def expr_Subscript(self, node):
        return self.subscript(self.expr(node.value), node)

    def subscript(self, base, node):
        if isinstance(base, PyObj) and base.obj is lang.adjoint:
            return self.adjoint_value(node)
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(i, ast.Slice) for i in idx):
            raise KernelSyntaxError("slices are not supported in kernels", self.b.loc)
        if isinstance(base, ShapeOf):
            d = self.expr(idx[0])
            if len(idx) == 1 and isinstance(d, Lit) and isinstance(d.value, int) \
                    and base.array.type.ndim <= d.value < 4:
                return Lit(0)  # past the array's dimensions, as in Warp
            if len(idx) != 1 or not isinstance(d, Lit) or not isinstance(d.value, int) \
                    or not 0 <= d.value < base.array.type.ndim:
                raise KernelTypeError(f"shape index must be a constant in "
                                      f"0..{base.array.type.ndim - 1}", self.b.loc)
            return self.b.emit(Op.SHAPE, [base.array], int32, dim=d.value)
        raw = [self.expr(i) for i in idx]
        if isinstance(base, tuple):
            from . import tuples
            return tuples.index(self, base, raw)
        if isinstance(base, structs.StructArray):
            return structs.index(self, base, [self.int_index(i) for i in raw])
        base = self.value(base)
        if base.type.is_vector or base.type.is_matrix:
            return self.component_call("index", base, raw)
        if base.type.is_tile:
            return self.tile_index(base, raw)  # frontend/tiles.py
        indices = [self.int_index(i) for i in raw]
        if base.type.is_array:
            return self.load_element(base, indices, node)
        raise KernelTypeError(f"a value of type {base.type} cannot be indexed", self.b.loc)

    def component_call(self, name: str, base: Value, raw: list, *rest) -> Value:
        """index/insert on a vector or matrix. A constant index out of range is an error
        here; a runtime one is checked when the kernel runs (like an array index)."""
        t = base.type
        extents = (t.length,) if t.is_vector else (t.rows, t.cols)
        raw = [Lit(x.value + n) if isinstance(x, Lit) and type(x.value) is int
               and -n <= x.value < 0 else x for x, n in zip(raw, extents)]  # q[-1], as Warp
        for d, (x, n) in enumerate(zip(raw, extents)):
            if isinstance(x, Lit) and isinstance(x.value, int) and not 0 <= x.value < n:
                raise KernelTypeError(f"index {x.value} is out of range for axis {d} of a {t} "
                                      f"(0..{n - 1})", self.b.loc)
        indices = [self.int_index(x) for x in raw]
        result = self.b.call(name, [base, *indices, *rest])
        if not all(isinstance(x, Lit) for x in raw):
            kind = "vector" if t.is_vector else "matrix"
            self.func.sites.append(Site(self.b.loc, base.name or str(t),
                                        extents[:len(indices)], kind))
            self.b.block.instrs[-1].attrs["site"] = len(self.func.sites) - 1
        return result

    def load_element(self, arr: Value, indices, node):
        if len(indices) != arr.type.ndim:
            raise KernelTypeError(f"Incorrect number of indices specified for array indexing: "
                                  f"array '{self.array_name(arr)}' has {arr.type.ndim} "
                                  f"dimension(s) but {len(indices)} index(es) were given",
                                  self.b.loc)
        return self.b.emit(Op.LOAD, [arr, *indices], arr.type.dtype, site=self.site(arr))

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def expr_BinOp(self, node):
        name = BINOPS.get(type(node.op))
        if name is None:
            raise KernelSyntaxError(f"operator {_describe(node.op)} is not supported",
                                    self.b.loc)
        lhs, rhs = self.expr(node.left), self.expr(node.right)
        if isinstance(lhs, Lit) and isinstance(rhs, Lit) and type(node.op) in FOLD \
                and not isinstance(lhs.value, bool) and not isinstance(rhs.value, bool):
            try:
                return Lit(FOLD[type(node.op)](lhs.value, rhs.value))
            except ZeroDivisionError:
                raise KernelTypeError("division by zero in a constant expression",
                                      self.b.loc) from None
            except OverflowError as exc:
                raise KernelTypeError(f"constant expression too large: {exc}",
                                      self.b.loc) from None
        user = self.operator_overload(name, [lhs, rhs])
        if user is not None:
            return self.call_func(user, [lhs, rhs], {})
        if name == "pow":
            lhs = self.value(lhs, float32 if isinstance(rhs, Lit) else None)
            if isinstance(rhs, Lit):
                rhs = Lit(float(rhs.value))
        return self.call_builtin(name, [lhs, rhs])

    def operator_overload(self, name: str, operands):
        """The user func an operator calls, as in Warp: a func visible to the kernel under
        the operator's builtin name (``add`` for ``+``, ``mul`` for ``*``) that has an
        overload for these operands (``a + b`` of two structs). None when there is none;
        the builtin operator applies then."""
        pyfunc = self.stack[-1].pyfunc
        key = (pyfunc, name)  # (the names a kernel sees do not change while it compiles)
        func = self.operator_names.get(key, _UNSEEN)
        if func is _UNSEEN:  # the func the name is there, or None: found once per compile
            from ..kernel import Func  # the decorator module sits above the frontend
            obj = resolve_global(pyfunc, name, self.extra_globals)
            func = self.operator_names[key] = \
                obj if isinstance(obj, Func) and obj.pyfunc is not pyfunc else None
        if func is None:
            return None
        return func if self.resolve_overload(func, operands, {}) is not None else None

    def expr_UnaryOp(self, node):
        x = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(x, Lit):
            fold = {ast.USub: operator.neg, ast.Not: operator.not_}.get(type(node.op))
            if fold:
                return Lit(fold(x.value))
        if isinstance(node.op, ast.USub):
            return self.call_builtin("neg", [x])
        if isinstance(node.op, ast.Not):
            return self.b.not_(self.truth(x))
        if isinstance(node.op, ast.Invert):
            return self.call_builtin("invert", [x])
        raise KernelSyntaxError(f"operator {_describe(node.op)} is not supported", self.b.loc)

    def truth(self, x) -> Value:
        """A bool Value for a condition: bools as they are, numbers compared with zero."""
        if isinstance(x, Value) and x.type.is_array:  # `if a:`: a is not a null array
            return self.b.ne(self.b.emit(Op.SHAPE, [x], int32, dim=0), self.b.zeros(int32))
        v = self.value(x)
        if v.type == bool_:
            return v
        if v.type.is_scalar:
            return self.b.ne(v, self.b.zeros(v.type))
        raise KernelTypeError(f"a {v.type} cannot be used as a condition", self.b.loc)

    def expr_Compare(self, node):
        result, left = None, self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            name = CMPOPS.get(type(op))
            if name is None:
                raise KernelSyntaxError(f"comparison {_describe(op)} is not supported",
                                        self.b.loc)
            right = self.expr(right_node)
            if isinstance(left, EmptyVector) or isinstance(right, EmptyVector):
                if name not in ("eq", "ne"):
                    raise KernelTypeError("a vector of length 0 can only be compared with == "
                                          "or !=", self.b.loc)
                same = isinstance(left, EmptyVector) and isinstance(right, EmptyVector)
                cmp = self.b.const(same == (name == "eq"), bool_)
                result = cmp if result is None else self.b.and_(result, cmp)
                left = right
                continue
            a, c = self.values([left, right])
            common = comparison_type(a.type, c.type) if a.type != c.type else None
            if common is not None:  # int32 < float32 ... as Warp's C++ compares them
                a, c = self.b.cast(a, common), self.b.cast(c, common)
            cmp = self.b.call(name, [a, c])
            result = cmp if result is None else self.b.and_(result, cmp)
            left = c
        return result

    def expr_BoolOp(self, node):
        # Short-circuit, as in Python: `i < n and a[i] > 0` never reads a[n].
        is_and = isinstance(node.op, ast.And)
        flag = self.b.new_var(bool_, "and" if is_and else "or")
        self.b.store(flag, self.truth(self.expr(node.values[0])))
        for operand in node.values[1:]:
            cond = self.b.load(flag)
            if not is_and:
                cond = self.b.not_(cond)
            then = self.if_block(cond)
            with self.b.at(then):
                self.b.store(flag, self.truth(self.expr(operand)))
        return self.b.load(flag)

    def expr_IfExp(self, node):
        cond = self.truth(self.expr(node.test))
        then_block, else_block = self.if_blocks(cond)
        with self.b.at(then_block):
            a = self.expr(node.body)
        with self.b.at(else_block):
            c = self.expr(node.orelse)
        if isinstance(a, Lit) and isinstance(c, Lit):
            a, c = Lit(a.value), Lit(c.value)
        want = a.type if isinstance(a, Value) else c.type if isinstance(c, Value) else None
        out = self.b.new_var(want or a.default_type, "ifexp")
        for block, x in ((then_block, a), (else_block, c)):
            with self.b.at(block):
                v = self.value(x, out.type)
                if v.type != out.type:
                    raise KernelTypeError(f"the branches of a conditional expression have "
                                          f"different types ({out.type} and {v.type})",
                                          self.b.loc)
                self.b.store(out, v)
        return self.b.load(out)

    def construct(self, target: Type, args):
        if target.is_scalar:
            if len(args) != 1:
                raise KernelTypeError(f"{target}() takes exactly one argument", self.b.loc)
            x = args[0]
            if isinstance(x, Lit):
                return self.b.const(_literal_cast(x.value, target), target)
            return self.b.cast(self.value(x), target)
        if target.is_vector and target.length == 0 and not args:
            return EmptyVector(target)
        vals = [self.value(a, target.scalar) for a in args]
        if len(vals) == 1 and not vals[0].type.is_scalar \
                and getattr(vals[0].type, "shape", None) == target.shape:
            return self.b.cast(vals[0], target)  # a copy (of another scalar type: converted)
        sized = {Vector: ("vector", "length"), Matrix: ("matrix", "shape")}.get(type(target))
        if sized is not None:  # the sizes Warp rejects, in Warp's words
            noun, size = sized
            if len(vals) == 1 and type(vals[0].type) is type(target):
                raise KernelTypeError(
                    f"{target}() cannot copy a {vals[0].type}: incompatible {noun} of {size} "
                    f"{getattr(target, size)} given when copy constructing a {noun} of {size} "
                    f"{getattr(vals[0].type, size)}", self.b.loc)
            if len(vals) > 1 and all(v.type.is_scalar for v in vals) \
                    and len(vals) != target.length:
                raise KernelTypeError(
                    f"{target}() takes 1 or {target.length} values: incompatible number of "
                    f"values given ({len(vals)}) when constructing a {noun} of {size} "
                    f"{getattr(target, size)}", self.b.loc)
        if target.is_vector and any(not v.type.is_scalar for v in vals):
            vals = self.components(vals)  # quat(v, w), transform(p, q), vec6(a, b)
        vals = [self.b.cast(v, target.scalar) if v.type.is_scalar and v.type.is_float
                and target.is_float else v for v in vals]
        return self.b.call("construct", vals, target)

    def components(self, vals):
        """Vector arguments spread into their scalar components."""
        out = []
        for v in vals:
            n = v.type.length if v.type.is_vector else 0
            out += [self.b.index(v, self.b.const(k, int32)) for k in range(n)] or [v]
        return out

    def tid(self, nargs):
        if nargs:
            raise KernelTypeError("tid() takes no arguments", self.b.loc)
        return _Tid()

    def atomic(self, kind, args):
        if len(args) >= 2 and hasattr(args[0], "axes"):  # a view: the array's own indices
            ref = args[0]
            args = [ref.base, *self.view_indices(ref, args[1:-1]), args[-1]]
        if len(args) < 3 or not isinstance(args[0], Value) or not args[0].type.is_array:
            raise KernelTypeError(f"atomic_{kind}(array, index..., value) needs an array, its "
                                  "indices and a value", self.b.loc)
        arr = args[0]
        extra = 2 if kind == "cas" else 1  # cas: compare, value; the others: value
        if kind == "cas" and len(args) < 4:
            raise KernelTypeError("atomic_cas(array, index..., compare, value) needs an array, "
                                  "its indices, a compare value and a value", self.b.loc)
        idx = [self.int_index(i) for i in args[1:-extra]]
        if len(idx) != arr.type.ndim:
            raise KernelTypeError(f"atomic_{kind} on a {arr.type.ndim}-d array needs "
                                  f"{arr.type.ndim} index(es)", self.b.loc)
        val = self.value(args[-1], arr.type.dtype.scalar)
        if val.type != arr.type.dtype:
            raise KernelTypeError(f"atomic_{kind} of a {val.type} into an array of "
                                  f"{arr.type.dtype}", self.b.loc)
        if arr.type.dtype.scalar.kind == "b":
            raise KernelTypeError(f"atomic_{kind} (and +=, -= on an array element) needs an "
                                  "array of numbers, not of bool", self.b.loc)
        why = atomic_type_error(kind, arr.type.dtype)
        if why:
            raise KernelUnsupportedTypeError(why, self.b.loc)
        operands = [val]
        if kind == "cas" and not arr.type.dtype.is_scalar:
            raise KernelTypeError("atomic_cas needs an array of scalars", self.b.loc)
        if kind == "cas":
            compare = self.value(args[-2], arr.type.dtype.scalar)
            if compare.type != arr.type.dtype:
                raise KernelTypeError(f"atomic_cas compares a {compare.type} with an element "
                                      f"of {arr.type.dtype}", self.b.loc)
            operands = [compare, val]
        return self.b.emit(Op.ATOMIC, [arr, *idx, *operands], val.type, kind=kind,
                           site=self.site(arr))

    def expect(self, kind: str, args):
        """expect_eq / expect_neq / expect_near: compare, and print a message naming the line
        when the expectation fails; the kernel goes on (as in Warp)."""
        name = "expect_" + kind
        n = 3 if kind == "near" else 2
        if not len(args) in (2, n):
            raise KernelTypeError(f"{name}() takes {n if kind == 'near' else 2} arguments",
                                  self.b.loc)
        a, c = self.values(args[:2])
        if a.type != c.type and a.type.is_scalar and c.type.is_scalar:
            a, c = self.values([a, self.b.cast(c, a.type)]) if a.type.is_float or \
                not c.type.is_float else (self.b.cast(a, c.type), c)
        if a.type != c.type or a.type.is_array:
            raise KernelTypeError(f"{name}() got a {a.type} and a {c.type}: Can't test "
                                  "equality for objects with different types", self.b.loc)
        b = self.b
        mismatch = self.flag("expect_mismatch")
        if kind == "near":
            tol = self.value(args[2], a.type.scalar) if len(args) == 3 else \
                b.const(1e-6, a.type.scalar)
        for x, y in zip(_components(b, a), _components(b, c)):
            bad = b.gt(b.abs(b.sub(x, y)), tol) if kind == "near" else b.ne(x, y)
            with b.at(self.if_block(bad)):
                b.store(mismatch, b.const(True, bool_))
        failed = b.load(mismatch)
        if kind == "neq":
            failed = b.not_(failed)
        what = {"eq": "Expected", "neq": "Expected not", "near": "Expected near"}[kind]
        line = b.loc.line if b.loc is not None else "?"
        fmt = (f"Error, {name}() failed (line {line}):\n\t {what}: {{}}\n\t Actual: {{}}")
        with b.at(self.if_block(failed)):
            b.emit(Op.PRINT, [c, a], fmt=fmt, printf=False)
        return None

    def kprint(self, args, formatted):
        if formatted:
            if not args or not isinstance(args[0], PyObj) or not isinstance(args[0].obj, str):
                raise KernelTypeError("printf needs a format string first", self.b.loc)
            fmt, args = args[0].obj, args[1:]
            if len(args) > 32:
                raise KernelTypeError("the maximum number of variadic arguments that can be "
                                      "passed to `printf` is 32", self.b.loc)
            for a in args:
                if isinstance(a, PyObj) and isinstance(a.obj, str):
                    raise KernelTypeError(f"printf values must be kernel values; write the "
                                          f"text {a.obj!r} into the format instead", self.b.loc)
            vals = [self.value(a) for a in args]
            _check_printable(vals, "printf", self.b.loc)
            try:
                printf_format.parse(fmt, [v.type for v in vals])
            except printf_format.PrintfFormatError as err:
                raise KernelTypeError(str(err), self.b.loc) from None
            self.b.emit(Op.PRINT, vals, fmt=fmt, printf=True)
            return None
        labels = [a.obj for a in args if isinstance(a, PyObj) and isinstance(a.obj, str)]
        # a struct or array shows as Warp's placeholder text (ir/print_layout.py)
        vals = [print_layout.UNPRINTABLE if structs.is_structish(a) else self.value(a)
                for a in args if not isinstance(a, PyObj)]
        vals = [print_layout.UNPRINTABLE if isinstance(v, Value) and
                print_layout.is_placeholder(v.type) else v for v in vals]
        shown = [v for v in vals if isinstance(v, Value)]
        _check_printable(shown, "print", self.b.loc)
        shows = tuple(labels) + tuple(vals)  # what the adjoint prints the adjoints of
        if len(vals) == 1 and not labels and shown:  # Warp's print(x), in Warp's layout
            print_layout.warp_form(self.b, shown[0], shows=shows)
            return None
        pieces = ["{}" if isinstance(v, Value) else v for v in vals]
        self.b.emit(Op.PRINT, shown, fmt=" ".join(labels + pieces), printf=False, shows=shows)
        return None


def _check_printable(vals, what: str, loc) -> None:
    """printf shows scalars, vectors and matrices; print also structs and arrays, as Warp's
    placeholder line."""
    for v in vals:
        t = v.type
        if not (t.is_scalar or t.is_vector or t.is_matrix):
            kind = "an array" if t.is_array else f"a {t}"
            hint = "; print an element such as a[i]" if t.is_array else ""
            raise KernelTypeError(f"{what} cannot show {kind} ('{v.name or 'value'}'): it "
                                  f"shows scalars, vectors and matrices{hint}", loc)


def _components(b, v: Value) -> list:
    """The scalar components of a scalar, vector or matrix value."""
    t = v.type
    if t.is_scalar:
        return [v]
    if len(t.shape) == 1:
        return [b.call("index", [v, b.const(k, int32)]) for k in range(t.shape[0])]
    return [b.call("index", [v, b.const(i, int32), b.const(j, int32)])
            for i in range(t.shape[0]) for j in range(t.shape[1])]


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


class _Tid:
    """Marker for ``tid()``, resolved by the assignment that unpacks it."""


def _describe(node) -> str:
    names = {"ListComp": "a list comprehension", "DictComp": "a dict comprehension",
             "SetComp": "a set comprehension", "GeneratorExp": "a generator expression",
             "Lambda": "lambda", "JoinedStr": "an f-string", "List": "a list literal",
             "Dict": "a dict literal", "Set": "a set literal", "Starred": "*-unpacking",
             "NamedExpr": "the walrus operator :=", "Await": "await", "Yield": "yield",
             "BitAnd": "&", "BitOr": "|", "BitXor": "^", "LShift": "<<", "RShift": ">>",
             "Invert": "~", "In": "in", "NotIn": "not in", "Is": "is", "IsNot": "is not"}
    name = type(node).__name__
    return names.get(name, name)


def _fits(value: int, t: Type) -> bool:
    info = np.iinfo(t.np)
    return info.min <= value <= info.max


def _literal_cast(value, target: Type):
    """``target(value)`` for a literal, as the cast would compute it at run time: integers
    wrap, floats truncate and saturate (NaN gives 0), a float that overflows is inf."""
    if target == bool_:
        return bool(value)
    if target.is_float:
        if isinstance(value, int) and abs(value) > 2**1023:
            return target.np.type(np.inf if value > 0 else -np.inf)
        with np.errstate(over="ignore"):
            return target.np.type(value)
    if isinstance(value, float):
        if math.isnan(value):
            return target.np.type(0)
        info = np.iinfo(target.np)
        value = info.max if value >= info.max else info.min if value <= info.min \
            else math.trunc(value)
        return target.np.type(value)
    bits = target.bits
    wrapped = int(value) % 2**bits
    if target.kind == "i" and wrapped >= 2**(bits - 1):
        wrapped -= 2**bits
    return target.np.type(wrapped)


_KERNEL_ONLY_MODULES = ("kernlab.mesh", "kernlab.hashgrid", "kernlab.volume")


def _bare_builtin(name: str):
    """A builtin or type named without its module (``expect_eq(a, b)``, ``dot(u, v)``,
    ``vec3(1.0, 2.0, 3.0)``), as Warp resolves a bare name it does not find: kernlab's
    kernel functions and value types, never a class or constant. The missing marker when
    ``name`` is none of them."""
    from .source import _MISSING
    import kernlab
    from ..types import Type
    obj = getattr(kernlab, name, None) if not name.startswith("_") else None
    if type(obj).__module__ == "kernlab.lang" and callable(obj):
        return obj
    if isinstance(obj, Type) and not obj.is_array:
        return obj
    if isinstance(obj, _pytypes.FunctionType) and obj.__module__ in _KERNEL_ONLY_MODULES:
        return obj
    return _MISSING
