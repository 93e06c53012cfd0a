"""Typed IR -> LLVM IR: one method per Op (``_BodyLowering``); the entry function that runs
the thread loop around it is built in entry.py (``lower_to_llvm``).

Every kernel variant becomes ``void entry(ptr args, i64 start, i64 end)``, which runs the
threads [start, end) of the flattened launch grid. ``args`` points at a packed block laid
out by jit.ArgLayout (lowering takes its field offsets): each parameter in order (an array
as pointer, shape[ndim] and byte strides[ndim] as i64; scalars, vectors and matrices
inline), the launch dims, then the status block where a failed bounds check records itself.

Every loop that may run long checks the process-wide interrupt flag (``kl_interrupt``, an
i32 the runtime owns; see jit.py) at its back-edge and leaves the entry at once when it is
set: one load and a branch per iteration, none in loop-free kernels and none in short loops
of constant trip count, which LLVM unrolls.

A kernel variant has two entry functions, compiled separately (entry.py, ``part``). The
fast one runs when every array's innermost stride is its element size and every index that
is just the thread id is known to be in range for the whole launch; there the innermost
address is a constant-stride GEP and those checks vanish, so LLVM can vectorise element-wise
kernels. When the condition fails it does nothing but set the flag STATUS_GENERAL, and the
runtime runs the general entry, which handles any strides and checks every access. Most
launches never need the general one, so it is only compiled (or loaded) on first need:
that halves the machine code a kernel costs up front.
"""
from __future__ import annotations

import operator
from collections import Counter

from . import textir as ir

from ...errors import KernelError
from ...ir import printf as printf_format
from ...ir.printer import file_label
from ...ir.nodes import Block, Function, Op, Value
from ...types import ArrayType, Scalar, Type
from .cx import I8, I32, I64, PTR, bf16_narrow, bf16_round, bf16_widen, constant, ll_type, \
    mem_type
from .abi import (INTERRUPT_SYMBOL, STATUS_GENERAL, STATUS_NOT_FINITE,  # noqa: F401
                  STATUS_OUT_OF_BOUNDS)  # what the status block's flag says (abi.py)


class LoweringError(KernelError):
    """An internal compiler error while turning IR into machine code (a kernlab bug)."""


class ArrayView:
    """An array parameter inside the entry: base pointer, shape and strides (i64)."""

    def __init__(self, param: int, type: ArrayType, ptr, shape, strides):
        self.param, self.type, self.ptr, self.shape, self.strides = \
            param, type, ptr, shape, strides


def walked(func: Function) -> list:
    """Every instruction of the kernel body in program order (``func.body.walk()``), listed
    once per Function: the lowering consults it a dozen times, and a 4,000-line adjoint has
    100,000 instructions. (The IR is final once lowering starts; jit._body_size and
    variants.arg_layout keep their answers on the Function too.)"""
    out = getattr(func, "_walked", None)
    if out is None:
        out = func._walked = list(func.body.walk())
    return out


def of_op(func: Function, op: Op):
    """The instructions of the body with Op ``op``, in program order (a list the caller
    must not change; () for none). ``walked`` is grouped by Op once per Function, in one
    pass: most questions the lowering and the variant plan ask of a body of up to 100,000
    instructions are about a few kinds of instruction (array accesses, loops, constants)."""
    groups = getattr(func, "_by_op", None)
    if groups is None:
        groups = {}
        for ins in walked(func):  # (by the Op's name: an Enum's own __hash__ is a Python call)
            group = groups.get(ins.op._name_)
            if group is None:
                group = groups[ins.op._name_] = []
            group.append(ins)
        func._by_op = groups
    return groups.get(op._name_, ())


def accesses(func: Function) -> list:
    """The LOAD, STORE and ATOMIC instructions of the body (by Op, not in program order)."""
    return [*of_op(func, Op.LOAD), *of_op(func, Op.STORE), *of_op(func, Op.ATOMIC)]


