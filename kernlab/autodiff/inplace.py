"""In-place updates under a tape: which arrays the adjoint needs, and keeping what it needs.

A kernel that reads an element and then overwrites it (``x[i] = x[i] * x[i]``,
``x[i] = sin(x[i]) + v[i]``) has an adjoint whose replay must see the value read, which the
launch destroyed. ``plan(func)`` decides, statically, per array parameter:

* ``snapshot``: arrays read and then overwritten where the value read is needed by an adjoint
  (a nonlinear use, a branch, an index) and every access — load, store, atomic add/sub — is
  the thread's own element (``x[i]`` with ``i = kl.tid()``), so no other thread reads or writes
  it. A ``kl.Tape`` copies these arrays before the launch and passes the copy, the values
  before the launch, in the array's place when it runs the adjoint. The adjoint is built from
  ``localize(func)``: the thread's element is loaded once, on entry (from the copy), into a
  local, and every load of the element reads that local, every store and atomic add also
  updates it — so a read after a store sees the stored value, as in the forward. Each store
  still consumes the element's gradient and the entry load adds the local's adjoint back:
  on return ``x.grad`` holds the gradient with respect to the values before the launch.
* ``needs``: other arrays whose values, as the launch left them, the adjoint reads in a way
  that matters (a nonlinear use, a branch, an index). The tape watches these: if a later
  launch overwrites one before backward, the tape copies it first (copy on write), so the
  adjoint still sees what this launch saw. Arrays read only linearly (``x[i] + v[i] * dt``)
  need nothing: their adjoint never reads the value.

Arrays whose overwritten elements cannot be handled this way (an index that is not the
thread's own element, ``atomic_min``/``max``/``exch`` on the array, an access inside a custom
gradient) keep the GradientError of checks.py, which says why (``why_not_snapshot``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.builder import Builder
from ..ir.nodes import Block, Function, Instr, Op
from ..types import int32
from .checks import _stale_loads, first_needing_use, fixed_vars, taint
from .ownership import owned_arrays


@dataclass(frozen=True)
class InplacePlan:
    snapshot: tuple   # indices of array params the tape copies before the launch
    needs: tuple      # indices of other array params whose post-launch values the adjoint reads


def plan(func: Function) -> InplacePlan:
    """The plan for ``func`` (a kernel's forward IR), computed once."""
    cached = getattr(func, "_inplace_plan", None)
    if cached is None:
        cached = func._inplace_plan = _make_plan(func)
    return cached


def _make_plan(func: Function) -> InplacePlan:
    walk = list(func.body.walk())
    defs = {i.result: i for i in walk if i.result is not None}
    fixed = fixed_vars(func)
    stale, _ = _stale_loads(func)
    custom = _in_custom_regions(func)
    snapshot, needs = [], []
    for k, p in enumerate(func.params):
        if not p.type.is_array:
            continue
        arr = p.value
        loads = [i for i in walk if i.op is Op.LOAD and i.args[0] is arr]
        seeds = {i.result for i in loads if i in stale}
        if first_needing_use(walk, defs, taint(walk, seeds), fixed) is not None \
                and _snapshot_blocker(func, arr, walk, custom) is None:
            snapshot.append(k)
        elif arr in custom or first_needing_use(
                walk, defs, taint(walk, {i.result for i in loads}), fixed) is not None:
            needs.append(k)
    return InplacePlan(tuple(snapshot), tuple(needs))


def tangent_plan(func: Function) -> tuple:
    """For the tangents-only kernel of ``func`` (autodiff/forward.py, effects=False), which
    leaves the kernel's arrays as they were: the array params it reads that it also writes,
    as (localized, kept). Localized: each thread's own element, read and written by stores
    and atomic add/sub — ``localize`` turns it into a per-thread local, so a read after a
    store sees the stored value with no store. Kept: the others (another thread's element,
    atomic_min/max/exch, an integer atomic whose returned value is used, e.g. a slot
    counter): the tangent kernel keeps their writes, on a copy the runtime makes."""
    walk = list(func.body.walk())
    used = {a for i in walk for a in i.args}
    custom = _in_custom_regions(func)
    loaded = {i.args[0] for i in walk if i.op is Op.LOAD}
    counted = {i.args[0] for i in walk if i.op is Op.ATOMIC and i.result in used}
    written = {i.args[0] for i in walk if i.op in (Op.STORE, Op.ATOMIC)}
    local, kept = [], []
    for k, p in enumerate(func.params):
        arr = p.value
        if not p.type.is_array or arr not in written or arr not in loaded | counted:
            continue
        if arr not in counted and _snapshot_blocker(func, arr, walk, custom) is None:
            local.append(k)
        else:
            kept.append(k)
    return tuple(local), tuple(kept)


def _in_custom_regions(func: Function) -> set:
    """Arrays accessed inside a custom gradient's regions (its body reads them directly)."""
    out = set()
    for ins in func.body.walk():
        if ins.op is Op.CUSTOM:
            for r in ins.regions:
                out.update(s.args[0] for s in r.walk()
                           if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC))
    return out


