"""Mesh queries in kernels (mixed into the Lowerer): the ``mesh_*`` functions of
kernlab/mesh.py, in Warp's struct-returning form (``q = mesh_query_point(id, p, d)``) and
its older output-argument form (``mesh_query_point(id, p, d, sign, face, u, v)`` sets the
four locals and gives whether a point was found).

A mesh reaches a kernel as its ``uint64`` id, a kernel parameter; its first use adds the
mesh's arrays as hidden parameters (frontend/hashgrid.py ``handle_arrays``, filled at
launch by kernlab/handles.py). Each call is a call of a func written in kernlab's kernel
language in kernlab/mesh_queries.py, so every backend runs one definition and reverse mode
differentiates what those funcs compute. ``mesh_query_aabb`` gives a query object whose
walk state lives in locals, advanced by ``mesh_query_aabb_next`` or ``for face in query``.
"""
from __future__ import annotations

import ast
from dataclasses import replace

from ..errors import KernelSyntaxError, KernelTypeError
from ..ir.nodes import Value
from ..types import bool_, float32, int32, vec3
from . import structs

NOT_MESH = object()

# name -> (parameters of the struct form, defaults, outputs of the older form: (name, type)
# in the order they come after the inputs; inputs after the outputs take the defaults)
F, I, V = float32, int32, vec3
_POINT_OUT = (("inside", F), ("face", I), ("bary_u", F), ("bary_v", F))
_NOSIGN_OUT = (("face", I), ("bary_u", F), ("bary_v", F))
SIGNATURES = {
    "mesh_eval_position": ((("id", None), ("face", I), ("bary_u", F), ("bary_v", F)), {}, None),
    "mesh_eval_velocity": ((("id", None), ("face", I), ("bary_u", F), ("bary_v", F)), {}, None),
    "mesh_eval_face_normal": ((("id", None), ("face", I)), {}, None),
    "mesh_get": ((("id", None),), {}, None),
    "mesh_get_point": ((("id", None), ("index", I)), {}, None),
    "mesh_get_velocity": ((("id", None), ("index", I)), {}, None),
    "mesh_get_index": ((("id", None), ("face_vertex_index", I)), {}, None),
    "mesh_query_point": ((("id", None), ("point", V), ("max_dist", F)), {}, _POINT_OUT),
    "mesh_query_point_no_sign": ((("id", None), ("point", V), ("max_dist", F)), {},
                                 _NOSIGN_OUT),
    "mesh_query_furthest_point_no_sign": ((("id", None), ("point", V), ("min_dist", F)), {},
                                          _NOSIGN_OUT),
    "mesh_query_point_sign_normal": ((("id", None), ("point", V), ("max_dist", F),
                                      ("epsilon", F)), {"epsilon": 1.0e-3}, _POINT_OUT),
    "mesh_query_point_sign_winding_number": (
        (("id", None), ("point", V), ("max_dist", F), ("accuracy", F), ("threshold", F)),
        {"accuracy": 2.0, "threshold": 0.5}, _POINT_OUT),
    "mesh_query_ray": ((("id", None), ("start", V), ("dir", V), ("max_t", F), ("root", I)),
                       {"root": -1},
                       (("t", F), ("bary_u", F), ("bary_v", F), ("sign", F), ("normal", V),
                        ("face", I))),
    "mesh_query_ray_anyhit": ((("id", None), ("start", V), ("dir", V), ("max_t", F),
                               ("root", I)), {"root": -1}, None),
    "mesh_query_ray_count_intersections": ((("id", None), ("start", V), ("dir", V),
                                            ("root", I)), {"root": -1}, None),
    "mesh_query_aabb": ((("id", None), ("low", V), ("high", V)), {}, None),
    "mesh_query_sphere": ((("id", None), ("center", V), ("radius", F)), {}, None),
}
# the struct fields each output of the older form takes, in order
_FIELDS = {"inside": "sign", "face": "face", "bary_u": "u", "bary_v": "v", "t": "t",
           "sign": "sign", "normal": "normal"}


class MeshQueryAABB:
    """A box (or sphere) query in a kernel: the mesh's arrays, the box (the centre and
    squared radius) and the walk's locals."""

    def __init__(self, arrays, state: dict, sphere: bool = False):
        self.arrays, self.state, self.sphere = arrays, state, sphere


def _module():
    from .. import mesh_queries  # the queries' funcs; imported when a kernel first needs them
    return mesh_queries


