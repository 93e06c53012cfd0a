"""bit_count and unot: small integer and logical helpers, written as expansions over the
bitwise primitives (scalars.py), so every backend computes the same bits."""
from __future__ import annotations

from ..types import int32, uint8, uint16, uint32, uint64
from .expand import expansion

_UNSIGNED = {8: uint8, 16: uint16}


@expansion("bit_count", ("int",), "int32")
def bit_count(g, x):
    """The number of set bits of x's fixed-width two's-complement form (a population count
    by summing bit fields in parallel); narrow and signed values are first read as unsigned
    of their own width, so no sign bit is extended."""
    t = x.type
    if t.bits < 32:
        x = g.cast(g.cast(x, _UNSIGNED[t.bits]), uint32)
    u = uint64 if t.bits == 64 else uint32
    x = g.cast(x, u)

    def k(v):
        return g.const(v & (2 ** u.bits - 1), u)

    def shr(v, n):
        return g.rshift(v, k(n))
    ones = 0x5555555555555555
    twos = 0x3333333333333333
    nibbles = 0x0F0F0F0F0F0F0F0F
    x = g.sub(x, g.bit_and(shr(x, 1), k(ones)))
    x = g.add(g.bit_and(x, k(twos)), g.bit_and(shr(x, 2), k(twos)))
    x = g.bit_and(g.add(x, shr(x, 4)), k(nibbles))
    for n in (8, 16, 32)[:3 if u.bits == 64 else 2]:
        x = g.add(x, shr(x, n))
    return g.cast(g.bit_and(x, k(0x7F)), int32)


@expansion("unot", ("bool",), "bool")
def unot_bool(g, a):
    return g.not_(a)


@expansion("unot", ("int",), "bool")
def unot_int(g, a):
    """True where a is zero."""
    return g.eq(a, g.zeros(a.type))


PUBLIC = ["bit_count", "unot"]
