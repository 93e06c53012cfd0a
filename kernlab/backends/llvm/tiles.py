"""LLVM lowering of the tile builtins (builtins/tiles.py): the ``cx.tile_*`` methods.

A tile's value is one LLVM vector register holding all its scalars, row-major, each
element's components together (``types.Tile``), so locals, constants, the per-thread stack
and element-wise arithmetic treat it like any vector. An operation that walks a tile in an
order other than element-wise (a load from an array, a store, an FFT, a sum) spills the
register to a stack buffer made once in the function's entry block, runs an LLVM loop over
it and reloads the register. Each kernlab thread runs a whole block (block_dim 1, as Warp
on the CPU), so no operation needs another thread.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
_PTR = ir.PointerType()


def _parts(t) -> int:
    """Components per tile element (2 for a tile of vec2)."""
    return t.dtype.length if t.dtype.is_vector else 1


class TileContext:
    """Mixed into the backend's BuiltinContext (``self.b`` is the IRBuilder)."""

    # ---- buffers and loops ------------------------------------------------------------

    def _tile_types(self, t):
        from .cx import ll_type, mem_type
        return ll_type(t.scalar), mem_type(t.scalar), ll_type(t)

    def tile_buffer(self, t, name="tile_buf"):
        """A stack buffer of t.length scalars, allocated once in the entry block."""
        sty, _, _ = self._tile_types(t)
        entry = self.b.function.entry_basic_block
        ib = ir.IRBuilder(entry)
        ib.position_at_start(entry)
        buf = ib.alloca(ir.ArrayType(sty, t.length), name=name)
        buf.align = 16
        return buf

    def _align(self, t) -> int:
        return t.scalar.nbytes

    def tile_spill(self, v, t):
        buf = self.tile_buffer(t)
        self.b.store(v, self.b.bitcast(buf, v.type.as_pointer()), align=self._align(t))
        return buf

    def tile_reload(self, buf, t):
        _, _, vty = self._tile_types(t)
        return self.b.load(self.b.bitcast(buf, vty.as_pointer()), align=self._align(t))

    def _slot(self, buf, t, flat):
        """Pointer to scalar ``flat`` (i64) of a tile buffer."""
        return self.b.gep(buf, [_I64(0), flat])

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
        nxt = body(i, *phis) or ()
        i.add_incoming(b.add(i, _I64(step)), b.block)
        for p, v in zip(phis, nxt):
            p.add_incoming(v, b.block)
        b.branch(head)
        b.position_at_end(done)
        return phis

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

    def _component_ptr(self, view, at, t, c):
        return self.b.gep(view.ptr, [self.b.add(at, _I64(c * t.scalar.nbytes))],
                          source_etype=ir.IntType(8))

    def tile_load(self, view, offs, t):
        """Tile t read from the array at offs; elements outside the array read as zero."""
        b, k = self.b, _parts(t)
        sty, mty, _ = self._tile_types(t)
        buf = self.tile_buffer(t)

        def body(e):
            ok, at = self._array_element(view, e, t, offs)
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
        return self.tile_reload(buf, t)

    def tile_store(self, view, v, t, offs, atomic=False):
        """Write (or atomically add) tile v into the array at offs; elements outside the
        array are left out. Atomically: returns the tile of the values before the add."""
        b, k = self.b, _parts(t)
        sty, mty, _ = self._tile_types(t)
        buf = self.tile_spill(v, t)
        old = self.tile_buffer(t, "tile_old") if atomic else None
        op = "fadd" if t.scalar.is_float else "add"

        def body(e):
            ok, at = self._array_element(view, e, t, offs)
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
        return self.tile_reload(old, t) if atomic else None

    # ---- register rearrangements --------------------------------------------------------

    def tile_from_value(self, x, t):
        """A one-element tile holding x (a scalar or a vector)."""
        _, _, vty = self._tile_types(t)
        if isinstance(x.type, ir.VectorType):
            return x  # same register layout
        return self.b.insert_element(ir.Constant(vty, ir.Undefined), x, _I32(0))

    def tile_full(self, x, t):
        """Every element of tile t set to x."""
        _, _, vty = self._tile_types(t)
        if not isinstance(x.type, ir.VectorType):
            x = self.b.insert_element(ir.Constant(ir.VectorType(x.type, 1), ir.Undefined),
                                      x, _I32(0))
        k = _parts(t)
        mask = [c for _ in range(t.size) for c in range(k)]
        return self.b.shuffle_vector(x, ir.Constant(x.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(_I32, len(mask)), mask))

    def tile_permute(self, v, t, source):
        """The tile whose element e is element source[e] of v (a constant permutation)."""
        k = _parts(t)
        mask = [int(s) * k + c for s in source for c in range(k)]
        return self.b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(_I32, len(mask)), mask))

    def tile_extract(self, v, t, idx):
        """Element idx (i32 values, one per tile dimension) of tile v."""
        b, k = self.b, _parts(t)
        flat = _I32(0)
        for i, n in zip(idx, t.tile_shape):
            flat = b.add(b.mul(flat, _I32(n)), i)
        if k == 1:
            return b.extract_element(v, flat)
        sty, _, _ = self._tile_types(t)
        out = ir.Constant(ir.VectorType(sty, k), ir.Undefined)
        for c in range(k):
            out = b.insert_element(out, b.extract_element(v, b.add(b.mul(flat, _I32(k)),
                                                                   _I32(c))), _I32(c))
        return out

    def tile_put(self, v, x, t, idx):
        """Tile v with element idx (i32 values) replaced by x."""
        b, k = self.b, _parts(t)
        flat = _I32(0)
        for i, n in zip(idx, t.tile_shape):
            flat = b.add(b.mul(flat, _I32(n)), i)
        if k == 1:
            return b.insert_element(v, x, flat)
        for c in range(k):
            v = b.insert_element(v, b.extract_element(x, _I32(c)),
                                 b.add(b.mul(flat, _I32(k)), _I32(c)))
        return v

    # ---- reductions and transforms --------------------------------------------------------

    def tile_sum(self, v, t, out):
        """The sum of the elements of v, in element order, as a one-element tile."""
        b, k = self.b, _parts(t)
        sty, _, _ = self._tile_types(t)
        ety = ir.VectorType(sty, k)
        buf = self.tile_spill(v, t)
        add = b.fadd if t.scalar.is_float else b.add

        def body(e, acc):
            x = b.load(b.bitcast(self._slot(buf, t, b.mul(e, _I64(k))), ety.as_pointer()),
                       align=t.scalar.nbytes)
            return [add(acc, x)]

        acc, = self.tile_loop(_I64(0), _I64(t.size), body, [ir.Constant(ety, None)])
        return acc  # ll_type of a one-element tile: k scalars

    def tile_fft(self, v, t, sign: int):
        """The unnormalised DFT (sign -1) or inverse DFT (+1) along the last dimension of
        a tile of vec2 (complex) values: radix-2 Cooley-Tukey in place, the twiddle of each
        stage advanced by one complex multiply per butterfly, as Warp does on the CPU."""
        b = self.b
        n = t.tile_shape[-1]
        log_n = n.bit_length() - 1
        sty, _, _ = self._tile_types(t)
        buf = self.tile_spill(v, t)
        rev = np.array([int(format(i, f"0{log_n}b")[::-1], 2) if log_n else 0
                        for i in range(n)], np.int32)
        table = ir.GlobalVariable(self.module, ir.ArrayType(_I32, n),
                                  self.module.get_unique_name("fft_bitrev"))
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(ir.ArrayType(_I32, n), [int(r) for r in rev])

        def re_im(base, idx):  # pointers to the real and imaginary parts of x[idx]
            at = b.mul(b.add(base, idx), _I64(2))
            return self._slot(buf, t, at), self._slot(buf, t, b.add(at, _I64(1)))

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
        return self.tile_reload(buf, t)

