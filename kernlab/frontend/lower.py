"""Statements and functions: a kernel's AST to a typed IR Function (``source_to_ir``).

Funcs are inlined at each call, so every kernel is one body the autodiff pass sees whole.
``break``, ``continue`` and ``return`` become flag variables: the statements after one are
guarded by ``if not flag``, and loops test the flags in their condition. A ``for`` that
may break or return becomes a ``while`` over an explicit counter.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..errors import KernelNameError, KernelSyntaxError, KernelTypeError, too_deeply_nested
from ..ir.builder import Builder
from ..ir.nodes import Block, Function, Op, Param, Site, Value, Var
from ..ir.verify import verify
from ..types import bool_, int32, non_atomic_types
from ..types import IndexedArrayType, is_generic
from .calls import CallMixin
from .control import ControlMixin
from .grads import GradMixin
from .views import ArrayRef, ViewMixin
from .exprs import ExprMixin, Lit, PyObj, _describe, _Tid, visitor
from .spatial import SpatialMixin
from .hashgrid import HashGridMixin, HashGridQuery
from .tiles import TileMixin
from .mesh import MeshMixin, MeshQueryAABB
from .volume import VolumeMixin
from .source import ParsedSource, annotation_type, parse_function
from . import structs, tuples


@dataclass
class Scope:
    """Names of one (inlined) function body."""

    pyfunc: object
    src: ParsedSource
    names: dict = field(default_factory=dict)  # name -> Var (locals) or Value (arrays)
    ret_flag: Var | None = None
    ret_var: Var | None = None
    is_kernel: bool = True
    loops: list = field(default_factory=list)  # innermost last: (brk Var|None, cont Var|None)
    adjoints: dict | None = None  # in a custom gradient body: param name -> accumulator Var


def source_to_ir(pyfunc, name: str | None = None, extra_globals: dict | None = None,
                 param_types: list | None = None, funcs_in_progress: tuple = ()) -> Function:
    """The typed IR of a kernel; ``param_types`` replaces the annotations' types (the
    specialisation of a generic kernel)."""
    return Lowerer(pyfunc, extra_globals, funcs_in_progress,
                   param_types).build_kernel(name)


class Lowerer(CallMixin, GradMixin, SpatialMixin, HashGridMixin, MeshMixin, VolumeMixin,
              TileMixin, ViewMixin, ControlMixin, ExprMixin):
    def __init__(self, pyfunc, extra_globals=None, funcs_in_progress=(), param_types=None):
        self.kernel_src = parse_function(pyfunc)
        self.extra_globals = extra_globals
        self.param_types = param_types
        self.stack = [Scope(pyfunc, self.kernel_src)]
        self.inlining = list(funcs_in_progress)
        self.grid_params: dict = {}  # Var of a uint64 kernel parameter -> its use as a grid
        self.handle_values: dict = {}  # a load of such a Var -> the Var (followed into funcs)
        self.operator_names: dict = {}  # (pyfunc, "add") -> what the name is there

    # ---- scope helpers -----------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    @property
    def pyfunc(self):
        return self.scope.pyfunc

    def loc(self, node):
        return self.scope.src.loc(node)

    def lookup(self, name):
        found = self.stack[-1].names.get(name)  # (self.scope, without the property call)
        if isinstance(found, Var):
            value = self.b.load(found, name)
            if found in self.grid_params:  # a grid or mesh id: a func it is passed to
                self.handle_values[value] = found  # may query it too (bind_param)
            return value
        if isinstance(found, tuples.TupleLocal):
            return tuples.read(self, found)
        return found

    def site(self, arr: Value) -> int:
        self.func.sites.append(Site(self.b.loc, self.array_name(arr)))
        return len(self.func.sites) - 1

    def array_name(self, arr: Value) -> str:
        return arr.name or "array"

    def if_blocks(self, cond: Value):
        then_block, else_block = Block(), Block()
        self.b.emit(Op.IF, [cond], regions=[then_block, else_block])
        return then_block, else_block

    def if_block(self, cond: Value) -> Block:
        return self.if_blocks(cond)[0]

    def flag(self, name: str) -> Var:
        var = self.b.new_var(bool_, name)
        self.b.store(var, self.b.const(False, bool_))
        return var

    # ---- kernels -------------------------------------------------------------------------

    def build_kernel(self, name=None) -> Function:
        src = self.kernel_src
        tree = src.tree
        loc = src.loc(tree)
        params = []
        self.func = Function(name or src.name, params, Block(), loc)
        self.b = Builder(self.func, loc)
        if tree.args.vararg or tree.args.kwarg or tree.args.kwonlyargs or tree.args.defaults:
            raise KernelSyntaxError("kernel parameters must be plain annotated names", loc)
        user_params = []
        for k, arg in enumerate(tree.args.args):
            t = annotation_type(self.pyfunc, arg, src) if self.param_types is None \
                else self.param_types[k]
            if is_generic(t):
                raise KernelTypeError(f"parameter '{arg.arg}' is generic ({t}); a generic "
                                      "kernel is compiled per launch", src.loc(arg))
            user_params.append((arg.arg, t))
            if structs.is_struct_type(t):  # one IR parameter per leaf field
                self.scope.names[arg.arg] = structs.bind_struct_param(self, arg.arg, t, params)
                continue
            if isinstance(t, IndexedArrayType):  # its data and index arrays (views.py)
                self.scope.names[arg.arg] = self.indexed_param(arg.arg, t, params)
                continue
            value = Value(t, arg.arg)
            params.append(Param(arg.arg, t, value))
            self.bind_param(arg.arg, value)
            self.note_grid_param(arg.arg, value)
        n_flat = len(params)
        if _has_return(tree):
            self.scope.ret_flag = self.flag("returned")
        self.body(tree.body)
        structs.finish_signature(self, user_params, n_flat)
        return verify(self.func)

    def bind_param(self, name, value: Value):
        if isinstance(value, tuple):  # a func's tuple parameter: a tuple local
            tuples.assign(self, name, value, None)
        elif structs.is_structish(value):
            self.scope.names[name] = structs.bind_func_arg(self, name, value)
        elif value.type.is_array:
            self.scope.names[name] = value
        else:  # scalars are copied into a local, so the body may reassign them
            var = self.b.new_var(value.type, name)
            self.b.store(var, value)
            self.scope.names[name] = var
            source = self.handle_values.get(value)
            if source is not None:  # a func's parameter given a grid or mesh id parameter
                self.grid_params[var] = self.grid_params[source]

    # ---- statements -----------------------------------------------------------------------

    def body(self, stmts):
        for k, stmt in enumerate(stmts):
            self.stmt(stmt)
            if k + 1 < len(stmts) and _may_jump(stmt):
                guard = self.guard()
                if guard is not None:
                    with self.b.at(self.if_block(guard)):
                        self.body(stmts[k + 1:])
                    return

    def guard(self) -> Value | None:
        """``not break and not continue and not returned`` for the flags in scope."""
        flags = [self.scope.ret_flag]
        if self.scope.loops:
            flags += list(self.scope.loops[-1])
        conds = [self.b.not_(self.b.load(f)) for f in flags if f is not None]
        if not conds:
            return None
        guard = conds[0]
        for c in conds[1:]:
            guard = self.b.and_(guard, c)
        return guard

    def stmt(self, node):
        saved = self.b.loc
        self.b.loc = self.loc(node)
        try:
            visit = visitor(self, "stmt_", node)
            if visit is None:
                raise KernelSyntaxError(f"{_stmt_name(node)} is not supported in kernels",
                                        self.b.loc)
            visit(self, node)
        except RecursionError:  # the innermost statement of the kernel itself (not of a
            if len(self.stack) > 1:  # func it calls) names the user's line
                raise
            raise too_deeply_nested(self.b.loc, self.func.name) from None
        finally:
            self.b.loc = saved

    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assign(self, node):
        if len(node.targets) != 1:
            raise KernelSyntaxError("chained assignment (a = b = c) is not supported",
                                    self.b.loc)
        target = node.targets[0]
        value = self.expr(node.value)
        if isinstance(value, _Tid):
            return self.assign_tid(target)
        if isinstance(target, ast.Tuple):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise KernelTypeError("tuple assignment needs a tuple of the same length",
                                      self.b.loc)
            vals = [v if isinstance(v, Lit) or structs.is_structish(v) else self.value(v)
                    for v in value]
            for t, v in zip(target.elts, vals):
                self.assign(t, v)
            return
        self.assign(target, value)

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise KernelSyntaxError("annotated assignment needs a name and a value", self.b.loc)
        from .source import _eval_annotation
        from ..types import to_type
        ann = _eval_annotation(self.pyfunc, node.annotation, self.b.loc)
        try:
            t = to_type(ann)
        except (TypeError, ValueError):
            t = None
        if t is None or not t.is_scalar and not (t.is_vector or t.is_matrix):
            raise KernelTypeError(f"annotation {ast.unparse(node.annotation)!r} is not a "
                                  "scalar, vector or matrix type", self.b.loc)
        value = self.value(self.expr(node.value), t)
        if value.type != t:
            value = self.b.cast(value, t)
        self.assign(node.target, value, declared=t)

    def assign_tid(self, target):
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if len(names) > 4:
            raise KernelTypeError("tid() has at most 4 dimensions", self.b.loc)
        self.func.ndim = max(self.func.ndim, len(names))
        for d, t in enumerate(names):
            self.assign(t, self.b.emit(Op.TID, (), int32, dim=d))

    def assign(self, target, value, declared=None):
        if isinstance(target, ast.Name):
            # a value known only at run time now: static() no longer sees a constant
            consts = getattr(self.stack[-1], "static_consts", None)
            if consts:
                consts.pop(target.id, None)
            return self.assign_name(target.id, value, declared)
        if isinstance(target, ast.Subscript):
            adj = self.adjoint_target(target)
            if adj is not None:
                return self.b.store(adj, self.value(value, adj.type.scalar))
            return self.assign_subscript(target, value)
        if isinstance(target, ast.Attribute) and self.struct_rooted(target.value):
            return self.assign_struct_attr(target, value)
        if isinstance(target, ast.Attribute) and target.attr in ("p", "q"):
            start = len(self.b.block.instrs)
            self.assign_transform_part(target, value)  # t.p = v: linear in t
            self.mark_rmw(start)
            return None
        if isinstance(target, ast.Attribute):
            base = target.value
            index = ast.copy_location(ast.Constant(_component(target, self.b.loc)), target)
            sub = ast.copy_location(ast.Subscript(base, index, ast.Store()), target)
            return self.assign_subscript(sub, value)
        raise KernelSyntaxError(f"cannot assign to {_describe(target)}", self.b.loc)

    def assign_struct_attr(self, target, value):
        """``s.f = v`` (s a struct, an array element of structs, or a field of one) or
        ``s.v.x = v`` (a component of a struct's vector field)."""
        base = self.expr(target.value)
        if structs.is_structish(base):
            return structs.set_field(self, base, target.attr, value)
        if target.attr in ("p", "q"):
            return self.assign_transform_part(target, value)
        index = ast.copy_location(ast.Constant(_component(target, self.b.loc)), target)
        v = self.value(value, base.type.scalar)
        self.assign(target.value, self.component_call("insert", base, [self.expr(index)], v))

    def struct_rooted(self, node) -> bool:
        """Whether an assignment target's base starts at a struct (s.a, a[i].b[j], ...)."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and structs.is_structish(
            self.scope.names.get(node.id))

    def assign_query(self, name, current, value) -> None:
        """``q = query`` where q already holds a query: q's walk state takes the new
        query's, so which one q holds may depend on a runtime branch. Both must query the
        same grid or mesh; a box and a sphere query make q's kind a runtime value."""
        if current.arrays is not value.arrays:
            raise KernelTypeError(f"'{name}' holds a query of one grid or mesh and is "
                                  "assigned a query of another; use two names", self.b.loc)
        for key, var in current.state.items():
            self.b.store(var, self.b.load(value.state[key]))
        if getattr(current, "sphere", None) != getattr(value, "sphere", None):
            current.sphere = None  # decided at run time by its "is_sphere" local

    def assign_name(self, name, value, declared=None):
        current = self.stack[-1].names.get(name)
        if value.__class__ is Value and current.__class__ is Var and not value.type.is_array \
                and current not in self.grid_params:
            v = value  # a value into a local, as most assignments are: no special kind below
        else:
            if structs.is_structish(value):
                return structs.assign_name(self, name, value)
            if isinstance(value, tuple) or isinstance(current, tuples.TupleLocal):
                return tuples.assign(self, name, value, current)  # frontend/tuples.py
            queries = (HashGridQuery, MeshQueryAABB)
            if isinstance(value, queries) or isinstance(current, queries):
                if not isinstance(value, queries) or not (
                        current is None or type(current) is type(value)):
                    raise KernelTypeError(f"'{name}' cannot hold both a query and a value "
                                          "(or two kinds of query)", self.b.loc)
                if current is None or current is value:
                    self.scope.names[name] = value
                else:  # a query local assigned again (in a branch, a loop): its state is
                    # copied
                    self.assign_query(name, current, value)
                return None
            grid = self.grid_params.get(current) if isinstance(current, Var) else None
            if grid is not None:
                if grid["used"]:
                    raise KernelTypeError(f"the hash grid parameter '{name}' cannot be "
                                          "reassigned", self.b.loc)
                grid["reassigned"] = True
            if isinstance(current, Value):
                raise KernelTypeError(f"array parameter '{name}' cannot be reassigned",
                                      self.b.loc)
            if isinstance(value, PyObj) and current is None or isinstance(current, PyObj):
                self.scope.names[name] = value  # a compile-time alias: g = kl.grad(f)
                return None
            if isinstance(value, ArrayRef) or isinstance(value, Value) and value.type.is_array:
                if current is not None and not isinstance(current, ArrayRef):
                    raise KernelTypeError(f"'{name}' is a local value; it cannot become an "
                                          "array", self.b.loc)
                self.scope.names[name] = value  # another name for the same array
                return None
            if current is None:
                v = self.value(value, declared)
                current = self.b.new_var(declared or v.type, name)
                self.scope.names[name] = current
            else:
                v = self.value(value, current.type)
        if v.type is not current.type and v.type != current.type:
            raise KernelTypeError(f"cannot assign a {v.type} to '{name}', which is a "
                                  f"{current.type} (convert it, e.g. {current.type}(...))",
                                  self.b.loc)
        if not v.name:
            v.name = name
        self.b.store(current, v)

    def assign_subscript(self, target, value):
        idx_nodes = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        start = len(self.b.block.instrs)
        slot = isinstance(target.value, ast.Subscript)  # a[i].x = v, a[i][k] = v
        self.slot_write, outer = slot, getattr(self, "slot_write", False)
        try:
            base = self.expr(target.value) if not isinstance(target.value, ast.Name) \
                else self._name_for_store(target.value)
        finally:
            self.slot_write = outer
        if isinstance(base, Var) and (base.type.is_vector or base.type.is_matrix):
            self.b.store(base, self.insert_into(self.b.load(base), idx_nodes, value))
            return
        if isinstance(target.value, ast.Subscript) and isinstance(base, Value) \
                and (base.type.is_vector or base.type.is_matrix):  # a[i][k] = s
            new = self.insert_into(base, idx_nodes, value)
            read_end = len(self.b.block.instrs)
            self.assign(target.value, new)  # (kl.adjoint[v][k] = s: the adjoint's local)
            self.mark_rmw(start, read_end)
            return
        if isinstance(target.value, ast.Attribute) and self.struct_rooted(target.value) \
                and isinstance(base, Value) and (base.type.is_vector or base.type.is_matrix):
            return self.assign(target.value, self.insert_into(base, idx_nodes, value))
        raw = [self.expr(i) for i in idx_nodes]
        if isinstance(base, ArrayRef):  # a view: store into the array at composed indices
            indices = self.view_indices(base, raw)
            base = base.base
            v = self.value(value, base.type.dtype.scalar)
            if v.type != base.type.dtype:
                raise KernelTypeError(f"cannot store a {v.type} into an array of "
                                      f"{base.type.dtype}", self.b.loc)
            self.b.emit(Op.STORE, [base, *indices, v], site=self.site(base))
            return
        if isinstance(base, structs.StructArray):  # a[i] = s for an array of structs
            elem = structs.index(self, base, [self.int_index(i) for i in raw])
            return structs.store_struct(self, elem, value)
        indices = [self.int_index(i) for i in raw]
        if isinstance(base, Var) and base.type.is_tile:  # t[i, j] = x on a tile local
            t = base.type
            if len(indices) != len(t.tile_shape):
                raise KernelTypeError(f"a tile of shape {t.tile_shape} takes "
                                      f"{len(t.tile_shape)} index(es), got {len(indices)}",
                                      self.b.loc)
            v = self.value(value, t.scalar)
            if v.type != t.dtype:
                if not (v.type.is_scalar and t.dtype.is_scalar):
                    raise KernelTypeError(f"cannot put a {v.type} into a tile of {t.dtype}",
                                          self.b.loc)
                v = self.b.cast(v, t.dtype)
            self.b.store(base, self.b.call("tile_put", [self.b.load(base), v, *indices]))
            return
        if isinstance(base, Value) and base.type.is_array:
            if len(indices) != base.type.ndim:
                raise KernelTypeError("Incorrect number of indices specified for array "
                                      f"indexing: array '{self.array_name(base)}' has "
                                      f"{base.type.ndim} dimension(s) but {len(indices)} "
                                      "index(es) were given", self.b.loc)
            v = self.value(value, base.type.dtype.scalar)
            if v.type != base.type.dtype:
                raise KernelTypeError(f"cannot store a {v.type} into an array of "
                                      f"{base.type.dtype}", self.b.loc)
            self.b.emit(Op.STORE, [base, *indices, v], site=self.site(base))
            return
        raise KernelTypeError(f"cannot assign to an element of "
                              f"'{ast.unparse(target.value)}'", self.b.loc)

    def _name_for_store(self, node):
        found = self.scope.names.get(node.id)
        if found is None:
            raise KernelNameError(f"name '{node.id}' is not defined", self.b.loc)
        return found

    def stmt_AugAssign(self, node):
        from .exprs import BINOPS
        name = BINOPS.get(type(node.op))
        if name is None:
            raise KernelSyntaxError(f"operator {_describe(node.op)}= is not supported",
                                    self.b.loc)
        target = node.target
        start = len(self.b.block.instrs)
        adj = self.adjoint_target(target)
        if adj is not None:  # kl.adjoint[x] += v in a custom gradient
            v = self.value(self.expr(node.value), adj.type.scalar)
            self.b.store(adj, self.b.call(name, [self.b.load(adj), v]))
            return
        if isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            # a[i] += v is an atomic add, as in Warp, except on 8/16-bit integers (no
            # atomics there): a plain read, add and write
            kind = {"add": "add", "sub": "sub", "bit_and": "and", "bit_or": "or",
                    "bit_xor": "xor"}.get(name)
            if (isinstance(base, ArrayRef) or isinstance(base, Value) and base.type.is_array) \
                    and kind \
                    and base.type.dtype.scalar not in non_atomic_types:
                idx = target.slice.elts if isinstance(target.slice, ast.Tuple) \
                    else [target.slice]
                args = [base, *[self.expr(i) for i in idx], self.expr(node.value)]
                self.atomic(kind, args)
                return
        # read, combine, write: the target is read before the value (as Python does)
        old = self.expr(ast.copy_location(_as_load(target), target))
        read_end = len(self.b.block.instrs)
        hidden = f"$aug{read_end}"
        self.scope.names[hidden] = old if not isinstance(old, Var) else self.b.load(old)
        try:
            held = ast.copy_location(ast.Name(hidden, ast.Load()), target)
            combined = ast.copy_location(ast.BinOp(held, node.op, node.value), node)
            self.assign(target, self.expr(combined))
        finally:
            del self.scope.names[hidden]
        if name in ("add", "sub"):  # linear in the old value: its replayed read may differ
            self.mark_rmw(start, read_end)

    def mark_rmw(self, start: int, end: int | None = None):
        """Loads in instrs[start:end] of the arrays stored into after ``end`` read an element
        only to write it back changed in part (``a[i][k] = s``, ``a[i].x += s``): reverse
        mode may replay them after the write, since their value enters the result linearly,
        so they do not count as reads before a write (autodiff/checks.py)."""
        instrs = self.b.block.instrs
        if end is None:  # up to the first store
            end = next((k for k in range(start, len(instrs)) if instrs[k].op is Op.STORE),
                       len(instrs))
        written = {ins.args[0] for ins in instrs[end:] if ins.op is Op.STORE}
        for ins in instrs[start:end]:
            if ins.op is Op.LOAD and ins.args[0] in written:
                ins.attrs["rmw"] = True

    def stmt_If(self, node):
        cond = self.truth(self.expr(node.test))
        then_block, else_block = self.if_blocks(cond)
        with self.b.at(then_block):
            self.body(node.body)
        with self.b.at(else_block):
            self.body(node.orelse)

    def stmt_Assert(self, node):
        """``assert cond[, "message"]``: nothing in release mode (Warp's default); in debug
        mode (kl.config.mode) a thread whose cond is false prints the assertion."""
        from .. import config
        if node.msg is not None and not (isinstance(node.msg, ast.Constant)
                                         and isinstance(node.msg.value, str)):
            raise KernelSyntaxError("an assert message must be a string literal", self.b.loc)
        if config.mode != "debug":
            return
        failed = self.b.not_(self.truth(self.expr(node.test)))
        then_block, _ = self.if_blocks(failed)
        where = self.b.loc
        text = f"Assertion failed: '{ast.unparse(node.test)}'"
        if where is not None:
            text += f" at {where}"
        if node.msg is not None:
            text += f": {node.msg.value}"
        with self.b.at(then_block):
            self.b.emit(Op.PRINT, [], fmt=text.replace("{}", "{ }"), printf=False)

    def stmt_Break(self, node):
        brk = self.scope.loops[-1][0] if self.scope.loops else None
        if brk is None:
            raise KernelSyntaxError("'break' outside a loop", self.b.loc)
        self.b.store(brk, self.b.const(True, bool_))

    def stmt_Continue(self, node):
        cont = self.scope.loops[-1][1] if self.scope.loops else None
        if cont is None:
            raise KernelSyntaxError("'continue' outside a loop", self.b.loc)
        self.b.store(cont, self.b.const(True, bool_))

    def stmt_Return(self, node):
        scope = self.scope
        if scope.is_kernel:
            if node.value is not None:
                raise KernelTypeError("a kernel cannot return a value", self.b.loc)
        else:
            value = self.expr(node.value) if node.value is not None else None
            if value is None:
                raise KernelTypeError("a func must return a value", self.b.loc)
            if structs.is_structish(value):
                structs.store_return(self, scope, value)
                self.b.store(scope.ret_flag, self.b.const(True, bool_))
                return
            if isinstance(value, tuple) or isinstance(scope.ret_var, list):
                self.return_tuple(scope, value)
                self.b.store(scope.ret_flag, self.b.const(True, bool_))
                return
            if scope.ret_var is None:
                v = self.value(value)
                scope.ret_var = self.b.new_var(v.type, f"{self.scope.src.name}_ret")
            if isinstance(scope.ret_var, structs.StructVal):
                raise KernelTypeError(f"this return gives a {_describe_value(value)}, an "
                                      f"earlier one a {scope.ret_var.type}", self.b.loc)
            v = self.value(value, scope.ret_var.type)
            if v.type != scope.ret_var.type:
                raise KernelTypeError(f"this return gives a {v.type}, an earlier one a "
                                      f"{scope.ret_var.type}", self.b.loc)
            self.b.store(scope.ret_var, v)
        self.b.store(scope.ret_flag, self.b.const(True, bool_))

    def return_tuple(self, scope, value):
        """``return a, b``: one return variable per element; each return gives as many."""
        items = value if isinstance(value, tuple) else (value,)
        if scope.ret_var is None:
            vals = [self.value(v) for v in items]
            scope.ret_var = [self.b.new_var(v.type, f"{scope.src.name}_ret{k}")
                             for k, v in enumerate(vals)]
        if not isinstance(scope.ret_var, list) or len(items) != len(scope.ret_var):
            raise KernelTypeError("every return of a func must give the same number of "
                                  "values", self.b.loc)
        for var, x in zip(scope.ret_var, items):
            v = self.value(x, var.type.scalar if not var.type.is_array else None)
            if v.type != var.type:
                raise KernelTypeError(f"this return gives a {v.type}, an earlier one a "
                                      f"{var.type}", self.b.loc)
            self.b.store(var, v)


def _describe_value(value) -> str:
    return str(getattr(value, "type", None) or getattr(value, "default_type", "value"))


def _has_return(node) -> bool:
    return _jumps(node)[0]


def _may_jump(stmt) -> bool:
    """Whether stmt may break, continue or return (break/continue only for this loop)."""
    returns, jumps = _jumps(stmt)
    return returns or jumps


_NESTED = ("body", "orelse", "finalbody", "handlers", "cases")  # fields holding statements
_SIMPLE = frozenset((ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass))  # none


def _jumps(node) -> tuple:
    """(whether node holds a return anywhere, whether it breaks or continues the loop around
    it). Only statements can hold these, so expressions are not visited: a kernel's lines
    are each looked at once per enclosing block, not once per node."""
    kind = node.__class__
    if kind in _SIMPLE:
        return False, False
    if kind is ast.Return:
        return True, False
    if kind is ast.Break or kind is ast.Continue:
        return False, True
    returns = jumps = False
    loop = kind is ast.For or kind is ast.While
    for name in _NESTED:
        stmts = getattr(node, name, None)
        if not stmts:
            continue
        for sub in stmts:
            r, j = _jumps(sub)
            returns = returns or r
            jumps = jumps or j
    return returns, jumps and not loop


def _component(node, loc):
    from .exprs import COMPONENTS
    if node.attr not in COMPONENTS:
        raise KernelSyntaxError(f"cannot assign to attribute '.{node.attr}'", loc)
    return COMPONENTS[node.attr]


def _as_load(target):
    import copy
    node = copy.deepcopy(target)
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node


def _stmt_name(node) -> str:
    return {"With": "a 'with' statement", "Try": "a 'try' statement",
            "Raise": "'raise'", "Assert": "'assert'", "Import": "'import'",
            "ImportFrom": "'import'", "Global": "'global'", "Nonlocal": "'nonlocal'",
            "FunctionDef": "a nested function definition", "ClassDef": "a class definition",
            "Delete": "'del'", "AsyncFor": "'async for'", "AsyncWith": "'async with'",
            "Match": "a 'match' statement"}.get(type(node).__name__, type(node).__name__)


