"""Tile reductions in the LLVM backend: sums, folds (whole or along an axis), arg-min/max
and scans, and the adjoint of a min/max scan, each a loop over the tile's elements in order
(tile_buffers.py describes a tile's buffer).
"""
from __future__ import annotations

from . import textir as ir
from .tile_buffers import _I1, _I32, _I64, _parts, _strides


class TileReductions:
    """Reductions and scans (mixed into TileContext; ``self.b`` is the IRBuilder)."""

    # ---- sums and folds -----------------------------------------------------------------

    def tile_sum(self, v, t, out):
        """The sum of the elements of v, in element order, as a one-element tile."""
        b, k = self.b, _parts(t)
        sty, _, _ = self._tile_types(t)
        ety = ir.VectorType(sty, k)
        add = b.fadd if t.scalar.is_float else b.add

        def body(e, acc):
            x = b.load(self._chunk(v, t, b.mul(e, _I64(k)), k), align=t.scalar.nbytes)
            return [add(acc, x)]

        acc, = self.tile_loop(_I64(0), _I64(t.size), body, [ir.Constant(ety, None)])
        out_buf = self.tile_buffer(out)
        b.store(acc, self._chunk(out_buf, out, _I64(0), k), align=t.scalar.nbytes)
        return out_buf

    def _scalar_op(self, op, x, y, t):
        """x op y on two scalars of tile t's type, by the scalar builtin's own lowering (so
        max/min treat NaN as the scalar max/min do)."""
        from ...builtins.registry import REGISTRY
        saved = self.types, self.ret
        self.types, self.ret = [t.scalar, t.scalar], t.scalar
        try:
            return REGISTRY[op].llvm(self, x, y)
        finally:
            self.types, self.ret = saved

    def tile_fold(self, v, t, op, out):
        """The one-element tile of op folded over v's elements in order (add, mul, max,
        min); scalar elements."""
        b = self.b
        first = b.load(self._slot(v, t, _I64(0)))
        acc, = self.tile_loop(_I64(1), _I64(t.size), lambda e, a: [
            self._scalar_op(op, a, b.load(self._slot(v, t, e)), t)], [first])
        buf = self.tile_buffer(out)
        b.store(acc, self._slot(buf, out, _I64(0)))
        return buf

    def tile_fold_axis(self, v, src, out_t, op):
        """op folded along the axis where out_t (keepdims) has 1 and src does not; the
        elements of each output in order along that axis."""
        b = self.b
        dims = src.tile_shape
        strides = _strides(out_t.tile_shape)
        axes = [d for d, (n, m) in enumerate(zip(dims, out_t.tile_shape)) if m == 1 and n != 1]
        out = self.tile_buffer(out_t)

        def body(e):
            coords = self._coords(e, dims)
            at = _I64(0)
            for d, (c, s) in enumerate(zip(coords, strides)):
                if d not in axes:
                    at = b.add(at, b.mul(c, _I64(s)))
            x = b.load(self._slot(v, src, e))
            slot = self._slot(out, out_t, at)
            first = b.icmp_signed("==", coords[axes[0]], _I64(0)) if axes else ir.Constant(_I1, 1)
            with b.if_else(first) as (yes, no):
                with yes:
                    b.store(x, slot)
                with no:
                    b.store(self._scalar_op(op, b.load(slot), x, src), slot)

        self.tile_loop(_I64(0), _I64(src.size), body)
        return out

    # ---- arg-reductions and scans over the flattened tile -------------------------------

    def _better(self, x, best, less):
        """x beats best: smaller (larger), or best is NaN and x is not (the first of equal
        elements keeps its place)."""
        b = self.b
        if isinstance(x.type, ir.IntType):
            return b.icmp_signed("<" if less else ">", x, best)
        nan_best = b.and_(b.fcmp_unordered("uno", best, best), b.fcmp_ordered("ord", x, x))
        return b.or_(b.fcmp_ordered("<" if less else ">", x, best), nan_best)

    def tile_argbest(self, v, t, less, out):
        """The one-element int32 tile of the flat index of v's smallest (largest) element,
        the first one among equals."""
        b = self.b

        def body(e, best, at):
            x = b.load(self._slot(v, t, e))
            win = self._better(x, best, less)
            return [b.select(win, x, best), b.select(win, b.trunc(e, _I32), at)]

        _, at = self.tile_loop(_I64(1), _I64(t.size), body,
                               [b.load(self._slot(v, t, _I64(0))), _I32(0)])
        buf = self.tile_buffer(out)
        b.store(at, self._slot(buf, out, _I64(0)))
        return buf

    def tile_scan(self, v, t, op, exclusive, reverse):
        """Prefix (reverse: suffix) scan of op over the flattened tile; exclusive starts
        from op's identity (0 for add, 1 for mul)."""
        b = self.b
        sty, _, _ = self._tile_types(t)
        out = self.tile_buffer(t)
        n = t.size
        ident = ir.Constant(sty, 1 if op == "mul" else 0) if not t.scalar.is_float \
            else ir.Constant(sty, 1.0 if op == "mul" else 0.0)

        def body(k, acc):
            e = b.sub(_I64(n - 1), k) if reverse else k
            x = b.load(self._slot(v, t, e))
            b.store(acc, self._slot(out, t, e))
            return [self._scalar_op(op, acc, x, t)]

        if exclusive:
            self.tile_loop(_I64(0), _I64(n), body, [ident])
            return out

        def incl(k, acc):
            e = b.sub(_I64(n - 1), k) if reverse else k
            x = b.load(self._slot(v, t, e))
            new = self._scalar_op(op, acc, x, t)
            b.store(new, self._slot(out, t, e))
            return [new]

        first = _I64(n - 1) if reverse else _I64(0)
        x0 = b.load(self._slot(v, t, first))
        b.store(x0, self._slot(out, t, first))
        self.tile_loop(_I64(1), _I64(n), incl, [x0])
        return out

    def tile_scan_route(self, v, adj, t, less):
        """The adjoint of an inclusive min (max) scan: adj[i] goes to the element the scan
        held at i (the first smallest/largest of v[0..i])."""
        b = self.b
        out = self.tile_buffer(t)
        self.tile_fill_zero(out, t)

        def body(e, best, at):
            x = b.load(self._slot(v, t, e))
            win = b.or_(b.icmp_signed("==", e, _I64(0)), self._better(x, best, less))
            best, at = b.select(win, x, best), b.select(win, e, at)
            slot = self._slot(out, t, at)
            add = b.fadd if t.scalar.is_float else b.add
            b.store(add(b.load(slot), b.load(self._slot(adj, t, e))), slot)
            return [best, at]

        self.tile_loop(_I64(0), _I64(t.size), body,
                       [b.load(self._slot(v, t, _I64(0))), _I64(0)])
        return out
