"""Warp's Perlin noise, written in the kernel language: ``noise`` (1 to 4 dimensions),
``pnoise`` (periodic, integer periods per axis) and ``curlnoise`` (a divergence-free field
from the gradients of Perlin noise, summed over octaves).

The field: every integer lattice point gets a pseudo-random unit gradient, hashed from its
coordinates and ``state`` (a value from ``rand_init``; it selects the field and is never
advanced). A point's noise is the smootherstep-weighted interpolation, one axis at a time
(x, then y, z, t), of the corners' ``dot(offset from corner, corner gradient)``, so it is 0
on the lattice. The hash, the order of every interpolation and the fade curve are Warp
1.19's, so the values agree with Warp's CPU results to float32 rounding.

Each function is a @kl.func: every backend compiles it, and reverse and forward mode
differentiate it through its body (``floor`` contributes nothing, so the derivative is the
analytic gradient of the field). ``curlnoise`` evaluates the analytic gradient of the noise
in its forward pass, as Warp does; differentiating it goes through that gradient code, which
gives the Hessian terms Warp's hand-written adjoint computes.
"""
from typing import Any

from .kernel import func
from .lang import FUNCTIONS
from .types import uint32, vec2, vec3, vec4

_dot, _floor, _normalize, _rand_init, _randf = (FUNCTIONS[n] for n in (
    "dot", "floor", "normalize", "rand_init", "randf"))

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
def _mix(a0: float, a1: float, t: float):
    """Interpolation from a0 (t = 0) to a1 (t = 1) along the fade curve."""
    return (a1 - a0) * _fade(t) + a0


@func
def _mix_grad(a0: float, a1: float, t: float, g0: Any, g1: Any, axis: Any):
    """The gradient of _mix(a0, a1, t) when a0, a1 have gradients g0, g1 and t is the
    coordinate along the unit vector ``axis``."""
    return (g1 - g0) * _fade(t) + (a1 - a0) * _fade_slope(t) * axis + g0


# ------------------------------------------------------------------ lattice gradients


@func
def _lattice1(state: uint32, ix: int):
    h = uint32(ix) * uint32(_P1) + state
    return _randf(h, -1.0, 1.0)


@func
def _lattice2(state: uint32, ix: int, iy: int):
    h = uint32(ix) * uint32(_P1) ^ uint32(iy) * uint32(_P2) + state
    x = _randf(h) - 0.5
    y = _randf(h) - 0.5
    return _normalize(vec2(x, y))


@func
def _lattice3(state: uint32, ix: int, iy: int, iz: int):
    h = (uint32(ix) * uint32(_P1) ^ uint32(iy) * uint32(_P2)
         ^ uint32(iz) * uint32(_P3) + state)
    x = _randf(h) - 0.5
    y = _randf(h) - 0.5
    z = _randf(h) - 0.5
    return _normalize(vec3(x, y, z))


@func
def _lattice4(state: uint32, ix: int, iy: int, iz: int, it: int):
    h = (uint32(ix) * uint32(_P1) ^ uint32(iy) * uint32(_P2) ^ uint32(iz) * uint32(_P3)
         ^ uint32(it) * uint32(_P4) + state)
    x = _randf(h) - 0.5
    y = _randf(h) - 0.5
    z = _randf(h) - 0.5
    t = _randf(h) - 0.5
    return _normalize(vec4(x, y, z, t))


# ------------------------------------------------------------------ the noise value
# _rowN interpolates along x between the corners x0 and x1 of one lattice row; each level
# above interpolates two of the level below along the next axis (y, z, then t). d holds the
# offsets from the lower corner (each in [0, 1)); toward an upper corner the offset along
# that axis is one less.


@func
def _value1(state: uint32, x0: int, x1: int, dx: float):
    v0 = dx * _lattice1(state, x0)
    v1 = (dx - 1.0) * _lattice1(state, x1)
    return _mix(v0, v1, dx)


@func
def _row2(state: uint32, x0: int, x1: int, y: int, d: vec2):
    v0 = _dot(d, _lattice2(state, x0, y))
    v1 = _dot(d - vec2(1.0, 0.0), _lattice2(state, x1, y))
    return _mix(v0, v1, d[0])


@func
def _value2(state: uint32, x0: int, y0: int, x1: int, y1: int, d: vec2):
    return _mix(_row2(state, x0, x1, y0, d), _row2(state, x0, x1, y1, d - vec2(0.0, 1.0)),
                d[1])


