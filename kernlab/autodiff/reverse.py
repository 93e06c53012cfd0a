"""Reverse mode: a kernel's IR to its adjoint kernel's IR (``reverse_mode``).

The adjoint kernel takes the kernel's parameters followed by one adjoint per parameter
(``adj_x``; an array's may be absent) and has two sections:

* **forward replay** — the kernel again, without its side effects (array stores, atomics),
  so every value the reverse sweep needs is recomputed; its prints print again, as in Warp
  (the regions the reverse sweep recomputes do not);
* **reverse** — each instruction's adjoint in reverse order (a print()'s adjoint prints
  "adj: " and the adjoint of each value it showed, as Warp's adj_print does). Adjoints live in local
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

Every array store consumes the gradient of the element it overwrites (reads it, then zeroes
it), so overwritten values get none, except in the arrays listed in ``retain``, whose
gradients are only read. As in Warp 1.19, the runtime retains the arrays made with
retain_grad and, in an adjoint launch by hand, an array the kernel only writes whose
gradient buffer is not its own ``.grad`` (one passed in adj_inputs/adj_outputs; an array
the kernel also reads is consumed all the same: runtime/launch.py, _kept_gradients). What cannot be differentiated is rejected here, with the
user's line (autodiff/checks.py): an array element overwritten after it was read when an
adjoint needs the value read (the replay would read the new value), and using the value an
atomic returns.
"""
from __future__ import annotations

from ..errors import GradientError
from ..ir import print_layout
from ..ir.builder import Builder
from ..ir.nodes import Block, Function, Instr, Op, Param, Value, Var
from ..ir.verify import verify
from ..types import int32
from .checks import check_differentiable, fixed_vars
from .inplace import localize
from .ownership import owned_arrays

STRUCTURED = (Op.IF, Op.FOR, Op.WHILE)
_EFFECTS = (Op.STORE, Op.ATOMIC, Op.PRINT)  # left out of replays (the forward replay prints)
# The ops the per-instruction loops test, as module names: ``Op.CALL`` goes through the Enum
# metaclass's attribute hook (about 0.1 us), a module global does not.
_CALL, _CUSTOM, _PRINT, _STORE_VAR, _FOR = Op.CALL, Op.CUSTOM, Op.PRINT, Op.STORE_VAR, Op.FOR


def reverse_mode(func: Function, retain: frozenset = frozenset(),
                 shared: bool = False) -> Function:
    """The adjoint of func. An array store (and atomic_exch) consumes the element's gradient
    (reads it, then zeroes it: the overwritten value gets none), except for the array
    parameters whose indices are in ``retain`` (the caller's choice: arrays made with
    retain_grad=True, gradient buffers that are not the array's own .grad). Arrays
    the kernel reads and then overwrites nonlinearly, each thread its own element, are read
    once on entry (autodiff/inplace.py): the adjoint takes their values before the launch,
    which a kl.Tape keeps.

    A load's adjoint is added into the gradient with a plain load and store where each
    thread owns the element (autodiff/ownership.py; ``out.owned`` lists those arrays),
    atomically elsewhere; with ``shared`` atomically everywhere (for launches whose
    gradient arrays share memory, which the ownership proof cannot see)."""
    func = localize(func)
    check_differentiable(func)
    adj_params = [Param(f"adj_{p.name}", p.type, Value(p.type, f"adj_{p.name}"))
                  for p in func.params]
    owned = {} if shared else owned_arrays(func)
    out = Function(func.name, func.params + adj_params, Block(), func.loc,
                   vars=list(func.vars), sites=func.sites, ndim=func.ndim, is_adjoint=True,
                   owned=owned)
    ad = _Reverse(func, out, {p.value: a.value for p, a in zip(func.params, adj_params)},
                  {func.params[k].value for k in retain},
                  {func.params[k].value for k in owned})
    ad.replaying = True
    ad.forward(func.body, record=True)
    ad.replaying = False
    out.reverse_start = len(out.body.instrs)
    ad.reverse(func.body)
    return verify(out)


def _print_sources(func: Function) -> dict:
    """For print's adjoint: each value read from a local -> the local, and each local
    assigned once at the top from a scalar parameter (checks.fixed_vars) -> the parameter."""
    fixed = fixed_vars(func)
    sources = {}
    for ins in func.body.walk():
        if ins.op is Op.LOAD_VAR:
            sources[ins.result] = ins.attrs["var"]
        elif ins.op is Op.STORE_VAR and ins.attrs["var"] in fixed:
            sources[ins.attrs["var"]] = ins.args[0]
    return sources


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


def _written(instrs) -> set:
    out = set()
    for ins in instrs:
        for sub in [ins, *(s for r in ins.regions for s in r.walk())]:
            if sub.op in (Op.STORE_VAR, Op.FOR):
                out.add(sub.attrs["var"])
    return out


