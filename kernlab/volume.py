"""``kl.Volume``: a sparse voxel grid read from NanoVDB, as Warp's ``wp.Volume``.

Host side, ``kl.Volume.load_from_nvdb(file_or_bytes)`` reads a NanoVDB file (the segment
format of NanoVDB 32.x: a 16-byte file header, per grid a 176-byte metadata record and its
name, then the grid itself, stored raw or as zlib-compressed chunks) and decodes the grid's
tree (root tiles, 32^3 upper nodes, 16^3 lower nodes, 8^3 leaves) with NumPy.
``kl.Volume.load_from_numpy(values, min_world, voxel_size, bg_value)`` builds the same tree
from a dense array. float32, int32 and vec3f grids are supported. Kernels take ``volume.id``
as a ``uint64`` parameter and call the ``volume_*`` functions (frontend/volume.py).

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

The lookups and the trilinear sampling are written in kernlab's kernel language in
kernlab/volume_queries.py, so every backend runs the same code. Reverse mode differentiates
the sampling with respect to the point (the voxel values and the map reach kernels without a
gradient, as in Warp).
"""
from __future__ import annotations

import collections
import itertools
import math
import struct
import weakref
import zlib

import numpy as np

import kernlab as kl
from .handles import register

HEADER = 8
FLOAT_BASE = 21  # values[0:21]: matrix, inverse, translation (float32)
KIND_FLOAT, KIND_VEC3, KIND_INT, KIND_VEC4 = 1, 2, 3, 4
CLOSEST, LINEAR = 0, 1
_VOLUMES: "weakref.WeakValueDictionary[int, Volume]" = weakref.WeakValueDictionary()
_IDS = itertools.count(0x4B56_0000_0001)  # opaque uint64 handles, never addresses

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
_DTYPES = {KIND_FLOAT: kl.float32, KIND_VEC3: kl.vec3, KIND_INT: kl.int32, KIND_VEC4: kl.vec4}
_KIND_NAMES = {KIND_FLOAT: "float", KIND_VEC3: "Vec3f", KIND_INT: "int32", KIND_VEC4: "Vec4f"}
_SUPPORTED = "float32, int32, vec3f or vec4f"
_GRID_CODES = {KIND_FLOAT: 1, KIND_INT: 4, KIND_VEC3: 6, KIND_VEC4: 17}
_COMPONENTS = {KIND_FLOAT: 1, KIND_INT: 1, KIND_VEC3: 3, KIND_VEC4: 4}
_MAGICS = (0x304244566F6E614E, 0x314244566F6E614E, 0x324244566F6E614E)  # NanoVDB0/1/2
_VERSION = (32 << 21) | (6 << 10)  # what kernlab writes: NanoVDB 32.6


class VolumeError(RuntimeError):
    """A NanoVDB file or buffer kernlab cannot read (truncated, corrupt or unsupported)."""