def tid_values(func: Function) -> dict:
    """Values that are certainly this thread's id along some launch dim: TID results and
    loads of a Var stored exactly once, at the top level, from a TID (after that store).
    Found once per Function (each entry asks); the caller must not change it."""
    found = getattr(func, "_tid_values", None)
    if found is not None:
        return found
    tids = {ins.result: ins.attrs["dim"] for ins in of_op(func, Op.TID)}
    stores = of_op(func, Op.STORE_VAR)
    from_tid = [ins for ins in stores if ins.args[0] in tids]
    out = dict(tids)
    if from_tid:
        count = Counter(ins.attrs["var"] for ins in stores)
        top = func.body.instrs
        stored = {ins.attrs["var"]: ins for ins in from_tid  # var -> its one store
                  if count[ins.attrs["var"]] == 1 and ins in top}
        body, at = walked(func), 0
        after = {var: body.index(ins) for var, ins in stored.items()}
        for ins in of_op(func, Op.LOAD_VAR):  # their loads after the store (by place)
            var = ins.attrs["var"]
            if var in stored:
                at = body.index(ins, at)  # (the loads are in program order too)
                if at > after[var]:
                    out[ins.result] = tids[stored[var].args[0]]
    func._tid_values = out
    return out


SHORT_LOOP = 64  # a constant-trip FOR with no loop inside and at most this many iterations
                 # needs no interrupt check: the loops around it (if any) have one


def interrupt_checks(func: Function) -> set:
    """The FOR and WHILE instructions whose back-edge checks the interrupt flag: every
    WHILE, every FOR with a loop inside or a trip count that is not a small constant."""
    out = getattr(func, "_interrupt_checks", None)  # (asked for by each entry and the tier)
    if out is not None:
        return out
    out = set(of_op(func, Op.WHILE))
    fors = of_op(func, Op.FOR)
    consts = {i.result: i.attrs["value"] for i in of_op(func, Op.CONST)} if fors else {}
    for ins in fors:
        nested = any(i.op in (Op.FOR, Op.WHILE) for i in ins.regions[0].walk())
        bounds = [consts.get(v) for v in ins.args]
        if nested or None in bounds or bounds[2] == 0 \
                or len(range(*(int(b) for b in bounds))) > SHORT_LOOP:
            out.add(ins)
    func._interrupt_checks = out = frozenset(out)
    return out


def is_interruptible(func: Function) -> bool:
    """Whether a launch of the kernel can be stopped by the interrupt flag (the runtime
    then runs it off the main thread, where a KeyboardInterrupt can reach the caller)."""
    return bool(interrupt_checks(func))


def _internal(func: Function, message: str, loc=None, details: str = ""):
    return LoweringError(message, loc=loc or func.loc, kernel=func.name, details=details,
                         stage=f"compiling kernel '{func.name}' for the CPU (LLVM)")