@func
def _row3(state: uint32, x0: int, x1: int, y: int, z: int, d: vec3):
    v0 = _dot(d, _lattice3(state, x0, y, z))
    v1 = _dot(d - vec3(1.0, 0.0, 0.0), _lattice3(state, x1, y, z))
    return _mix(v0, v1, d[0])


@func
def _plane3(state: uint32, x0: int, x1: int, y0: int, y1: int, z: int, d: vec3):
    return _mix(_row3(state, x0, x1, y0, z, d),
                _row3(state, x0, x1, y1, z, d - vec3(0.0, 1.0, 0.0)), d[1])


@func
def _value3(state: uint32, x0: int, y0: int, z0: int, x1: int, y1: int, z1: int, d: vec3):
    return _mix(_plane3(state, x0, x1, y0, y1, z0, d),
                _plane3(state, x0, x1, y0, y1, z1, d - vec3(0.0, 0.0, 1.0)), d[2])


@func
def _row4(state: uint32, x0: int, x1: int, y: int, z: int, t: int, d: vec4):
    v0 = _dot(d, _lattice4(state, x0, y, z, t))
    v1 = _dot(d - vec4(1.0, 0.0, 0.0, 0.0), _lattice4(state, x1, y, z, t))
    return _mix(v0, v1, d[0])


@func
def _plane4(state: uint32, x0: int, x1: int, y0: int, y1: int, z: int, t: int, d: vec4):
    return _mix(_row4(state, x0, x1, y0, z, t, d),
                _row4(state, x0, x1, y1, z, t, d - vec4(0.0, 1.0, 0.0, 0.0)), d[1])


@func
def _cube4(state: uint32, x0: int, x1: int, y0: int, y1: int, z0: int, z1: int, t: int,
           d: vec4):
    return _mix(_plane4(state, x0, x1, y0, y1, z0, t, d),
                _plane4(state, x0, x1, y0, y1, z1, t, d - vec4(0.0, 0.0, 1.0, 0.0)), d[2])


@func
def _value4(state: uint32, x0: int, y0: int, z0: int, t0: int, x1: int, y1: int, z1: int,
            t1: int, d: vec4):
    return _mix(_cube4(state, x0, x1, y0, y1, z0, z1, t0, d),
                _cube4(state, x0, x1, y0, y1, z0, z1, t1, d - vec4(0.0, 0.0, 0.0, 1.0)), d[3])


# ------------------------------------------------------------------ the noise gradient
# The same tree, carrying each node's value and its gradient (what curlnoise needs).


@func
def _row2g(state: uint32, x0: int, x1: int, y: int, d: vec2):
    e = vec2(1.0, 0.0)
    g0 = _lattice2(state, x0, y)
    g1 = _lattice2(state, x1, y)
    v0 = _dot(d, g0)
    v1 = _dot(d - e, g1)
    return _mix(v0, v1, d[0]), _mix_grad(v0, v1, d[0], g0, g1, e)


@func
def _gradient2(state: uint32, x0: int, y0: int, x1: int, y1: int, d: vec2):
    e = vec2(0.0, 1.0)
    v0, g0 = _row2g(state, x0, x1, y0, d)
    v1, g1 = _row2g(state, x0, x1, y1, d - e)
    return _mix_grad(v0, v1, d[1], g0, g1, e)


@func
def _row3g(state: uint32, x0: int, x1: int, y: int, z: int, d: vec3):
    e = vec3(1.0, 0.0, 0.0)
    g0 = _lattice3(state, x0, y, z)
    g1 = _lattice3(state, x1, y, z)
    v0 = _dot(d, g0)
    v1 = _dot(d - e, g1)
    return _mix(v0, v1, d[0]), _mix_grad(v0, v1, d[0], g0, g1, e)


@func
def _plane3g(state: uint32, x0: int, x1: int, y0: int, y1: int, z: int, d: vec3):
    e = vec3(0.0, 1.0, 0.0)
    v0, g0 = _row3g(state, x0, x1, y0, z, d)
    v1, g1 = _row3g(state, x0, x1, y1, z, d - e)
    return _mix(v0, v1, d[1]), _mix_grad(v0, v1, d[1], g0, g1, e)


@func
def _gradient3(state: uint32, x0: int, y0: int, z0: int, x1: int, y1: int, z1: int, d: vec3):
    e = vec3(0.0, 0.0, 1.0)
    v0, g0 = _plane3g(state, x0, x1, y0, y1, z0, d)
    v1, g1 = _plane3g(state, x0, x1, y0, y1, z1, d - e)
    return _mix_grad(v0, v1, d[2], g0, g1, e)


