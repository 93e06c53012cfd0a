"""One thread of a kernel's adjoint or tangent kernel, run line by line on the reference
interpreter.

``trace_thread`` (mode "adjoint") runs the forward kernel on copies of the arrays (every
thread, so outputs hold their values as they would before a backward), then runs the
adjoint kernel (``kernel.adjoint_ir``: forward replay, then reverse sweep) for one thread
with gradient seeds, and records a Step each time execution moves to another user line,
section or loop iteration. A Step holds every local's value — the primal ones and the
``adj_*`` accumulators — after that line ran, and the thread's view of the adjoint arrays.

Mode "tangent" (forward mode) runs the kernel's tangent kernel (``kl.source(k, "ir",
tangent=True)``) for the thread instead: one sweep, in program order, each line computing
its values and, beside them, their tangents (the ``tan_*`` locals) from the input
tangents (the seeds); the arrays shown are the tangent arrays. It needs no forward launch
first: the tangent kernel computes the values itself.

Nothing the caller passed is modified: arrays are copied, seeds are copies.
"""
from __future__ import annotations

import linecache
import math
from dataclasses import dataclass

import numpy as np

from ..backends.interp import Interpreter, _OutOfBounds, zero
from ..ir.nodes import Op

MAX_STEPS = 5000        # a trace longer than this is cut (and says so)
MAX_ARRAY_SNAPSHOT = 256  # adjoint arrays up to this many elements are kept at every step


@dataclass(frozen=True)
class Loop:
    line: int            # the user's `for`/`while` line
    iteration: int       # 0-based; in the reverse sweep, the forward iteration being undone
    reverse: bool        # True for the reverse sweep's walk back over the iterations

    def __str__(self):
        arrow = " (reversed)" if self.reverse else ""
        return f"loop@{self.line} iteration {self.iteration}{arrow}"


@dataclass(frozen=True)
class Step:
    file: str
    line: int
    text: str            # the user's source line
    section: str         # "forward" (the replay) or "reverse" (the reverse sweep); in
                         # mode "tangent" always "tangent"
    phase: str           # "forward"; in the reverse sweep "replay" (recomputing primal
                         # values) or "adjoint" (the step wrote an adjoint); "tangent"
    loops: tuple         # enclosing loops, outermost first (Loop)
    values: dict         # local name -> value after this line: primal and adj_* (tan_*)
    arrays: dict         # adjoint (tangent) array name -> NumPy copy (None: too large)

    @property
    def iteration(self) -> tuple:
        return tuple(loop.iteration for loop in self.loops)

    def describe(self) -> str:
        where = f"line {self.line}, {self.section}"
        if self.phase == "replay":
            where += " (replay)"
        return where + "".join(f", {loop}" for loop in self.loops)


@dataclass
class Trace:
    kernel: str
    tid: tuple
    steps: list
    truncated: bool
    primal_vars: list    # names of the kernel's own locals (the forward IR's Vars)
    seeds: dict          # adjoint (tangent) parameter name -> the seed it started from
    mode: str = "adjoint"  # or "tangent" (forward mode)

    @property
    def prefix(self) -> str:
        """How the companion of a local or array is named: ``adj_v`` or ``tan_v``."""
        return "tan_" if self.mode == "tangent" else "adj_"


class _Cut(Exception):
    pass


