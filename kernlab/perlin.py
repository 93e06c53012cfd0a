"""Warp's Perlin noise, written in the kernel language: ``noise`` (1 to 4 dimensions),
``pnoise`` (periodic, integer periods per axis) and ``curlnoise`` (a divergence-free field
from the gradients of Perlin noise, summed over octaves).

The field: every integer lattice point gets a pseudo-random unit gradient, hashed from its
coordinates and ``state`` (a value from ``rand_init``; it selects the field and is never
advanced). A point's noise is the smootherstep-weighted interpolation, one axis at a time
(x, then y, z, t), of the corners' ``dot(offset from corner, corner gradient)``, so it is 0
on the lattice. The hash, the order of every interpolation and the fade curve are Warp
1.19's, so the values agree with Warp's CPU results to float32 rounding (bit for bit in the
tests).

One interpolation tree per dimension carries each node's value, gradient and Hessian (what
noise, curlnoise and curlnoise's derivative need; the compilers drop what a caller does not
use). Each level visits its two halves in a loop of two, so a kernel holds one copy of the
code below a level rather than 2^dimensions of them. The derivatives are custom gradients
(as Warp's are): noise's is the tree's gradient, curlnoise's the tree's Hessian, so reverse
and forward mode never differentiate through the loops of the tree, and an adjoint kernel
stays as small, and as quick to compile, as the forward one.
"""
from typing import Any

import numpy as np

from .kernel import func, func_grad
from .lang import FUNCTIONS, adjoint
from .types import NAMED, uint32, vec2, vec3, vec4

vec2i, vec3i, vec4i = (NAMED[n] for n in ("vec2i", "vec3i", "vec4i"))
_dot, _floor, _normalize, _outer, _rand_init, _randf, _randu = (FUNCTIONS[n] for n in (
    "dot", "floor", "normalize", "outer", "rand_init", "randf", "randu"))

# The lattice hash: corner (i, j, k, l) -> i*P1 ^ j*P2 ^ k*P3 ^ l*P4 + state (uint32, wrapping;
# ``+`` binds tighter than ``^``, as in the C it comes from).
_P1 = 73856093
_P2 = 19349663
_P3 = 53471161
_P4 = 10000019
# curlnoise's three potentials: the next two fields come from rand_init(state, offset).
_CURL_OFFSET_2 = 10019689
_CURL_OFFSET_3 = 13112221


# ------------------------------------------------------------------ the fade curve


@func
def _fade(t: float):
    """Perlin's smootherstep 6t^5 - 15t^4 + 10t^3: 0 and 1 at the ends, with zero first and
    second derivatives there."""
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


@func
def _fade_slope(t: float):
    """The derivative of _fade: 30 t^2 (t - 1)^2."""
    return 30.0 * t * t * (t * (t - 2.0) + 1.0)


@func
def _fade_curvature(t: float):
    """The second derivative of _fade: 60 t (t - 1) (2t - 1)."""
    return 60.0 * t * (t * (t * 2.0 - 3.0) + 1.0)


@func
def _mix(a0: float, a1: float, t: float):
    """Interpolation from a0 (t = 0) to a1 (t = 1) along the fade curve."""
    return (a1 - a0) * _fade(t) + a0


@func
def _mix_grad(a0: float, a1: float, t: float, g0: Any, g1: Any, axis: Any):
    """The gradient of _mix(a0, a1, t) when a0, a1 have gradients g0, g1 and t is the
    coordinate along the unit vector ``axis``."""
    return (g1 - g0) * _fade(t) + (a1 - a0) * _fade_slope(t) * axis + g0


@func
def _mix_hess(a0: float, a1: float, t: float, g0: Any, g1: Any, h0: Any, h1: Any, axis: Any):
    """The Hessian of _mix(a0, a1, t), as _mix_grad, when a0, a1 have Hessians h0, h1."""
    dg = g1 - g0
    return (h0 + (h1 - h0) * _fade(t) + (_outer(dg, axis) + _outer(axis, dg)) * _fade_slope(t)
            + _outer(axis, axis) * ((a1 - a0) * _fade_curvature(t)))