def snapshot_plan(body: Block) -> dict:
    """For each region instruction, the locals its snapshot must hold: those it touches
    that may change between entering it and reversing it (written inside it, after it, or
    anywhere in an enclosing loop — the next iteration comes after it)."""
    plan: dict = {}

    # "written later" is a chain of frames (last, k): a local is written later when some
    # frame's block writes it at or after position k (last: local -> its last writer's
    # position), so no set of later writes is built per region instruction
    def visit(block: Block, later: tuple):
        instrs = block.instrs
        last: dict = {}
        writes: dict = {}
        for k, ins in enumerate(instrs):
            if ins.regions:
                writes[k] = _written([ins])
                for var in writes[k]:
                    last[var] = k
            elif ins.op is _STORE_VAR or ins.op is _FOR:
                last[ins.attrs["var"]] = k
        for k in writes:
            ins = instrs[k]
            after = later + ((last, k),)
            plan[ins] = [v for v in _touched_vars(ins) if _written_in(v, after)]
            inner_later = after + (({v: 0 for v in writes[k]}, 0),) \
                if ins.op in (Op.FOR, Op.WHILE) else after
            for region in ins.regions:
                visit(region, inner_later)

    visit(body, ())
    return plan


def _written_in(var, frames: tuple) -> bool:
    for last, k in frames:
        if last.get(var, -1) >= k:
            return True
    return False


def _block_local_values(body: Block) -> set:
    """Values used only in the block that defines them (not in nested regions)."""
    local, escaped = set(), set()
    regions: list = []  # every region, nested ones included

    def visit(block: Block):
        defined = set()
        for ins in block.instrs:
            for a in ins.args:
                if a not in defined:
                    escaped.add(a)
            if ins.regions:
                for region in ins.regions:
                    regions.append(region)
                    visit(region)
                    if region.result is not None and region.result not in _defs(region):
                        escaped.add(region.result)
            if ins.result is not None:
                defined.add(ins.result)
                local.add(ins.result)

    visit(body)
    # a value used from a nested region is used outside its block
    for region in regions:
        inner = _defs_deep(region)
        for sub in region.walk():
            escaped.update(a for a in sub.args if a not in inner)
        if region.result is not None and region.result not in inner:
            escaped.add(region.result)
    return local - escaped


def _defs(block: Block) -> set:
    return {i.result for i in block.instrs if i.result is not None}


def _defs_deep(block: Block) -> set:
    return {i.result for i in block.walk() if i.result is not None}


