"""The IR payloads of runtime/ir_cache.py (format kernlab-ir-5): every kind of IR node
survives dumps/loads with its structure, its sharing (one Value used in several places is
one Value after loading, and an adjoint loaded against its kernel's loaded IR shares with
it what the fresh ones share) and its source locations; a payload of another format is a
miss, not misread. The comparison walks both IRs independently of the encoder."""
import pickle

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import SourceLoc
from kernlab.ir.nodes import Block, Function, Instr, Op, Param, Site, Value, Var
from kernlab.ir.printer import print_function
from kernlab.runtime import ir_cache


@kl.func
def smooth(v: float):
    return v * v + 1.0


@kl.kernel
def everything(x: kl.array(dtype=float), y: kl.array(dtype=float), m: kl.array2d(dtype=float),
               total: kl.array(dtype=float), n: int, s: float):
    i = kl.tid()
    v = x[i]
    acc = float(0.0)
    for k in range(n):            # FOR, LOAD_VAR/STORE_VAR; its adjoint PUSHes and POPs
        acc = acc * s + kl.sin(v + float(k))
    if v > 0.0:                   # IF with both regions
        acc = acc + smooth(v)
    else:
        acc = acc - v
    j = int(0)
    while j < 2:                  # WHILE
        acc = acc + m[i % m.shape[0], j]   # SHAPE, a 2-d LOAD
        j += 1
    w = kl.vec3(acc, v, s)
    y[i] = w[0] + w[1] * w[2]     # vector components (CALL)
    kl.atomic_add(total, 0, acc)  # ATOMIC
    if i == 0:
        print(v)                  # PRINT


def _same_type(a, b):
    assert a is b or a == b, (a, b)


class _Compare:
    """Walks an original and a loaded IR side by side; values are matched one to one."""

    def __init__(self):
        self.there: dict = {}   # id(original Value/Var) -> the loaded one
        self.back: dict = {}    # id(loaded) -> id(original)
        self.seen: set = set()  # ops met

    def value(self, a, b):
        if a is None or b is None:
            assert a is None and b is None
            return
        assert type(a) is type(b) and type(a) in (Value, Var)
        _same_type(a.type, b.type)
        assert a.name == b.name
        if id(a) in self.there:
            assert self.there[id(a)] is b, "a value shared in the original is not shared"
        else:
            assert id(b) not in self.back, "two original values load as one"
            self.there[id(a)], self.back[id(b)] = b, id(a)

    def anything(self, a, b):
        if type(a) in (Value, Var):
            return self.value(a, b)
        assert type(a) is type(b), (a, b)
        if isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                self.anything(x, y)
        elif isinstance(a, dict):
            assert list(a) == list(b)
            for k in a:
                self.anything(a[k], b[k])
        elif isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        elif isinstance(a, SourceLoc):
            assert a == b
        else:
            assert a is b or a == b, (a, b)

    def block(self, a: Block, b: Block):
        assert type(b) is Block and len(a.instrs) == len(b.instrs)
        for x, y in zip(a.instrs, b.instrs):
            assert type(y) is Instr and x.op is y.op
            self.seen.add(x.op)
            assert len(x.args) == len(y.args)
            for u, w in zip(x.args, y.args):
                self.value(u, w)
            self.value(x.result, y.result)
            assert x.loc == y.loc and type(y.loc) is SourceLoc
            self.anything(x.attrs, y.attrs)
            assert len(x.regions) == len(y.regions)
            for r, t in zip(x.regions, y.regions):
                self.block(r, t)
        self.value(a.result, b.result)

    def function(self, a: Function, b: Function):
        assert type(b) is Function and b is not a
        for name in ("name", "ndim", "is_adjoint", "is_tangent", "reverse_start", "kept"):
            assert getattr(a, name) == getattr(b, name), name
        assert a.loc == b.loc
        assert len(a.params) == len(b.params)
        for p, q in zip(a.params, b.params):
            assert type(q) is Param and p.name == q.name
            _same_type(p.type, q.type)
            self.value(p.value, q.value)
        assert len(a.vars) == len(b.vars)
        for u, w in zip(a.vars, b.vars):
            self.value(u, w)
        assert len(a.sites) == len(b.sites)
        for s, t in zip(a.sites, b.sites):
            assert type(t) is Site and (s.loc, s.array, s.shape, s.kind, s.guard) == \
                (t.loc, t.array, t.shape, t.kind, t.guard)
        self.anything(a.owned, b.owned)
        self.block(a.body, b.body)


