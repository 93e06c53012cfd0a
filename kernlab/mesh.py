"""``kl.Mesh``: a triangle mesh with a bounding volume hierarchy, as Warp's ``wp.Mesh``.

Host side, ``mesh = kl.Mesh(points, indices, velocities=None)`` (points and velocities:
arrays of vec3; indices: a flat int32 array, three per triangle) builds a BVH over the
triangles with NumPy: each node splits its triangles at the median centroid along the
longest axis of their centroids' box, down to ``bvh_leaf_size`` triangles per leaf.
``mesh.refit()`` recomputes the node boxes after the points moved (the tree stays).
Kernels take ``mesh.id`` as a ``uint64`` parameter and call the ``mesh_*`` queries
(frontend/mesh.py lowers them to the funcs of kernlab/mesh_queries.py; their reference
entries are in builtins/reference.py). This module is the host side: the checks, the tree,
the handle a launch turns into arrays, the query result structs and the Python names
kernels call.

Layout. The nodes are stored in depth-first order, so a node's first child is the next
node and every subtree covers one range of node numbers and one range of primitive slots;
each node keeps the number of the node after its subtree (``skip``). A walk then needs no
stack: it visits node ``k`` and goes on at ``k + 1`` when it descends, or at ``skip[k]``
when the box is pruned. The integers live in one int32 array (``ints``)::

    ints[0:HEADER]            number of points, of triangles, of nodes, winding-number flag
    ints[HEADER + 4k + 0..3]  node k: skip, first slot, end slot, 1 for a leaf
    ints[HEADER + 4n + s]     the triangle in primitive slot s (n = number of nodes)

and the boxes in one vec3 array (``bounds``): ``bounds[2k]``, ``bounds[2k + 1]`` are node
k's lower and upper corners and ``bounds[2n]`` holds (average edge length, 0, 0), which
``mesh_query_point_sign_normal`` scales its tolerance by.

The walks (kernlab/mesh_walks.py, with the geometry of kernlab/mesh_geometry.py) are
written in kernlab's kernel language, so every backend runs the same code. They find
*which* triangle (an integer); the barycentric coordinates, distances and hit parameters
are then recomputed from that triangle by differentiable funcs, so reverse mode gives the
derivatives Warp gives: with respect to the query point, the ray and the barycentrics,
never into the mesh's points (a kernel reads them through an alias without a gradient, as
Warp's mesh queries do not write ``points.grad``).
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

import kernlab as kl
from .handles import kernel_only, live_object, register
from .runtime.array import array

HEADER = 4
_MESHES: "weakref.WeakValueDictionary[int, Mesh]" = weakref.WeakValueDictionary()
_IDS = itertools.count(0x4B4D_0000_0001)  # opaque uint64 handles, never addresses
_CONSTRUCTORS = ("sah", "median", "lbvh", "cubql")
FLT_MAX = 3.4028234663852886e38


class Mesh:
    """A triangle mesh on the device of its points; see the module doc."""

    def __init__(self, points: array, indices: array, velocities: array | None = None,
                 support_winding_number: bool = False, bvh_constructor=None,
                 bvh_leaf_size: int | None = None, groups=None):
        if groups is not None:
            raise NotImplementedError("kl.Mesh: triangle groups are not supported yet")
        _check_vec3(points, "points")
        if velocities is not None:
            _check_vec3(velocities, "velocities")
        if not isinstance(indices, array) or indices.dtype != kl.int32 \
                or not indices.is_contiguous:
            got = getattr(indices, "dtype", type(indices).__name__)
            raise RuntimeError(f"Mesh indices should be a contiguous array of type int32, "
                               f"got {got}")
        if indices.ndim > 1:
            raise RuntimeError("Mesh indices should be a flattened 1d array of indices")
        if indices.size % 3 != 0:
            raise RuntimeError(f"Mesh indices should hold three indices per triangle, got "
                               f"{indices.size}")
        if points.device != indices.device or (velocities is not None
                                               and velocities.device != points.device):
            raise RuntimeError("Mesh points, indices and velocities must live on the same "
                               "device")
        if bvh_constructor is not None:
            name = str(getattr(bvh_constructor, "name", bvh_constructor)).lower()
            if name not in _CONSTRUCTORS:
                raise ValueError(f"unknown BVH constructor {bvh_constructor!r}; valid: "
                                 f"{', '.join(_CONSTRUCTORS)}")
        leaf = 4 if bvh_leaf_size is None else int(bvh_leaf_size)
        if leaf < 1:
            raise ValueError(f"bvh_leaf_size must be greater than or equal to 1, current "
                             f"value: {bvh_leaf_size}")
        tri = indices.numpy().astype(np.int64).reshape(-1, 3)
        n = len(points)
        bad = np.nonzero((tri < 0) | (tri >= n))[0]
        if len(bad):
            t = int(bad[0])
            raise RuntimeError(f"Mesh indices of triangle {t} ({tri[t].tolist()}) are out of "
                               f"range for {n} points")
        self.device = points.device
        self._points, self._velocities, self.indices = points, velocities, indices
        self.support_winding_number = bool(support_winding_number)
        self.bvh_leaf_size = leaf
        self.bvh_constructor = bvh_constructor
        self._tri = tri
        self._build()
        self.id = next(_IDS)
        _MESHES[self.id] = self

    def __del__(self):
        """Release the id: a kernel launched with it afterwards is a LaunchError."""
        if getattr(self, "id", None) is not None:
            _MESHES.pop(self.id, None)

    # ---- Warp's attributes -----------------------------------------------------------------

    @property
    def points(self) -> array:
        return self._points

    @points.setter
    def points(self, value: array) -> None:
        """New points (as many as before); refits the BVH, as Warp does."""
        _check_vec3(value, "points")
        if len(value) != len(self._points) or value.device != self.device:
            raise RuntimeError("the new points must have the same length and device as the "
                               "old ones")
        self._points = value
        self.refit()

    @property
    def velocities(self) -> array | None:
        return self._velocities

    @velocities.setter
    def velocities(self, value: array) -> None:
        _check_vec3(value, "velocities")
        if len(value) != len(self._points) or value.device != self.device:
            raise RuntimeError("the new velocities must have the same length and device as "
                               "the points")
        self._velocities = value

    @property
    def num_tris(self) -> int:
        return len(self._tri)

    def refit(self) -> None:
        """Recompute every node's box from the current points (call after moving them)."""
        lo, hi = self._tri_bounds()
        nodes = self._nodes
        n = len(nodes)
        lower = np.empty((n, 3), np.float32)
        upper = np.empty((n, 3), np.float32)
        slots = self._slots
        for k in range(n - 1, -1, -1):  # children come after their parent
            skip, start, end, leaf = nodes[k]
            if leaf:
                lower[k] = lo[slots[start:end]].min(axis=0)
                upper[k] = hi[slots[start:end]].max(axis=0)
            else:
                right = nodes[k + 1][0]
                lower[k] = np.minimum(lower[k + 1], lower[right])
                upper[k] = np.maximum(upper[k + 1], upper[right])
        bounds = np.zeros((2 * n + 1, 3), np.float32)
        bounds[0:2 * n:2], bounds[1:2 * n:2] = lower, upper
        bounds[2 * n, 0] = self._average_edge_length()
        self._bounds = kl.array(bounds, dtype=kl.vec3, device=self.device)

    def __repr__(self):
        return f"<kernlab Mesh {len(self._points)} points, {self.num_tris} triangles on " \
               f"{self.device}>"

    # ---- building ----------------------------------------------------------------------------

    def _tri_bounds(self):
        p = self._points.numpy().astype(np.float32)
        corners = p[self._tri]  # (triangles, 3 corners, 3)
        return corners.min(axis=1), corners.max(axis=1)

    def _average_edge_length(self) -> float:
        if not len(self._tri):
            return 0.0
        p = self._points.numpy().astype(np.float64)[self._tri]
        edges = np.linalg.norm(p - np.roll(p, 1, axis=1), axis=2)
        return float(edges.mean())

    def _build(self) -> None:
        """The tree: median splits of the centroids along their box's longest axis."""
        lo, hi = self._tri_bounds()
        centroid = (lo.astype(np.float64) + hi) * 0.5
        nodes: list = []  # [skip, first slot, end slot, leaf]
        order = np.arange(len(self._tri))

        def build(idx: np.ndarray, start: int):
            k = len(nodes)
            nodes.append([0, start, start + len(idx), 0])
            if len(idx) <= self.bvh_leaf_size:
                nodes[k][3] = 1
                order[start:start + len(idx)] = idx
            else:
                c = centroid[idx]
                axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
                sorted_idx = idx[np.argsort(c[:, axis], kind="stable")]
                half = len(idx) // 2
                build(sorted_idx[:half], start)
                build(sorted_idx[half:], start + half)
            nodes[k][0] = len(nodes)

        if len(self._tri):
            import sys
            depth = sys.getrecursionlimit()
            sys.setrecursionlimit(max(depth, 10_000))
            try:
                build(order.copy(), 0)
            finally:
                sys.setrecursionlimit(depth)
        self._nodes, self._slots = nodes, order
        n = len(nodes)
        head = [len(self._points), len(self._tri), n, int(self.support_winding_number)]
        packed = np.concatenate([np.asarray(head, np.int64),
                                 np.asarray(nodes, np.int64).reshape(-1), order])
        self._ints = kl.array(packed.astype(np.int32), dtype=kl.int32, device=self.device)
        self.refit()

    def _kernel_arrays(self) -> tuple:
        """The arrays of KERNEL_ARRAYS: the points and velocities as the queries read them
        (aliases without a gradient, see the module doc), the indices, the tree, the boxes,
        then the points and velocities themselves (``mesh_get(id).points``: a kernel that
        reads them there differentiates into their gradients, as in Warp)."""
        vel = self._velocities if self._velocities is not None else \
            kl.zeros(0, dtype=kl.vec3, device=self.device)
        return (_alias(self._points), _alias(vel), self.indices, self._ints, self._bounds,
                self._points, vel)


