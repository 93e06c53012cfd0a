"""Differential gradient fuzzing: random float64 programs, straight-line and with loops
(for, while, break, continue, early return, loop-carried state, funcs, atomics), whose
gradients must agree three ways: the LLVM adjoint, the interpreter's adjoint, and central
finite differences of the LLVM forward kernel.

Finite differences are meaningful only for smooth programs, so the generator uses smooth
operations (no abs/min/max/floor/clamp/%), keeps values bounded (damped updates, bounded
functions, denominators kept away from zero) and branches only on integers or on an input
compared with a constant that the sampled inputs stay well away from.

A CI-sized run is part of the normal suite; ``pytest --long-fuzz`` checks 1,000 programs
and prints a summary.
"""
from __future__ import annotations

import itertools
import linecache
import time
from collections import Counter

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import kernlab as kl  # noqa: E402
from kernlab.errors import KernelError  # noqa: E402

M = 4          # inputs x[0..M)
N = 3          # threads (one output each)
CUTS = [-0.5, 0.0, 0.3, 0.7]  # the constants inputs are compared with
MARGIN = 0.05  # inputs stay this far from every cut, far beyond the FD step
H = 1e-6       # central-difference step


class Choices:
    """Random decisions drawn from Hypothesis (so a failing program shrinks)."""

    def __init__(self, data):
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def pick(self, options):
        return options[self.int(0, len(options) - 1)]

    def chance(self, p: float) -> bool:
        return self.int(0, 999) >= round(1000 * (1 - p))