def _snapshot_blocker(func: Function, arr, walk, custom) -> str | None:
    """Why a copy before the launch cannot make this array's adjoint exact, or None."""
    if arr in custom:
        return ("A kl.Tape cannot keep the values before the launch for an array a custom "
                "gradient accesses.")
    own = owned_arrays(func, exact=True)
    if not any(func.params[k].value is arr for k in own):
        return ("A kl.Tape keeps the values before the launch only for arrays whose every "
                "access is the thread's own element (x[i] with i = kl.tid()); an access of "
                "this one may be another thread's element.")
    kinds = {i.attrs["kind"] for i in walk if i.op is Op.ATOMIC and i.args[0] is arr}
    if kinds - {"add", "sub"}:
        return (f"A kl.Tape keeps the values before the launch only for arrays updated by "
                f"stores and atomic add/sub; this one takes atomic_{sorted(kinds)[0]}.")
    return None


def why_not_snapshot(func: Function, arr) -> str:
    """The sentence checks.py adds to its refusal: why the tape's copy does not apply."""
    walk = list(func.body.walk())
    return _snapshot_blocker(func, arr, walk, _in_custom_regions(func)) or (
        "Its adjoint needs the values before the launch, which a kl.Tape keeps.")


def localize(func: Function, indices=None) -> Function:
    """``func`` with each array in ``indices`` (default: the plan's snapshot) accessed
    through a per-thread local loaded once on entry (see the module docstring). The loads
    of the entry carry ``snapshot=True``. Returns func itself when there is nothing to do."""
    indices = plan(func).snapshot if indices is None else tuple(indices)
    if not indices:
        return func
    out = Function(func.name, func.params, Block(), func.loc, vars=list(func.vars),
                   sites=func.sites, ndim=func.ndim)
    g = Builder(out, func.loc)
    walk = list(func.body.walk())
    local = {}
    for k in indices:
        arr = func.params[k].value
        first = next(i for i in walk if i.op in (Op.LOAD, Op.STORE, Op.ATOMIC)
                     and i.args[0] is arr)
        var = g.new_var(arr.type.dtype, f"{func.params[k].name}_elem")
        local[arr] = var
        with g.located(first.loc):
            _entry_load(g, arr, var, first.attrs.get("site"), func.ndim)
    out.body.instrs.extend(_rewrite(g, func.body, local).instrs)
    return out


def _entry_load(g: Builder, arr, var, site, ndim: int):
    """var = arr[tid] where the thread's element exists (the kernel may guard its access
    with ``if i < n``), zero elsewhere."""
    g.store(var, g.zeros(var.type))
    tids = [g.emit(Op.TID, (), int32, "i", dim=d) for d in range(ndim)]
    block = g.block
    for d, t in enumerate(tids):
        inside = g.lt(t, g.emit(Op.SHAPE, [arr], int32, dim=d))
        then = Block()
        g.emit(Op.IF, [inside], regions=[then, Block()])
        g._blocks.append(then)
    value = g.emit(Op.LOAD, [arr, *tids], var.type, site=site, snapshot=True)
    g.store(var, value)
    while g.block is not block:
        g._blocks.pop()


def _rewrite(g: Builder, block: Block, local: dict) -> Block:
    new = Block(result=block.result)
    with g.at(new):
        for ins in block.instrs:
            regions = [_rewrite(g, r, local) for r in ins.regions]
            var = local.get(ins.args[0]) if ins.op in (Op.LOAD, Op.STORE, Op.ATOMIC) \
                else None
            if var is not None and ins.op is Op.LOAD:  # the element, as this thread has it
                new.instrs.append(Instr(Op.LOAD_VAR, [], ins.result, ins.loc, {"var": var}))
                continue
            new.instrs.append(Instr(ins.op, list(ins.args), ins.result, ins.loc,
                                    dict(ins.attrs), regions))
            if var is None:
                continue
            with g.located(ins.loc):
                value = ins.args[-1]
                if ins.op is Op.ATOMIC:  # add or sub (plan() refuses the other kinds)
                    old = g.load(var)
                    value = g.add(old, value) if ins.attrs["kind"] == "add" \
                        else g.sub(old, value)
                g.store(var, value)
    return new



def mark_overwritten(func: Function, key: str, args) -> None:
    """After a forward launch of ``func``: remember, on each array it overwrote after reading,
    that it now holds this launch's results (until its next write)."""
    for k in plan(func).snapshot:
        if args[k] is not None:
            args[k]._overwritten_by = (key, args[k]._version)


def refuse_manual_adjoint(func: Function, key: str, args) -> None:
    """A GradientError for an adjoint launch by hand (``kl.launch(..., adjoint=True)``) of a
    kernel that overwrites what it read nonlinearly, when an array it is given still holds
    what the forward launch left there: the adjoint needs the values from before the launch
    and would silently compute the gradient at the new ones (Warp's silent error). Given
    the values before the launch (a clone taken earlier), it runs. A kl.Tape keeps them and
    runs this adjoint itself."""
    from ..errors import GradientError
    for k in plan(func).snapshot:
        a = args[k]
        if a is None or getattr(a, "_overwritten_by", None) != (key, a._version):
            continue
        store = next(i for i in func.body.walk()
                     if i.op in (Op.STORE, Op.ATOMIC) and i.args[0] is func.params[k].value)
        raise GradientError(
            f"array '{func.params[k].name}' is written here after being read, and the array "
            "passed to this adjoint launch holds what the forward launch wrote, not the "
            "values before it, which the adjoint needs: it would compute the gradient at "
            "the new values. Record the forward launch on a kl.Tape (it keeps a copy and "
            "runs this adjoint itself), or pass a clone taken before the forward launch.",
            store.loc, kernel=key)
