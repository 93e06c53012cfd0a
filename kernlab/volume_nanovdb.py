"""A ``kl.Volume``'s arrays and NanoVDB grids: reading a grid (a file or a grid buffer) into
kernlab's flattened tree, building that tree from leaves, and writing a grid or a file back.
kernlab/volume.py is the host object that holds the arrays; kernlab/volume_queries.py reads
them in kernels.

NanoVDB. kernlab reads the segment format of NanoVDB 32.x: a 16-byte file header, per grid
a 176-byte metadata record and its name, then the grid itself, stored raw or as
zlib-compressed chunks. A grid's tree has root tiles, 32^3 upper nodes, 16^3 lower nodes
and 8^3 leaves; it is decoded with NumPy. float32, int32, vec3f and vec4f grids are
supported.

Layout. The decoded tree is one int32 array (``tree``)::

    tree[0:HEADER]                  value kind (1 float32, 2 vec3f, 3 int32), number of root
                                    tiles, start of the upper tables, start of the lower
                                    tables, first leaf value slot, start of int32 values
    tree[HEADER + 5t + 0..4]        root tile t: its key (i >> 12, j >> 12, k >> 12), the
                                    upper node below it or -1, its value slot
    tree[uppers + 32768u + n]       entry n of upper node u: a lower node (>= 0) or the
                                    value slot s of a tile, stored as -1 - s
    tree[lowers + 4096l + n]        entry n of lower node l: a leaf (>= 0) or -1 - slot
    tree[ints + s]                  int32 grids: the value in slot s

Every value has a slot: slot 0 is the background, then the distinct tile values, then the
leaves' 512 values each. float32 and vec3f values live in a float32 array (``values``) after
the index-to-world map: ``values[0:9]`` the matrix, ``[9:18]`` its inverse, ``[18:21]`` the
translation (NanoVDB's float copies, which Warp's float32 transforms use), then 1 or 3
floats per slot. The float64 map is a third array (``map64``), for the float64 overloads.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np


HEADER = 8
FLOAT_BASE = 21  # values[0:21]: matrix, inverse, translation (float32)
KIND_FLOAT, KIND_VEC3, KIND_INT, KIND_VEC4 = 1, 2, 3, 4

# NanoVDB grid types kernlab reads: code -> (kind, components, NumPy scalar, name, byte
# offsets: background in the root, root size, root tile value, table stride, upper table,
# upper size, lower table, lower size, leaf table, leaf size, root tile size)
_GRID_TYPES = {
    1: (KIND_FLOAT, 1, "<f4", "float", (28, 64, 20, 8, 8256, 270400, 1088, 33856, 96, 2144, 32)),
    4: (KIND_INT, 1, "<i4", "int32", (28, 64, 20, 8, 8256, 270400, 1088, 33856, 96, 2144, 32)),
    6: (KIND_VEC3, 3, "<f4", "Vec3f", (28, 96, 20, 16, 8256, 532544, 1088, 66624, 128, 6272,
                                       32)),
    17: (KIND_VEC4, 4, "<f4", "Vec4f", (28, 96, 20, 16, 8288, 532576, 1120, 66656, 128, 8320,
                                        64)),
}
_TYPE_NAMES = {0: "Unknown", 1: "float", 2: "double", 3: "int16", 4: "int32", 5: "int64",
               6: "Vec3f", 7: "Vec3d", 8: "Mask", 9: "Half", 10: "uint32", 11: "bool",
               12: "RGBA8", 13: "Fp4", 14: "Fp8", 15: "Fp16", 16: "FpN", 17: "Vec4f",
               18: "Vec4d", 19: "Index", 20: "OnIndex", 21: "IndexMask", 22: "OnIndexMask",
               23: "PointIndex", 24: "Vec3u8", 25: "Vec3u16", 26: "UInt8"}
_GRID_CODES = {KIND_FLOAT: 1, KIND_INT: 4, KIND_VEC3: 6, KIND_VEC4: 17}
_MAGICS = (0x304244566F6E614E, 0x314244566F6E614E, 0x324244566F6E614E)  # NanoVDB0/1/2
_VERSION = (32 << 21) | (6 << 10)  # what kernlab writes: NanoVDB 32.6


class VolumeError(RuntimeError):
    """A NanoVDB file or buffer kernlab cannot read (truncated, corrupt or unsupported)."""


# ---- NanoVDB decoding ------------------------------------------------------------------------

def grid_bytes(data: bytes) -> bytes:
    """The first grid's bytes: a raw grid buffer as is, a file decompressed."""
    if len(data) < 16:
        raise VolumeError(f"not a NanoVDB buffer: {len(data)} bytes, fewer than a header")
    magic, version, grid_count, codec = struct.unpack_from("<QIHH", data, 0)
    if magic not in _MAGICS:
        raise VolumeError("not a NanoVDB buffer: the 'NanoVDB' signature is missing")
    if _looks_like_grid(data):
        return data  # a grid buffer (GridData first), not a file
    if len(data) >= 40 and struct.unpack_from("<I", data, 16)[0] >> 21 == 32:
        size = struct.unpack_from("<Q", data, 32)[0]
        raise VolumeError(f"truncated NanoVDB grid: its header says {size} bytes, the buffer "
                          f"has {len(data)}")
    if version >> 21 != 32:
        raise VolumeError(f"unsupported NanoVDB version {version >> 21}.{(version >> 10) & 2047}"
                          " (kernlab reads 32.x)")
    if grid_count < 1:
        raise VolumeError("the NanoVDB file holds no grid")
    if codec not in (0, 1):
        what = {2: "BLOSC"}.get(codec, f"unknown codec {codec}")
        raise VolumeError(f"the NanoVDB file is compressed with {what}; kernlab reads "
                          "uncompressed and ZIP (zlib) files")
    pos, sizes = 16, []
    for _ in range(grid_count):  # the grids' metadata records, then their data
        if len(data) < pos + 176:
            raise VolumeError("truncated NanoVDB file: a grid's metadata is cut off")
        sizes.append(struct.unpack_from("<QQ", data, pos))
        pos += 176 + struct.unpack_from("<I", data, pos + 136)[0]
    grid_size, file_size = sizes[0]  # kernlab loads the first grid
    end = pos + file_size
    if end > len(data):
        raise VolumeError(f"truncated NanoVDB file: the grid needs {end} bytes, the file has "
                          f"{len(data)}")
    if codec == 0:
        grid = data[pos:end]
    else:
        chunks = []
        while pos < end:
            if pos + 8 > end:
                raise VolumeError("corrupt NanoVDB file: a compressed chunk's size is cut off")
            n = struct.unpack_from("<Q", data, pos)[0]
            pos += 8
            if pos + n > end:
                raise VolumeError("truncated NanoVDB file: a compressed chunk is cut off")
            try:
                chunks.append(zlib.decompress(data[pos:pos + n]))
            except zlib.error as e:
                raise VolumeError(f"corrupt NanoVDB file: its ZIP data does not inflate ({e})") \
                    from None
            pos += n
        grid = b"".join(chunks)
    if len(grid) < grid_size:
        raise VolumeError(f"truncated NanoVDB grid: {len(grid)} bytes, its header says "
                          f"{grid_size}")
    return grid