def _check_vec3(a, what: str) -> None:
    if not isinstance(a, array) or a.dtype != kl.vec3 or a.ndim != 1 or not a.is_contiguous:
        got = getattr(a, "dtype", type(a).__name__)
        raise RuntimeError(f"Mesh {what} should be a contiguous 1d array of type vec3, got "
                           f"{got}")


def _alias(a: array) -> array:
    return array._wrap(a._data, a.dtype, a.device, None, a._vbox)


KERNEL_ARRAYS = (("points", kl.vec3), ("velocities", kl.vec3), ("indices", kl.int32),
                 ("bvh", kl.int32), ("bounds", kl.vec3), ("points_array", kl.vec3),
                 ("velocities_array", kl.vec3))


def mesh_arrays(kernel_key: str, param: str, mesh_id) -> tuple:
    """The kernel arrays of the mesh whose id a launch passes for ``param``."""
    mesh = live_object(_MESHES, kernel_key, param, mesh_id, "mesh", "Mesh", "mesh")
    return mesh._kernel_arrays()


register("mesh", "mesh", KERNEL_ARRAYS, mesh_arrays)


# ---- the query results -------------------------------------------------------------------

@kl.struct
class MeshQueryPoint:
    """What the closest/furthest point queries give: whether a point was found, the sign
    (< 0 inside), the face and the barycentric coordinates u, v of the point on it."""
    result: bool
    sign: float
    face: int
    u: float
    v: float


