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

from .kernel import func, func_grad
from .lang import FUNCTIONS, adjoint
from .types import mat22, mat33, mat44, uint32, vec2, vec3, vec4

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


@func
def _lattice1(state: uint32, ix: int):
    h = uint32(ix) * uint32(_P1) + state
    return _randf(h, -1.0, 1.0)


# Successive draws from one hash h: _draw(h) is the next float without advancing h (its
# parameter is a copy), h = _randu(h) advances it. The same numbers as randf(h) called
# again and again, in a kernel and in Python alike (where a builtin cannot write back into
# its argument, as in Warp's Python scope): kl.noise(state, v) on Python values matches
# the kernel's.
@func
def _draw(h: uint32):
    return _randf(h) - 0.5


@func
def _lattice2(state: uint32, ix: int, iy: int):
    h = uint32(ix) * uint32(_P1) ^ uint32(iy) * uint32(_P2) + state
    x = _draw(h)
    y = _draw(_randu(h))
    return _normalize(vec2(x, y))


@func
def _lattice3(state: uint32, ix: int, iy: int, iz: int):
    h = (uint32(ix) * uint32(_P1) ^ uint32(iy) * uint32(_P2)
         ^ uint32(iz) * uint32(_P3) + state)
    x = _draw(h)
    h = _randu(h)
    y = _draw(h)
    z = _draw(_randu(h))
    return _normalize(vec3(x, y, z))


@func
def _lattice4(state: uint32, ix: int, iy: int, iz: int, it: int):
    h = (uint32(ix) * uint32(_P1) ^ uint32(iy) * uint32(_P2) ^ uint32(iz) * uint32(_P3)
         ^ uint32(it) * uint32(_P4) + state)
    x = _draw(h)
    h = _randu(h)
    y = _draw(h)
    h = _randu(h)
    z = _draw(h)
    t = _draw(_randu(h))
    return _normalize(vec4(x, y, z, t))


# ------------------------------------------------------------------ the interpolation trees
# _rowN interpolates along x between the corners x0 and x1 of one lattice row; each level
# above interpolates two of the level below along the next axis (y, z, then t). d holds the
# offsets from the lower corner (each in [0, 1)); toward the upper corner along an axis the
# offset is one less. Each returns (value, gradient, Hessian). In the loops of two, k = 0 is
# the lower half and k = 1 the upper: i0 + k * (i1 - i0) is its index and d - k * e its
# offset, both exact.


@func
def _tree1(state: uint32, x0: int, x1: int, dx: float):
    g0 = _lattice1(state, x0)
    g1 = _lattice1(state, x1)
    v0 = dx * g0
    v1 = (dx - 1.0) * g1
    return _mix(v0, v1, dx), _mix_grad(v0, v1, dx, g0, g1, 1.0), \
        (v1 - v0) * _fade_curvature(dx) + 2.0 * (g1 - g0) * _fade_slope(dx)


