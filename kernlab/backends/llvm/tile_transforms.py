"""Tile transforms in the LLVM backend: ``tile_fft``/``tile_ifft`` (radix-2 in place, or the
direct DFT for other sizes, as Warp on the CPU) and ``tile_matmul`` (tile_buffers.py
describes a tile's buffer).
"""
from __future__ import annotations

import math

import numpy as np
from . import textir as ir
from .tile_buffers import _I32, _I64


class TileTransforms:
    """FFT and matmul (mixed into TileContext; ``self.b`` is the IRBuilder)."""

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
