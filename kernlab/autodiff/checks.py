"""What reverse mode needs to know about a kernel before it starts.

* ``check_differentiable``: refuse, with the user's line, what would give a silently wrong
  gradient — an array element overwritten after it was read in the same kernel (the replay
  would read the new value), and the value returned by an atomic used in the computation.
* ``own_element_arrays``: arrays every access of which is indexed exactly by the thread id,
  so no other thread touches the same element and gradients accumulate with a plain add.
"""
from __future__ import annotations

from ..errors import GradientError
from ..ir.nodes import Block, Function, Op

WRITES = (Op.STORE, Op.ATOMIC)


def check_differentiable(func: Function):
    used = {a for ins in func.body.walk() for a in ins.args}
    used |= {r.result for ins in func.body.walk() for r in ins.regions if r.result is not None}
    replaced = {id(i) for ins in func.body.walk() if ins.op is Op.CUSTOM
                and ins.attrs.get("replay") for i in ins.regions[0].walk()}
    for ins in func.body.walk():
        if ins.op is Op.ATOMIC and ins.result in used and id(ins) not in replaced:
            raise GradientError(f"the value returned by atomic_{ins.attrs['kind']} cannot be "
                                "differentiated (it depends on the order threads run in)",
                                ins.loc, kernel=func.name)
    _check_overwrites(func, func.body, seen_loads=set(), loop_loads=None)


def _check_overwrites(func, block: Block, seen_loads: set, loop_loads):
    """Walk in program order; a write to an array already read is an overwrite after read.
    Inside a loop, a read anywhere in the loop counts as earlier (a later iteration)."""
    for ins in block.instrs:
        if ins.op is Op.LOAD:
            seen_loads.add(ins.args[0])
        elif ins.op in WRITES and (ins.args[0] in seen_loads
                                   or (loop_loads is not None and ins.args[0] in loop_loads)):
            raise GradientError(
                f"array '{ins.args[0].name}' is written here after being read in the same "
                "kernel; its gradient cannot be computed correctly (the adjoint would see "
                "the new value). Write the result into a separate array.",
                ins.loc, kernel=func.name)
        if ins.op in (Op.FOR, Op.WHILE):
            body_loads = {i.args[0] for r in ins.regions for i in r.walk() if i.op is Op.LOAD}
            inner = body_loads | (loop_loads or set())
            for r in ins.regions:
                _check_overwrites(func, r, seen_loads, inner)
        else:
            for r in ins.regions:
                _check_overwrites(func, r, seen_loads, loop_loads)


def own_element_arrays(func: Function) -> set:
    """Array params whose every load, store and atomic is indexed by (tid 0, tid 1, ...)."""
    tid_vars = _tid_vars(func)
    ok, bad = set(), set()
    defs = {ins.result: ins for ins in func.body.walk() if ins.result is not None}
    for ins in func.body.walk():
        if ins.op not in (Op.LOAD, Op.STORE, Op.ATOMIC):
            continue
        arr = ins.args[0]
        n = arr.type.ndim
        idx = ins.args[1:1 + n]
        if _is_tid_index(idx, defs, tid_vars, func.ndim):
            ok.add(arr)
        else:
            bad.add(arr)
    return ok - bad


def _tid_vars(func: Function) -> dict:
    """Vars assigned exactly once in the whole kernel, at top level, from a tid: var -> dim."""
    stores: dict = {}
    for ins in func.body.walk():
        if ins.op is Op.STORE_VAR:
            stores.setdefault(ins.attrs["var"], []).append(ins)
        if ins.op is Op.FOR:
            stores.setdefault(ins.attrs["var"], []).append(ins)
    top = set(map(id, func.body.instrs))
    defs = {ins.result: ins for ins in func.body.instrs if ins.result is not None}
    out = {}
    for var, writes in stores.items():
        if len(writes) == 1 and id(writes[0]) in top and writes[0].op is Op.STORE_VAR:
            src = defs.get(writes[0].args[0])
            if src is not None and src.op is Op.TID:
                out[var] = src.attrs["dim"]
    return out


def _is_tid_index(idx, defs, tid_vars, ndim) -> bool:
    if len(idx) != ndim:
        return False
    for d, v in enumerate(idx):
        ins = defs.get(v)
        if ins is None:
            return False
        if ins.op is Op.TID and ins.attrs["dim"] == d:
            continue
        if ins.op is Op.LOAD_VAR and tid_vars.get(ins.attrs["var"]) == d:
            continue
        return False
    return True