@kl.struct
class MeshFields:
    """What ``mesh_get(id)`` gives in a kernel: the mesh's arrays (Warp's ``Mesh`` there)."""
    points: kl.array(dtype=kl.vec3)
    velocities: kl.array(dtype=kl.vec3)
    indices: kl.array(dtype=kl.int32)


@kl.struct
class MeshQueryRay:
    """What ``mesh_query_ray`` gives: whether it hit, the sign (the hit determinant, < 0
    from behind), the face, the distance t along dir, barycentrics u, v and the normal."""
    result: bool
    sign: float
    face: int
    t: float
    u: float
    v: float
    normal: kl.vec3


# ---- Python stand-ins: these names are what kernels call -------------------------------

FUNCTIONS = ("mesh_eval_position", "mesh_eval_velocity", "mesh_eval_face_normal",
             "mesh_get_point", "mesh_get_velocity", "mesh_get_index", "mesh_query_point",
             "mesh_query_point_no_sign", "mesh_query_point_sign_normal",
             "mesh_query_point_sign_winding_number", "mesh_query_furthest_point_no_sign",
             "mesh_query_ray", "mesh_query_ray_anyhit", "mesh_query_ray_count_intersections",
             "mesh_query_aabb", "mesh_query_sphere", "mesh_query_aabb_next", "mesh_query_next",
             "mesh_get")
for _name in FUNCTIONS:
    globals()[_name] = kernel_only(_name, __name__)
del _name