class Volume:
    """A sparse volume on ``device``; see the module doc. Make one with
    :meth:`load_from_nvdb`, :meth:`load_from_numpy`, :meth:`allocate`,
    :meth:`allocate_by_tiles` or ``kl.Volume(grid_buffer)``."""

    CLOSEST = CLOSEST
    LINEAR = LINEAR
    GridInfo = collections.namedtuple("GridInfo", ["name", "size_in_bytes", "grid_index",
                                                   "grid_count", "type_str", "translation",
                                                   "transform_matrix"])

    def __init__(self, data, copy: bool = True):
        """A volume from a NanoVDB grid buffer: a uint8 array (``volume.array()`` of another
        volume) or bytes. ``copy`` is accepted for Warp's signature: kernlab always decodes
        the buffer into its own arrays."""
        raw = data.numpy() if hasattr(data, "numpy") else data
        if isinstance(raw, np.ndarray):
            raw = np.ascontiguousarray(raw).tobytes()
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            raise TypeError("kl.Volume(data) takes a NanoVDB grid buffer (a uint8 array or "
                            f"bytes), got {type(data).__name__}")
        device = getattr(data, "device", None)
        self._setup(_decode_grid(_grid_bytes(bytes(raw))), device)

    @classmethod
    def _make(cls, decoded: dict, device) -> "Volume":
        self = object.__new__(cls)
        self._setup(decoded, device)
        return self

    def _setup(self, decoded: dict, device) -> None:
        self.device = kl.get_device(device)
        self.dtype = _DTYPES[decoded["kind"]]
        self._kind = decoded["kind"]
        self._voxel_size = tuple(float(v) for v in decoded["voxel_size"])
        self._leaf_origins = decoded["leaf_origins"]
        self._transform64 = decoded["map64"]
        self._name = decoded.get("name", "")
        self._leaf_masks = decoded.get("leaf_masks")  # active voxels (all, when built here)
        self._grid_size = int(decoded.get("grid_size", 0))
        self._tree = kl.array(decoded["tree"], dtype=kl.int32, device=self.device)
        self._values = kl.array(decoded["values"], dtype=kl.float32, device=self.device)
        self._map64 = kl.array(decoded["map64"], dtype=kl.float64, device=self.device)
        self.id = next(_IDS)
        _VOLUMES[self.id] = self

    # ---- loading -------------------------------------------------------------------------

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> "Volume":
        """A volume from a NanoVDB file object or its bytes (its first grid)."""
        data = file_or_buffer.read() if hasattr(file_or_buffer, "read") else file_or_buffer
        if isinstance(data, np.ndarray):
            data = data.tobytes()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("kl.Volume.load_from_nvdb takes a file opened in binary mode or "
                            f"bytes, got {type(file_or_buffer).__name__}")
        return cls._make(_decode_grid(_grid_bytes(bytes(data))), device)

    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0,
                        bg_value=0.0, device=None) -> "Volume":
        """A volume holding a dense array: voxel (i, j, k) has ``ndarray[i, j, k]`` and sits
        at ``min_world + (i, j, k) * voxel_size``. A 4-d array with 3 components and a
        3-component ``bg_value`` makes a vec3f volume; an int ``bg_value`` an int32 volume;
        otherwise float32."""
        a = np.asarray(ndarray)
        size = _voxel_size3(voxel_size)
        kind, comps, bg = _value_kind(bg_value)
        if comps > 1 and (a.ndim != 4 or a.shape[3] != comps):
            raise ValueError(f"a vec{comps} volume needs an array of shape (nx, ny, nz, "
                             f"{comps}), got {a.shape}")
        if comps == 1 and a.ndim != 3:
            raise ValueError(f"load_from_numpy needs a 3-d array, got shape {a.shape}")
        if min(a.shape[:3]) == 0:
            raise ValueError(f"load_from_numpy needs a non-empty array, got shape {a.shape}")
        store = np.int32 if kind == KIND_INT else np.float32
        nb = [math.ceil(n / 8) for n in a.shape[:3]]
        padded = np.empty((nb[0] * 8, nb[1] * 8, nb[2] * 8, comps), store)
        padded[...] = bg
        padded[:a.shape[0], :a.shape[1], :a.shape[2]] = a.reshape(a.shape[:3] + (comps,))
        # leaf (bi, bj, bk) holds voxels 8*bi .. 8*bi + 7 (i, then j, then k fastest)
        blocks = padded.reshape(nb[0], 8, nb[1], 8, nb[2], 8, comps) \
                       .transpose(0, 2, 4, 1, 3, 5, 6).reshape(-1, 512, comps)
        origins = np.stack(np.meshgrid(*[np.arange(n) * 8 for n in nb], indexing="ij"),
                           -1).reshape(-1, 3)
        mat = np.diag(np.asarray(size, np.float64))
        vec = np.asarray(min_world, np.float64)
        return cls._make(_from_leaves(kind, bg, origins, blocks, mat, vec, size), device)

    @classmethod
    def allocate(cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                 points_in_world_space: bool = False, device=None) -> "Volume":
        """A volume whose leaves cover voxels ``min`` .. ``max`` (inclusive; index space, or
        world space with ``points_in_world_space``), every voxel holding ``bg_value``."""
        size = _voxel_size3(voxel_size)
        lo, hi = np.asarray(min, np.float64), np.asarray(max, np.float64)
        if points_in_world_space:
            t = np.asarray(translation, np.float32)
            s32 = np.asarray(size, np.float32)
            lo = np.around((lo.astype(np.float32) - t) / s32)
            hi = np.around((hi.astype(np.float32) - t) / s32)
        t_lo, t_hi = lo.astype(np.int32) // 8, hi.astype(np.int32) // 8
        axes = [np.arange(a, b + 1) for a, b in zip(t_lo, t_hi)]
        tiles = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3) * 8
        return cls.allocate_by_tiles(tiles, size, bg_value, translation, device)

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size, bg_value=0.0,
                          translation=(0.0, 0.0, 0.0), device=None) -> "Volume":
        """A volume with one leaf (8^3 voxels, all ``bg_value``) for each index-space point
        of ``tile_points`` (an array of vec3i, or int32 of shape (n, 3))."""
        size = _voxel_size3(voxel_size)
        kind, comps, bg = _value_kind(bg_value)
        pts = tile_points.numpy() if hasattr(tile_points, "numpy") else np.asarray(tile_points)
        pts = np.asarray(pts)
        if pts.ndim != 2 or pts.shape[1] != 3 or pts.dtype.kind not in "iu":
            raise TypeError("allocate_by_tiles takes integer index-space tile points (vec3i or "
                            f"int32 of shape (n, 3)); got {pts.dtype} of shape {pts.shape}")
        origins = np.unique((pts.astype(np.int64) >> 3) << 3, axis=0)
        blocks = np.empty((len(origins), 512, comps), bg.dtype)
        blocks[...] = bg
        mat = np.diag(np.asarray(size, np.float64))
        return cls._make(_from_leaves(kind, bg, origins, blocks, mat,
                                      np.asarray(translation, np.float64), size), device)

    def __del__(self):
        """Forget the volume's id (an id of a deleted volume is refused at launch)."""
        vid = getattr(self, "id", None)
        if vid is not None and _VOLUMES.get(vid) is self:
            del _VOLUMES[vid]

    # ---- introspection -------------------------------------------------------------------

    def get_voxel_size(self) -> tuple:
        return self._voxel_size

    def get_tile_count(self) -> int:
        return len(self._leaf_origins)

    def get_tiles(self):
        """The index-space origins of the leaves (8^3 voxels each): int32, shape (n, 3)."""
        return kl.array(self._leaf_origins.astype(np.int32), dtype=kl.int32,
                        device=self.device)

    def get_voxel_count(self) -> int:
        """Every voxel of every leaf (as Warp counts for value grids)."""
        return 512 * len(self._leaf_origins)

    def get_voxels(self):
        """The index-space coordinates of every leaf voxel, leaf by leaf: int32 (n, 3)."""
        n = np.arange(512)
        local = np.stack([n >> 6, (n >> 3) & 7, n & 7], 1)
        ijk = (self._leaf_origins[:, None, :] + local[None]).reshape(-1, 3)
        return kl.array(ijk.astype(np.int32), dtype=kl.int32, device=self.device)

    def get_grid_info(self) -> "Volume.GridInfo":
        m = self._transform64
        size = self._grid_size or len(self._encode())  # a volume built here: its encoding's
        return Volume.GridInfo(self._name, size, 0, 1, _KIND_NAMES[self._kind],
                               kl.vec3(*[float(v) for v in m[18:21]]),
                               kl.mat33(*[float(v) for v in m[0:9]]))

    def array(self):
        """The volume as a NanoVDB grid buffer (uint8), with the values it holds now (stores
        included); see :func:`_encode` for what it keeps."""
        data = np.frombuffer(self._encode(), np.uint8)
        return kl.array(data, dtype=kl.uint8, device=self.device)

    def save_to_nvdb(self, path, codec: str = "none") -> None:
        """Write the volume as a NanoVDB file (codec "none" or "zip")."""
        codes = {"none": 0, "zip": 1}
        if codec not in codes:
            raise RuntimeError(f"kernlab writes NanoVDB files with codec 'none' or 'zip', not "
                               f"{codec!r}")
        grid = self._encode()
        name = (self._name or "").encode()[:255] + b"\0"
        body = grid if codec == "none" else \
            struct.pack("<Q", len(zlib.compress(grid))) + zlib.compress(grid)
        meta = bytearray(176)
        gtype = _GRID_CODES[self._kind]
        struct.pack_into("<QQ", meta, 0, len(grid), len(body))
        struct.pack_into("<Q", meta, 24, self.get_voxel_count())
        struct.pack_into("<I", meta, 32, gtype)
        struct.pack_into("<3d", meta, 112, *self._voxel_size)
        struct.pack_into("<I", meta, 136, len(name))
        struct.pack_into("<HHI", meta, 168, codes[codec], 0, _VERSION)
        head = struct.pack("<QIHH", _MAGICS[0], _VERSION, 1, codes[codec])
        with open(path, "wb") as f:
            f.write(head + bytes(meta) + name + body)

    def _encode(self) -> bytes:
        return _encode(self._kind, self._tree.numpy(), self._values.numpy(),
                       self._transform64, self._voxel_size, self._name, self._leaf_origins,
                       self._leaf_masks)

    def index_to_world(self, uvw) -> tuple:
        """Host side: a point in index space to world space (float64 map)."""
        m = self._transform64
        return tuple(m[0:9].reshape(3, 3) @ np.asarray(uvw, np.float64) + m[18:21])

    def world_to_index(self, xyz) -> tuple:
        m = self._transform64
        return tuple(m[9:18].reshape(3, 3) @ (np.asarray(xyz, np.float64) - m[18:21]))

    def _kernel_arrays(self) -> tuple:
        return self._tree, self._values, self._map64

    def __repr__(self):
        return (f"<kernlab Volume {self.dtype.__name__} {len(self._leaf_origins)} leaves on "
                f"{self.device}>")


