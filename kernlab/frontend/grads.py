"""``kl.grad(f)(x, ...)`` in forward code (mixed into the Lowerer): the partial derivatives
of a func or builtin at the arguments, computed in the kernel.

The call is lowered as usual into a scratch block, which is then moved into the kernel and
followed by its reverse sweep, built with the same derivative rules the autodiff pass uses
(each builtin record's ``grad``). Only straight-line bodies are accepted (no branches or
loops), which covers the scalar helper funcs this is meant for; anything else is a clear
error. One argument gives one derivative; several give a tuple.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import KernelTypeError
from ..ir.nodes import Block, Op, Value


@dataclass(frozen=True)
class GradOf:
    """``kl.grad(target)``: a callable that gives target's partial derivatives."""

    target: object


class GradMixin:
    def grad_call(self, target, args, kwargs):
        from ..kernel import Func
        from .. import lang
        vals = [self.value(a, self.float_hint(args)) for a in args]
        for v in vals:
            if not v.type.is_float:
                raise KernelTypeError(f"grad() differentiates with respect to float "
                                      f"arguments, not {v.type}", self.b.loc)
        scratch = Block()
        with self.b.at(scratch):
            if isinstance(target, Func):
                out = self.call_func(target, vals, kwargs)
            elif isinstance(target, lang.BuiltinFunction):
                out = self.call_builtin(target.builtin, vals)
            else:
                raise KernelTypeError(f"grad() takes a func or a builtin, not {target!r}",
                                      self.b.loc)
        if not isinstance(out, Value) or not out.type.is_float:
            raise KernelTypeError("grad() needs a function that returns a float value",
                                  self.b.loc)
        for ins in scratch.instrs:
            if ins.regions or ins.op in (Op.STORE, Op.ATOMIC, Op.LOAD):
                raise KernelTypeError("grad() supports functions without branches, loops or "
                                      "array accesses", self.b.loc)
        self.b.block.instrs.extend(scratch.instrs)
        adj = {out: self.b.const(1, out.type)}
        for ins in reversed(scratch.instrs):
            self.grad_step(ins, adj)
        grads = [adj.get(v) or self.b.zeros(v.type) for v in vals]
        return grads[0] if len(grads) == 1 else tuple(grads)

    def float_hint(self, args):
        typed = [a.type for a in args if isinstance(a, Value) and a.type.is_float]
        from ..types import float32
        return typed[0].scalar if typed else float32

    def grad_step(self, ins, adj):
        def add(key, c):
            if c is None or not key.type.is_float:
                return
            if c.type != key.type:
                c = self.b.cast(c, key.type)
            adj[key] = c if key not in adj else self.b.add(adj[key], c)

        if ins.op is Op.CALL:
            a = adj.pop(ins.result, None)
            bi = ins.attrs["builtin"]
            if a is None or not bi.differentiable or bi.grad is None:
                return
            for arg, c in zip(ins.args, bi.grad(self.b, *ins.args, ins.result, a)):
                add(arg, c)
        elif ins.op is Op.LOAD_VAR:
            add(ins.attrs["var"], adj.pop(ins.result, None))
        elif ins.op is Op.STORE_VAR:
            add(ins.args[0], adj.pop(ins.attrs["var"], None))
