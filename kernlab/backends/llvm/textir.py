"""LLVM IR as text, built cheaply: the part of llvmlite.ir's API that the CPU lowering uses
(types, constants, modules, functions, globals, metadata and an ``IRBuilder``), with the
same names, the same value names and the same instructions, so the lowering code and every
builtin's ``llvm=`` lambda run unchanged on it.

llvmlite.ir builds a general object graph and formats it through layers of descriptors,
which for a kernel of thousands of lines cost more than LLVM's own optimisation of the
result. Here each value carries its reference text (``_ref``: ``%"v.3"``, ``double
0x3FF0...`` without the type), each instruction its text, formatted from its operands'
references when it is made (textir_builder.py), and ``str(module)`` joins the lines; no
import of llvmlite (llvmlite.binding parses the text as before). Names follow llvmlite's
rules (a per-function scope, ``base.N`` for repeats, ``.N`` for unnamed values) so
listings read the same.

Pointers print as the opaque ``ptr``; like llvmlite, a pointer made by ``as_pointer()``,
an ``alloca`` or a global remembers what it points at, so ``load``/``gep`` may omit the
type for those.
"""
from __future__ import annotations

import contextlib
import re
import struct

# ---- types --------------------------------------------------------------------------------


class Type:
    __slots__ = ("_s",)
    null = "zeroinitializer"

    def __str__(self):
        return self._s

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, Type) and self._s == other._s and type(self) is type(other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._s)

    def as_pointer(self, addrspace=0):
        return PointerType(self)

    def __call__(self, value):
        return Constant(self, value)

    def format_constant(self, value) -> str:
        return str(value)


class IntType(Type):
    __slots__ = ("width",)
    null = "0"
    _cache: dict = {}

    def __new__(cls, width):
        t = cls._cache.get(width)
        if t is None:
            t = cls._cache[width] = object.__new__(cls)
            t.width, t._s = width, f"i{width}"
        return t

    @property
    def intrinsic_name(self):
        return self._s

    def format_constant(self, value) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)


def _hex_double(value, pack: str) -> str:
    """LLVM's exact spelling of a float constant: the bits of the double it equals (after
    rounding to the type's precision ``pack``: 'd', 'f' or 'e')."""
    v = float(value)
    if pack != "d":
        v = struct.unpack(pack, struct.pack(pack, v))[0]
    return "0x%016x" % struct.unpack("Q", struct.pack("d", v))[0]


class _FloatBase(Type):
    __slots__ = ()
    null = "0.0"
    _pack = "d"

    def __new__(cls):
        t = cls.__dict__.get("_instance")
        if t is None:
            t = object.__new__(cls)
            t._s = cls._name
            cls._instance = t
        return t

    def format_constant(self, value) -> str:
        return _hex_double(value, self._pack)


class HalfType(_FloatBase):
    __slots__ = ()
    _name, _pack, intrinsic_name = "half", "e", "f16"


class FloatType(_FloatBase):
    __slots__ = ()
    _name, _pack, intrinsic_name = "float", "f", "f32"


class DoubleType(_FloatBase):
    __slots__ = ()
    _name, _pack, intrinsic_name = "double", "d", "f64"


class _Singleton(Type):
    """A type with one instance, whose text is the class's ``_text``."""
    __slots__ = ()
    _text = ""

    def __new__(cls):
        t = cls.__dict__.get("_instance")
        if t is None:
            t = cls._instance = object.__new__(cls)
            t._s = cls._text
        return t


class VoidType(_Singleton):
    __slots__ = ()
    _text = "void"


class LabelType(_Singleton):
    __slots__ = ()
    _text = "label"


class MetaDataType(_Singleton):
    __slots__ = ()
    _text = "metadata"


