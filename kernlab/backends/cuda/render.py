"""Typed IR -> CUDA C++ (``render_cuda``): one readable translation unit per kernel variant.

The kernel is ``extern "C" __global__ void <name>_<fwd|adj>(params..., kl_status* status,
kl_dims dims)``. A grid-stride loop walks the flattened launch grid; each iteration is one
kernlab thread: its locals start at zero, then the body runs. Every Var and Value becomes a
C local named after the user's variable plus a unique suffix (``x_1``, ``adj_x_2``); the
user's source line is echoed as ``// file:line: text`` above the code it produced, and an
adjoint kernel is split into ``// ---- forward replay ----`` and ``// ---- reverse ----``
sections, the reverse one echoing lines as ``// adj: file:line: text``.

Arrays arrive as ``array_t<T>`` (pointer, shape[4], byte strides[4]). A checked access
is preceded by ``if (!kl_check(status, site, param, array, indices...)) return;``: the
first failure is recorded in the status word and the thread ends, as the interpreter's
raise ends the launch. An absent (null) gradient array is skipped: a load yields zero.
Everything the builtins' ``cuda=`` spellings call is in kernlab_cuda.h.
"""
from __future__ import annotations

import linecache
import os
import re

import numpy as np

from ...errors import KernelError
from ...ir.nodes import Block, Function, Instr, Op, Value
from ...types import ArrayType, Matrix, Type, Vector, float32, float64
from .header import HEADER_NAME, STATUS_NOT_FINITE

INDENT = "    "

# Names a parameter must not take: C++ keywords and what the header or the entry defines.
RESERVED = set("""
alignas alignof and asm auto bool break case catch char class const constexpr continue
decltype default delete do double else enum explicit export extern false float for friend
goto if inline int long mutable namespace new noexcept not nullptr operator or private
protected public register return short signed sizeof static struct switch template this
throw true try typedef typename union unsigned using virtual void volatile while xor
float16 bfloat16 float32 float64 int8 uint8 int16 uint16 int32 int64 uint32 uint64 vec mat array_t
status dims flat stack kl printf malloc free memcpy min max abs clamp lerp smoothstep dot cross
length length_sq normalize outer transpose determinant sin cos tan asin acos atan atan2 sinh
cosh tanh exp log log2 log10 sqrt pow floor ceil round trunc erf erfc copysign isfinite when
blockIdx blockDim threadIdx gridDim kl_first kl_stride vec2 vec3 vec4 vec2d vec3d vec4d mat22 mat33 mat44 mat22d mat33d mat44d
""".split())


def render_cuda(func: Function, bounds_check: bool = True, verify_fp: bool = False) -> str:
    """The CUDA C++ source of one kernel (forward or adjoint) as a complete translation unit
    that includes ``kernlab_cuda.h`` (header.HEADER). With ``verify_fp`` every store of a
    float value checks it for NaN and Inf (kl.config.verify_fp)."""
    return _Renderer(func, bounds_check, verify_fp).render()


def entry_name(func: Function) -> str:
    """The kernel's symbol in the PTX: ``<name>_fwd`` or ``<name>_adj``."""
    kind = "adj" if func.is_adjoint else "fwd"
    if getattr(func, "is_tangent", False):
        kind = "adjtan" if func.is_adjoint else "tan"
    return f"{_identifier(func.name)}_{kind}"


# ---- types and literals ------------------------------------------------------------------

# The vector and matrix names kernlab_cuda.h typedefs; every other one (vec3i, quatd, ...)
# is spelled as its template.
HEADER_TYPEDEFS = frozenset(f"{kind}{n}{suffix}" for kind, ns in (("vec", "234"),
                                                              ("mat", ("22", "33", "44")))
                            for n in ns for suffix in ("", "d"))


