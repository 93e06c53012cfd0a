"""Loops and func calls (mixed into the Lowerer).

``for i in range(...)`` becomes a FOR region unless its body may ``break`` or ``return``;
then it becomes a WHILE over an explicit counter whose condition also tests the flags.
A func call is inlined: its parameters become fresh locals (values, never references).
A func with a custom gradient is inlined inside a CUSTOM region that also carries the
gradient body, which the autodiff pass runs in place of differentiating the func.
"""
from __future__ import annotations

import ast

from .. import lang
from ..errors import KernelSyntaxError, KernelTypeError
from ..ir.nodes import Block, Op, Value
from . import structs
from .hashgrid import HashGridQuery
from .mesh import MeshQueryAABB
from ..generics import matches
from ..types import int32, is_generic
from .exprs import Lit, PyObj
from .views import ArrayRef
from .source import annotation_type, parse_function


class ControlMixin:
    # ---- loops -----------------------------------------------------------------------------

    def stmt_For(self, node):
        if node.orelse:
            raise KernelSyntaxError("'for ... else' is not supported in kernels", self.b.loc)
        if not isinstance(node.target, ast.Name):
            raise KernelSyntaxError("the loop variable must be a single name", self.b.loc)
        it = node.iter
        fn = self.expr(it.func) if isinstance(it, ast.Call) else None
        if isinstance(fn, PyObj) and fn.obj is reversed and len(it.args) == 1 \
                and not it.keywords and isinstance(it.args[0], ast.Call) \
                and _is_range(self.expr(it.args[0].func)):
            return self.for_range(node, it.args[0], backwards=True)
        if _is_range(fn):
            return self.for_range(node, it)
        seq = self.expr(it)
        if isinstance(seq, HashGridQuery):
            return self.for_query(node, lambda target: self.hash_grid_next(seq, target))
        if isinstance(seq, MeshQueryAABB):
            return self.for_query(node, lambda target: self.mesh_aabb_next(seq, target))
        if isinstance(seq, Value) and (seq.type.is_vector or seq.type.is_matrix):
            return self.for_each(node, seq)
        raise KernelSyntaxError("kernels loop over range(...), reversed(range(...)), the "
                                "components of a vector (rows of a matrix), a hash grid "
                                "query or a mesh box query", self.b.loc)

    def for_range(self, node, it, backwards=False):
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise KernelTypeError("range() takes 1 to 3 arguments", self.b.loc)
        raw = [self.expr(a) for a in it.args]
        if len(raw) == 1:
            raw = [Lit(0), raw[0]]
        if len(raw) == 2:
            raw.append(Lit(1))
        start, stop, step = [self.int_index(v) for v in self.values(raw)]
        if len({start.type, stop.type, step.type}) != 1:
            raise KernelTypeError("range() bounds must have one integer type", self.b.loc)
        if isinstance(raw[2], Lit) and raw[2].value == 0:
            raise KernelTypeError("range() step must not be zero", self.b.loc)
        var = self.loop_var(node.target.id, start.type)
        if not backwards and all(isinstance(r, Lit) for r in raw) \
                and _static_reads(node.body, node.target.id):
            return self.static_unrolled(node, range(*(r.value for r in raw)), var)
        consts = getattr(self.scope, "static_consts", {})
        if node.target.id in consts:  # a runtime loop over an unrolled loop's variable:
            values = range(*(r.value for r in raw)) if all(isinstance(r, Lit) for r in raw) \
                else None  # after it, the last value (if known) is what static() sees
            if values and not backwards and not _direct(node.body, ast.Break):
                consts[node.target.id] = values[-1]
            elif values is None or values:
                consts.pop(node.target.id)
        if not backwards:
            return self.run_loop(node, start, stop, step, raw[2], var)
        # reversed(range(start, stop, step)): n = the range's length; i = start + (n-1-k)*step
        b, t = self.b, start.type
        zero, one = b.zeros(t), b.const(1, t)
        up = b.gt(step, zero)
        span = b.where(up, b.sub(stop, start), b.sub(start, stop))
        size = b.where(up, step, b.neg(step)) if t.kind != "u" else step
        n = b.where(b.gt(span, zero), b.div(b.sub(b.add(span, size), one), size), zero)
        k = b.new_var(t, f"{node.target.id}_k")
        last = b.sub(n, one)

        def set_var():
            b.store(var, b.add(start, b.mul(b.sub(last, b.load(k)), step)))
        return self.run_loop(node, zero, n, one, Lit(1), k, set_var)

    def static_unrolled(self, node, values, var):
        """A loop over a constant range whose body reads its variable in ``static()``:
        unrolled, as Warp does, with the variable a known constant in each copy (so
        ``static(funcs[i])`` picks per iteration)."""
        name = node.target.id
        if any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in
               ast.walk(ast.Module(node.body, []))):
            raise KernelSyntaxError(f"loop over '{name}' reads it in static(), so it is "
                                    "unrolled; break, continue and return are not supported "
                                    "there", self.b.loc)
        consts = self.scope.__dict__.setdefault("static_consts", {})
        held = consts.get(name, _NONE)
        try:
            for v in values:
                self.b.store(var, self.b.const(v, var.type))
                consts[name] = v
                self.loop_body(node.body, None)
        finally:
            if held is _NONE:
                consts.pop(name, None)
            else:
                consts[name] = held

    def for_each(self, node, seq):
        """``for x in v``: the components of a vector (the rows of a matrix), in order."""
        t = seq.type
        n = t.length if t.is_vector else t.rows
        first = self.b.call("index", [seq, self.b.const(0, int32)])
        elem = first.type
        var = self.loop_var(node.target.id, elem)
        k = self.b.new_var(int32, f"{node.target.id}_k")

        def set_var():
            self.b.store(var, self.b.call("index", [seq, self.b.load(k)]))
        return self.run_loop(node, self.b.const(0, int32), self.b.const(n, int32),
                             self.b.const(1, int32), Lit(1), k, set_var)

    def run_loop(self, node, start, stop, step, raw_step, var, set_var=None):
        """A counted loop of ``var`` over [start, stop) by step; ``set_var`` first in each
        iteration (it derives the user's variable from a hidden counter)."""
        brk = self.flag("break") if _direct(node.body, ast.Break) else None
        if brk is None and not any(isinstance(n, ast.Return) for n in ast.walk(node)):
            body = Block()
            self.b.emit(Op.FOR, [start, stop, step], regions=[body], var=var)
            with self.b.at(body):
                if set_var is not None:
                    set_var()
                self.loop_body(node.body, None)
            return
        counter = self.b.new_var(start.type, f"{node.target.id}_next")
        self.b.store(counter, start)
        cond_block, body = Block(), Block()
        self.b.emit(Op.WHILE, regions=[cond_block, body])
        with self.b.at(cond_block):
            cond_block.result = self.loop_test(
                self.range_test(self.b.load(counter), stop, step, raw_step), brk)
        with self.b.at(body):
            i = self.b.load(counter)
            self.b.store(var, i)
            self.b.store(counter, self.b.add(i, step))
            if set_var is not None:
                set_var()
            self.loop_body(node.body, brk)

    def range_test(self, i, stop, step, raw_step):
        if isinstance(raw_step, Lit):
            return self.b.lt(i, stop) if raw_step.value > 0 else self.b.gt(i, stop)
        zero = self.b.zeros(step.type)
        up = self.b.and_(self.b.gt(step, zero), self.b.lt(i, stop))
        down = self.b.and_(self.b.lt(step, zero), self.b.gt(i, stop))
        return self.b.not_(self.b.and_(self.b.not_(up), self.b.not_(down)))

    def loop_var(self, name, t):
        var = self.scope.names.get(name)
        if var is None:
            var = self.b.new_var(t, name)
            self.scope.names[name] = var
        elif isinstance(var, Value) or var.type != t:
            raise KernelTypeError(f"loop variable '{name}' was a {var.type} before",
                                  self.b.loc)
        return var

    def for_query(self, node, take_next):
        """``for index in query:`` (hash grid, mesh box): a WHILE whose condition takes the
        next item into the loop variable (``take_next(target)`` returns whether it found
        one)."""
        if self.scope.names.get(node.target.id) is None:
            self.assign_name(node.target.id, self.b.zeros(int32))
        brk = self.flag("break") if _direct(node.body, ast.Break) else None
        cond_block, body = Block(), Block()
        self.b.emit(Op.WHILE, regions=[cond_block, body])
        with self.b.at(cond_block):
            cond_block.result = self.loop_test(take_next(node.target), brk)
        with self.b.at(body):
            self.loop_body(node.body, brk)

    def loop_test(self, cond, brk):
        for flag in (brk, self.scope.ret_flag):
            if flag is not None:
                cond = self.b.and_(cond, self.b.not_(self.b.load(flag)))
        return cond

    def loop_body(self, stmts, brk):
        cont = self.flag("continue") if _direct(stmts, ast.Continue) else None
        self.scope.loops.append((brk, cont))
        try:
            self.body(stmts)
        finally:
            self.scope.loops.pop()

    def stmt_While(self, node):
        if node.orelse:
            raise KernelSyntaxError("'while ... else' is not supported in kernels", self.b.loc)
        brk = self.flag("break") if _direct(node.body, ast.Break) else None
        cond_block, body = Block(), Block()
        self.b.emit(Op.WHILE, regions=[cond_block, body])
        with self.b.at(cond_block):
            cond_block.result = self.loop_test(self.truth(self.expr(node.test)), brk)
        with self.b.at(body):
            self.loop_body(node.body, brk)

    # ---- funcs -------------------------------------------------------------------------------

    def inline_call(self, func, pyfunc, args):
        """Inline the overload ``pyfunc`` of ``func`` with its (bound, defaulted) arguments;
        a generic parameter takes the type of its argument."""
        if pyfunc in self.inlining:
            raise KernelTypeError(f"func '{func.__name__}' calls itself; recursion is not "
                                  "supported in kernels", self.b.loc)
        src = parse_function(pyfunc)
        vals = []
        for p, a in zip(src.tree.args.args, args):
            t = annotation_type(pyfunc, p, src)
            if isinstance(a, tuple):  # a tuple argument (its fit was checked on overload)
                vals.append(a)
                continue
            if structs.is_struct_type(t) or structs.is_structish(a):
                vals.append(structs.check_func_arg(self, func, p.arg, t, a))
                continue
            want = t.scalar if (t.is_scalar or t.is_vector or t.is_matrix) \
                and not is_generic(t) else None
            v = a if isinstance(a, ArrayRef) else self.value(a, want)
            if not matches(t, v.type):
                raise KernelTypeError(f"argument '{p.arg}' of func '{func.__name__}' must be a "
                                      f"{t}, not a {v.type}", self.b.loc)
            vals.append(v)
        if getattr(func, "native", None) is not None:
            raise KernelTypeError(f"func '{func.__name__}' is a native (C++) snippet, which "
                                  "kernlab cannot compile", self.b.loc)
        if func.replay is not None:
            return self.replay_call(func, src, vals, pyfunc)
        grad = func.grad_for(pyfunc)  # the custom gradient of this overload, if any
        if grad is None or grad.pyfunc in self.inlining:  # f called from its grad
            return self.inline_body(func, src, vals, pyfunc=pyfunc)
        return self.custom_call(func, src, vals, pyfunc, grad)

    def replay_call(self, func, src, vals, pyfunc=None):
        """A func with @kl.func_replay: a CUSTOM region whose second region (the replay,
        inlined on the same arguments) is what the adjoint recomputes and differentiates."""
        if func.grad is not None:
            raise KernelTypeError(f"func '{func.__name__}' has both a custom gradient and a "
                                  "replay function; kernlab supports one or the other",
                                  self.b.loc)
        forward, replay = Block(), Block()
        with self.b.at(forward):
            result = self.inline_body(func, src, vals, pyfunc=pyfunc)
        out = None if result is None else self.b.new_var(result.type, f"{func.__name__}_out")
        if out is not None:
            with self.b.at(forward):
                self.b.store(out, result)
        rsrc = parse_function(func.replay.pyfunc)
        if len(rsrc.tree.args.args) != len(vals):
            raise KernelTypeError(f"replay function '{func.replay.__name__}' must take the "
                                  f"{len(vals)} parameter(s) of '{func.__name__}'",
                                  rsrc.loc(rsrc.tree))
        with self.b.at(replay):
            r = self.inline_body(func.replay, rsrc, vals)
            if out is not None:
                if r is None or r.type != out.type:
                    raise KernelTypeError(f"replay function '{func.replay.__name__}' must "
                                          f"return a {out.type}, as '{func.__name__}' does",
                                          rsrc.loc(rsrc.tree))
                self.b.store(out, r)
        self.b.emit(Op.CUSTOM, list(vals), regions=[forward, replay], func=func, out=out,
                    replay=True)
        return self.b.load(out) if out is not None else None

    def inline_body(self, func, src, vals, adjoints=None, pyfunc=None):
        from .lower import Scope, _has_return
        pyfunc = pyfunc or func.pyfunc
        scope = Scope(pyfunc, src, is_kernel=False, adjoints=adjoints)
        self.stack.append(scope)
        self.inlining.append(pyfunc)
        try:
            for p, v in zip(src.tree.args.args, vals):
                self.bind_param(p.arg, v)
            if _has_return(src.tree):
                scope.ret_flag = self.flag("returned")
            self.body(src.tree.body)
        finally:
            self.stack.pop()
            self.inlining.pop()
        if isinstance(scope.ret_var, structs.StructVal):
            return scope.ret_var
        if isinstance(scope.ret_var, list):
            return tuple(self.b.load(v) for v in scope.ret_var)
        return self.b.load(scope.ret_var) if scope.ret_var is not None else None

    def custom_call(self, func, src, vals, pyfunc=None, grad=None):
        """A func with a custom gradient: a CUSTOM region holding the func inlined and the
        gradient body, which reads ``adj_ret`` (one per returned value: adj_ret0, ...) and
        accumulates into ``kl.adjoint[x]`` (a local per scalar/vector parameter, the
        parameter's adjoint array for an array parameter)."""
        forward, backward = Block(), Block()
        ins_args = list(vals)
        with self.b.at(forward):
            result = self.inline_body(func, src, vals, pyfunc=pyfunc)
        results = list(result) if isinstance(result, tuple) else \
            [] if result is None else [result]
        if any(not isinstance(r, Value) for r in results):
            raise KernelTypeError(f"func '{func.__name__}' with a custom gradient must return "
                                  "scalars, vectors or matrices", self.b.loc)
        outs = [self.b.new_var(r.type, f"{func.__name__}_out{k}")
                for k, r in enumerate(results)]
        with self.b.at(forward):
            for var, r in zip(outs, results):
                self.b.store(var, r)
        grad = grad or func.grad
        grad_src = parse_function(grad.pyfunc)
        gparams = grad_src.tree.args.args
        if len(gparams) != len(vals) + len(outs):
            raise KernelTypeError(f"custom gradient '{grad.__name__}' must take the "
                                  f"{len(vals)} parameter(s) of '{func.__name__}' and one "
                                  f"adjoint per returned value ({len(outs)})",
                                  grad_src.loc(grad_src.tree))
        adj_rets = [self.b.new_var(v.type, f"adj_ret{k}") for k, v in enumerate(outs)]
        # a struct parameter's adjoint is one per leaf field: kl.adjoint[x.vec] (the CUSTOM
        # operands are the leaves' values, so their adjoints flow back to where they came from)
        ins_args, keys = [], []
        for p, v in zip(gparams, vals):
            if structs.is_structish(v) and not isinstance(v, structs.StructArray):
                for path, leaf in self.struct_leaves(v, p.arg):
                    ins_args.append(leaf)
                    keys.append(path)
            else:
                ins_args.append(v)
                keys.append(p.arg)
        adj_args = {k: self.b.new_var(v.type, f"adj_{k}")
                    for k, v in zip(keys, ins_args) if not v.type.is_array}
        adj_arrays = [(k, Value(v.type, f"adj_{k}"), v)
                      for k, v in zip(keys, ins_args) if v.type.is_array]
        adjoints = dict(adj_args)
        adjoints.update({name: ph for name, ph, _ in adj_arrays})
        with self.b.at(backward):
            for var in adj_args.values():
                self.b.store(var, self.b.zeros(var.type))
            self.inline_body(grad, grad_src,
                             [*vals, *(self.b.load(a) for a in adj_rets)], adjoints)
        self.b.emit(Op.CUSTOM, ins_args, regions=[forward, backward], func=func, outs=outs,
                    adj_rets=adj_rets, adj_args=[adj_args.get(k) for k in keys],
                    adj_arrays=[(ph, v) for _, ph, v in adj_arrays],
                    out=outs[0] if len(outs) == 1 else None)
        if not outs:
            return None
        loads = [self.b.load(v) for v in outs]
        return loads[0] if len(loads) == 1 else tuple(loads)

    def struct_leaves(self, sv, path: str) -> list:
        """(dotted path, Value) of each scalar, vector, matrix or array field of a struct
        value or array element, nested structs' fields included (read here, once)."""
        out = []
        for fname, ft in sv.type.fields.items():
            if ft is None:
                continue
            if structs.is_struct_type(ft):
                out += self.struct_leaves(structs.get_field(self, sv, fname), f"{path}.{fname}")
            elif not (ft.is_array and isinstance(sv, structs.StructElem)):
                out.append((f"{path}.{fname}", structs.get_field(self, sv, fname)))
        return out

    @staticmethod
    def adjoint_key(node) -> str | None:
        """The parameter ``kl.adjoint[...]`` names: ``x``, or a struct field path ``x.v``."""
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = ControlMixin.adjoint_key(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def adjoint_value(self, node):
        """``kl.adjoint[x]`` read as a value in a custom gradient: an array parameter's
        adjoint array (so ``kl.adjoint[xs][i] += v`` works), or a scalar's accumulator."""
        adjoints = getattr(self.scope, "adjoints", None)
        name = self.adjoint_key(node.slice)
        if adjoints is None or name not in adjoints:
            raise KernelTypeError("kl.adjoint[x] needs x to be a parameter of the function "
                                  "this custom gradient is for", self.b.loc)
        found = adjoints[name]
        return found if isinstance(found, Value) else self.b.load(found)

    def adjoint_target(self, target):
        """The accumulator Var for ``kl.adjoint[x]``, or None if target is something else."""
        if not isinstance(target, ast.Subscript) \
                or not isinstance(target.value, (ast.Name, ast.Attribute)):
            return None  # (evaluating a[i] of a[i][k] here would read the array)
        base = self.expr(target.value)
        if not (isinstance(base, PyObj) and base.obj is lang.adjoint):
            return None
        adjoints = getattr(self.scope, "adjoints", None)
        name = self.adjoint_key(target.slice)
        if adjoints is None or name not in adjoints or isinstance(adjoints[name], Value):
            raise KernelTypeError("kl.adjoint[x] needs x to be a scalar or vector parameter "
                                  "of the function this custom gradient is for (for an "
                                  "array: kl.adjoint[a][i] += v)", self.b.loc)
        return adjoints[name]


def _is_range(fn) -> bool:
    return isinstance(fn, PyObj) and fn.obj is range


def _direct(stmts, kind) -> bool:
    """Whether a break/continue of this loop (not of a nested one) occurs in stmts."""
    def visit(node):
        if isinstance(node, kind):
            return True
        if isinstance(node, (ast.For, ast.While)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


_NONE = object()


def _static_reads(stmts, name: str) -> bool:
    """Whether a ``static(...)`` call in stmts reads the name."""
    for n in ast.walk(ast.Module(list(stmts), [])):
        if isinstance(n, ast.Call) and (
                isinstance(n.func, ast.Name) and n.func.id == "static"
                or isinstance(n.func, ast.Attribute) and n.func.attr == "static"):
            if any(isinstance(m, ast.Name) and m.id == name for a in n.args
                   for m in ast.walk(a)):
                return True
    return False
