"""Which arrays each thread owns an element of: one analysis, two users.

* Reverse mode adds a load's adjoint into the gradient array. When other threads may add
  into the same element, that add must be atomic; when the analysis here proves that no
  other thread touches the element, a plain load-add-store is exact, and LLVM vectorises
  it (``owned_arrays(func)``: any injective index).
* In-place updates (autodiff/inplace.py) replace a thread's element by a per-thread local
  loaded once on entry, at ``arr[tid 0, tid 1, ...]`` guarded by the array's shape; they ask
  for the arrays owned at exactly that index (``owned_arrays(func, exact=True)``).

``owned_arrays(func)`` proves it for an array parameter when every access to the array (load,
store, atomic) uses one and the same index, and that index is an injective function of the
thread id: thread t touches only element f(t), and f(t) != f(t') for t != t'. Index
components are recognised as

* *injective* in launch dim d: ``tid d``, a widening or same-width integer cast of one, and
  ``inj + u``, ``u + inj``, ``inj - u``, ``u - inj``, ``-inj`` with ``u`` uniform (integers
  wrap, so these are bijections of the integers of their width);
* *uniform*: the same in every thread and throughout the launch: constants, scalar
  parameters, array shapes, and integer arithmetic on them.

A local counts through its loads when it is assigned exactly once, at the top level of the
kernel, and the load comes after that assignment (``i = wp.tid()``, ``j = n - 1 - i``).
A tuple index is injective when each launch dim the kernel reads has a component injective
in it. Arrays whose adjoint a custom gradient writes (``kl.adjoint[x]``) are never owned:
the user's code may write any element.

The proof is per array; two array arguments that share memory (views of one array, whose
gradients are views of one gradient) break it, which the runtime checks at each adjoint
launch (runtime/launch.py), falling back to the all-atomic adjoint.
"""
from __future__ import annotations

from ..ir.nodes import Function, Op

_ARITHMETIC = frozenset("add sub mul neg div floordiv mod abs min max cast bit_and bit_or "
                        "bit_xor lshift rshift invert".split())


def owned_arrays(func: Function, exact: bool = False) -> dict:
    """Array parameter index -> a canonical string of the one index every access uses,
    for the arrays whose elements each belong to one thread; with exact=True only those
    whose index is the thread id itself, ``[tid0, tid1, ...]`` over every launch dimension
    (computed once per function, like the plain analysis)."""
    cache = func.__dict__.setdefault("_owned", {})
    if exact not in cache:
        owned = cache[False] if False in cache else _owned(func)
        cache[False] = owned
        identity = "[" + ", ".join(f"tid{d}" for d in range(func.ndim)) + "]"
        cache[True] = {k: key for k, key in owned.items() if key == identity}
    return cache[exact]


def _owned(func: Function) -> dict:
    a = _Analysis(func)
    accesses: dict = {}
    banned = set()
    access, custom, shape = (Op.LOAD, Op.STORE, Op.ATOMIC), Op.CUSTOM, Op.SHAPE
    for ins in func.body.walk():
        op = ins.op
        if op in access:
            arr, ndim = ins.args[0], ins.args[0].type.ndim
            n_index = {Op.LOAD: len(ins.args) - 1, Op.STORE: len(ins.args) - 2}.get(op, ndim)
            banned.update(v for v in ins.args[1:] if v.type.is_array)
            if n_index != ndim:
                banned.add(arr)
                continue
            accesses.setdefault(arr, set()).add(a.index_key(ins.args[1:1 + ndim]))
        elif op is custom:
            banned.update(arr for _, arr in ins.attrs.get("adj_arrays", ()))
            banned.update(v for v in ins.args if v.type.is_array)
        elif op is not shape:
            for v in ins.args:  # (a loop: a generator per instruction cost more)
                if v.type.is_array:
                    banned.add(v)
    out = {}
    for k, p in enumerate(func.params):
        keys = accesses.get(p.value)
        if p.type.is_array and p.value not in banned and keys and len(keys) == 1 \
                and None not in keys:
            out[k] = next(iter(keys))
    return out