def _round_trip(kernel):
    """(IR, adjoint, retained variant) and their copies loaded from three payloads, the
    adjoints' against the IR loaded."""
    ir, adjoint = kernel.ir, kernel.adjoint_ir
    retained = kernel.adjoint_variant(frozenset([1]))
    key = (frozenset([1]), False)
    payloads = [ir_cache.dumps(ir, token="t"),
                ir_cache.dumps(adjoint, ir, variants={key: retained})]
    assert None not in payloads, "the kernel could not be cached"
    ir2, variants, token = ir_cache.loads(payloads[0])
    assert token == "t" and variants == {}
    adjoint2, variants2, _ = ir_cache.loads(payloads[1], ir2)
    assert list(variants2) == [key]
    return (ir, adjoint, retained), (ir2, adjoint2, variants2[key])


def test_every_node_kind_round_trips_with_its_structure_and_sharing():
    (ir, adjoint, retained), (ir2, adjoint2, retained2) = _round_trip(everything)
    compare = _Compare()
    compare.function(ir, ir2)
    compare.function(adjoint, adjoint2)
    compare.function(retained, retained2)
    # every kind of instruction but CUSTOM (a func with a custom gradient: its Func
    # holds the user's Python function, which no cache entry names) was compared
    assert compare.seen == set(Op) - {Op.CUSTOM}, set(Op) - compare.seen
    # the loaded values are numbered anew (after every value made before), apart
    ids = [v.id for v in compare.there.values()]
    assert len(set(ids)) == len(ids)
    originals = [v.id for f in (ir, adjoint, retained) for v in f.vars] + \
        [p.value.id for f in (ir, adjoint, retained) for p in f.params]
    assert min(ids) > max(originals)
    # the printer, which the encoder does not use, lists the same code
    for a, b in ((ir, ir2), (adjoint, adjoint2)):
        assert print_function(a) == print_function(b)


def test_values_shared_between_the_kernel_and_its_adjoint_stay_shared():
    (ir, adjoint, _), (ir2, adjoint2, _) = _round_trip(everything)
    compare = _Compare()  # one matching across both functions
    compare.function(ir, ir2)
    compare.function(adjoint, adjoint2)
    # what the adjoint holds of the kernel's IR, the loaded adjoint holds of the loaded IR
    assert adjoint.params[0] is ir.params[0] and adjoint2.params[0] is ir2.params[0]
    assert adjoint.sites is ir.sites and adjoint2.sites is ir2.sites
    assert adjoint.vars[0] is ir.vars[0] and adjoint2.vars[0] is ir2.vars[0]


def test_an_adjoint_payload_read_against_another_ir_is_a_miss():
    """An adjoint's payload names objects of the IR it was made from by their places: read
    against an IR of another shape (or none), it is a miss rather than misread."""
    ir, adjoint = everything.ir, everything.adjoint_ir
    payload = ir_cache.dumps(adjoint, ir)
    other = kl.kernel(smooth_kernel.pyfunc).ir
    assert ir_cache.loads(payload, other) is None
    assert ir_cache.loads(payload) is None
    assert ir_cache.loads(payload, ir) is not None


