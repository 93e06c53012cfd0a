"""What NVIDIA Warp 1.19 has and kernlab does not, by family (the "Missing" part of
docs/warp.rst).

Each entry is a list of name patterns (``fnmatch``: ``tile_*``), the family and a note.
tests/test_docs.py keeps the table honest both ways: no pattern may match a name kernlab
now has (implementing a feature means moving it out of this table), and, where warp-lang
is installed, every public name of ``warp`` and every Warp kernel builtin is either in
kernlab or matched here, so a gap cannot go unlisted.
"""
from __future__ import annotations

import fnmatch

MISSING = [
    (["block_dim", "tile_add_inplace",
      "tile_assign", "tile_atomic_add_indexed", "tile_axpy",
      "tile_bit_and_inplace", "tile_bit_or_inplace", "tile_bit_xor_inplace",
      "tile_bvh_*", "tile_cholesky*", "tile_diag_add", "tile_dot",
      "tile_empty", "tile_from_thread", "tile_load_indexed", "tile_lower_solve*",
      "tile_mesh_*", "tile_query_valid",
      "tile_randf", "tile_randi",
      "tile_scatter_*", "tile_slice_indexed", "tile_sort", "tile_stack*",
      "tile_store_indexed", "tile_sub_inplace", "tile_upper_solve*", "tile_view"],
     "Tile programming",
     "the tile operations beyond those kernlab has (launch_tiled, tile_load/store/atomic_add "
     "on arrays and array views, tile, tile_zeros/ones/full/arange, tile_sum (whole or along "
     "an axis), tile_max/min/argmax/argmin, tile_reduce, tile_scan_*, tile_map, "
     "tile_broadcast, tile_reshape, tile_squeeze, tile_astype, tile_transpose, "
     "tile_fft/tile_ifft, tile_matmul, tile_extract and element-wise tile arithmetic "
     "exist): sorts, solvers and the rest"),
    (["MeshQueryAABBTiled", "mesh_get_bvh", "mesh_get_group_root",
      "mesh_query_aabb_tiled", "mesh_query_aabb_next_tiled", "mesh_query_point_sign_parity",
      "Bvh", "Bvh*", "bvh_*", "HashGridQuery", "volume_sample_index",
      "volume_sample_grad_index", "volume_lookup_index", "volume_voxel_count",
      "Texture", "Texture*", "texture_sample", "closest_point_edge_edge", "intersect_tri_tri",
      "MemoryKind"],
     "Geometry queries",
     "BVHs, index volumes, textures, mesh groups and parity-sign queries (kl.HashGrid, "
     "kl.Mesh, kl.Volume of float32/int32/vec3f/vec4f grids and their queries exist)"),
    (["poisson", "sample_cdf"],
     "Random distributions",
     "Poisson variates and sampling from a CDF array (rand_init, randf, randi, randu, randn "
     "and the sample_unit_* and sample_triangle helpers exist)"),
    (["dense_*"],
     "Linear algebra",
     "the dense_* solvers (div_approx, inverse, inverse_approx, diag, "
     "get_diag, skew, ddot, svd2, svd3, qr3 and eig3 exist)"),
    (["breakpoint", "address", "address_of",
      "array_store", "load", "store", "view", "indexref", "extract", "assign",
      "assign_copy", "assign_inplace", "*_inplace", "pos", "index", "iter_next", "slice",
      "tuple", "quaternion", "ref", "cast"],
     "Other kernel builtins",
     "breakpoint, wp.cast (kernlab casts with float32(x) "
     "and friends) and the builtins behind Warp's own code generation (load/store/address, "
     "the *_inplace operators): kernlab's kernels write operators as Python does"),
    (["float", "int", "len", "range", "reversed"],
     "Python builtins as Warp builtins",
     "Warp registers these as builtins; kernlab's kernels use Python's own (they work the "
     "same, they are just not kl.* names)"),
    (["Stream", "Event", "synchronize_stream", "synchronize_event", "record_event",
      "wait_event", "wait_stream", "get_stream", "set_stream", "get_event_elapsed_time",
      "event_from_ipc_handle", "from_ipc_handle", "CaptureMode", "capture_if",
      "capture_while", "capture_save", "capture_load", "capture_load_from_bytes",
      "capture_debug_dot_print", "is_conditional_graph_supported"],
     "Streams, events, graph extras",
     "kernlab runs each device's work on one stream (kl.ScopedStream(None) is accepted); "
     "kl.ScopedCapture / capture_begin / capture_end / capture_launch record and replay a "
     "kl.Graph, without conditional nodes or saving"),
    (["Allocator", "CudaManagedAllocator", "ScopedAllocator", "get_device_allocator",
      "set_device_allocator", "set_cuda_allocator", "ScopedMempool", "ScopedMempoolAccess",
      "*mempool*", "ScopedPeerAccess", "*peer_access*", "can_access",
      "ScopedMemoryTracker", "print_memory_report"],
     "Memory pools, allocators and peer access", ""),
    (["TimingResult", "timing_begin", "timing_end", "timing_print",
      "ScopedCudaProfiler", "cuda_profiler_start", "cuda_profiler_stop", "TIMING_*", "Logger",
      "ScopedLogger", "ScopedLogLevel", "LOG_*", "get_logger", "set_logger",
      "print_diagnostics"],
     "Timing, profiling and logging",
     "kl.ScopedTimer exists; kl.config.verbose reports compiles and cache hits"),
    (["Device", "DeviceLike", "get_devices", "get_cuda_device", "get_cuda_devices",
      "get_cuda_device_count", "get_preferred_device",
      "is_device_available", "map_cuda_device", "unmap_cuda_device",
      "get_cuda_driver_version", "get_cuda_toolkit_version", "get_cuda_supported_archs",
      "get_cuda_max_cluster_dim", "get_cuda_kernel_properties",
      "get_suggested_block_size"],
     "Device objects and queries",
     "devices are strings (\"cpu\", \"cuda:0\"); kl.get_device, kl.is_cuda_available, kl.is_cpu_available exist"),
    (["*jax*", "*paddle*", "dtype_from_torch", "dtype_to_torch", "stream_from_torch", "stream_to_torch", "to_dlpack", "from_ptr",
      "GLTextureResource", "RegisteredGLBuffer"],
     "Interop beyond NumPy, PyTorch and DLPack import",
     "JAX, Paddle, OpenGL and raw pointers; kl.from_torch/to_torch/from_dlpack exist"),
    (["fabricarray", "fabricarrayarray", "indexedfabricarray", "indexedfabricarrayarray",
      "fixedarray"],
     "Array kinds", "fabric arrays and fixed-size arrays (array and indexedarray exist)"),
    (["ModuleBuildOptions",
      "compile_aot_module", "load_aot_module", "clear_kernel_cache", "clear_lto_cache",
      "build_experimental", "get_cpu_kernel_cache_key", "map", "Function",
      "WarpCodegenIndexError", "WarpDeterminismError",
      "JaxCallableGraphMode", "JaxModulePreloadMode", "handle"],
     "Module system and internals",
     "module build options, ahead-of-time modules, wp.map; kernlab "
     "compiles each kernel on its own and caches it (kl.config.cache_dir)"),
]


def family_of(name: str) -> str | None:
    """The family of a Warp name kernlab lacks, or None when no pattern matches it."""
    for patterns, family, _note in MISSING:
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return family
    return None