class PointerType(Type):
    """``ptr``; ``pointee`` (or None) is what a load or GEP without a type reads."""
    __slots__ = ("pointee",)
    null = "null"
    intrinsic_name = "p0"

    def __init__(self, pointee=None, addrspace=0):
        self.pointee, self._s = pointee, "ptr"

    @property
    def is_opaque(self):
        return self.pointee is None

    def __eq__(self, other):
        if not isinstance(other, PointerType):
            return False
        return self.pointee is None or other.pointee is None or self.pointee == other.pointee

    def __hash__(self):
        return hash("ptr")

    def gep(self, i):
        return self.pointee


class _Aggregate(Type):
    __slots__ = ("element", "count")

    def gep(self, i):
        return self.element

    def _elements(self, value) -> str:
        return ", ".join(c._str() for c in
                         (v if isinstance(v, Value) else Constant(self.element, v)
                          for v in value))


class VectorType(_Aggregate):
    __slots__ = ()

    def __init__(self, element, count):
        self.element, self.count = element, count
        self._s = f"<{count} x {element._s}>"

    @property
    def intrinsic_name(self):
        return f"v{self.count}{self.element.intrinsic_name}"

    def format_constant(self, value) -> str:
        return f"<{self._elements(value)}>"


class ArrayType(_Aggregate):
    __slots__ = ()

    def __init__(self, element, count):
        self.element, self.count = element, count
        self._s = f"[{count} x {element._s}]"

    def format_constant(self, value) -> str:
        return f"[{self._elements(value)}]"


class LiteralStructType(Type):
    __slots__ = ("elements",)

    def __init__(self, elements):
        self.elements = tuple(elements)
        self._s = "{" + ", ".join(e._s for e in self.elements) + "}"

    def gep(self, i):
        return self.elements[i.constant]

    def format_constant(self, value) -> str:
        return "{" + ", ".join(v._str() if isinstance(v, Value) else Constant(t, v)._str()
                               for t, v in zip(self.elements, value)) + "}"


class FunctionType(Type):
    __slots__ = ("return_type", "args", "var_arg")

    def __init__(self, return_type, args, var_arg=False):
        self.return_type, self.args, self.var_arg = return_type, tuple(args), var_arg
        params = ", ".join(a._s for a in self.args)
        if var_arg:
            params = params + ", ..." if params else "..."
        self._s = f"{return_type._s} ({params})"


# ---- values -------------------------------------------------------------------------------

class _UndefinedType:
    def __repr__(self):
        return "Undefined"


Undefined = _UndefinedType()
_VALID = set(range(0x20, 0x7f)) - {ord('"'), ord("\\")}  # printed as is in c"..."
_ESC = [chr(c) if c in _VALID else "\\%02x" % c for c in range(256)]


def _escape(text) -> str:
    if isinstance(text, str):
        text = text.encode()
    return "".join([_ESC[c] for c in text])


class Value:
    """Anything an instruction can take: ``type`` and ``_ref`` (its text in an operand)."""
    __slots__ = ("type", "_ref")

    def get_reference(self) -> str:
        return self._ref

    def _str(self) -> str:  # "type ref", as an operand with its type
        return f"{self.type._s} {self._ref}"

    def __str__(self):
        return self._str()


class Constant(Value):
    __slots__ = ("constant",)

    def __init__(self, typ, constant):
        self.type, self.constant = typ, constant
        if constant is None:
            self._ref = typ.null
        elif constant is Undefined:
            self._ref = "undef"
        elif isinstance(constant, (bytearray, bytes)):
            self._ref = f'c"{_escape(constant)}"'
        else:
            self._ref = typ.format_constant(constant)

    def __eq__(self, other):
        return isinstance(other, Constant) and self.type == other.type \
            and self._ref == other._ref

    def __hash__(self):
        return hash(self._ref)


