"""Volume reads in kernels (mixed into the Lowerer): the ``volume_*`` functions of
kernlab/volume.py, Warp's typed forms (``volume_sample_f``, ``volume_lookup_v`` ...) and its
generic ones with a ``dtype`` (``volume_sample(id, uvw, mode, dtype=float)``).

A volume reaches a kernel as its ``uint64`` id, a kernel parameter; its first use adds the
volume's arrays as hidden parameters (frontend/hashgrid.py ``handle_arrays``, filled at
launch by kernlab/handles.py). Each call is a call of a func written in kernlab's kernel
language in kernlab/volume_queries.py, so every backend runs one definition and reverse mode
differentiates the sampling with respect to the point. ``volume_sample_grad_f`` and
``volume_sample_grad`` set their ``grad`` argument, a local, as Warp's output argument does.
"""
from __future__ import annotations

import ast

from ..errors import KernelTypeError
from ..types import float32, int32, vec3, vec3d, vec4
from .mesh import called_name

NOT_VOLUME = object()

_ID, _UVW, _MODE = ("id", None), ("uvw", vec3), ("sampling_mode", int32)
_IJK = (("i", int32), ("j", int32), ("k", int32))
_DTYPE = ("dtype", None)
# name -> (parameters, the value kind it reads or None for a dtype argument / a transform)
SIGNATURES = {
    "volume_sample_f": ((_ID, _UVW, _MODE), "f"),
    "volume_sample_v": ((_ID, _UVW, _MODE), "v"),
    "volume_sample_i": ((_ID, _UVW), "i"),
    "volume_sample_grad_f": ((_ID, _UVW, _MODE, ("grad", None)), "f"),
    "volume_lookup_f": ((_ID,) + _IJK, "f"),
    "volume_lookup_v": ((_ID,) + _IJK, "v"),
    "volume_lookup_i": ((_ID,) + _IJK, "i"),
    "volume_sample": ((_ID, _UVW, _MODE, _DTYPE), None),
    "volume_sample_grad": ((_ID, _UVW, _MODE, ("grad", None), _DTYPE), None),
    "volume_lookup": ((_ID,) + _IJK + (_DTYPE,), None),
    "volume_store_f": ((_ID,) + _IJK + (("value", float32),), "f"),
    "volume_store_v": ((_ID,) + _IJK + (("value", vec3),), "v"),
    "volume_store_i": ((_ID,) + _IJK + (("value", int32),), "i"),
    "volume_store": ((_ID,) + _IJK + (("value", None),), None),
    "volume_index_to_world": ((_ID, ("uvw", None)), None),
    "volume_world_to_index": ((_ID, ("xyz", None)), None),
    "volume_index_to_world_dir": ((_ID, ("uvw", None)), None),
    "volume_world_to_index_dir": ((_ID, ("xyz", None)), None),
}
_HAS_GRAD = ("f", "v", "v4")  # grad: vec3, mat33, mat43 (a Jacobian row per component)


def _module():
    from .. import volume_queries  # the volume's funcs; imported when a kernel first needs them
    return volume_queries


