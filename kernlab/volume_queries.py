"""The kernel side of ``kl.Volume``: voxel lookups, stores, sampling and the index/world
transforms behind the ``volume_*`` kernel functions, written in kernlab's kernel language so
every backend runs one definition.

kernlab/volume_nanovdb.py reads and writes the NanoVDB grids on the host and describes the
flattened layout (``HEADER``, ``FLOAT_BASE``, the ``KIND_*`` codes); kernlab/volume.py holds
the sampling modes (``CLOSEST``/``LINEAR``); frontend/volume.py lowers each ``volume_*`` call
to a call of one of the funcs here.
"""
from typing import Any

import kernlab as kl
from .volume import CLOSEST, LINEAR
from .volume_nanovdb import FLOAT_BASE, HEADER, KIND_FLOAT, KIND_INT, KIND_VEC3, KIND_VEC4

# ---- lookups and sampling in the kernel language ---------------------------------------------

Ints = kl.array(dtype=kl.int32)
Floats = kl.array(dtype=kl.float32)
Doubles = kl.array(dtype=kl.float64)
Mat43 = kl.types.matrix(shape=(4, 3), dtype=kl.float32)  # a vec4 volume's Jacobian


@kl.func
def voxel_slot(tree: Ints, i: int, j: int, k: int) -> int:
    """The value slot of voxel (i, j, k): a leaf value, a tile's value or the background."""
    ri = i >> 12
    rj = j >> 12
    rk = k >> 12
    n = tree[1]
    t = int(0)
    found = int(-1)
    while t < n:
        base = HEADER + 5 * t
        if tree[base] == ri and tree[base + 1] == rj and tree[base + 2] == rk:
            found = base
            t = n
        t += 1
    if found < 0:
        return 0
    upper = tree[found + 3]
    if upper < 0:
        return tree[found + 4]
    e = tree[tree[2] + upper * 32768 + (((i & 4095) >> 7) << 10) + (((j & 4095) >> 7) << 5)
             + ((k & 4095) >> 7)]
    if e < 0:
        return -1 - e
    e = tree[tree[3] + e * 4096 + (((i & 127) >> 3) << 8) + (((j & 127) >> 3) << 4)
             + ((k & 127) >> 3)]
    if e < 0:
        return -1 - e
    return tree[4] + e * 512 + ((i & 7) << 6) + ((j & 7) << 3) + (k & 7)


@kl.func
def lookup_f(tree: Ints, values: Floats, i: int, j: int, k: int) -> float:
    if tree[0] != KIND_FLOAT:
        return 0.0
    return values[FLOAT_BASE + voxel_slot(tree, i, j, k)]


@kl.func
def lookup_v(tree: Ints, values: Floats, i: int, j: int, k: int) -> kl.vec3:
    if tree[0] != KIND_VEC3:
        return kl.vec3(0.0)
    s = FLOAT_BASE + 3 * voxel_slot(tree, i, j, k)
    return kl.vec3(values[s], values[s + 1], values[s + 2])


@kl.func
def lookup_v4(tree: Ints, values: Floats, i: int, j: int, k: int) -> kl.vec4:
    if tree[0] != KIND_VEC4:
        return kl.vec4(0.0)
    s = FLOAT_BASE + 4 * voxel_slot(tree, i, j, k)
    return kl.vec4(values[s], values[s + 1], values[s + 2], values[s + 3])


@kl.func
def lookup_i(tree: Ints, i: int, j: int, k: int) -> int:
    if tree[0] != KIND_INT:
        return 0
    return tree[tree[5] + voxel_slot(tree, i, j, k)]


@kl.func
def leaf_slot(tree: Ints, i: int, j: int, k: int) -> int:
    """The slot of voxel (i, j, k) if a leaf holds it, else -1 (a store there is dropped:
    tiles and the background are shared by many voxels)."""
    s = voxel_slot(tree, i, j, k)
    if s < tree[4]:
        return -1
    return s


