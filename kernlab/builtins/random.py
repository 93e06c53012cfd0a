"""Warp's per-thread random numbers: a uint32 state stepped by a PCG hash.

``state = rand_init(seed[, offset])``; ``randf(state)``, ``randi(state)`` and friends
return a number and advance ``state`` (the call writes its first argument). Written as
expansions over integer primitives, so every backend computes the same bits.
"""
from __future__ import annotations

import numpy as np

from ..types import Vector, float32, int32, uint32
from .expand import expansion


def _u(g, x):
    return g.const(x, uint32)


def pcg(g, state):
    """One step of the PCG output hash (Warp's rand_pcg)."""
    b = g.add(g.mul(state, _u(g, 747796405)), _u(g, 2891336453))
    shift = g.add(g.rshift(b, _u(g, 28)), _u(g, 4))
    c = g.mul(g.bit_xor(g.rshift(b, shift), b), _u(g, 277803737))
    return g.bit_xor(g.rshift(c, _u(g, 22)), c)


@expansion("rand_init", ("int",), "uint32")
def rand_init(g, seed):
    return pcg(g, g.cast(seed, uint32))


@expansion("rand_init", ("int", "int"), "uint32")
def rand_init_offset(g, seed, offset):
    return pcg(g, g.add(g.cast(seed, uint32), pcg(g, g.cast(offset, uint32))))


@expansion("randu", ("uint32",), "uint32", writes=(0,))
def randu(g, state):
    s = pcg(g, state)
    return s, s


@expansion("randu", ("uint32", "uint32", "uint32"), "uint32", writes=(0,))
def randu_range(g, state, lo, hi):
    """A uint32 in [lo, hi): the next state modulo (hi - lo), offset by lo."""
    s = pcg(g, state)
    return s, g.add(g.mod(s, g.sub(hi, lo)), lo)


@expansion("randi", ("uint32",), "int32", writes=(0,))
def randi(g, state):
    s = pcg(g, state)
    return s, g.cast(s, int32)


@expansion("randi", ("uint32", "int", "int"), "int32", writes=(0,))
def randi_range(g, state, lo, hi):
    """An int in [lo, hi): the next state modulo (hi - lo), offset by lo, computed in
    uint32 as C's conversions make Warp's ``state % (max - min) + min``."""
    s = pcg(g, state)
    lo, hi = g.cast(lo, int32), g.cast(hi, int32)
    span = g.cast(g.sub(hi, lo), uint32)
    return s, g.cast(g.add(g.mod(s, span), g.cast(lo, uint32)), int32)


@expansion("randf", ("uint32",), "float32", writes=(0,))
def randf(g, state):
    """A float in [0, 1): the top 24 bits of the next state."""
    s = pcg(g, state)
    f = g.cast(g.rshift(s, _u(g, 8)), float32)
    return s, g.mul(f, g.const(1.0 / 16777216.0, float32))


@expansion("randf", ("uint32", "float", "float"), "float32", writes=(0,))
def randf_range(g, state, lo, hi):
    s, f = randf(g, state)
    lo, hi = g.cast(lo, float32), g.cast(hi, float32)
    return s, g.add(g.mul(g.sub(hi, lo), f), lo)


@expansion("randn", ("uint32",), "float32", writes=(0,))
def randn(g, state):
    """A standard normal sample (Box-Muller, as Warp): sqrt(-2 log(u1 + eps)) cos(2 pi u2)
    with u1 then u2 the next two randf, eps = 5.96e-8 keeping the log finite. It has no
    derivative: its only input is the integer state."""
    s, u1 = randf(g, state)
    s, u2 = randf(g, s)
    eps = g.const(5.96e-8, float32)
    radius = g.sqrt(g.mul(g.const(-2.0, float32), g.log(g.add(u1, eps))))
    return s, g.mul(radius, g.cos(g.mul(g.const(2.0 * np.pi, float32), u2)))


@expansion("sample_unit_sphere_surface", ("uint32",), "vec3", writes=(0,))
def sample_unit_sphere_surface(g, state):
    one, two = g.const(1.0, float32), g.const(2.0, float32)
    s, u = randf(g, state)
    phi = g.acos(g.sub(one, g.mul(two, u)))
    s, theta = randf_range(g, s, g.zeros(float32), g.const(2.0 * np.pi, float32))
    x = g.mul(g.cos(theta), g.sin(phi))
    y = g.mul(g.sin(theta), g.sin(phi))
    return s, g.construct(x, y, g.cos(phi), target=Vector(3, float32))


PUBLIC = ["rand_init", "randu", "randi", "randf", "randn", "sample_unit_sphere_surface"]
