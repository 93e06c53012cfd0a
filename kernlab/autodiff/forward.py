"""Forward mode: a kernel's IR to its tangent kernel's IR (``tangent_mode``).

The tangent kernel takes the kernel's parameters followed by one tangent per parameter
(``tan_x``; an array's may be absent, a float scalar's is a number) and runs the kernel
once, carrying beside every float value its tangent (its directional derivative along the
input tangents). Locals get tangent locals (``tan_v``); an array load also loads the
element's tangent, a store also stores it, an atomic add also adds it. Loops, branches,
while/break and funcs need nothing special: the tangent flows in program order with the
values, so loop-carried state costs one more local per float local, and no stack.

Each builtin's tangent rule is derived from its record's derivative rule (``grad``, which
gives the vector-Jacobian product Jᵀ·w): the rule is emitted on a placeholder cotangent
``w`` and, being linear in ``w``, transposed — its own IR is walked backwards applying
the grad rules of the builtins it calls — which gives J·t. So there is one derivative
fact per builtin, and the forward and reverse modes cannot disagree. Dead code (the
placeholder's uses) is removed as it is emitted.

A ``@kl.func_grad`` custom gradient is honoured too: its body (a VJP) is run once per
component of each returned value with that component's unit cotangent, giving the
partial derivatives, whose inner product with the arguments' tangents is the output's
tangent (one run for a scalar-valued func). A ``@kl.func_replay`` func is differentiated
through its own body.

Two tangent kernels are made of a kernel (runtime/tangent.py runs them):

* ``effects=True`` — the kernel's computation *and* its tangents: its stores, atomics and
  prints stay, so one launch writes the outputs and their tangents (``kl.jvp``).
* ``effects=False`` — the tangents only (``kl.launch(..., tangent=True)``, and the tangent
  sweep of ``Tape.hvp``): no store into, or atomic on, the kernel's arrays and no print,
  except into the arrays in ``keep`` (arrays the kernel reads back what it wrote, which
  the runtime hands a scratch copy); the caller localizes the arrays each thread reads
  and overwrites at its own element first (autodiff/inplace.py: they become per-thread
  locals, so the reads after a store see the stored value without the store). The primal
  values the tangents do not need — typically every value computed only to be stored —
  are then dead, and are removed (``dead_code``): the saxpy tangent ``dz = a dx + da x +
  dy`` reads x, dx and dy and writes dz, never y or z. An ``atomic_min``/``max`` tangent
  reads the element's final value, which only exists after the forward ran (HVPs); a
  tangent launch refuses it (``check_launchable``).

Hessian-vector products also use the tangent of an *adjoint* kernel (forward over
reverse): the adjoint's per-thread stack then holds every float value followed by its
tangent.
"""
from __future__ import annotations

import numpy as np

from ..errors import GradientError
from ..ir.builder import Builder
from ..ir.nodes import Block, Function, Instr, Op, Param, Value, Var
from ..ir.verify import verify


def tangent_mode(func: Function, effects: bool = True, keep=()) -> Function:
    """The tangent kernel of func (a kernel's IR, or an adjoint kernel's for HVPs); with
    effects=False the tangents only, keeping the writes into the array params ``keep``
    (indices; ``out.kept`` lists them)."""
    tan_params = [Param(f"tan_{p.name}", p.type, Value(p.type, f"tan_{p.name}"))
                  for p in func.params]
    out = Function(func.name, func.params + tan_params, Block(), func.loc,
                   vars=list(func.vars), sites=func.sites, ndim=func.ndim,
                   is_adjoint=func.is_adjoint, is_tangent=True,
                   kept=() if effects else tuple(keep))
    t = _Tangent(func, out, {p.value: tp.value for p, tp in zip(func.params, tan_params)},
                 effects, {func.params[k].value for k in keep})
    _check_atomic_results(func)
    for k, ins in enumerate(func.body.instrs):
        if func.is_adjoint and k == func.reverse_start:
            out.reverse_start = len(out.body.instrs)
        t.instr(ins)
    if func.is_adjoint and out.reverse_start is None:
        out.reverse_start = len(out.body.instrs)
    dead_code(out)
    return verify(out)


def check_launchable(func: Function):
    """Refuse, before a tangent launch, what only a tangent after the forward can do: the
    tangent of atomic_min/max needs the element's final value. (Checked once per
    function.)"""
    if getattr(func, "_launchable", False):
        return
    for ins in func.body.walk():
        if ins.op is Op.ATOMIC and ins.attrs["kind"] in ("min", "max") \
                and _differentiable(ins.args[-1]):
            raise GradientError(
                f"atomic_{ins.attrs['kind']} has no tangent in a tangent launch: which "
                "thread's value wins is known only after every thread ran. Launch the "
                "kernel, then differentiate it with a tape (tape.backward or tape.hvp)",
                ins.loc, kernel=func.name)
    func._launchable = True