@kl.kernel
def smooth_kernel(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = smooth(x[i])


def test_the_loaded_ir_computes_what_numpy_does():
    _, (ir2, adjoint2, _) = _round_trip(everything)
    fresh = kl.kernel(everything.pyfunc)
    fresh._ir, fresh._adjoint = ir2, adjoint2
    n, s = 3, 0.5
    x = np.array([0.25, -0.5, 1.5, 0.75], np.float32)
    m = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    xs, ys, ms, tot = kl.array(x), kl.zeros(4), kl.array(m), kl.zeros(1)
    kl.launch(fresh, 4, inputs=[xs, ys, ms, tot, n, s])
    want_y, want_total = [], 0.0
    for i, v in enumerate(x.astype(np.float64)):
        acc = 0.0
        for k in range(n):
            acc = acc * s + np.sin(v + k)
        acc = acc + (v * v + 1.0) if v > 0 else acc - v
        acc += m[i % 3, 0] + m[i % 3, 1]
        want_y.append(acc + v * s)
        want_total += acc
    np.testing.assert_allclose(ys.numpy(), want_y, rtol=1e-5)
    np.testing.assert_allclose(tot.numpy(), [want_total], rtol=1e-5)


def test_a_payload_of_another_format_is_a_miss():
    payload = ir_cache.dumps(everything.ir)
    fmt, *rest = pickle.loads(payload.replace(ir_cache.FORMAT.encode(), b"kernlab-ir-0"))
    assert fmt == "kernlab-ir-0"
    assert ir_cache.loads(payload.replace(ir_cache.FORMAT.encode(), b"kernlab-ir-0")) is None
    # the shapes of formats 3 (the IR pickled object by object) and 4 (IR, adjoint and
    # variants flattened into one payload) are not misread either
    for old in (pickle.dumps(("kernlab-ir-3", None, None, {})),
                pickle.dumps(("kernlab-ir-4", [], [], 0, None, {}))):
        assert ir_cache.loads(old) is None
    assert ir_cache.FORMAT not in ("kernlab-ir-3", "kernlab-ir-4")


def test_an_instruction_reached_outside_the_structure_makes_it_uncacheable():
    """Instrs, Blocks and Functions travel flattened only where the IR's structure has
    them; one met anywhere else (here in an attribute) is refused rather than copied."""
    ir = kl.kernel(everything.pyfunc).ir
    first = ir.body.instrs[0]
    first.attrs["odd"] = ir.body.instrs[1]
    try:
        assert ir_cache.dumps(ir) is None
    finally:
        del first.attrs["odd"]
    assert ir_cache.dumps(ir) is not None


@pytest.mark.parametrize("depth", [40])
def test_deeply_nested_regions_round_trip(tmp_path, depth):
    lines = ["import kernlab as kl", "", "@kl.kernel",
             "def nested(x: kl.array(dtype=float)):", "    i = kl.tid()", "    v = x[i]"]
    for d in range(depth):
        lines.append("    " * (d + 1) + f"if v > {-d - 1}.0:")
    lines.append("    " * (depth + 1) + "v = v + 1.0")
    lines.append("    x[i] = v")
    path = tmp_path / "nested_mod.py"
    path.write_text("\n".join(lines) + "\n")
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102
    kernel = ns["nested"]
    ir2 = ir_cache.loads(ir_cache.dumps(kernel.ir))[0]
    adjoint2 = ir_cache.loads(ir_cache.dumps(kernel.adjoint_ir, kernel.ir), ir2)[0]
    compare = _Compare()
    compare.function(kernel.ir, ir2)
    compare.function(kernel.adjoint_ir, adjoint2)


@pytest.mark.parametrize("text", ["a\nb\n", "a\r\nb", "", "x\x0cy\nz\u2028w\n", "q\rr\n\n",
                                  "only", "\n\n", "\u00e9\n", "# -*- coding: latin-1 -*-\nx\n"])
def test_the_key_reads_a_source_file_as_linecache_does(tmp_path, text):
    """ir_cache reads a kernel's file itself (linecache's first read is slow): the lines
    must be linecache's, or the key would cover other lines than the kernel's."""
    import linecache
    path = tmp_path / "source_mod.py"
    path.write_bytes(text.encode("latin-1" if "latin-1" in text else "utf-8"))
    linecache.checkcache(str(path))
    want = linecache.getlines(str(path))
    linecache.cache.pop(str(path), None)  # (the direct read is for files it does not hold)
    assert ir_cache._source_lines(str(path), None) == want


def test_every_named_type_loads_as_itself():
    """A payload names kernlab's scalars and named vectors and matrices; each name loads
    as the very object (launches test types with ``is``)."""
    from kernlab import types as T
    named = [*T.SCALARS, *T.NAMED.values(), T.ANY]
    payload = pickle.dumps(named)  # (the reference: pickle by value, then compared)
    table = ir_cache._named_types()[0]
    assert {id(t) for t in table.values()} >= {id(t) for t in named}
    for name, t in table.items():
        assert ir_cache._type_named(name) is t
    assert pickle.loads(payload) == named


def test_a_payload_naming_eval_is_refused_not_run():
    """Entries are authenticated before they are unpickled; should one get through, the
    unpickler still names no builtins that run code or touch files."""
    for fn in (eval, exec, open, __import__, compile):
        assert ir_cache.loads(pickle.dumps((ir_cache.FORMAT, fn))) is None
    # builtins.eval("1/0") by hand: loading it would raise ZeroDivisionError inside loads
    # (a miss too), so it is checked through find_class directly as well
    crafted = b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x031/0\x85R."
    assert pickle.loads(crafted.replace(b"1/0", b"1+1")) == 2  # (the payload is well made)
    assert ir_cache.loads(crafted) is None
    with pytest.raises(pickle.UnpicklingError):
        ir_cache._Unpickler(__import__("io").BytesIO(crafted)).load()
