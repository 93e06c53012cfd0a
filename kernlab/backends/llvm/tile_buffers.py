"""The tile buffers of the LLVM backend (types.Tile): a tile's storage, the loops over it
and element access, which the other tile modules (tile_memory.py, tile_reductions.py,
tile_transforms.py, tiles.py) build on.

A tile's value is a pointer to a stack buffer ``[L x S]`` of all its scalars, row-major,
each element's components together. Every operation writes a fresh buffer (allocated once,
in the entry block) and never its operands, so a pointer can be passed around as a value:
a local of tile type owns a buffer that a store copies into and a load copies out of, a
constant is a read-only global, and the per-thread stack holds a tile's bytes. The loops
run over the buffer in chunks of ``CHUNK`` scalars (LLVM vectorises them), so a tile of
thousands of scalars costs a loop, not thousands of instructions. Each kernlab thread runs
a whole block (block_dim 1, as Warp on the CPU), so no operation needs another thread.
"""
from __future__ import annotations

import numpy as np
from . import textir as ir

_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
_PTR = ir.PointerType()
CHUNK = 8  # scalars a lifted or copying loop handles per iteration


def storage_type(t) -> ir.ArrayType:
    """The buffer type of a tile: all its scalars."""
    from .cx import ll_type
    return ir.ArrayType(ll_type(t.scalar), t.length)


def _parts(t) -> int:
    """Components per tile element (2 for a tile of vec2)."""
    return t.dtype.length if t.dtype.is_vector or t.dtype.is_matrix else 1


def _strides(shape) -> list:
    """The row-major element strides of a tile shape."""
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return strides[::-1]


def pin_buffer(builder, buf):
    """Let a tile buffer's address escape (an empty inline asm that takes it), so SROA
    keeps it one buffer: with whole-buffer copies LLVM would otherwise split a tile of
    thousands of scalars into as many values, and compile time would grow with the size."""
    fty = ir.FunctionType(ir.VoidType(), [buf.type])
    builder.call(ir.InlineAsm(fty, "", "r", side_effect=True), [buf])