_PURE = (Op.CONST, Op.TID, Op.SHAPE, Op.LOAD, Op.LOAD_VAR, Op.CALL)


def dead_code(func: Function):
    """Remove, to a fixed point, what no effect of func needs: pure instructions (builtin
    calls, constants, array and local loads) whose value nobody uses, stores to locals
    nobody loads, and branches left empty. Loops stay (they may not terminate), and so do
    the per-thread stack's pushes and pops (they pair up)."""
    while True:
        used, loaded = set(), set()
        for ins in func.body.walk():
            used.update(ins.args)
            used.update(r.result for r in ins.regions if r.result is not None)
            if ins.op is Op.LOAD_VAR:
                loaded.add(ins.attrs["var"])
        if not _sweep(func.body, used, loaded):
            return


def _sweep(block: Block, used: set, loaded: set) -> bool:
    kept, changed = [], False
    for ins in block.instrs:
        for r in ins.regions:
            changed |= _sweep(r, used, loaded)
        dead = (ins.op in _PURE and ins.result not in used) \
            or (ins.op is Op.STORE_VAR and ins.attrs["var"] not in loaded) \
            or (ins.op is Op.IF and (ins.result is None or ins.result not in used)
                and not any(r.instrs or r.result is not None for r in ins.regions))
        if dead:
            changed = True
        else:
            kept.append(ins)
    block.instrs[:] = kept
    return changed


def _differentiable(v) -> bool:
    return v is not None and not v.type.is_array and v.type.is_float


def _check_atomic_results(func: Function):
    used = {a for ins in func.body.walk() for a in ins.args}
    for ins in func.body.walk():
        if ins.op is Op.ATOMIC and ins.result in used and _differentiable(ins.result):
            raise GradientError(f"the value returned by atomic_{ins.attrs['kind']} cannot be "
                                "differentiated (it depends on the order threads run in)",
                                ins.loc, kernel=func.name)


# ---- one builtin call's tangent, derived from its derivative rule ---------------------------

def call_tangent(g: Builder, ins: Instr, args: list, result: Value, tangents: list):
    """J·t for the CALL ``ins`` evaluated at ``args`` (giving ``result``): its builtin's
    VJP rule emitted on a placeholder cotangent, then transposed. None when zero."""
    bi = ins.attrs["builtin"]
    block = g.block
    start = len(block.instrs)
    w = g.zeros(result.type)
    contributions = bi.grad(g, *args, result, w)
    snippet = block.instrs[start:]
    dependent = {w}
    for sub in snippet:
        if sub.result is not None and any(a in dependent for a in sub.args):
            dependent.add(sub.result)
    cot: dict = {}

    def add(key, value):
        if value.type != key.type:
            value = g.cast(value, key.type)
        cot[key] = value if key not in cot else g.add(cot[key], value)

    for arg, c, tan in zip(args, contributions, tangents):
        if c is None or tan is None or c not in dependent or not _differentiable(arg):
            continue
        add(c, tan if tan.type == c.type else g.cast(tan, c.type))
    for sub in reversed(snippet):
        if sub.result not in dependent or sub.result is w:
            continue
        ct = cot.pop(sub.result, None)
        if ct is None:
            continue
        sbi = sub.attrs.get("builtin")
        if sub.op is not Op.CALL or sbi.grad is None or not sbi.differentiable:
            raise GradientError(f"internal error: the derivative rule of {bi.name}() applies "
                                f"{sbi.name if sbi else sub.op.value}() to its cotangent, "
                                "which has no derivative rule to transpose", ins.loc)
        for a, c in zip(sub.args, sbi.grad(g, *sub.args, sub.result, ct)):
            if c is not None and a in dependent:
                add(a, c)
    tangent = cot.get(w)
    _drop_dead(block, start, tangent)
    return tangent


def _drop_dead(block: Block, start: int, keep):
    """Remove the pure instructions emitted from ``start`` on that ``keep`` does not need."""
    live = {keep} if keep is not None else set()
    kept = []
    for sub in reversed(block.instrs[start:]):
        if sub.result in live or sub.op not in (Op.CALL, Op.CONST):
            live.update(sub.args)
            kept.append(sub)
    block.instrs[start:] = reversed(kept)