def _looks_like_grid(data: bytes) -> bool:
    """Whether ``data`` starts with a grid (GridData: its version at byte 16, its own size at
    byte 32) rather than a file header (its version at byte 8)."""
    if len(data) < 672:
        return False
    size = struct.unpack_from("<Q", data, 32)[0]
    return struct.unpack_from("<I", data, 16)[0] >> 21 == 32 and 672 <= size <= len(data)


def decode_grid(grid: bytes) -> dict:
    if len(grid) < 672 + 64 or struct.unpack_from("<Q", grid, 0)[0] not in _MAGICS:
        raise VolumeError("corrupt NanoVDB grid: no grid signature")
    gtype = struct.unpack_from("<I", grid, 636)[0]
    if gtype not in _GRID_TYPES:
        raise VolumeError("kernlab reads float, int32, Vec3f and Vec4f NanoVDB grids; this "
                          f"grid holds {_TYPE_NAMES.get(gtype, f'type {gtype}')} values")
    kind, comps, scalar, _, offs = _GRID_TYPES[gtype]
    (bg_off, root_size, tile_val, stride, up_table, up_size, lo_table, lo_size, leaf_table,
     leaf_size, tile_size) = offs
    mat = np.frombuffer(grid, "<f8", 9, 296 + 88).reshape(3, 3)
    vec = np.frombuffer(grid, "<f8", 3, 296 + 232)
    voxel_size = np.frombuffer(grid, "<f8", 3, 608)
    tree = 672
    off_leaf, off_lower, off_upper, off_root = struct.unpack_from("<QQQQ", grid, tree)
    n_leaf, n_lower, n_upper = struct.unpack_from("<III", grid, tree + 32)
    root = tree + off_root

    def need(start, size, what):
        if start < 0 or start + size > len(grid):
            raise VolumeError(f"corrupt or truncated NanoVDB grid: its {what} lie outside "
                              f"its {len(grid)} bytes")

    need(root, root_size, "root")
    n_tiles = struct.unpack_from("<I", grid, root + 24)[0]
    need(root + root_size, n_tiles * tile_size, "root tiles")
    need(tree + off_upper, n_upper * up_size, "upper nodes")
    need(tree + off_lower, n_lower * lo_size, "lower nodes")
    need(tree + off_leaf, n_leaf * leaf_size, "leaves")

    def values_at(start, count, step):
        """``count`` values, ``step`` bytes apart from byte ``start``: (count, comps)."""
        return np.ndarray((count, comps), scalar, grid, start, (step, 4)).copy()

    background = values_at(root + bg_off, 1, 4)[0]
    tiles = root + root_size
    tkeys = np.ndarray((n_tiles,), "<u8", grid, tiles, (tile_size,)).astype(np.uint64)
    tchild = np.ndarray((n_tiles,), "<i8", grid, tiles + 8, (tile_size,)).astype(np.int64)
    tvals = values_at(tiles + tile_val, n_tiles, tile_size)
    up_base = tree + off_upper
    t_upper = np.full(n_tiles, -1, np.int64)
    has = tchild != 0
    t_upper[has] = _node_index(root + tchild[has], up_base, up_size, n_upper, "upper")
    keys = np.stack([(tkeys >> np.uint64(s)) & np.uint64(0xFFFFF) for s in (42, 21, 0)], 1) \
        .astype(np.int64)
    keys = np.where(keys >= 1 << 19, keys - (1 << 20), keys)  # back to i >> 12, signed

    def node_tables(base, count, size, table, mask_off, entries, child_base, child_size,
                    n_child, what):
        if count == 0:
            return np.zeros((0, entries), np.int64), np.zeros((0, entries, comps), scalar)
        masks = np.ndarray((count, entries // 8), np.uint8, grid, base + mask_off,
                           (size, 1))
        is_child = np.unpackbits(masks, axis=1, bitorder="little").astype(bool)
        start = base + table
        raw = np.ndarray((count, entries), "<i8", grid, start, (size, stride))
        vals = np.ndarray((count, entries, comps), scalar, grid, start, (size, stride, 4))
        addrs = (base + np.arange(count, dtype=np.int64) * size)[:, None] + raw
        child = np.full((count, entries), -1, np.int64)
        child[is_child] = _node_index(addrs[is_child], child_base, child_size, n_child, what)
        return child, vals

    lo_base, leaf_base = tree + off_lower, tree + off_leaf
    up_child, up_vals = node_tables(up_base, n_upper, up_size, up_table, 4128, 32768,
                                    lo_base, lo_size, n_lower, "lower")
    lo_child, lo_vals = node_tables(lo_base, n_lower, lo_size, lo_table, 544, 4096,
                                    leaf_base, leaf_size, n_leaf, "leaf")
    leaves = np.ndarray((n_leaf, 512, comps), scalar, grid, leaf_base + leaf_table,
                        (leaf_size, 4 * comps, 4)).copy()
    masks = np.ndarray((n_leaf, 64), np.uint8, grid, leaf_base + 16, (leaf_size, 1)).copy()
    # a leaf stores the low corner of its active voxels: its origin is that rounded down to 8
    origins = np.ndarray((n_leaf, 3), "<i4", grid, leaf_base, (leaf_size, 4)).astype(np.int64) & ~7
    out = _pack(kind, background, keys, t_upper, tvals, up_child, up_vals, lo_child,
                lo_vals, leaves, origins, mat, vec, voxel_size)
    out["name"] = grid[40:296].split(b"\0", 1)[0].decode("utf-8", "replace")
    out["grid_size"] = struct.unpack_from("<Q", grid, 32)[0]
    out["leaf_masks"] = masks
    return out


def _node_index(addresses, base, size, count, what):
    rel = np.asarray(addresses, np.int64) - base
    index = rel // size
    if np.any(rel % size != 0) or np.any(index < 0) or np.any(index >= count):
        raise VolumeError(f"corrupt NanoVDB grid: a child pointer does not point at one of its "
                          f"{count} {what} nodes")
    return index


# ---- kernlab's arrays from a decoded tree or from leaves ----------------------------------

def _pack(kind, background, keys, t_upper, tvals, up_child, up_vals, lo_child, lo_vals,
          leaves, origins, mat, vec, voxel_size) -> dict:
    """The arrays of the module doc from a decoded tree."""
    comps = leaves.shape[2] if leaves.ndim == 3 else len(background)
    store = np.int32 if kind == KIND_INT else np.float32
    # the distinct tile values get slots 1.. (slot 0 is the background)
    tile_sel = [tvals[t_upper < 0], up_vals[up_child < 0], lo_vals[lo_child < 0]]
    all_tiles = np.concatenate([np.asarray(t, store).reshape(-1, comps) for t in tile_sel])
    uniq, inverse = (np.unique(all_tiles, axis=0, return_inverse=True) if len(all_tiles)
                     else (np.zeros((0, comps), store), np.zeros(0, np.int64)))
    inverse = np.asarray(inverse).reshape(-1)
    parts, start = [], 0
    for t in tile_sel:
        n = len(t)
        parts.append(inverse[start:start + n] + 1)
        start += n
    n_upper, n_lower = len(up_child), len(lo_child)
    leaf_slot = 1 + len(uniq)

    root = np.zeros((len(keys), 5), np.int64)
    root[:, 0:3] = keys
    root[:, 3] = t_upper
    root[t_upper < 0, 4] = parts[0]
    up = up_child.copy()
    up[up_child < 0] = -1 - parts[1]
    lo = lo_child.copy()
    lo[lo_child < 0] = -1 - parts[2]
    uppers = HEADER + 5 * len(keys)
    lowers = uppers + 32768 * n_upper
    ints = lowers + 4096 * n_lower
    slot_values = np.concatenate([np.asarray(background, store).reshape(1, comps), uniq,
                                  np.asarray(leaves, store).reshape(-1, comps)])
    n_slots = len(slot_values)
    if ints + (n_slots if kind == KIND_INT else 0) >= 2**31 or n_slots * comps >= 2**31:
        raise VolumeError("the volume is too large for kernlab (over 2**31 entries)")
    header = [kind, len(keys), uppers, lowers, leaf_slot, ints, 0, 0]
    tree = [np.asarray(header, np.int64), root.reshape(-1), up.reshape(-1), lo.reshape(-1)]
    minv = np.linalg.inv(mat)
    map32 = np.concatenate([mat.reshape(-1), minv.reshape(-1), vec]).astype(np.float32)
    if kind == KIND_INT:
        tree.append(slot_values.reshape(-1).astype(np.int64))
        values = map32
    else:
        values = np.concatenate([map32, slot_values.reshape(-1)])
    return {"kind": kind, "tree": np.concatenate(tree).astype(np.int32),
            "values": values.astype(np.float32),
            "map64": np.concatenate([mat.reshape(-1), minv.reshape(-1), vec]),
            "voxel_size": voxel_size, "leaf_origins": np.asarray(origins, np.int64)}


def from_leaves(kind, background, origins, blocks, mat, vec, voxel_size) -> dict:
    """A tree from leaves at ``origins`` (multiples of 8) holding ``blocks`` (n, 512, c);
    everything else is background."""
    comps = blocks.shape[2]
    store = blocks.dtype
    lower_keys = origins >> 7
    lo_unique, leaf_lower = np.unique(lower_keys, axis=0, return_inverse=True)
    leaf_lower = np.asarray(leaf_lower).reshape(-1)
    up_unique, lower_upper = np.unique(lo_unique >> 5, axis=0, return_inverse=True)
    lower_upper = np.asarray(lower_upper).reshape(-1)
    n_lo, n_up = len(lo_unique), len(up_unique)
    lo_child = np.full((n_lo, 4096), -1, np.int64)
    o = origins & 127
    lo_child[leaf_lower, ((o[:, 0] >> 3) << 8) + ((o[:, 1] >> 3) << 4) + (o[:, 2] >> 3)] = \
        np.arange(len(origins))
    up_child = np.full((n_up, 32768), -1, np.int64)
    lo_origin = lo_unique << 7
    o = lo_origin & 4095
    up_child[lower_upper, ((o[:, 0] >> 7) << 10) + ((o[:, 1] >> 7) << 5) + (o[:, 2] >> 7)] = \
        np.arange(n_lo)
    bg = np.asarray(background, store).reshape(comps)
    up_vals = np.broadcast_to(bg, (n_up, 32768, comps))
    lo_vals = np.broadcast_to(bg, (n_lo, 4096, comps))
    keys = up_unique.astype(np.int64)  # (i >> 12, ...) of each upper node
    return _pack(kind, bg, keys, np.arange(n_up), np.zeros((n_up, comps), store), up_child,
                 up_vals, lo_child, lo_vals, blocks, origins, mat, vec, voxel_size)


# ---- NanoVDB encoding ---------------------------------------------------------------------

def encode_grid(kind, tree, values, map64, voxel_size, name, origins, leaf_masks) -> bytes:
    """A NanoVDB grid buffer of a volume's arrays (module doc): its nodes in the order of
    kernlab's tables, the values it holds now. It keeps the values, the tree, the map and the
    leaves' active voxels (all active for a volume built here); tiles are written inactive
    and the nodes' statistics (min, max, average) and the inner nodes' boxes are left at
    zero (NanoVDB's readers use neither to find a value)."""
    gtype = _GRID_CODES[kind]
    _, comps, scalar, _, offs = _GRID_TYPES[gtype]
    (bg_off, root_size, tile_val, stride, up_table, up_size, lo_table, lo_size, leaf_table,
     leaf_size, tile_size) = offs
    n_root, uppers, lowers, leaf_slot, ints = (int(v) for v in tree[1:6])
    n_upper = (lowers - uppers) // 32768
    n_lower = (ints - lowers) // 4096
    n_leaf = len(origins)
    if kind == KIND_INT:
        slots = tree[ints:].astype("<i4").reshape(-1, 1)
    else:
        slots = values[FLOAT_BASE:].astype("<f4").reshape(-1, comps)
    slot_bytes = slots.view(np.uint8).reshape(len(slots), -1)
    root_off = 64
    up_off = root_off + root_size + tile_size * n_root
    lo_off = up_off + up_size * n_upper
    leaf_off = lo_off + lo_size * n_lower
    size = 672 + leaf_off + leaf_size * n_leaf
    g = np.zeros(size, np.uint8)
    # flags: the nodes of each level are stored together, level by level (breadth first)
    struct.pack_into("<QQIIII", g, 0, _MAGICS[0], 0, _VERSION, 1 << 5, 0, 1)
    struct.pack_into("<Q", g, 32, size)
    raw = (name or "").encode()[:255]
    g[40:40 + len(raw)] = np.frombuffer(raw, np.uint8)
    m = np.asarray(map64, np.float64)
    struct.pack_into("<9f9f3f", g, 296, *m[0:9], *m[9:18], *m[18:21])
    struct.pack_into("<f", g, 296 + 84, 1.0)
    struct.pack_into("<9d9d3d", g, 296 + 88, *m[0:9], *m[9:18], *m[18:21])
    struct.pack_into("<d", g, 296 + 256, 1.0)
    lo_corner = origins.min(0) if n_leaf else np.zeros(3, np.int64)
    hi_corner = origins.max(0) + 7 if n_leaf else np.zeros(3, np.int64)
    corners = np.array([[a, b, c] for a in (lo_corner[0], hi_corner[0] + 1)
                        for b in (lo_corner[1], hi_corner[1] + 1)
                        for c in (lo_corner[2], hi_corner[2] + 1)], np.float64)
    world = corners @ m[0:9].reshape(3, 3).T + m[18:21]
    struct.pack_into("<6d", g, 560, *world.min(0), *world.max(0))
    struct.pack_into("<3d", g, 608, *voxel_size)
    struct.pack_into("<II", g, 632, 0, gtype)
    tree_at = 672
    struct.pack_into("<QQQQIII", g, tree_at, leaf_off, lo_off, up_off, root_off, n_leaf,
                     n_lower, n_upper)
    struct.pack_into("<Q", g, tree_at + 56, 512 * n_leaf)
    root = tree_at + root_off

    def put_value(at, slot):
        g[at:at + 4 * comps] = slot_bytes[slot]

    struct.pack_into("<6i", g, root, *lo_corner, *hi_corner)
    struct.pack_into("<I", g, root + 24, n_root)
    put_value(root + bg_off, 0)
    for t in range(n_root):
        ki, kj, kk, up, slot = (int(v) for v in tree[HEADER + 5 * t: HEADER + 5 * t + 5])
        key = ((ki & 0xFFFFF) << 42) | ((kj & 0xFFFFF) << 21) | (kk & 0xFFFFF)
        at = root + root_size + tile_size * t
        child = up_off + up_size * up - root_off if up >= 0 else 0
        struct.pack_into("<Qq", g, at, key, child)
        if up < 0:
            put_value(at + tile_val, slot)

    def node_tables(base, count, size, table, mask_off, entries, first, child_base,
                    child_size):
        e = tree[first: first + count * entries].astype(np.int64).reshape(count, entries)
        for n in range(count):
            at = tree_at + base + size * n
            is_child = e[n] >= 0
            g[at + mask_off: at + mask_off + entries // 8] = \
                np.packbits(is_child, bitorder="little")
            rows = g[at + table: at + table + stride * entries].reshape(entries, stride)
            tiles = ~is_child
            rows[tiles, :4 * comps] = slot_bytes[-1 - e[n][tiles]]
            off = (child_base + child_size * e[n][is_child]) - (base + size * n)
            rows[is_child, :8] = off.astype("<i8").view(np.uint8).reshape(-1, 8)

    node_tables(up_off, n_upper, up_size, up_table, 4128, 32768, uppers, lo_off, lo_size)
    node_tables(lo_off, n_lower, lo_size, lo_table, 544, 4096, lowers, leaf_off, leaf_size)
    for n in range(n_leaf):
        at = tree_at + leaf_off + leaf_size * n
        struct.pack_into("<3iBBBB", g, at, *origins[n], 7, 7, 7, 0)
        g[at + 16: at + 80] = 255 if leaf_masks is None else leaf_masks[n]
        first = leaf_slot + 512 * n
        g[at + leaf_table: at + leaf_table + 512 * 4 * comps] = \
            slot_bytes[first: first + 512].reshape(-1)
    return g.tobytes()


def file_bytes(grid: bytes, kind: int, name: str, voxel_count: int, voxel_size,
               codec: str) -> bytes:
    """A NanoVDB file holding the one ``grid``: the file header, the grid's metadata record
    and name, then the grid (codec "none": as it is; "zip": one zlib chunk)."""
    codes = {"none": 0, "zip": 1}
    if codec not in codes:
        raise RuntimeError(f"kernlab writes NanoVDB files with codec 'none' or 'zip', not "
                           f"{codec!r}")
    name = (name or "").encode()[:255] + b"\0"
    body = grid if codec == "none" else \
        struct.pack("<Q", len(zlib.compress(grid))) + zlib.compress(grid)
    meta = bytearray(176)
    gtype = _GRID_CODES[kind]
    struct.pack_into("<QQ", meta, 0, len(grid), len(body))
    struct.pack_into("<Q", meta, 24, voxel_count)
    struct.pack_into("<I", meta, 32, gtype)
    struct.pack_into("<3d", meta, 112, *voxel_size)
    struct.pack_into("<I", meta, 136, len(name))
    struct.pack_into("<HHI", meta, 168, codes[codec], 0, _VERSION)
    head = struct.pack("<QIHH", _MAGICS[0], _VERSION, 1, codes[codec])
    return head + bytes(meta) + name + body
