"""kernlab: write, differentiate and inspect compute kernels — a Warp-compatible subset.

``import kernlab as kl`` (or ``as wp``). Kernels are typed Python functions
(``@kl.kernel``), run with ``kl.launch`` on arrays (``kl.array``, ``kl.zeros`` ...) and
differentiated with ``kl.Tape``. The documentation is in the repository's ``docs/``
folder (build it with ``python -m sphinx -W docs docs/_build``); ``help(kl.sin)``
describes any builtin. ``__all__`` below lists every public name.
"""
from __future__ import annotations

from . import config, types
from .config import DeterministicMode
from .errors import (GradientError, KernelAttributeError, KernelError, KernelKeyError,
                     KernelNameError, KernelSyntaxError, KernelTypeError, KernelValueError,
                     LaunchError, WarpCodegenAttributeError, WarpCodegenError,
                     WarpCodegenKeyError, WarpCodegenTypeError, WarpCodegenValueError)
from .kernel import (Func, Kernel, Module, force_load, func, func_grad, func_native,
                     func_replay, get_module, get_module_options, kernel, load_module,
                     set_module_options, source)
from .generics import overload
from .lang import (FUNCTIONS as _FUNCTIONS, TILE_FORMS as _TILE_FORMS, adjoint, atomic_add, atomic_and, atomic_cas,
                   atomic_exch, atomic_max, atomic_min, atomic_or, atomic_sub, atomic_xor,
                   constant, expect_eq, expect_near, expect_neq, grad, identity,
                   kprint as print, matrix_from_cols, matrix_from_rows, printf, static,
                   tid)  # noqa: A004
from .types import matrix, vector  # types in Python; constructors with shape=/length= in kernels
from .runtime.array import (array, array1d, array2d, array3d, array4d, clone, copy, empty,
                            empty_like, from_numpy, full, full_like, ones, ones_like, zeros,
                            zeros_like)
from .runtime.device import (ScopedDevice, ScopedStream, get_device, init, is_cuda_available,
                             is_cpu_available, is_cubql_available,
                             set_device, synchronize, synchronize_device)
from .runtime.indexed import (indexedarray, indexedarray1d, indexedarray2d, indexedarray3d,
                              indexedarray4d)
from .runtime.launch import Launch, launch, launch_tiled
from .runtime.capture import (Graph, ScopedCapture, capture_begin, capture_end,
                               capture_launch)
from .runtime.timing import ScopedTimer
from .runtime.structs import struct
from .runtime.tape import Tape
from .runtime.tangent import jvp
from .types import (bool_ as bool, float32, float64, int32, int64, mat22, mat22d, mat33,
                    mat33d, mat44, mat44d, uint32, vec2, vec2d, vec3, vec3d, vec4, vec4d)
from .types import (quat, quatd, quatf, quath, spatial_matrix, spatial_matrixd,
                    spatial_matrixf, spatial_matrixh, spatial_vector, spatial_vectord,
                    spatial_vectorf, spatial_vectorh, transform, transformd, transformf,
                    transformh)
from .types import Float, GenericScalar as Scalar, Int  # noqa: E402 (generic annotations)
from .types import (NAMED as _NAMED, bfloat16, dtype_from_numpy, dtype_to_numpy,  # noqa: E402
                    float16,
                    int8, int16, uint8, uint16, uint64)
from . import _src  # noqa: E402,F401  (wp._src.types, for code that reaches into Warp's)
from .constants import *  # noqa: E402,F401,F403  (kl.pi, kl.inf, kl.HALF_PI ...)
from .mathfuncs import (lower_bound, quat_from_euler, quat_to_euler, quat_to_rpy,  # noqa: E402
                        quat_twist, quat_twist_angle, quat_twist_angle_signed,
                        transform_twist, transform_wrench, velocity_at_point)
from .perlin import curlnoise, noise, pnoise  # noqa: E402
from .norms import (norm_huber, norm_l1, norm_l2, norm_pseudo_huber,  # noqa: E402
                    smooth_normalize)