class _Scope:
    """Value and block names of one function (llvmlite's NameScope rules)."""
    __slots__ = ("used", "counts", "unnamed_count")

    def __init__(self):
        self.used, self.counts, self.unnamed_count = {""}, {}, 0

    def register(self, name: str) -> str:
        if name in self.used:
            if not name:
                return self.unnamed()
            base, counts, used = name, self.counts, self.used
            while name in used:
                n = counts.get(base, 0) + 1
                counts[base] = n
                name = f"{base}.{n}"
        self.used.add(name)
        return name

    def unnamed(self) -> str:
        """``register("")``: the next free ``.N`` (most instructions are unnamed)."""
        n = self.unnamed_count + 1
        name, used = f".{n}", self.used
        while name in used:
            n += 1
            name = f".{n}"
        self.unnamed_count = n
        used.add(name)
        return name


def _quote(prefix: str, name: str) -> str:
    if "\\" in name or '"' in name:
        name = name.replace("\\", "\\5c").replace('"', "\\22")
    return f'{prefix}"{name}"'


class NamedValue(Value):
    __slots__ = ("_name", "_scope")

    def _get_name(self):
        return self._name

    def _set_name(self, name):
        self._name = name = self._scope.register(name)
        self._ref = _quote("%", name)

    name = property(_get_name, _set_name)


class Argument(NamedValue):
    __slots__ = ()

    def __init__(self, scope, typ):
        self.type, self._scope = typ, scope
        self._set_name("")


class Block(NamedValue):
    __slots__ = ("function", "instructions", "terminator")

    def __init__(self, function, name=""):
        self.type, self._scope, self.function = _LABEL, function.scope, function
        self.instructions: list = []
        self.terminator = None
        self._set_name(name)

    @property
    def is_terminated(self):
        return self.terminator is not None

    @property
    def module(self):
        return self.function.module

    def _label(self) -> str:
        name = self._name
        return name if _SIMPLE.fullmatch(name) else _quote("", name)


_SIMPLE = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*")
_LABEL = LabelType()


class MetaDataString(Value):
    __slots__ = ("string",)

    def __init__(self, module, string):
        self.type, self.string = MetaDataType(), string
        self._ref = f'!"{_escape(string)}"'

    def _str(self):
        return self._ref


class MDValue(Value):
    __slots__ = ("operands", "index")

    def __init__(self, index, operands):
        self.type, self.index, self.operands = MetaDataType(), index, tuple(operands)
        self._ref = f"!{index}"

    def _line(self) -> str:
        return f"{self._ref} = !{{ {', '.join(o._str() for o in self.operands)} }}"

    def _str(self):
        return self._ref


class _GlobalValue(Value):
    __slots__ = ("name", "module", "linkage", "value_type", "__weakref__")

    def _register(self, module, name, value_type):
        if name in module.globals:
            raise NameError(f"duplicate global name {name!r}")
        self.name, self.module, self.linkage, self.value_type = name, module, "", value_type
        self.type = PointerType(value_type)
        self._ref = _quote("@", name)
        module.globals[name] = self
        module.scope.used.add(name)


class GlobalVariable(_GlobalValue):
    __slots__ = ("initializer", "global_constant", "unnamed_addr", "align")

    def __init__(self, module, typ, name, addrspace=0):
        self._register(module, name, typ)
        self.initializer, self.global_constant, self.unnamed_addr, self.align = \
            None, False, False, None

    def _text(self) -> str:
        linkage = self.linkage or ("external" if self.initializer is None else "")
        out = [linkage + " " if linkage else "", "unnamed_addr " if self.unnamed_addr else "",
               "constant " if self.global_constant else "global ", self.value_type._s]
        if self.initializer is not None:
            out.append(" " + self.initializer._ref)
        elif linkage not in ("external", "extern_weak"):
            out.append(" undef")
        if self.align is not None:
            out.append(f", align {self.align}")
        return f"{self._ref} = {''.join(out)}"