class _BodyLowering:
    """Lowers the instructions of one copy (fast or general) of the kernel body."""

    def __init__(self, entry, thread_ids, fast: bool):  # entry: entry._EntryBuilder
        self.e, self.b, self.cx, self.fast = entry, entry.b, entry.cx, fast
        self.func = entry.func
        self.thread_ids = thread_ids  # this thread's id along each launch dim (i32)
        self.values: dict = dict(entry.params)
        self._labels: dict = {}  # file -> how listings name it (printer.file_label)
        self._loc = self._where = None  # the SourceLoc and (file, line) last commented

    def block(self, block: Block):
        """Lower each instruction of ``block`` in turn (the loop over the ~100,000
        instructions of a long adjoint: kept lean)."""
        func, b, values, labels = self.func, self.b, self.values, self._labels
        sections = (0, func.reverse_start) if block is func.body and func.is_adjoint else ()
        for k, ins in enumerate(block.instrs):
            if sections and k in sections:  # labelled sections in listings
                b.comment("---- forward replay ----" if k == 0 else "---- reverse ----")
                self._loc = self._where = None
            loc = ins.loc
            if loc is not self._loc:  # the user's line, once per run of ops
                self._loc = loc
                if (loc.file, loc.line) != self._where:
                    self._where = (loc.file, loc.line)
                    label = labels.get(loc.file)
                    if label is None:
                        label = labels[loc.file] = file_label(loc.file)
                    b.comment(f"{label}:{loc.line}")
            # the lowering method of each Op, found once (by the member's name: an Enum's
            # own __hash__ is a Python call)
            method = _METHODS.get(ins.op._name_)
            if method is None:
                method = _METHODS[ins.op._name_] = getattr(_BodyLowering,
                                                           "op_" + ins.op.name.lower())
            try:
                result = method(self, ins)
            except KernelError:
                raise
            except Exception as exc:  # an internal bug: name the user's line, keep the detail
                raise _internal(func, f"internal error lowering '{ins.op.value}' to LLVM",
                                ins.loc, f"{type(exc).__name__}: {exc}") from exc
            if ins.result is not None:
                values[ins.result] = result

    def get(self, v: Value):
        return self.values[v]

    # ---- values and locals ----------------------------------------------------------------

    def op_const(self, ins):
        if ins.result.type.is_tile:  # a read-only global (backends/llvm/tiles.py)
            return self.cx.tile_constant(ins.result.type, ins.attrs["value"])
        return constant(ins.result.type, ins.attrs["value"])

    def op_tid(self, ins):
        return self.thread_ids[ins.attrs["dim"]]

    def op_load_var(self, ins):
        slot, result = self.e.slots[ins.attrs["var"]], ins.result
        if result.type.is_tile:  # a copy: the local's buffer may be stored to later
            return self.cx.tile_fresh_copy(slot, result.type)
        return self.b.load(slot, name=result.name, typ=slot.allocated_type)

    def op_store_var(self, ins):
        slot, arg = self.e.slots[ins.attrs["var"]], ins.args[0]
        if arg.type.is_tile:
            self.cx.tile_copy(slot, self.values[arg], arg.type)
            return
        self.b.store(self.values[arg], slot)

    def op_call(self, ins):
        attrs = ins.attrs
        bi = attrs["builtin"]
        if bi.llvm is None:  # every registered builtin has one (tests/test_llvm.py)
            raise _internal(self.func, f"builtin '{bi.name}' has no LLVM lowering", ins.loc)
        if "site" in attrs and (self.e.checks or self.func.sites[attrs["site"]].guard):
            self._check_components(ins)
        args = ins.args  # (map with C callables: a comprehension is a call of its own)
        return self.cx.call_builtin(bi, list(map(self.values.__getitem__, args)),
                                    list(map(_type_of, args)),
                                    ins.result.type if ins.result is not None else None)

    def op_shape(self, ins):
        return self.b.trunc(self.get(ins.args[0]).shape[ins.attrs["dim"]], I32)

    # ---- array access -----------------------------------------------------------------------

    def _index64(self, v: Value):
        x = self.get(v)
        if x.type.width == 64:
            return x
        return self.b.zext(x, I64) if v.type.kind == "u" else self.b.sext(x, I64)

    def _address(self, arr: ArrayView, idx):
        """ptr + sum(index_d * stride_d); in the fast copy the innermost stride is the
        element size, so the last step is a typed GEP LLVM can vectorise."""
        b, dtype = self.b, arr.type.dtype
        ptr = arr.ptr
        outer = idx[:-1] if self.fast else idx
        for d, i in enumerate(outer):
            ptr = b.gep(ptr, [b.mul(i, arr.strides[d])], source_etype=I8)
        if self.fast:
            elem = ir.ArrayType(mem_type(dtype.scalar), getattr(dtype, "length", 1))
            ptr = b.gep(ptr, [idx[-1]], inbounds=True, source_etype=elem)
        return ptr

    def _guarded(self, ins, access, zero):
        """Run ``access(address, indices)`` when the array is there (nullable) and every index is in
        range (bounds_check); otherwise record the failure and yield ``zero``."""
        b, arr = self.b, self.get(ins.args[0])
        ndim = arr.type.ndim
        idx_values = ins.args[1:1 + ndim]
        nullable = ins.attrs.get("nullable", False)
        there = self.e.presence.get(ins.args[0]) if self.fast else None
        if there is False:  # an entry for launches without this array: the access is left out
            return zero
        if there:
            nullable = False
        idx = [self._index64(v) for v in idx_values]
        checked = []
        if self.e.checks:
            checked = [d for d, v in enumerate(idx_values)  # the fast entry checked these
                       if not (self.fast and (v in self.e.tids or v in self.e.consts))]
        if not checked and not nullable:
            return access(self._address(arr, idx), idx)
        join = self.e.fn.append_basic_block("access_done")
        results = []
        if nullable:
            present = self.e.fn.append_basic_block("present")
            results.append((zero, b.block))
            b.cbranch(b.icmp_unsigned("!=", arr.ptr, ir.Constant(PTR, None)), present, join)
            b.position_at_end(present)
        if checked:
            oks = {d: b.icmp_unsigned("<", idx[d], arr.shape[d]) for d in checked}
            ok = oks[checked[0]]
            for d in checked[1:]:
                ok = b.and_(ok, oks[d])
            inside, fail = self.e.fn.append_basic_block("in_bounds"), \
                self.e.fn.append_basic_block("out_of_bounds")
            b.cbranch(ok, inside, fail)
            b.position_at_end(fail)
            axis, index = I32(checked[-1]), idx[checked[-1]]
            for d in reversed(checked[:-1]):  # the first failing axis
                bad = b.not_(oks[d])
                axis, index = b.select(bad, I32(d), axis), b.select(bad, idx[d], index)
            b.call(self.e.report_fn(), [self.e.status, I32(STATUS_OUT_OF_BOUNDS),
                                        I32(ins.attrs.get("site", -1)), axis,
                                        I32(arr.param), index])
            b.branch(self.e.done)  # the launch fails: stop this slice of threads here
            b.position_at_end(inside)
        value = access(self._address(arr, idx), idx)
        results.append((value, b.block))
        b.branch(join)
        b.position_at_end(join)
        if ins.result is None:
            return None
        phi = b.phi(value.type, name=ins.result.name)
        for v, block in results:
            phi.add_incoming(v, block)
        return phi

    def _check_components(self, ins):
        """Report (and leave the slice) when a runtime vector/matrix index is out of range;
        the extents are in the access's Site."""
        b = self.b
        extents = self.func.sites[ins.attrs["site"]].shape
        idx = [self._index64(v) for v in ins.args[1:1 + len(extents)]]
        oks = [b.icmp_unsigned("<", i, I64(n)) for i, n in zip(idx, extents)]
        ok = oks[0]
        for o in oks[1:]:
            ok = b.and_(ok, o)
        inside = self.e.fn.append_basic_block("component_in_range")
        fail = self.e.fn.append_basic_block("component_out_of_range")
        b.cbranch(ok, inside, fail)
        b.position_at_end(fail)
        axis, index = I32(len(idx) - 1), idx[-1]
        for d in reversed(range(len(idx) - 1)):  # the first failing axis
            bad = b.not_(oks[d])
            axis, index = b.select(bad, I32(d), axis), b.select(bad, idx[d], index)
        b.call(self.e.report_fn(), [self.e.status, I32(STATUS_OUT_OF_BOUNDS),
                                    I32(ins.attrs["site"]), axis, I32(-1), index])
        b.branch(self.e.done)  # the launch fails: stop this slice of threads here
        b.position_at_end(inside)

    def _components(self, ptr, t: Type):
        """The address of each component of the element at ptr."""
        s = t.scalar
        if t.is_scalar:
            return [ptr]
        return [self.b.gep(ptr, [I64(c)], source_etype=mem_type(s)) for c in range(t.length)]

    def _load(self, ptr, t: Type):
        s = t.scalar
        vals = [self.b.load(p, typ=mem_type(s)) for p in self._components(ptr, t)]
        if s.kind == "b":
            vals = [self.b.icmp_unsigned("!=", v, I8(0)) for v in vals]
        elif s.name == "bfloat16":
            vals = [bf16_widen(self.b, v) for v in vals]
        if t.is_scalar:
            return vals[0]
        out = ir.Constant(ll_type(t), ir.Undefined)
        for c, v in enumerate(vals):
            out = self.b.insert_element(out, v, I32(c))
        return out

    def _store(self, ptr, t: Type, value):
        s = t.scalar
        parts = [value] if t.is_scalar else \
            [self.b.extract_element(value, I32(c)) for c in range(t.length)]
        for p, v in zip(self._components(ptr, t), parts):
            self.b.store(self.b.zext(v, I8) if s.kind == "b" else
                         bf16_narrow(self.b, v) if s.name == "bfloat16" else v, p)

    def op_load(self, ins):
        t = ins.result.type
        return self._guarded(ins, lambda ptr, idx: self._load(ptr, t), constant(t, 0))

    def op_store(self, ins):
        value = self.get(ins.args[-1])
        t = ins.args[-1].type

        def access(ptr, idx):
            self._store(ptr, t, value)
            self._check_finite(ins, value, t, idx)

        self._guarded(ins, access, None)

    def op_atomic(self, ins):
        t, kind = ins.result.type, ins.attrs["kind"]
        value = self.get(ins.args[-1])
        private = self.e.private.get(ins.args[0]) if self.fast else None

        def access(ptr, idx):
            s = t.scalar  # never bool: the front end refuses atomics on bool arrays
            if private is not None:  # a worker's own copy (entry._Private); nobody reads
                private.update(idx, value, kind)  # what this returns
                return constant(t, 0)
            if kind == "cas":
                return self._cas(ptr, self.get(ins.args[-2]), value, s)
            if s.name == "bfloat16":  # no atomic instruction: compare-and-swap its bits
                return self._bf16_atomic(ptr, t, kind, value)
            op = _ATOMIC_OPS[s.kind if s.kind in "fu" else "i"][kind]
            if t.is_scalar:
                old = self.b.atomic_rmw(op, ptr, value, "monotonic")
            else:
                old = ir.Constant(ll_type(t), ir.Undefined)
                for c, p in enumerate(self._components(ptr, t)):
                    part = self.b.extract_element(value, I32(c))
                    old = self.b.insert_element(
                        old, self.b.atomic_rmw(op, p, part, "monotonic"), I32(c))
            if self.e.verify_fp and s.kind == "f":  # what the atomic wrote
                written = self.cx.intr(f"llvm.{_FP_ATOMIC[kind]}", old, value) \
                    if kind in _FP_ATOMIC else value if kind in ("exch", "cas") else \
                    (self.b.fadd if kind == "add" else self.b.fsub)(old, value)
                self._check_finite(ins, written, t, idx)
            return old

        return self._guarded(ins, access, constant(t, 0))

    def _bf16_atomic(self, ptr, t: Type, kind: str, value):
        """An atomic add/sub/min/max/exch on bfloat16 memory (each component of a vector
        or matrix in turn): a compare-and-swap loop on its 16 bits; the new value is
        computed in float and rounded, as Warp does. Returns the old value."""
        b, i16 = self.b, ir.IntType(16)
        parts = [value] if t.is_scalar else \
            [b.extract_element(value, I32(c)) for c in range(t.length)]
        olds = []
        for p, v in zip(self._components(ptr, t), parts):
            start = b.load(p, typ=i16)
            head, body, done = (b.append_basic_block(f"bf16_atomic_{n}")
                                for n in ("head", "body", "done"))
            entry = b.block
            b.branch(head)
            b.position_at_end(head)
            seen = b.phi(i16)
            seen.add_incoming(start, entry)
            old = bf16_widen(b, seen)
            if kind in ("add", "sub"):
                new = (b.fadd if kind == "add" else b.fsub)(old, v)
            elif kind in _FP_ATOMIC:
                new = self.cx.intr(f"llvm.{_FP_ATOMIC[kind]}", old, v)
            else:  # exch
                new = v
            pair = b.cmpxchg(p, seen, bf16_narrow(b, new), "monotonic", "monotonic")
            b.branch(body)
            b.position_at_end(body)
            seen.add_incoming(b.extract_value(pair, 0), body)
            b.cbranch(b.extract_value(pair, 1), done, head)
            b.position_at_end(done)
            olds.append(old)
        if t.is_scalar:
            return olds[0]
        out = ir.Constant(ll_type(t), ir.Undefined)
        for c, o in enumerate(olds):
            out = b.insert_element(out, o, I32(c))
        return out

    def _cas(self, ptr, compare, value, s: Scalar):
        """cmpxchg (floats compare and swap their bits, as CUDA's atomicCAS does)."""
        b = self.b
        if s.kind == "f":
            bits = ir.IntType(s.bits)
            pair = b.cmpxchg(ptr, b.bitcast(compare, bits), b.bitcast(value, bits),
                             "monotonic", "monotonic")
            return b.bitcast(b.extract_value(pair, 0), value.type)
        return b.extract_value(b.cmpxchg(ptr, compare, value, "monotonic", "monotonic"), 0)

    def _check_finite(self, ins, value, t: Type, idx):
        """verify_fp: report a NaN or Inf just stored (flag STATUS_NOT_FINITE, the flat
        element index)."""
        if not self.e.verify_fp or t.scalar.kind != "f":
            return
        b = self.b
        parts = [value] if t.is_scalar else \
            [b.extract_element(value, I32(c)) for c in range(t.length)]
        inf = ir.Constant(parts[0].type, float("inf"))
        bad = None
        for p in parts:
            size = self.cx.intr("llvm.fabs", p)
            nonfinite = b.fcmp_unordered(">=", size, inf)  # NaN is unordered
            bad = nonfinite if bad is None else b.or_(bad, nonfinite)
        with b.if_then(bad, likely=False):
            arr = self.get(ins.args[0])
            flat = idx[0]
            for d in range(1, len(idx)):
                flat = b.add(b.mul(flat, arr.shape[d]), idx[d])
            b.call(self.e.report_fn(), [self.e.status, I32(STATUS_NOT_FINITE),
                                        I32(ins.attrs.get("site", -1)), I32(0),
                                        I32(arr.param), flat])

    # ---- structured control flow ------------------------------------------------------------

    def op_if(self, ins):
        then_region, else_region = ins.regions
        cond = self.get(ins.args[0])
        if else_region.instrs:
            with self.b.if_else(cond) as (then, otherwise):
                with then:
                    self.block(then_region)
                with otherwise:
                    self.block(else_region)
        else:
            with self.b.if_then(cond):
                self.block(then_region)

    def op_for(self, ins):
        b, var = self.b, ins.attrs["var"]
        start, stop, step = (self.get(a) for a in ins.args)
        kind = ins.args[0].type.kind
        less = b.icmp_unsigned if kind == "u" else b.icmp_signed
        zero = ir.Constant(step.type, 0)
        pre = b.block
        head, body = self.e.fn.append_basic_block("for"), self.e.fn.append_basic_block("for_body")
        after = self.e.fn.append_basic_block("for_done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(start.type, name=var.name)
        i.add_incoming(start, pre)
        up = b.and_(b.icmp_signed(">", step, zero), less("<", i, stop))
        down = b.and_(b.icmp_signed("<", step, zero), less(">", i, stop))
        b.cbranch(b.or_(up, down), body, after)
        b.position_at_end(body)
        b.store(i, self.e.slots[var])
        self.block(ins.regions[0])
        i.add_incoming(b.add(i, step), b.block)
        self._back_edge(ins, head)
        b.position_at_end(after)

    def op_while(self, ins):
        b = self.b
        cond_region, body_region = ins.regions
        head = self.e.fn.append_basic_block("while")
        body = self.e.fn.append_basic_block("while_body")
        after = self.e.fn.append_basic_block("while_done")
        b.branch(head)
        b.position_at_end(head)
        self.block(cond_region)
        b.cbranch(self.get(cond_region.result), body, after)
        b.position_at_end(body)
        self.block(body_region)
        self._back_edge(ins, head)
        b.position_at_end(after)

    def _back_edge(self, ins, head):
        """Branch back to the loop head, or leave the entry when the runtime has set the
        interrupt flag (for loops that check it)."""
        b = self.b
        if ins not in self.e.checked_loops:
            b.branch(head)
            return
        flag = b.load_atomic(self.e.interrupt, "monotonic", 4, name="interrupt")
        stop = b.icmp_unsigned("!=", flag, I32(0), name="interrupted")
        b.cbranch(stop, self.e.done, head).set_weights([1, 1 << 20])

    def op_custom(self, ins):
        self.block(ins.regions[0])  # the forward body; regions[1] is for the adjoint

    # ---- printing -------------------------------------------------------------------------

    def op_print(self, ins):
        b = self.b
        shown, specs = [], []  # each value as print shows it: its C arguments and format
        for v in ins.args:
            x = self.get(v)
            parts = [x] if v.type.is_scalar else \
                [b.extract_element(x, I32(c)) for c in range(v.type.length)]
            conv = [self._printf_arg(p, v.type.scalar) for p in parts]
            shown.append([c for c, _ in conv])
            spec = ", ".join(s for _, s in conv)
            specs.append(spec if v.type.is_scalar else f"[{spec}]")
        if ins.attrs.get("printf"):
            # the format was checked against the value types by the front end; each value
            # is passed as exactly the C type its conversion reads
            values, fmt = [], []
            for p in printf_format.parse(ins.attrs["fmt"], [v.type for v in ins.args]):
                if isinstance(p, str):
                    fmt.append(printf_format.c_escape_percent(p))
                elif p.kind == "show":
                    fmt.append(specs[p.index])
                    values += shown[p.index]
                else:
                    fmt.append(p.c_spec())
                    values.append(self._printf_value(ins.args[p.index], p.kind))
            fmt = "".join(fmt)
        else:
            values = [c for cs in shown for c in cs]
            pieces = ins.attrs["fmt"].replace("%", "%%").split("{}")
            fmt = pieces[0] + "".join(s + p for s, p in zip(specs, pieces[1:])) + "\n"
        printf = self.e._extern("printf", I32, [PTR], var_arg=True)
        b.call(printf, [self._cstring(fmt)] + values)
        b.call(self.e._extern("fflush", I32, [PTR]), [ir.Constant(PTR, None)])

    def _printf_arg(self, x, s: Scalar):
        b = self.b
        if s.kind == "f":
            return self.cx.float_convert(x, ir.DoubleType()), "%g"
        if s.kind == "b":
            ptr = I8.as_pointer()  # "True" and "False" are arrays of different lengths
            return b.select(x, b.bitcast(self._cstring("True"), ptr),
                            b.bitcast(self._cstring("False"), ptr)), "%s"
        if s.bits < 32:  # printf's varargs take int
            x = (b.zext if s.kind == "u" else b.sext)(x, I32)
        long = "ll" if s.bits == 64 else ""
        return x, f"%{long}{'u' if s.kind == 'u' else 'd'}"

    def _printf_value(self, v, kind: str):
        """Value ``v`` converted to the C type a printf conversion of ``kind`` reads."""
        b, s, x = self.b, v.type.scalar, self.get(v)
        if kind == "double":
            return self.cx.float_convert(x, ir.DoubleType())
        if kind == "char":
            return b.trunc(x, I32) if s.bits > 32 else x if s.bits == 32 else \
                (b.zext if s.kind == "u" else b.sext)(x, I32)
        if s.kind == "b" or s.kind == "u":
            return b.zext(x, I64) if x.type.width < 64 else x
        return b.sext(x, I64) if x.type.width < 64 else x

    def _cstring(self, text: str):
        strings = self.e.strings
        if text not in strings:
            data = bytearray(text.encode("utf-8") + b"\0")
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.e.module, ty, f"str{len(strings)}")
            g.global_constant, g.linkage, g.initializer = True, "internal", ir.Constant(ty, data)
            g.unnamed_addr = True
            strings[text] = g
        return strings[text]

    # ---- the per-thread stack (adjoint kernels) -------------------------------------------

    def op_push(self, ins):
        b, st = self.b, self.e.stack
        for v in ins.args:
            size = _stack_size(v.type)
            top = b.load(st["top"])
            need = b.add(top, I64(size))
            grow = b.icmp_unsigned(">", need, b.load(st["cap"]))
            with b.if_then(grow, likely=False):
                cap = b.mul(b.load(st["cap"]), I64(2))
                cap = b.select(b.icmp_unsigned("<", cap, need), b.add(need, I64(256)), cap)
                realloc = self.e._extern("realloc", PTR, [PTR, I64])
                b.store(b.call(realloc, [b.load(st["buf"]), cap]), st["buf"])
                b.store(cap, st["cap"])
            ptr = b.gep(b.load(st["buf"]), [top], source_etype=I8)
            self._stack_store(ptr, v.type, self.get(v))
            b.store(need, st["top"])

    def op_pop(self, ins):
        b, st, t = self.b, self.e.stack, ins.result.type
        size = I64(_stack_size(t))
        top = b.load(st["top"])
        ok = b.icmp_unsigned(">=", top, size)  # an empty stack is a compiler bug: yield 0
        pre = b.block
        with b.if_then(ok):
            new_top = b.sub(top, size)
            b.store(new_top, st["top"])
            value = self._stack_load(b.gep(b.load(st["buf"]), [new_top], source_etype=I8), t)
            loaded_in = b.block
        phi = b.phi(ll_type(t), name=ins.result.name)
        phi.add_incoming(self.cx.tile_constant(t, 0) if t.is_tile else constant(t, 0), pre)
        phi.add_incoming(value, loaded_in)
        return phi

    def _stack_store(self, ptr, t, value):
        if t.is_tile:  # the tile's bytes
            self._tile_bytes(ptr, value, t)
            return
        if t.scalar.kind == "b":
            value = self.b.zext(value, _stack_type(t))
        self.b.store(value, ptr, align=1)

    def _tile_bytes(self, dst, src, t):
        """Copy a tile's bytes between its buffer and the (untyped) stack: llvm.memcpy."""
        i8p = ir.IntType(8).as_pointer()
        fn = self.e.module.declare_intrinsic("llvm.memcpy", [i8p, i8p, I64])
        self.b.call(fn, [self.b.bitcast(dst, i8p), self.b.bitcast(src, i8p),
                         I64(_stack_size(t)), ir.Constant(ir.IntType(1), 0)])

    def _stack_load(self, ptr, t):
        if t.is_tile:
            out = self.cx.tile_buffer(t)
            self._tile_bytes(out, ptr, t)
            return out
        v = self.b.load(ptr, typ=_stack_type(t), align=1)
        return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, None)) \
            if t.scalar.kind == "b" else v


_METHODS: dict = {}  # Op's name -> _BodyLowering.op_<name>
_type_of = operator.attrgetter("type")


def _stack_type(t: Type):
    return I8 if t.is_scalar and t.kind == "b" else \
        ir.VectorType(I8, t.length) if t.scalar.kind == "b" else ll_type(t)


def _stack_size(t: Type) -> int:
    width = 4 if t.scalar.name == "bfloat16" else t.scalar.nbytes  # its register: a float
    return width * getattr(t, "length", 1)


def _size(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width // 8
    return {ir.HalfType: 2, ir.FloatType: 4}.get(type(ty), 8)


_FP_ATOMIC = {"min": "minnum", "max": "maxnum"}  # what atomicrmw fmin/fmax compute
_ATOMIC_OPS = {
    "f": {"add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax", "exch": "xchg"},
    "i": {"add": "add", "sub": "sub", "min": "min", "max": "max", "and": "and", "or": "or",
          "xor": "xor", "exch": "xchg"},
    "u": {"add": "add", "sub": "sub", "min": "umin", "max": "umax", "and": "and", "or": "or",
          "xor": "xor", "exch": "xchg"},
}