from . import autograd  # noqa: E402
from . import utils  # noqa: E402,F401  (kl.utils: array_sum, radix_sort_pairs, ...)
from .interop import (device_from_torch, device_to_torch, from_dlpack, from_torch,  # noqa: E402
                      to_torch, to_torch_function)  # torch: lazily

globals().update(_NAMED)  # vec2i, vec3ub, mat33h ... (every named vector/matrix type)
globals().update(_TILE_FORMS)  # kl.tile_load, kl.tile_fft, ... (frontend/tiles.py)
globals().update(_FUNCTIONS)  # kl.sin, kl.dot, ... (also callable on NumPy values)
from .hashgrid import (HashGrid, hash_grid_point_id, hash_grid_query,  # noqa: E402
                       hash_grid_query_next)
from .mesh import (Mesh, MeshQueryPoint, MeshQueryRay, mesh_eval_face_normal,  # noqa: E402
                   mesh_eval_position, mesh_eval_velocity, mesh_get_index, mesh_get_point,
                   mesh_get_velocity, mesh_query_aabb, mesh_query_aabb_next,
                   mesh_query_furthest_point_no_sign, mesh_query_next, mesh_query_point,
                   mesh_query_point_no_sign, mesh_query_point_sign_normal,
                   mesh_query_point_sign_winding_number, mesh_query_ray,
                   mesh_query_ray_anyhit, mesh_query_ray_count_intersections,
                   mesh_query_sphere, mesh_get)
from .frontend.mesh import MeshQueryAABB  # noqa: E402
from .volume import (Volume, volume_index_to_world, volume_index_to_world_dir,  # noqa: E402
                     volume_lookup, volume_lookup_f, volume_lookup_i, volume_lookup_v,
                     volume_sample, volume_sample_f, volume_sample_grad, volume_sample_grad_f,
                     volume_sample_i, volume_sample_v, volume_store, volume_store_f,
                     volume_store_i, volume_store_v, volume_world_to_index,
                     volume_world_to_index_dir)

MeshQuery = MeshQueryAABB  # Warp's parent of the box and sphere query types

from .runtime import cache as _cache  # noqa: E402,F401 — before the preload thread needs it
# What every kernel's first launch needs, loaded with kernlab (3 ms) rather than inside it:
# the cache of front-end results, the in-place bookkeeping of launches and the CPU backend's
# loading side (no LLVM: backends/llvm/variants.py; llvmlite loads only to compile).
from .runtime import ir_cache as _ir_cache  # noqa: E402,F401
from .autodiff import inplace as _inplace  # noqa: E402,F401
from .backends.llvm import variants as _variants  # noqa: E402,F401

_ir_cache.package_fingerprint()  # the source kernlab runs is the source it imported: the
_variants._fingerprint()         # cache keys name that (a file edited later is not running)

from . import tracebacks as _tracebacks  # noqa: E402

_tracebacks.install()  # a kernlab error ending a script hides kernlab's frames

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext kernlab``: registers the ``%%kernel`` cell magic and kernlab's error
    display in IPython/Jupyter."""
    from .notebook import magic
    magic.load_ipython_extension(ipython)


def _public_names() -> list[str]:
    """What ``import kernlab`` offers: every name without a leading underscore except the
    package's own submodules (kl.config and kl.autograd are API and stay) and the names a
    star import must not bring in (``annotations`` from __future__)."""
    import types as _types
    keep_modules = {"config", "autograd"}
    return sorted(name for name, value in globals().items()
                  if not name.startswith("_") and name != "annotations"
                  and (not isinstance(value, _types.ModuleType) or name in keep_modules))


__all__ = _public_names()  # help(kl) lists these; docs/api.rst documents each


def __getattr__(name):  # kl.lab is imported on first use: ipywidgets is optional
    if name == "lab":
        from .notebook import lab
        return lab
    raise AttributeError(f"module 'kernlab' has no attribute {name!r}")