class SmoothProgram:
    """Writes a smooth float64 kernel ``fuzz(x, n, out, acc)``."""

    def __init__(self, c: Choices, loops: bool):
        self.c = c
        self.loops = loops
        self.lines: list[str] = []
        self.floats: list[list[str]] = [[]]  # float64 locals visible, per block
        self.ints: list[list[str]] = [["i"]]  # int locals visible (never reassigned)
        self.counter = itertools.count()
        self.depth = 0  # loop nesting
        self.funcs: list[tuple[str, int]] = []
        self.in_func = False

    def fresh(self, prefix):
        return f"{prefix}{next(self.counter)}"

    def visible_floats(self):
        return [n for block in self.floats for n in block]

    def visible_ints(self):
        return [n for block in self.ints for n in block]

    # -- expressions (float64, bounded on bounded inputs) --
    def leaf(self) -> str:
        options = self.visible_floats()
        if not self.in_func:
            options = options + [f"x[{self.index()}]"] * 2
        if not options or self.c.chance(0.15):
            return f"kl.float64({self.c.pick(['0.5', '1.25', '-0.75', '2.0', '0.1'])})"
        return self.c.pick(options)

    def index(self) -> str:
        ints = self.visible_ints()
        if not ints or self.c.chance(0.3):
            return str(self.c.int(0, M - 1))
        k = self.c.pick(ints)
        form = self.c.pick(["{k} % 4", "({k} + {j}) % 4", "({k} * 3 + 1) % 4"])
        return form.format(k=k, j=self.c.pick(ints))

    def expr(self, depth: int) -> str:
        if depth <= 0 or self.c.chance(0.2):
            return self.leaf()
        d = depth - 1
        kind = self.c.int(0, 8)
        if kind == 0:
            return f"({self.expr(d)} {self.c.pick(['+', '-', '*'])} {self.expr(d)})"
        if kind == 1:
            return f"({self.expr(d)} / (1.5 + kl.sin({self.expr(d)})))"
        if kind == 2:
            fn = self.c.pick(["kl.sin", "kl.cos", "kl.tanh", "kl.atan"])
            return f"{fn}({self.expr(d)})"
        if kind == 3:
            e = self.expr(d)
            return self.c.pick([f"kl.sqrt(1.0 + {e} * {e})", f"kl.log(1.0 + {e} * {e})",
                                f"kl.exp(kl.tanh({e}))", f"({e} / (1.0 + {e} * {e}))",
                                f"kl.pow(1.0 + {e} * {e}, 0.75)"])
        if kind == 4:
            return f"({self.c.pick(['0.5', '-1.5', '2.0'])} * {self.expr(d)})"
        if kind == 5 and self.funcs:
            name, arity = self.c.pick(self.funcs)
            return f"{name}({', '.join(self.expr(d) for _ in range(arity))})"
        if kind == 6:
            cond = self.int_condition()
            return f"kl.where({cond}, {self.expr(d)}, {self.expr(d)})"
        if kind == 7:
            a, b = self.expr(d), self.expr(d)
            return f"kl.length(kl.vec3d(1.0, {a}, {b}))"
        if kind == 8:
            a, b = self.expr(d), self.expr(d)
            return (f"kl.dot(kl.vec3d({a}, 1.0, {b}), "
                    f"kl.normalize(kl.vec3d(1.0, {self.expr(d)}, 0.5)))")
        return self.leaf()

    def bounded(self, depth: int) -> str:
        e = self.expr(depth)
        return self.c.pick([f"kl.tanh({e})", f"kl.sin({e})", f"kl.atan({e})",
                            f"({e} / (1.0 + {e} * {e}))"])

    # -- conditions: integers, or an input against a cut it stays away from --
    def int_condition(self) -> str:
        ints = self.visible_ints()
        if not ints:
            return self.c.pick(["True", "False"])
        k = self.c.pick(ints)
        return self.c.pick([f"{k} % 2 == 0", f"{k} > 1", f"{k} == {self.c.int(0, 3)}",
                            f"{k} < n"] if not self.in_func else [f"{k} > 1"])

    def condition(self) -> str:
        if self.in_func or self.c.chance(0.5):
            return self.int_condition()
        return f"x[{self.index()}] {self.c.pick(['<', '>'])} {self.c.pick(CUTS)}"

    # -- statements --
    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    def block(self, indent: int, budget: int):
        self.floats.append([])
        self.ints.append([])
        start = len(self.lines)
        for _ in range(self.c.int(1, max(1, budget))):
            self.stmt(indent, budget - 1)
        if len(self.lines) == start:
            self.emit(indent, "pass")
        self.floats.pop()
        self.ints.pop()

    def stmt(self, indent: int, budget: int, kind: str | None = None):
        kinds = ["new", "update", "store"]
        if budget > 0:
            kinds += ["if"] + (["for", "while"] if self.loops and self.depth < 2 else [])
        if self.depth:
            kinds += ["jump"]
        kind = kind or self.c.pick(kinds)
        if kind == "new":
            name = self.fresh("s")
            self.emit(indent, f"{name} = {self.bounded(2) if self.c.chance(0.5) else self.expr(2)}")
            self.floats[-1].append(name)
        elif kind == "update":
            names = self.visible_floats()
            if not names:
                return self.stmt(indent, 0)
            name = self.c.pick(names)
            form = self.c.pick(["{v} = 0.5 * {v} + {b}", "{v} += 0.25 * {b}",
                                "{v} = {b}", "{v} *= 0.5 + 0.25 * {b}",
                                "{v} = kl.sin({v}) * {b}"])
            self.emit(indent, form.format(v=name, b=self.bounded(2)))
        elif kind == "store" and not self.in_func:  # accumulate (see source())
            target = self.c.pick(["out[i]", "acc[0]", f"acc[{self.c.int(0, 1)}]"])
            self.emit(indent, f"{target} += {self.expr(2)}")
        elif kind == "if":
            self.emit(indent, f"if {self.condition()}:")
            self.block(indent + 1, budget - 1)
            if self.c.chance(0.5):
                self.emit(indent, "else:")
                self.block(indent + 1, budget - 1)
        elif kind == "for":
            var = self.fresh("k")
            bounds = self.c.pick(["3", "0, 5, 2"] if self.in_func else
                                 ["n", "3", "1, n", "n, 0, -1", "0, 5, 2"])
            self.emit(indent, f"for {var} in range({bounds}):")
            self.depth += 1
            self.ints.append([var])
            self.block(indent + 1, budget - 1)
            self.ints.pop()
            self.depth -= 1
        elif kind == "while":
            w = self.fresh("w")
            self.emit(indent, f"{w} = int(0)")
            extra = f" and {self.condition()}" if self.c.chance(0.4) else ""
            bound = "3" if self.in_func else self.c.pick(["n", "3"])
            self.emit(indent, f"while {w} < {bound}{extra}:")
            self.emit(indent + 1, f"{w} += 1")
            self.depth += 1
            self.ints.append([w])
            self.block(indent + 1, budget - 1)
            self.ints.pop()
            self.depth -= 1
        elif kind == "jump":
            self.emit(indent, f"if {self.condition()}:")
            self.emit(indent + 1, self.c.pick(["break", "continue", "break"]
                                              + ([] if self.in_func else ["return"])))

    def func(self):
        name = self.fresh("g")
        arity = self.c.int(1, 2)
        params = [f"u{k}" for k in range(arity)]
        self.lines.append("@kl.func")
        self.lines.append(f"def {name}({', '.join(p + ': kl.float64' for p in params)}):")
        saved, self.floats, self.ints, self.in_func = self.floats, [params], [[]], True
        self.block(1, 2)
        self.emit(1, f"return {self.expr(2)}")
        self.floats, self.ints, self.in_func = saved, [["i"]], False
        self.funcs.append((name, arity))
        self.lines += ["", ""]

    def source(self) -> str:
        self.lines = ["import kernlab as kl", "", ""]
        for _ in range(self.c.int(0, 1)):
            self.func()
        self.lines += [
            "@kl.kernel",
            "def fuzz(x: kl.array(dtype=kl.float64), n: int, "
            "out: kl.array(dtype=kl.float64),",
            "         acc: kl.array(dtype=kl.float64)):",
            "    i = kl.tid()",
        ]
        # A plain store only as the first write: overwriting an element written before in
        # the same kernel (out[i] += a; out[i] = b) gives a wrong gradient (a known
        # autodiff limitation: test_an_overwritten_element_gets_no_gradient).
        if self.c.chance(0.5):
            self.emit(1, f"out[i] = {self.expr(2)}")
        if self.loops:  # at least one loop, with loop-carried state
            self.emit(1, f"t = {self.expr(1)}")
            self.floats[-1].append("t")
            self.stmt(1, 3, kind=self.c.pick(["for", "while"]))
            self.emit(1, "acc[1] += t")
        self.block(1, 4 if self.loops else 3)
        self.emit(1, f"out[i] += {self.expr(2)}")
        return "\n".join(self.lines) + "\n"