def _voxel_size3(voxel_size) -> tuple:
    """A scalar or 3 numbers as 3 positive finite floats (TypeError for anything else)."""
    if isinstance(voxel_size, (int, float, np.integer, np.floating)) and \
            not isinstance(voxel_size, bool):
        size = (float(voxel_size),) * 3
    elif isinstance(voxel_size, (list, tuple, np.ndarray)):
        size = tuple(float(v) for v in np.asarray(voxel_size).reshape(-1))
        if len(size) != 3:
            raise ValueError(f"voxel_size must be a number or 3 numbers, got {len(size)}")
    else:
        raise TypeError("voxel_size must be a number or a sequence of 3 numbers, got "
                        f"{type(voxel_size).__name__}")
    if not all(math.isfinite(v) and v > 0.0 for v in size):
        raise ValueError(f"voxel_size must be positive and finite, got {voxel_size!r}")
    return size


def _value_kind(bg_value):
    """(kind, components, background as a NumPy row) of a volume with ``bg_value``."""
    if bg_value is None:
        raise NotImplementedError(f"kernlab volumes hold {_SUPPORTED} values; index volumes "
                                  "(bg_value=None) are not supported")
    if hasattr(bg_value, "__len__"):
        wide = np.asarray(bg_value).dtype == np.float64 and not isinstance(bg_value, (list, tuple))
        if len(bg_value) not in (3, 4) or wide:
            raise NotImplementedError(f"kernlab volumes hold {_SUPPORTED} values; a "
                                      f"{len(bg_value)}-component {np.asarray(bg_value).dtype} "
                                      "bg_value is not supported")
        kind = KIND_VEC3 if len(bg_value) == 3 else KIND_VEC4
        return kind, len(bg_value), np.asarray([float(v) for v in bg_value], np.float32)
    if isinstance(bg_value, (int, np.integer)) and not isinstance(bg_value, bool):
        return KIND_INT, 1, np.asarray([bg_value], np.int32)
    return KIND_FLOAT, 1, np.asarray([float(bg_value)], np.float32)


