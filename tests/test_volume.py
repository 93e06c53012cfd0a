"""kl.Volume: NanoVDB decoding, the volume_* kernel functions and their gradients.

The oracles are independent of kernlab's decoder: a small NanoVDB grid is written here byte
by byte from the format's layout (root tiles, an upper and a lower node with tiles, two
leaves, a non-symmetric index-to-world map), with values from a known function; dense
volumes come from an analytic field. Sampling is checked against trilinear interpolation in
float64 NumPy, gradients against float64 finite differences of that interpolant. Warp's own
rocks.nvdb is compared with Warp itself where warp-lang is installed.
"""
import importlib.util
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import KernelTypeError, LaunchError
from kernlab.volume import VolumeError

# ---- a NanoVDB float grid written from the layout ------------------------------------------

BG = -2.0
MAT = np.array([[0.5, 0.1, 0.0], [0.0, 0.4, -0.2], [0.05, 0.0, 0.3]])
VEC = np.array([1.0, -2.0, 0.5])


def leaf_value(i, j, k):
    return 0.5 * i - 0.25 * j + 0.125 * k + 0.01 * i * j * k


def oracle(i, j, k):
    """The grid's value at integer voxels (arrays): two leaves, a lower-node tile (3), an
    upper-node tile (5), a root tile (7), the background elsewhere."""
    i, j, k = (np.asarray(a, np.int64) for a in (i, j, k))
    out = np.full(np.broadcast(i, j, k).shape, BG)
    root = (i >> 12, j >> 12, k >> 12)
    out[(root[0] == 1) & (root[1] == 0) & (root[2] == 0)] = 7.0
    in_upper = (root[0] == 0) & (root[1] == 0) & (root[2] == 0)
    up = (i >> 7, j >> 7, k >> 7)
    out[in_upper & (up[0] == 1) & (up[1] == 0) & (up[2] == 0)] = 5.0
    in_lower = in_upper & (up[0] == 0) & (up[1] == 0) & (up[2] == 0)
    lo = (i >> 3, j >> 3, k >> 3)
    leaf = in_lower & ((lo[0] == 0) | (lo[0] == 1)) & (lo[1] == 0) & (lo[2] == 0)
    out[leaf] = leaf_value(i, j, k)[leaf] if out.shape else leaf_value(i, j, k)
    out[in_lower & (lo[0] == 0) & (lo[1] == 1) & (lo[2] == 0)] = 3.0
    return out