class Function(_GlobalValue):
    __slots__ = ("ftype", "scope", "blocks", "args", "attributes", "calling_convention")

    def __init__(self, module, ftype, name):
        self._register(module, name, ftype)
        self.ftype, self.scope, self.blocks = ftype, _Scope(), []
        self.attributes: set = set()
        self.calling_convention = ""
        self.args = tuple(Argument(self.scope, t) for t in ftype.args)
        self.scope.register("")  # (llvmlite's return-value placeholder takes a name)

    @property
    def function_type(self):
        return self.ftype

    @property
    def entry_basic_block(self):
        return self.blocks[0]

    @property
    def basic_blocks(self):
        return self.blocks

    def append_basic_block(self, name=""):
        block = Block(self, name)
        self.blocks.append(block)
        return block

    def _text(self) -> str:
        ft = self.ftype
        attrs = "".join(" " + a for a in sorted(self.attributes))
        head = "define" if self.blocks else "declare"
        if self.linkage:
            head += " " + self.linkage
        if self.blocks:
            params = ", ".join(a._str() for a in self.args)
        else:
            params = ", ".join(t._s for t in ft.args)
        if ft.var_arg:
            params = params + ", ..." if params else "..."
        out = [f"{head} {ft.return_type._s} {self._ref}({params}){attrs}"]
        if self.blocks:
            out.append("{")
            for block in self.blocks:
                out.append(block._label() + ":")
                out += [i._line() for i in block.instructions]
            out.append("}")
        return "\n".join(out)


class InlineAsm(Value):
    __slots__ = ("function_type",)

    def __init__(self, ftype, asm, constraint, side_effect=False):
        self.type, self.function_type = ftype.return_type, ftype
        effect = "sideeffect " if side_effect else ""
        self._ref = f'asm {effect}"{asm}", "{constraint}"'


class Module:
    def __init__(self, name="", context=None):
        self.name, self.triple, self.data_layout = name, "", ""
        self.globals: dict = {}
        self.scope = _Scope()
        self.metadata: list = []
        self._md_cache: dict = {}

    def get_global(self, name):
        return self.globals[name]

    def get_unique_name(self, name=""):
        return self.scope.register(name)

    def add_metadata(self, operands) -> MDValue:
        key = tuple(o._str() for o in operands)
        md = self._md_cache.get(key)
        if md is None:
            md = self._md_cache[key] = MDValue(len(self.metadata), operands)
            self.metadata.append(md)
        return md

    def declare_intrinsic(self, intrinsic, tys=(), fnty=None):
        suffixes = [tys[0].intrinsic_name] if intrinsic in ("llvm.cttz", "llvm.ctlz",
                                                             "llvm.fma") \
            else [t.intrinsic_name for t in tys]
        name = ".".join([intrinsic] + suffixes)
        if name in self.globals:
            return self.globals[name]
        if fnty is None:
            if intrinsic in ("llvm.memcpy", "llvm.memmove") and len(tys) == 3:
                fnty = FunctionType(VoidType(), list(tys) + [IntType(1)])
            elif len(tys) == 1:
                fnty = FunctionType(tys[0], tys)
            else:
                raise NotImplementedError(f"intrinsic {intrinsic!r} needs its function type")
        return Function(self, fnty, name)

    def release(self) -> None:
        """Break the cycles between blocks and their instructions (each names its block)
        once the module's text is made: its instructions are then freed as soon as the
        lowering drops them, rather than by a collection of the cyclic collector that walks
        every one of them (a 4,000-line adjoint lowers to 90,000)."""
        for g in self.globals.values():
            if isinstance(g, Function):
                for block in g.blocks:
                    block.instructions = []
                g.blocks = []

    def __str__(self):
        lines = [f'; ModuleID = "{self.name}"', f'target triple = "{self.triple}"',
                 f'target datalayout = "{self.data_layout}"', ""]
        lines += [g._text() for g in self.globals.values()]
        lines += [md._line() for md in self.metadata]
        return "\n".join(lines) + "\n"

    __repr__ = __str__


from .textir_builder import IRBuilder, Instruction  # noqa: E402,F401  (the instructions)
