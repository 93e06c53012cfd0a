"""Which of Warp's test files the conformance runner runs, and what it leaves out and why.

One place for every exclusion: a test id (``file.Class.test_name``, or a prefix of one
ending in ``*``) and the reason. Tests are left out only when they exercise Warp's
internals (``warp._src``, its code generator, module system or C++ build) or features that
need a GPU; everything about the kernel language, arrays, launches, the tape and autodiff
counts.
"""
from __future__ import annotations

# Warp 1.19 file names; Warp keeps transforms' tests in test_spatial.
FILES = [
    "test_grad", "test_tape", "test_grad_customs", "test_grad_debug", "test_copy",
    "test_func", "test_conditional", "test_launch", "test_lerp", "test_smoothstep",
    "test_rounding", "test_iter", "test_scalar_ops", "test_unpack", "test_vec_lite",
    "matrix/test_mat_lite", "test_vec_assign_copy", "test_lvalue", "test_atomic",
    "test_overwrite", "test_composite_component_adjoint", "test_math", "test_print",
    "test_array", "test_vec", "test_arithmetic", "test_special_values", "test_struct",
    "test_quat", "test_spatial",
]

# Further Warp test files that run on kernlab, outside the fixed list above (its
# figure stays over FILES): ``run.py --extra`` runs them all, ``run.py FILE`` one, and
# baseline.txt holds their tests too (``run.py --warp --write-baseline FILE ...`` keeps the
# other files' entries). One file per line, with what it covers.
EXTRA_FILES = [
    "test_noise",  # Perlin noise: noise, pnoise, curlnoise and their gradients
    "geometry/test_mesh",              # wp.Mesh: construction, refit, accessors, gradients
    "geometry/test_mesh_query_point",  # closest/furthest point queries and their signs
    "geometry/test_mesh_query_ray",    # ray queries, any-hit, intersection counts
    "geometry/test_mesh_query_aabb",   # box (and sphere) queries over a mesh
    "geometry/test_volume",            # wp.Volume: NanoVDB grids, sampling, stores, gradients
    "tile/test_tile_fft",           # tile_fft / tile_ifft and their gradients
    "tile/test_tile_reduce",        # tile_sum and the other reductions
    "tile/test_tile",               # tile loads, stores, maps, arithmetic
    "tile/test_tile_construction",  # tile_zeros, tile_ones, tile_full, tile_arange ...
    "tile/test_tile_load",          # tile_load offsets, bounds, views
    "tile/test_tile_matmul",        # tile_matmul, with out/alpha/beta, and its gradients
    "test_utils",             # kl.utils: array_sum/inner/scan/cast, sorts, runlength_encode
    "test_array_reduce",      # kl.utils.array_sum / array_inner over axes and counts
    "test_runlength_encode",  # kl.utils.runlength_encode and its errors
    "test_tuple",             # tuples as kernel values and func parameters
    "test_bool",              # bool scalars, vectors and matrices, constants
    "test_enum",              # IntEnum / IntFlag members in kernels
    "test_operators",         # operators, bare type names, struct operators via user funcs
    "test_adam",              # kl.optim.Adam
    "test_sgd",               # kl.optim.SGD
    "test_generics",          # Any, Int/Float/Scalar annotations, overloads, type(x)
    "test_indexedarray",      # wp.indexedarray in kernels, in structs, at Python scope
    "matrix/test_mat_basics",           # matrix types, indexing, components, comparisons
    "matrix/test_mat_constructors",     # matRC(...), matrix(..., shape=, dtype=), their errors
    "matrix/test_mat_elementwise_ops",  # +, -, *, /, cw_mul, cw_div on every scalar type
    "matrix/test_mat_linalg",           # mul (incl. vec * mat), outer, transpose, det, inverse
    "matrix/test_mat_assign_copy",      # matrix assignment is a copy, with adjoints
    "test_vec_constructors",            # vecN(...), vector(..., length=, dtype=), casts
    "test_vec_scalar_ops",              # vector-scalar arithmetic and math, every scalar type
    "test_quat_assign_copy",            # quaternion assignment is a copy, with adjoints
    "test_spatial_assign_copy",         # transform / spatial vector assignment copies
    "test_triangle_closest_point",      # closest point on a triangle (a user func)
    "test_future_annotations",          # kernels under `from __future__ import annotations`
    "test_codegen_continue",            # continue in loops, unrolled and not
    "test_fp16",                        # float16 loads, stores, kl.float conversions, grads
]

# The quick subset CI runs (the whole run is a documented command: see README.md).
CI_FILES = ["test_lerp", "test_smoothstep", "test_rounding", "test_iter", "test_unpack",
            "test_vec_lite", "matrix/test_mat_lite", "test_overwrite", "test_scalar_ops"]

_CODEGEN = "reads Warp's code generator (Kernel.adj, codegen builders): not a kernel-language test"
_NATIVE = "native C++ snippets (wp.func_native): kernlab compiles only its typed Python subset"
_LOGGER = "patches Warp's internal logger (warp._src.logger._warnings_seen)"
_NATIVE_MESH = "mocks Warp's native mesh functions (runtime.core.wp_mesh_*) to fail"

_MATHDX = "Warp's cuBLASDx/LTO build internals (warp._src.build, Module hashing options)"

