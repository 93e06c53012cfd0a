"""``kl.HashGrid``: neighbour search over points, as Warp's ``wp.HashGrid``.

Host side, ``grid = kl.HashGrid(dim_x, dim_y, dim_z)`` then ``grid.build(points, radius)``
(points: an array of vec3) sorts the points into cubic cells of width ``radius``; cell
coordinates wrap around the grid's dimensions (a hash), so any space is covered. Kernels
take ``grid.id`` as a ``uint64`` parameter and use

* ``hash_grid_query(grid, p, r)``: a query over every point in the cells that the box
  ``p ± r`` touches (a superset of the points within ``r``: test the distance yourself);
* ``for index in query:`` or ``while hash_grid_query_next(query, index):`` to visit them;
* ``hash_grid_point_id(grid, i)``: the i-th point in cell order (ordering threads by cell
  keeps neighbours together, as in Warp's examples); -1 before a build or out of range.

The grid's cells and sorted point indices live in one int32 array and its inverse cell
width in a float32 array; a kernel that queries a grid parameter gets both as hidden
parameters, which the launch fills from the grid whose id it is given (frontend/hashgrid.py).
The query walk below is written in kernlab's own kernel language, so every backend runs
the same code. It visits cells z, then y, then x outermost-last, and the points of a cell in
the order of their indices, as Warp does, so sums over neighbours add in Warp's order.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

import kernlab as kl
from .handles import live_object, register
from .runtime.array import array

HEADER = 5  # ints[0:5] = dim_x, dim_y, dim_z, number of points, built (0 or 1)
_INT_MAX = 2**31 - 1
_GRIDS: "weakref.WeakValueDictionary[int, HashGrid]" = weakref.WeakValueDictionary()
_IDS = itertools.count(0x4B4C_0000_0001)  # ids are opaque uint64 handles, never addresses


class HashGrid:
    """A hash grid of ``dim_x * dim_y * dim_z`` cells on ``device``; see the module doc."""

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device=None, dtype=None):
        if dtype not in (None, kl.float32, float, kl.vec3):
            raise TypeError(f"kl.HashGrid supports float32 points (vec3) only, not {dtype}")
        try:
            dims = [int(d) for d in (dim_x, dim_y, dim_z)]
        except (TypeError, ValueError):
            raise TypeError("HashGrid dimensions must be integers") from None
        if min(dims) <= 0:
            raise RuntimeError("Hash grid dimensions must be positive")
        if dims[0] * dims[1] * dims[2] > (_INT_MAX - HEADER) // 2:
            raise RuntimeError(f"Hash grid has too many cells ({dims[0]}*{dims[1]}*{dims[2]})")
        self.dim_x, self.dim_y, self.dim_z = dims
        self.device = kl.get_device(device)
        self.dtype = kl.float32
        self.id = next(_IDS)
        self.reserved = False
        self._pack(np.zeros(0, np.int64), np.zeros(self.num_cells, np.int32),
                   np.zeros(self.num_cells, np.int32), built=0)
        self._inv = kl.zeros(1, dtype=kl.float32, device=self.device)
        _GRIDS[self.id] = self

    @property
    def num_cells(self) -> int:
        return self.dim_x * self.dim_y * self.dim_z

    def _pack(self, point_ids, starts, ends, built):
        dims = [self.dim_x, self.dim_y, self.dim_z, len(point_ids), built]
        packed = np.concatenate([np.asarray(dims, np.int64), starts, ends, point_ids])
        self._ints = kl.array(packed.astype(np.int32), dtype=kl.int32, device=self.device)

    def reserve(self, num_points: int) -> None:
        """Accepted for Warp's API: kernlab sizes the grid's arrays at each build."""
        if num_points < 0:
            raise ValueError("num_points must be non-negative")
        self.reserved = True

    def build(self, points: array, radius: float, groups=None) -> None:
        """Sort ``points`` (an array of vec3) into cells of width ``radius``."""
        if groups is not None:
            raise NotImplementedError("kl.HashGrid.build: point groups are not supported yet")
        if not isinstance(points, array) or points.dtype != kl.vec3 or points.ndim != 1:
            got = getattr(points, "dtype", type(points).__name__)
            raise TypeError(f"Hash grid points should have type vec3f, got {got}")
        if not radius > 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if points.device != self.device:
            raise ValueError(f"Hash grid points are on {points.device}, the grid on "
                             f"{self.device}")
        inv = np.float32(1.0) / np.float32(radius)
        p = points.numpy().astype(np.float32)
        coords = [_cell_coord(p[:, k] * inv) for k in range(3)]
        cells = _cell_index(self.dim_x, self.dim_y, self.dim_z, *coords)
        order = np.argsort(cells, kind="stable")  # within a cell, by point index
        sorted_cells = cells[order]
        n = self.num_cells
        starts = np.searchsorted(sorted_cells, np.arange(n), side="left").astype(np.int32)
        ends = np.searchsorted(sorted_cells, np.arange(n), side="right").astype(np.int32)
        self._pack(order.astype(np.int64), starts, ends, built=1)
        self._inv = kl.array(np.array([inv], np.float32), dtype=kl.float32,
                             device=self.device)

    def __repr__(self):
        return f"<kernlab HashGrid {self.dim_x}x{self.dim_y}x{self.dim_z} on {self.device}>"


def _cell_coord(v: np.ndarray) -> np.ndarray:
    """floor(v) as int32: beyond int32 at the top INT_MAX - 1, at the bottom INT_MIN; NaN 0
    (Warp's rule)."""
    c = np.floor(v.astype(np.float32))
    out = np.zeros(c.shape, np.int64)
    with np.errstate(invalid="ignore"):
        top, mid, low = c >= 2147483648.0, (c >= -2147483648.0) & (c < 2147483648.0), \
            c < -2147483648.0
    out[top] = _INT_MAX - 1
    out[mid] = c[mid].astype(np.int64)
    out[low] = -(2**31)
    return out


def _cell_index(dx, dy, dz, x, y, z) -> np.ndarray:
    cx, cy, cz = np.fmod(x, dx), np.fmod(y, dy), np.fmod(z, dz)
    cx = np.where(cx < 0, cx + dx, cx)
    cy = np.where(cy < 0, cy + dy, cy)
    cz = np.where(cz < 0, cz + dz, cz)
    return (cz * (dx * dy) + cy * dx + cx).astype(np.int64)


def grid_arrays(kernel_key: str, param: str, grid_id) -> tuple:
    """(ints, inverse cell width) of the grid whose id a launch passes for ``param``."""
    grid = live_object(_GRIDS, kernel_key, param, grid_id, "hash grid", "HashGrid", "grid")
    return grid._ints, grid._inv


register("hash_grid", "hash grid", (("hash_grid", kl.int32), ("hash_grid_inv_width", kl.float32)),
         grid_arrays)


def hash_grid_query(grid, point, radius):
    """In kernels: a query over the points near ``point`` (see the module doc)."""
    raise RuntimeError("hash_grid_query can only be called inside a kernel")


def hash_grid_query_next(query, index):
    """In kernels: advance ``query``; True and ``index`` set to the next point, or False."""
    raise RuntimeError("hash_grid_query_next can only be called inside a kernel")


def hash_grid_point_id(grid, index):
    """In kernels: the index-th point of ``grid`` in cell order."""
    raise RuntimeError("hash_grid_point_id can only be called inside a kernel")


# ---- the query walk, in kernlab's kernel language (called by frontend/hashgrid.py) --------

@kl.func
def cell_coord(v: float) -> int:
    c = kl.floor(v)
    if c >= 2147483648.0:
        return 2147483646
    if c >= -2147483648.0:
        return int(c)
    if c < -2147483648.0:
        return -2147483647 - 1
    return 0  # NaN


@kl.func
def cell_of(ints: kl.array(dtype=kl.int32), x: int, y: int, z: int) -> int:
    dx = ints[0]
    dy = ints[1]
    dz = ints[2]
    cx = x % dx
    cy = y % dy
    cz = z % dz
    if cx < 0:
        cx += dx
    if cy < 0:
        cy += dy
    if cz < 0:
        cz += dz
    return cz * (dx * dy) + cy * dx + cx


@kl.func
def cell_range(ints: kl.array(dtype=kl.int32), cell: int):
    n = ints[0] * ints[1] * ints[2]
    return ints[HEADER + cell], ints[HEADER + n + cell]


@kl.func
def query_end(start: int, end: int, dim: int) -> int:
    if kl.int64(end) - kl.int64(start) >= kl.int64(dim):  # at most every cell once
        return start + (dim - 1)
    return end


@kl.func
def query_start(ints: kl.array(dtype=kl.int32), inv: kl.array(dtype=kl.float32),
                p: kl.vec3, r: float):
    """The query box in cells, and the first cell's range of sorted points."""
    w = inv[0]
    x0 = cell_coord((p[0] - r) * w)
    y0 = cell_coord((p[1] - r) * w)
    z0 = cell_coord((p[2] - r) * w)
    x1 = query_end(x0, cell_coord((p[0] + r) * w), ints[0])
    y1 = query_end(y0, cell_coord((p[1] + r) * w), ints[1])
    z1 = query_end(z0, cell_coord((p[2] + r) * w), ints[2])
    start, end = cell_range(ints, cell_of(ints, x0, y0, z0))
    return x0, x1, y0, y1, z0, z1, start, end


@kl.func
def query_next(ints: kl.array(dtype=kl.int32), x: int, y: int, z: int, x0: int, x1: int,
               y0: int, y1: int, z1: int, current: int, end: int):
    """(found, point index, x, y, z, current, end): the next point, and the walk's state."""
    found = False
    index = int(0)
    if ints[4] != 0:
        n = ints[0] * ints[1] * ints[2]
        searching = True
        while searching:
            if current < end:
                index = ints[HEADER + 2 * n + current]
                current += 1
                found = True
                searching = False
            else:
                x += 1
                if x > x1:
                    x = x0
                    y += 1
                if y > y1:
                    y = y0
                    z += 1
                if z > z1:
                    searching = False
                else:
                    current, end = cell_range(ints, cell_of(ints, x, y, z))
    return found, index, x, y, z, current, end


@kl.func
def point_id(ints: kl.array(dtype=kl.int32), i: int) -> int:
    if ints[4] == 0 or i < 0 or i >= ints[3]:
        return -1
    n = ints[0] * ints[1] * ints[2]
    return ints[HEADER + 2 * n + i]