# ---- NanoVDB decoding ------------------------------------------------------------------------

def _grid_bytes(data: bytes) -> bytes:
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


def _decode_grid(grid: bytes) -> dict:
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
    n_upper, n_lower, n_leaf = len(up_child), len(lo_child), len(leaves)
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


def _from_leaves(kind, background, origins, blocks, mat, vec, voxel_size) -> dict:
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


def _encode(kind, tree, values, map64, voxel_size, name, origins, leaf_masks) -> bytes:
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


def volume_arrays(kernel_key: str, param: str, volume_id) -> tuple:
    """(tree, values, map64) of the volume whose id a launch passes for ``param``."""
    from .errors import LaunchError
    vol = _VOLUMES.get(int(volume_id)) if isinstance(volume_id, (int, np.integer)) else None
    if vol is None:
        raise LaunchError(f"kernel '{kernel_key}': argument '{param}' is used as a volume but "
                          f"{volume_id!r} is not the id of a live kl.Volume (pass volume.id)")
    return vol._kernel_arrays()


KERNEL_ARRAYS = (("volume_tree", kl.int32), ("volume_values", kl.float32),
                 ("volume_map64", kl.float64))
register("volume", "volume", KERNEL_ARRAYS, volume_arrays)


# ---- Python stand-ins: these names are what kernels call -------------------------------

def _kernel_only(name):
    def f(*args, **kwargs):
        raise RuntimeError(f"{name} can only be called inside a kernel")
    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = f"In kernels only; see the kernlab builtin reference for {name}."
    return f


FUNCTIONS = ("volume_sample", "volume_sample_grad", "volume_lookup", "volume_sample_f",
             "volume_sample_grad_f", "volume_lookup_f", "volume_sample_v", "volume_lookup_v",
             "volume_sample_i", "volume_lookup_i", "volume_index_to_world",
             "volume_world_to_index", "volume_index_to_world_dir", "volume_world_to_index_dir",
             "volume_store", "volume_store_f", "volume_store_v", "volume_store_i")
for _name in FUNCTIONS:
    globals()[_name] = _kernel_only(_name)
del _name
