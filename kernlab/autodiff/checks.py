"""What reverse mode needs to know about a kernel before it starts.

* ``check_differentiable``: refuse, with the user's line, what would give a silently wrong
  gradient — an array element overwritten after it was read in the same kernel when an
  adjoint needs the value read (the replay would read the new value; linear updates such as
  ``y[i] += v`` or a vector component write are fine), and the value returned by an atomic
  used in the computation.
(Which arrays each thread owns an element of is autodiff/ownership.py's question.)
"""
from __future__ import annotations

from bisect import bisect_right

from ..errors import GradientError
from ..ir.nodes import Block, Function, Op

WRITES = (Op.STORE, Op.ATOMIC)


def check_differentiable(func: Function):
    # one walk gathers the values used, the instructions a replay replaces and the
    # instructions whose result must not be used (checked below, in program order)
    used: set = set()
    replaced: set = set()
    suspects = []
    loaded, written = set(), set()  # arrays
    atomic, call, custom, load = Op.ATOMIC, Op.CALL, Op.CUSTOM, Op.LOAD
    for ins in func.body.walk():
        if ins.args:
            used.update(ins.args)
        op = ins.op
        if op is load:
            loaded.add(ins.args[0])
        elif op in WRITES:
            written.add(ins.args[0])
        if ins.regions:
            used.update(r.result for r in ins.regions if r.result is not None)
            if op is custom and ins.attrs.get("replay"):
                replaced.update(id(i) for i in ins.regions[0].walk())
        if op is atomic or op is call and ins.result is not None \
                and ins.attrs["builtin"].effects:
            suspects.append(ins)
    for ins in suspects:
        if ins.op is Op.ATOMIC and ins.result in used and id(ins) not in replaced:
            raise GradientError(f"the value returned by atomic_{ins.attrs['kind']} cannot be "
                                "differentiated (it depends on the order threads run in)",
                                ins.loc, kernel=func.name)
        if ins.op is Op.CALL and ins.attrs["builtin"].effects and ins.result is not None \
                and ins.result in used and id(ins) not in replaced:  # tile_atomic_add
            raise GradientError(f"the tile returned by {ins.attrs['builtin'].name} cannot be "
                                "differentiated (the values before the add depend on the "
                                "order blocks run in, and an adjoint cannot replay them)",
                                ins.loc, kernel=func.name)
    if not loaded & written:  # no array is read and written: no load can be stale
        return
    stale, flagged = _stale_loads(func)
    if stale:
        _check_stale_uses(func, stale, flagged)


def _program_order(block: Block, loops: tuple, order: list) -> None:
    """Append (instruction, ids of the loops around it) for each instruction of ``block``,
    nested ones included, in program order. (A module function: a nested one that names
    itself is a reference cycle, which kept ``order`` for the cyclic collector to walk.)"""
    for ins in block.instrs:
        order.append((ins, loops))
        if ins.regions:
            inner = loops + (id(ins),) if ins.op in (Op.FOR, Op.WHILE) else loops
            for r in ins.regions:
                _program_order(r, inner, order)


def _stale_loads(func: Function):
    """Loads whose element may be overwritten later in the same kernel: a write to the array
    follows in program order, or shares an enclosing loop with the load (a later iteration).
    Returns (those loads, array -> the first such write)."""
    order: list = []
    _program_order(func.body, (), order)
    # per array: the positions of its writes (in order), and for each loop the first write
    # inside it, so each load finds its first later or loop-sharing write without a scan
    writes: dict = {}
    for pos, (ins, loops) in enumerate(order):
        if ins.op in WRITES:
            positions, in_loop, found = writes.setdefault(ins.args[0], ([], {}, {}))
            positions.append(pos)
            found[pos] = ins
            for loop in loops:
                in_loop.setdefault(loop, pos)
    stale, flagged = set(), {}
    for pos, (ins, loops) in enumerate(order):
        if ins.op is not Op.LOAD or ins.attrs.get("snapshot"):
            continue  # a snapshot load reads the values before the launch (inplace.py)
        entry = writes.get(ins.args[0])
        if entry is None:
            continue
        positions, in_loop, found = entry
        k = bisect_right(positions, pos)
        first = positions[k] if k < len(positions) else None  # the first write after it
        for loop in loops:  # or an earlier one in a loop around both
            w = in_loop.get(loop)
            if w is not None and (first is None or w < first):
                first = w
        if first is not None:
            stale.add(ins)
            flagged.setdefault(ins.args[0], found[first])
    return stale, flagged