# ---- the transform -------------------------------------------------------------------------

class _Tangent:
    def __init__(self, func: Function, out: Function, tan_params: dict, effects: bool,
                 keep: set):
        self.func = func
        self.g = Builder(out, func.loc)
        self.map = {p.value: p.value for p in func.params}
        self.tan: dict = {v: t for v, t in tan_params.items()
                          if v.type.is_array or _differentiable(v)}
        self.tan_vars: dict = {}
        self.effects = effects
        self.keep = keep

    def writes(self, arr) -> bool:
        """Whether the tangent kernel keeps the kernel's own writes into arr."""
        return self.effects or arr in self.keep

    # -- tangents of values and locals --

    def tangent(self, value) -> Value | None:
        """The tangent of a source value (None: zero)."""
        return self.tan.get(value)

    def tangent_or_zero(self, value) -> Value:
        t = self.tan.get(value)
        return t if t is not None else self.g.zeros(value.type)

    def tan_var(self, var: Var) -> Var:
        tv = self.tan_vars.get(var)
        if tv is None:
            tv = self.tan_vars[var] = self.g.new_var(var.type, f"tan_{var.name}")
        return tv

    # -- instructions --

    def block(self, block: Block) -> Block:
        new = Block()
        with self.g.at(new):
            for ins in block.instrs:
                self.instr(ins)
        if block.result is not None:
            new.result = self.map[block.result]
        return new

    def instr(self, ins: Instr):
        with self.g.located(ins.loc):
            getattr(self, "tan_" + ins.op.name, self.tan_plain)(ins)

    def clone(self, ins: Instr, regions=(), **extra) -> Value | None:
        result = Value(ins.result.type, ins.result.name) if ins.result is not None else None
        attrs = dict(ins.attrs)
        attrs.update(extra)
        self.g.block.instrs.append(Instr(ins.op, [self.map[a] for a in ins.args], result,
                                         ins.loc, attrs, list(regions)))
        if result is not None:
            self.map[ins.result] = result
        return result

    def tan_plain(self, ins):  # CONST, TID, SHAPE: no tangent
        self.clone(ins)

    def tan_PRINT(self, ins):
        if self.effects:
            self.clone(ins)

    def tan_LOAD_VAR(self, ins):
        self.clone(ins)
        var = ins.attrs["var"]
        if _differentiable(var):
            self.tan[ins.result] = self.g.load(self.tan_var(var))

    def tan_STORE_VAR(self, ins):
        self.clone(ins)
        var = ins.attrs["var"]
        if _differentiable(var):
            self.g.store(self.tan_var(var), self.tangent_or_zero(ins.args[0]))

    def tan_CALL(self, ins):
        result = self.clone(ins)
        bi = ins.attrs["builtin"]
        if not _differentiable(ins.result) or not bi.differentiable or bi.grad is None:
            return
        tangents = [self.tangent(a) for a in ins.args]
        if all(t is None for t in tangents):
            return
        tangent = call_tangent(self.g, ins, [self.map[a] for a in ins.args], result, tangents)
        if tangent is not None:
            self.tan[ins.result] = tangent

    def _tan_access(self, ins, n_index):
        return self.tan[ins.args[0]], [self.map[i] for i in ins.args[1:1 + n_index]]

    def tan_LOAD(self, ins):
        self.clone(ins)
        if _differentiable(ins.result):
            arr, idx = self._tan_access(ins, len(ins.args) - 1)
            self.tan[ins.result] = self.g.emit(Op.LOAD, [arr, *idx], ins.result.type,
                                               f"tan_{ins.result.name}", nullable=True,
                                               site=ins.attrs["site"])

    def tan_STORE(self, ins):
        if self.writes(ins.args[0]):
            self.clone(ins)
        value = ins.args[-1]
        if _differentiable(value):
            arr, idx = self._tan_access(ins, len(ins.args) - 2)
            self.g.emit(Op.STORE, [arr, *idx, self.tangent_or_zero(value)], nullable=True,
                        site=ins.attrs["site"])

    def tan_ATOMIC(self, ins):
        value, kind, g = ins.args[-1], ins.attrs["kind"], self.g
        if not _differentiable(value):
            if self.writes(ins.args[0]):  # (an integer atomic whose result is used, a
                self.clone(ins)           # slot, is on an array in keep: inplace.py)
            return
        if kind == "cas":
            raise GradientError("atomic_cas on floats cannot be differentiated (whether it "
                                "wrote depends on the order threads run in)", ins.loc,
                                kernel=self.func.name)
        if kind in ("min", "max") and self.writes(ins.args[0]):
            check_launchable(self.func)
        if self.writes(ins.args[0]):
            self.clone(ins)
        arr, idx = self._tan_access(ins, ins.args[0].type.ndim)
        tan = self.tangent_or_zero(value)
        site = ins.attrs["site"]
        if kind in ("add", "sub", "exch"):
            g.emit(Op.ATOMIC, [arr, *idx, tan], tan.type, kind=kind, nullable=True, site=site)
            return
        # min/max after the forward ran: the element's tangent becomes that of the value
        # that won (component-wise on vectors), as the adjoint routes its gradient
        final = g.emit(Op.LOAD, [self.map[ins.args[0]], *idx], value.type, site=site)
        current = g.emit(Op.LOAD, [arr, *idx], value.type, nullable=True, site=site)
        new = g.add(current, g.route_eq(final, self.map[value], g.sub(tan, current)))
        g.emit(Op.STORE, [arr, *idx, new], nullable=True, site=site)

    def tan_IF(self, ins):
        self.clone(ins, [self.block(r) for r in ins.regions])

    def tan_FOR(self, ins):
        self.clone(ins, [self.block(ins.regions[0])])

    def tan_WHILE(self, ins):
        self.clone(ins, [self.block(r) for r in ins.regions])

    def tan_PUSH(self, ins):
        values = []
        for a in ins.args:  # every float value is followed by its tangent
            values.append(self.map[a])
            if _differentiable(a):
                values.append(self.tangent_or_zero(a))
        self.g.emit(Op.PUSH, values)

    def tan_POP(self, ins):
        if _differentiable(ins.result):
            self.tan[ins.result] = self.g.emit(Op.POP, (), ins.result.type,
                                               f"tan_{ins.result.name}")
        self.clone(ins)

    def tan_CUSTOM(self, ins):
        forward, grad_body = ins.regions
        if ins.attrs.get("replay") or not grad_body.instrs:
            # a replay func, or an adjoint's replay of a custom-gradient call (whose
            # gradient body runs in its reverse sweep): differentiate the forward body
            for sub in forward.instrs:
                self.instr(sub)
            return
        if ins.attrs.get("adj_arrays"):
            raise GradientError(f"custom gradient '{ins.attrs['func'].__name__}' takes an "
                                "array, which forward mode cannot differentiate through (its "
                                "gradient body writes kl.adjoint[array])", ins.loc,
                                kernel=self.func.name)
        self._primal(forward)
        for sub in forward.walk():
            if sub.op in (Op.STORE, Op.ATOMIC):
                raise GradientError(f"func '{ins.attrs['func'].__name__}' with a custom "
                                    "gradient writes an array, which forward mode cannot "
                                    "differentiate", sub.loc, kernel=self.func.name)
        g = self.g
        tangents = [self.tangent(a) for a in ins.args]
        for k, (out, adj_ret) in enumerate(zip(ins.attrs["outs"], ins.attrs["adj_rets"])):
            if not _differentiable(out):
                continue
            n = 1 if out.type.is_scalar else out.type.length
            parts = []
            for c in range(n):  # one VJP per component: the partials of that component
                for j, other in enumerate(ins.attrs["adj_rets"]):
                    seed = np.zeros(other.type.shape if not other.type.is_scalar else ())
                    if j == k:
                        seed.flat[c] = 1
                    g.store(other, g.const(seed[()] if seed.ndim == 0 else seed, other.type))
                self._primal(grad_body)
                part = None
                for var, tan in zip(ins.attrs["adj_args"], tangents):
                    if var is None or tan is None or not _differentiable(var):
                        continue
                    term = g.inner(g.load(var), tan)
                    part = term if part is None else g.add(part, term)
                parts.append(part if part is not None else g.zeros(out.type.scalar))
            if out.type.is_scalar:
                tangent = parts[0]
            else:
                parts = [g.cast(p, out.type.scalar) for p in parts]
                tangent = g.construct(*parts, target=out.type)
            g.store(self.tan_var(out), g.cast(tangent, out.type))

    def _primal(self, block: Block):
        """Emit a copy of block without tangents (a custom gradient's bodies)."""
        for ins in block.instrs:
            with self.g.located(ins.loc):
                regions = []
                for r in ins.regions:
                    new = Block()
                    with self.g.at(new):
                        self._primal(r)
                    if r.result is not None:
                        new.result = self.map[r.result]
                    regions.append(new)
                self.clone(ins, regions)


__all__ = ["tangent_mode", "call_tangent"]
