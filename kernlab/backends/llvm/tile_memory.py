"""Tiles to and from arrays in the LLVM backend: ``tile_load`` and ``tile_store`` (and its
atomic add), element by element, through an array or a view of one, with the array's
bounds checked (tile_buffers.py describes a tile's buffer).
"""
from __future__ import annotations

from . import textir as ir
from .tile_buffers import _I64, _PTR, _parts


class TileMemory:
    """Loads and stores (mixed into TileContext; ``self.b`` is the IRBuilder)."""

    def _array_element(self, view, e, t, offs):
        """(in_bounds, byte offset) of tile element e placed at offs in the array; an
        absent array (a gradient nobody asked for) has nothing in bounds."""
        b = self.b
        ok = b.icmp_unsigned("!=", view.ptr, ir.Constant(_PTR, None))
        at = _I64(0)
        for d, (c, o) in enumerate(zip(self._coords(e, t.tile_shape), offs)):
            src = b.add(c, b.sext(o, _I64) if o.type.width < 64 else o)
            ok = b.and_(ok, b.icmp_unsigned("<", src, view.shape[d]))
            at = b.add(at, b.mul(src, view.strides[d]))
        return ok, at

    def _view_element(self, view, e, t, desc):
        """(in_bounds, byte offset) of tile element e through an array view: ``desc`` holds,
        per axis of the array, the index of the tile's first element, the step, the range
        [low, high) of tile coordinates the view holds, and the tile's extent along it
        (1 on an axis the view fixes). The array's own bounds are checked too."""
        b = self.b
        n = len(view.shape)
        wide = [b.sext(x, _I64) if x.type.width < 64 else x for x in desc]
        first, step, low, high, ext = (wide[k * n:(k + 1) * n] for k in range(5))
        coords = []
        for x in reversed(ext[1:]):
            coords.append(b.urem(e, x))
            e = b.udiv(e, x)
        coords.append(e)
        coords.reverse()
        ok = b.icmp_unsigned("!=", view.ptr, ir.Constant(_PTR, None))
        at = _I64(0)
        for d, c in enumerate(coords):
            src = b.add(first[d], b.mul(c, step[d]))
            ok = b.and_(ok, b.and_(b.icmp_signed(">=", c, low[d]),
                                   b.icmp_signed("<", c, high[d])))
            ok = b.and_(ok, b.icmp_unsigned("<", src, view.shape[d]))
            at = b.add(at, b.mul(src, view.strides[d]))
        return ok, at

    def _element_at(self, view, e, t, offs, desc):
        """(in_bounds, byte offset) of tile element e in the array: placed at offs, or
        through a view (desc, see _view_element)."""
        if desc is None:
            return self._array_element(view, e, t, offs)
        return self._view_element(view, e, t, desc)

    def _zero_element(self, buf, t, e):
        """Every component of element e of a tile buffer set to zero."""
        b, k = self.b, _parts(t)
        sty, _, _ = self._tile_types(t)
        for c in range(k):
            b.store(ir.Constant(sty, 0), self._slot(buf, t, b.add(b.mul(e, _I64(k)), _I64(c))))

    def _component_ptr(self, view, at, t, c):
        return self.b.gep(view.ptr, [self.b.add(at, _I64(c * t.scalar.nbytes))],
                          source_etype=ir.IntType(8))

    def tile_load(self, view, offs, t, desc=None):
        """Tile t read from the array at offs (or through a view: desc, see _view_element);
        elements outside the array read as zero."""
        b, k = self.b, _parts(t)
        _, mty, _ = self._tile_types(t)
        buf = self.tile_buffer(t)

        def body(e):
            ok, at = self._element_at(view, e, t, offs, desc)
            with b.if_else(ok) as (inside, outside):
                with inside:
                    for c in range(k):
                        x = b.load(self._component_ptr(view, at, t, c), typ=mty,
                                   align=t.scalar.nbytes)
                        b.store(x, self._slot(buf, t, b.add(b.mul(e, _I64(k)), _I64(c))))
                with outside:
                    self._zero_element(buf, t, e)

        self.tile_loop(_I64(0), _I64(t.size), body)
        return buf

    def tile_store(self, view, v, t, offs, atomic=False, desc=None):
        """Write (or atomically add) tile v into the array at offs; elements outside the
        array are left out. Atomically: returns the tile of the values before the add."""
        b, k = self.b, _parts(t)
        buf = v
        old = self.tile_buffer(t, "tile_old") if atomic else None
        op = "fadd" if t.scalar.is_float else "add"

        def body(e):
            ok, at = self._element_at(view, e, t, offs, desc)
            with b.if_else(ok) as (inside, outside):
                with inside:
                    for c in range(k):
                        slot = b.add(b.mul(e, _I64(k)), _I64(c))
                        x = b.load(self._slot(buf, t, slot))
                        ptr = self._component_ptr(view, at, t, c)
                        if atomic:
                            was = b.atomic_rmw(op, ptr, x, "monotonic")
                            b.store(was, self._slot(old, t, slot))
                        else:
                            b.store(x, ptr, align=t.scalar.nbytes)
                with outside:
                    if atomic:
                        self._zero_element(old, t, e)

        self.tile_loop(_I64(0), _I64(t.size), body)
        return old if atomic else None