# ---- evaluating a program ---------------------------------------------------------------

_files = itertools.count()


def load_kernel(source: str):
    filename = f"<kernlab-grad-fuzz-{next(_files)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace["fuzz"], filename


def sample_inputs(rng: np.random.Generator) -> np.ndarray:
    x = rng.uniform(-1.5, 1.5, M)
    for j in range(M):
        while min(abs(x[j] - c) for c in CUTS) < MARGIN:
            x[j] = rng.uniform(-1.5, 1.5)
    return x


def forward(kernel, backend: str, x: np.ndarray, n: int):
    kl.config.cpu_backend = backend
    out, acc = kl.zeros(N, dtype=kl.float64), kl.zeros(2, dtype=kl.float64)
    kl.launch(kernel, N, inputs=[kl.from_numpy(x.copy(), dtype=kl.float64), n, out, acc])
    return out.numpy().copy(), acc.numpy().copy()


def gradient(kernel, backend: str, x: np.ndarray, n: int, w_out, w_acc):
    """d(w_out . out + w_acc . acc)/dx by the adjoint kernel (through a Tape)."""
    kl.config.cpu_backend = backend
    xa = kl.from_numpy(x.copy(), dtype=kl.float64, requires_grad=True)
    out = kl.zeros(N, dtype=kl.float64, requires_grad=True)
    acc = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, N, inputs=[xa, n, out, acc])
    tape.backward(grads={out: kl.from_numpy(w_out, dtype=kl.float64),
                         acc: kl.from_numpy(w_acc, dtype=kl.float64)})
    return out.numpy().copy(), acc.numpy().copy(), xa.grad.numpy().copy()


def finite_differences(kernel, x: np.ndarray, n: int, w_out, w_acc) -> np.ndarray:
    def loss(v):
        out, acc = forward(kernel, "llvm", v, n)
        return float(w_out @ out + w_acc @ acc)

    grad = np.zeros(M)
    for j in range(M):
        e = np.zeros(M)
        e[j] = H
        grad[j] = (loss(x + e) - loss(x - e)) / (2 * H)
    return grad