class _Reverse:
    def __init__(self, func: Function, out: Function, adj_arrays: dict, retained: set,
                 own: set):
        self.func = func
        self.g = Builder(out, func.loc)
        self.map = {p.value: p.value for p in func.params}
        self.adj_arrays = adj_arrays
        self.own = own
        self.retained = retained
        self.adj_vars: dict = {}
        self.local = _block_local_values(func.body)
        self.snapshots = snapshot_plan(func.body)
        self.sym: dict = {}
        self.effects = False  # True while emitting a custom gradient body (it writes adj_a)
        self.replaying = False  # True while emitting the forward replay (it prints)
        self.sources = None  # print's adjoint: _print_sources(func), made on first use

    # ---- adjoint storage -------------------------------------------------------------------
    # A value whose uses all sit in its own block gets its adjoint as a plain SSA value,
    # summed as contributions arrive (the reverse sweep meets every use before the
    # definition). Other values, and locals, accumulate in adjoint variables.

    def adj(self, key) -> Var:
        """The adjoint accumulator variable of a forward Value or Var."""
        var = self.adj_vars.get(key)
        if var is None:
            var = self.g.new_var(key.type, f"adj_{key.name or 't'}")
            self.adj_vars[key] = var
        return var

    def take(self, key) -> Value | None:
        """The adjoint of key, consumed (its definition is being reversed); None if nothing
        can have flowed into it."""
        if key in self.local:
            return self.sym.pop(key, None)
        var = self.adj(key)
        value = self.g.load(var)
        self.g.store(var, self.g.zeros(var.type))
        return value

    def accumulate(self, key, contribution: Value | None):
        if contribution is None or not _differentiable(key):
            return
        if contribution.type is not key.type and contribution.type != key.type:
            contribution = self.g.cast(contribution, key.type)
        if key in self.local:
            prev = self.sym.get(key)
            self.sym[key] = contribution if prev is None else self.g.add(prev, contribution)
            return
        var = self.adj(key)
        self.g.store(var, self.g.add(self.g.load(var), contribution))

    # ---- forward replay --------------------------------------------------------------------

    def forward(self, block: Block, record: bool):
        """Emit a side-effect-free copy of block; with record, push region snapshots."""
        g = self.g
        saved = g.loc  # each instruction's copy (and what it adds) carries its location
        try:
            for ins in block.instrs:
                g.loc = ins.loc
                op = ins.op
                if op in _EFFECTS and not self.effects \
                        and not (op is _PRINT and self.replaying):
                    continue
                if op is _CALL and ins.attrs["builtin"].effects and not self.effects:
                    if ins.result is not None:  # tile_atomic_add's old values: unused
                        self.map[ins.result] = g.zeros(ins.result.type)  # (checks.py)
                    continue
                if op is _CUSTOM and ins.attrs.get("replay"):
                    self.forward(ins.regions[1], record)  # the replay, not the func
                    continue
                if op in STRUCTURED and record:
                    self.forward_recorded(ins)
                    continue
                if ins.regions:
                    self.clone(ins, [self.sub_forward(r, ins) for r in ins.regions])
                else:
                    self.clone(ins, [])
        finally:
            g.loc = saved

    def sub_forward(self, region: Block, ins: Instr) -> Block:
        if ins.op is Op.CUSTOM and region is ins.regions[1]:
            return Block()  # the gradient body runs only in the reverse sweep
        new = Block()
        with self.g.at(new):
            self.forward(region, record=False)
        new.result = self.map.get(region.result) if region.result is not None else None
        return new

    def clone(self, ins: Instr, regions):
        old, mapped = ins.result, self.map
        result = Value(old.type, old.name) if old is not None else None
        args = [mapped[a] for a in ins.args] if ins.args else []
        self.g._blocks[-1].instrs.append(Instr(ins.op, args, result, ins.loc, dict(ins.attrs),
                                               regions))
        if result is not None:
            mapped[old] = result

    def push_snapshot(self, vars_):
        if vars_:
            self.g.emit(Op.PUSH, [self.g.load(v) for v in vars_])

    def pop_snapshot(self, vars_):
        for var in reversed(vars_):
            self.g.store(var, self.g.emit(Op.POP, (), var.type, var.name))

    def forward_recorded(self, ins: Instr):
        g, touched = self.g, self.snapshots[ins]
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
        g, saved = self.g, self.g.loc
        try:
            for ins in reversed(block.instrs):
                g.loc = ins.loc
                _REV[ins.op](self, ins)
                g.loc = saved
                self.sym.pop(ins.result, None)  # e.g. a constant's adjoint: nobody takes it
        finally:
            g.loc = saved

    def rev_nothing(self, ins):
        pass  # CONST, TID, SHAPE, printf: no adjoint

    def rev_PRINT(self, ins):
        """print()'s adjoint: each item it showed, a value's adjoint as it stands here (what
        flowed back from the later uses of the value, or of the local it was read from;
        for a parameter also the adjoint passed in), laid out as Warp's adj_print does
        (ir/print_layout.py). printf and expect_* print nothing here."""
        for item in ins.attrs.get("shows", ()):
            if isinstance(item, str):  # a label, or a struct's or array's placeholder
                print_layout.text(self.g, item, adjoint=True)
            else:
                print_layout.warp_form(self.g, self.current_adjoint(item), adjoint=True)

    def current_adjoint(self, v: Value) -> Value:
        """v's adjoint at this point of the reverse sweep, not consumed."""
        g, parts = self.g, []
        if self.sources is None:
            self.sources = _print_sources(self.func)
        var = self.sources.get(v)  # the local v was read from
        if _differentiable(v):
            own = self.sym.get(v) if v in self.local else g.load(self.adj(v))
            parts += [own] if own is not None else []
            if var is not None:
                parts.append(g.load(self.adj(var)))
        param = self.sources.get(var, v)  # a parameter, or the local holding one
        if param in self.adj_arrays and not param.type.is_array:
            parts.append(self.adj_arrays[param])
        total = parts[0] if parts else g.zeros(v.type)
        for p in parts[1:]:
            total = g.add(total, p)
        return total

    def rev_LOAD_VAR(self, ins):
        t = ins.result.type  # (_differentiable, written out: a LOAD_VAR has a result)
        if not t.is_array and t.is_float:
            self.accumulate(ins.attrs["var"], self.take(ins.result))

    def rev_STORE_VAR(self, ins):
        var = ins.attrs["var"]
        if not var.type.is_array and var.type.is_float:  # (_differentiable(var))
            self.accumulate(ins.args[0], self.take(var))

    def rev_CALL(self, ins):
        bi = ins.attrs["builtin"]
        if bi.array_grad:  # its adjoint reads or accumulates into array gradients (tiles)
            self.rev_array_call(ins, bi)
            return
        if not _differentiable(ins.result):
            return
        adj = self.take(ins.result)
        if adj is None or not bi.differentiable or bi.grad is None:
            return
        args = [self.map[a] for a in ins.args]
        contributions = bi.grad(self.g, *args, self.map[ins.result], adj)
        for a, c in zip(ins.args, contributions):
            self.accumulate(a, c)

    def rev_array_call(self, ins, bi):
        adj = self.take(ins.result) if _differentiable(ins.result) else None
        if not any(_differentiable(a) or a.type.is_array for a in ins.args):
            return
        args = [self.map[a] for a in ins.args]
        arrays = [self.adj_arrays.get(a) if a.type.is_array else None for a in ins.args]
        ret = self.map.get(ins.result) if ins.result is not None else None
        contributions = bi.grad(self.g, *args, ret, adj, arrays=arrays)
        for a, c in zip(ins.args, contributions):
            self.accumulate(a, c)

    def _adj_access(self, ins, n_index):
        arr = ins.args[0]
        return self.adj_arrays[arr], [self.map[i] for i in ins.args[1:1 + n_index]]

    def rev_LOAD(self, ins):
        if not _differentiable(ins.result):
            return
        c, site = self.take(ins.result), ins.attrs["site"]
        if c is None:
            return
        adj_arr, idx = self._adj_access(ins, len(ins.args) - 1)
        g = self.g
        if ins.args[0] in self.own:  # no other thread touches this element: a plain add
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
        if ins.args[0] not in self.retained:  # what this store overwrote gets no gradient
            self.g.emit(Op.STORE, [adj_arr, *idx, self.g.zeros(value.type)], nullable=True,
                        site=ins.attrs["site"])
        self.accumulate(value, adj)

    def rev_ATOMIC(self, ins):
        value, kind, g = ins.args[-1], ins.attrs["kind"], self.g
        if not _differentiable(value):
            return
        if kind == "cas":
            raise GradientError("atomic_cas on floats cannot be differentiated (whether it "
                                "wrote depends on the order threads run in)", ins.loc,
                                kernel=self.func.name)
        adj_arr, idx = self._adj_access(ins, ins.args[0].type.ndim)
        adj = g.emit(Op.LOAD, [adj_arr, *idx], value.type, nullable=True,
                     site=ins.attrs["site"])
        if kind == "sub":
            adj = g.neg(adj)
        elif kind == "exch" and ins.args[0] not in self.retained:  # a store: the value gets
            g.emit(Op.STORE, [adj_arr, *idx, g.zeros(value.type)], nullable=True,  # the
                   site=ins.attrs["site"])  # element's adjoint, which it replaced
        elif kind in ("min", "max"):  # the gradient goes to the value that won
            final = g.emit(Op.LOAD, [self.map[ins.args[0]], *idx], value.type,
                           site=ins.attrs["site"])
            adj = g.route_eq(final, self.map[value], adj)  # component-wise on vectors
        self.accumulate(value, adj)

    def rev_IF(self, ins):
        g, touched = self.g, self.snapshots[ins]
        self.pop_snapshot(touched)
        then_block, else_block = Block(), Block()
        g.emit(Op.IF, [self.map[ins.args[0]]], regions=[then_block, else_block])
        for new, old in ((then_block, ins.regions[0]), (else_block, ins.regions[1])):
            with g.at(new):
                self.forward(old, record=True)
                self.reverse(old)

    def rev_loop(self, ins):
        g, touched = self.g, self.snapshots[ins]
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
        if ins.attrs.get("replay"):  # the replay is what was recomputed: reverse it
            self.reverse(ins.regions[1])
            return
        g = self.g
        for out, adj_ret in zip(ins.attrs["outs"], ins.attrs["adj_rets"]):
            adj = self.take(out)
            g.store(adj_ret, adj if adj is not None else g.zeros(adj_ret.type))
        for placeholder, arr in ins.attrs.get("adj_arrays", ()):
            if arr not in self.adj_arrays:
                raise GradientError(f"kl.adjoint[{placeholder.name[4:]}] in a custom gradient "
                                    "needs the array to be a kernel parameter", ins.loc,
                                    kernel=self.func.name)
            self.map[placeholder] = self.adj_arrays[arr]
        start = len(g.block.instrs)
        self.effects = True
        try:
            self.forward(ins.regions[1], record=False)  # the user's gradient body, as written
        finally:
            self.effects = False
        placeholders = {self.map[p] for p, _ in ins.attrs.get("adj_arrays", ())}
        for new in g.block.instrs[start:]:  # absent gradients: accesses do nothing
            for sub in [new, *(s for r in new.regions for s in r.walk())]:
                if sub.op in (Op.LOAD, Op.STORE, Op.ATOMIC) and sub.args[0] in placeholders:
                    sub.attrs["nullable"] = True
        for a, var in zip(ins.args, ins.attrs["adj_args"]):
            if var is not None:
                self.accumulate(a, g.load(var))


_REV = {op: getattr(_Reverse, "rev_" + op.name, _Reverse.rev_nothing) for op in Op}
# (the method reversing each op, as a plain function: no name lookup per instruction)