class Tracer(Interpreter):
    """The reference interpreter, one thread, recording a Step per user-line change."""

    def __init__(self, func, max_steps: int = MAX_STEPS, primal_vars=(), prefix: str = "adj_"):
        super().__init__(func)
        primal = set(primal_vars)
        self.prefix = prefix
        self.tangent = prefix == "tan_"
        self.adjoint_vars = {v for v in func.vars
                             if v not in primal and v.name.startswith(prefix)}
        self.adjoint_params = {p.value for p in func.params if p.name.startswith(prefix)}
        self.wrote_adjoint = False
        self.max_steps = max_steps
        self.steps: list[Step] = []
        self.key = None
        self.loops: list = []
        self.section = "forward"
        self.names = _display_names(func.vars)
        self.adj_arrays: dict = {}

    def run(self, dims: tuple, args: list, flat: int) -> bool:
        """Run thread ``flat``; True when the trace was cut at max_steps."""
        func = self.func
        self.failure = None
        self.flat, self.coords = flat, np.unravel_index(flat, dims)
        self.stack = []
        self.vars = {v: zero(v.type) for v in func.vars}
        env = {p.value: a for p, a in zip(func.params, args)}
        self.adj_arrays = {p.name: a for p, a in zip(func.params, args)
                           if p.type.is_array and p.name.startswith(self.prefix)
                           and a is not None}
        cut = False
        reverse_start = len(func.body.instrs) if func.reverse_start is None \
            else func.reverse_start
        with np.errstate(all="ignore"):
            try:
                for k, ins in enumerate(func.body.instrs):
                    self.section = "tangent" if self.tangent else \
                        "forward" if k < reverse_start else "reverse"
                    self.execute(ins, env)
                self.flush()
            except _Cut:
                cut = True
            except _OutOfBounds:  # the thread stops at its first out-of-bounds access
                pass
        if self.failure is not None:
            raise self.failure
        return cut

    def block(self, block, env):
        for ins in block.instrs:
            self.execute(ins, env)

    def execute(self, ins, env):
        key = (ins.loc.file, ins.loc.line, self.section,
               tuple(Loop(*entry) for entry in self.loops))
        if key != self.key:
            self.flush()
            self.key = key
        getattr(self, "op_" + ins.op.name)(ins, env)

    def flush(self):
        if self.key is None:
            return
        if len(self.steps) >= self.max_steps:
            raise _Cut
        file, line, section, loops = self.key
        values = {self.names[v]: _py(val) for v, val in self.vars.items()}
        arrays = {name: (a.copy() if a.size <= MAX_ARRAY_SNAPSHOT else None)
                  for name, a in self.adj_arrays.items()}
        text = linecache.getline(file, line).rstrip("\n")
        phase = section if section in ("forward", "tangent") else \
            "adjoint" if self.wrote_adjoint else "replay"
        self.steps.append(Step(file, line, text, section, phase, loops, values, arrays))
        self.key = None
        self.wrote_adjoint = False

    # Writes of adjoints mark a reverse-sweep step as "adjoint" rather than "replay".

    def op_STORE_VAR(self, ins, env):
        if ins.attrs["var"] in self.adjoint_vars:
            self.wrote_adjoint = True
        super().op_STORE_VAR(ins, env)

    def op_STORE(self, ins, env):
        if ins.args[0] in self.adjoint_params:
            self.wrote_adjoint = True
        super().op_STORE(ins, env)

    def op_ATOMIC(self, ins, env):
        if ins.args[0] in self.adjoint_params:
            self.wrote_adjoint = True
        super().op_ATOMIC(ins, env)

    # Loops are run as in Interpreter, counting iterations for the trace.

    def op_FOR(self, ins, env):
        i, stop, step = (int(env[a]) for a in ins.args)
        var, body = ins.attrs["var"], ins.regions[0]
        # The reverse sweep walks a loop's iterations back with a counter named rev_iter
        # over range(0, trips): iteration k of it undoes forward iteration trips - 1 - k.
        reverse = var.name == "rev_iter" and self.section == "reverse"
        entry = [ins.loc.line, 0, reverse]
        self.loops.append(entry)
        try:
            k, t = 0, var.type.np.type
            while (step > 0 and i < stop) or (step < 0 and i > stop):
                entry[1] = stop - 1 - k if reverse else k
                self.vars[var] = t(i)
                self.block(body, env)
                self.flush()  # the iteration's last line, before the counter moves on
                i += step
                k += 1
        finally:
            self.loops.pop()

    def op_WHILE(self, ins, env):
        cond, body = ins.regions
        entry = [ins.loc.line, 0, False]
        self.loops.append(entry)
        try:
            while True:
                self.block(cond, env)
                if not env[cond.result]:
                    break
                self.block(body, env)
                self.flush()
                entry[1] += 1
        finally:
            self.loops.pop()


def _display_names(variables) -> dict:
    """Var -> a unique display name (two inlined funcs may both have a local ``x``)."""
    out, seen = {}, {}
    for v in variables:
        n = seen.get(v.name, 0)
        seen[v.name] = n + 1
        out[v] = v.name if n == 0 else f"{v.name}#{n + 1}"
    return out


