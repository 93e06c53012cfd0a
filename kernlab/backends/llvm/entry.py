"""The entry functions of a kernel variant (``lower_to_llvm``): argument block, the thread
loops (the fast contiguous part or the general one, see lower.py's docstring), the report
function for failed checks. The body of each thread is lowered by lower._BodyLowering.
"""
from __future__ import annotations

from . import textir as ir

from ...ir.nodes import Function, Op
from ...types import ArrayType
from .cx import I1, I8, I32, I64, PTR, BuiltinContext, ll_type, mem_type, slot_type
from .tiles import pin_buffer
from .lower import (INTERRUPT_SYMBOL, STATUS_GENERAL, ArrayView, _BodyLowering, _size,
                    accesses, interrupt_checks, of_op, tid_values, walked)

PARTS = ("fast", "general")


def has_fast_path(func: Function) -> bool:
    """Whether the kernel accesses arrays, so that a fast entry is worth having; a kernel
    that touches none has only the general one."""
    return bool(of_op(func, Op.LOAD) or of_op(func, Op.STORE) or of_op(func, Op.ATOMIC))


def optional_arrays(func: Function) -> list:
    """Indices of the array parameters that may be absent (an adjoint's gradient nobody
    asked for): every access to them is nullable. A fast entry is specialised to which of
    them are there, so its loops hold no test for them (a test per access keeps LLVM from
    vectorising except with masked loads and stores, slow on many CPUs and very slow on an
    absent array, whose masked-off lanes still point at unmapped memory)."""
    out = getattr(func, "_optional_arrays", None)  # (asked for by the layout and each entry)
    if out is None:
        nullable, plain = set(), set()
        for ins in accesses(func):
            (nullable if ins.attrs.get("nullable") else plain).add(ins.args[0])
        out = func._optional_arrays = tuple(k for k, p in enumerate(func.params)
                                            if p.value in nullable - plain)
    return list(out)


PRIVATE_BYTES = 4096  # an atomically updated array at most this big may be privatised


def private_candidates(func: Function, verify_fp: bool = False) -> list:
    """Indices of the array parameters whose atomics a fast entry may privatise: each
    worker accumulates into a copy of its own (on its stack, at most PRIVATE_BYTES) and
    combines it into the array with one atomic per element it changed when its share of
    the launch ends. That needs every access to the array to be an atomic add or sub (or
    every one a min, or every one a max) on 32/64-bit integers or floats (vectors and
    matrices of them component-wise) whose returned value is not used. Float sums are
    then reassociated, as the atomics' arbitrary order already does. (verify_fp reports
    each value an atomic writes: nothing is privatised then.)"""
    if verify_fp or not of_op(func, Op.ATOMIC):  # (with no atomic, every array has None)
        return []
    used, kinds, atomics = set(), {}, []  # (one walk: a 4,000-line adjoint took 0.1 s a walk)
    for ins in walked(func):
        args, op = ins.args, ins.op
        used.update(args)
        for r in ins.regions:
            if r.result is not None:
                used.add(r.result)
        if op is Op.SHAPE:
            continue
        target = args[0] if op is Op.ATOMIC else None
        if op is Op.ATOMIC:
            atomics.append(ins)
        for a in args:
            if a.type.is_array and a is not target:
                kinds.setdefault(a, set()).add(None)  # anything but an atomic: no
    for ins in atomics:  # (once every use is known)
        s = ins.args[0].type.dtype.scalar
        kind = {"sub": "add"}.get(ins.attrs["kind"], ins.attrs["kind"])
        ok = kind in ("add", "min", "max") and ins.result not in used \
            and s.kind in "iuf" and s.bits in (32, 64)
        kinds.setdefault(ins.args[0], set()).add(kind if ok else None)
    return [k for k, p in enumerate(func.params)
            if len(kinds.get(p.value, ())) == 1 and None not in kinds[p.value]]


