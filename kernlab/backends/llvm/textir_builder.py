"""The instructions of textir and the ``IRBuilder`` that appends them (llvmlite.ir's builder
API, the part the lowering uses).

An instruction's text (its ``body``: what follows ``%"name" =``) is formatted when it is
made, from its operands' references: a 4,000-line adjoint makes 75,000 instructions, and
keeping a format and an operand tuple for each, to format them all at the end, was a good
part of the lowering's time.
So a value may be renamed (``v.name = ...``) only before it is used as an operand, as the
lowering does (entry.py names the entry's arguments and parameters as it reads them); a
later rename would leave its uses naming the old value, and LLVM's parser would reject the
module. Only what changes after an instruction is made is formatted with the module: a
phi's incoming values, an alloca's alignment and the metadata of a branch."""
from __future__ import annotations

import contextlib

from .textir import (Constant, FunctionType, IntType, LiteralStructType, NamedValue,
                     PointerType, VectorType, VoidType, _quote)

_I1 = IntType(1)
_VOID = VoidType()
_CMP = {">": "gt", "<": "lt", "==": "eq", "!=": "ne", ">=": "ge", "<=": "le"}


class Instruction(NamedValue):
    """An instruction with a result: ``body`` is its text after ``%"name" = ``."""
    __slots__ = ("parent", "body", "metadata")
    void = False

    def __init__(self, block, typ, body, name=""):
        self.type, self.parent, self.body, self.metadata = typ, block, body, None
        self._scope = scope = block._scope  # (the function's)
        self._name = name = scope.register(name) if name else scope.unnamed()
        self._ref = f'%"{name}"' if not ("\\" in name or '"' in name) else _quote("%", name)

    @property
    def function(self):
        return self.parent.function

    @property
    def module(self):
        return self.parent.function.module

    def set_metadata(self, name, node):
        if self.metadata is None:
            self.metadata = {}
        self.metadata[name] = node

    def set_weights(self, weights):
        from .textir import MetaDataString
        module = self.module
        md = module.add_metadata([MetaDataString(module, "branch_weights")]
                                 + [Constant(IntType(32), w) for w in weights])
        self.set_metadata("prof", md)

    def _body(self) -> str:
        return self.body

    def _line(self) -> str:
        if self.metadata is None and type(self) is Instruction:
            return f"  {self._ref} = {self.body}"
        body = self._body()
        if self.metadata:
            body += "".join(f", !{k} {v._ref}" for k, v in self.metadata.items())
        return f"  {body}" if self.void else f"  {self._ref} = {body}"


class VoidInstr(Instruction):
    """An instruction without a result (a store, a branch, a call of a void function). It
    still takes a name (llvmlite's numbering of unnamed values counts it)."""
    __slots__ = ()
    void = True

    def _line(self) -> str:
        if self.metadata is None:
            return "  " + self.body
        return "  " + self.body + "".join(f", !{k} {v._ref}"
                                          for k, v in self.metadata.items())


class PhiInstr(Instruction):
    __slots__ = ("incomings",)

    def add_incoming(self, value, block):
        self.incomings.append((value, block))

    def _body(self) -> str:
        incs = ", ".join(f"[{v._ref}, {b._ref}]" for v, b in self.incomings)
        return f"phi {self.type._s} {incs}"


class AllocaInstr(Instruction):
    __slots__ = ("allocated_type", "align")

    def _body(self) -> str:
        return self.body if self.align is None else f"{self.body}, align {self.align}"


class Comment(VoidInstr):
    __slots__ = ()

    def _line(self) -> str:
        return "  " + self.body


def _label_suffix(label: str, suffix: str) -> str:
    return label[:25] + ".." + suffix if len(label) > 50 else label + suffix


def _binop(opname):
    def op(self, lhs, rhs, name="", flags=()):
        t = lhs.type
        if t is not rhs.type and t != rhs.type:
            raise ValueError(f"Operands must be the same type, got ({t}, {rhs.type})")
        head = " ".join((opname,) + tuple(flags)) if flags else opname
        return self._add(Instruction(self._block, t, f"{head} {t._s} {lhs._ref}, {rhs._ref}",
                                     name))
    op.__name__ = opname
    return op


