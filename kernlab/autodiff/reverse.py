"""Reverse mode: a kernel's IR to its adjoint kernel's IR (``reverse_mode``).

The adjoint kernel takes the kernel's parameters followed by one adjoint per parameter
(``adj_x``; an array's may be absent) and has two sections:

* **forward replay** — the kernel again, without its side effects (array stores, atomics,
  prints), so every value the reverse sweep needs is recomputed;
* **reverse** — each instruction's adjoint in reverse order. Adjoints live in local
  variables (``adj_v``) that start at zero and are reset when their value's definition
  has been reversed, so a value defined inside a loop gets a fresh adjoint per iteration.

Regions (if / for / while bodies) are handled by *snapshot and recompute*: entering a
region, the replay pushes the locals the region reads or writes onto a per-thread stack —
once per loop iteration for loops, with the trip count pushed after the loop. The
reverse sweep pops a snapshot, restores the locals, replays that one region instance
(which pushes snapshots of its own sub-regions) and reverses it. Memory is one snapshot per
region instance executed at the top level (O(iterations × carried locals)); time is about
two forward passes plus the reverse. Loop-carried state is therefore exact for any trip
count — runtime bounds, while, break, continue and early return included (they are flags in
the IR, so just more carried locals).

What cannot be differentiated is rejected here, with the user's line: an array element
overwritten after it was read (the replay would read the new value), and using the value
an atomic returns.
"""
from __future__ import annotations

from ..ir.builder import Builder
from ..ir.nodes import Block, Function, Instr, Op, Param, Value, Var
from ..ir.verify import verify
from ..types import int32
from .checks import check_differentiable, own_element_arrays

STRUCTURED = (Op.IF, Op.FOR, Op.WHILE)


def reverse_mode(func: Function) -> Function:
    check_differentiable(func)
    adj_params = [Param(f"adj_{p.name}", p.type, Value(p.type, f"adj_{p.name}"))
                  for p in func.params]
    out = Function(func.name, func.params + adj_params, Block(), func.loc,
                   vars=list(func.vars), sites=func.sites, ndim=func.ndim, is_adjoint=True)
    ad = _Reverse(func, out, {p.value: a.value for p, a in zip(func.params, adj_params)})
    ad.forward(func.body, record=True)
    out.reverse_start = len(out.body.instrs)
    ad.reverse(func.body)
    return verify(out)


def _differentiable(v) -> bool:
    return v is not None and not v.type.is_array and v.type.is_float


def _touched_vars(ins: Instr) -> list[Var]:
    """Locals an instruction's regions read or write, in first-seen order."""
    seen: dict = {}
    for region in ins.regions:
        for sub in region.walk():
            var = sub.attrs.get("var")
            if var is not None:
                seen.setdefault(var, None)
    return list(seen)