class VolumeMixin:
    def volume_call(self, obj, node):
        """Lower a call of one of kernlab/volume.py's kernel functions, or NOT_VOLUME."""
        from .. import volume  # the Python names kernels call
        name = called_name(obj, volume, SIGNATURES)  # frontend/mesh.py
        if name is None:
            return NOT_VOLUME
        params, kind = SIGNATURES[name]
        bound = self.bind_mesh_args(name, list(params), {}, node)  # frontend/mesh.py
        if kind is None and ("dtype", None) in params:
            kind = self.volume_dtype(name, bound["dtype"])
        tree, values, map64 = self.handle_arrays(bound["id"], name, "volume")
        first_site = len(self.func.sites)
        result = self.volume_lower(_module(), name, kind, bound, tree, values, map64)
        self.report_at_call(first_site, name)  # frontend/mesh.py
        return result

    def volume_dtype(self, name: str, node) -> str:
        """'f', 'v' or 'i' for the ``dtype`` argument of a generic volume function."""
        from ..frontend.exprs import PyObj
        d = self.expr(node)
        obj = d.obj if isinstance(d, PyObj) else None
        if obj is float or obj == float32:
            return "f"
        if obj is int or obj == int32:
            return "i"
        if obj == vec3:
            return "v"
        if obj == vec4:
            return "v4"
        shown = getattr(obj, "__name__", None) or ast.unparse(node)
        raise KernelTypeError(f"{name}(): kernlab volumes hold float32, int32, vec3f or vec4f "
                              f"values; dtype={shown} is not supported", self.b.loc)

    def volume_store(self, V, name, kind, bound, a, tree, values):
        ijk = [a["i"], a["j"], a["k"]]
        value = a.get("value")
        if value is None:  # the generic form: the value's type picks the volume's
            value = self.value(self.expr(bound["value"]))
            kind = {float32: "f", vec3: "v", int32: "i", vec4: "v4"}.get(value.type)
            if kind is None:
                raise KernelTypeError(f"{name}(): kernlab volumes hold float32, int32, vec3f or "
                                      f"vec4f values, not {value.type}", self.b.loc)
        if kind == "i":
            return self.call_func(V.store_i, [tree] + ijk + [value], {})
        fn = {"f": V.store_f, "v": V.store_v, "v4": V.store_v4}[kind]
        return self.call_func(fn, [tree, values] + ijk + [value], {})

    def volume_lower(self, V, name, kind, bound, tree, values, map64):
        a = {p: self.mesh_arg(name, p, t, bound[p]) for p, t in SIGNATURES[name][0]
             if t is not None}
        if name.startswith(("volume_index_to", "volume_world_to")):
            node = bound["uvw" if "uvw" in bound else "xyz"]
            p = self.value(self.expr(node))
            fn = name[len("volume_"):]
            if p.type in (vec3, vec3d):  # the float32 map for a vec3, the float64 one for vec3d
                m = values if p.type == vec3 else map64
                return self.call_func(getattr(V, fn), [m, p], {})
            raise KernelTypeError(f"{name}(): the point must be a vec3 or vec3d, got {p.type}",
                                  self.b.loc)
        if name.startswith("volume_store"):
            return self.volume_store(V, name, kind, bound, a, tree, values)
        if name.startswith(("volume_lookup",)):
            ijk = [a["i"], a["j"], a["k"]]
            if kind == "i":
                return self.call_func(V.lookup_i, [tree] + ijk, {})
            fn = {"f": V.lookup_f, "v": V.lookup_v, "v4": V.lookup_v4}[kind]
            return self.call_func(fn, [tree, values] + ijk, {})
        uvw = a["uvw"]
        mode = a.get("sampling_mode")
        if "grad" in bound:
            if kind not in _HAS_GRAD:
                raise KernelTypeError(f"{name}(): an int32 volume has no gradient; sample it "
                                      "with volume_sample(..., dtype=int)", self.b.loc)
            fn = {"f": V.sample_grad_f, "v": V.sample_grad_v, "v4": V.sample_grad_v4}[kind]
            val, grad = self.unpack(self.call_func(fn, [tree, values, uvw, mode], {}))
            self.set_output(name, "grad", bound["grad"], grad,  # frontend/mesh.py; Warp's words:
                            lambda local, held: "Incompatible gradient type, expected "
                                                f"{_warp_name(grad.type)}, got "
                                                f"{_warp_name(held)} (the local '{local}')")
            return val
        if kind == "i":  # an int volume is read at the nearest voxel (Warp: use CLOSEST)
            return self.call_func(V.sample_i, [tree, uvw], {})
        fn = {"f": V.sample_f, "v": V.sample_v, "v4": V.sample_v4}[kind]
        return self.call_func(fn, [tree, values, uvw, mode], {})


def _warp_name(t) -> str:
    """Warp's short name of a float32 vector or matrix type (mat43f), else kernlab's."""
    shape = getattr(t, "shape", None)
    if getattr(t, "scalar", None) == float32 and shape:
        return f"vec{shape[0]}f" if len(shape) == 1 else f"mat{shape[0]}{shape[1]}f"
    return str(t)