# ------------------------------------------------------------------ lattice gradients
# The gradient at lattice corner c (an int in 1-d, an integer vector above), from the hash.
# Successive draws from one hash h: _draw(h) is the next float without advancing h (its
# parameter is a copy), h = _randu(h) advances it. The same numbers as randf(h) called
# again and again, in a kernel and in Python alike (where a builtin cannot write back into
# its argument, as in Warp's Python scope): kl.noise(state, v) on Python values matches
# the kernel's.


@func
def _draw(h: uint32):
    return _randf(h) - 0.5


@func
def _lattice(state: uint32, c: int):
    h = uint32(c) * uint32(_P1) + state
    return _randf(h, -1.0, 1.0)


@func
def _lattice(state: uint32, c: vec2i):  # noqa: F811 (overloads by dimension)
    h = uint32(c[0]) * uint32(_P1) ^ uint32(c[1]) * uint32(_P2) + state
    x = _draw(h)
    y = _draw(_randu(h))
    return _normalize(vec2(x, y))


@func
def _lattice(state: uint32, c: vec3i):  # noqa: F811
    h = (uint32(c[0]) * uint32(_P1) ^ uint32(c[1]) * uint32(_P2)
         ^ uint32(c[2]) * uint32(_P3) + state)
    x = _draw(h)
    h = _randu(h)
    y = _draw(h)
    z = _draw(_randu(h))
    return _normalize(vec3(x, y, z))


@func
def _lattice(state: uint32, c: vec4i):  # noqa: F811
    h = (uint32(c[0]) * uint32(_P1) ^ uint32(c[1]) * uint32(_P2) ^ uint32(c[2]) * uint32(_P3)
         ^ uint32(c[3]) * uint32(_P4) + state)
    x = _draw(h)
    h = _randu(h)
    y = _draw(h)
    h = _randu(h)
    z = _draw(h)
    t = _draw(_randu(h))
    return _normalize(vec4(x, y, z, t))


# ------------------------------------------------------------------ the interpolation trees
# A d-dimensional tree has d levels: the lowest interpolates along x between two lattice
# corners of one row, each level above interpolates two results of the level below along
# the next axis (y, z, then t). lo and hi are the cell's lower and upper corners (integer
# vectors), d the offsets from the lower corner (each in [0, 1)); toward the upper corner
# along an axis the offset is one less. In a level's loop of two, k = 0 is the lower half
# and k = 1 the upper: the corner it passes down has its axis's index set to
# lo + k * (hi - lo), the offset is d - k * e; both exact. A level returns (value, gradient,
# Hessian). The levels of every dimension are one func, _level's, specialised by a closure
# (the axis, the level below, the axis's unit vector e, a zero Hessian).


@func
def _tree1(state: uint32, x0: int, x1: int, dx: float):
    g0 = _lattice(state, x0)
    g1 = _lattice(state, x1)
    v0 = dx * g0
    v1 = (dx - 1.0) * g1
    return _mix(v0, v1, dx), _mix_grad(v0, v1, dx, g0, g1, 1.0), \
        (v1 - v0) * _fade_curvature(dx) + 2.0 * (g1 - g0) * _fade_slope(dx)


def _corner(zero_h):
    """Below the lowest level: corner c's dot(offset, gradient), its gradient, no
    curvature."""
    @func
    def corner(state: uint32, c: Any, hi: Any, d: Any):
        g = _lattice(state, c)
        return _dot(d, g), g, zero_h
    return corner