def called_name(obj, module, names) -> str | None:
    """The name of ``obj`` where it is ``module``'s function of that name and the name is
    in ``names``, else None (the call is not one of that module's kernel functions)."""
    name = getattr(obj, "__name__", "")
    if getattr(obj, "__module__", None) != module.__name__ or name not in names or \
            getattr(module, name, None) is not obj:
        return None
    return name


class MeshMixin:
    def mesh_call(self, obj, node):
        """Lower a call of one of kernlab/mesh.py's kernel functions, or NOT_MESH."""
        from .. import mesh  # the Python names kernels call
        name = called_name(obj, mesh, mesh.FUNCTIONS)
        if name is None:
            return NOT_MESH
        M = _module()
        if name in ("mesh_query_aabb_next", "mesh_query_next"):
            if node.keywords or len(node.args) != 2:
                raise KernelTypeError(f"{name}() takes 2 arguments (query, index)", self.b.loc)
            return self.mesh_aabb_next(self.expr(node.args[0]), node.args[1], name)
        params, defaults, outputs = SIGNATURES[name]
        older = outputs is not None and len(node.args) > len(params)
        full = list(params)
        if older:  # inputs, outputs, then the inputs that have defaults
            required = [p for p in params if p[0] not in defaults]
            full = required + list(outputs) + [p for p in params if p[0] in defaults]
        bound = self.bind_mesh_args(name, full, defaults, node)
        arrays = self.handle_arrays(bound["id"], name, "mesh")
        vals = {p: self.mesh_arg(name, p, t, bound[p]) for p, t in full
                if p != "id" and (not older or p not in dict(outputs))}
        first_site = len(self.func.sites)
        result = self.mesh_lower(M, name, arrays, vals)
        self.report_at_call(first_site, name)
        if not older:
            return result
        for out, t in outputs:
            value = structs.get_field(self, result, _FIELDS[out])
            self.set_output(name, out, bound[out], value,
                            lambda local, held: f"the output '{out}' is {value.type}, but "
                                                f"'{local}' holds {held}")
        return structs.get_field(self, result, "result")

    def set_output(self, name: str, out: str, target, value: Value, mismatch) -> None:
        """Set the local that the output argument ``out`` of ``name()`` names (``target``,
        its AST node) to ``value``; ``mismatch(local, held)`` words the error where that
        local already holds another type."""
        if not isinstance(target, ast.Name):
            raise KernelSyntaxError(f"{name}(): the output argument '{out}' must be the name "
                                    "of a local, which the call sets", self.b.loc)
        held = getattr(self.scope.names.get(target.id), "type", None)
        if held is not None and held != value.type:
            raise KernelTypeError(f"{name}(): {mismatch(target.id, held)}", self.b.loc)
        self.assign_name(target.id, value)

    def report_at_call(self, first_site: int, name: str) -> None:
        """A bounds error inside the query's funcs (a face or vertex index out of range)
        is reported at the user's call, naming the function."""
        sites = self.func.sites
        for k in range(first_site, len(sites)):
            sites[k] = replace(sites[k], loc=self.b.loc,
                               array=f"{sites[k].array}' read by '{name}()")

    def bind_mesh_args(self, name, full, defaults, node) -> dict:
        names = [p for p, _ in full]
        if len(node.args) > len(names):
            raise KernelTypeError(f"{name}() takes at most {len(names)} arguments "
                                  f"({', '.join(names)}), got {len(node.args)}", self.b.loc)
        bound = dict(zip(names, node.args))
        for kw in node.keywords:
            if kw.arg not in names or kw.arg in bound:
                raise KernelTypeError(f"{name}() got an unexpected or repeated argument "
                                      f"'{kw.arg}'", self.b.loc)
            bound[kw.arg] = kw.value
        for p in names:
            if p not in bound:
                if p not in defaults:
                    raise KernelTypeError(f"{name}() is missing the argument '{p}' "
                                          f"({', '.join(names)})", self.b.loc)
                bound[p] = ast.Constant(defaults[p])
        return bound

    def mesh_arg(self, name, param, want, node) -> Value:
        v = self.value(self.expr(node), want)
        if want.is_scalar and want.is_int and v.type.is_scalar and v.type.is_int:
            return v if v.type == want else self.b.cast(v, want)
        if v.type != want:
            raise KernelTypeError(f"{name}(): argument '{param}' must be {want}, got {v.type}",
                                  self.b.loc)
        return v

    def mesh_lower(self, M, name, arrays, a):
        points, velocities, indices, bvh, bounds, points_array, velocities_array = arrays
        c = self.b.const
        if name == "mesh_get":
            from ..mesh import MeshFields
            return structs.StructVal(MeshFields, "mesh", {
                "points": points_array, "velocities": velocities_array, "indices": indices},
                len(self.b._blocks))
        if name in ("mesh_eval_position", "mesh_eval_velocity"):
            values = points if name == "mesh_eval_position" else velocities
            return self.call_func(M.eval_at, [values, indices, a["face"], a["bary_u"],
                                              a["bary_v"]], {})
        if name == "mesh_eval_face_normal":
            return self.call_func(M.face_normal, [points, indices, a["face"]], {})
        if name in ("mesh_get_point", "mesh_get_velocity"):
            values = points if name == "mesh_get_point" else velocities
            return self.call_func(M.vertex_value, [values, indices, a["index"]], {})
        if name == "mesh_get_index":
            return self.call_func(M.index_at, [indices, a["face_vertex_index"]], {})
        common = [points, indices, bvh, bounds, a.get("point")]
        if name == "mesh_query_point_no_sign":
            return self.call_func(M.query_point_no_sign, common + [a["max_dist"]], {})
        if name == "mesh_query_point":
            return self.call_func(M.query_point_rays, common + [a["max_dist"]], {})
        if name == "mesh_query_point_sign_normal":
            return self.call_func(M.query_point_normal, common + [a["max_dist"],
                                                                  a["epsilon"]], {})
        if name == "mesh_query_point_sign_winding_number":
            return self.call_func(M.query_point_winding, common + [
                a["max_dist"], a["accuracy"], a["threshold"]], {})
        if name == "mesh_query_furthest_point_no_sign":
            return self.call_func(M.query_furthest, [points, indices, bvh, bounds, a["point"],
                                                     a["min_dist"]], {})
        if name == "mesh_query_ray":
            return self.call_func(M.query_ray, [points, indices, bvh, bounds, a["start"],
                                                a["dir"], a["max_t"]], {})
        if name == "mesh_query_ray_anyhit":
            return self.call_func(M.any_hit, [points, indices, bvh, bounds, a["start"],
                                              a["dir"], a["max_t"]], {})
        if name == "mesh_query_ray_count_intersections":
            return self.call_func(M.count_hits, [points, indices, bvh, bounds, a["start"],
                                                 a["dir"]], {})
        assert name in ("mesh_query_aabb", "mesh_query_sphere"), name
        sphere = name == "mesh_query_sphere"
        if sphere:  # the centre in "low", the squared radius (of max(r, 0)) in "r_sq"
            r = self.call_builtin("max", [a["radius"], c(0.0, float32)])
            a = {"low": a["center"], "high": a["center"],
                 "r_sq": self.call_builtin("mul", [r, r])}
        state = {}
        for key, t, v in (("k", int32, c(0, int32)), ("slot", int32, c(0, int32)),
                          ("end", int32, c(0, int32)), ("low", vec3, a["low"]),
                          ("high", vec3, a["high"]),
                          ("r_sq", float32, a.get("r_sq", c(0.0, float32))),
                          ("is_sphere", bool_, c(sphere, bool_))):
            var = self.b.new_var(t, f"query.{key}")
            self.b.store(var, v)
            state[key] = var
        return MeshQueryAABB(arrays, state, sphere)

    def mesh_aabb_next(self, query, index_node, name="mesh_query_aabb_next") -> Value:
        """One step of a box query: sets the local ``index_node`` names to the next face
        whose box overlaps the query's and gives whether there was one."""
        if not isinstance(query, MeshQueryAABB):
            raise KernelTypeError(f"{name}() takes a query made by mesh_query_aabb()",
                                  self.b.loc)
        if not isinstance(index_node, ast.Name):
            raise KernelSyntaxError(f"{name}(query, index): index must be the name of an int "
                                    "local, which it sets", self.b.loc)
        M = _module()
        points, _, indices, bvh, bounds = query.arrays[:5]
        s = query.state
        if query.sphere is None:  # a box or a sphere, as a branch at run time chose
            shape, walk = ("low", "high", "r_sq", "is_sphere"), M.box_or_sphere_next
        elif query.sphere:
            shape, walk = ("low", "r_sq"), M.sphere_next
        else:
            shape, walk = ("low", "high"), M.box_next
        loaded = [self.b.load(s[k]) for k in shape + ("k", "slot", "end")]
        first_site = len(self.func.sites)
        found, face, k, slot, end = self.unpack(
            self.call_func(walk, [points, indices, bvh, bounds] + loaded, {}))
        self.report_at_call(first_site, name)
        for key, v in (("k", k), ("slot", slot), ("end", end)):
            self.b.store(s[key], v)
        self.assign_name(index_node.id, face)
        return found

