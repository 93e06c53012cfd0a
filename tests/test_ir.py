"""The IR: listings with source lines, the verifier, and source locations on every op."""
import inspect

import pytest

import kernlab as kl
from kernlab.errors import SourceLoc
from kernlab.ir.nodes import Block, Function, Instr, Op, Value
from kernlab.ir.verify import IRError, verify
from kernlab.types import float32


@kl.kernel
def scale(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float):
    i = kl.tid()
    y[i] = a * x[i]


def _line_of(func, text):
    lines, first = inspect.getsourcelines(func.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_listing_has_one_op_per_line_with_its_source_line():
    listing = kl.source(scale, "ir")
    body = [ln for ln in listing.splitlines()[2:-1] if ln.strip()]
    assert all("# " in ln for ln in body)
    store_line = _line_of(scale, "y[i] = a * x[i]")
    mul = next(ln for ln in body if "mul(" in ln)
    assert mul.rstrip().endswith(f"test_ir.py:{store_line}")


def test_every_instruction_carries_a_source_location():
    for ins in scale.ir.body.walk():
        assert isinstance(ins.loc, SourceLoc) and ins.loc.line > 0


def test_adjoint_listing_labels_replay_and_reverse_sections():
    listing = kl.source(scale, "ir", adjoint=True)
    replay = listing.index("# ---- forward replay ----")
    reverse = listing.index("# ---- reverse ----")
    assert replay < reverse
    assert "adj_x" in listing[reverse:]


def test_instruction_without_location_is_refused():
    with pytest.raises(AssertionError):
        Instr(Op.CONST, [], Value(float32), None, {"value": 1.0})


def test_verifier_rejects_use_before_definition():
    loc = SourceLoc("f.py", 1)
    undefined = Value(float32, "ghost")
    func = Function("bad", [], Block(), loc)
    func.body.instrs.append(Instr(Op.CALL, [undefined, undefined], Value(float32), loc,
                                  {"builtin": __import__("kernlab").builtins.REGISTRY["add"]}))
    with pytest.raises(IRError, match="before its definition"):
        verify(func)


def test_verifier_rejects_a_value_escaping_its_region():
    loc = SourceLoc("f.py", 1)
    func = Function("bad", [], Block(), loc)
    inner = Value(float32, "inner")
    then = Block([Instr(Op.CONST, [], inner, loc, {"value": float32(1.0)})])
    cond = Value(kl.types.bool_, "c")
    func.body.instrs += [Instr(Op.CONST, [], cond, loc, {"value": True}),
                         Instr(Op.IF, [cond], None, loc, {}, [then, Block()]),
                         Instr(Op.PRINT, [inner], None, loc, {"fmt": "{}"})]
    with pytest.raises(IRError):
        verify(func)
