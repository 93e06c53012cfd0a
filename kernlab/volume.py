"""``kl.Volume``: a sparse voxel grid read from NanoVDB, as Warp's ``wp.Volume``.

Host side, ``kl.Volume.load_from_nvdb(file_or_bytes)`` reads a NanoVDB file or grid buffer
and ``kl.Volume.load_from_numpy(values, min_world, voxel_size, bg_value)`` builds the same
tree from a dense array; ``allocate`` and ``allocate_by_tiles`` make one of background
leaves. float32, int32, vec3f and vec4f grids are supported. Kernels take ``volume.id`` as a
``uint64`` parameter and call the ``volume_*`` functions (frontend/volume.py). This module
is the host object: the constructors' checks, introspection, the handle a launch turns into
arrays and the Python names kernels call. The NanoVDB format and the flattened arrays a
volume keeps (``tree``, ``values``, ``map64``) are kernlab/volume_nanovdb.py's.

The lookups and the trilinear sampling are written in kernlab's kernel language in
kernlab/volume_queries.py, so every backend runs the same code. Reverse mode differentiates
the sampling with respect to the point (the voxel values and the map reach kernels without a
gradient, as in Warp).
"""
from __future__ import annotations

import collections
import itertools
import math
import weakref

import numpy as np

import kernlab as kl
from .handles import kernel_only, live_object, register
from .volume_nanovdb import (KIND_FLOAT, KIND_INT, KIND_VEC3, KIND_VEC4, decode_grid,
                             encode_grid, file_bytes, from_leaves, grid_bytes)
from .volume_nanovdb import VolumeError  # noqa: F401  (kernlab.volume.VolumeError, as before)

CLOSEST, LINEAR = 0, 1
_VOLUMES: "weakref.WeakValueDictionary[int, Volume]" = weakref.WeakValueDictionary()
_IDS = itertools.count(0x4B56_0000_0001)  # opaque uint64 handles, never addresses

_DTYPES = {KIND_FLOAT: kl.float32, KIND_VEC3: kl.vec3, KIND_INT: kl.int32, KIND_VEC4: kl.vec4}
_KIND_NAMES = {KIND_FLOAT: "float", KIND_VEC3: "Vec3f", KIND_INT: "int32", KIND_VEC4: "Vec4f"}
_SUPPORTED = "float32, int32, vec3f or vec4f"


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
        self._setup(decode_grid(grid_bytes(bytes(raw))), device)

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
        return cls._make(decode_grid(grid_bytes(bytes(data))), device)

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
        return cls._make(from_leaves(kind, bg, origins, blocks, mat, vec, size), device)

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
        return cls._make(from_leaves(kind, bg, origins, blocks, mat,
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
        included); see volume_nanovdb.encode_grid for what it keeps."""
        data = np.frombuffer(self._encode(), np.uint8)
        return kl.array(data, dtype=kl.uint8, device=self.device)

    def save_to_nvdb(self, path, codec: str = "none") -> None:
        """Write the volume as a NanoVDB file (codec "none" or "zip")."""
        data = file_bytes(self._encode(), self._kind, self._name, self.get_voxel_count(),
                          self._voxel_size, codec)
        with open(path, "wb") as f:
            f.write(data)

    def _encode(self) -> bytes:
        return encode_grid(self._kind, self._tree.numpy(), self._values.numpy(),
                           self._transform64, self._voxel_size, self._name,
                           self._leaf_origins, self._leaf_masks)

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


def volume_arrays(kernel_key: str, param: str, volume_id) -> tuple:
    """(tree, values, map64) of the volume whose id a launch passes for ``param``."""
    vol = live_object(_VOLUMES, kernel_key, param, volume_id, "volume", "Volume", "volume")
    return vol._kernel_arrays()


KERNEL_ARRAYS = (("volume_tree", kl.int32), ("volume_values", kl.float32),
                 ("volume_map64", kl.float64))
register("volume", "volume", KERNEL_ARRAYS, volume_arrays)


# ---- Python stand-ins: these names are what kernels call -------------------------------

FUNCTIONS = ("volume_sample", "volume_sample_grad", "volume_lookup", "volume_sample_f",
             "volume_sample_grad_f", "volume_lookup_f", "volume_sample_v", "volume_lookup_v",
             "volume_sample_i", "volume_lookup_i", "volume_index_to_world",
             "volume_world_to_index", "volume_index_to_world_dir", "volume_world_to_index_dir",
             "volume_store", "volume_store_f", "volume_store_v", "volume_store_i")
for _name in FUNCTIONS:
    globals()[_name] = kernel_only(_name, __name__)
del _name
