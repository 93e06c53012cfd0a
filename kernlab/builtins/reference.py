"""What the documentation and ``help(kl.sin)`` say about each builtin.

Signatures and whether a builtin is differentiable are read from the registry (the records
in this package and the expansions), so the reference cannot disagree with the compiler.
What a builtin *does* is the one line per name in ``SUMMARIES``; the kernel-language forms
the frontend handles itself (``tid``, the atomics, ``print`` ...) are described in
``SPECIAL_FORMS``. ``docs/_ext/kernlab_reference.py`` renders all of it as the builtin
reference, and tests/test_docs.py checks that every builtin has its line and its entry.

Every builtin kernlab exports has the same name in NVIDIA Warp (``kl.sin`` is ``wp.sin``);
tests/test_docs.py checks that against an installed warp-lang.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .expand import EXPANSIONS
from .registry import REGISTRY

SUMMARIES = {
    # scalar math (math.py, special.py)
    "sin": "sine (radians)", "cos": "cosine (radians)", "tan": "tangent (radians)",
    "asin": "arcsine", "acos": "arccosine", "atan": "arctangent",
    "atan2": "atan2(y, x): the angle of the point (x, y), in (-pi, pi]",
    "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "tanh": "hyperbolic tangent",
    "exp": "e to the power x", "log": "natural logarithm", "log2": "base-2 logarithm",
    "log10": "base-10 logarithm", "sqrt": "square root", "cbrt": "cube root",
    "pow": "pow(x, y): x to the power y",
    "floor": "the largest integer value not above x",
    "ceil": "the smallest integer value not below x",
    "round": "nearest integer value, halves away from zero (as C and Warp)",
    "rint": "nearest integer value, halves to even",
    "trunc": "the integer part of x (rounds toward zero)",
    "frac": "x - trunc(x); its derivative is 1 (Warp's is 0)",
    "degrees": "radians to degrees", "radians": "degrees to radians",
    "copysign": "copysign(x, y): |x| with the sign of y",
    "lerp": "lerp(a, b, t): a + (b - a) * t, also on vectors and matrices",
    "smoothstep": "smoothstep(a, b, x): the cubic Hermite step from 0 at a to 1 at b",
    "erf": "the error function", "erfc": "the complementary error function, 1 - erf(x)",
    "erfinv": "the inverse of erf", "erfcinv": "the inverse of erfc",
    # scalars and comparisons (scalars.py)
    "abs": "absolute value (componentwise on vectors)",
    "sign": "-1 where x < 0, else 1 (componentwise on vectors)",
    "step": "1 where x < 0, else 0 (Warp's convention)",
    "nonzero": "1 where x != 0, else 0",
    "min": "the smaller of two values (componentwise on vectors); min(v): the smallest "
           "component",
    "max": "the larger of two values (componentwise on vectors); max(v): the largest component",
    "clamp": "clamp(x, lo, hi): x limited to [lo, hi]",
    "isfinite": "true when x is neither NaN nor infinite (every component of a vector)",
    "isnan": "true when x is NaN (any component of a vector)",
    "isinf": "true when x is infinite (any component of a vector)",
    "argmin": "the index of the smallest component of a vector",
    "argmax": "the index of the largest component of a vector",
    "bit_and": "bitwise and (the & operator)", "bit_or": "bitwise or (the | operator)",
    "bit_xor": "bitwise xor (the ^ operator)", "invert": "bitwise not (the ~ operator)",
    "bit_count": "the number of set bits of an integer (two's complement, its own width)",
    "unot": "logical not: True where a bool is False or an integer is zero",
    "lshift": "shift left (the << operator)", "rshift": "shift right (the >> operator)",
    "cw_mul": "componentwise product of two vectors or matrices",
    "cw_div": "componentwise quotient of two vectors or matrices",
    "vsign": "(internal) componentwise sign of a vector, for the adjoint of abs",
    "route_min": "(internal) routes the gradient of min to the argument that was chosen",
    "route_max": "(internal) routes the gradient of max to the argument that was chosen",
    "route_eq": "(internal) routes a gradient to the argument equal to the result",
    "or_": "(internal) logical or: the `or` operator on bools",
    "and_": "(internal) logical and: the `and` operator on bools",
    # arithmetic and the operators behind Python syntax (core.py)
    "add": "a + b (scalars, vectors, matrices)", "sub": "a - b", "neg": "-a",
    "mul": "a * b: scalar, componentwise-by-scalar, matrix-vector, vector-matrix (v^T M), "
           "matrix-matrix; "
           "the Hamilton product of quaternions; the composition of transforms",
    "div": "a / b; integer division truncates toward zero and a zero divisor gives 0",
    "floordiv": "a // b: division rounded down, as in Python",
    "mod": "a % b with the sign of a (C's fmod); d(a mod b)/db = -trunc(a / b)",
    "where": "where(cond, value_if_true, value_if_false)",
    "select": "select(cond, value_if_false, value_if_true): Warp's older argument order",
    "eq": "(operator) a == b", "ne": "(operator) a != b", "lt": "(operator) a < b",
    "le": "(operator) a <= b", "gt": "(operator) a > b", "ge": "(operator) a >= b",
    "not_": "(operator) not a",
    "cast": "(internal) a conversion: float32(x), int(x), vec3d(v) ...",
    "construct": "(internal) a vector or matrix built from scalars or rows: vec3(x, y, z)",
    "index": "(operator) v[i], m[i], m[i, j]: a component, row or element",
    "insert": "(operator) v[i] = s, m[i, j] = s: a copy with one component replaced",
    "inner": "(internal) the sum of componentwise products, behind dot",
    "sum": "(internal) the sum of all components",
    "tile_put": "(internal) a tile with one element replaced: the adjoint of t[i, ...]",
    "reshape": "(internal) the same components in another shape",
    # vectors and matrices (linalg.py)
    "dot": "the dot product of two vectors", "cross": "the cross product of two 3-vectors",
    "length": "the Euclidean length of a vector",
    "length_sq": "the squared Euclidean length of a vector",
    "normalize": "the vector divided by its length (zero stays zero); a unit quaternion",
    "outer": "the outer product of two vectors: a matrix",
    "transpose": "the transpose of a matrix", "determinant": "the determinant of a matrix",
    "trace": "the sum of a square matrix's diagonal",
    "cofactor": "(internal) the cofactor matrix, for the adjoint of determinant",
    # more matrix helpers (matrices.py)
    "inverse": "the inverse of a 2x2, 3x3 or 4x4 matrix; zero where the determinant is 0",
    "inverse_approx": "inverse(m); Warp's GPU path uses an approximate reciprocal, "
                      "kernlab divides exactly everywhere",
    "diag": "the square matrix with the vector's components on its diagonal",
    "get_diag": "the diagonal of a square matrix, as a vector",
    "skew": "the skew-symmetric matrix of a 3-vector: skew(v) @ x == cross(v, x)",
    "ddot": "the double contraction of two matrices: the sum of a[i, j] * b[i, j]",
    # decompositions (decompositions.py)
    "svd3": "U, sigma, V = svd3(A): A = U diag(sigma) V^T with U, V rotations, sigma by "
            "decreasing magnitude; or svd3(A, U, sigma, V) into its arguments",
    "svd2": "U, sigma, V = svd2(A) for a 2x2 A; or svd2(A, U, sigma, V)",
    "qr3": "Q, R = qr3(A): A = Q R, Q a rotation, R upper triangular; or qr3(A, Q, R)",
    "eig3": "Q, d = eig3(A) for a symmetric A: A = Q diag(d) Q^T; or eig3(A, Q, d)",
    # approx.py
    "div_approx": "a / b where Warp may use fast GPU approximations; kernlab divides "
                  "exactly (scalars, and vectors or matrices with a scalar)",
    # quaternions, transforms, spatial vectors (spatial.py)
    "quat_identity": "the identity rotation (0, 0, 0, 1)",
    "quat_from_axis_angle": "the rotation by an angle (radians) about a unit axis",
    "quat_to_axis_angle": "the axis and angle of a rotation",
    "quat_rpy": "the rotation from roll, pitch and yaw angles",
    "quat_between_vectors": "the shortest-arc rotation taking the direction of a to that "
                            "of b (opposite directions are not handled)",
    "quat_inverse": "the inverse (conjugate) of a unit quaternion",
    "quat_rotate": "a vector rotated by a quaternion",
    "quat_rotate_inv": "a vector rotated by the inverse of a quaternion",
    "quat_slerp": "spherical linear interpolation between two rotations",
    "quat_to_matrix": "the 3x3 rotation matrix of a quaternion",
    "quat_from_matrix": "the quaternion of a rotation matrix (3x3 or the rotation of a 4x4)",
    "transformation": "a rigid transform from a translation and a rotation",
    "transform_identity": "the identity transform",
    "transform_get_translation": "the translation part of a transform",
    "transform_get_rotation": "the rotation part of a transform",
    "transform_set_translation": "replaces the translation of a transform in place",
    "transform_set_rotation": "replaces the rotation of a transform in place",
    "transform_set_translation_copy": "a transform with its translation replaced",
    "transform_set_rotation_copy": "a transform with its rotation replaced",
    "transform_multiply": "the composition of two transforms",
    "transform_inverse": "the inverse of a transform",
    "transform_point": "a point mapped by a transform (rotation and translation)",
    "transform_vector": "a direction mapped by a transform (rotation only)",
    "transform_to_matrix": "the 4x4 matrix of a transform",
    "transform_from_matrix": "the transform of a 4x4 rigid matrix",
    "transform_compose": "the 4x4 matrix from a translation, a rotation and a scale",
    "transform_expand": "a flat 7-vector (p, q) read as a transform",
    "transform_decompose": "a 4x4 matrix split into translation, rotation and scale",
    "spatial_vector": "a 6-vector from an angular and a linear 3-vector",
    "spatial_top": "the first three components of a spatial vector",
    "spatial_bottom": "the last three components of a spatial vector",
    "spatial_dot": "the dot product of two spatial vectors",
    "spatial_cross": "the spatial (motion) cross product",
    "spatial_cross_dual": "the dual (force) spatial cross product",
    "spatial_adjoint": "the 6x6 spatial adjoint matrix from a rotation and a skew matrix",
    "matrix_from_rows": "a matrix whose rows are the given vectors",
    "matrix_from_cols": "a matrix whose columns are the given vectors",
    # random numbers (random.py)
    "rand_init": "rand_init(seed[, offset]): a random-number state (uint32)",
    "randu": "the next random uint32 (advances the state)",
    "randi": "the next random int32 (advances the state)",
    "randf": "the next random float in [0, 1), or in [lo, hi) (advances the state)",
    "randn": "the next standard normal sample, by Box-Muller (advances the state)",
    "sample_unit_sphere_surface": "a uniformly distributed point on the unit sphere "
                                  "(advances the state)",
    "sample_unit_square": "a uniform point in the square [-0.5, 0.5)^2 (advances the state)",
    "sample_unit_cube": "a uniform point in the cube [-0.5, 0.5)^3 (advances the state)",
    "sample_unit_ring": "a uniform point on the unit circle (advances the state)",
    "sample_unit_disk": "a uniform point in the unit disk (advances the state)",
    "sample_unit_sphere": "a uniform point in the unit ball (advances the state)",
    "sample_unit_hemisphere_surface": "a uniform point on the unit hemisphere z >= 0 "
                                      "(advances the state)",
    "sample_unit_hemisphere": "a uniform point in the unit half ball z >= 0 (advances the "
                              "state)",
    "sample_triangle": "uniform barycentric coordinates (u, v) over a triangle (advances "
                       "the state)",
}


@dataclass(frozen=True)
class SpecialForm:
    signature: str
    summary: str
    differentiable: str


SPECIAL_FORMS = {
    "tid": SpecialForm("tid() -> int | (int, int) | (int, int, int)",
                       "this thread's index: i = tid(), or i, j = tid() for a 2-D launch",
                       "no (an index)"),
    **{f"atomic_{op}": SpecialForm(
        f"atomic_{op}(array, index..., value) -> old value", what, grad)
       for op, what, grad in [
           ("add", "adds value to the element; a[i] += v is the same", "yes, in value"),
           ("sub", "subtracts value from the element; a[i] -= v is the same",
            "yes, in value"),
           ("min", "stores the smaller of the element and value",
            "yes, to the winning value; the returned old value is refused"),
           ("max", "stores the larger of the element and value",
            "yes, to the winning value; the returned old value is refused"),
           ("and", "bitwise and into an integer element", "no (integers)"),
           ("or", "bitwise or into an integer element", "no (integers)"),
           ("xor", "bitwise xor into an integer element", "no (integers)"),
           ("exch", "stores value, returning the old element", "no")]},
    "atomic_cas": SpecialForm("atomic_cas(array, index..., compare, value) -> old value",
                              "stores value if the element equals compare", "no"),
    "print": SpecialForm("print(*values)", "debug output from a kernel", "no (no value)"),
    "printf": SpecialForm("printf(fmt, *values)", "C-style formatted debug output",
                          "no (no value)"),
    "expect_eq": SpecialForm("expect_eq(a, b)", "prints a message if a != b; the kernel "
                             "goes on", "no (no value)"),
    "expect_neq": SpecialForm("expect_neq(a, b)", "prints a message if a == b; the kernel "
                              "goes on", "no (no value)"),
    "expect_near": SpecialForm("expect_near(a, b, tolerance=1e-6)", "prints a message if a "
                               "component differs by more than tolerance", "no (no value)"),
    "identity": SpecialForm("identity(n, dtype=float) -> matrix", "the n x n identity "
                            "matrix", "no (a constant)"),
    "grad": SpecialForm("grad(f)(x, ...) -> value | tuple", "the partial derivatives of a "
                        "func or builtin at x, inside a kernel", "yes"),
    "static": SpecialForm("static(expr) -> constant", "expr evaluated in Python when the "
                          "kernel compiles", "no (a constant)"),
    "adjoint": SpecialForm("adjoint[x] += value", "in a @func_grad body: adds to the "
                           "gradient of the parameter x", "(defines a gradient)"),
    "constant": SpecialForm("constant(value) -> value", "a module-level constant a kernel "
                            "may read", "no (a constant)"),
    "hash_grid_query": SpecialForm("hash_grid_query(grid_id, point, radius) -> query",
                                   "a query over the points of a kl.HashGrid near point",
                                   "no (a query)"),
    "hash_grid_query_next": SpecialForm("hash_grid_query_next(query, index) -> bool",
                                        "advances the query; True with index set to the "
                                        "next point, or False", "no"),
    "hash_grid_point_id": SpecialForm("hash_grid_point_id(grid_id, index) -> int",
                                      "the index-th point of the grid in cell order", "no"),
    # kl.Mesh (kernlab/mesh.py, lowered by frontend/mesh.py); the query forms also take
    # Warp's older output arguments: mesh_query_point(id, p, d, sign, face, u, v) -> bool
    "mesh_eval_position": SpecialForm(
        "mesh_eval_position(id, face, bary_u, bary_v) -> vec3",
        "the point of a face at barycentrics u, v (weights of its 1st and 2nd corner)",
        "yes (bary_u, bary_v; not the mesh points, as in Warp)"),
    "mesh_eval_velocity": SpecialForm(
        "mesh_eval_velocity(id, face, bary_u, bary_v) -> vec3",
        "the interpolated vertex velocity (zero for a mesh without velocities)",
        "yes (bary_u, bary_v)"),
    "mesh_eval_face_normal": SpecialForm("mesh_eval_face_normal(id, face) -> vec3",
                                         "the unit normal (b - a) x (c - a) of a face", "no"),
    "mesh_get": SpecialForm("mesh_get(id) -> Mesh",
                            "the mesh's arrays: .points, .velocities, .indices (reads of "
                            ".points differentiate into the points' gradient, as in Warp)",
                            "yes (through its arrays)"),
    "mesh_get_point": SpecialForm("mesh_get_point(id, index) -> vec3",
                                  "points[indices[index]] (index: a face-vertex index)", "no"),
    "mesh_get_velocity": SpecialForm("mesh_get_velocity(id, index) -> vec3",
                                     "velocities[indices[index]]", "no"),
    "mesh_get_index": SpecialForm("mesh_get_index(id, face_vertex_index) -> int",
                                  "indices[face_vertex_index]", "no"),
    "mesh_query_point": SpecialForm(
        "mesh_query_point(id, point, max_dist) -> MeshQueryPoint",
        "the closest point nearer than max_dist; sign < 0 inside (votes of three axis rays)",
        "yes (u, v with respect to point)"),
    "mesh_query_point_no_sign": SpecialForm(
        "mesh_query_point_no_sign(id, point, max_dist) -> MeshQueryPoint",
        "the closest point nearer than max_dist, without a sign",
        "yes (u, v with respect to point)"),
    "mesh_query_point_sign_normal": SpecialForm(
        "mesh_query_point_sign_normal(id, point, max_dist, epsilon=1e-3) -> MeshQueryPoint",
        "the closest point; sign by the angle-weighted normals of the faces as close "
        "(within epsilon times the average edge length)", "yes (u, v with respect to point)"),
    "mesh_query_point_sign_winding_number": SpecialForm(
        "mesh_query_point_sign_winding_number(id, point, max_dist, accuracy=2.0, "
        "threshold=0.5) -> MeshQueryPoint",
        "the closest point; sign < 0 where the winding number exceeds threshold (summed "
        "exactly over the faces; a mesh made without support_winding_number uses rays)",
        "yes (u, v with respect to point)"),
    "mesh_query_furthest_point_no_sign": SpecialForm(
        "mesh_query_furthest_point_no_sign(id, point, min_dist) -> MeshQueryPoint",
        "the furthest point (a corner) further than min_dist", "no (a corner)"),
    "mesh_query_ray": SpecialForm(
        "mesh_query_ray(id, start, dir, max_t, root=-1) -> MeshQueryRay",
        "the nearest hit of start + t dir with 0 <= t < max_t (sign > 0: the front of the "
        "face); root is accepted (kernlab meshes have no groups)",
        "yes (t, u, v, normal with respect to start and dir)"),
    "mesh_query_ray_anyhit": SpecialForm(
        "mesh_query_ray_anyhit(id, start, dir, max_t, root=-1) -> bool",
        "whether the ray meets a face at 0 <= t < max_t", "no"),
    "mesh_query_ray_count_intersections": SpecialForm(
        "mesh_query_ray_count_intersections(id, start, dir, root=-1) -> int",
        "how many faces the ray meets at t >= 0", "no"),
    "mesh_query_aabb": SpecialForm("mesh_query_aabb(id, low, high) -> MeshQueryAABB",
                                   "a query over the faces whose boxes overlap [low, high]; "
                                   "iterate with for face in query", "no (a query)"),
    "mesh_query_sphere": SpecialForm("mesh_query_sphere(id, center, radius) -> MeshQueryAABB",
                                     "a query over the faces that come within radius of "
                                     "center; iterate as a box query", "no (a query)"),
    "mesh_query_aabb_next": SpecialForm("mesh_query_aabb_next(query, index) -> bool",
                                        "advances the box query; True with index set to "
                                        "the next face, or False (mesh_query_next: the "
                                        "same)", "no"),
}

# kl.Volume (kernlab/volume.py, lowered by frontend/volume.py): index-space points; a call on
# a volume of another value type gives zero, as in Warp
VOLUME_FORMS = {
    "volume_sample_f": SpecialForm(
        "volume_sample_f(id, uvw, sampling_mode) -> float",
        "a float volume at index-space uvw: Volume.CLOSEST (nearest voxel, halfway away from "
        "zero) or Volume.LINEAR (trilinear)", "yes (uvw, LINEAR; not the voxel values)"),
    "volume_sample_v": SpecialForm("volume_sample_v(id, uvw, sampling_mode) -> vec3",
                                   "a vec3 volume at uvw, as volume_sample_f",
                                   "yes (uvw, LINEAR)"),
    "volume_sample_i": SpecialForm("volume_sample_i(id, uvw) -> int",
                                   "an int32 volume at the voxel nearest uvw", "no"),
    "volume_sample_grad_f": SpecialForm(
        "volume_sample_grad_f(id, uvw, sampling_mode, grad) -> float",
        "volume_sample_f, and sets the local grad (vec3) to its index-space gradient",
        "yes (uvw, through the value and grad)"),
    "volume_sample": SpecialForm(
        "volume_sample(id, uvw, sampling_mode, dtype) -> dtype",
        "the generic form: dtype float, vec3 or int", "yes (uvw, LINEAR)"),
    "volume_sample_grad": SpecialForm(
        "volume_sample_grad(id, uvw, sampling_mode, grad, dtype) -> dtype",
        "the generic form of volume_sample_grad_f; grad is a vec3 (float) or a mat33 "
        "Jacobian, one row per component (vec3)", "yes (uvw)"),
    "volume_lookup_f": SpecialForm("volume_lookup_f(id, i, j, k) -> float",
                                   "the value of voxel (i, j, k)", "no"),
    "volume_lookup_v": SpecialForm("volume_lookup_v(id, i, j, k) -> vec3",
                                   "the value of voxel (i, j, k)", "no"),
    "volume_lookup_i": SpecialForm("volume_lookup_i(id, i, j, k) -> int",
                                   "the value of voxel (i, j, k)", "no"),
    "volume_lookup": SpecialForm("volume_lookup(id, i, j, k, dtype) -> dtype",
                                 "the generic form of the lookups", "no"),
    "volume_store_f": SpecialForm("volume_store_f(id, i, j, k, value)",
                                  "writes voxel (i, j, k) if a leaf holds it (else nothing)",
                                  "no (no value)"),
    "volume_store_v": SpecialForm("volume_store_v(id, i, j, k, value)",
                                  "as volume_store_f, for a vec3 volume", "no (no value)"),
    "volume_store_i": SpecialForm("volume_store_i(id, i, j, k, value)",
                                  "as volume_store_f, for an int32 volume", "no (no value)"),
    "volume_store": SpecialForm("volume_store(id, i, j, k, value)",
                                "the generic form: the value's type picks the volume's",
                                "no (no value)"),
    "volume_index_to_world": SpecialForm(
        "volume_index_to_world(id, uvw) -> vec3 | vec3d",
        "the volume's affine map (float32 for vec3, float64 for vec3d)", "yes (uvw)"),
    "volume_world_to_index": SpecialForm("volume_world_to_index(id, xyz) -> vec3 | vec3d",
                                         "the inverse map", "yes (xyz)"),
    "volume_index_to_world_dir": SpecialForm(
        "volume_index_to_world_dir(id, uvw) -> vec3 | vec3d",
        "the map's linear part (a direction)", "yes (uvw)"),
    "volume_world_to_index_dir": SpecialForm(
        "volume_world_to_index_dir(id, xyz) -> vec3 | vec3d",
        "the inverse map's linear part", "yes (xyz)"),
}
SPECIAL_FORMS.update(VOLUME_FORMS)

# Tiles (builtins/tiles.py, builtins/tile_ops.py, frontend/tiles.py): every block of a tiled
# launch is one thread owning its whole tile, as Warp runs blocks on the CPU. Warp's parameter
# names; shapes and dtypes are compile-time constants. kernlab.lang makes the kl.tile_* names
# from this table.
TILE_FORMS = {
    "tile_load": SpecialForm(
        "tile_load(a, shape, offset=None, storage='register', bounds_check=True) -> tile",
        "the tile of this shape read from array a at offset; elements outside the array "
        "read as zero", "yes (into a.grad, atomically)"),
    "tile_store": SpecialForm(
        "tile_store(a, t, offset=None, bounds_check=True)",
        "writes tile t into array a at offset; elements outside the array are left out",
        "yes (reads a.grad there, then zeroes it)"),
    "tile_atomic_add": SpecialForm(
        "tile_atomic_add(a, t, offset=None, bounds_check=True) -> tile",
        "adds tile t into array a at offset atomically; returns the tile of the values "
        "before", "yes (t gets a.grad there)"),
    "tile": SpecialForm("tile(x, preserve_type=False) -> tile",
                        "the tile of the block's values of x: one thread per block, so a "
                        "one-element tile (a vector x without preserve_type: its components "
                        "along the first axis)", "yes"),
    "tile_zeros": SpecialForm("tile_zeros(shape, dtype=float) -> tile", "a tile of zeros",
                              "no (a constant)"),
    "tile_ones": SpecialForm("tile_ones(shape, dtype=float) -> tile", "a tile of ones",
                             "no (a constant)"),
    "tile_full": SpecialForm("tile_full(shape, value, dtype=None) -> tile",
                             "a tile with every element value", "yes"),
    "tile_sum": SpecialForm("tile_sum(t, axis=None) -> tile", "the one-element tile of the "
                            "sum of t's elements; with axis, the sums along that axis (the "
                            "tile without it)", "yes"),
    "tile_transpose": SpecialForm("tile_transpose(t) -> tile", "the transpose of a 2-D tile",
                                  "yes"),
    "tile_fft": SpecialForm("tile_fft(t)", "in place: the unnormalised DFT along the last "
                            "dimension of a tile of vec2 (complex) values, as numpy.fft.fft; "
                            "other sizes than powers of two by a direct DFT (at most 4096)",
                            "yes (the inverse FFT of the gradient)"),
    "tile_extract": SpecialForm("tile_extract(t, i, ...) -> element", "one element of a "
                                "tile, as t[i, ...]", "yes"),
    "tile_ifft": SpecialForm("tile_ifft(t)", "in place: the unnormalised inverse DFT along "
                             "the last dimension (N times numpy.fft.ifft)",
                             "yes (the FFT of the gradient)"),
    "tile_arange": SpecialForm("tile_arange([start,] stop[, step], dtype=float) -> tile",
                               "the 1-D tile start, start + step, ... below stop, computed in "
                               "dtype (compile-time constants)", "no (a constant)"),
    "tile_broadcast": SpecialForm("tile_broadcast(t, shape) -> tile", "t repeated to shape by "
                                  "NumPy's broadcasting rules", "yes (summed over the "
                                  "repeated axes)"),
    "tile_reshape": SpecialForm("tile_reshape(t, shape) -> tile", "t's elements in row-major "
                                "order with another shape (one dimension may be -1)", "yes"),
    "tile_squeeze": SpecialForm("tile_squeeze(t, axis=None) -> tile", "t without its "
                                "dimensions of size 1 (or only those in axis)", "yes"),
    "tile_astype": SpecialForm("tile_astype(t, dtype) -> tile", "t's elements cast to dtype",
                               "yes (from float tiles)"),
    "untile": SpecialForm("untile(t) -> value", "the thread's value from a one-element tile "
                          "(a vector from the column tile(v) makes)", "yes"),
    "tile_matmul": SpecialForm("tile_matmul(a, b, out=None, alpha=1.0, beta=1.0) -> tile",
                               "the matrix product of 2-D tiles of floats; with out, "
                               "out = alpha a @ b + beta out in place", "yes"),
    "tile_max": SpecialForm("tile_max(t) -> tile", "the one-element tile of the largest "
                            "element (NaN loses, as in max)", "yes (to the element picked)"),
    "tile_min": SpecialForm("tile_min(t) -> tile", "the one-element tile of the smallest "
                            "element (NaN loses, as in min)", "yes (to the element picked)"),
    "tile_argmax": SpecialForm("tile_argmax(t) -> tile", "the one-element int32 tile of the "
                               "flat index of the largest element, the first among equals",
                               "no (an index)"),
    "tile_argmin": SpecialForm("tile_argmin(t) -> tile", "the one-element int32 tile of the "
                               "flat index of the smallest element, the first among equals",
                               "no (an index)"),
    "tile_reduce": SpecialForm("tile_reduce(op, t) -> tile", "the one-element tile of op "
                               "(wp.add, wp.mul, wp.max or wp.min) folded over t's elements",
                               "yes (exact: Warp 1.19 gives none)"),
    "tile_map": SpecialForm("tile_map(op, a, ...) -> tile", "op (a builtin or a func) "
                            "applied element by element to tiles of one shape; other "
                            "arguments go to every call", "yes (the op's own)"),
    "tile_scan_inclusive": SpecialForm("tile_scan_inclusive(t) -> tile", "running sums of "
                                       "t's elements in row-major order",
                                       "yes (the reverse running sums: Warp 1.19 gives none)"),
    "tile_scan_exclusive": SpecialForm("tile_scan_exclusive(t) -> tile", "running sums "
                                       "before each element (the first is 0)",
                                       "yes (Warp 1.19 gives none)"),
    "tile_scan_max_inclusive": SpecialForm("tile_scan_max_inclusive(t) -> tile",
                                           "running maxima of t's elements",
                                           "yes (to the element each maximum is)"),
    "tile_scan_min_inclusive": SpecialForm("tile_scan_min_inclusive(t) -> tile",
                                           "running minima of t's elements",
                                           "yes (to the element each minimum is)"),
}
SPECIAL_FORMS.update(TILE_FORMS)

# The file of the registry that defines a builtin, as the reference's section title.
CATEGORIES = {
    "math": "Scalar math", "special": "Scalar math", "numpy": "Scalar math",
    "scalars": "Scalars, comparisons and bits", "core": "Arithmetic and operators",
    "bits": "Scalars, comparisons and bits", "linalg": "Vectors and matrices",
    "matrices": "Vectors and matrices", "decompositions": "Vectors and matrices",
    "spatial": "Quaternions, transforms, spatial vectors",
    "random": "Random numbers", "tiles": "Tiles",
}
ORDER = ["Scalar math", "Scalars, comparisons and bits", "Arithmetic and operators",
         "Vectors and matrices", "Quaternions, transforms, spatial vectors",
         "Random numbers", "Tiles", "Funcs written in kernlab", "Kernel-language forms"]

# What the registry's signature letters mean, as the reference prints them.
LETTERS = {"F": "float", "I": "int", "N": "number", "X": "scalar", "B": "bool", "i": "int",
           "V": "vector", "M": "matrix", "FV": "floatvec", "FM": "floatmat", "T": "scalar",
           "L": "tile", "FL": "floattile", "A": "array"}
_FLOAT_KINDS = ("float", "quat", "transform", "vector", "matrix", "vec", "mat")


@dataclass(frozen=True)
class BuiltinDoc:
    name: str
    summary: str
    signatures: tuple
    differentiable: str
    category: str
    public: bool
    warp: str


def kernlab_funcs() -> dict:
    """Warp builtins kernlab writes as ``@kl.func`` (kernlab/mathfuncs.py): name -> Func."""
    import kernlab
    from ..kernel import Func
    return {n: getattr(kernlab, n) for n in kernlab.__all__
            if isinstance(getattr(kernlab, n), Func)}


def public_names() -> list[str]:
    """The builtins and kernel-language forms ``import kernlab`` exports, in order."""
    from ..lang import FUNCTIONS
    funcs = [n for n in kernlab_funcs() if n not in FUNCTIONS]
    return list(FUNCTIONS) + [n for n in SPECIAL_FORMS if n not in FUNCTIONS] + funcs


def all_names() -> list[str]:
    """Every name the reference documents: the public ones, then every other registry
    record (operators and internal primitives) and expansion."""
    names = public_names()
    return names + sorted((set(REGISTRY) | set(EXPANSIONS)) - set(names))


def _readable(sig: str) -> str:
    sig = re.sub(r"\b(FV|FM|FL|F|I|N|X|B|V|M|L|A|i|T)\b", lambda m: LETTERS[m.group(1)], sig)
    return sig.replace("-> …", "-> (by argument types)")


def describe(name: str) -> BuiltinDoc:
    """Everything the reference says about builtin ``name``."""
    from ..lang import FUNCTIONS
    funcs = kernlab_funcs()
    public = name in FUNCTIONS or name in SPECIAL_FORMS or name in funcs
    warp = f"wp.{name}" if public else "—"
    if name in funcs and name not in FUNCTIONS:
        import inspect
        fn = funcs[name]
        sigs = tuple(f"{name}{inspect.signature(py)}" for py in fn.overloads)
        summary = (inspect.getdoc(fn) or "").split("\n\n")[0].replace("\n", " ").rstrip(".")
        how = ("its custom gradient" if fn.grads or fn.grad else
               "differentiated as yours are")
        return BuiltinDoc(name, summary, sigs, f"yes (a kernlab func, {how})",
                          "Funcs written in kernlab", True, warp)
    if name in SPECIAL_FORMS and name not in FUNCTIONS:
        form = SPECIAL_FORMS[name]
        return BuiltinDoc(name, form.summary, (form.signature,), form.differentiable,
                          "Kernel-language forms", True, warp)
    record = REGISTRY.get(name)
    expansions = EXPANSIONS.get(name, [])
    sigs = [str(ex) for ex in expansions]
    if record is not None:
        sigs = [_readable(s) for s in record.candidates().split(" | ")] + sigs
        differentiable = "yes" if record.differentiable else "no"
        module = record.numpy.__module__
    else:
        floats = any(k.startswith(_FLOAT_KINDS) for ex in expansions for k in ex.params)
        differentiable = "yes (through its expansion)" if floats else "no (integers)"
        module = expansions[0].expand.__module__ if expansions else ""
    category = CATEGORIES.get(module.rsplit(".", 1)[-1], "Scalar math")
    return BuiltinDoc(name, SUMMARIES.get(name, ""), tuple(sigs), differentiable, category,
                      public, warp)


def docstring(name: str) -> str:
    """``help(kl.sin)``'s text: what it does, its signatures, its gradient, Warp's name."""
    d = describe(name)
    lines = [f"{d.name}: {d.summary}.", "", "Signatures:"]
    lines += [f"    {s}" for s in d.signatures]
    lines += ["", f"Differentiable: {d.differentiable}. Warp: {d.warp}.",
              "Inside a kernel it compiles to the builtin; called from Python it runs the "
              "NumPy reference."]
    return "\n".join(lines)