def lower_to_llvm(func: Function, bounds_check: bool, offsets: dict, symbol: str,
                  verify_fp: bool = False, part: str = "general", absent=frozenset(),
                  private=frozenset()):
    """The LLVM module (a textir.Module: llvmlite.ir's API) holding ``symbol``, one entry
    function of the kernel:
    ``part`` "fast" (contiguous arrays, thread-id indices in range, the optional arrays
    ``absent`` (parameter indices) absent and the others there, the arrays ``private``
    small enough to privatise (see private_candidates), else it only sets STATUS_GENERAL)
    or "general". ``offsets`` gives the byte offset of each field of the argument block.
    With verify_fp, every float store reports a NaN or Inf it writes."""
    if part not in PARTS or (part == "fast" and not has_fast_path(func)):
        raise ValueError(f"kernel '{func.name}' has no {part!r} entry")
    fast = part == "fast"
    presence = {func.params[k].value: k not in absent for k in optional_arrays(func)} \
        if fast else {}
    if private and not set(private) <= set(private_candidates(func, verify_fp)) - set(absent):
        raise ValueError(f"kernel '{func.name}': arrays {sorted(private)} cannot be privatised")
    return _EntryBuilder(func, bounds_check, offsets, symbol, verify_fp, fast,
                         presence, private if fast else ()).build()


def _facts(func: Function) -> tuple:
    """(the integer constants of the body by value, whether it uses the tape's stack), found
    once per Function: each of its two entries asks."""
    out = getattr(func, "_entry_facts", None)
    if out is None:
        consts = {i.result: int(i.attrs["value"]) for i in of_op(func, Op.CONST)
                  if i.result.type.is_scalar and i.result.type.kind in "iu"}
        uses_stack = bool(of_op(func, Op.PUSH) or of_op(func, Op.POP))
        out = func._entry_facts = (consts, uses_stack)
    return out