@kl.func
def store_f(tree: Ints, values: Floats, i: int, j: int, k: int, v: float):
    if tree[0] == KIND_FLOAT:
        s = leaf_slot(tree, i, j, k)
        if s >= 0:
            values[FLOAT_BASE + s] = v


@kl.func
def store_v(tree: Ints, values: Floats, i: int, j: int, k: int, v: kl.vec3):
    if tree[0] == KIND_VEC3:
        s = leaf_slot(tree, i, j, k)
        if s >= 0:
            values[FLOAT_BASE + 3 * s] = v[0]
            values[FLOAT_BASE + 3 * s + 1] = v[1]
            values[FLOAT_BASE + 3 * s + 2] = v[2]


@kl.func
def store_v4(tree: Ints, values: Floats, i: int, j: int, k: int, v: kl.vec4):
    if tree[0] == KIND_VEC4:
        s = leaf_slot(tree, i, j, k)
        if s >= 0:
            for c in range(4):
                values[FLOAT_BASE + 4 * s + c] = v[c]


@kl.func
def store_i(tree: Ints, i: int, j: int, k: int, v: int):
    if tree[0] == KIND_INT:
        s = leaf_slot(tree, i, j, k)
        if s >= 0:
            tree[tree[5] + s] = v


@kl.func
def nearest(uvw: kl.vec3):
    """The voxel nearest ``uvw`` (halfway cases away from zero, as Warp rounds)."""
    return int(kl.round(uvw[0])), int(kl.round(uvw[1])), int(kl.round(uvw[2]))


@kl.func
def weights(uvw: kl.vec3):
    """The cell's lower corner and the fractions (differentiable in ``uvw``)."""
    b = kl.vec3(kl.floor(uvw[0]), kl.floor(uvw[1]), kl.floor(uvw[2]))
    return int(b[0]), int(b[1]), int(b[2]), uvw - b


@kl.func
def corner(f: kl.vec3, c: int):
    """Corner c (0..7) of the trilinear cell at fractions f: its offsets (di, dj, dk), its
    weight and the weight's gradient in f."""
    di = c >> 2
    dj = (c >> 1) & 1
    dk = c & 1
    wx = kl.where(di == 1, f[0], 1.0 - f[0])
    wy = kl.where(dj == 1, f[1], 1.0 - f[1])
    wz = kl.where(dk == 1, f[2], 1.0 - f[2])
    sx = float(2 * di - 1)
    sy = float(2 * dj - 1)
    sz = float(2 * dk - 1)
    return di, dj, dk, wx * wy * wz, kl.vec3(sx * wy * wz, sy * wx * wz, sz * wx * wy)


@kl.func
def sample_i(tree: Ints, uvw: kl.vec3) -> int:
    i, j, k = nearest(uvw)
    return lookup_i(tree, i, j, k)


@kl.func
def sample_grad_f(tree: Ints, values: Floats, uvw: kl.vec3, mode: int):
    """(value, gradient in index space) of the float volume at ``uvw``."""
    if tree[0] != KIND_FLOAT:
        return 0.0, kl.vec3(0.0)
    if mode == CLOSEST:
        i, j, k = nearest(uvw)
        return lookup_f(tree, values, i, j, k), kl.vec3(0.0)
    if mode != LINEAR:
        return 0.0, kl.vec3(0.0)
    i, j, k, f = weights(uvw)
    val = float(0.0)
    grad = kl.vec3(0.0)
    for c in range(8):
        di, dj, dk, w, dw = corner(f, c)
        v = lookup_f(tree, values, i + di, j + dj, k + dk)
        val += w * v
        grad += v * dw
    return val, grad


@kl.func
def sample_grad_v(tree: Ints, values: Floats, uvw: kl.vec3, mode: int):
    """(value, Jacobian: one row per component) of the vec3 volume at ``uvw``."""
    if tree[0] != KIND_VEC3:
        return kl.vec3(0.0), kl.mat33(0.0)
    if mode == CLOSEST:
        i, j, k = nearest(uvw)
        return lookup_v(tree, values, i, j, k), kl.mat33(0.0)
    if mode != LINEAR:
        return kl.vec3(0.0), kl.mat33(0.0)
    i, j, k, f = weights(uvw)
    val = kl.vec3(0.0)
    grad = kl.mat33(0.0)
    for c in range(8):
        di, dj, dk, w, dw = corner(f, c)
        v = lookup_v(tree, values, i + di, j + dj, k + dk)
        val += w * v
        grad += kl.outer(v, dw)
    return val, grad


