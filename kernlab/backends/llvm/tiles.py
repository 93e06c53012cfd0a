"""LLVM lowering of tiles (types.Tile): the tile builtins' ``cx.tile_*`` methods, the
element-wise lifting of arithmetic builtins to tiles, and tile locals, constants and stack
slots.

``TileContext`` is mixed into the backend's BuiltinContext (cx.py). It holds the
element-wise lifting and the register rearrangements (broadcast, transpose, one element in
or out) and takes the rest from four mixins: tile_buffers.py (a tile's buffer, the layout
and the loops over it), tile_memory.py (loads and stores), tile_reductions.py (sums, folds,
scans) and tile_transforms.py (FFT, matmul).
"""
from __future__ import annotations

from . import textir as ir
from .tile_buffers import _I32, _I64, CHUNK, TileBuffers, _parts, _strides
from .tile_buffers import pin_buffer, storage_type  # noqa: F401  (cx.py, entry.py import them here)
from .tile_memory import TileMemory
from .tile_reductions import TileReductions
from .tile_transforms import TileTransforms


class TileContext(TileBuffers, TileMemory, TileReductions, TileTransforms):
    """Mixed into the backend's BuiltinContext (``self.b`` is the IRBuilder)."""

    # ---- element-wise arithmetic on tiles -----------------------------------------------

    def tile_lift(self, builtin, args, types, ret):
        """A builtin given tile signatures (add, sub, neg, mul and div by a scalar, inner)
        applied chunk by chunk: its own lowering runs on <w x S> slices of the tiles, with
        scalar operands broadcast, as it runs on vectors."""
        from ...types import Vector as V
        tile = next(t for t in types if t.is_tile)
        al = tile.scalar.nbytes
        b = self.b
        if not ret.is_tile:  # inner(tile, tile): a sum of products
            sty, _, _ = self._tile_types(tile)
            acc = ir.Constant(sty, None)

            def dot(off, w, total):  # total plus the products of the w scalars from off
                pa, pb = (b.load(self._chunk(a, tile, off, w), align=al) for a in args)
                self.types, self.ret = [V(w, tile.scalar)] * 2, tile.scalar
                part = builtin.llvm(self, pa, pb)
                return b.fadd(total, part) if tile.scalar.is_float else b.add(total, part)

            full, rest = divmod(tile.length, CHUNK)
            if full:
                acc, = self.tile_loop(_I64(0), _I64(full * CHUNK),
                                      lambda i, total: [dot(i, CHUNK, total)], [acc], step=CHUNK)
            if rest:
                acc = dot(_I64(full * CHUNK), rest, acc)
            return acc
        out = self.tile_buffer(ret)

        def body(off, w):
            vals, chunk_types = [], []
            for a, t in zip(args, types):
                if t.is_tile:
                    vals.append(b.load(self._chunk(a, t, off, w), align=al))
                    chunk_types.append(V(w, t.scalar))
                else:
                    vals.append(a)
                    chunk_types.append(t)
            self.types, self.ret = chunk_types, V(w, ret.scalar)
            b.store(builtin.llvm(self, *vals), self._chunk(out, ret, off, w), align=al)

        self.tile_chunks(ret, body)
        return out

    # ---- register rearrangements --------------------------------------------------------

    def tile_from_value(self, x, t):
        """A tile holding x: one element, or (a vector without preserve_type) its
        components as a column."""
        out = self.tile_buffer(t)
        if isinstance(x.type, ir.VectorType):
            for c in range(x.type.count):
                self.b.store(self.b.extract_element(x, _I32(c)), self._slot(out, t, _I64(c)))
        else:
            self.b.store(x, self._slot(out, t, _I64(0)))
        return out

    def tile_full(self, x, t):
        """Every element of tile t set to x."""
        out = self.tile_buffer(t)
        self.tile_loop(_I64(0), _I64(t.size), lambda e: self._put_element(out, t, e, x))
        return out

    def tile_transpose(self, v, t):
        """The transpose of a 2-D tile (t is the operand's type)."""
        rows, cols = t.tile_shape
        out = self.tile_buffer(t)
        b = self.b

        def row(i):
            def col(j):
                x = self._get_element(v, t, b.add(b.mul(i, _I64(cols)), j))
                self._put_element(out, t, b.add(b.mul(j, _I64(rows)), i), x)
            self.tile_loop(_I64(0), _I64(cols), col)

        self.tile_loop(_I64(0), _I64(rows), row)
        return out

    def tile_extract(self, v, t, idx):
        """Element idx (int values, one per tile dimension) of tile v."""
        return self._get_element(v, t, self._flat(t, idx))

    def tile_put(self, v, x, t, idx):
        """Tile v with element idx replaced by x."""
        out = self.tile_fresh_copy(v, t)
        self._put_element(out, t, self._flat(t, idx), x)
        return out

    def tile_onehot(self, x, at, t):
        """The tile of type t that is zero except x at flat element ``at``."""
        out = self.tile_buffer(t)
        self.tile_fill_zero(out, t)
        at = self.b.sext(at, _I64) if at.type.width < 64 else at
        self._put_element(out, t, at, x)
        return out

    def tile_broadcast(self, v, small, big, add):
        """Broadcast tile v of type ``small`` to type ``big`` (add=False), or, with add=True,
        sum v of type ``big`` into a tile of type ``small`` over the repeated axes."""
        b, k = self.b, _parts(small)
        dims = big.tile_shape
        src = (1,) * (len(dims) - len(small.tile_shape)) + tuple(small.tile_shape)
        strides = _strides(src)
        out = self.tile_buffer(small if add else big)
        if add:
            self.tile_fill_zero(out, small)

        def body(e):
            at = _I64(0)
            for c, n, s in zip(self._coords(e, dims), src, strides):
                if n != 1:
                    at = b.add(at, b.mul(c, _I64(s)))
            for c in range(k):
                big_slot = self._slot(out if not add else v, big,
                                      b.add(b.mul(e, _I64(k)), _I64(c)))
                small_slot = self._slot(v if not add else out, small,
                                        b.add(b.mul(at, _I64(k)), _I64(c)))
                if add:
                    x = b.load(big_slot)
                    y = b.load(small_slot)
                    b.store(b.fadd(y, x) if small.scalar.is_float else b.add(y, x), small_slot)
                else:
                    b.store(b.load(small_slot), big_slot)

        self.tile_loop(_I64(0), _I64(big.size), body)
        return out