def _level(axis: int, below, e, zero_h):
    """The level that interpolates two results of ``below`` along ``axis``."""
    @func
    def level(state: uint32, lo: Any, hi: Any, d: Any):
        v0 = float(0.0)
        v1 = float(0.0)
        g0 = e * 0.0
        g1 = g0
        h0 = zero_h
        h1 = zero_h
        for k in range(2):
            c = lo * 1  # a copy: lo stays the cell's lower corner (in Python too)
            c[axis] = lo[axis] + k * (hi[axis] - lo[axis])
            v, g, h = below(state, c, hi, d - float(k) * e)
            if k == 0:
                v0 = v
                g0 = g
                h0 = h
            else:
                v1 = v
                g1 = g
                h1 = h
        return _mix(v0, v1, d[axis]), _mix_grad(v0, v1, d[axis], g0, g1, e), \
            _mix_hess(v0, v1, d[axis], g0, g1, h0, h1, e)
    return level


def _tree(dims: int):
    """The tree of a dims-dimensional cell: (state, lo, hi, d) -> (value, gradient,
    Hessian)."""
    unit = np.eye(dims, dtype=np.float32)
    zero_h = np.zeros((dims, dims), np.float32)
    tree = _corner(zero_h)
    for axis in range(dims):
        tree = _level(axis, tree, unit[axis], zero_h)
    return tree


_tree2, _tree3, _tree4 = (_tree(dims) for dims in (2, 3, 4))


# ------------------------------------------------------------------ cells
# The tree at a point: (value, gradient, Hessian) of the field, with the lattice wrapped by
# the periods (C's remainder, as Warp's: periods must be positive and, as in Warp,
# coordinates non-negative) or not (periods of 0).


@func
def _corners(p: Any, period: Any):
    """The lower and upper lattice corners of p's cell (integer vectors, wrapped when the
    periods are not 0) and p's offsets from the lower one."""
    lo = period * 0  # new values (called from Python, ``lo = period`` would alias it)
    hi = period * 0
    d = p * 0.0
    for i in range(len(p)):
        lo[i] = int(_floor(p[i]))
        hi[i] = lo[i] + 1
        if period[0] != 0:
            lo[i] = lo[i] % period[i]
            hi[i] = (lo[i] + 1) % period[i]
        d[i] = p[i] - _floor(p[i])
    return lo, hi, d


@func
def _cell(state: uint32, x: float, px: int):
    x0 = int(_floor(x))
    x1 = x0 + 1
    if px != 0:
        x0 = x0 % px
        x1 = (x0 + 1) % px
    return _tree1(state, x0, x1, x - _floor(x))


@func
def _cell(state: uint32, xy: vec2, px: int, py: int):  # noqa: F811 (overloads by dimension)
    lo, hi, d = _corners(xy, vec2i(px, py))
    return _tree2(state, lo, hi, d)


@func
def _cell(state: uint32, xyz: vec3, px: int, py: int, pz: int):  # noqa: F811
    lo, hi, d = _corners(xyz, vec3i(px, py, pz))
    return _tree3(state, lo, hi, d)


@func
def _cell(state: uint32, xyzt: vec4, px: int, py: int, pz: int, pt: int):  # noqa: F811
    lo, hi, d = _corners(xyzt, vec4i(px, py, pz, pt))
    return _tree4(state, lo, hi, d)


# ------------------------------------------------------------------ noise


@func
def noise(state: uint32, x: float):
    """Perlin noise at x (1 to 4 dimensions: a float, vec2, vec3 or vec4), in the field that
    ``state`` (from rand_init) selects; 0 at integer points, smooth (C2) between them, of
    size about 0.5 sqrt(dimensions) at most. Differentiable with respect to x."""
    v, g, h = _cell(state, x, 0)
    return v


@func
def noise(state: uint32, xy: vec2):  # noqa: F811 (overloads by dimension)
    v, g, h = _cell(state, xy, 0, 0)
    return v


@func
def noise(state: uint32, xyz: vec3):  # noqa: F811
    v, g, h = _cell(state, xyz, 0, 0, 0)
    return v


@func
def noise(state: uint32, xyzt: vec4):  # noqa: F811
    v, g, h = _cell(state, xyzt, 0, 0, 0, 0)
    return v


@func_grad(noise)
def _noise_grad(state: uint32, x: float, adj_ret: float):
    v, g, h = _cell(state, x, 0)
    adjoint[x] += g * adj_ret