@kl.func
def sample_grad_v4(tree: Ints, values: Floats, uvw: kl.vec3, mode: int):
    """(value, Jacobian: one row per component) of the vec4 volume at ``uvw``."""
    if tree[0] != KIND_VEC4:
        return kl.vec4(0.0), Mat43()
    if mode == CLOSEST:
        i, j, k = nearest(uvw)
        return lookup_v4(tree, values, i, j, k), Mat43()
    if mode != LINEAR:
        return kl.vec4(0.0), Mat43()
    i, j, k, f = weights(uvw)
    val = kl.vec4(0.0)
    grad = Mat43()
    for c in range(8):
        di, dj, dk, w, dw = corner(f, c)
        v = lookup_v4(tree, values, i + di, j + dj, k + dk)
        val += w * v
        grad += kl.outer(v, dw)
    return val, grad


@kl.func
def sample_v4(tree: Ints, values: Floats, uvw: kl.vec3, mode: int) -> kl.vec4:
    val, grad = sample_grad_v4(tree, values, uvw, mode)
    return val


@kl.func
def sample_f(tree: Ints, values: Floats, uvw: kl.vec3, mode: int) -> float:
    val, grad = sample_grad_f(tree, values, uvw, mode)
    return val


@kl.func
def sample_v(tree: Ints, values: Floats, uvw: kl.vec3, mode: int) -> kl.vec3:
    val, grad = sample_grad_v(tree, values, uvw, mode)
    return val


# The index-to-world map and its inverse, generic over the precision: ``m`` is ``values``
# (float32, with vec3 points) or ``map64`` (float64, with vec3d points); the matrix is at
# m[0:9], its inverse at m[9:18], the translation at m[18:21].

@kl.func
def map_row(m: Any, at: int, p: Any):
    return p[0] * m[at] + p[1] * m[at + 1] + p[2] * m[at + 2]


@kl.func
def index_to_world(m: Any, uvw: Any):
    return kl.vector(map_row(m, 0, uvw) + m[18], map_row(m, 3, uvw) + m[19],
                     map_row(m, 6, uvw) + m[20])


@kl.func
def world_to_index(m: Any, xyz: Any):
    p = kl.vector(xyz[0] - m[18], xyz[1] - m[19], xyz[2] - m[20])
    return kl.vector(map_row(m, 9, p), map_row(m, 12, p), map_row(m, 15, p))


@kl.func
def index_to_world_dir(m: Any, uvw: Any):
    return kl.vector(map_row(m, 0, uvw), map_row(m, 3, uvw), map_row(m, 6, uvw))


@kl.func
def world_to_index_dir(m: Any, xyz: Any):
    return kl.vector(map_row(m, 9, xyz), map_row(m, 12, xyz), map_row(m, 15, xyz))


# ---- no gradient flows into the voxel values or the tree ---------------------------------
# As in Warp, reverse mode differentiates the sampling with respect to the point only: the
# lookups get empty custom gradients, so their adjoints neither walk the tree again nor add
# into the volume's arrays.

@kl.func_grad(voxel_slot)
def _voxel_slot_grad(tree: Ints, i: int, j: int, k: int, adj_slot: int):
    pass


@kl.func_grad(lookup_f)
def _lookup_f_grad(tree: Ints, values: Floats, i: int, j: int, k: int, adj_value: float):
    pass


@kl.func_grad(lookup_v)
def _lookup_v_grad(tree: Ints, values: Floats, i: int, j: int, k: int, adj_value: kl.vec3):
    pass


@kl.func_grad(lookup_v4)
def _lookup_v4_grad(tree: Ints, values: Floats, i: int, j: int, k: int, adj_value: kl.vec4):
    pass