class _EntryBuilder:
    def __init__(self, func, bounds_check, offsets, symbol, verify_fp=False, fast=False,
                 presence=None, private=()):
        self.func, self.checks, self.offsets = func, bounds_check, offsets
        self.verify_fp, self.fast = verify_fp, fast
        self.presence = presence or {}  # optional array param value -> there (fast entry)
        self.private_params = sorted(private)
        self.private: dict = {}  # array param value -> its _Private copy (fast entry)
        self.consts, self.uses_stack = _facts(func)
        self.module = ir.Module(name=func.name)
        fnty = ir.FunctionType(ir.VoidType(), [PTR, I64, I64])
        self.fn = ir.Function(self.module, fnty, symbol)
        self.fn.args[0].name, self.fn.args[1].name, self.fn.args[2].name = "args", "start", "end"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.cx = BuiltinContext(self.module, self.b)
        self.tids = tid_values(func)
        self.strings: dict = {}  # C string constants, by text
        self.checked_loops = interrupt_checks(func)
        self.interrupt = None
        if self.checked_loops:  # defined by the runtime: see jit.py
            self.interrupt = ir.GlobalVariable(self.module, I32, INTERRUPT_SYMBOL)

    # ---- the entry function ------------------------------------------------------------

    def build(self) -> ir.Module:
        b, func = self.b, self.func
        args, start, end = self.fn.args
        self.slots = {v: b.alloca(slot_type(v.type), name=v.name) for v in func.vars}
        for v, slot in self.slots.items():
            if v.type.is_tile:
                pin_buffer(b, slot)  # backends/llvm/tiles.py
        if self.uses_stack:
            self.stack = {k: b.alloca(t, name=f"stack_{k}")
                          for k, t in (("buf", PTR), ("top", I64), ("cap", I64))}
            b.store(ir.Constant(PTR, None), self.stack["buf"])
            b.store(I64(0), self.stack["cap"])
        self.params = {p.value: self._read_param(k, p) for k, p in enumerate(func.params)}
        self.dims = [self._field("dims", I64, d, name=f"dim{d}") for d in range(4)]
        self.status = b.gep(args, [I64(self.offsets["flag"])], source_etype=I8,
                            name="status")
        for k in self.private_params:
            view = self.params[func.params[k].value]
            self.private[func.params[k].value] = _Private(self, view, self._private_kind(k))
        done = self.done = self.fn.append_basic_block("done")
        run = self.fn.append_basic_block("run")
        b.cbranch(b.icmp_signed("<", start, end), run, done)
        b.position_at_end(run)
        start32, end32 = b.trunc(start, I32, "start32"), b.trunc(end, I32, "end32")
        if self.fast:
            accessed = {i.args[0] for i in accesses(func)}
            arrays = [self.params[p.value] for p in func.params if p.value in accessed]
            fast, bail = self.fn.append_basic_block("fast"), self.fn.append_basic_block("bail")
            b.cbranch(self._fast_path_ok(arrays), fast, bail)
            b.position_at_end(bail)  # before any work: the runtime reruns on the general entry
            b.atomic_rmw("xchg", self.status, I32(STATUS_GENERAL), "monotonic")
            b.branch(done)
            b.position_at_end(fast)
        self._thread_loops(start32, end32, self.fast)
        b.branch(done)
        b.position_at_end(done)
        for copy in self.private.values():  # this worker's share, into the arrays
            copy.flush()
        if self.uses_stack:
            b.call(self._extern("free", ir.VoidType(), [PTR]), [b.load(self.stack["buf"])])
        b.ret_void()
        return self.module

    def _field(self, field, ty, k=0, name=""):
        """Load component k of a field of the argument block."""
        offset = self.offsets[field] + k * _size(ty)
        ptr = self.b.gep(self.fn.args[0], [I64(offset)], source_etype=I8)
        return self.b.load(ptr, typ=ty, name=name)

    def _read_param(self, k, p):
        t = p.type
        if isinstance(t, ArrayType):
            ptr = self._field(f"p{k}", PTR, name=p.name)
            shape = [self._field(f"p{k}_shape", I64, d, name=f"{p.name}_shape{d}")
                     for d in range(t.ndim)]
            strides = [self._field(f"p{k}_strides", I64, d, name=f"{p.name}_stride{d}")
                       for d in range(t.ndim)]
            return ArrayView(k, t, ptr, shape, strides)
        s = t.scalar
        ty = ll_type(s) if s.name == "bfloat16" else mem_type(s)  # passed as float32
        elems = [self._field(f"p{k}", ty, c) for c in range(getattr(t, "length", 1))]
        if s.kind == "b":
            elems = [self.b.icmp_unsigned("!=", e, I8(0)) for e in elems]
        if t.is_scalar:
            elems[0].name = p.name
            return elems[0]
        out = ir.Constant(ll_type(t), ir.Undefined)
        for c, e in enumerate(elems):
            out = self.b.insert_element(out, e, I32(c))
        return out

    def _fast_path_ok(self, arrays):
        """Every array's innermost stride is its element size, and every index that is a
        thread id stays inside its axis for the whole launch (the same answer for every
        slice of the launch, so either all of them run fast or none does anything). The
        optional arrays (an adjoint's) are there or absent as this entry was specialised
        for; an array accessed both ways may be absent, and its accesses test for it."""
        b = self.b
        optional = {i.args[0] for i in accesses(self.func) if i.attrs.get("nullable")}
        absent = {}

        def holds(view, cond):
            if view.param not in absent:
                return cond
            return b.or_(absent[view.param], cond)
        ok = ir.Constant(I1, 1)
        for a in arrays:
            value = self.func.params[a.param].value
            if value in self.presence:
                null = b.icmp_unsigned("==", a.ptr, ir.Constant(PTR, None))
                ok = b.and_(ok, b.not_(null) if self.presence[value] else null)
                if not self.presence[value]:
                    continue
            elif value in optional:
                absent[a.param] = b.icmp_unsigned("==", a.ptr, ir.Constant(PTR, None))
            ok = b.and_(ok, holds(a, b.icmp_signed("==", a.strides[-1],
                                                   I64(a.type.dtype.nbytes))))
            if value in self.private:
                ok = b.and_(ok, self.private[value].fits)
        total = b.mul(b.mul(b.mul(self.dims[0], self.dims[1]), self.dims[2]), self.dims[3],
                      name="threads")
        for arr, axis, dim, const in sorted(self._hoistable(),
                                            key=lambda x: (x[0].id, x[1], x[2], x[3])):
            if self.presence.get(arr) is False:
                continue  # its accesses are left out
            view = self.params[arr]
            if dim < 0:  # a constant index
                inside = b.icmp_unsigned("<", I64(const), view.shape[axis])
            else:
                extent = total if self.func.ndim == 1 else self.dims[dim]
                inside = b.icmp_unsigned("<=", extent, view.shape[axis])
            ok = b.and_(ok, holds(view, inside))
        return ok

    def _hoistable(self) -> set:
        """(array, axis, tid dim, 0) of the checked accesses whose index is a thread id and
        (array, axis, -1, value) of those whose index is a constant: the fast entry checks
        them once (runs only if all hold), so its accesses need no check."""
        if not self.checks:
            return set()
        out = set()
        for ins in accesses(self.func):
            ndim = ins.args[0].type.ndim
            for axis, idx in enumerate(ins.args[1:1 + ndim]):
                if idx in self.tids:
                    out.add((ins.args[0], axis, self.tids[idx], 0))
                elif idx in self.consts:
                    out.add((ins.args[0], axis, -1, self.consts[idx]))
        return out

    def _private_kind(self, k) -> str:
        kinds = {i.attrs["kind"] for i in of_op(self.func, Op.ATOMIC)
                 if i.args[0] is self.func.params[k].value}
        return "add" if kinds <= {"add", "sub"} else kinds.pop()

    def _thread_loops(self, start, end, fast):
        """Run the body for every thread in [start, end): one loop for 1-D kernels; for
        2-D to 4-D, a loop over rows of the last launch dim with an inner loop along it."""
        b, ndim = self.b, self.func.ndim
        tag = "fast" if fast else "gen"
        if ndim == 1:
            self._counted_loop(start, end, lambda i: self._thread([i], fast), f"{tag}_i", fast)
            return
        last = b.trunc(self.dims[ndim - 1], I32, "last_dim")
        row0 = b.sdiv(start, last, name="row0")
        pre = b.block
        rows = self.fn.append_basic_block(f"{tag}_rows")
        after = self.fn.append_basic_block(f"{tag}_rows_done")
        b.branch(rows)
        b.position_at_end(rows)
        flat = b.phi(I32, "flat")
        q = b.phi(I32, "row")
        flat.add_incoming(start, pre)
        q.add_incoming(row0, pre)
        j_lo = b.srem(flat, last, name="j_lo")
        row_len = b.sub(last, j_lo)
        left = b.sub(end, flat)
        row_len = b.select(b.icmp_signed("<", left, row_len), left, row_len, name="row_len")
        coords = [q]  # the row q over dims[0 .. ndim-1) -> its coordinates, last fastest
        for d in range(ndim - 2, 0, -1):
            n = b.trunc(self.dims[d], I32)
            coords[:1] = [b.sdiv(coords[0], n), b.srem(coords[0], n)]
        self._counted_loop(j_lo, b.add(j_lo, row_len, flags=("nsw",)),
                           lambda j: self._thread(coords + [j], fast), f"{tag}_j", fast)
        nxt = b.add(flat, row_len, name="flat_next", flags=("nsw",))
        flat.add_incoming(nxt, b.block)
        q.add_incoming(b.add(q, I32(1), flags=("nsw",)), b.block)
        b.cbranch(b.icmp_signed("<", nxt, end), rows, after)
        b.position_at_end(after)

    def _counted_loop(self, lo, hi, body, name, vectorize):
        """for (i = lo; i < hi; i++) body(i), given lo < hi (a do-while). Only the fast
        path's loops are worth vectorising: the general path's strided accesses would become
        gathers and scatters, which cost compile time and rarely run faster."""
        b = self.b
        pre = b.block
        loop = self.fn.append_basic_block(name)
        after = self.fn.append_basic_block(f"{name}_done")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I32, name)
        i.add_incoming(lo, pre)
        body(i)
        nxt = b.add(i, I32(1), name=f"{name}_next", flags=("nsw",))
        i.add_incoming(nxt, b.block)
        back = b.cbranch(b.icmp_signed("<", nxt, hi), loop, after)
        if not vectorize:
            back.set_metadata("llvm.loop", self._scalar_loop_md())
        b.position_at_end(after)

    def _scalar_loop_md(self):
        """Loop metadata that keeps the vectoriser off a loop. A loop ID must list itself
        first; textir (like llvmlite.ir) has no self-referencing nodes, so the operand is
        patched in."""
        md = getattr(self, "_scalar_md", None)
        if md is None:
            off = self.module.add_metadata([ir.MetaDataString(self.module,
                                                              "llvm.loop.vectorize.enable"),
                                            ir.Constant(I1, 0)])
            md = self.module.add_metadata([off])
            md.operands = (md, off)
            self._scalar_md = md
        return md

    def _thread(self, tids, fast):
        """One thread: zeroed locals and stack, then the kernel body."""
        for var, slot in self.slots.items():
            if var.type.is_tile:  # a loop of vector stores (an aggregate store is slow to compile)
                self.cx.tile_fill_zero(slot, var.type)
                continue
            self.b.store(ir.Constant(slot_type(var.type), None), slot)
        if self.uses_stack:
            self.b.store(I64(0), self.stack["top"])
        _BodyLowering(self, tids, fast).block(self.func.body)

    def _extern(self, name, ret, params, var_arg=False):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, params, var_arg=var_arg), name)
        return fn

    def report_fn(self):
        """``kl_report(status, code, site, axis, param, index)``: the first failure wins a
        CAS of the flag from 0 to ``code`` and fills in the rest of the status block."""
        fn = self.module.globals.get("kl_report")
        if fn is not None:
            return fn
        fn = ir.Function(self.module,
                         ir.FunctionType(ir.VoidType(), [PTR, I32, I32, I32, I32, I64]),
                         "kl_report")
        fn.linkage = "internal"
        fn.attributes.add("cold")
        fn.attributes.add("noinline")
        status, code, site, axis, param, index = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        won = b.extract_value(b.cmpxchg(status, I32(0), code, "monotonic", "monotonic"), 1)
        write, out = fn.append_basic_block("write"), fn.append_basic_block("out")
        b.cbranch(won, write, out)
        b.position_at_end(write)
        base = self.offsets["flag"]
        for name, value in (("site", site), ("axis", axis), ("param", param), ("index", index)):
            at = b.gep(status, [I64(self.offsets[name] - base)], source_etype=I8)
            b.store(value, at)
        b.branch(out)
        b.position_at_end(out)
        b.ret_void()
        return fn