def check_program(source: str, seed: int, stats: Counter):
    kernel, filename = load_kernel(source)
    try:
        try:
            kernel.adjoint_ir
        except KernelError as err:
            raise AssertionError(f"the adjoint of a smooth program was refused:\n{err}\n"
                                 f"--- source:\n{source}") from None
        rng = np.random.default_rng(seed)
        x, n = sample_inputs(rng), int(rng.integers(0, 5))
        w_out, w_acc = rng.normal(size=N), rng.normal(size=2)
        llvm = gradient(kernel, "llvm", x, n, w_out, w_acc)
        interp = gradient(kernel, "interp", x, n, w_out, w_acc)
        fd = finite_differences(kernel, x, n, w_out, w_acc)
        where = f"\nx = {x.tolist()}, n = {n}\n--- source:\n{source}"
        for k, name in enumerate(["out", "acc", "x.grad"]):
            assert np.allclose(llvm[k], interp[k], rtol=1e-9, atol=1e-12), \
                f"{name}: LLVM {llvm[k]} vs interpreter {interp[k]}{where}"
        scale = 1.0 + np.max(np.abs(fd))
        assert np.allclose(llvm[2], fd, rtol=1e-5, atol=1e-6 * scale), \
            f"gradient: adjoint {llvm[2]} vs finite differences {fd}{where}"
        stats["programs"] += 1
        stats["with loops" if ("for " in source or "while " in source) else "straight-line"] += 1
    finally:
        linecache.cache.pop(filename, None)


def programs(pytestconfig, ci: int, long: int) -> int:
    return long if pytestconfig.getoption("--long-fuzz") else ci


def fuzz_settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=n < 500,
                    suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture(autouse=True)
def _llvm_afterwards(monkeypatch):
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")


@pytest.mark.parametrize("loops", [False, True], ids=["straight-line", "control-flow"])
def test_adjoints_agree_with_each_other_and_with_finite_differences(pytestconfig, loops):
    stats: Counter = Counter()
    start = time.perf_counter()

    @fuzz_settings(programs(pytestconfig, 12, 500))
    @given(st.data())
    def one(data):
        c = Choices(data)
        check_program(SmoothProgram(c, loops).source(), c.int(0, 2**31), stats)

    one()
    print(f"\ngradient fuzzing ({'loops' if loops else 'straight-line'}): "
          f"{stats['programs']} programs in {time.perf_counter() - start:.0f} s, "
          f"0 mismatches ({dict(stats)})")


# ---- what the fuzzer found ----------------------------------------------------------------

@kl.kernel
def overwrites(x: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    i = kl.tid()
    out[i] += x[i]
    out[i] = 2.0 * x[i]


@kl.kernel
def overwrites_in_a_loop(x: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float64)):
    i = kl.tid()
    for k in range(3):
        out[i] = x[i] * kl.float64(k)


@pytest.mark.parametrize("kernel", [overwrites, overwrites_in_a_loop])
def test_an_overwritten_element_gets_no_gradient(backend, kernel):
    x = kl.ones(2, dtype=kl.float64, requires_grad=True)
    out = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, 2, inputs=[x, out])
    tape.backward(grads={out: kl.ones(2, dtype=kl.float64)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])  # d(2x)/dx


# ---- in-place programs (autodiff/inplace.py) ------------------------------------------------
# The same generator, with a state array y that each thread reads and overwrites in place
# (y[i] only: its own element), nonlinearly; launched for two steps under one tape. The tape
# keeps y before each launch; the gradients with respect to x and to y before the first step
# must agree between LLVM and the interpreter and with finite differences.

IN_PLACE_STEPS = 2