def ctype(t: Type) -> str:
    """The C++ spelling of a kernlab type (the header's typedefs where there is one)."""
    if isinstance(t, ArrayType):
        return f"array_t<{ctype(t.dtype)}>"
    if t.is_scalar:
        return "bool" if t.kind == "b" else t.name  # float16: the header's half type
    if t.is_tile:  # all its scalars in one value (kernlab_cuda.h, tiles)
        return f"vec<{t.length}, {ctype(t.scalar)}>"
    short = repr(t)
    if short in HEADER_TYPEDEFS:
        return short  # vec3, mat33d, ...
    if t.is_vector:
        return f"vec<{t.length}, {ctype(t.dtype)}>"
    return f"mat<{t.rows}, {t.cols}, {ctype(t.dtype)}>"


def scalar_literal(value, t) -> str:
    value = t.np.type(value)
    if t.kind == "b":
        return "true" if value else "false"
    if t.kind == "f":
        c = ctype(t)
        if np.isnan(value):
            return f"kl_nan<{c}>()"
        if np.isinf(value):
            return f"{'-' if value < 0 else ''}kl_inf<{c}>()"
        text = str(value) if t.bits == 32 else repr(float(value))
        if not any(ch in text for ch in ".en"):
            text += ".0"
        return text + ("f" if t.bits == 32 else "")
    v = int(value)
    if t.kind == "u":
        return f"{v}u"
    if t.bits == 32:
        return "(-2147483647 - 1)" if v == -2**31 else str(v)
    return "(-9223372036854775807LL - 1)" if v == -2**63 else f"{v}LL"


def literal(value, t: Type) -> str:
    if t.is_scalar:
        return scalar_literal(value, t)
    flat = np.asarray(value, t.scalar.np).reshape(-1)
    if not flat.any() and not np.signbit(flat).any():
        return f"{ctype(t)}()"
    if (flat == flat[0]).all() and not np.isnan(flat).any():
        return f"{ctype(t)}({scalar_literal(flat[0], t.scalar)})"
    return f"{ctype(t)}({', '.join(scalar_literal(x, t.scalar) for x in flat)})"


def zero(t: Type) -> str:
    return "false" if t.is_scalar and t.kind == "b" else ("0" if t.is_scalar else f"{ctype(t)}()")


def _identifier(name: str) -> str:
    text = re.sub(r"[^0-9A-Za-z_]", "_", name.encode("ascii", "replace").decode())
    if not text or text[0].isdigit():
        text = "v" + text
    return text


def _unwrap(expr: str) -> str:
    """Drop one pair of parentheses around a whole expression: ``(a + b)`` -> ``a + b``."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return expr
    depth = 0
    for k, ch in enumerate(expr):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(expr) - 1:
            return expr
    return expr[1:-1]


# ---- printing ---------------------------------------------------------------------------

_PRINTF_SPEC = re.compile(r"%([-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?)(?:hh|h|ll|l|L|q|j|z|t)?"
                          r"([diouxXeEfFgGcrsa%])")


def _print_parts(t: Type, expr: str) -> tuple[str, list[str]]:
    """The printf conversion of one value as ``print`` shows it, and its arguments."""
    s = t.scalar
    if t.is_scalar:
        comps = [expr]
    elif t.is_vector:
        comps = [f"{expr}.c[{k}]" for k in range(t.length)]
    else:
        comps = [f"{expr}.r[{i}].c[{j}]" for i in range(t.rows) for j in range(t.cols)]
    if s.kind == "f":
        spec, args = "%g", [f"(double){c}" for c in comps]
    elif s.kind == "b":
        spec, args = "%s", [f'({c} ? "True" : "False")' for c in comps]
    elif s.kind == "u":
        spec, args = "%u", comps
    else:
        spec, args = "%lld", [f"(long long){c}" for c in comps]
    if t.is_scalar:
        return spec, args
    return "[" + ", ".join([spec] * len(comps)) + "]", args


def _printf(fmt: str, values: list[tuple[Type, str]]) -> tuple[str, list[str]]:
    """A C format and arguments for kernlab's printf (Python %-formatting rules)."""
    out, args, pending = [], [], list(values)
    pos = 0
    for m in _PRINTF_SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, conv = m.group(1), m.group(2)
        if conv == "%":
            out.append("%%")
            continue
        if not pending:
            out.append(m.group(0))
            continue
        t, expr = pending.pop(0)
        if not t.is_scalar or conv in "rs":
            spec, extra = _print_parts(t, expr)
            out.append(spec)
            args += extra
        elif conv in "di":
            out.append(f"%{flags}lld")
            args.append(f"(long long){expr}")
        elif conv in "ouxX":
            out.append(f"%{flags}ll{conv}")
            args.append(f"(unsigned long long){expr}")
        elif conv == "c":
            out.append(f"%{flags}c")
            args.append(f"(int){expr}")
        else:
            out.append(f"%{flags}{conv}")
            args.append(f"(double){expr}")
    out.append(fmt[pos:])
    return "".join(out), args