@func
def _row4g(state: uint32, x0: int, x1: int, y: int, z: int, t: int, d: vec4):
    e = vec4(1.0, 0.0, 0.0, 0.0)
    g0 = _lattice4(state, x0, y, z, t)
    g1 = _lattice4(state, x1, y, z, t)
    v0 = _dot(d, g0)
    v1 = _dot(d - e, g1)
    return _mix(v0, v1, d[0]), _mix_grad(v0, v1, d[0], g0, g1, e)


@func
def _plane4g(state: uint32, x0: int, x1: int, y0: int, y1: int, z: int, t: int, d: vec4):
    e = vec4(0.0, 1.0, 0.0, 0.0)
    v0, g0 = _row4g(state, x0, x1, y0, z, t, d)
    v1, g1 = _row4g(state, x0, x1, y1, z, t, d - e)
    return _mix(v0, v1, d[1]), _mix_grad(v0, v1, d[1], g0, g1, e)


@func
def _cube4g(state: uint32, x0: int, x1: int, y0: int, y1: int, z0: int, z1: int, t: int,
            d: vec4):
    e = vec4(0.0, 0.0, 1.0, 0.0)
    v0, g0 = _plane4g(state, x0, x1, y0, y1, z0, t, d)
    v1, g1 = _plane4g(state, x0, x1, y0, y1, z1, t, d - e)
    return _mix(v0, v1, d[2]), _mix_grad(v0, v1, d[2], g0, g1, e)


@func
def _gradient4(state: uint32, x0: int, y0: int, z0: int, t0: int, x1: int, y1: int, z1: int,
               t1: int, d: vec4):
    e = vec4(0.0, 0.0, 0.0, 1.0)
    v0, g0 = _cube4g(state, x0, x1, y0, y1, z0, z1, t0, d)
    v1, g1 = _cube4g(state, x0, x1, y0, y1, z0, z1, t1, d - e)
    return _mix_grad(v0, v1, d[3], g0, g1, e)


# ------------------------------------------------------------------ noise


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


@func
def noise(state: uint32, x: float):
    """Perlin noise at x (1 to 4 dimensions: a float, vec2, vec3 or vec4), in the field that
    ``state`` (from rand_init) selects; 0 at integer points, smooth (C2) between them, of
    size about 0.5 sqrt(dimensions) at most. Differentiable with respect to x."""
    x0 = int(_floor(x))
    return _value1(state, x0, x0 + 1, x - _floor(x))


@func
def noise(state: uint32, xy: vec2):  # noqa: F811 (overloads by dimension)
    x0 = int(_floor(xy[0]))
    y0 = int(_floor(xy[1]))
    return _value2(state, x0, y0, x0 + 1, y0 + 1, _frac2(xy))


@func
def noise(state: uint32, xyz: vec3):  # noqa: F811
    x0 = int(_floor(xyz[0]))
    y0 = int(_floor(xyz[1]))
    z0 = int(_floor(xyz[2]))
    return _value3(state, x0, y0, z0, x0 + 1, y0 + 1, z0 + 1, _frac3(xyz))


@func
def noise(state: uint32, xyzt: vec4):  # noqa: F811
    x0 = int(_floor(xyzt[0]))
    y0 = int(_floor(xyzt[1]))
    z0 = int(_floor(xyzt[2]))
    t0 = int(_floor(xyzt[3]))
    return _value4(state, x0, y0, z0, t0, x0 + 1, y0 + 1, z0 + 1, t0 + 1,
                   _frac4(xyzt))


# ------------------------------------------------------------------ periodic noise
# The lattice indices wrap with C's remainder (as Warp's): periods must be positive and,
# as in Warp, coordinates non-negative.


@func
def pnoise(state: uint32, x: float, px: int):
    """Perlin noise at x that repeats every px units along x (and py, pz, pt along the
    other axes for a vec2, vec3 or vec4 x): the lattice wraps. Periods must be positive and
    coordinates non-negative, as in Warp. Differentiable with respect to x."""
    x0 = int(_floor(x)) % px
    return _value1(state, x0, (x0 + 1) % px, x - _floor(x))


@func
def pnoise(state: uint32, xy: vec2, px: int, py: int):  # noqa: F811
    x0 = int(_floor(xy[0])) % px
    y0 = int(_floor(xy[1])) % py
    return _value2(state, x0, y0, (x0 + 1) % px, (y0 + 1) % py, _frac2(xy))


@func
def pnoise(state: uint32, xyz: vec3, px: int, py: int, pz: int):  # noqa: F811
    x0 = int(_floor(xyz[0])) % px
    y0 = int(_floor(xyz[1])) % py
    z0 = int(_floor(xyz[2])) % pz
    return _value3(state, x0, y0, z0, (x0 + 1) % px, (y0 + 1) % py, (z0 + 1) % pz,
                   _frac3(xyz))