class InPlaceProgram(SmoothProgram):
    """``fuzz(x, n, out, acc, y)``: SmoothProgram's kernel with y[i] updated in place."""

    def leaf(self) -> str:
        if not self.in_func and self.c.chance(0.25):
            return "y[i]"
        return super().leaf()

    def stmt(self, indent: int, budget: int, kind: str | None = None):
        if kind is None and not self.in_func and self.c.chance(0.3):
            form = self.c.pick(["y[i] = {b} * y[i] + 0.5 * kl.sin(y[i])",
                                "y[i] = kl.tanh(y[i] * {b}) + 0.5 * y[i]",
                                "y[i] += 0.25 * {b} * y[i]",  # an atomic add, own element
                                "y[i] = {e}"])
            self.emit(indent, form.format(b=self.bounded(1), e=self.bounded(2)))
            return None
        return super().stmt(indent, budget, kind)

    def source(self) -> str:
        text = super().source()
        text = text.replace("acc: kl.array(dtype=kl.float64)):",
                            "acc: kl.array(dtype=kl.float64), y: kl.array(dtype=kl.float64)):")
        return text.replace("    i = kl.tid()\n", "    i = kl.tid()\n"
                            "    y[i] = kl.sin(y[i]) * x[i % 4] + 0.5 * y[i] * y[i]\n", 1)


def run_in_place(kernel, backend, x, y0, n, seeds=None):
    """Two in-place steps; with seeds (w_out, w_acc, w_y) also the gradients of x and y0."""
    kl.config.cpu_backend = backend
    xa = kl.from_numpy(x.copy(), dtype=kl.float64, requires_grad=True)
    y = kl.from_numpy(y0.copy(), dtype=kl.float64, requires_grad=True)
    out = kl.zeros(N, dtype=kl.float64, requires_grad=True)
    acc = kl.zeros(2, dtype=kl.float64, requires_grad=True)
    with kl.Tape() as tape:
        for _ in range(IN_PLACE_STEPS):
            kl.launch(kernel, N, inputs=[xa, n, out, acc, y])
    values = np.concatenate([out.numpy(), acc.numpy(), y.numpy()])
    if seeds is None:
        return values
    assert tape.memory().snapshots == IN_PLACE_STEPS  # y, before each step
    w_out, w_acc, w_y = seeds
    tape.backward(grads={out: kl.from_numpy(w_out, dtype=kl.float64),
                         acc: kl.from_numpy(w_acc, dtype=kl.float64),
                         y: kl.from_numpy(w_y.copy(), dtype=kl.float64)})
    return values, np.concatenate([xa.grad.numpy(), y.grad.numpy()])


def check_in_place_program(source: str, seed: int, stats: Counter):
    kernel, filename = load_kernel(source)
    try:
        rng = np.random.default_rng(seed)
        x, n = sample_inputs(rng), int(rng.integers(0, 5))
        y0 = rng.uniform(-1.0, 1.0, N)
        seeds = rng.normal(size=N), rng.normal(size=2), rng.normal(size=N)
        w = np.concatenate(seeds)
        llvm = run_in_place(kernel, "llvm", x, y0, n, seeds)
        interp = run_in_place(kernel, "interp", x, y0, n, seeds)
        where = f"\nx = {x.tolist()}, y = {y0.tolist()}, n = {n}\n--- source:\n{source}"
        for k, name in enumerate(["values", "gradient"]):
            assert np.allclose(llvm[k], interp[k], rtol=1e-9, atol=1e-12), \
                f"{name}: LLVM {llvm[k]} vs interpreter {interp[k]}{where}"
        both = np.concatenate([x, y0])
        fd = np.zeros(len(both))
        for j in range(len(both)):
            e = np.zeros(len(both))
            e[j] = H
            hi, lo = both + e, both - e
            fd[j] = (w @ run_in_place(kernel, "llvm", hi[:M], hi[M:], n)
                     - w @ run_in_place(kernel, "llvm", lo[:M], lo[M:], n)) / (2 * H)
        scale = 1.0 + np.max(np.abs(fd))
        assert np.allclose(llvm[1], fd, rtol=1e-5, atol=1e-6 * scale), \
            f"gradient: adjoint {llvm[1]} vs finite differences {fd}{where}"
        stats["programs"] += 1
    finally:
        linecache.cache.pop(filename, None)


def test_in_place_programs_agree_with_finite_differences(pytestconfig):
    stats: Counter = Counter()
    start = time.perf_counter()

    @fuzz_settings(programs(pytestconfig, 10, 500))
    @given(st.data())
    def one(data):
        c = Choices(data)
        check_in_place_program(InPlaceProgram(c, c.chance(0.5)).source(), c.int(0, 2**31),
                               stats)

    one()
    print(f"\nin-place gradient fuzzing: {stats['programs']} programs in "
          f"{time.perf_counter() - start:.0f} s, 0 mismatches")