def _py(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


# ---- preparing a run -----------------------------------------------------------------------

def trace_thread(kernel, dim, inputs, tid=0, seeds=None, max_steps: int = MAX_STEPS,
                 mode: str = "adjoint") -> Trace:
    """Trace thread ``tid`` of ``kernel`` launched over ``dim`` with ``inputs`` (every
    parameter, in order), through its adjoint (``mode="adjoint"``) or its tangent kernel
    (``mode="tangent"``, forward mode).

    ``seeds`` maps a parameter name (``y``, or ``adj_y`` / ``tan_y``) to the starting value
    of its adjoint, or its tangent. By default, for the adjoint, arrays the kernel writes are
    seeded with ones and everything else with zeros; for the tangent, float arrays the
    kernel reads are seeded with ones (the direction "every input element moves at once")
    and everything else, numbers included, with zeros."""
    import kernlab as kl

    if mode not in ("adjoint", "tangent"):
        raise ValueError(f"mode must be 'adjoint' or 'tangent', not {mode!r}")
    prefix = "tan_" if mode == "tangent" else "adj_"
    dims = (int(dim),) if np.ndim(dim) == 0 else tuple(int(d) for d in dim)
    params = kernel.ir.params
    if len(inputs) != len(params):
        raise ValueError(f"kernel '{kernel.key}' takes {len(params)} argument(s) "
                         f"({', '.join(p.name for p in params)}), got {len(inputs)}")
    flat = _flat_tid(tid, dims)
    copies = [_copy_arg(p, v) for p, v in zip(params, inputs)]
    if mode == "adjoint":  # the adjoint reads what the forward launch left
        kl.launch(kernel, dims, inputs=copies, record_tape=False, device="cpu")
        func = kernel.adjoint_ir
        default_ones = _written(kernel.ir)
    else:  # the tangent kernel computes the values itself, from the inputs as given
        func = kernel.tangent_variant()
        default_ones = _read(kernel.ir)
    seeds = {(k if k.startswith(prefix) else f"{prefix}{k}"): v
             for k, v in (seeds or {}).items()}
    unknown = set(seeds) - {f"{prefix}{p.name}" for p in params}
    if unknown:
        raise ValueError(f"seeds name no parameter of '{kernel.key}': {sorted(unknown)}")
    if mode == "tangent":
        for p in params:
            if not _is_float(p.type) and seeds.get(f"tan_{p.name}") is not None:
                raise ValueError(f"'{p.name}' of '{kernel.key}' is not a float ({p.type}), "
                                 "so it has no tangent to seed")
    adj = [_seed(p, c, seeds.get(f"{prefix}{p.name}"),
                 p.value in default_ones and (mode == "adjoint" or _is_float(p.type)))
           for p, c in zip(params, copies)]
    args = [c.numpy() if p.type.is_array else _scalar(p, c) for p, c in zip(params, copies)]
    start_seeds = {f"{prefix}{p.name}": (np.copy(a) if a is not None else None)
                   for p, a in zip(params, adj)}
    tracer = Tracer(func, max_steps, primal_vars=kernel.ir.vars, prefix=prefix)
    cut = tracer.run(dims, args + adj, flat)
    primal = [tracer.names[v] for v in kernel.ir.vars]
    return Trace(kernel.key, tuple(int(c) for c in np.unravel_index(flat, dims)),
                 tracer.steps, cut, primal, start_seeds, mode)


def _flat_tid(tid, dims) -> int:
    coords = (int(tid),) if np.ndim(tid) == 0 else tuple(int(t) for t in tid)
    if len(coords) == 1 and len(dims) > 1:
        flat = coords[0]
        if not 0 <= flat < math.prod(dims):
            raise ValueError(f"tid {tid} is outside the launch of {math.prod(dims)} threads")
        return flat
    if len(coords) != len(dims) or any(not 0 <= c < d for c, d in zip(coords, dims)):
        raise ValueError(f"tid {tid} is outside the launch dim {dims}")
    return int(np.ravel_multi_index(coords, dims))


def _copy_arg(param, value):
    import kernlab as kl

    if not param.type.is_array:
        return value
    data = value.numpy() if isinstance(value, kl.array) else np.asarray(value)
    return kl.array(np.array(data, copy=True), dtype=param.type.dtype)


def _scalar(param, value):
    t = param.type
    if t.is_scalar:
        return t.np.type(value)
    return np.asarray(value, t.scalar.np).reshape(t.shape)


def _seed(param, copy, seed, written: bool):
    t = param.type
    if t.is_array:
        shape = copy.numpy().shape
        if seed is None:
            return np.full(shape, 1.0 if written else 0.0, t.dtype.scalar.np)
        data = seed.numpy() if hasattr(seed, "numpy") else seed
        return np.array(np.broadcast_to(np.asarray(data, t.dtype.scalar.np), shape))
    if seed is None:
        return zero(t)
    return _scalar(param, seed)


def _written(func) -> set:
    return {ins.args[0] for ins in func.body.walk() if ins.op in (Op.STORE, Op.ATOMIC)}


def _is_float(t) -> bool:
    """Whether a parameter of type ``t`` has a tangent: a float number, vector or matrix,
    or an array of them."""
    return (t.dtype if t.is_array else t).is_float


def _read(func) -> set:
    return {ins.args[0] for ins in func.body.walk() if ins.op is Op.LOAD}