def _castop(opname):
    def op(self, val, typ, name=""):
        if val.type == typ:
            return val
        return self._add(Instruction(self._block, typ,
                                     f"{opname} {val.type._s} {val._ref} to {typ._s}", name))
    op.__name__ = opname
    return op


class IRBuilder:
    def __init__(self, block=None):
        self._block, self._anchor = None, 0
        if block is not None:
            self.position_at_end(block)

    @property
    def block(self):
        return self._block

    basic_block = block

    @property
    def function(self):
        return self._block.function

    @property
    def module(self):
        return self._block.function.module

    def position_at_end(self, block):
        self._block, self._anchor = block, len(block.instructions)

    def position_at_start(self, block):
        self._block, self._anchor = block, 0

    def position_before(self, instr):
        self._block = instr.parent
        self._anchor = self._block.instructions.index(instr)

    def position_after(self, instr):
        self._block = instr.parent
        self._anchor = self._block.instructions.index(instr) + 1

    def append_basic_block(self, name=""):
        return self._block.function.append_basic_block(name)

    def _add(self, instr):
        instructions = self._block.instructions
        if self._anchor == len(instructions):
            instructions.append(instr)
        else:
            instructions.insert(self._anchor, instr)
        self._anchor += 1
        return instr

    def _terminate(self, instr):
        if self._block.terminator is not None:
            raise AssertionError(f"block {self._block.name!r} is already terminated")
        self._add(instr)
        self._block.terminator = instr
        return instr

    # ---- arithmetic, logic, comparisons ------------------------------------------------

    add, sub, mul = _binop("add"), _binop("sub"), _binop("mul")
    sdiv, udiv, srem, urem = _binop("sdiv"), _binop("udiv"), _binop("srem"), _binop("urem")
    shl, lshr, ashr = _binop("shl"), _binop("lshr"), _binop("ashr")
    and_, or_, xor = _binop("and"), _binop("or"), _binop("xor")
    fadd, fsub, fmul, fdiv, frem = (_binop("fadd"), _binop("fsub"), _binop("fmul"),
                                    _binop("fdiv"), _binop("frem"))

    def not_(self, value, name=""):
        t = value.type
        ones = Constant(t, (-1,) * t.count) if isinstance(t, VectorType) else Constant(t, -1)
        return self.xor(value, ones, name=name)

    def neg(self, value, name=""):
        return self.sub(Constant(value.type, 0), value, name=name)

    def fneg(self, arg, name="", flags=()):
        head = " ".join(("fneg",) + tuple(flags)) if flags else "fneg"
        return self._add(Instruction(self._block, arg.type,
                                     f"{head} {arg.type._s} {arg._ref}", name))

    def _cmp(self, kind, op, lhs, rhs, name):
        t = lhs.type
        res = VectorType(_I1, t.count) if isinstance(t, VectorType) else _I1
        return self._add(Instruction(self._block, res,
                                     f"{kind} {op} {t._s} {lhs._ref}, {rhs._ref}", name))

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        op = _CMP[cmpop]
        return self._cmp("icmp", op if cmpop in ("==", "!=") else "s" + op, lhs, rhs, name)

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        op = _CMP[cmpop]
        return self._cmp("icmp", op if cmpop in ("==", "!=") else "u" + op, lhs, rhs, name)

    def fcmp_ordered(self, cmpop, lhs, rhs, name="", flags=()):
        return self._cmp("fcmp", "o" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs,
                         name)

    def fcmp_unordered(self, cmpop, lhs, rhs, name="", flags=()):
        return self._cmp("fcmp", "u" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs,
                         name)

    def select(self, cond, lhs, rhs, name="", flags=()):
        return self._add(Instruction(
            self._block, lhs.type, f"select {cond.type._s} {cond._ref}, "
                                   f"{lhs.type._s} {lhs._ref}, {rhs.type._s} {rhs._ref}",
            name))

    # ---- casts -------------------------------------------------------------------------

    trunc, zext, sext = _castop("trunc"), _castop("zext"), _castop("sext")
    fptrunc, fpext, bitcast = _castop("fptrunc"), _castop("fpext"), _castop("bitcast")
    fptoui, fptosi = _castop("fptoui"), _castop("fptosi")
    uitofp, sitofp = _castop("uitofp"), _castop("sitofp")
    ptrtoint, inttoptr = _castop("ptrtoint"), _castop("inttoptr")

    # ---- memory ------------------------------------------------------------------------

    def alloca(self, typ, size=None, name=""):
        body = f"alloca {typ._s}"
        if size is not None:
            size = size if hasattr(size, "_ref") else Constant(IntType(32), size)
            body += f", {size.type._s} {size._ref}"
        instr = AllocaInstr(self._block, PointerType(typ), body, name)
        instr.allocated_type, instr.align = typ, None
        return self._add(instr)

    @staticmethod
    def _pointee(ptr, typ):
        if typ is not None:
            return typ
        if not isinstance(ptr.type, PointerType):
            raise TypeError(f"cannot load from a value of type {ptr.type}: not a pointer")
        if ptr.type.pointee is None:
            raise ValueError("Load lacks type.")
        return ptr.type.pointee

    def load(self, ptr, name="", align=None, typ=None):
        if typ is None:
            typ = self._pointee(ptr, None)
        body = f"load {typ._s}, ptr {ptr._ref}" if align is None else \
            f"load {typ._s}, ptr {ptr._ref}, align {align}"
        return self._add(Instruction(self._block, typ, body, name))

    def load_atomic(self, ptr, ordering, align, name="", typ=None):
        typ = self._pointee(ptr, typ)
        return self._add(Instruction(
            self._block, typ, f"load atomic {typ._s}, ptr {ptr._ref} {ordering}, align {align}",
            name))

    def store(self, value, ptr, align=None):
        if not isinstance(ptr.type, PointerType):
            raise TypeError(f"cannot store to a value of type {ptr.type}: not a pointer")
        body = f"store {value.type._s} {value._ref}, ptr {ptr._ref}" if align is None else \
            f"store {value.type._s} {value._ref}, ptr {ptr._ref}, align {align}"
        return self._add(VoidInstr(self._block, _VOID, body))

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if source_etype is not None:
            typ = ptr.type
        else:
            source_etype = self._pointee(ptr, None)
            typ = ptr.type
            for i in indices:
                typ = typ.gep(i)
            typ = PointerType(typ)
        op = "getelementptr inbounds" if inbounds else "getelementptr"
        idx = "".join(f", {i.type._s} {i._ref}" for i in indices)
        return self._add(Instruction(self._block, typ,
                                     f"{op} {source_etype._s}, ptr {ptr._ref}{idx}", name))

    def atomic_rmw(self, op, ptr, val, ordering, name=""):
        return self._add(Instruction(
            self._block, val.type,
            f"atomicrmw {op} ptr {ptr._ref}, {val.type._s} {val._ref} {ordering}", name))

    def cmpxchg(self, ptr, cmp, val, ordering, failordering=None, name=""):
        t = val.type
        return self._add(Instruction(
            self._block, LiteralStructType([t, _I1]),
            f"cmpxchg ptr {ptr._ref}, {t._s} {cmp._ref}, {t._s} {val._ref} {ordering} "
            f"{failordering or ordering}", name))

    # ---- vectors and aggregates --------------------------------------------------------

    def extract_element(self, vector, idx, name=""):
        t = vector.type
        return self._add(Instruction(
            self._block, t.element,
            f"extractelement {t._s} {vector._ref}, {idx.type._s} {idx._ref}", name))

    def insert_element(self, vector, value, idx, name=""):
        t = vector.type
        return self._add(Instruction(
            self._block, t, f"insertelement {t._s} {vector._ref}, {value.type._s} "
                            f"{value._ref}, {idx.type._s} {idx._ref}", name))

    def shuffle_vector(self, vector1, vector2, mask, name=""):
        t = VectorType(vector1.type.element, mask.type.count)
        return self._add(Instruction(
            self._block, t, f"shufflevector {vector1.type._s} {vector1._ref}, "
                            f"{vector2.type._s} {vector2._ref}, {mask.type._s} {mask._ref}",
            name))

    def extract_value(self, agg, idx, name=""):
        idx = list(idx) if isinstance(idx, (tuple, list)) else [idx]
        t = agg.type
        for i in idx:
            t = t.elements[i] if isinstance(t, LiteralStructType) else t.element
        at = ", ".join(str(i) for i in idx)
        return self._add(Instruction(self._block, t,
                                     f"extractvalue {agg.type._s} {agg._ref}, {at}", name))

    def insert_value(self, agg, value, idx, name=""):
        idx = list(idx) if isinstance(idx, (tuple, list)) else [idx]
        at = ", ".join(str(i) for i in idx)
        return self._add(Instruction(
            self._block, agg.type,
            f"insertvalue {agg.type._s} {agg._ref}, {value.type._s} {value._ref}, {at}",
            name))

    def phi(self, typ, name="", flags=()):
        instr = PhiInstr(self._block, typ, "", name)
        instr.incomings = []
        return self._add(instr)

    # ---- calls and control flow ----------------------------------------------------------

    def call(self, fn, args, name="", cconv=None, tail=False, fastmath=(), attrs=(),
             arg_attrs=None):
        fnty = fn.function_type
        if len(args) != len(fnty.args) and not (fnty.var_arg and len(args) > len(fnty.args)):
            raise TypeError(f"{fn._ref} takes {len(fnty.args)} arguments, got {len(args)}")
        ret = fnty.return_type
        shown = fnty._s if fnty.var_arg else ret._s
        params = ", ".join([f"{a.type._s} {a._ref}" for a in args])
        return self._add((VoidInstr if ret is _VOID else Instruction)(
            self._block, ret, f"call {shown} {fn._ref}({params})", name))

    def comment(self, text):
        if "\n" in text:
            raise ValueError("a comment cannot contain a new line")
        return self._add(Comment(self._block, _VOID, "; " + text))

    def branch(self, target):
        return self._terminate(VoidInstr(self._block, _VOID, f"br label {target._ref}"))

    def cbranch(self, cond, truebr, falsebr):
        return self._terminate(VoidInstr(
            self._block, _VOID,
            f"br {cond.type._s} {cond._ref}, label {truebr._ref}, label {falsebr._ref}"))

    def ret_void(self):
        return self._terminate(VoidInstr(self._block, _VOID, "ret void"))

    def ret(self, value):
        return self._terminate(VoidInstr(self._block, _VOID,
                                         f"ret {value.type._s} {value._ref}"))

    def unreachable(self):
        return self._terminate(VoidInstr(self._block, _VOID, "unreachable"))

    @contextlib.contextmanager
    def _branch_helper(self, enter, exit_):
        self.position_at_end(enter)
        yield exit_
        if self._block.terminator is None:
            self.branch(exit_)

    @contextlib.contextmanager
    def if_then(self, pred, likely=None):
        bb = self._block
        then = self.append_basic_block(_label_suffix(bb.name, ".if"))
        end = self.append_basic_block(_label_suffix(bb.name, ".endif"))
        br = self.cbranch(pred, then, end)
        if likely is not None:
            br.set_weights([99, 1] if likely else [1, 99])
        with self._branch_helper(then, end):
            yield end
        self.position_at_end(end)

    @contextlib.contextmanager
    def if_else(self, pred, likely=None):
        bb = self._block
        then = self.append_basic_block(_label_suffix(bb.name, ".if"))
        other = self.append_basic_block(_label_suffix(bb.name, ".else"))
        end = self.append_basic_block(_label_suffix(bb.name, ".endif"))
        br = self.cbranch(pred, then, other)
        if likely is not None:
            br.set_weights([99, 1] if likely else [1, 99])
        yield self._branch_helper(then, end), self._branch_helper(other, end)
        self.position_at_end(end)


__all__ = ["IRBuilder", "Instruction", "FunctionType"]