EXCLUDED: dict[str, str] = {
    "tile.test_tile_matmul.TestTileMatmul.test_gemm_operand_alignments": _MATHDX,
    "tile.test_tile_matmul.TestTileMatmul.test_mathdx_arch_mapping": _MATHDX,
    "tile.test_tile_matmul.TestTileMatmul.test_mathdx_sm107_lto_target": _MATHDX,
    "tile.test_tile_matmul.TestTileMatmul.test_tile_matmul_tf32_compilation": _MATHDX,
    "tile.test_tile_matmul.TestTileMatmul.test_tile_matmul_tf32_fallback_cpu": _MATHDX,
    "tile.test_tile.TestTile.test_tile_component_assign_then_store_cpu":
        "a racy program on the CPU: with Warp's default enable_cpu_blocks=False every thread "
        "has its own tile and stores all of it; Warp 1.19 itself then keeps only the last "
        "thread's lane (run by hand on this machine: lanes 0-6 zero, lane 7 (0, 24, 0)), "
        "kernlab's parallel threads whichever stores last; the test needs cooperative blocks",
    "geometry.test_mesh.TestMesh.test_mesh_create_raises_on_native_failure": _NATIVE_MESH,
    "geometry.test_mesh.TestMesh.test_mesh_refit_raises_on_native_device_failure":
        _NATIVE_MESH,
    "geometry.test_mesh.TestMesh.test_mesh_points_setter_raises_on_native_device_failure":
        _NATIVE_MESH,
    "test_conditional.TestConditional.test_branch_local_merge_codegen_cpu": _CODEGEN,
    "test_conditional.TestConditional.test_conditional_unequal_types_cpu":
        "unloads a module through warp._src.context.user_modules (Warp's module registry)",
    "test_launch.TestLaunch.test_launch_cmd_composite_defaults_cpu": _CODEGEN,
    "test_codegen_continue.TestCodeGenContinue.test_unrolling_policy": _CODEGEN,
    "test_func.TestFunc.test_native_func_export": _NATIVE,
    "test_func.TestFunc.test_native_function_error_resolution": _NATIVE,
    "test_grad_customs.TestGradCustoms.test_native_snippet_in_custom_grad_cpu": _NATIVE,
    "test_grad_customs.TestGradCustoms.test_native_snippet_in_forward_with_custom_grad_cpu":
        _NATIVE,
    "test_grad_debug.TestGradDebug.test_jacobian_plot_validation":
        "validates warp._src.autograd.FunctionMetadata, an internal class",
    "test_launch.TestLaunch.test_launch_numpy_and_boolean_scalar_to_composite_param_"
    "deprecated": _LOGGER,
    "test_struct.TestStruct.test_struct_numpy_and_boolean_scalar_to_composite_field_"
    "deprecated": _LOGGER,
}

# Tests that fail because kernlab's answer is the mathematically right one and Warp's is
# not (or because kernlab refuses what it cannot differentiate exactly or cannot vouch is
# memory-safe, or its Python values are a different kind of object by design). They count
# as failures in the total; the runner names them so nobody "fixes" them.
DIFFERS_ON_PURPOSE: dict[str, str] = {
    "test_arithmetic.TestArithmetic.test_binary_ops_*":
        "d(x1 mod x2)/dx2 is -trunc(x1/x2), not 0 as Warp's test expects",
    "test_tape.TestTape.test_tape_copy_adjoint_out_of_scope_cpu":
        "an overlapping copy gets the analytic gradient [2, 1, 1, 0] (Warp's test comment "
        "names it) instead of Warp's byte-copy fallback [1, 1, 1, 1]",
    "test_tape.TestTape.test_tape_copy_adjoint_fallback_warning_cpu":
        "no fallback, so no fallback warning: every copy adjoint is the analytic one",
    "test_special_values.TestSpecialValues.test_atomic_minmax_adjoint_*":
        "the value an atomic_min/max returns is refused as a differentiable value "
        "(GradientError): in general it depends on the order threads run in",
    "test_composite_component_adjoint.TestCompositeComponentAdjoint."
    "test_array_composite_slot_multiply_assign_backward_rejected_cpu":
        "a[i][k] *= s is refused when a gradient is asked for (tape.backward names the "
        "line), not at the launch: the forward pass itself is fine",
    "test_array.TestArray.test_retain_grad_slice_view_store_cpu":
        "retain_grad also holds for stores through an in-kernel view: y.grad keeps dz/dy = 1 "
        "(Warp zeroes it for views only)",
    "test_array.TestArray.test_kernel_array_from_ptr_variable_shape_cpu":
        "array(ptr=p) of a raw uint64 address passed to the kernel is refused (a "
        "KernelTypeError naming the line): kernlab takes ptr=a.ptr of an array parameter a, "
        "whose memory it knows, and cannot vouch for an arbitrary address",
    "test_array.TestArray.test_to_list_vector_cpu":
        "a.list() gives values of the vector type (isinstance(x, vec3) holds, == compares "
        "them) but they are kernlab's NumPy-backed values, as vec3(...) makes them, not "
        "ctypes.Array instances: the test also asserts Warp's ctypes base class",
    "test_array.TestArray.test_to_list_matrix_cpu":
        "as test_to_list_vector: matrix values are NumPy-backed, not ctypes.Array instances",
    "geometry.test_volume.TestVolume.test_volume_transform_gradient_cpu":
        "d volume_index_to_world(p)/dp is the map's matrix: reverse mode multiplies by its "
        "transpose (torus.nvdb's map is a rotation, not symmetric); Warp's adjoint and its "
        "test use the matrix itself",
}


def _lookup(table: dict, test_id: str) -> str | None:
    if test_id in table:
        return table[test_id]
    for key, reason in table.items():
        if key.endswith("*") and test_id.startswith(key[:-1]):
            return reason
    return None


def excluded_reason(test_id: str) -> str | None:
    """The reason a test is left out, or None when it counts."""
    return _lookup(EXCLUDED, test_id)


def differs_reason(test_id: str) -> str | None:
    """Why kernlab's result differs from what a Warp test expects on purpose, or None."""
    return _lookup(DIFFERS_ON_PURPOSE, test_id)