@func_grad(noise)
def _noise_grad(state: uint32, xy: vec2, adj_ret: float):  # noqa: F811
    v, g, h = _cell(state, xy, 0, 0)
    adjoint[xy] += g * adj_ret


@func_grad(noise)
def _noise_grad(state: uint32, xyz: vec3, adj_ret: float):  # noqa: F811
    v, g, h = _cell(state, xyz, 0, 0, 0)
    adjoint[xyz] += g * adj_ret


@func_grad(noise)
def _noise_grad(state: uint32, xyzt: vec4, adj_ret: float):  # noqa: F811
    v, g, h = _cell(state, xyzt, 0, 0, 0, 0)
    adjoint[xyzt] += g * adj_ret


# ------------------------------------------------------------------ periodic noise


@func
def pnoise(state: uint32, x: float, px: int):
    """Perlin noise at x that repeats every px units along x (and py, pz, pt along the
    other axes for a vec2, vec3 or vec4 x): the lattice wraps. Periods must be positive and
    coordinates non-negative, as in Warp. Differentiable with respect to x."""
    v, g, h = _cell(state, x, px)
    return v


@func
def pnoise(state: uint32, xy: vec2, px: int, py: int):  # noqa: F811
    v, g, h = _cell(state, xy, px, py)
    return v


@func
def pnoise(state: uint32, xyz: vec3, px: int, py: int, pz: int):  # noqa: F811
    v, g, h = _cell(state, xyz, px, py, pz)
    return v


@func
def pnoise(state: uint32, xyzt: vec4, px: int, py: int, pz: int, pt: int):  # noqa: F811
    v, g, h = _cell(state, xyzt, px, py, pz, pt)
    return v


@func_grad(pnoise)
def _pnoise_grad(state: uint32, x: float, px: int, adj_ret: float):
    v, g, h = _cell(state, x, px)
    adjoint[x] += g * adj_ret


@func_grad(pnoise)
def _pnoise_grad(state: uint32, xy: vec2, px: int, py: int, adj_ret: float):  # noqa: F811
    v, g, h = _cell(state, xy, px, py)
    adjoint[xy] += g * adj_ret


@func_grad(pnoise)
def _pnoise_grad(state: uint32, xyz: vec3, px: int, py: int, pz: int,  # noqa: F811
                 adj_ret: float):
    v, g, h = _cell(state, xyz, px, py, pz)
    adjoint[xyz] += g * adj_ret


@func_grad(pnoise)
def _pnoise_grad(state: uint32, xyzt: vec4, px: int, py: int, pz: int, pt: int,  # noqa: F811
                 adj_ret: float):
    v, g, h = _cell(state, xyzt, px, py, pz, pt)
    adjoint[xyzt] += g * adj_ret


# ------------------------------------------------------------------ curl noise
# Octave i samples the field at lacunarity^i x with weight gain^i (float32 products, as
# Warp's). In 3-d and 4-d the three potentials are the fields of state, then of
# rand_init(state, 10019689), then of rand_init(that, 13112221); the next octave goes on
# from the last state. The derivative: the curl of the potentials' Hessians (times the
# octave's frequency, by the chain rule through lacunarity^i x).


@func
def curlnoise(state: uint32, xy: vec2, octaves: uint32 = uint32(1), lacunarity: float = 2.0,
              gain: float = 0.5):
    """A divergence-free field from Perlin noise: for a vec2 xy, the gradient of the noise
    turned by 90 degrees; for a vec3 (or a vec4, whose fourth axis is time) the curl of
    three noise fields, a vec3. Octave i samples at lacunarity^i xy with weight gain^i. Not
    normalised. Differentiable with respect to xy."""
    curl = vec2(0.0, 0.0)
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        v, g, h = _cell(state, freq * xy, 0, 0)
        curl = curl + amplitude * g
        amplitude = amplitude * gain
        freq = freq * lacunarity
    return vec2(-curl[1], curl[0])