class TileBuffers:
    """Buffers, loops and elements (mixed into TileContext; ``self.b`` is the IRBuilder)."""

    # ---- buffers and loops --------------------------------------------------------------

    def _tile_types(self, t):
        from .cx import ll_type, mem_type
        return ll_type(t.scalar), mem_type(t.scalar), ll_type(t)

    def tile_buffer(self, t, name="tile_buf"):
        """A stack buffer of t.length scalars, allocated once in the entry block."""
        entry = self.b.function.entry_basic_block
        ib = ir.IRBuilder(entry)
        ib.position_at_start(entry)
        buf = ib.alloca(storage_type(t), name=name)
        buf.align = 16
        pin_buffer(ib, buf)
        return buf

    def _slot(self, buf, t, flat):
        """Pointer to scalar ``flat`` (i64) of a tile buffer."""
        return self.b.gep(buf, [_I64(0), flat])

    def _chunk(self, buf, t, off, w):
        """Pointer to the w scalars of a buffer from scalar ``off``, as a <w x S>*."""
        sty, _, _ = self._tile_types(t)
        return self.b.bitcast(self._slot(buf, t, off), ir.VectorType(sty, w).as_pointer())

    def tile_chunks(self, t, body):
        """body(off, w) over the tile's scalars in chunks: a loop of CHUNK-wide ones, then
        the remainder once."""
        full, rest = divmod(t.length, CHUNK)
        if full:
            self.tile_loop(_I64(0), _I64(full * CHUNK), lambda i: body(i, CHUNK), step=CHUNK)
        if rest:
            body(_I64(full * CHUNK), rest)

    def tile_copy(self, dst, src, t):
        al = t.scalar.nbytes
        self.tile_chunks(t, lambda off, w: self.b.store(
            self.b.load(self._chunk(src, t, off, w), align=al), self._chunk(dst, t, off, w),
            align=al))

    def tile_fill_zero(self, buf, t):
        sty, _, _ = self._tile_types(t)
        self.tile_chunks(t, lambda off, w: self.b.store(
            ir.Constant(ir.VectorType(sty, w), None), self._chunk(buf, t, off, w),
            align=t.scalar.nbytes))

    def tile_fresh_copy(self, src, t):
        out = self.tile_buffer(t)
        self.tile_copy(out, src, t)
        return out

    def tile_constant(self, t, value):
        """A read-only global holding a constant tile."""
        from .cx import constant
        flat = np.broadcast_to(np.asarray(value, t.scalar.np), t.shape).reshape(-1)
        ty = storage_type(t)
        if not flat.any() and not np.signbit(flat).any():
            init = ir.Constant(ty, None)
        else:
            init = ir.Constant(ty, [constant(t.scalar, x) for x in flat])
        g = ir.GlobalVariable(self.module, ty, self.module.get_unique_name("tile_const"))
        g.global_constant, g.linkage, g.initializer = True, "internal", init
        g.align = 16
        return g

    def tile_loop(self, lo, hi, body, carried=(), step=1):
        """for i in range(lo, hi, step) (i64; step a positive constant): body(i, *carried)
        returns the carried values' next state; returns their final state."""
        b = self.b
        fn = b.function
        pre = b.block
        head, loop, done = (fn.append_basic_block(n) for n in ("tile_head", "tile_loop",
                                                               "tile_done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(_I64, "ti")
        i.add_incoming(lo, pre)
        phis = []
        for c in carried:
            p = b.phi(c.type)
            p.add_incoming(c, pre)
            phis.append(p)
        b.cbranch(b.icmp_signed("<", i, hi), loop, done)
        b.position_at_end(loop)
        nxt = body(i, *phis) if phis else (body(i), ())[1]
        i.add_incoming(b.add(i, _I64(step)), b.block)
        for p, v in zip(phis, nxt):
            p.add_incoming(v, b.block)
        b.branch(head).set_metadata("llvm.loop", self._no_unroll_md())
        b.position_at_end(done)
        return phis

    def _no_unroll_md(self):
        """Loop metadata that keeps LLVM from unrolling a tile loop: unrolled, its constant
        offsets let SROA split a tile's buffer into hundreds of values, and compile time
        grows with the tile's size. A loop ID lists itself first (patched in: llvmlite has
        no self-referencing nodes)."""
        md = getattr(self, "_tile_loop_md", None)
        if md is None:
            off = self.module.add_metadata([ir.MetaDataString(self.module,
                                                              "llvm.loop.unroll.disable")])
            md = self.module.add_metadata([off])
            md.operands = (md, off)
            self._tile_loop_md = md
        return md

    def _coords(self, e, shape):
        """The tile coordinates (i64) of flat element e."""
        out = []
        for n in reversed(shape[1:]):
            out.append(self.b.urem(e, _I64(n)))
            e = self.b.udiv(e, _I64(n))
        out.append(e)
        return out[::-1]

    # ---- elements -----------------------------------------------------------------------

    def _put_element(self, buf, t, e, x):
        """Store element x (a scalar, or a vector of the tile's components) at element e."""
        k = _parts(t)
        if k == 1:
            self.b.store(x, self._slot(buf, t, e))
            return
        for c in range(k):
            self.b.store(self.b.extract_element(x, _I32(c)),
                         self._slot(buf, t, self.b.add(self.b.mul(e, _I64(k)), _I64(c))))

    def _get_element(self, buf, t, e):
        k = _parts(t)
        if k == 1:
            return self.b.load(self._slot(buf, t, e))
        return self.b.load(self._chunk(buf, t, self.b.mul(e, _I64(k)), k),
                           align=t.scalar.nbytes)

    def _flat(self, t, idx):
        b = self.b
        flat = _I64(0)
        for i, n in zip(idx, t.tile_shape):
            i = b.sext(i, _I64) if i.type.width < 64 else i
            flat = b.add(b.mul(flat, _I64(n)), i)
        return flat
