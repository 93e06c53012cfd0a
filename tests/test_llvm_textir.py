"""The LLVM IR text the CPU backend builds (backends/llvm/textir.py): LLVM's own parser and
verifier accept what it writes for every builtin, and it spells constants, names and
instructions as llvmlite.ir (the reference it stands in for) does."""
import math

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm import jit, textir, variants
from kernlab.backends.llvm.entry import has_fast_path

llvm = pytest.importorskip("llvmlite.binding")
llir = pytest.importorskip("llvmlite.ir")

import test_builtin_grads as bg  # noqa: E402  (the kernels calling each builtin)


def _builtin_kernels():
    """Every kernel of the builtins test: a value case per public builtin and dtype, and a
    gradient case per differentiable builtin variant."""
    out = []
    for name in bg.PUBLIC_BUILTINS:
        if name not in bg.VALUE_CASES:
            continue
        kinds, _ = bg.VALUE_CASES[name]
        for dtype in ("float32", "float64"):
            types = [bg.KIND_TYPES[dtype][k] for k in kinds]
            out.append((f"{name} ({dtype})",
                        bg._kernel_for(name, types, bg._out_type(name, types))))
    for name, cases in bg.GRAD_CASES.items():
        out += [(f"{name} ({case.variant})", case.kernel) for case in cases]
    return out


def _rejected(func, bounds_check: bool, verify_fp: bool) -> list:
    """The entries of ``func`` whose lowered text LLVM does not parse and verify."""
    key = variants.cache_key(func, bounds_check, verify_fp)
    bad = []
    for part in (("fast", "general") if has_fast_path(func) else ("general",)):
        symbol = variants.symbol_for(func, variants.part_key(key, part))
        text, _ = jit.lowered_text(func, bounds_check, symbol, verify_fp, part)
        try:
            llvm.parse_assembly(text, context=llvm.create_context()).verify()
        except RuntimeError as exc:
            bad.append(f"{func.name} {part}: {str(exc).splitlines()[0]}")
    return bad


def test_llvm_accepts_the_text_of_every_builtin_kernel_and_its_adjoint():
    kernels = _builtin_kernels()
    assert len(kernels) > 150  # the builtins test still lists its cases as this reads them
    bad = []
    for label, kernel in kernels:
        for func in (kernel.ir, kernel.adjoint_ir):  # with every check the lowering has
            bad += [f"{label}: {b}" for b in _rejected(func, True, True)]
    assert not bad, "\n".join(bad[:20])


def _read_by_llvm(ir, constant) -> str:
    """A global initialised to ``constant``, as LLVM reads and prints it back."""
    module = ir.Module("m")
    g = ir.GlobalVariable(module, constant.type, "g")
    g.initializer = constant
    module.triple = llvm.get_process_triple()
    return str(llvm.parse_assembly(str(module), context=llvm.create_context()))


FLOATS = [0.0, -0.0, 1.0, -2.5, 0.1, 1e-30, 1e300, 65504.0, 6e-8, math.inf, -math.inf,
          math.nan, 3.4028234663852886e38, 5e-324, 1 / 3]


@pytest.mark.parametrize("kind", ["HalfType", "FloatType", "DoubleType"])
def test_float_constants_are_spelled_as_llvmlite_spells_them(kind):
    for x in FLOATS:
        if kind == "HalfType" and abs(x) > 65504 and math.isfinite(x):
            continue  # llvmlite's own rounding to half overflows there
        ours = str(textir.Constant(getattr(textir, kind)(), x)).split()
        theirs = str(llir.Constant(getattr(llir, kind)(), x)).split()
        assert ours[0] == theirs[0] and int(ours[1], 16) == int(theirs[1], 16), (kind, x)


def test_aggregate_constants_and_names_are_spelled_as_llvmlite_spells_them():
    pairs = [(lambda ir: ir.Constant(ir.VectorType(ir.IntType(32), 3), [1, -2, 3])),
             (lambda ir: ir.Constant(ir.VectorType(ir.FloatType(), 2), None)),
             (lambda ir: ir.Constant(ir.VectorType(ir.DoubleType(), 2), ir.Undefined)),
             (lambda ir: ir.Constant(ir.ArrayType(ir.IntType(8), 6), bytearray(b'a"\\\n%\0'))),
             (lambda ir: ir.Constant(ir.IntType(1), True)),
             (lambda ir: ir.Constant(ir.PointerType(), None)),
             (lambda ir: ir.Constant(ir.ArrayType(ir.FloatType(), 2), [0.5, np.float32(0.1)]))]
    for make in pairs:
        assert _read_by_llvm(textir, make(textir)) == _read_by_llvm(llir, make(llir))

    def names(ir):
        module = ir.Module("m")
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.DoubleType()]), "f")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        x = fn.args[0]
        out = [b.fadd(x, x, name=n).get_reference() for n in ("v", "v", 'q"\\', "", "v.1")]
        out.append(b.fmul(x, x).get_reference())
        return out
    assert names(textir) == names(llir)


def test_a_module_parses_as_llvmlite_writes_it():
    """The same small function built with both APIs: LLVM reads the two texts as one
    module (a branch with weights, a phi, a vector shuffle, a cmpxchg, a global)."""
    def build(ir):
        m = ir.Module("m")
        g = ir.GlobalVariable(m, ir.ArrayType(ir.IntType(8), 3), "s")
        g.global_constant, g.linkage = True, "internal"
        g.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), 3), bytearray(b"ab\0"))
        i32, f32 = ir.IntType(32), ir.FloatType()
        fn = ir.Function(m, ir.FunctionType(i32, [i32, ir.PointerType()]), "f")
        n, p = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        pre = b.block
        with b.if_then(b.icmp_signed("<", n, i32(0)), likely=False):
            neg = b.sub(i32(0), n)
            inside = b.block
        phi = b.phi(i32)
        phi.add_incoming(n, pre)
        phi.add_incoming(neg, inside)
        v = b.insert_element(ir.Constant(ir.VectorType(f32, 2), ir.Undefined),
                             b.sitofp(phi, f32), i32(0))
        v = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, 2), [0, 0]))
        s = b.fptosi(b.extract_element(v, i32(1)), i32)
        old = b.extract_value(b.cmpxchg(p, i32(0), s, "monotonic", "monotonic"), 0)
        byte = b.load(b.gep(g, [i32(0), i32(1)], inbounds=True))
        b.ret(b.add(old, b.zext(byte, i32), flags=("nsw",)))
        m.triple = llvm.get_process_triple()
        return str(llvm.parse_assembly(str(m), context=llvm.create_context()))
    assert build(textir) == build(llir)