def _c_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\t", "\\t").replace("\r", "\\r")
    return '"' + escaped.replace("??", "?\\?") + '"'


# ---- the renderer -----------------------------------------------------------------------

class _Renderer:
    def __init__(self, func: Function, bounds_check: bool, verify_fp: bool = False):
        self.func, self.checks, self.verify_fp = func, bounds_check, verify_fp
        self.lines: list[str] = []
        self.depth = 0
        self.names: dict = {}
        self.used: set = set()
        self.counters: dict = {}
        self.consts: dict = {}
        self.last_line = None
        self.adj_comments = False
        self.param_index = {p.value: k for k, p in enumerate(func.params)}

    # ---- names ------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        base = _identifier(base)
        if base.startswith("adj_"):  # adjoint Values are named adj_<name><id>: drop the id
            base = re.sub(r"(?<=[A-Za-z_])\d{2,}$", "", base)
        while True:
            n = self.counters.get(base, 0) + 1
            self.counters[base] = n
            name = f"{base}_{n}"
            if name not in self.used:
                self.used.add(name)
                return name

    def name(self, key) -> str:
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = self.fresh(key.name or "t")
        return name

    def declare(self, value: Value) -> str:
        """``T name`` for a value's definition."""
        return f"{ctype(value.type)} {self.name(value)}"

    # ---- output -----------------------------------------------------------------------

    def emit(self, text: str):
        self.lines.append(INDENT * self.depth + text if text else "")

    def comment_for(self, loc):
        key = (loc.file, loc.line)
        if key == self.last_line:
            return
        self.last_line = key
        where = loc.file if loc.file.startswith("<") else os.path.basename(loc.file)
        text = linecache.getline(loc.file, loc.line).strip()
        text = text.rstrip("\\").rstrip()  # a trailing backslash would continue the comment
        prefix = "adj: " if self.adj_comments else ""
        self.emit(f"// {prefix}{where}:{loc.line}: {text}".rstrip())

    def region(self, block: Block):
        self.depth += 1
        self.block(block)
        self.depth -= 1
        self.last_line = None

    # ---- the translation unit ------------------------------------------------------------

    def render(self) -> str:
        func = self.func
        params = []
        for p in func.params:
            pname = _identifier(p.name)
            if pname in RESERVED or pname.startswith("kl_") or pname in self.used:
                pname += "_"
            self.used.add(pname)
            self.names[p.value] = pname
            params.append(f"{ctype(p.type)} {pname}")
        params += ["kl_status* status", "kl_dims dims"]
        kind = "adjoint" if func.is_adjoint else "forward"
        if getattr(func, "is_tangent", False):
            kind = "tangent of the adjoint" if func.is_adjoint else "tangent"
        where = f"{os.path.basename(func.loc.file)}:{func.loc.line}"
        checks = "on" if self.checks else "off"
        if self.verify_fp:
            checks += "; every float store is checked for NaN and Inf (verify_fp)"
        self.lines += [
            f"// CUDA C++ for kernel '{func.name}' ({kind}), generated by kernlab from {where}.",
            f"// Bounds checks: {checks}. Support types and functions: {HEADER_NAME}",
            "// (kernlab/backends/cuda/kernlab_cuda.h). One loop iteration = one kernlab thread.",
            f'#include "{HEADER_NAME}"',
            "",
            "namespace kl {",
            "",
        ]
        head = f'extern "C" __global__ void {entry_name(func)}('
        self.lines.append(head + _wrap_params(params, len(head)) + ")")
        self.lines.append("{")
        self.depth = 1
        self.emit("const int64 kl_first = int64(blockIdx.x) * blockDim.x + threadIdx.x;")
        self.emit("const int64 kl_stride = int64(gridDim.x) * blockDim.x;")
        self.emit("for (int64 flat = kl_first; flat < dims.size; flat += kl_stride) {")
        self.depth = 2
        self.thread_body()
        self.depth = 1
        self.emit("}")
        self.lines += ["}", "", "}  // namespace kl", ""]
        return "\n".join(self.lines)

    def thread_body(self):
        func = self.func
        if func.vars:
            self.emit("// locals (zero at the start of every thread)")
            for var in func.vars:
                self.emit(f"{ctype(var.type)} {self.name(var)} = {zero(var.type)};")
        if any(i.op in (Op.PUSH, Op.POP) for i in func.body.walk()):
            self.emit("kl_stack stack(status);  // saved loop and branch state, see header")
        if not func.is_adjoint:
            self.block(func.body)
            return
        split = func.reverse_start or 0
        self.emit("")
        self.emit("// ---- forward replay ----")
        self.block(Block(func.body.instrs[:split]))
        self.emit("")
        self.emit("// ---- reverse ----")
        self.last_line = None
        self.adj_comments = True
        self.block(Block(func.body.instrs[split:]))

    def block(self, block: Block):
        for ins in block.instrs:
            self.comment_for(ins.loc)
            getattr(self, "op_" + ins.op.name)(ins)

    # ---- simple ops -------------------------------------------------------------------

    def arg(self, value: Value) -> str:
        return self.names[value]

    def op_CONST(self, ins: Instr):
        self.consts[ins.result] = ins.attrs["value"]
        self.emit(f"{self.declare(ins.result)} = {literal(ins.attrs['value'], ins.result.type)};")

    def op_TID(self, ins: Instr):
        if self.func.ndim == 1:
            self.emit(f"{self.declare(ins.result)} = int32(flat);")
        else:
            d = ins.attrs["dim"]
            self.emit(f"{self.declare(ins.result)} = int32(kl_coord(dims, flat, {d}));")

    def op_LOAD_VAR(self, ins: Instr):
        self.emit(f"{self.declare(ins.result)} = {self.name(ins.attrs['var'])};")

    def op_STORE_VAR(self, ins: Instr):
        self.emit(f"{self.name(ins.attrs['var'])} = {self.arg(ins.args[0])};")

    def op_CALL(self, ins: Instr):
        if "site" in ins.attrs and (self.checks or self.func.sites[ins.attrs["site"]].guard):
            site = ins.attrs["site"]
            bounds = [f"{self.arg(v)}, {n}" for v, n in
                      zip(ins.args[1:], self.func.sites[site].shape)]
            self.emit(f"if (!kl_components_ok(status, {site}, {', '.join(bounds)})) return;")
        expr = call_expression(ins, [self.arg(a) for a in ins.args])
        if ins.result is None:  # called for its effect (tile_store)
            self.emit(f"{_unwrap(expr)};")
            return
        self.emit(f"{self.declare(ins.result)} = {_unwrap(expr)};")

    def op_SHAPE(self, ins: Instr):
        arr = self.arg(ins.args[0])
        self.emit(f"{self.declare(ins.result)} = int32({arr}.shape[{ins.attrs['dim']}]);")

    # ---- memory -----------------------------------------------------------------------

    def access(self, ins: Instr, n_index: int) -> tuple[str, str]:
        """The element reference ``a.at(i, j)`` and its guard ('' when none is needed: the
        array may be absent). A bounds check comes first, as a line of its own: an index
        out of bounds is reported and ends the thread, as the interpreter's raise does (a
        thread that went on could loop for ever on an index that never comes back)."""
        arr = ins.args[0]
        a = self.arg(arr)
        idx = [self.arg(v) for v in ins.args[1:1 + n_index]]
        if self.checks:
            site, param = ins.attrs.get("site", -1), self.param_index.get(arr, -1)
            check = f"kl_check(status, {site}, {param}, {a}, {', '.join(idx)})"
            self.emit(f"if ({f'{a}.data && ' if ins.attrs.get('nullable') else ''}"
                      f"!{check}) return;")
        return f"{a}.at({', '.join(idx)})", f"{a}.data" if ins.attrs.get("nullable") else ""

    def op_LOAD(self, ins: Instr):
        ref, guard = self.access(ins, len(ins.args) - 1)
        if not guard:
            self.emit(f"{self.declare(ins.result)} = {ref};")
            return
        self.emit(f"{self.declare(ins.result)} = {zero(ins.result.type)};")
        self.emit(f"if ({guard}) {self.name(ins.result)} = {ref};")

    def op_STORE(self, ins: Instr):
        ref, guard = self.access(ins, len(ins.args) - 2)
        value = self.arg(ins.args[-1])
        self.guarded(guard, f"{ref} = {value};" + self.finite_check(ins, value))

    def op_ATOMIC(self, ins: Instr):
        ref, guard = self.access(ins, ins.args[0].type.ndim)
        kind, value = ins.attrs["kind"], self.arg(ins.args[-1])
        if kind == "cas":  # kl_atomic_cas(&ref, compare, value)
            value = f"{self.arg(ins.args[-2])}, {value}"
        old = self.declare(ins.result)
        name = self.name(ins.result)
        written = f"kl_min({name}, {value})" if kind == "min" else \
            f"kl_max({name}, {value})" if kind == "max" else \
            self.arg(ins.args[-1]) if kind in ("exch", "cas") else \
            f"{name} {'+' if kind == 'add' else '-'} {value}"
        call = f"kl_atomic_{kind}(&{ref}, {value});" + self.finite_check(ins, f"({written})")
        if guard:
            self.emit(f"{old} = {zero(ins.result.type)};")
            self.guarded(guard, f"{name} = {call}")
        else:
            self.emit(f"{old} = {call}")

    def guarded(self, guard: str, code: str):
        """``code`` (statements on one line), under ``if (guard)`` when there is a guard."""
        self.emit(f"if ({guard}) {{ {code} }}" if guard else code)

    def finite_check(self, ins: Instr, value: str) -> str:
        """verify_fp: code (after a store of ``value``) that reports a NaN or Inf stored,
        with the flat element index; '' when not wanted."""
        if not self.verify_fp or ins.args[-1].type.scalar.kind != "f":
            return ""
        arr = ins.args[0]
        idx = ", ".join(self.arg(v) for v in ins.args[1:-1])
        site, param = ins.attrs.get("site", -1), self.param_index.get(arr, -1)
        return (f" if (!kl_all_finite({value})) kl_report(status, {STATUS_NOT_FINITE}, "
                f"{site}, 0, {param}, kl_flat_index({self.arg(arr)}, {idx}));")

    # ---- control flow -----------------------------------------------------------------

    def op_IF(self, ins: Instr):
        then_block, else_block = ins.regions
        self.emit(f"if ({self.arg(ins.args[0])}) {{")
        self.region(then_block)
        if else_block.instrs:
            self.emit("} else {")
            self.region(else_block)
        self.emit("}")

    def op_FOR(self, ins: Instr):
        var = ins.attrs["var"]
        start, stop, step = (self.arg(a) for a in ins.args)
        it = self.fresh("it")
        known = self.consts.get(ins.args[2])
        if known is None:
            test = f"({step} > 0 && {it} < {stop}) || ({step} < 0 && {it} > {stop})"
        elif known > 0:
            test = f"{it} < {stop}"
        elif known < 0:
            test = f"{it} > {stop}"
        else:
            test = "false"
        self.emit(f"for (int64 {it} = {start}; {test}; {it} += {step}) {{")
        self.emit(f"{INDENT}{self.name(var)} = {ctype(var.type)}({it});")
        self.region(ins.regions[0])
        self.emit("}")

    def op_WHILE(self, ins: Instr):
        cond, body = ins.regions
        self.emit("while (true) {")
        self.region(cond)
        self.emit(f"{INDENT}if (!{self.arg(cond.result)}) break;")
        self.region(body)
        self.emit("}")

    def op_CUSTOM(self, ins: Instr):
        name = ins.attrs["func"].__name__
        self.emit(f"{{  // {name}(), which has a custom gradient: its forward body")
        self.region(ins.regions[0])
        self.emit("}")

    def op_PRINT(self, ins: Instr):
        values = [(a.type, self.arg(a)) for a in ins.args]
        if ins.attrs.get("printf"):
            fmt, args = _printf(ins.attrs["fmt"], values)
        else:
            pieces = ins.attrs["fmt"].replace("%", "%%").split("{}")
            specs, args = [], []
            for t, expr in values:
                spec, extra = _print_parts(t, expr)
                specs.append(spec)
                args += extra
            fmt = pieces[0] + "".join(s + p for s, p in zip(specs, pieces[1:])) + "\n"
        self.emit(f"printf({', '.join([_c_string(fmt)] + args)});")

    def op_PUSH(self, ins: Instr):
        self.emit(" ".join(f"stack.push({self.arg(a)});" for a in ins.args))

    def op_POP(self, ins: Instr):
        t = ctype(ins.result.type)
        self.emit(f"{self.declare(ins.result)} = stack.pop<{t}>();")


