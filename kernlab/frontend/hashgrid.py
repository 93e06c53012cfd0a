"""Hash-grid queries in kernels (mixed into the Lowerer): ``hash_grid_query``,
``hash_grid_query_next``, ``hash_grid_point_id`` and ``for index in query``.

A grid reaches a kernel as its ``uint64`` id, a kernel parameter. The first query of such a
parameter adds two hidden parameters for it (the grid's packed int32 cells and point order,
and its inverse cell width); the launch fills them from the grid whose id it is given
(runtime/struct_launch.py). A query is a compile-time object holding the walk's state in
int locals; each step calls the walk written in kernlab's kernel language in
kernlab/hashgrid.py and stores the state back, so all backends run one definition. The
walk only reads integer arrays: nothing in it is differentiable, and gradients flow through
what the kernel computes from the points it visits.
"""
from __future__ import annotations

import ast

from ..errors import KernelSyntaxError, KernelTypeError
from ..ir.nodes import Param, Value
from ..types import ArrayType, int32, uint64

NOT_HASHGRID = object()
_STATE = ("x", "y", "z", "x0", "x1", "y0", "y1", "z0", "z1", "current", "end")


class HashGridQuery:
    """A query in a kernel: the grid's arrays and the locals of its walk."""

    def __init__(self, ints, state: dict):
        self.ints, self.state = ints, state

    @property
    def arrays(self):
        return self.ints


def _module():
    from .. import hashgrid  # the walk's funcs; imported when a kernel first needs them
    return hashgrid


class HashGridMixin:
    def hash_grid_call(self, obj, node):
        """Lower a call of one of the three hash-grid functions, or NOT_HASHGRID."""
        if getattr(obj, "__module__", None) != "kernlab.hashgrid":
            return NOT_HASHGRID
        H = _module()
        if obj not in (H.hash_grid_query, H.hash_grid_query_next, H.hash_grid_point_id):
            return NOT_HASHGRID
        if node.keywords:
            raise KernelTypeError(f"{obj.__name__}() takes no keyword arguments", self.b.loc)
        want = 3 if obj is H.hash_grid_query else 2
        if len(node.args) != want:
            raise KernelTypeError(f"{obj.__name__}() takes {want} arguments, got "
                                  f"{len(node.args)}", self.b.loc)
        if obj is H.hash_grid_query_next:
            return self.hash_grid_next(self.expr(node.args[0]), node.args[1])
        ints, inv = self.grid_arrays(node.args[0], obj.__name__)
        if obj is H.hash_grid_point_id:
            return self.call_func(H.point_id, [ints, self.value(self.expr(node.args[1]),
                                                                int32)], {})
        point, radius = (self.expr(a) for a in node.args[1:])
        parts = self.unpack(self.call_func(H.query_start, [ints, inv, point, radius], {}))
        x0, x1, y0, y1, z0, z1, start, end = parts
        state = {}
        for name, v in zip(_STATE, (x0, y0, z0, x0, x1, y0, y1, z0, z1, start, end)):
            var = self.b.new_var(int32, f"query.{name}")
            self.b.store(var, v)
            state[name] = var
        return HashGridQuery(ints, state)

    def grid_arrays(self, node, what: str):
        """The hidden (ints, inverse width) parameters of the grid id parameter ``node``
        names, made on first use."""
        return self.handle_arrays(node, what, "hash_grid")

    def handle_arrays(self, node, what: str, kind: str) -> tuple:
        """The hidden array parameters of the object (``kind``, see kernlab/handles.py)
        whose id the uint64 parameter ``node`` names, made on first use."""
        from ..handles import KINDS
        noun, parts, _ = KINDS[kind]
        var = self.scope.names.get(node.id) if isinstance(node, ast.Name) else None
        entry = self.grid_params.get(var) if var is not None else None
        if entry is None:
            raise KernelTypeError(f"{what}() needs a {noun} id that is a uint64 parameter "
                                  f"of the kernel (pass its .id at launch), or a func "
                                  "parameter given one; kernlab cannot follow an id through "
                                  "a computed value", self.b.loc)
        if entry["reassigned"]:
            raise KernelTypeError(f"the {noun} parameter '{node.id}' is reassigned in the "
                                  f"kernel; a {noun} id must stay the one the launch gave",
                                  self.b.loc)
        if entry["arrays"] is not None and entry["kind"] != kind:
            raise KernelTypeError(f"{what}() uses '{node.id}' as a {noun} id, but the kernel "
                                  f"already uses it as a {KINDS[entry['kind']][0]} id",
                                  self.b.loc)
        if entry["arrays"] is None:
            name = entry["name"]
            index = next(k for k, p in enumerate(self.func.params) if p.value is entry["param"])
            hidden = getattr(self.func, "handle_hidden", None)
            if hidden is None:
                hidden = self.func.handle_hidden = {}
            values = []
            for part, (suffix, dtype) in enumerate(parts):
                v = Value(ArrayType(dtype, 1), f"{name}.{suffix}")
                self.func.params.append(Param(v.name, v.type, v))
                hidden[v.name] = (index, name, part, kind)
                values.append(v)
            entry["arrays"], entry["kind"] = tuple(values), kind
        entry["used"] = True
        return entry["arrays"]

    def hash_grid_next(self, query, index_node) -> Value:
        """One step of ``query``: stores the next point's index into the local
        ``index_node`` names and gives whether there was one."""
        if not isinstance(query, HashGridQuery):
            raise KernelTypeError("hash_grid_query_next() takes a query made by "
                                  "hash_grid_query()", self.b.loc)
        if not isinstance(index_node, ast.Name):
            raise KernelSyntaxError("hash_grid_query_next(query, index): index must be the "
                                    "name of an int local, which it sets", self.b.loc)
        H = _module()
        s = query.state
        loaded = [self.b.load(s[k]) for k in ("x", "y", "z", "x0", "x1", "y0", "y1", "z1",
                                               "current", "end")]
        found, index, x, y, z, current, end = self.unpack(
            self.call_func(H.query_next, [query.ints] + loaded, {}))
        for k, v in (("x", x), ("y", y), ("z", z), ("current", current), ("end", end)):
            self.b.store(s[k], v)
        self.assign_name(index_node.id, index)
        return found

    def note_grid_param(self, name: str, param_value: Value) -> None:
        """Remember a uint64 kernel parameter: it may be a hash grid id."""
        if param_value.type == uint64:
            self.grid_params[self.scope.names[name]] = {
                "name": name, "param": param_value, "arrays": None, "used": False,
                "reassigned": False, "kind": None}