class _Analysis:
    def __init__(self, func: Function):
        self.func = func
        self.defs = {i.result: i for i in func.body.walk() if i.result is not None}
        self.params = {p.value: k for k, p in enumerate(func.params)}
        self.fixed = _fixed_loads(func)
        self.memo: dict = {}

    def index_key(self, idx):
        """A canonical key of an index tuple that is injective in the thread id, else None."""
        parts, covered = [], set()
        for v in idx:
            kind, dim, key = self.classify(v)
            if kind is None:
                return None
            if kind == "inj":
                covered.add(dim)
            parts.append(key)
        if not covered >= set(range(self.func.ndim)):
            return None
        return "[" + ", ".join(parts) + "]"

    def classify(self, v):
        """("inj", dim, key), ("uni", None, key) or (None, None, None) for an SSA value."""
        hit = self.memo.get(v)
        if hit is None:
            self.memo[v] = (None, None, None)  # no cycles in SSA, but stay safe
            hit = self.memo[v] = self._classify(v)
        return hit

    def _classify(self, v):
        none = (None, None, None)
        if v in self.params:
            return ("uni", None, f"p{self.params[v]}") if not v.type.is_array else none
        ins = self.defs.get(v)
        if ins is None:
            return none
        if ins.op is Op.CONST:
            return "uni", None, f"{ins.attrs['value']!r}:{v.type}"
        if ins.op is Op.TID:
            return "inj", ins.attrs["dim"], f"tid{ins.attrs['dim']}"
        if ins.op is Op.SHAPE:
            k = self.params.get(ins.args[0])
            return ("uni", None, f"p{k}.shape[{ins.attrs['dim']}]") if k is not None else none
        if ins.op is Op.LOAD_VAR:
            stored = self.fixed.get(ins)
            return self.classify(stored) if stored is not None else none
        if ins.op is not Op.CALL:
            return none
        name = ins.attrs["builtin"].name
        if name not in _ARITHMETIC or not (v.type.is_scalar and v.type.kind in "iu"):
            return none
        args = [self.classify(a) for a in ins.args]
        if any(kind is None for kind, _, _ in args):
            return none
        key = f"{name}<{v.type}>({', '.join(k for _, _, k in args)})"
        inj = [k for k, (kind, _, _) in enumerate(args) if kind == "inj"]
        if not inj:
            return "uni", None, key
        if len(inj) != 1:
            return none
        dim = args[inj[0]][1]
        src = ins.args[0].type
        if name in ("add", "sub") and len(args) == 2 \
                or name == "neg" \
                or name == "cast" and src.is_scalar and src.kind in "iu" \
                and v.type.bits >= src.bits:
            return "inj", dim, key
        return none


def _fixed_loads(func: Function) -> dict:
    """LOAD_VAR instruction -> the value stored, for locals assigned exactly once, at the
    top level, when the load comes after that assignment."""
    store_var, for_, load_var = Op.STORE_VAR, Op.FOR, Op.LOAD_VAR
    writer: dict = {}  # local -> its one writer, or None when it has several
    for ins in func.body.walk():
        op = ins.op
        if op is store_var or op is for_:
            var = ins.attrs["var"]
            writer[var] = None if var in writer else ins
    single = {var: w for var, w in writer.items() if w is not None and w.op is store_var}
    out, stored = {}, {}
    if not single:
        return out
    for top in func.body.instrs:
        op = top.op
        if top.regions:
            for ins in [top, *(s for r in top.regions for s in r.walk())]:
                if ins.op is load_var:
                    var = ins.attrs.get("var")
                    if var in stored:
                        out[ins] = stored[var]
        elif op is load_var:
            var = top.attrs["var"]
            if var in stored:
                out[top] = stored[var]
        elif op is store_var and single.get(top.attrs["var"]) is top:
            stored[top.attrs["var"]] = top.args[0]
    return out