@func_grad(curlnoise)
def _curlnoise_grad(state: uint32, xy: vec2, octaves: uint32, lacunarity: float, gain: float,
                    adj_ret: vec2):
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        v, g, h = _cell(state, freq * xy, 0, 0)
        # d(-g[1], g[0])/dxy = freq * (-row 1, row 0) of the Hessian
        adjoint[xy] += (amplitude * freq) * (adj_ret[1] * vec2(h[0, 0], h[0, 1])
                                             - adj_ret[0] * vec2(h[1, 0], h[1, 1]))
        amplitude = amplitude * gain
        freq = freq * lacunarity


@func
def _potential(s: uint32, p: vec3):
    v, g, h = _cell(s, p, 0, 0, 0)
    return g, h


@func
def _potential(s: uint32, p: vec4):  # noqa: F811
    v, g, h = _cell(s, p, 0, 0, 0, 0)
    return g, h


@func
def _next_potential(s: uint32, k: int):
    """The state of an octave's potential k + 1 from that of potential k (k = 0, 1)."""
    nxt = s
    if k == 0:
        nxt = _rand_init(int(s), _CURL_OFFSET_2)
    elif k == 1:
        nxt = _rand_init(int(s), _CURL_OFFSET_3)
    return nxt


@func
def _curl3(state: uint32, x: Any, octaves: uint32, lacunarity: float, gain: float):
    s = state
    g1 = x * 0.0
    g2 = g1
    g3 = g1
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        p = freq * x
        for k in range(3):
            g, h = _potential(s, p)
            if k == 0:
                g1 = g1 + amplitude * g
            elif k == 1:
                g2 = g2 + amplitude * g
            else:
                g3 = g3 + amplitude * g
            s = _next_potential(s, k)
        amplitude = amplitude * gain
        freq = freq * lacunarity
    return vec3(g3[1] - g2[2], g1[2] - g3[0], g2[0] - g1[1])


@func
def _curl3_vjp(state: uint32, x: Any, octaves: uint32, lacunarity: float, gain: float,
               adj_ret: vec3):
    """adj_ret times the Jacobian of _curl3 with respect to x."""
    s = state
    out = x * 0.0
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        p = freq * x
        h1 = _outer(out, out)
        h2 = h1
        h3 = h1
        for k in range(3):
            g, h = _potential(s, p)
            if k == 0:
                h1 = h
            elif k == 1:
                h2 = h
            else:
                h3 = h
            s = _next_potential(s, k)
        out = out + (amplitude * freq) * (adj_ret[0] * (h3[1] - h2[2])
                                          + adj_ret[1] * (h1[2] - h3[0])
                                          + adj_ret[2] * (h2[0] - h1[1]))
        amplitude = amplitude * gain
        freq = freq * lacunarity
    return out


@func
def curlnoise(state: uint32, xyz: vec3, octaves: uint32 = uint32(1),  # noqa: F811
              lacunarity: float = 2.0, gain: float = 0.5):
    return _curl3(state, xyz, octaves, lacunarity, gain)


@func
def curlnoise(state: uint32, xyzt: vec4, octaves: uint32 = uint32(1),  # noqa: F811
              lacunarity: float = 2.0, gain: float = 0.5):
    return _curl3(state, xyzt, octaves, lacunarity, gain)


@func_grad(curlnoise)
def _curlnoise_grad(state: uint32, xyz: vec3, octaves: uint32, lacunarity: float,  # noqa: F811
                    gain: float, adj_ret: vec3):
    adjoint[xyz] += _curl3_vjp(state, xyz, octaves, lacunarity, gain, adj_ret)


@func_grad(curlnoise)
def _curlnoise_grad(state: uint32, xyzt: vec4, octaves: uint32, lacunarity: float,  # noqa: F811
                    gain: float, adj_ret: vec3):
    adjoint[xyzt] += _curl3_vjp(state, xyzt, octaves, lacunarity, gain, adj_ret)