class _Private:
    """A worker's private copy of a small array that the kernel only updates with atomics
    of one kind (add/sub, min or max): a stack buffer of PRIVATE_BYTES (plus one spare
    element) filled with the operation's identity, updated with plain loads and stores,
    and flushed into the array at the end of the entry with one atomic per element that
    changed. An index outside the array (possible only with bounds checks off) lands in
    the spare element, which is never flushed."""

    def __init__(self, e: _EntryBuilder, view: ArrayView, kind: str):
        b = e.b
        self.e, self.view, self.kind = e, view, kind
        t = view.type.dtype
        self.scalar = t.scalar
        self.width = getattr(t, "length", 1)
        self.ty = mem_type(t.scalar)
        limit = PRIVATE_BYTES // (t.scalar.nbytes * self.width)
        self.buf = b.alloca(ir.ArrayType(self.ty, (limit + 1) * self.width),
                            name=f"private_{e.func.params[view.param].name}")
        self.buf.align = 32
        count = I64(1)
        for s in view.shape:
            count = b.mul(count, s)
        self.count = count
        there = b.icmp_unsigned("!=", view.ptr, ir.Constant(PTR, None))
        self.fits = b.and_(there, b.icmp_unsigned("<=", count, I64(limit)), name="private_fits")
        self.used = b.select(self.fits, count, I64(0))  # elements held (0: not privatised)
        self.identity = self._identity()
        e_ = b.mul(self.used, I64(self.width))
        self._loop(e_, lambda i: b.store(self.identity, self._slot(i)),
                   "private_init")

    def _slot(self, i):
        return self.e.b.gep(self.buf, [I64(0), i], inbounds=True)

    def _identity(self):
        s, kind = self.scalar, self.kind
        if s.kind == "f":  # -0.0 + x == x for every x; minnum/maxnum ignore a NaN
            return ir.Constant(self.ty, -0.0 if kind == "add" else float("nan"))
        bits = s.bits
        if kind == "add":
            return ir.Constant(self.ty, 0)
        if s.kind == "u":
            return ir.Constant(self.ty, (1 << bits) - 1 if kind == "min" else 0)
        return ir.Constant(self.ty, (1 << (bits - 1)) - 1 if kind == "min" else -(1 << (bits - 1)))

    def _loop(self, n, body, name):
        """for (i = 0; i < n; i++) body(i), n an i64."""
        b, fn = self.e.b, self.e.fn
        pre = b.block
        loop = fn.append_basic_block(name)
        after = fn.append_basic_block(f"{name}_done")
        b.cbranch(b.icmp_signed(">", n, I64(0)), loop, after)
        b.position_at_end(loop)
        i = b.phi(I64, name)
        i.add_incoming(I64(0), pre)
        body(i)
        nxt = b.add(i, I64(1), flags=("nuw", "nsw"))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, n), loop, after)
        b.position_at_end(after)

    def update(self, idx, value, kind):
        """The atomic ``kind`` of ``value`` at the element ``idx`` (i64 indices), privately."""
        b = self.e.b
        flat = idx[0]
        for d in range(1, len(idx)):
            flat = b.add(b.mul(flat, self.view.shape[d]), idx[d])
        flat = b.select(b.icmp_unsigned("<", flat, self.count), flat, self.count)
        parts = [value] if self.width == 1 else \
            [b.extract_element(value, I32(c)) for c in range(self.width)]
        base = b.mul(flat, I64(self.width)) if self.width > 1 else flat
        for c, v in enumerate(parts):
            at = base if c == 0 else b.add(base, I64(c))
            ptr = self._slot(at)
            b.store(self._combine(b.load(ptr, typ=self.ty), v, kind), ptr)

    def _combine(self, acc, v, kind):
        b, s = self.e.b, self.scalar
        if s.kind == "f":
            if kind in ("add", "sub"):  # reassociation lets LLVM vectorise a sum
                v = b.fneg(v) if kind == "sub" else v
                return b.fadd(acc, v, flags=("reassoc", "nsz"))
            return self.e.cx.intr("llvm.minnum" if kind == "min" else "llvm.maxnum", acc, v)
        if kind == "add":
            return b.add(acc, v)
        if kind == "sub":
            return b.sub(acc, v)
        op = {"min": "<", "max": ">"}[kind]
        less = b.icmp_unsigned(op, v, acc) if s.kind == "u" else b.icmp_signed(op, v, acc)
        return b.select(less, v, acc)

    def flush(self):
        """One atomic per element whose private value is not the identity."""
        b, view, s = self.e.b, self.view, self.scalar
        op = {"f": {"add": "fadd", "min": "fmin", "max": "fmax"},
              "i": {"add": "add", "min": "min", "max": "max"},
              "u": {"add": "add", "min": "umin", "max": "umax"}}[s.kind][self.kind]
        bits = ir.IntType(s.bits)

        def element(e):
            address, rest = view.ptr, e
            for d in range(len(view.shape) - 1, -1, -1):
                if d:
                    i, rest = b.urem(rest, view.shape[d]), b.udiv(rest, view.shape[d])
                else:
                    i = rest
                address = b.gep(address, [b.mul(i, view.strides[d])], source_etype=I8)
            for c in range(self.width):
                at = b.add(b.mul(e, I64(self.width)), I64(c)) if self.width > 1 else e
                v = b.load(self._slot(at), typ=self.ty)
                changed = b.icmp_unsigned("!=", b.bitcast(v, bits), b.bitcast(self.identity, bits)) \
                    if s.kind == "f" else b.icmp_unsigned("!=", v, self.identity)
                with b.if_then(changed):
                    ptr = address if c == 0 else b.gep(address, [I64(c * s.nbytes)],
                                                       source_etype=I8)
                    b.atomic_rmw(op, ptr, v, "monotonic")
        self._loop(self.used, element, "private_flush")