def call_expression(ins: Instr, args: list[str]) -> str:
    """A builtin call as C++: the builtin's ``cuda=`` spelling, except where that spelling
    cannot hold kernlab's semantics (see _override)."""
    bi = ins.attrs["builtin"]
    target = ins.attrs.get("target")
    spelling = _override(ins) or bi.cuda
    if spelling is None:  # every registered builtin has one (tests/test_cuda.py)
        raise KernelError(f"internal error: builtin '{bi.name}' has no CUDA spelling",
                          ins.loc, stage="rendering CUDA C")
    if callable(spelling):  # a spelling that depends on the operand types (tiles)
        return spelling([a.type for a in ins.args],
                        ins.result.type if ins.result is not None else None, args)
    t = ctype(target) if target is not None else ""
    return spelling.format(*args, args=", ".join(args), T=t)


def _override(ins: Instr) -> str | None:
    bi, types = ins.attrs["builtin"], [a.type for a in ins.args]
    if bi.name == "div" and types[0].is_scalar and types[1].is_scalar \
            and types[0].kind in "iu":
        return "kl_div({0}, {1})"  # C's / traps or is undefined for a zero divisor
    if bi.name == "cast":
        target = ins.attrs["target"]
        if target.scalar.is_int and types[0].scalar.is_float:
            return "kl_cast<{T}>({0})"  # saturating, NaN/inf -> 0; C's cast is undefined
    if bi.name == "index" and len(types) == 3:
        return "{0}[{1}][{2}]"  # m[i, j]
    if bi.name in ("mul", "div") and all(t.is_tile for t in types):  # element-wise
        return f"kl_cw_{bi.name}({{0}}, {{1}})"
    return None


def _wrap_params(params: list[str], indent: int) -> str:
    lines, line = [], ""
    for k, p in enumerate(params):
        piece = p + ("," if k < len(params) - 1 else "")
        if line and indent + len(line) + 1 + len(piece) > 96:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    return ("\n" + " " * indent).join(lines)