def _check_stale_uses(func: Function, stale: set, flagged: dict):
    """A load of an array the kernel overwrites later reads, in the adjoint's replay, the
    new value. That is harmless when the loaded value only flows, linearly, into stores,
    atomic adds and sums (``y[i] = y[i] + v``, ``y[i][0] = v`` on a vector element, ``a[i]
    *= 2.0``): no adjoint needs the value itself. Any other use (a nonlinear builtin, a
    branch condition, an index, a loop bound, a custom-gradient call) would give a silently
    wrong gradient: refused, at the overwriting store. (Under a kl.Tape, arrays whose every
    access is the thread's own element are handled before this check by keeping their values
    before the launch: autodiff/inplace.py.)"""
    walk = list(func.body.walk())
    defs = {i.result: i for i in walk if i.result is not None}
    fixed = fixed_vars(func)
    for arr, first_write in flagged.items():
        seeds = {i.result for i in stale if i.args[0] is arr}
        ins = first_needing_use(walk, defs, taint(walk, seeds), fixed)
        if ins is None:
            continue
        from .inplace import why_not_snapshot
        raise GradientError(
            f"array '{arr.name}' is written here after being read in the same kernel, and "
            f"the value read is used at line {ins.loc.line if ins.loc else '?'} in a way "
            "whose gradient needs it; its gradient cannot be computed correctly (the adjoint "
            f"would see the new value). {why_not_snapshot(func, arr)} Write the result into "
            "a separate array.", first_write.loc, kernel=func.name)


def taint(walk: list, seeds: set) -> set:
    """The values computed from ``seeds`` (through builtins and, around loops, locals)."""
    tainted = set(seeds)
    tvars: set = set()
    changed = bool(tainted)
    store_var, load_var = Op.STORE_VAR, Op.LOAD_VAR
    while changed:  # to a fixpoint: values flow around loops through locals
        changed = False
        for ins in walk:
            if ins.op is store_var:
                if ins.args[0] in tainted and ins.attrs["var"] not in tvars:
                    tvars.add(ins.attrs["var"])
                    changed = True
                continue
            result = ins.result
            if result is None or result in tainted:
                continue
            if ins.op is load_var:
                hit = ins.attrs["var"] in tvars
            else:
                hit = False
                for a in ins.args:
                    if a in tainted:
                        hit = True
                        break
            if hit:
                tainted.add(result)
                changed = True
    return tainted


def first_needing_use(walk: list, defs: dict, tainted: set, fixed: set = frozenset()):
    """The first instruction whose adjoint (or whose replay) needs a tainted value itself,
    or None when the tainted values only flow linearly into stores, sums and scalings."""
    if not tainted:
        return None
    for ins in walk:
        bad = [k for k, a in enumerate(ins.args) if a in tainted]
        results = [r.result for r in ins.regions if r.result is not None]
        if not bad and not any(r in tainted for r in results):
            continue
        if _stale_use_ok(ins, bad, defs, fixed) and not any(r in tainted for r in results):
            continue
        return ins
    return None


def fixed_vars(func: Function) -> set:
    """Locals assigned exactly once, at top level, from a scalar kernel parameter (``dt``):
    constants to every thread. A scalar parameter's adjoint is never returned (it is passed
    by value), so scaling by one is linear for every gradient anyone can read."""
    stores: dict = {}
    for ins in func.body.walk():
        if ins.op in (Op.STORE_VAR, Op.FOR):
            stores.setdefault(ins.attrs["var"], []).append(ins)
    top = set(map(id, func.body.instrs))
    scalars = {p.value for p in func.params if not p.type.is_array}
    return {var for var, w in stores.items() if len(w) == 1 and id(w[0]) in top
            and w[0].op is Op.STORE_VAR and w[0].args[0] in scalars}


def _constant(value, defs, fixed) -> bool:
    ins = defs.get(value)
    return ins is not None and (ins.op is Op.CONST or (
        ins.op is Op.LOAD_VAR and ins.attrs["var"] in fixed))


def _stale_use_ok(ins, bad, defs, fixed=frozenset()) -> bool:
    n = len(ins.args)
    if ins.op in (Op.STORE_VAR, Op.PRINT):
        return True
    if ins.op is Op.STORE:
        return bad == [n - 1]
    if ins.op is Op.ATOMIC:
        return bad == [n - 1] and ins.attrs["kind"] in ("add", "sub")
    if ins.op is not Op.CALL:
        return False
    bi = ins.attrs["builtin"]  # its record says which operands no adjoint reads
    linear = range(n) if bi.linear_in == "all" else {k % n for k in bi.linear_in}
    if all(k in linear for k in bad):
        return True
    scales = {k % n for k in bi.scales}  # x * 2.0, x / 4.0, x * dt: linear when the rest
    return len(bad) == 1 and bad[0] in scales and all(  # is constant to the thread
        _constant(a, defs, fixed) for k, a in enumerate(ins.args) if k != bad[0])
