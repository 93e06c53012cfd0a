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


def _two_pi(g, s):
    """randf(state, 0, 2 pi): an angle."""
    return randf_range(g, s, g.zeros(float32), g.const(2.0 * np.pi, float32))


def _vec(g, *xs):
    return g.construct(*xs, target=Vector(len(xs), float32))


def _centred(g, state, n):
    """n draws, each shifted to [-0.5, 0.5)."""
    half, out, s = g.const(0.5, float32), [], state
    for _ in range(n):
        s, u = randf(g, s)
        out.append(g.sub(u, half))
    return s, _vec(g, *out)


@expansion("sample_unit_square", ("uint32",), "vec2", writes=(0,))
def sample_unit_square(g, state):
    """A point uniform in the square [-0.5, 0.5)^2 (Warp's centred unit square)."""
    return _centred(g, state, 2)


@expansion("sample_unit_cube", ("uint32",), "vec3", writes=(0,))
def sample_unit_cube(g, state):
    return _centred(g, state, 3)


@expansion("sample_unit_ring", ("uint32",), "vec2", writes=(0,))
def sample_unit_ring(g, state):
    """A point uniform on the unit circle: (cos t, sin t) for one angle draw."""
    s, theta = _two_pi(g, state)
    return s, _vec(g, g.cos(theta), g.sin(theta))


@expansion("sample_unit_disk", ("uint32",), "vec2", writes=(0,))
def sample_unit_disk(g, state):
    """A point uniform in the unit disk: radius sqrt(u), then an angle."""
    s, u = randf(g, state)
    r = g.sqrt(u)
    s, theta = _two_pi(g, s)
    return s, _vec(g, g.mul(r, g.cos(theta)), g.mul(r, g.sin(theta)))


def _polar(g, state, cos_phi_of, solid):
    """(r sin phi cos t, r sin phi sin t, r cos phi): phi = acos(cos_phi_of(u)) from the
    first draw, the angle t from the second and, for a solid, r = cbrt(third)."""
    s, u = randf(g, state)
    phi = g.acos(cos_phi_of(u))
    s, theta = _two_pi(g, s)
    parts = [g.cos(theta), g.sin(theta), g.cos(phi)]
    if solid:  # r * cos(t) * sin(phi), multiplied left to right as Warp does
        s, w = randf(g, s)
        r = g.pow(w, g.const(1.0 / 3.0, float32))
        parts = [g.mul(r, p) for p in parts]
    sp = g.sin(phi)
    return s, _vec(g, g.mul(parts[0], sp), g.mul(parts[1], sp), parts[2])


def _sphere(g):
    one, two = g.const(1.0, float32), g.const(2.0, float32)
    return lambda u: g.sub(one, g.mul(two, u))


def _hemisphere(g):
    return lambda u: g.sub(g.const(1.0, float32), u)


@expansion("sample_unit_sphere", ("uint32",), "vec3", writes=(0,))
def sample_unit_sphere(g, state):
    """A point uniform in the unit ball."""
    return _polar(g, state, _sphere(g), True)


@expansion("sample_unit_hemisphere_surface", ("uint32",), "vec3", writes=(0,))
def sample_unit_hemisphere_surface(g, state):
    """A point uniform on the unit hemisphere z >= 0."""
    return _polar(g, state, _hemisphere(g), False)


@expansion("sample_unit_hemisphere", ("uint32",), "vec3", writes=(0,))
def sample_unit_hemisphere(g, state):
    """A point uniform in the unit half ball z >= 0."""
    return _polar(g, state, _hemisphere(g), True)


@expansion("sample_triangle", ("uint32",), "vec2", writes=(0,))
def sample_triangle(g, state):
    """Barycentric (u, v) uniform over a triangle: r = sqrt(draw), u = 1 - r,
    v = r * draw."""
    s, a = randf(g, state)
    r = g.sqrt(a)
    s, b = randf(g, s)
    return s, _vec(g, g.sub(g.const(1.0, float32), r), g.mul(b, r))


PUBLIC = ["rand_init", "randu", "randi", "randf", "randn", "sample_unit_sphere_surface",
          "sample_unit_square", "sample_unit_cube", "sample_unit_ring", "sample_unit_disk",
          "sample_unit_sphere", "sample_unit_hemisphere_surface", "sample_unit_hemisphere",
          "sample_triangle"]
