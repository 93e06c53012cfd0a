"""LLVM lowering of tiles (types.Tile): the tile builtins' ``cx.tile_*`` methods, the
element-wise lifting of arithmetic builtins to tiles, and tile locals, constants and stack
slots.

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

import math

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


def pin_buffer(builder, buf):
    """Let a tile buffer's address escape (an empty inline asm that takes it), so SROA
    keeps it one buffer: with whole-buffer copies LLVM would otherwise split a tile of
    thousands of scalars into as many values, and compile time would grow with the size."""
    fty = ir.FunctionType(ir.VoidType(), [buf.type])
    builder.call(ir.InlineAsm(fty, "", "r", side_effect=True), [buf])


class TileContext:
    """Mixed into the backend's BuiltinContext (``self.b`` is the IRBuilder)."""

    # ---- buffers and loops ------------------------------------------------------------

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

    # ---- element-wise arithmetic on tiles ------------------------------------------------

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
            acc = [ir.Constant(sty, None)]

            def dot(off, w):
                pa, pb = (b.load(self._chunk(a, tile, off, w), align=al) for a in args)
                self.types, self.ret = [V(w, tile.scalar)] * 2, tile.scalar
                part = builtin.llvm(self, pa, pb)
                acc[0] = b.fadd(acc[0], part) if tile.scalar.is_float else b.add(acc[0], part)

            full, rest = divmod(tile.length, CHUNK)
            if full:
                def loop_body(i, total):
                    pa, pb = (b.load(self._chunk(a, tile, i, CHUNK), align=al) for a in args)
                    self.types, self.ret = [V(CHUNK, tile.scalar)] * 2, tile.scalar
                    part = builtin.llvm(self, pa, pb)
                    return [b.fadd(total, part) if tile.scalar.is_float else b.add(total, part)]
                acc[0], = self.tile_loop(_I64(0), _I64(full * CHUNK), loop_body, acc, step=CHUNK)
            if rest:
                dot(_I64(full * CHUNK), rest)
            return acc[0]
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

    # ---- memory -----------------------------------------------------------------------

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

    def _component_ptr(self, view, at, t, c):
        return self.b.gep(view.ptr, [self.b.add(at, _I64(c * t.scalar.nbytes))],
                          source_etype=ir.IntType(8))

    def tile_load(self, view, offs, t, desc=None):
        """Tile t read from the array at offs (or through a view: desc, see _view_element);
        elements outside the array read as zero."""
        b, k = self.b, _parts(t)
        sty, mty, _ = self._tile_types(t)
        buf = self.tile_buffer(t)

        def body(e):
            ok, at = self._array_element(view, e, t, offs) if desc is None else \
                self._view_element(view, e, t, desc)
            with b.if_else(ok) as (inside, outside):
                with inside:
                    for c in range(k):
                        x = b.load(self._component_ptr(view, at, t, c), typ=mty,
                                   align=t.scalar.nbytes)
                        b.store(x, self._slot(buf, t, b.add(b.mul(e, _I64(k)), _I64(c))))
                with outside:
                    for c in range(k):
                        b.store(ir.Constant(sty, 0),
                                self._slot(buf, t, b.add(b.mul(e, _I64(k)), _I64(c))))

        self.tile_loop(_I64(0), _I64(t.size), body)
        return buf

    def tile_store(self, view, v, t, offs, atomic=False, desc=None):
        """Write (or atomically add) tile v into the array at offs; elements outside the
        array are left out. Atomically: returns the tile of the values before the add."""
        b, k = self.b, _parts(t)
        sty, mty, _ = self._tile_types(t)
        buf = v
        old = self.tile_buffer(t, "tile_old") if atomic else None
        op = "fadd" if t.scalar.is_float else "add"

        def body(e):
            ok, at = self._array_element(view, e, t, offs) if desc is None else \
                self._view_element(view, e, t, desc)
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
                        for c in range(k):
                            b.store(ir.Constant(sty, 0), self._slot(
                                old, t, b.add(b.mul(e, _I64(k)), _I64(c))))

        self.tile_loop(_I64(0), _I64(t.size), body)
        return old if atomic else None

    # ---- register rearrangements --------------------------------------------------------

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

    def _flat(self, t, idx):
        b = self.b
        flat = _I64(0)
        for i, n in zip(idx, t.tile_shape):
            i = b.sext(i, _I64) if i.type.width < 64 else i
            flat = b.add(b.mul(flat, _I64(n)), i)
        return flat

    def tile_extract(self, v, t, idx):
        """Element idx (int values, one per tile dimension) of tile v."""
        return self._get_element(v, t, self._flat(t, idx))

    def tile_put(self, v, x, t, idx):
        """Tile v with element idx replaced by x."""
        out = self.tile_fresh_copy(v, t)
        self._put_element(out, t, self._flat(t, idx), x)
        return out

    # ---- reductions and transforms --------------------------------------------------------

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

    def tile_fft(self, v, t, sign: int):
        """The unnormalised DFT (sign -1) or inverse DFT (+1) along the last dimension of
        a tile of vec2 (complex) values: radix-2 Cooley-Tukey in place, the twiddle of each
        stage advanced by one complex multiply per butterfly, as Warp does on the CPU."""
        b = self.b
        n = t.tile_shape[-1]
        log_n = n.bit_length() - 1
        sty, _, _ = self._tile_types(t)
        buf = self.tile_fresh_copy(v, t)
        rev = np.array([int(format(i, f"0{log_n}b")[::-1], 2) if log_n else 0
                        for i in range(n)], np.int32)
        table = ir.GlobalVariable(self.module, ir.ArrayType(_I32, n),
                                  self.module.get_unique_name("fft_bitrev"))
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(ir.ArrayType(_I32, n), [int(r) for r in rev])

        def re_im(base, idx):  # pointers to the real and imaginary parts of x[idx]
            at = b.mul(b.add(base, idx), _I64(2))
            return self._slot(buf, t, at), self._slot(buf, t, b.add(at, _I64(1)))

        if n & (n - 1):  # not a power of two: the direct O(n^2) DFT, as Warp on the CPU
            return self._tile_dft(buf, t, sign)

        def batch(bi):
            base = b.mul(bi, _I64(n))

            def permute(i):
                j = b.sext(b.load(b.gep(table, [_I64(0), i])), _I64)
                with b.if_then(b.icmp_signed("<", i, j)):
                    for p, q in zip(re_im(base, i), re_im(base, j)):
                        x, y = b.load(p), b.load(q)
                        b.store(y, p)
                        b.store(x, q)

            self.tile_loop(_I64(0), _I64(n), permute)
            length = 2
            while length <= n:
                half = length // 2
                real = np.float32 if t.scalar.bits == 32 else np.float64
                theta = real(sign) * real(2 * math.pi) / real(length)  # in the tile's precision
                th = ir.Constant(sty, float(theta))
                wm_re, wm_im = self.libm("cos", th), self.libm("sin", th)

                def group(k0, half=half):
                    def fly(j, w_re, w_im):
                        lo, hi = re_im(base, b.add(k0, j)), re_im(base, b.add(b.add(k0, j),
                                                                                _I64(half)))
                        x_re, x_im = b.load(hi[0]), b.load(hi[1])
                        t_re = b.fsub(b.fmul(w_re, x_re), b.fmul(w_im, x_im))
                        t_im = b.fadd(b.fmul(w_re, x_im), b.fmul(w_im, x_re))
                        u_re, u_im = b.load(lo[0]), b.load(lo[1])
                        b.store(b.fadd(u_re, t_re), lo[0])
                        b.store(b.fadd(u_im, t_im), lo[1])
                        b.store(b.fsub(u_re, t_re), hi[0])
                        b.store(b.fsub(u_im, t_im), hi[1])
                        return [b.fsub(b.fmul(w_re, wm_re), b.fmul(w_im, wm_im)),
                                b.fadd(b.fmul(w_re, wm_im), b.fmul(w_im, wm_re))]

                    self.tile_loop(_I64(0), _I64(half), fly,
                                   [ir.Constant(sty, 1.0), ir.Constant(sty, 0.0)])

                self.tile_loop(_I64(0), _I64(n), group, step=length)
                length *= 2

        self.tile_loop(_I64(0), _I64(t.size // n), batch)
        return buf

    def _tile_dft(self, buf, t, sign: int):
        """X[k] = sum_j x[j] exp(sign 2 pi i k j / n) per batch, each angle computed as
        (base k) j in the tile's precision, as Warp's CPU fallback does."""
        b = self.b
        n = t.tile_shape[-1]
        sty, _, _ = self._tile_types(t)
        real = np.float32 if t.scalar.bits == 32 else np.float64
        base = ir.Constant(sty, float(real(sign) * real(2 * math.pi) / real(n)))
        from ...types import Tile
        row = Tile(t.dtype, (n,))
        out = self.tile_buffer(row, "dft_out")

        def batch(bi):
            first = b.mul(bi, _I64(2 * n))

            def bin_k(k):
                kf = b.sitofp(k, sty)

                def term(j, acc_re, acc_im):
                    theta = b.fmul(b.fmul(base, kf), b.sitofp(j, sty))
                    c, s_ = self.libm("cos", theta), self.libm("sin", theta)
                    at = b.add(first, b.mul(j, _I64(2)))
                    xr = b.load(self._slot(buf, t, at))
                    xi = b.load(self._slot(buf, t, b.add(at, _I64(1))))
                    return [b.fadd(acc_re, b.fsub(b.fmul(c, xr), b.fmul(s_, xi))),
                            b.fadd(acc_im, b.fadd(b.fmul(c, xi), b.fmul(s_, xr)))]

                re, im = self.tile_loop(_I64(0), _I64(n), term,
                                        [ir.Constant(sty, 0.0), ir.Constant(sty, 0.0)])
                b.store(re, self._slot(out, row, b.mul(k, _I64(2))))
                b.store(im, self._slot(out, row, b.add(b.mul(k, _I64(2)), _I64(1))))

            self.tile_loop(_I64(0), _I64(n), bin_k)

            def back(e):
                b.store(b.load(self._slot(out, row, e)), self._slot(buf, t, b.add(first, e)))
            self.tile_loop(_I64(0), _I64(2 * n), back)

        self.tile_loop(_I64(0), _I64(t.size // n), batch)
        return buf

    # ---- reductions, arg-reductions and scans over the flattened tile --------------------

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
        strides, acc = [], 1
        for n in reversed(src):
            strides.append(acc)
            acc *= n
        strides = strides[::-1]
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

    def tile_fold_axis(self, v, src, out_t, op):
        """op folded along the axis where out_t (keepdims) has 1 and src does not; the
        elements of each output in order along that axis."""
        b = self.b
        dims = src.tile_shape
        strides, acc = [], 1
        for n in reversed(out_t.tile_shape):
            strides.append(acc)
            acc *= n
        strides = strides[::-1]
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

    def tile_matmul(self, a, ta, b, tb, out_t):
        """a @ b for 2-D tiles of floats: each output the sum over k in order."""
        bld = self.b
        m, kk = ta.tile_shape
        n = tb.tile_shape[1]
        sty, _, _ = self._tile_types(out_t)
        out = self.tile_buffer(out_t)

        def row(i):
            def col(j):
                def term(k, acc):
                    x = bld.load(self._slot(a, ta, bld.add(bld.mul(i, _I64(kk)), k)))
                    y = bld.load(self._slot(b, tb, bld.add(bld.mul(k, _I64(n)), j)))
                    return [bld.fadd(acc, bld.fmul(x, y))]
                acc, = self.tile_loop(_I64(0), _I64(kk), term, [ir.Constant(sty, 0.0)])
                bld.store(acc, self._slot(out, out_t, bld.add(bld.mul(i, _I64(n)), j)))
            self.tile_loop(_I64(0), _I64(n), col)

        self.tile_loop(_I64(0), _I64(m), row)
        return out