@func
def _row2(state: uint32, x0: int, x1: int, y: int, d: vec2):
    e = vec2(1.0, 0.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec2(0.0, 0.0)
    g1 = vec2(0.0, 0.0)
    for k in range(2):
        g = _lattice2(state, x0 + k * (x1 - x0), y)
        v = _dot(d - float(k) * e, g)
        if k == 0:
            v0 = v
            g0 = g
        else:
            v1 = v
            g1 = g
    h = mat22(0.0, 0.0, 0.0, 0.0)
    return _mix(v0, v1, d[0]), _mix_grad(v0, v1, d[0], g0, g1, e), \
        _mix_hess(v0, v1, d[0], g0, g1, h, h, e)


@func
def _tree2(state: uint32, x0: int, y0: int, x1: int, y1: int, d: vec2):
    e = vec2(0.0, 1.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec2(0.0, 0.0)
    g1 = vec2(0.0, 0.0)
    h0 = mat22(0.0, 0.0, 0.0, 0.0)
    h1 = mat22(0.0, 0.0, 0.0, 0.0)
    for k in range(2):
        v, g, h = _row2(state, x0, x1, y0 + k * (y1 - y0), d - float(k) * e)
        if k == 0:
            v0 = v
            g0 = g
            h0 = h
        else:
            v1 = v
            g1 = g
            h1 = h
    return _mix(v0, v1, d[1]), _mix_grad(v0, v1, d[1], g0, g1, e), \
        _mix_hess(v0, v1, d[1], g0, g1, h0, h1, e)


@func
def _row3(state: uint32, x0: int, x1: int, y: int, z: int, d: vec3):
    e = vec3(1.0, 0.0, 0.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec3(0.0, 0.0, 0.0)
    g1 = vec3(0.0, 0.0, 0.0)
    for k in range(2):
        g = _lattice3(state, x0 + k * (x1 - x0), y, z)
        v = _dot(d - float(k) * e, g)
        if k == 0:
            v0 = v
            g0 = g
        else:
            v1 = v
            g1 = g
    h = mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return _mix(v0, v1, d[0]), _mix_grad(v0, v1, d[0], g0, g1, e), \
        _mix_hess(v0, v1, d[0], g0, g1, h, h, e)


@func
def _plane3(state: uint32, x0: int, x1: int, y0: int, y1: int, z: int, d: vec3):
    e = vec3(0.0, 1.0, 0.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec3(0.0, 0.0, 0.0)
    g1 = vec3(0.0, 0.0, 0.0)
    h0 = mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    h1 = h0
    for k in range(2):
        v, g, h = _row3(state, x0, x1, y0 + k * (y1 - y0), z, d - float(k) * e)
        if k == 0:
            v0 = v
            g0 = g
            h0 = h
        else:
            v1 = v
            g1 = g
            h1 = h
    return _mix(v0, v1, d[1]), _mix_grad(v0, v1, d[1], g0, g1, e), \
        _mix_hess(v0, v1, d[1], g0, g1, h0, h1, e)


@func
def _tree3(state: uint32, x0: int, y0: int, z0: int, x1: int, y1: int, z1: int, d: vec3):
    e = vec3(0.0, 0.0, 1.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec3(0.0, 0.0, 0.0)
    g1 = vec3(0.0, 0.0, 0.0)
    h0 = mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    h1 = h0
    for k in range(2):
        v, g, h = _plane3(state, x0, x1, y0, y1, z0 + k * (z1 - z0), d - float(k) * e)
        if k == 0:
            v0 = v
            g0 = g
            h0 = h
        else:
            v1 = v
            g1 = g
            h1 = h
    return _mix(v0, v1, d[2]), _mix_grad(v0, v1, d[2], g0, g1, e), \
        _mix_hess(v0, v1, d[2], g0, g1, h0, h1, e)


@func
def _row4(state: uint32, x0: int, x1: int, y: int, z: int, t: int, d: vec4):
    e = vec4(1.0, 0.0, 0.0, 0.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec4(0.0, 0.0, 0.0, 0.0)
    g1 = vec4(0.0, 0.0, 0.0, 0.0)
    for k in range(2):
        g = _lattice4(state, x0 + k * (x1 - x0), y, z, t)
        v = _dot(d - float(k) * e, g)
        if k == 0:
            v0 = v
            g0 = g
        else:
            v1 = v
            g1 = g
    h = _outer(vec4(0.0, 0.0, 0.0, 0.0), e)
    return _mix(v0, v1, d[0]), _mix_grad(v0, v1, d[0], g0, g1, e), \
        _mix_hess(v0, v1, d[0], g0, g1, h, h, e)


@func
def _plane4(state: uint32, x0: int, x1: int, y0: int, y1: int, z: int, t: int, d: vec4):
    e = vec4(0.0, 1.0, 0.0, 0.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec4(0.0, 0.0, 0.0, 0.0)
    g1 = vec4(0.0, 0.0, 0.0, 0.0)
    h0 = _outer(g0, e)
    h1 = h0
    for k in range(2):
        v, g, h = _row4(state, x0, x1, y0 + k * (y1 - y0), z, t, d - float(k) * e)
        if k == 0:
            v0 = v
            g0 = g
            h0 = h
        else:
            v1 = v
            g1 = g
            h1 = h
    return _mix(v0, v1, d[1]), _mix_grad(v0, v1, d[1], g0, g1, e), \
        _mix_hess(v0, v1, d[1], g0, g1, h0, h1, e)


@func
def _cube4(state: uint32, x0: int, x1: int, y0: int, y1: int, z0: int, z1: int, t: int,
           d: vec4):
    e = vec4(0.0, 0.0, 1.0, 0.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec4(0.0, 0.0, 0.0, 0.0)
    g1 = vec4(0.0, 0.0, 0.0, 0.0)
    h0 = _outer(g0, e)
    h1 = h0
    for k in range(2):
        v, g, h = _plane4(state, x0, x1, y0, y1, z0 + k * (z1 - z0), t, d - float(k) * e)
        if k == 0:
            v0 = v
            g0 = g
            h0 = h
        else:
            v1 = v
            g1 = g
            h1 = h
    return _mix(v0, v1, d[2]), _mix_grad(v0, v1, d[2], g0, g1, e), \
        _mix_hess(v0, v1, d[2], g0, g1, h0, h1, e)


@func
def _tree4(state: uint32, x0: int, y0: int, z0: int, t0: int, x1: int, y1: int, z1: int,
           t1: int, d: vec4):
    e = vec4(0.0, 0.0, 0.0, 1.0)
    v0 = float(0.0)
    v1 = float(0.0)
    g0 = vec4(0.0, 0.0, 0.0, 0.0)
    g1 = vec4(0.0, 0.0, 0.0, 0.0)
    h0 = _outer(g0, e)
    h1 = h0
    for k in range(2):
        v, g, h = _cube4(state, x0, x1, y0, y1, z0, z1, t0 + k * (t1 - t0), d - float(k) * e)
        if k == 0:
            v0 = v
            g0 = g
            h0 = h
        else:
            v1 = v
            g1 = g
            h1 = h
    return _mix(v0, v1, d[3]), _mix_grad(v0, v1, d[3], g0, g1, e), \
        _mix_hess(v0, v1, d[3], g0, g1, h0, h1, e)


# ------------------------------------------------------------------ cells


@func
def _frac2(p: vec2):
    return vec2(p[0] - _floor(p[0]), p[1] - _floor(p[1]))


@func
def _frac3(p: vec3):
    return vec3(p[0] - _floor(p[0]), p[1] - _floor(p[1]), p[2] - _floor(p[2]))


@func
def _frac4(p: vec4):
    return vec4(p[0] - _floor(p[0]), p[1] - _floor(p[1]), p[2] - _floor(p[2]),
                p[3] - _floor(p[3]))


# The tree at a point: (value, gradient, Hessian) of the field, with the lattice wrapped by
# the periods (C's remainder, as Warp's: periods must be positive and, as in Warp,
# coordinates non-negative) or not (a period of 0).


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
    x0 = int(_floor(xy[0]))
    y0 = int(_floor(xy[1]))
    x1 = x0 + 1
    y1 = y0 + 1
    if px != 0:
        x0 = x0 % px
        x1 = (x0 + 1) % px
        y0 = y0 % py
        y1 = (y0 + 1) % py
    return _tree2(state, x0, y0, x1, y1, _frac2(xy))


@func
def _cell(state: uint32, xyz: vec3, px: int, py: int, pz: int):  # noqa: F811
    x0 = int(_floor(xyz[0]))
    y0 = int(_floor(xyz[1]))
    z0 = int(_floor(xyz[2]))
    x1 = x0 + 1
    y1 = y0 + 1
    z1 = z0 + 1
    if px != 0:
        x0 = x0 % px
        x1 = (x0 + 1) % px
        y0 = y0 % py
        y1 = (y0 + 1) % py
        z0 = z0 % pz
        z1 = (z0 + 1) % pz
    return _tree3(state, x0, y0, z0, x1, y1, z1, _frac3(xyz))


@func
def _cell(state: uint32, xyzt: vec4, px: int, py: int, pz: int, pt: int):  # noqa: F811
    x0 = int(_floor(xyzt[0]))
    y0 = int(_floor(xyzt[1]))
    z0 = int(_floor(xyzt[2]))
    t0 = int(_floor(xyzt[3]))
    x1 = x0 + 1
    y1 = y0 + 1
    z1 = z0 + 1
    t1 = t0 + 1
    if px != 0:
        x0 = x0 % px
        x1 = (x0 + 1) % px
        y0 = y0 % py
        y1 = (y0 + 1) % py
        z0 = z0 % pz
        z1 = (z0 + 1) % pz
        t0 = t0 % pt
        t1 = (t0 + 1) % pt
    return _tree4(state, x0, y0, z0, t0, x1, y1, z1, t1, _frac4(xyzt))


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
