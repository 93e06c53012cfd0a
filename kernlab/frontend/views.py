"""Slices, views and negative indices (mixed into the Lowerer).

``v[1:3]`` of a vector is a new vector of those components, ``m[:2]`` of a matrix a matrix
of those rows; ``v[-1]`` counts from the end. Their bounds must be constants (the result's
type depends on them).

``a[i]`` of a 2-D array and ``a[lo:hi]`` are views (``ArrayRef``): compile-time objects
that remember the array and how each of its axes is indexed. Reading, writing, atomics,
``.shape`` and ``len`` of a view become operations on the array itself at the composed
indices, so no backend needs to know about views and gradients flow to the array's own
adjoint. A 1-D view whose bounds are constants may be ``*``-unpacked into a call.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import KernelTypeError, KernelValueError
from ..ir.nodes import Op, Site, Value
from ..types import ArrayType, IndexedArrayType, Matrix, Vector, int32
from .exprs import EmptyVector, Lit, ShapeOf


@dataclass
class Axis:
    """An axis a view keeps: base index = start + k * step for k in [0, length)."""

    start: object   # Lit or Value
    step: object    # Lit or Value
    length: object  # Lit or Value
    unpacked: int | None = None  # how many elements *view gives (constant bounds only)


@dataclass
class ArrayRef:
    """A view of the array ``base``: per axis of base, a fixed index (Value/Lit) or an Axis."""

    base: Value
    axes: list
    star: str | None = None  # why it cannot be *-unpacked (None: it can)
    not_a_value = "a view of an array cannot be used as a value here; index it"

    @property
    def kept(self) -> list:
        return [a for a in self.axes if isinstance(a, Axis)]

    @property
    def type(self) -> ArrayType:
        return ArrayType(self.base.type.dtype, len(self.kept))

    @property
    def name(self) -> str:
        return self.base.name


@dataclass
class PtrOf:
    """``a.ptr`` of an array parameter: only good for ``array(ptr=a.ptr, shape=...)``."""

    array: Value
    not_a_value = "a.ptr can only be given to array(ptr=a.ptr, shape=..., dtype=...)"


class Reshaped(ArrayRef):
    """``array(ptr=a.ptr, shape=s, dtype=a.dtype)``: a's elements in row-major order seen
    with shape s. An index is flattened over s and unflattened over a's own shape, so every
    access is an access of a (bounds-checked there), never a raw pointer."""

    def __init__(self, base: Value, shape: list):
        super().__init__(base, [])
        self.shape = shape

    @property
    def kept(self) -> list:
        return [Axis(Lit(0), Lit(1), n) for n in self.shape]


class Indexed(ArrayRef):
    """An indexedarray parameter (Warp's ``indexedarray``): the array ``base`` seen through
    one int32 index array per axis (``a[i, j]`` is ``base[idx0[i], idx1[j]]``). ``slots``
    has one entry per axis of base: ``(index array, its length)`` for an axis the view
    keeps, or the base index (a Value) an earlier ``a[i]`` fixed. Every access is an
    access of base at loaded indices, bounds-checked on both, and gradients flow to
    base's own adjoint; an axis the indexedarray leaves alone got the identity index
    array at the launch."""

    def __init__(self, base: Value, slots: list):
        super().__init__(base, [])
        self.slots = slots
        self.star = "an indexedarray cannot be *-unpacked"

    @property
    def kept(self) -> list:
        return [Axis(Lit(0), Lit(1), s[1]) for s in self.slots if isinstance(s, tuple)]

    @property
    def type(self) -> ArrayType:
        return IndexedArrayType(self.base.type.dtype, len(self.kept))


class ShapeTuple(tuple):
    """A view's ``.shape``: indexing past its dimensions (up to 3) gives 0, as in Warp."""


class ViewMixin:
    def subscript(self, base, node):
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        has_slice = any(isinstance(i, ast.Slice) for i in idx)
        if isinstance(base, tuple):  # a tuple value (frontend/tuples.py) or a view's .shape
            k = self.expr(idx[0])
            if len(idx) == 1 and isinstance(k, Lit) and isinstance(k.value, int) \
                    and len(base) <= k.value < 4 and isinstance(base, ShapeTuple):
                return Lit(0)  # a .shape past the view's dimensions, as in Warp
            from . import tuples
            return tuples.index(self, base, [self.expr(i) for i in idx] if len(idx) > 1
                                else [k])
        if isinstance(base, ArrayRef) or isinstance(base, Value) and base.type.is_array \
                and (has_slice or len(idx) < base.type.ndim):
            return self.view_index(base, idx)
        if not isinstance(base, Value) or not (base.type.is_vector or base.type.is_matrix) \
                or not has_slice and not any(_negative_literal(i) for i in idx):
            return super().subscript(base, node)
        return self.component_slice(base, idx, has_slice)

    def attribute(self, base, node):
        from . import structs
        if isinstance(base, Value) and base.type.is_array and node.attr == "ptr" \
                or isinstance(base, structs.StructArray) and node.attr == "ptr":
            return PtrOf(base)
        if isinstance(base, ArrayRef) and node.attr == "shape":
            return ShapeTuple(self.axis_length(a) for a in base.kept)
        if isinstance(base, ArrayRef) and node.attr == "ndim":
            return Lit(len(base.kept))
        if isinstance(base, Value) and base.type.is_array and node.attr == "ndim":
            return Lit(base.type.ndim)
        if isinstance(base, (Value, ArrayRef)) and base.type.is_array and node.attr == "dtype":
            from .exprs import PyObj
            return PyObj(base.type.dtype)  # a.dtype: a type, for dtype= arguments
        return super().attribute(base, node)

    # ---- vectors and matrices -------------------------------------------------------------

    def component_slice(self, base, idx, has_slice):
        t = base.type
        extents = (t.length,) if t.is_vector else (t.rows, t.cols)
        if len(idx) > len(extents):
            raise KernelTypeError(f"too many indices for a {t}", self.b.loc)
        if not has_slice:
            raw = [self.expr(i) for i in idx]
            raw = [Lit(x.value + n) if isinstance(x, Lit) and isinstance(x.value, int)
                   and x.value < 0 else x for x, n in zip(raw, extents)]
            return self.component_call("index", base, raw)
        if t.is_matrix and len(idx) == 2:
            return self.matrix_block(base, idx)
        picks = list(range(*slice(*self.const_slice(idx[0])).indices(extents[0])))
        parts = [self.b.call("index", [base, self.b.const(k, int32)]) for k in picks]
        if not parts and t.is_vector:
            return EmptyVector(Vector(0, t.dtype))
        if not parts:
            raise KernelValueError("a slice of a matrix must not be empty", self.b.loc)
        if t.is_vector:
            return self.b.call("construct", parts, Vector(len(parts), t.dtype))
        return self.b.call("construct", parts, Matrix(len(parts), t.cols, t.dtype))

    def insert_into(self, old: Value, idx, value) -> Value:
        """``old`` with the components ``[idx]`` replaced by ``value`` (a component, a row,
        or for a slice a vector/matrix of the slice's size); negative constants count from
        the end."""
        t = old.type
        extents = (t.length,) if t.is_vector else (t.rows, t.cols)
        if not any(isinstance(i, ast.Slice) for i in idx):
            raw = [self.expr(i) for i in idx]
            raw = [Lit(x.value + n) if isinstance(x, Lit) and isinstance(x.value, int)
                   and not isinstance(x.value, bool) and x.value < 0 else x
                   for x, n in zip(raw, extents)]
            v = self.value(value, t.scalar)
            slot = t.scalar if len(raw) == len(extents) else Vector(t.cols, t.dtype)
            if v.type != slot and not (v.type.is_scalar and slot.is_scalar):
                raise KernelTypeError(f"Composite slot assignment expects value of type "
                                      f"{slot}, got {v.type}", self.b.loc)
            return self.component_call("insert", old, raw, v)
        if len(idx) > len(extents):
            raise KernelTypeError(f"too many indices for a {t}", self.b.loc)
        axes = [self.axis_picks(node, n) for node, n in zip(idx, extents)]
        if t.is_matrix and len(axes) == 1:
            axes.append((list(range(t.cols)), False))
        kept = [len(p) for p, single in axes if not single]
        spots = [(r,) for r in axes[0][0]] if t.is_vector else \
            [(r, c) for r in axes[0][0] for c in axes[1][0]]
        v = value if isinstance(value, Value) else self.value(value, t.scalar)
        if len(kept) == 1:
            if not v.type.is_vector:
                raise KernelValueError(f"The provided value is expected to be a vector of "
                                       f"length {kept[0]}, with dtype {t.scalar}.", self.b.loc)
            if v.type.length != kept[0]:
                raise KernelValueError(f"The length of the provided vector ({v.type.length}) "
                                       f"isn't compatible with the given slice (expected "
                                       f"{kept[0]}).", self.b.loc)
            if v.type.scalar != t.scalar:
                raise KernelValueError(f"The provided vector is expected to be of length "
                                       f"{kept[0]} with dtype {t.scalar}.", self.b.loc)
            parts = [(k,) for k in range(kept[0])]
        else:
            want = tuple(kept)
            if not v.type.is_matrix or v.type.shape != want or v.type.scalar != t.scalar:
                raise KernelValueError(f"The provided value is expected to be a matrix of "
                                       f"shape {want}, with dtype {t.scalar}.", self.b.loc)
            parts = [(r, c) for r in range(want[0]) for c in range(want[1])]
        new = old
        for spot, part in zip(spots, parts):
            comp = self.b.call("index", [v, *[self.b.const(k, int32) for k in part]])
            new = self.b.call("insert", [new, *[self.b.const(k, int32) for k in spot], comp])
        return new

    def matrix_block(self, base, idx):
        t = base.type
        rows, one_row = self.axis_picks(idx[0], t.rows)
        cols, one_col = self.axis_picks(idx[1], t.cols)
        parts = [self.b.call("index", [base, self.b.const(r, int32), self.b.const(c, int32)])
                 for r in rows for c in cols]
        if not parts:
            raise KernelValueError("a slice of a matrix must not be empty", self.b.loc)
        if one_row and one_col:
            return parts[0]
        if one_row or one_col:
            return self.b.call("construct", parts, Vector(len(parts), t.dtype))
        return self.b.call("construct", parts, Matrix(len(rows), len(cols), t.dtype))

    def axis_picks(self, node, n):
        """(indices, is_single) for one axis of a matrix subscript beside a slice."""
        if isinstance(node, ast.Slice):
            return list(range(*slice(*self.const_slice(node)).indices(n))), False
        x = self.expr(node)
        if not (isinstance(x, Lit) and isinstance(x.value, int)):
            raise KernelValueError("an index beside a slice must be a constant", self.b.loc)
        k = x.value + n if x.value < 0 else x.value
        if not 0 <= k < n:
            raise KernelTypeError(f"index {x.value} is out of range (0..{n - 1})", self.b.loc)
        return [k], True

    def const_slice(self, node):
        """(start, stop, step) of a slice as ints or None; every given bound a constant."""
        out = [self.slice_part(p) for p in (node.lower, node.upper, node.step)]
        for x in out:
            if x is not None and not isinstance(x, Lit):
                raise KernelValueError("Slice component must be a compile-time constant "
                                       "integer", self.b.loc)
        out = [None if x is None else x.value for x in out]
        if out[2] == 0:
            raise KernelValueError("Slice step cannot be zero", self.b.loc)
        return tuple(out)

    def slice_part(self, node):
        if node is None:
            return None
        x = self.expr(node)
        if isinstance(x, Lit) and isinstance(x.value, int) and not isinstance(x.value, bool):
            return x
        if isinstance(x, Value) and x.type.is_scalar and x.type.is_int:
            return x
        raise KernelTypeError("slice bounds must be integers", self.b.loc)

    # ---- array views ---------------------------------------------------------------------

    def as_ref(self, arr) -> ArrayRef:
        if isinstance(arr, ArrayRef):
            return arr
        return ArrayRef(arr, [Axis(Lit(0), Lit(1), self.b.emit(Op.SHAPE, [arr], int32, dim=d))
                              for d in range(arr.type.ndim)])

    def reshaped(self, args, kwargs):
        """``array(ptr=a.ptr, shape=(...), dtype=a.dtype)`` in a kernel."""
        given = dict(zip(("data", "dtype", "shape"), args))
        given.update(kwargs)
        ptr, shape, dtype = given.get("ptr"), given.get("shape"), given.get("dtype")
        if not isinstance(ptr, PtrOf) or shape is None or set(given) - {"ptr", "shape",
                                                                          "dtype"}:
            raise KernelTypeError("in a kernel, array() takes ptr=a.ptr of an array "
                                  "parameter a, shape=(...) and dtype=", self.b.loc)
        base = ptr.array
        from ..generics import as_type
        from . import structs
        if dtype is not None and as_type(self.const_arg("dtype", dtype)) != base.type.dtype:
            shown = getattr(base.type.dtype, "key", None) or base.type.dtype
            raise KernelTypeError(f"array(ptr=...) must keep the dtype of '{base.name}' "
                                  f"({shown})", self.b.loc)
        dims = list(shape) if isinstance(shape, tuple) else [shape]
        dims = [d if isinstance(d, Lit) else self.int_index(d) for d in dims]
        if isinstance(base, structs.StructArray):  # its fields seen with the new shape
            return structs.ReshapedStructArray(base, dims)
        return Reshaped(base, dims)

    def unflatten(self, ref: Reshaped, raw) -> list:
        """The indices into ref.base of ``ref[raw...]`` (row-major on both sides)."""
        if len(raw) != len(ref.shape):
            raise KernelTypeError("Incorrect number of indices specified for array indexing: "
                                  f"the array has {len(ref.shape)} dimension(s) but "
                                  f"{len(raw)} index(es) were given", self.b.loc)
        flat = Lit(0)
        for i, n in zip(raw, ref.shape):
            flat = self.add(self.mul(flat, n), i if isinstance(i, Lit) else self.int_index(i))
        out = []
        for d in reversed(range(ref.base.type.ndim)):
            if d == 0:
                out.append(flat)
                break
            n = self.b.emit(Op.SHAPE, [ref.base], int32, dim=d)
            out.append(self.call_builtin("mod", [flat, n]))
            flat = self.call_builtin("div", [flat, n])
        return [self.value(x, int32) for x in reversed(out)]

    def indexed_param(self, name: str, t: IndexedArrayType, params: list) -> Indexed:
        """Kernel parameter ``name: indexedarray[...]``: IR parameters for its data array
        and one index array per axis (the launch flattens the argument the same way)."""
        from ..ir.nodes import Param
        base = Value(ArrayType(t.dtype, t.ndim), name)
        params.append(Param(name, base.type, base))
        slots = []
        for d in range(t.ndim):
            idx = Value(ArrayType(int32, 1), f"{name}.indices{d}")
            params.append(Param(idx.name, idx.type, idx))
            slots.append((idx, self.b.emit(Op.SHAPE, [idx], int32, dim=0)))
        return Indexed(base, slots)

    def view_index(self, base, idx):
        if isinstance(base, Indexed):
            if any(isinstance(i, ast.Slice) for i in idx):
                raise KernelTypeError("an indexedarray cannot be sliced in a kernel; index it "
                                      "with integers", self.b.loc)
            raw = [self.expr(i) for i in idx]
            n = len(base.kept)
            if len(raw) > n:
                self.view_indices(base, raw)  # (its error)
            if len(raw) < n:  # a[i]: the view of the remaining axes
                it, fixed, out = iter(raw), 0, []
                for s in base.slots:
                    if isinstance(s, tuple) and fixed < len(raw):
                        out.append(self.b.emit(Op.LOAD, [s[0], self.int_index(next(it))],
                                               int32, site=self.site(s[0])))
                        fixed += 1
                    else:
                        out.append(s)
                return Indexed(base.base, out)
            indices = self.view_indices(base, raw)
            return self.b.emit(Op.LOAD, [base.base, *indices], base.base.type.dtype,
                               site=self.site(base.base))
        if isinstance(base, Reshaped):
            if any(isinstance(i, ast.Slice) for i in idx) or len(idx) != len(base.shape):
                raise KernelTypeError("an array made from a pointer is indexed with one "
                                      "integer per dimension", self.b.loc)
            indices = self.unflatten(base, [self.expr(i) for i in idx])
            return self.b.emit(Op.LOAD, [base.base, *indices], base.base.type.dtype,
                               site=self.site(base.base))
        ref = self.as_ref(base)
        kept = [k for k, a in enumerate(ref.axes) if isinstance(a, Axis)]
        if len(idx) > len(kept):
            raise KernelTypeError("Incorrect number of indices specified for array indexing: "
                                  f"array '{ref.name}' has {len(kept)} dimension(s) but "
                                  f"{len(idx)} index(es) were given", self.b.loc)
        axes, star = list(ref.axes), None
        for pos, node in zip(kept, idx):
            axis = axes[pos]
            if isinstance(node, ast.Slice):
                axes[pos], star = self.slice_axis(axis, node)
            else:
                i = self.expr(node)
                i = self.from_end(i, axis.length) if isinstance(i, Lit) else self.int_index(i)
                axes[pos] = self.add(axis.start, self.mul(i, axis.step))
        out = ArrayRef(ref.base, axes, star)
        if out.kept:
            return out
        indices = [self.value(a, int32) for a in axes]
        return self.b.emit(Op.LOAD, [ref.base, *indices], ref.base.type.dtype,
                           site=self.site(ref.base))

    def slice_axis(self, axis: Axis, node):
        """The Axis a slice of ``axis`` keeps (Python's slice semantics; a negative constant
        bound counts from the end), and why it cannot be *-unpacked (or None)."""
        start, stop, step = (self.slice_part(p) for p in (node.lower, node.upper, node.step))
        if isinstance(step, Lit) and step.value == 0:
            raise KernelValueError("Slice step cannot be zero", self.b.loc)
        star = None
        if any(x is not None and not isinstance(x, Lit) for x in (start, stop, step)):
            star = "Slice component must be a compile-time constant integer"
        elif stop is None:
            star = "unpacking an array slice requires explicit upper bound"
        elif any(isinstance(x, Lit) and x.value < 0 for x in (start, stop)):
            star = "slice bounds cannot be negative for arrays"
        elif step is not None and step.value < 0:
            star = "slice step cannot be negative for arrays"
        k = Lit(1) if step is None else step
        n = axis.length
        up = self.forward_part(start, stop, n)
        down = self.backward_part(start, stop, n)
        if isinstance(k, Lit):
            lo, span = up if k.value > 0 else down
            size = Lit(abs(k.value))
        else:  # a step known only at run time: both, chosen by its sign
            k = self.nonzero_step(k)
            pos = self.b.gt(self.value(k, int32), self.b.zeros(k.type))
            lo = self.pick(pos, up[0], down[0])
            span = self.pick(pos, up[1], down[1])
            size = self.pick(pos, k, self.call_builtin("neg", [k]))
        length = self.max0(span) if isinstance(size, Lit) and size.value == 1 else \
            self.max0(self.div(self.add(span, self.sub(size, Lit(1))), size))
        unpacked = len(range(start.value if start is not None else 0, stop.value, k.value)) \
            if star is None else None
        return Axis(self.add(axis.start, self.mul(lo, axis.step)), self.mul(axis.step, k),
                    length, unpacked), star

    def nonzero_step(self, k: Value) -> Value:
        """A slice step known only at run time, checked: zero fails the launch with
        Warp's "slice step cannot be zero" (a KernelValueError at the slice's line), bounds
        checks on or off. The step is read back as component (step == 0) of a
        one-component vector holding it, a guard Site (ir/nodes.py) that every backend's
        runtime component check reports."""
        b = self.b
        box = b.call("construct", [k], target=Vector(1, k.type))
        bad = b.cast(b.eq(k, b.zeros(k.type)), int32)
        checked = b.call("index", [box, bad])
        self.func.sites.append(Site(b.loc, "slice", (1,), "slice step",
                                    guard="slice step cannot be zero"))
        b.block.instrs[-1].attrs["site"] = len(self.func.sites) - 1
        return checked

    def forward_part(self, start, stop, n):
        lo = Lit(0) if start is None else self.clamp(self.from_end(start, n), 0, n)
        hi = n if stop is None else self.clamp(self.from_end(stop, n), 0, n)
        return lo, self.sub(hi, lo)

    def backward_part(self, start, stop, n):
        last = self.sub(n, Lit(1))
        lo = last if start is None else self.clamp(self.from_end(start, n), -1, last)
        hi = Lit(-1) if stop is None else self.clamp(self.from_end(stop, n), -1, last)
        return lo, self.sub(lo, hi)

    def pick(self, cond, a, c):
        return self.call_builtin("where", [cond, a, c])

    def from_end(self, x, n):
        """A negative constant index counts from the end of an axis of length n."""
        return self.add(n, x) if isinstance(x, Lit) and x.value < 0 else x

    def axis_length(self, axis: Axis):
        return axis.length

    def view_elements(self, ref: ArrayRef) -> list:
        """The loads ``*view`` expands into (a 1-D view with constant bounds)."""
        if ref.star is not None:
            raise KernelValueError(ref.star, self.b.loc)
        if len(ref.kept) != 1 or ref.kept[0].unpacked is None:
            raise KernelValueError("only a slice of a 1-D array with constant bounds can be "
                                   "unpacked with *", self.b.loc)
        axis = ref.kept[0]
        out = []
        for k in range(axis.unpacked):
            full = [self.value(self.add(axis.start, self.mul(Lit(k), axis.step)), int32)
                    if a is axis else self.value(a, int32) for a in ref.axes]
            out.append(self.b.emit(Op.LOAD, [ref.base, *full], ref.base.type.dtype,
                                   site=self.site(ref.base)))
        return out

    def view_indices(self, ref: ArrayRef, raw) -> list[Value]:
        """The base array's indices for ``view[raw...]`` (one index per kept axis)."""
        if isinstance(ref, Reshaped):
            return self.unflatten(ref, raw)
        if isinstance(ref, Indexed):
            n = len(ref.kept)
            if len(raw) != n:
                raise KernelTypeError("Incorrect number of indices specified for array "
                                      f"indexing: indexedarray '{ref.name}' has {n} "
                                      f"dimension(s) but {len(raw)} index(es) were given",
                                      self.b.loc)
            it = iter(raw)
            return [self.b.emit(Op.LOAD, [s[0], self.int_index(next(it))], int32,
                                site=self.site(s[0])) if isinstance(s, tuple) else s
                    for s in ref.slots]
        kept = ref.kept
        if len(raw) != len(kept):
            raise KernelTypeError("Incorrect number of indices specified for array indexing: "
                                  f"a view of '{ref.name}' has {len(kept)} dimension(s) but "
                                  f"{len(raw)} index(es) were given", self.b.loc)
        it = iter(raw)
        return [self.value(self.add(a.start, self.mul(self.int_index(next(it)), a.step))
                           if isinstance(a, Axis) else a, int32) for a in ref.axes]

    # ---- folded integer arithmetic on Lit/Value ------------------------------------------

    def add(self, a, c):
        if isinstance(a, Lit) and isinstance(c, Lit):
            return Lit(a.value + c.value)
        if isinstance(c, Lit) and c.value == 0:
            return a
        if isinstance(a, Lit) and a.value == 0:
            return c
        return self.call_builtin("add", [a, c])

    def sub(self, a, c):
        if isinstance(a, Lit) and isinstance(c, Lit):
            return Lit(a.value - c.value)
        if isinstance(c, Lit) and c.value == 0:
            return a
        return self.call_builtin("sub", [a, c])

    def mul(self, a, c):
        if isinstance(c, int):
            c = Lit(c)
        if isinstance(c, Lit) and c.value == 1:
            return a
        if isinstance(a, Lit) and a.value == 1:
            return c
        if isinstance(a, Lit) and isinstance(c, Lit):
            return Lit(a.value * c.value)
        return self.call_builtin("mul", [a, c])

    def div(self, a, c):
        if isinstance(c, int):
            c = Lit(c)
        if isinstance(a, Lit) and isinstance(c, Lit):
            return Lit(int(a.value / c.value))
        return self.call_builtin("div", [a, c])

    def max0(self, a):
        if isinstance(a, Lit):
            return Lit(max(0, a.value))
        return self.call_builtin("max", [a, Lit(0)])

    def clamp(self, x, lo: int, hi):
        """min(max(x, lo), hi), folded where the operands are constants."""
        if isinstance(x, Lit) and isinstance(hi, Lit):
            return Lit(min(max(x.value, lo), hi.value))
        low = Lit(max(x.value, lo)) if isinstance(x, Lit) else self.call_builtin(
            "max", [x, Lit(lo)])
        return self.call_builtin("min", [low, hi])


def _negative_literal(node) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
        and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int)


__all__ = ["ArrayRef", "Axis", "Indexed", "ViewMixin", "ShapeOf"]