def make_grid() -> bytes:
    """The grid buffer (GridData, TreeData, root, 1 upper, 1 lower, 2 leaves)."""
    root_size, tile = 64, 32
    root_off = 64  # from the tree
    upper_off = root_off + root_size + 2 * tile
    lower_off = upper_off + 270400
    leaf_off = lower_off + 33856
    size = 672 + leaf_off + 2 * 2144
    g = bytearray(size)
    struct.pack_into("<QQII", g, 0, 0x304244566F6E614E, 0, (32 << 21) | (6 << 10), 0)
    struct.pack_into("<Q", g, 32, size)
    g[40:47] = b"handmade"[:7]
    inv = np.linalg.inv(MAT)
    struct.pack_into("<9f", g, 296, *MAT.reshape(-1))
    struct.pack_into("<9f", g, 296 + 36, *inv.reshape(-1))
    struct.pack_into("<3f", g, 296 + 72, *VEC)
    struct.pack_into("<9d", g, 296 + 88, *MAT.reshape(-1))
    struct.pack_into("<9d", g, 296 + 160, *inv.reshape(-1))
    struct.pack_into("<3d", g, 296 + 232, *VEC)
    struct.pack_into("<3d", g, 608, 0.5, 0.4, 0.3)
    struct.pack_into("<II", g, 632, 1, 1)  # level set, float
    tree = 672
    struct.pack_into("<QQQQIII", g, tree, leaf_off, lower_off, upper_off, root_off, 2, 1, 1)
    root = tree + root_off
    struct.pack_into("<If", g, root + 24, 2, BG)
    # tile 0: key (0, 0, 0) with the upper node; tile 1: key (1, 0, 0), a value tile
    struct.pack_into("<QqIf", g, root + root_size, 0, upper_off - root_off, 1, 0.0)
    struct.pack_into("<QqIf", g, root + root_size + tile, 1 << 42, 0, 1, 7.0)
    upper = tree + upper_off
    for n in range(32768):
        struct.pack_into("<f", g, upper + 8256 + 8 * n, 5.0 if n == 1 << 10 else BG)
    g[upper + 4128] |= 1  # entry 0 is the lower node
    struct.pack_into("<q", g, upper + 8256, lower_off - upper_off)
    lower = tree + lower_off
    for n in range(4096):
        struct.pack_into("<f", g, lower + 1088 + 8 * n, 3.0 if n == 1 << 4 else BG)
    for n, leaf in ((0, 0), (1 << 8, 1)):  # leaves at (0, 0, 0) and (8, 0, 0)
        g[lower + 544 + n // 8] |= 1 << (n % 8)
        struct.pack_into("<q", g, lower + 1088 + 8 * n, leaf_off + 2144 * leaf - lower_off)
    for leaf in range(2):
        at = tree + leaf_off + 2144 * leaf
        struct.pack_into("<3i", g, at, 8 * leaf, 0, 0)
        n = np.arange(512)
        vals = leaf_value(8 * leaf + (n >> 6), (n >> 3) & 7, n & 7).astype("<f4")
        g[at + 96: at + 96 + 2048] = vals.tobytes()
    return bytes(g)


def make_file(grid: bytes, codec: int = 1) -> bytes:
    name = b"handmade\0"
    data = grid if codec == 0 else struct.pack("<Q", len(zlib.compress(grid))) + \
        zlib.compress(grid)
    meta = bytearray(176)
    struct.pack_into("<QQ", meta, 0, len(grid), len(data))
    struct.pack_into("<I", meta, 32, 1)
    struct.pack_into("<I", meta, 136, len(name))
    head = struct.pack("<QIHH", 0x304244566F6E614E, (32 << 21) | (6 << 10), 1, codec)
    return head + bytes(meta) + name + data


GRID = make_grid()


def trilinear(field, p):
    """float64 trilinear interpolation of ``field(i, j, k)`` at index-space points p (n, 3)."""
    p = np.asarray(p, np.float64)
    b = np.floor(p)
    f = p - b
    b = b.astype(np.int64)
    out = 0.0
    for c in range(8):
        d = np.array([c >> 2, (c >> 1) & 1, c & 1])
        w = np.prod(np.where(d == 1, f, 1.0 - f), axis=-1)
        v = field(b[..., 0] + d[0], b[..., 1] + d[1], b[..., 2] + d[2])
        out = out + (w[..., None] if np.ndim(v) > np.ndim(w) else w) * v
    return out


# ---- kernels ---------------------------------------------------------------------------

# test_cuda's NVRTC corpus: the transforms and one world-space sample. read_all's adjoint
# (every lookup and sample kind at once) renders to 4 MB of PTX that NVRTC and ptxas took
# over 40 minutes on; the emulated-CUDA variants of the tests still compile all of them.
NVRTC_CORPUS = ("transforms", "sample_world")


@kl.kernel
def read_all(vol: kl.uint64, pts: kl.array(dtype=kl.vec3), lin: kl.array(dtype=float),
             near: kl.array(dtype=float), gval: kl.array(dtype=float),
             grad: kl.array(dtype=kl.vec3), look: kl.array(dtype=float),
             generic: kl.array(dtype=float)):
    t = kl.tid()
    p = pts[t]
    lin[t] = kl.volume_sample_f(vol, p, kl.Volume.LINEAR)
    near[t] = kl.volume_sample_f(vol, p, kl.Volume.CLOSEST)
    g = kl.vec3()
    gval[t] = kl.volume_sample_grad_f(vol, p, kl.Volume.LINEAR, g)
    grad[t] = g
    look[t] = kl.volume_lookup_f(vol, int(kl.floor(p[0])), int(kl.floor(p[1])),
                                 int(kl.floor(p[2])))
    generic[t] = kl.volume_sample(vol, p, kl.Volume.LINEAR, dtype=float)


@kl.kernel
def transforms(vol: kl.uint64, pts: kl.array(dtype=kl.vec3), out: kl.array(dtype=kl.vec3),
               pts64: kl.array(dtype=kl.vec3d), out64: kl.array(dtype=kl.vec3d)):
    t = kl.tid()
    out[4 * t + 0] = kl.volume_index_to_world(vol, pts[t])
    out[4 * t + 1] = kl.volume_world_to_index(vol, pts[t])
    out[4 * t + 2] = kl.volume_index_to_world_dir(vol, pts[t])
    out[4 * t + 3] = kl.volume_world_to_index_dir(vol, pts[t])
    out64[2 * t + 0] = kl.volume_index_to_world(vol, pts64[t])
    out64[2 * t + 1] = kl.volume_world_to_index(vol, pts64[t])


@kl.kernel
def sample_world(vol: kl.uint64, pts: kl.array(dtype=kl.vec3), out: kl.array(dtype=float)):
    t = kl.tid()
    out[t] = kl.volume_sample_f(vol, kl.volume_world_to_index(vol, pts[t]), kl.Volume.LINEAR)


@kl.kernel
def grad_dot(vol: kl.uint64, pts: kl.array(dtype=kl.vec3), c: kl.vec3,
             out: kl.array(dtype=float)):
    t = kl.tid()
    g = kl.vec3()
    v = kl.volume_sample_grad_f(vol, pts[t], kl.Volume.LINEAR, g)
    out[t] = kl.dot(g, c) + 0.5 * v


def _points(rng, n, lo, hi, away_from_planes=True):
    p = rng.uniform(lo, hi, (n, 3))
    if away_from_planes:  # finite differences need the point inside one cell
        f = p - np.floor(p)
        p = np.floor(p) + np.clip(f, 0.05, 0.95)
    return p


# ---- decoding and sampling ---------------------------------------------------------------

@pytest.mark.parametrize("codec", [0, 1])
def test_values_match_the_grid_written_from_the_layout(backend, codec):
    vol = kl.Volume.load_from_nvdb(make_file(GRID, codec))
    rng = np.random.default_rng(3)
    # around the leaves, the lower/upper tiles, the root tile, and far outside
    p = np.concatenate([_points(rng, 24, -2.0, 18.0), _points(rng, 6, 120.0, 140.0),
                        _points(rng, 4, 4090.0, 4100.0), _points(rng, 3, -9000.0, 9000.0),
                        [[2.5, 3.5, -0.5], [-2.5, 1.5, 0.5]]])  # CLOSEST's halfway cases
    n = len(p)
    arrays = [kl.zeros(n, dtype=float) for _ in range(3)] + [kl.zeros(n, dtype=kl.vec3)] + \
        [kl.zeros(n, dtype=float) for _ in range(2)]
    kl.launch(read_all, n, inputs=[vol.id, kl.array(p.astype(np.float32), dtype=kl.vec3)]
              + arrays)
    lin, near, gval, grad, look, generic = (a.numpy() for a in arrays)
    p32 = p.astype(np.float32).astype(np.float64)
    expect = trilinear(oracle, p32)
    np.testing.assert_allclose(lin, expect, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(gval, expect, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(generic, expect, rtol=1e-5, atol=1e-4)
    rounded = np.where(p32 >= 0, np.floor(p32 + 0.5), np.ceil(p32 - 0.5))  # away from 0
    np.testing.assert_array_equal(near, oracle(*rounded.astype(np.int64).T).astype(np.float32))
    np.testing.assert_array_equal(look, oracle(*np.floor(p32).astype(np.int64).T)
                                  .astype(np.float32))
    h = 1e-4  # the interpolant's gradient by central differences (inside one cell)
    fd = np.stack([(trilinear(oracle, p32 + h * e) - trilinear(oracle, p32 - h * e)) / (2 * h)
                   for e in np.eye(3)], 1)
    np.testing.assert_allclose(grad[:-2], fd[:-2], rtol=1e-4, atol=1e-3)


def test_transforms_use_the_map_of_the_grid(backend):
    vol = kl.Volume.load_from_nvdb(GRID)  # a raw grid buffer loads as well as a file
    p = np.random.default_rng(4).uniform(-5, 5, (5, 3))
    out, out64 = kl.zeros(20, dtype=kl.vec3), kl.zeros(10, dtype=kl.vec3d)
    kl.launch(transforms, 5, inputs=[vol.id, kl.array(p.astype(np.float32), dtype=kl.vec3),
                                     out, kl.array(p, dtype=kl.vec3d), out64])
    o, o64 = out.numpy().reshape(5, 4, 3), out64.numpy().reshape(5, 2, 3)
    inv = np.linalg.inv(MAT)
    np.testing.assert_allclose(o[:, 0], p @ MAT.T + VEC, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o[:, 1], (p - VEC) @ inv.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(o[:, 2], p @ MAT.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o[:, 3], p @ inv.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(o64[:, 0], p @ MAT.T + VEC, rtol=1e-13)
    np.testing.assert_allclose(o64[:, 1], (p - VEC) @ inv.T, rtol=1e-12, atol=1e-12)
    assert vol.get_grid_info().name == "handmad"
    assert vol.get_tile_count() == 2 and vol.get_voxel_count() == 1024
    np.testing.assert_array_equal(vol.get_tiles().numpy(), [[0, 0, 0], [8, 0, 0]])


def test_reverse_mode_through_world_to_index_and_sampling(backend):
    """d sample(world_to_index(x)) / dx: the chain through the map's inverse (its transpose,
    not the map itself: the matrix here is not symmetric)."""
    vol = kl.Volume.load_from_nvdb(make_file(GRID))
    idx = _points(np.random.default_rng(5), 6, 0.0, 15.0)
    x = idx @ MAT.T + VEC
    pts = kl.array(x.astype(np.float32), dtype=kl.vec3, requires_grad=True)
    out = kl.zeros(6, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(sample_world, 6, inputs=[vol.id, pts, out])
    tape.backward(grads={out: kl.ones(6, dtype=float)})
    inv = np.linalg.inv(MAT)
    h = 1e-5

    def f(xx):
        return trilinear(oracle, (xx - VEC) @ inv.T)
    fd = np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(3)], 1)
    np.testing.assert_allclose(pts.grad.numpy(), fd, rtol=2e-3, atol=2e-3)


def test_reverse_mode_through_the_gradient_output(backend):
    """volume_sample_grad_f's grad output is differentiable too (the interpolant's mixed
    second derivatives), as in Warp."""
    vol = kl.Volume.load_from_nvdb(make_file(GRID))
    p = _points(np.random.default_rng(6), 5, 0.0, 15.0)
    c = np.array([0.3, -1.2, 0.7])
    pts = kl.array(p.astype(np.float32), dtype=kl.vec3, requires_grad=True)
    out = kl.zeros(5, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(grad_dot, 5, inputs=[vol.id, pts, kl.vec3(*c), out])
    tape.backward(grads={out: kl.ones(5, dtype=float)})
    h = 1e-4

    def grad_of(q):
        return np.stack([(trilinear(oracle, q + h * e) - trilinear(oracle, q - h * e)) / (2 * h)
                         for e in np.eye(3)], 1)

    def f(q):
        return grad_of(q) @ c + 0.5 * trilinear(oracle, q)
    h2 = 1e-3
    fd = np.stack([(f(p + h2 * e) - f(p - h2 * e)) / (2 * h2) for e in np.eye(3)], 1)
    np.testing.assert_allclose(pts.grad.numpy(), fd, rtol=2e-3, atol=2e-3)


# ---- dense volumes from NumPy -------------------------------------------------------------

def field(i, j, k):
    return np.sin(0.3 * i) + 0.2 * j * j - 0.1 * k + 0.05 * i * k


@kl.kernel
def read_vec_int(vv: kl.uint64, vi: kl.uint64, pts: kl.array(dtype=kl.vec3),
                 v: kl.array(dtype=kl.vec3), vg: kl.array(dtype=kl.vec3),
                 jac: kl.array(dtype=kl.mat33), ints: kl.array(dtype=int)):
    t = kl.tid()
    p = pts[t]
    v[t] = kl.volume_sample_v(vv, p, kl.Volume.LINEAR)
    m = kl.mat33()
    vg[t] = kl.volume_sample_grad(vv, p, kl.Volume.LINEAR, m, dtype=kl.vec3)
    jac[t] = m
    ints[3 * t] = kl.volume_sample_i(vi, p)
    ints[3 * t + 1] = kl.volume_lookup_i(vi, int(p[0]), int(p[1]), int(p[2]))
    ints[3 * t + 2] = kl.volume_sample(vi, p, kl.Volume.CLOSEST, dtype=int)


def test_load_from_numpy_float_vec3_and_int(backend):
    shape = (11, 9, 13)
    i, j, k = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    f = field(i, j, k)
    vf = np.stack([f, -2.0 * f, f + i], -1)
    vi = (i * 100 + j * 10 + k).astype(np.int32)
    vec_vol = kl.Volume.load_from_numpy(vf.astype(np.float32), (1.0, 2.0, 3.0), (0.5, 0.25, 2.0),
                                        bg_value=(1.0, 2.0, 3.0))
    int_vol = kl.Volume.load_from_numpy(vi, bg_value=-7)
    assert vec_vol.dtype == kl.vec3 and int_vol.dtype == kl.int32

    def vec_field(a, b, c):
        inside = (a >= 0) & (a < 16) & (b >= 0) & (b < 16) & (c >= 0) & (c < 16)
        real = (a < shape[0]) & (b < shape[1]) & (c < shape[2]) & (a >= 0) & (b >= 0) & (c >= 0)
        ff = field(a, b, c)
        vals = np.stack([ff, -2.0 * ff, ff + a], -1)
        bg = np.broadcast_to([1.0, 2.0, 3.0], vals.shape)  # padding and outside: background
        return np.where((inside & real)[..., None], vals, bg)

    p = np.concatenate([_points(np.random.default_rng(7), 20, -1.5, 15.0), [[1.5, 2.5, 0.5]]])
    n = len(p)
    v, vg = kl.zeros(n, dtype=kl.vec3), kl.zeros(n, dtype=kl.vec3)
    jac = kl.zeros(n, dtype=kl.mat33)
    ints = kl.zeros(3 * n, dtype=int)
    kl.launch(read_vec_int, n, inputs=[vec_vol.id, int_vol.id,
                                       kl.array(p.astype(np.float32), dtype=kl.vec3),
                                       v, vg, jac, ints])
    p32 = p.astype(np.float32).astype(np.float64)
    expect = trilinear(vec_field, p32)
    np.testing.assert_allclose(v.numpy(), expect, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(vg.numpy(), expect, rtol=1e-5, atol=1e-4)
    h = 1e-4
    fd = np.stack([(trilinear(vec_field, p32 + h * e) - trilinear(vec_field, p32 - h * e))
                   / (2 * h) for e in np.eye(3)], -1)  # rows: components, columns: axes
    np.testing.assert_allclose(jac.numpy()[:-1], fd[:-1], rtol=1e-3, atol=1e-3)

    def int_field(a, b, c):
        ok = (a >= 0) & (b >= 0) & (c >= 0) & (a < shape[0]) & (b < shape[1]) & (c < shape[2])
        return np.where(ok, a * 100 + b * 10 + c, -7)
    r = np.where(p32 >= 0, np.floor(p32 + 0.5), np.ceil(p32 - 0.5)).astype(np.int64)
    t = np.trunc(p32).astype(np.int64)
    got = ints.numpy().reshape(n, 3)
    np.testing.assert_array_equal(got[:, 0], int_field(*r.T))
    np.testing.assert_array_equal(got[:, 1], int_field(*t.T))
    np.testing.assert_array_equal(got[:, 2], int_field(*r.T))
    info = vec_vol.get_grid_info()
    np.testing.assert_allclose(np.asarray(info.transform_matrix).diagonal(), [0.5, 0.25, 2.0])
    np.testing.assert_allclose(np.asarray(info.translation), [1.0, 2.0, 3.0])


Mat43 = kl.types.matrix(shape=(4, 3), dtype=kl.float32)


@kl.kernel
def read_vec4(vol: kl.uint64, pts: kl.array(dtype=kl.vec3), v: kl.array(dtype=kl.vec4),
              jac: kl.array(dtype=Mat43), near: kl.array(dtype=kl.vec4)):
    t = kl.tid()
    m = Mat43()
    v[t] = kl.volume_sample_grad(vol, pts[t], kl.Volume.LINEAR, m, dtype=kl.vec4)
    jac[t] = m
    q = pts[t]
    kl.volume_store(vol, 100, 100, 100, kl.vec4(1.0))  # no leaf there: dropped
    near[t] = kl.volume_lookup(vol, int(q[0]), int(q[1]), int(q[2]), dtype=kl.vec4)


def test_vec4_volumes(backend, tmp_path):
    shape = (9, 8, 10)
    i, j, k = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    f = field(i, j, k)
    data = np.stack([f, i * 1.0, -f, j + k * 0.5], -1).astype(np.float32)
    bg = (0.5, -1.0, 2.0, 4.0)
    vol = kl.Volume.load_from_numpy(data, bg_value=bg)
    assert vol.dtype == kl.vec4 and vol.get_grid_info().type_str == "Vec4f"
    vol.save_to_nvdb(tmp_path / "v4.nvdb")  # the file reads back as the same volume
    vol = kl.Volume.load_from_nvdb((tmp_path / "v4.nvdb").read_bytes())

    def vec4_field(a, b, c):
        ok = (a >= 0) & (b >= 0) & (c >= 0) & (a < shape[0]) & (b < shape[1]) & (c < shape[2])
        ff = field(a, b, c)
        vals = np.stack([ff, a * 1.0, -ff, b + c * 0.5], -1)
        return np.where(ok[..., None], vals, np.broadcast_to(bg, vals.shape))

    p = _points(np.random.default_rng(9), 12, -1.5, 12.0)
    n = len(p)
    v, jac, near = kl.zeros(n, dtype=kl.vec4), kl.zeros(n, dtype=Mat43), kl.zeros(n, dtype=kl.vec4)
    kl.launch(read_vec4, n, inputs=[vol.id, kl.array(p.astype(np.float32), dtype=kl.vec3), v,
                                    jac, near])
    p32 = p.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(v.numpy(), trilinear(vec4_field, p32), rtol=1e-5, atol=1e-4)
    h = 1e-4
    fd = np.stack([(trilinear(vec4_field, p32 + h * e) - trilinear(vec4_field, p32 - h * e))
                   / (2 * h) for e in np.eye(3)], -1)
    np.testing.assert_allclose(jac.numpy(), fd, rtol=1e-3, atol=1e-3)
    t = np.trunc(p32).astype(np.int64)
    np.testing.assert_allclose(near.numpy(), vec4_field(*t.T), rtol=1e-6)


@kl.kernel
def store_then_read(vol: kl.uint64, pts: kl.array(dtype=kl.vec3i), out: kl.array(dtype=float)):
    t = kl.tid()
    q = pts[t]
    kl.volume_store_f(vol, q[0], q[1], q[2], float(q[0] + 100 * q[1] + 10000 * q[2]))


@kl.kernel
def read_back(vol: kl.uint64, pts: kl.array(dtype=kl.vec3i), out: kl.array(dtype=float)):
    t = kl.tid()
    q = pts[t]
    out[t] = kl.volume_lookup(vol, q[0], q[1], q[2], dtype=float)


def test_allocate_then_store_and_read(backend):
    vol = kl.Volume.allocate(min=[-11, -11, -11], max=[11, 11, 11], voxel_size=0.1,
                             bg_value=-123.0)
    assert vol.get_tile_count() == 4 ** 3
    q = np.array([[-11, 3, 0], [11, -11, 11], [0, 0, 0], [5000, 0, 0]], np.int32)
    pts, out = kl.array(q, dtype=kl.vec3i), kl.zeros(4, dtype=float)
    kl.launch(store_then_read, 4, inputs=[vol.id, pts, out])
    kl.launch(read_back, 4, inputs=[vol.id, pts, out])
    expect = q[:, 0] + 100.0 * q[:, 1] + 10000.0 * q[:, 2]
    expect[3] = -123.0  # outside every leaf: the store is dropped, the background stays
    np.testing.assert_array_equal(out.numpy(), expect)


def test_saved_files_hold_the_values_stored_since(tmp_path):
    """save_to_nvdb writes the grid as it is now (a store included); the file is read back
    against the layout's oracle, and by Warp itself where warp-lang is installed."""
    vol = kl.Volume.load_from_nvdb(make_file(GRID))
    q = np.array([[1, 2, 3]], np.int32)
    kl.launch(store_then_read, 1, inputs=[vol.id, kl.array(q, dtype=kl.vec3i),
                                          kl.zeros(1, dtype=float)])
    assert vol.array().dtype == kl.uint8
    for codec in ("none", "zip"):
        vol.save_to_nvdb(tmp_path / f"v_{codec}.nvdb", codec=codec)
    # read back, then through Warp's constructor from a grid buffer (volume.array())
    again = kl.Volume(kl.Volume.load_from_nvdb((tmp_path / "v_zip.nvdb").read_bytes()).array())
    p = np.array([[1.0, 2.0, 3.0], [1.25, 2.5, 3.75], [130.0, 1.0, 1.0], [5000.0, 5.0, 5.0]])
    n = len(p)
    arrays = [kl.zeros(n, dtype=float) for _ in range(3)] + [kl.zeros(n, dtype=kl.vec3)] + \
        [kl.zeros(n, dtype=float) for _ in range(2)]
    kl.launch(read_all, n, inputs=[again.id, kl.array(p.astype(np.float32), dtype=kl.vec3)]
              + arrays)

    def stored(i, j, k):
        out = oracle(i, j, k)
        return np.where((i == 1) & (j == 2) & (k == 3), 1.0 + 200.0 + 30000.0, out)
    np.testing.assert_allclose(arrays[0].numpy(), trilinear(stored, p), rtol=1e-5, atol=1e-4)
    with pytest.raises(RuntimeError, match="codec"):
        vol.save_to_nvdb(tmp_path / "v.nvdb", codec="blosc")
    if importlib.util.find_spec("warp") is None:
        return
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wvol = wp.Volume.load_from_nvdb((tmp_path / "v_none.nvdb").read_bytes(), device="cpu")
    np.testing.assert_array_equal(wvol.get_tiles().numpy(), [[0, 0, 0], [8, 0, 0]])
    matrix = np.asarray(wvol.get_grid_info().transform_matrix).reshape(3, 3)
    np.testing.assert_allclose(matrix, MAT, rtol=1e-6)


# ---- errors ------------------------------------------------------------------------------

def test_bad_files_are_clear_errors():
    good = make_file(GRID)
    for data, words in [
            (b"", "fewer than a header"),
            (b"hello world, not a volume at all!", "signature"),
            (good[:100], "metadata is cut off"),
            (good[:len(good) // 2], "truncated"),
            (good[:230] + bytes(100) + good[330:], "does not inflate"),
            (good[:14] + struct.pack("<H", 2) + good[16:], "BLOSC"),
            (good[:14] + struct.pack("<H", 9) + good[16:], "unknown codec 9"),
            (good[:8] + struct.pack("<I", 31 << 21) + good[12:], "unsupported NanoVDB version"),
            (GRID[:636] + struct.pack("<I", 2) + GRID[640:], "double"),
            (GRID[:-5000], "truncated NanoVDB grid"),
            (GRID[:32] + struct.pack("<Q", len(GRID) - 5000) + GRID[40:-5000], "outside")]:
        with pytest.raises(VolumeError, match=words):
            kl.Volume.load_from_nvdb(data)
    broken = bytearray(GRID)  # the upper node's child pointer one byte off
    at = 672 + 64 + 64 + 64 + 8256
    struct.pack_into("<q", broken, at, struct.unpack_from("<q", broken, at)[0] + 1)
    with pytest.raises(VolumeError, match="child pointer"):
        kl.Volume.load_from_nvdb(bytes(broken))
    with pytest.raises(TypeError, match="binary mode or bytes"):
        kl.Volume.load_from_nvdb(12)
    with pytest.raises(TypeError, match="voxel_size"):
        kl.Volume.load_from_numpy(np.zeros((8, 8, 8)), voxel_size="0.5")
    with pytest.raises(ValueError, match="positive"):
        kl.Volume.load_from_numpy(np.zeros((8, 8, 8)), voxel_size=(0.1, -0.2, 0.3))
    with pytest.raises(NotImplementedError, match="index volumes"):
        kl.Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=None)


def test_a_launch_with_an_id_that_is_no_volume_is_refused():
    vol = kl.Volume.load_from_nvdb(GRID)
    out = kl.zeros(1, dtype=float)
    with pytest.raises(LaunchError, match="not the id of a live kl.Volume"):
        kl.launch(sample_world, 1, inputs=[vol.id + 12345, kl.zeros(1, dtype=kl.vec3), out])


def test_kernel_errors_name_the_call():
    @kl.kernel
    def bad_dtype(vol: kl.uint64, out: kl.array(dtype=float)):
        out[0] = kl.volume_sample(vol, kl.vec3(0.0), kl.Volume.LINEAR, dtype=kl.float64)

    @kl.kernel
    def bad_grad(vol: kl.uint64, out: kl.array(dtype=float)):
        g = kl.vec2()
        out[0] = kl.volume_sample_grad_f(vol, kl.vec3(0.0), kl.Volume.LINEAR, g)

    @kl.kernel
    def computed_id(vol: kl.uint64, out: kl.array(dtype=float)):
        out[0] = kl.volume_sample_f(vol + kl.uint64(1), kl.vec3(0.0), kl.Volume.LINEAR)

    vol = kl.Volume.load_from_nvdb(GRID)
    out = kl.zeros(1, dtype=float)
    for k, words in ((bad_dtype, "dtype=float64 is not supported"),
                     (bad_grad, "Incompatible gradient type, expected vec3f, got vec2f"),
                     (computed_id, "uint64 parameter")):
        with pytest.raises(KernelTypeError, match=words) as info:
            kl.launch(k, 1, inputs=[vol.id, out])
        assert "volume_sample" in str(info.value)


# ---- Warp's own asset, against Warp -----------------------------------------------------

def _warp_assets():
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "examples" / "assets" / "rocks.nvdb"
    return path if path.exists() else None


@pytest.mark.skipif(_warp_assets() is None, reason="warp-lang is not installed")
def test_rocks_nvdb_samples_as_warp_does():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    data = _warp_assets().read_bytes()
    rng = np.random.default_rng(8)
    x = rng.uniform(-12.0, 12.0, (300, 3)).astype(np.float32)

    @wp.kernel
    def warp_side(v: wp.uint64, pts: wp.array(dtype=wp.vec3), val: wp.array(dtype=float),
                  grad: wp.array(dtype=wp.vec3)):
        t = wp.tid()
        g = wp.vec3()
        val[t] = wp.volume_sample_grad_f(v, wp.volume_world_to_index(v, pts[t]),
                                         wp.Volume.LINEAR, g)
        grad[t] = g

    @kl.kernel
    def kernlab_side(v: kl.uint64, pts: kl.array(dtype=kl.vec3), val: kl.array(dtype=float),
                     grad: kl.array(dtype=kl.vec3)):
        t = kl.tid()
        g = kl.vec3()
        val[t] = kl.volume_sample_grad_f(v, kl.volume_world_to_index(v, pts[t]),
                                         kl.Volume.LINEAR, g)
        grad[t] = g

    wvol = wp.Volume.load_from_nvdb(data, device="cpu")
    wval, wgrad = wp.zeros(300, dtype=float, device="cpu"), wp.zeros(300, dtype=wp.vec3,
                                                                      device="cpu")
    wp.launch(warp_side, 300, inputs=[wvol.id, wp.array(x, dtype=wp.vec3, device="cpu"),
                                      wval, wgrad], device="cpu")
    vol = kl.Volume.load_from_nvdb(data)
    val, grad = kl.zeros(300, dtype=float), kl.zeros(300, dtype=kl.vec3)
    kl.launch(kernlab_side, 300, inputs=[vol.id, kl.array(x, dtype=kl.vec3), val, grad])
    np.testing.assert_allclose(val.numpy(), wval.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grad.numpy(), wgrad.numpy(), rtol=1e-5, atol=1e-5)
    assert vol.get_voxel_count() == wvol.get_voxel_count()
    np.testing.assert_array_equal(vol.get_tiles().numpy(), wvol.get_tiles().numpy())