class _Reverse:
    def __init__(self, func: Function, out: Function, adj_arrays: dict):
        self.func = func
        self.g = Builder(out, func.loc)
        self.map = {p.value: p.value for p in func.params}
        self.adj_arrays = adj_arrays
        self.own = own_element_arrays(func)
        self.adj_vars: dict = {}

    # ---- adjoint storage -------------------------------------------------------------------

    def adj(self, key) -> Var:
        """The adjoint accumulator of a forward Value or Var."""
        var = self.adj_vars.get(key)
        if var is None:
            var = self.g.new_var(key.type, f"adj_{key.name or 'v'}")
            self.adj_vars[key] = var
        return var

    def take(self, key) -> Value:
        """Read an adjoint and reset it to zero (its definition is being reversed)."""
        var = self.adj(key)
        value = self.g.load(var)
        self.g.store(var, self.g.zeros(var.type))
        return value

    def accumulate(self, key, contribution: Value | None):
        if contribution is None or not _differentiable(key):
            return
        var = self.adj(key)
        if contribution.type != var.type:
            contribution = self.g.cast(contribution, var.type)
        self.g.store(var, self.g.add(self.g.load(var), contribution))

    # ---- forward replay --------------------------------------------------------------------

    def forward(self, block: Block, record: bool):
        """Emit a side-effect-free copy of block; with record, push region snapshots."""
        g = self.g
        for ins in block.instrs:
            with g.located(ins.loc):
                if ins.op in (Op.STORE, Op.ATOMIC, Op.PRINT):
                    continue
                if ins.op in STRUCTURED and record:
                    self.forward_recorded(ins)
                    continue
                self.clone(ins, [self.sub_forward(r, ins) for r in ins.regions])

    def sub_forward(self, region: Block, ins: Instr) -> Block:
        if ins.op is Op.CUSTOM and region is ins.regions[1]:
            return Block()  # the gradient body runs only in the reverse sweep
        new = Block()
        with self.g.at(new):
            self.forward(region, record=False)
        new.result = self.map.get(region.result) if region.result is not None else None
        return new

    def clone(self, ins: Instr, regions):
        result = Value(ins.result.type, ins.result.name) if ins.result is not None else None
        args = [self.map[a] for a in ins.args]
        self.g.block.instrs.append(Instr(ins.op, args, result, ins.loc, dict(ins.attrs),
                                         regions))
        if result is not None:
            self.map[ins.result] = result

    def push_snapshot(self, vars_):
        if vars_:
            self.g.emit(Op.PUSH, [self.g.load(v) for v in vars_])

    def pop_snapshot(self, vars_):
        for var in reversed(vars_):
            self.g.store(var, self.g.emit(Op.POP, (), var.type, var.name))

    def forward_recorded(self, ins: Instr):
        g, touched = self.g, _touched_vars(ins)
        if ins.op is Op.IF:
            self.push_snapshot(touched)
            self.clone(ins, [self.sub_forward(r, ins) for r in ins.regions])
            return
        count = g.new_var(int32, "trips")
        g.store(count, g.const(0, int32))
        regions = [self.sub_forward(r, ins) for r in ins.regions]
        body = regions[-1]
        prologue = Block()
        with g.at(prologue):
            g.store(count, g.add(g.load(count), g.const(1, int32)))
            self.push_snapshot(touched)
        body.instrs[:0] = prologue.instrs
        self.clone(ins, regions)
        g.emit(Op.PUSH, [g.load(count)])

    # ---- reverse sweep ---------------------------------------------------------------------

    def reverse(self, block: Block):
        for ins in reversed(block.instrs):
            with self.g.located(ins.loc):
                getattr(self, "rev_" + ins.op.name, self.rev_nothing)(ins)

    def rev_nothing(self, ins):
        pass  # CONST, TID, SHAPE, PRINT: no adjoint

    def rev_LOAD_VAR(self, ins):
        if _differentiable(ins.result):
            self.accumulate(ins.attrs["var"], self.take(ins.result))

    def rev_STORE_VAR(self, ins):
        var = ins.attrs["var"]
        if _differentiable(var):
            self.accumulate(ins.args[0], self.take(var))

    def rev_CALL(self, ins):
        bi = ins.attrs["builtin"]
        if not _differentiable(ins.result):
            return
        adj = self.take(ins.result)
        if not bi.differentiable or bi.grad is None:
            return
        args = [self.map[a] for a in ins.args]
        contributions = bi.grad(self.g, *args, self.map[ins.result], adj)
        for a, c in zip(ins.args, contributions):
            self.accumulate(a, c)

    def _adj_access(self, ins, n_index):
        arr = ins.args[0]
        return self.adj_arrays[arr], [self.map[i] for i in ins.args[1:1 + n_index]]

    def rev_LOAD(self, ins):
        if not _differentiable(ins.result):
            return
        adj_arr, idx = self._adj_access(ins, len(ins.args) - 1)
        c, site = self.take(ins.result), ins.attrs["site"]
        g = self.g
        if ins.args[0] in self.own:  # only this thread touches this element: a plain add
            old = g.emit(Op.LOAD, [adj_arr, *idx], c.type, nullable=True, site=site)
            g.emit(Op.STORE, [adj_arr, *idx, g.add(old, c)], nullable=True, site=site)
        else:
            g.emit(Op.ATOMIC, [adj_arr, *idx, c], c.type, kind="add", nullable=True,
                   site=site)

    def rev_STORE(self, ins):
        value = ins.args[-1]
        if not _differentiable(value):
            return
        adj_arr, idx = self._adj_access(ins, len(ins.args) - 2)
        adj = self.g.emit(Op.LOAD, [adj_arr, *idx], value.type, nullable=True,
                          site=ins.attrs["site"])
        self.accumulate(value, adj)

    def rev_ATOMIC(self, ins):
        value, kind, g = ins.args[-1], ins.attrs["kind"], self.g
        if not _differentiable(value):
            return
        adj_arr, idx = self._adj_access(ins, len(ins.args) - 2)
        adj = g.emit(Op.LOAD, [adj_arr, *idx], value.type, nullable=True,
                     site=ins.attrs["site"])
        if kind == "sub":
            adj = g.neg(adj)
        elif kind in ("min", "max"):  # the gradient goes to the value that won
            final = g.emit(Op.LOAD, [self.map[ins.args[0]], *idx], value.type,
                           site=ins.attrs["site"])
            adj = g.where(g.eq(final, self.map[value]), adj, g.zeros(value.type))
        self.accumulate(value, adj)

    def rev_IF(self, ins):
        g, touched = self.g, _touched_vars(ins)
        self.pop_snapshot(touched)
        then_block, else_block = Block(), Block()
        g.emit(Op.IF, [self.map[ins.args[0]]], regions=[then_block, else_block])
        for new, old in ((then_block, ins.regions[0]), (else_block, ins.regions[1])):
            with g.at(new):
                self.forward(old, record=True)
                self.reverse(old)

    def rev_loop(self, ins):
        g, touched = self.g, _touched_vars(ins)
        trips = g.emit(Op.POP, (), int32, "trips")
        body = Block()
        g.emit(Op.FOR, [g.const(0, int32), trips, g.const(1, int32)], regions=[body],
               var=g.new_var(int32, "rev_iter"))
        with g.at(body):
            self.pop_snapshot(touched)
            self.forward(ins.regions[-1], record=True)
            self.reverse(ins.regions[-1])

    rev_FOR = rev_WHILE = rev_loop

    def rev_CUSTOM(self, ins):
        g = self.g
        out, adj_ret = ins.attrs["out"], ins.attrs["adj_ret"]
        g.store(adj_ret, self.take(out))
        self.forward(ins.regions[1], record=False)  # the user's gradient body, as written
        for a, var in zip(ins.args, ins.attrs["adj_args"]):
            if var is not None:
                self.accumulate(a, g.load(var))