@func
def pnoise(state: uint32, xyzt: vec4, px: int, py: int, pz: int, pt: int):  # noqa: F811
    x0 = int(_floor(xyzt[0])) % px
    y0 = int(_floor(xyzt[1])) % py
    z0 = int(_floor(xyzt[2])) % pz
    t0 = int(_floor(xyzt[3])) % pt
    return _value4(state, x0, y0, z0, t0, (x0 + 1) % px, (y0 + 1) % py, (z0 + 1) % pz,
                   (t0 + 1) % pt, _frac4(xyzt))


# ------------------------------------------------------------------ curl noise


@func
def curlnoise(state: uint32, xy: vec2, octaves: uint32 = uint32(1), lacunarity: float = 2.0,
              gain: float = 0.5):
    """A divergence-free field from Perlin noise: for a vec2 xy, the gradient of the noise
    turned by 90 degrees; for a vec3 (or a vec4, whose fourth axis is time) the curl of
    three noise fields (state, then rand_init(state, 10019689) and rand_init of that with
    13112221), a vec3. Octave i samples at lacunarity^i xy with weight gain^i. Not
    normalised. Differentiable with respect to xy."""
    curl = vec2(0.0, 0.0)
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        p = freq * xy
        x0 = int(_floor(p[0]))
        y0 = int(_floor(p[1]))
        curl = curl + amplitude * _gradient2(state, x0, y0, x0 + 1, y0 + 1, _frac2(p))
        amplitude = amplitude * gain
        freq = freq * lacunarity
    return vec2(-curl[1], curl[0])


@func
def curlnoise(state: uint32, xyz: vec3, octaves: uint32 = uint32(1),  # noqa: F811
              lacunarity: float = 2.0, gain: float = 0.5):
    s = state
    g1 = vec3(0.0, 0.0, 0.0)
    g2 = vec3(0.0, 0.0, 0.0)
    g3 = vec3(0.0, 0.0, 0.0)
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        p = freq * xyz
        x0 = int(_floor(p[0]))
        y0 = int(_floor(p[1]))
        z0 = int(_floor(p[2]))
        d = _frac3(p)
        n1 = _gradient3(s, x0, y0, z0, x0 + 1, y0 + 1, z0 + 1, d)
        s = _rand_init(int(s), _CURL_OFFSET_2)
        n2 = _gradient3(s, x0, y0, z0, x0 + 1, y0 + 1, z0 + 1, d)
        s = _rand_init(int(s), _CURL_OFFSET_3)
        n3 = _gradient3(s, x0, y0, z0, x0 + 1, y0 + 1, z0 + 1, d)
        g1 = g1 + amplitude * n1
        g2 = g2 + amplitude * n2
        g3 = g3 + amplitude * n3
        amplitude = amplitude * gain
        freq = freq * lacunarity
    return vec3(g3[1] - g2[2], g1[2] - g3[0], g2[0] - g1[1])


@func
def curlnoise(state: uint32, xyzt: vec4, octaves: uint32 = uint32(1),  # noqa: F811
              lacunarity: float = 2.0, gain: float = 0.5):
    s = state
    g1 = vec4(0.0, 0.0, 0.0, 0.0)
    g2 = vec4(0.0, 0.0, 0.0, 0.0)
    g3 = vec4(0.0, 0.0, 0.0, 0.0)
    freq = float(1.0)
    amplitude = float(1.0)
    for _i in range(int(octaves)):
        p = freq * xyzt
        x0 = int(_floor(p[0]))
        y0 = int(_floor(p[1]))
        z0 = int(_floor(p[2]))
        t0 = int(_floor(p[3]))
        d = _frac4(p)
        n1 = _gradient4(s, x0, y0, z0, t0, x0 + 1, y0 + 1, z0 + 1, t0 + 1, d)
        s = _rand_init(int(s), _CURL_OFFSET_2)
        n2 = _gradient4(s, x0, y0, z0, t0, x0 + 1, y0 + 1, z0 + 1, t0 + 1, d)
        s = _rand_init(int(s), _CURL_OFFSET_3)
        n3 = _gradient4(s, x0, y0, z0, t0, x0 + 1, y0 + 1, z0 + 1, t0 + 1, d)
        g1 = g1 + amplitude * n1
        g2 = g2 + amplitude * n2
        g3 = g3 + amplitude * n3
        amplitude = amplitude * gain
        freq = freq * lacunarity
    return vec3(g3[1] - g2[2], g1[2] - g3[0], g2[0] - g1[1])
