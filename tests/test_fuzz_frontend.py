"""Frontend fuzzing: generated kernel sources, valid and invalid.

Three generators feed one oracle:

* random programs (typed expressions, locals, if/elif/else, for and while loops with break,
  continue and early return, funcs, vectors, atomics), valid by construction;
* mutations of those programs and of a corpus of real kernels (names, constants, operators,
  statements, annotations, calls, subscripts swapped, dropped, duplicated or replaced);
* unsupported constructs planted at a random line.

The oracle: compiling a source either succeeds, and then the LLVM code agrees with the
reference interpreter on random inputs (forward, and the adjoint where there is one), or
raises a KernelError whose location is a line of that source. Any other exception escaping
the compiler or a launch is a bug; so is an LLVM "internal error" (LoweringError) or a
disagreement between the backends.

Values the two backends may legitimately round differently (transcendental functions from
different math libraries) are tracked: the generator feeds them only into continuous
operations, and programs that use them are compared with a tolerance; every other program
must agree exactly.

A CI-sized run is part of the normal suite; ``pytest --long-fuzz`` runs thousands of
examples and prints a summary.
"""
from __future__ import annotations

import _thread
import ast
import copy
import itertools
import linecache
import textwrap
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import kernlab as kl  # noqa: E402
from kernlab.backends.llvm import LoweringError  # noqa: E402
from kernlab.errors import KernelError  # noqa: E402

N = 6  # threads per launch, and the length of every array

F, D, I, B, V = "float32", "float64", "int32", "bool", "vec3"
NUMERIC = (F, D, I)


# ---- choices ------------------------------------------------------------------------------

class Choices:
    """Random decisions drawn from Hypothesis, so a failing example shrinks. Every choice
    shrinks towards its first option, the simplest."""

    def __init__(self, data):
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def pick(self, options):
        return options[self.int(0, len(options) - 1)]

    def chance(self, p: float) -> bool:
        return self.int(0, 999) >= round(1000 * (1 - p))


# ---- random programs ----------------------------------------------------------------------

@dataclass
class Expr:
    text: str
    exact: bool = True  # both backends must compute it bit for bit


@dataclass
class Scope:
    names: dict = field(default_factory=dict)  # local name -> type


class ProgramGenerator:
    """Writes a kernel (and maybe funcs it calls) that compiles by construction."""

    FLOAT_LITERALS = ["1.0", "0.5", "2.0", "-1.5", "0.0", "3.25", "0.1", "-0.75", "1e-3", "7.0"]
    INT_LITERALS = ["1", "0", "2", "3", "-1", "7", "-4", "100"]

    def __init__(self, c: Choices, max_depth: int = 3, max_stmts: int = 6):
        self.c = c
        self.max_depth = max_depth
        self.max_stmts = max_stmts
        self.lines: list[str] = []
        self.scopes = [Scope({"i": I, "a": F, "b": F, "n": I, "d": D})]
        self.counter = itertools.count()
        self.loops: list[str] = []  # the kinds of loop we are in
        self.exact = True
        self.funcs: list[tuple[str, list[str], bool]] = []  # name, param types, exact
        self.in_func = False
        self.protected = {"i", "n"}  # never reassigned: the thread id, loop bounds, counters

    # -- names --
    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def visible(self, t: str) -> list[str]:
        return [n for s in self.scopes for n, nt in s.names.items() if nt == t]

    def declare(self, name: str, t: str):
        self.scopes[-1].names[name] = t

    # -- expressions --
    def expr(self, t: str, depth: int, exact: bool = False) -> Expr:
        """An expression of type t; with exact, one both backends compute identically."""
        e = getattr(self, f"expr_{t}")(depth, exact)
        assert e.exact or not exact
        self.exact = self.exact and e.exact
        return e

    def leaf(self, t: str, fixed: list[str]) -> Expr:
        options = fixed + self.visible(t)
        return Expr(self.c.pick(options))

    def expr_float32(self, depth, exact) -> Expr:
        fixed = ["a", "x[i]", "b", "y[i]"] if not self.in_func else []
        if depth <= 0 or self.c.chance(0.25):
            if self.c.chance(0.3) or not (fixed + self.visible(F)):
                return Expr(self.c.pick(self.FLOAT_LITERALS))
            return self.leaf(F, fixed)
        d = depth - 1
        kind = self.c.int(0, 15 if not exact else 11)
        if kind == 0:
            l, r = self.expr(F, d, exact), self.expr(F, d, exact)
            op = self.c.pick(["+", "-", "*"])
            return Expr(f"({l.text} {op} {r.text})", l.exact and r.exact)
        if kind == 1:
            l, r = self.expr(F, d, exact), self.expr(F, d, True)
            return Expr(f"({l.text} / {divisor(r.text)})", l.exact)
        if kind == 2:
            l, r = self.expr(F, d, exact), self.expr(F, d, exact)
            return Expr(f"({l.text} / (kl.abs({r.text}) + 0.5))", l.exact and r.exact)
        if kind == 3:
            e = self.expr(F, d, exact)
            fn = self.c.pick(["-", "kl.abs", "kl.sqrt(kl.abs", "kl.floor", "kl.ceil",
                              "kl.round", "kl.sign"])
            if fn == "-":
                return Expr(f"(-{e.text})", e.exact)
            if fn == "kl.sqrt(kl.abs":
                return Expr(f"kl.sqrt(kl.abs({e.text}) + 0.25)", e.exact)
            if fn == "kl.abs" or e.exact:
                return Expr(f"{fn}({e.text})", e.exact)
            return Expr(f"kl.abs({e.text})", False)
        if kind == 4:
            l, r = self.expr(F, d, exact), self.expr(F, d, exact)
            fn = self.c.pick(["kl.min", "kl.max"])
            return Expr(f"{fn}({l.text}, {r.text})", l.exact and r.exact)
        if kind == 5:
            e = self.expr(F, d, exact)
            lo = self.c.pick(["-1.0", "0.0", "-2.5"])
            return Expr(f"kl.clamp({e.text}, {lo}, 1.5)", e.exact)
        if kind == 6:
            cond = self.expr(B, d)
            l, r = self.expr(F, d, exact), self.expr(F, d, exact)
            if self.c.chance(0.5):
                return Expr(f"kl.where({cond.text}, {l.text}, {r.text})", l.exact and r.exact)
            return Expr(f"({l.text} if {cond.text} else {r.text})", l.exact and r.exact)
        if kind == 7:
            e = self.expr(I, d)
            return Expr(f"float({e.text})")
        if kind == 8:
            e = self.expr(D, d, exact)
            return Expr(f"kl.float32({e.text})", e.exact)
        if kind == 9:
            l, r = self.expr(F, d, True), self.expr(F, d, True)
            op = self.c.pick(["%", "//"])
            return Expr(f"({l.text} {op} {divisor(r.text)})")
        if kind == 10:
            v = self.expr(V, d, exact)
            form = self.c.pick(["{v}[{k}]", "{v}.{c}", "kl.dot({v}, {w})", "kl.length_sq({v})"])
            w = self.expr(V, d, exact) if "w" in form else Expr("")
            text = form.format(v=v.text, w=w.text, k=self.c.int(0, 2), c=self.c.pick("xyz"))
            return Expr(text, v.exact and w.exact)
        funcs = [f for f in self.funcs if f[2] or not exact]
        if kind == 11 and funcs:
            name, params, fexact = self.c.pick(funcs)
            args = [self.expr(t, d, exact) for t in params]
            return Expr(f"{name}({', '.join(a.text for a in args)})",
                        fexact and all(a.exact for a in args))
        if kind == 11:
            return self.expr(F, d, exact)
        # inexact: different math libraries may round these differently
        e = self.expr(F, d)
        form = self.c.pick(["kl.sin({e})", "kl.cos({e})", "kl.tanh({e})", "kl.atan({e})",
                            "kl.exp(kl.clamp({e}, -10.0, 10.0))",
                            "kl.log(kl.abs({e}) + 0.5)", "kl.sinh(kl.clamp({e}, -5.0, 5.0))",
                            "kl.pow(kl.abs({e}) + 0.5, 1.5)", "kl.length({v})",
                            "kl.lerp({e}, 2.0, 0.25)", "kl.smoothstep(-1.0, 1.0, {e})"])
        v = self.expr(V, d) if "{v}" in form else Expr("")
        return Expr(form.format(e=e.text, v=v.text), False)

    def expr_float64(self, depth, exact) -> Expr:
        if depth <= 0 or self.c.chance(0.3):
            options = ([] if self.in_func else ["d"]) + self.visible(D)
            if options and self.c.chance(0.7):
                return Expr(self.c.pick(options))
            return Expr(f"kl.float64({self.c.pick(self.FLOAT_LITERALS)})")
        d = depth - 1
        kind = self.c.int(0, 4 if exact else 5)
        if kind == 0:
            l, r = self.expr(D, d, exact), self.expr(D, d, exact)
            return Expr(f"({l.text} {self.c.pick(['+', '-', '*'])} {r.text})",
                        l.exact and r.exact)
        if kind == 1:
            e = self.expr(F, d, exact)
            return Expr(f"kl.float64({e.text})", e.exact)
        if kind == 2:
            l, r = self.expr(D, d, exact), self.expr(D, d, True)
            return Expr(f"({l.text} / {divisor(r.text)})", l.exact)
        if kind == 3:
            l, r = self.expr(D, d, exact), self.expr(D, d, exact)
            return Expr(f"kl.max({l.text}, {r.text})", l.exact and r.exact)
        if kind == 4:
            e = self.expr(I, d)
            return Expr(f"kl.float64({e.text})")
        e = self.expr(D, d)
        return Expr(f"kl.cos({e.text})", False)

    def expr_int32(self, depth, exact) -> Expr:
        fixed = ["i", "n"] if not self.in_func else []
        if depth <= 0 or self.c.chance(0.3):
            if self.c.chance(0.35) or not (fixed + self.visible(I)):
                return Expr(self.c.pick(self.INT_LITERALS))
            return self.leaf(I, fixed)
        d = depth - 1
        kind = self.c.int(0, 6)
        if kind == 0:
            l, r = self.expr(I, d), self.expr(I, d)
            op = self.c.pick(["+", "-", "*", "//", "%"])
            right = divisor(r.text) if op in ("//", "%") else r.text
            return Expr(in_int32_range(f"({l.text} {op} {right})"))
        if kind == 1:
            e = self.expr(F, d, True)
            return Expr(f"int({e.text})")
        if kind == 2:
            l, r = self.expr(I, d), self.expr(I, d)
            return Expr(f"{self.c.pick(['kl.min', 'kl.max'])}({l.text}, {r.text})")
        if kind == 3:
            cond = self.expr(B, d)
            l, r = self.expr(I, d), self.expr(I, d)
            return Expr(f"({l.text} if {cond.text} else {r.text})")
        if kind == 4:
            e = self.expr(I, d)
            return Expr(f"kl.abs({e.text})" if self.c.chance(0.5) else f"(-{e.text})")
        if kind == 5 and not self.in_func:
            return Expr(self.c.pick(["x.shape[0]", "out.shape[0]"]))
        e = self.expr(D, d, True)
        return Expr(f"kl.int32({e.text})")

    def expr_bool(self, depth, exact=True) -> Expr:
        if depth <= 0 or self.c.chance(0.2):
            options = self.visible(B)
            if options and self.c.chance(0.5):
                return Expr(self.c.pick(options))
            t = self.c.pick([I, F])
            l, r = self.expr(t, 0, True), self.expr(t, 0, True)
            return Expr(f"({l.text} {self.c.pick(['<', '<=', '>', '>=', '==', '!='])} "
                        f"{r.text})")
        d = depth - 1
        kind = self.c.int(0, 4)
        if kind == 0:
            t = self.c.pick([I, F, D])
            l, r = self.expr(t, d, True), self.expr(t, d, True)
            return Expr(f"({l.text} {self.c.pick(['<', '<=', '>', '>=', '==', '!='])} "
                        f"{r.text})")
        if kind == 1:
            l, r = self.expr(B, d), self.expr(B, d)
            return Expr(f"({l.text} {self.c.pick(['and', 'or'])} {r.text})")
        if kind == 2:
            return Expr(f"(not {self.expr(B, d).text})")
        if kind == 3:
            t = self.c.pick([I, F])
            lo, mid, hi = (self.expr(t, d, True) for _ in range(3))
            return Expr(f"({lo.text} < {mid.text} <= {hi.text})")
        return Expr(self.c.pick(["True", "False"]))

    def expr_vec3(self, depth, exact) -> Expr:
        if depth <= 0 or self.c.chance(0.25):
            options = self.visible(V)
            if options and self.c.chance(0.6):
                return Expr(self.c.pick(options))
            args = [self.expr(F, 0, exact) for _ in range(3)]
            return Expr(f"kl.vec3({', '.join(a.text for a in args)})",
                        all(a.exact for a in args))
        d = depth - 1
        kind = self.c.int(0, 5)
        if kind == 0:
            args = [self.expr(F, d, exact) for _ in range(3)]
            return Expr(f"kl.vec3({', '.join(a.text for a in args)})",
                        all(a.exact for a in args))
        if kind == 1:
            l, r = self.expr(V, d, exact), self.expr(V, d, exact)
            return Expr(f"({l.text} {self.c.pick(['+', '-'])} {r.text})", l.exact and r.exact)
        if kind == 2:
            s, v = self.expr(F, d, exact), self.expr(V, d, exact)
            text = f"({s.text} * {v.text})" if self.c.chance(0.5) else f"({v.text} * {s.text})"
            return Expr(text, s.exact and v.exact)
        if kind == 3:
            l, r = self.expr(V, d, exact), self.expr(V, d, exact)
            return Expr(f"kl.cross({l.text}, {r.text})", l.exact and r.exact)
        if kind == 4:
            v = self.expr(V, d, True)
            return Expr(f"kl.normalize({v.text})")
        v = self.expr(V, d, exact)
        return Expr(f"(-{v.text})", v.exact)

    # -- statements --
    def emit(self, indent: int, text: str):
        self.lines.append("    " * indent + text)

    def block(self, indent: int, depth: int, min_stmts: int = 1):
        self.scopes.append(Scope())
        start = len(self.lines)
        most = max(min_stmts, self.max_stmts - 2 * (self.max_depth - depth))
        for _ in range(self.c.int(min_stmts, most)):
            self.stmt(indent, depth)
        if len(self.lines) == start:
            self.emit(indent, "pass")
        self.scopes.pop()

    def stmt(self, indent: int, depth: int):
        kinds = ["assign", "store", "reassign", "if", "for", "while", "component", "jump"]
        kind = self.c.pick(kinds if depth > 0 else kinds[:3] + ["component", "jump"])
        e = max(depth, 1)
        if kind == "assign":
            t = self.c.pick([F, I, F, B, V, D])
            name = self.fresh({F: "f", I: "k", B: "c", V: "v", D: "g"}[t])
            value = self.expr(t, e)
            if t == I and value.text.lstrip("-").isdigit() and self.c.chance(0.5):
                value = Expr(f"int({value.text})")
            self.emit(indent, f"{name} = {value.text}")
            self.declare(name, t)
        elif kind == "store" and not self.in_func:
            target, t = self.c.pick([("out[i]", F), ("iout[i]", I), ("dout[i]", D),
                                     ("vout[i]", V), ("out[(i + 1) % 6]", F)])
            op = "+=" if t in (F, D, V) and self.c.chance(0.3) else "="
            self.emit(indent, f"{target} {op} {self.expr(t, e).text}")
        elif kind == "reassign":
            t = self.c.pick([F, I, V, D, B])
            names = [n for n in self.visible(t) if n not in self.protected]
            if not names:
                return self.stmt(indent, 0) if depth > 0 else None
            name = self.c.pick(names)
            op = "=" if t == B else self.c.pick(["=", "+=", "-=", "*="] if t != V else
                                                 ["=", "+=", "-="])
            self.emit(indent, f"{name} {op} {self.expr(t, e).text}")
        elif kind == "component":
            names = self.visible(V)
            if names:
                name = self.c.pick(names)
                target = f"{name}[{self.c.int(0, 2)}]" if self.c.chance(0.5) \
                    else f"{name}.{self.c.pick('xyz')}"
                self.emit(indent, f"{target} = {self.expr(F, e).text}")
        elif kind == "jump":
            if self.loops and self.c.chance(0.7):
                self.emit(indent, f"if {self.expr(B, 1).text}:")
                self.emit(indent + 1, self.c.pick(["break", "continue"]))
            elif not self.loops or self.c.chance(0.5):
                self.emit(indent, f"if {self.expr(B, 1).text}:")
                self.emit(indent + 1, "return" if not self.in_func
                          else f"return {self.expr(F, 1).text}")
        elif kind == "if":
            self.emit(indent, f"if {self.expr(B, 2).text}:")
            self.block(indent + 1, depth - 1)
            for _ in range(self.c.int(0, 1)):
                self.emit(indent, f"elif {self.expr(B, 2).text}:")
                self.block(indent + 1, depth - 1)
            if self.c.chance(0.5):
                self.emit(indent, "else:")
                self.block(indent + 1, depth - 1)
        elif kind == "for":
            var = self.fresh("j")
            bounds = self.c.pick(["3", "n", "1, n", "n, 0, -1", "0, 7, 2", "i % 3",
                                  "-2, 2", "5, 1, -2"])
            if self.in_func:
                bounds = self.c.pick(["3", "0, 7, 2", "5, 1, -2"])
            self.emit(indent, f"for {var} in range({bounds}):")
            self.loops.append("for")
            self.scopes.append(Scope({var: I}))
            self.block(indent + 1, depth - 1)
            self.scopes.pop()
            self.loops.pop()
        elif kind == "while":
            counter = self.fresh("w")
            self.protected.add(counter)
            self.emit(indent, f"{counter} = int(0)")
            extra = f" and {self.expr(B, 1).text}" if self.c.chance(0.5) else ""
            bound = self.c.pick(["3", "4"] if self.in_func else ["3", "n", "4"])
            self.emit(indent, f"while {counter} < {bound}{extra}:")
            self.emit(indent + 1, f"{counter} += 1")
            self.loops.append("while")
            self.block(indent + 1, depth - 1)
            self.loops.pop()

    def func(self):
        name = self.fresh("func")
        params = [self.c.pick([F, I, F, V]) for _ in range(self.c.int(1, 3))]
        names = [f"p{k}" for k in range(len(params))]
        ann = {F: "float", I: "int", V: "kl.vec3"}
        self.lines.append("@kl.func")
        signature = ", ".join(f"{n}: {ann[t]}" for n, t in zip(names, params))
        self.lines.append(f"def {name}({signature}):")
        saved_exact, self.exact, self.in_func = self.exact, True, True
        saved_scopes, self.scopes = self.scopes, [Scope(dict(zip(names, params)))]
        self.block(1, 1)
        self.emit(1, f"return {self.expr(F, 2).text}")
        self.scopes = saved_scopes
        self.funcs.append((name, params, self.exact))
        self.exact, self.in_func = saved_exact and self.exact, False
        self.lines += ["", ""]

    def program(self) -> str:
        self.lines = ["import kernlab as kl", "", ""]
        for _ in range(self.c.int(0, 2)):
            self.func()
        self.lines += [
            "@kl.kernel",
            "def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, "
            "b: float, n: int,",
            "         d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),",
            "         dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):",
            "    i = kl.tid()",
        ]
        self.block(1, self.max_depth, min_stmts=2)
        self.emit(1, f"out[i] += {self.expr(F, 2).text}")
        return "\n".join(self.lines) + "\n"


def _constant_value(text: str):
    """The value of an expression made of literals only (which the frontend folds), else
    None."""
    try:
        return eval(text, {"__builtins__": {}})  # noqa: S307 - our own generated text
    except Exception:
        return None


def divisor(text: str) -> str:
    """A divisor that does not fold to a literal zero (a compile error, rightly)."""
    return "1" if _constant_value(text) == 0 else text


def in_int32_range(text: str) -> str:
    """An int expression that does not fold to a literal outside int32 (a compile error)."""
    value = _constant_value(text)
    return "7" if isinstance(value, int) and not -2**31 <= value < 2**31 else text


# ---- running a source ---------------------------------------------------------------------

_sources = itertools.count()


def load(source: str) -> tuple[dict, str]:
    """Execute ``source`` under a fresh fake file name that linecache knows (the frontend
    reads kernel source with inspect, which reads linecache)."""
    filename = f"<kernlab-fuzz-{next(_sources)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # e.g. "is" with a literal
        code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102
    return namespace, filename


def forget(filename: str):
    linecache.cache.pop(filename, None)


class TimedOut(Exception):
    pass


def with_deadline(seconds: float, fn):
    """fn(), or TimedOut after ``seconds``: a KeyboardInterrupt is raised in this (main)
    thread, which also exercises the interrupt path of both backends."""
    fired = threading.Event()

    def fire():
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(seconds, fire)
    try:
        try:
            timer.start()
            return fn()
        finally:
            timer.cancel()
            timer.join()
            if fired.is_set():
                _flush_pending_signal()
    except KeyboardInterrupt:
        if fired.is_set():
            raise TimedOut from None
        raise


def _flush_pending_signal():
    time.sleep(0.001)  # a Python call: the pending KeyboardInterrupt is raised here at latest


def make_inputs(rng: np.random.Generator) -> dict:
    specials = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0], np.float32)
    x = rng.uniform(-2.0, 2.0, N).astype(np.float32)
    x[rng.integers(0, N)] = specials[rng.integers(0, len(specials))]
    return dict(x=x, y=rng.uniform(-2.0, 2.0, N).astype(np.float32),
                a=float(rng.choice([0.0, 1.5, -0.75, 2.0, 0.3])),
                b=float(rng.choice([0.0, -1.0, 0.25, 3.0])), n=int(rng.integers(0, 5)),
                d=float(rng.choice([0.0, 1.25, -2.0])))


ARRAYS = {"x": kl.float32, "y": kl.float32, "out": kl.float32, "iout": kl.int32,
          "dout": kl.float64, "vout": kl.vec3}


def run_backend(kernel, backend: str, values: dict, adjoint: bool):
    """Run the kernel (and its adjoint) on one backend from fresh copies of the inputs:
    the arrays after the run, or the error the launch raised."""
    kl.config.cpu_backend = backend
    params = [p.name for p in kernel.ir.params]
    arrays = {}
    for name, dtype in ARRAYS.items():
        data = values.get(name)
        shape = (N, 3) if dtype == kl.vec3 else (N,)
        arr = np.zeros(shape, dtype.scalar.np) if data is None else np.array(data)
        arrays[name] = kl.from_numpy(arr, dtype=dtype,
                                     requires_grad=adjoint and dtype != kl.int32)
    args = [arrays[p] if p in arrays else values[p] for p in params]
    try:
        kl.launch(kernel, N, inputs=args)
        if adjoint:
            for arr in arrays.values():
                if arr.requires_grad:
                    arr.grad.fill_(1.0)
            adj = [arrays[p].grad if p in arrays and arrays[p].requires_grad else None
                   for p in params]
            kl.launch(kernel, N, inputs=args, adj_inputs=adj, adjoint=True)
    except KernelError as err:
        return err
    out = {name: arr.numpy().copy() for name, arr in arrays.items()}
    if adjoint:
        out.update({f"adj_{n}": arr.grad.numpy().copy() for n, arr in arrays.items()
                    if arr.requires_grad})
    return out


def agree(left, right, exact: bool) -> str | None:
    """None when two runs agree, else what differs."""
    if isinstance(left, Exception) or isinstance(right, Exception):
        if type(left) is type(right) and str(left) == str(right):
            return None
        return f"interp: {left!r}\nllvm:   {right!r}"
    for name in left:
        l, r = left[name], right[name]
        if exact:
            same = np.array_equal(l, r, equal_nan=True)
        else:
            same = np.array_equal(np.isnan(l), np.isnan(r)) and np.allclose(
                l, r, rtol=1e-3, atol=1e-3, equal_nan=True)
        if not same:
            return f"{name}: interp {l.tolist()} vs llvm {r.tolist()}"
    return None


@dataclass
class Stats:
    counts: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    start: float = field(default_factory=time.perf_counter)

    def summary(self, title: str) -> str:
        took = time.perf_counter() - self.start
        errs = ", ".join(f"{k}: {v}" for k, v in self.errors.most_common())
        counts = ", ".join(f"{k}: {v}" for k, v in self.counts.items())
        return (f"{title}: {self.counts['examples']} examples in {took:.0f} s ({counts}); "
                f"errors by class: {errs or 'none'}; 0 crashes, 0 mismatches")


def check_source(source: str, stats: Stats, exact: bool = False, run: bool = True,
                 rng_seed: int = 0):
    """The oracle. Fails the test (AssertionError) on a bug."""
    stats.counts["examples"] += 1
    try:
        namespace, filename = load(source)
    except Exception:  # not valid Python (or its annotations fail): not the compiler's case
        stats.counts["python rejects"] += 1
        return
    try:
        kernel = namespace.get("fuzz")
        if not isinstance(kernel, kl.Kernel):
            stats.counts["no kernel"] += 1
            return
        n_lines = len(source.splitlines())
        try:
            kernel.ir
            kl.config.cpu_backend = "llvm"
            kernel.compiled("llvm")
        except LoweringError as err:
            raise AssertionError(f"LLVM internal error:\n{err}\n--- source:\n{source}")
        except KernelError as err:
            text = str(err)  # the message renders
            assert err.loc is not None, f"no location:\n{text}\n--- source:\n{source}"
            assert err.loc.file == filename and 1 <= err.loc.line <= n_lines, \
                f"bad location {err.loc}:\n{text}\n--- source:\n{source}"
            stats.counts["rejected with a line"] += 1
            stats.errors[type(err).__name__] += 1
            return err
        stats.counts["compiled"] += 1
        adjoint = _adjoint_compiles(kernel, filename, n_lines, source, stats)
        if not run:
            return
        values = make_inputs(np.random.default_rng(rng_seed))
        try:
            results = [with_deadline(5.0, lambda b=b: run_backend(kernel, b, values, adjoint))
                       for b in ("interp", "llvm")]
        except TimedOut:
            stats.counts["timed out (ran too long)"] += 1
            return
        problem = agree(*results, exact=exact)
        how = "exactly" if exact else "within tolerance"
        assert problem is None, \
            f"LLVM and the interpreter should agree {how}:\n{problem}\n--- source:\n{source}"
        stats.counts["ran, agreed" + (" (with adjoint)" if adjoint else "")] += 1
        stats.counts["compared exactly" if exact else "compared within tolerance"] += 1
    finally:
        kl.config.cpu_backend = "llvm"
        forget(filename)


def _adjoint_compiles(kernel, filename, n_lines, source, stats) -> bool:
    try:
        kernel.adjoint_ir
        kernel.compiled("llvm", adjoint=True)
    except LoweringError as err:
        raise AssertionError(f"LLVM internal error in the adjoint:\n{err}\n--- source:\n"
                             f"{source}")
    except KernelError as err:
        str(err)
        assert err.loc is not None and err.loc.file == filename \
            and 1 <= err.loc.line <= n_lines, f"bad location:\n{err}\n--- source:\n{source}"
        stats.errors[f"adjoint: {type(err).__name__}"] += 1
        return False
    return True


def examples(pytestconfig, ci: int, long: int) -> int:
    return long if pytestconfig.getoption("--long-fuzz") else ci


def fuzz_settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=n < 500,
                    suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture(autouse=True)
def _restore_config(monkeypatch):
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")
    monkeypatch.setattr(kl.config, "verify_fp", False)


# ---- the tests: random programs -----------------------------------------------------------

def test_random_programs_compile_and_agree_with_the_interpreter(pytestconfig):
    stats = Stats()

    @fuzz_settings(examples(pytestconfig, 25, 2000))
    @given(st.data())
    def one(data):
        gen = ProgramGenerator(Choices(data))
        source = gen.program()
        status = check_source(source, stats, exact=gen.exact,
                              rng_seed=data.draw(st.integers(0, 2**16)))
        assert not isinstance(status, KernelError), \
            f"a valid program was rejected:\n{status}\n--- source:\n{source}"

    one()
    print("\n" + stats.summary("random programs"))


# ---- mutations ----------------------------------------------------------------------------

CORPUS = [
    '''
    @kl.kernel
    def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, b: float, n: int,
             d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),
             dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        out[i] = a * x[i] + y[i]
    ''',
    '''
    @kl.kernel
    def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, b: float, n: int,
             d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),
             dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        s = float(0.0)
        for k in range(n):
            if x[(i + k) % 6] > 0.0:
                s += x[(i + k) % 6]
            else:
                continue
        out[i] = s
        iout[i] = n * 2 // 3
    ''',
    '''
    @kl.kernel
    def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, b: float, n: int,
             d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),
             dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        t = x[i]
        steps = int(0)
        while t > 0.1 and steps < 10:
            t = t * 0.5
            steps += 1
            if steps == n:
                break
        out[i] = t
        iout[i] = steps
    ''',
    '''
    @kl.func
    def helper(p: kl.vec3, s: float):
        if s < 0.0:
            return kl.length(p)
        return kl.dot(p, p) * s


    @kl.kernel
    def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, b: float, n: int,
             d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),
             dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        v = kl.vec3(x[i], y[i], a)
        w = kl.cross(v, kl.vec3(0.0, 1.0, 0.0))
        v[1] = b
        vout[i] = w + v * 2.0
        out[i] = helper(v, x[i] - y[i])
    ''',
    '''
    @kl.kernel
    def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, b: float, n: int,
             d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),
             dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        if i >= n:
            return
        m = kl.mat22(x[i], 1.0, 0.0, y[i])
        q = kl.mul(m, kl.vec2(a, b))
        out[i] = kl.determinant(m) + q[0]
        dout[i] = kl.float64(out[i]) * d
        kl.atomic_add(iout, 0, 1)
        out[0] += kl.where(x[i] > y[i], 1.0, -1.0)
    ''',
    '''
    @kl.kernel
    def fuzz(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float, b: float, n: int,
             d: kl.float64, out: kl.array(dtype=float), iout: kl.array(dtype=int),
             dout: kl.array(dtype=kl.float64), vout: kl.array(dtype=kl.vec3)):
        i = kl.tid()
        acc = kl.float64(0.0)
        for r in range(3):
            for c in range(r, 3):
                acc += kl.float64(x[(r + c) % 6]) * d
                if c == 2 and r == 1:
                    break
        dout[i] = acc
        out[i] = kl.sin(x[i]) ** 2.0 + kl.cos(x[i]) ** 2.0
        iout[i] = int(kl.floor(x[i] * 4.0)) % 3
    ''',
]

NAMES = ["x", "y", "a", "b", "n", "d", "i", "out", "iout", "kl", "t", "s", "v", "nope",
         "float", "int", "range", "len", "print", "helper", "fuzz", "self", "None", "True"]
CONSTANTS = [0, 1, -1, 2**31, 2**63, 1.5, -0.0, float("inf"), 1e300, True, None, "text",
             b"bytes", 3j, ...]
BINOPS = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult,
          ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift]
CMPOPS = [ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In,
          ast.NotIn]
ANNOTATIONS = ["float", "int", "kl.float64", "kl.vec3", "kl.mat33", "kl.array(dtype=float)",
               "kl.array(dtype=float, ndim=2)", "kl.array(dtype=kl.vec3)", "kl.bool",
               "kl.uint32", "kl.int64", "str", "list", "kl.array", "None", "3"]
BUILTINS = ["kl.sin", "kl.min", "kl.dot", "kl.vec3", "kl.atomic_add", "kl.where", "kl.clamp",
            "kl.length", "kl.float64", "float", "int", "range", "print", "len", "abs",
            "kl.tid", "kl.mat22", "kl.normalize", "kl.cross", "kl.lerp", "kl.atan2"]
BAD_STATEMENTS = [
    "x = [1.0 for _ in range(3)]", "with open('f'):\n    pass", "try:\n    pass\nexcept:\n    pass",
    "f = lambda q: q", "print(f'{a}')", "del a", "import math", "out[0] = x[1:3]",
    "global a", "assert a > 0.0", "raise ValueError()", "yield a", "z = {1: 2}",
    "z = {1.0, 2.0}", "z = (1.0, 2.0)", "z = 'text'", "z = None", "a, b = b",
    "a = b = 1.0", "x.shape = 3", "out[i] @= 2.0", "z = a if a else", "class C:\n    pass",
    "def inner():\n    pass", "for q in x:\n    pass", "for q in range(1.5):\n    pass",
    "for q in range(0, 3, 0):\n    pass", "while True:\n    pass\nelse:\n    pass",
    "for q in range(3):\n    pass\nelse:\n    pass", "break", "continue", "return 1.0",
    "z = x", "x = y", "z = a[0]", "z = x[i, i]", "z = x[i][0]", "z = out.shape[3]",
    "z = kl.tid(3)", "z = kl.vec3(1.0, 2.0)", "z = kl.mat22(1.0)", "z = (z := 1.0)",
    "z = a < b < x", "z = a is b", "z = a in b", "z = ~n", "z = n << 2", "z = a ** n",
    "z = kl.sin(a, b)", "z = kl.sin()", "z = kl.nothing(a)", "z = a.real", "z = a[0]",
    "z = float('nan')", "z = int(2**40)", "z = 2**40", "z = 1e400", "z = -2**31 - 1",
    "z = kl.float64(a) + a", "z = n * 2.0", "z = kl.where(a, b, a)", "z = kl.vec3(a) * x",
    "kl.atomic_add(out, 0)", "kl.atomic_add(a, 0, 1.0)", "print(a, sep='')", "z = x[i] + out",
    "out[i] += kl.vec3(1.0)", "iout[i] = 1.5", "vout[i] = 1.0", "dout[i] = a",
    "z = kl.mul(kl.mat22(1.0), kl.vec3(1.0))", "z = kl.adjoint[a]", "z = fuzz(x)",
    "z = kl.array(dtype=float)", "z = kl.constant(1.0)", "z = kl.tid", "z = kl",
    "z = kl.float32", "z = a.x", "z = kl.vec3(a).w", "z = kl.vec3(a)[3]", "z = kl.vec3(a)[n]",
    "z = kl.int32(a) / 0", "async def g():\n    pass", "nonlocal a", "z = (yield)",
    "z: 3 = 1.0", "z: kl.array(dtype=float) = x", "z: kl.sin(dtype=float) = 1.0",
    "z: kl.vec3 = kl.vec3(a)", "z: kl.float64 = a", "z: float = n", "z: kl.vec3 = 1.0",
    "z = kl.uint32(-1)", "z = kl.int32(1e10)", "z = kl.int32(float('nan'))",
    "z = kl.vec3(a)[n]", "z = kl.mat22(a)[n, 0]", "z = kl.vec3(a)\nz[n] = 1.0",
    "z = [a]", "z = a if n else b", "z = not x", "z = x and y", "if x:\n    pass",
    "while n:\n    n -= 1", "z = n // 0", "z = kl.select(a, b)", "z = a.__class__",
    # issue 17: what crashed the process or leaked an internal exception
    "kl.printf('%d %s\\n', i)", "kl.printf('%n', i)", "kl.printf('%s %s %s')",
    "kl.printf('%f', n)", "kl.printf('%d', a)", "kl.printf('%*d', n, n)", "kl.printf('%p', a)",
    "kl.printf('%d %f\\n', i, a)", "kl.printf('%s', x)", "print(x)", "print(out, a)",
    "z = (-8.0) ** (1.0 / 3.0)", "z = 0.0 ** -1.0", "z = 9 ** 9 ** 9", "z = 10.0 ** 400.0",
    "z = " + " + ".join(["a"] * 1500), "v" * 2000 + " = a",
]


class Mutator(ast.NodeTransformer):
    """Applies one random mutation to a parsed kernel source."""

    def __init__(self, c: Choices):
        self.c = c

    def mutate(self, tree: ast.Module) -> ast.Module:
        tree = copy.deepcopy(tree)
        kind = self.c.int(0, 9)
        nodes = [n for n in ast.walk(tree)]
        pick = lambda cls: [n for n in nodes if isinstance(n, cls)]  # noqa: E731
        if kind == 0 and pick(ast.Name):
            self.c.pick(pick(ast.Name)).id = self.c.pick(NAMES)
        elif kind == 1 and pick(ast.Constant):
            self.c.pick(pick(ast.Constant)).value = self.c.pick(CONSTANTS)
        elif kind == 2 and pick(ast.BinOp):
            self.c.pick(pick(ast.BinOp)).op = self.c.pick(BINOPS)()
        elif kind == 3 and pick(ast.Compare):
            node = self.c.pick(pick(ast.Compare))
            node.ops[self.c.int(0, len(node.ops) - 1)] = self.c.pick(CMPOPS)()
        elif kind == 4 and pick(ast.arg):
            node = self.c.pick(pick(ast.arg))
            node.annotation = ast.parse(self.c.pick(ANNOTATIONS), mode="eval").body
        elif kind == 5 and pick(ast.Call):
            node = self.c.pick(pick(ast.Call))
            how = self.c.int(0, 2)
            if how == 0:
                node.func = ast.parse(self.c.pick(BUILTINS), mode="eval").body
            elif how == 1 and node.args:
                node.args.pop(self.c.int(0, len(node.args) - 1))
            else:
                node.args.append(copy.deepcopy(self.c.pick(pick(ast.expr))))
        elif kind == 6 and pick(ast.Subscript):
            node = self.c.pick(pick(ast.Subscript))
            node.slice = self.c.pick([
                ast.Tuple([node.slice, ast.Constant(0)], ast.Load()),
                ast.Constant(-1), ast.Constant(10**6), ast.Name("a", ast.Load()),
                ast.Slice(ast.Constant(0), ast.Constant(2), None),
                ast.BinOp(node.slice, ast.Add(), ast.Constant(self.c.int(1, 7)))])
        elif kind == 7:  # an expression replaced by another one from elsewhere
            exprs = [n for n in pick(ast.expr) if not isinstance(n, ast.Starred)]
            if len(exprs) > 1:
                target, donor = self.c.pick(exprs), copy.deepcopy(self.c.pick(exprs))
                for parent in nodes:
                    for name, value in ast.iter_fields(parent):
                        if value is target:
                            setattr(parent, name, donor)
                        elif isinstance(value, list) and target in value:
                            value[value.index(target)] = donor
        else:  # statements: drop, duplicate, swap, or wrap in a loop or branch
            bodies = [n.body for n in nodes if isinstance(getattr(n, "body", None), list)
                      and n.body and isinstance(n.body[0], ast.stmt)]
            body = self.c.pick(bodies)
            k = self.c.int(0, len(body) - 1)
            how = self.c.int(0, 4)
            if how == 0 and len(body) > 1:
                body.pop(k)
            elif how == 1:
                body.insert(k, copy.deepcopy(body[k]))
            elif how == 2 and len(body) > 1:
                j = self.c.int(0, len(body) - 1)
                body[k], body[j] = body[j], body[k]
            elif how == 3:
                body[k] = ast.parse(f"for q in range(2):\n    pass").body[0]
                body[k].body = [copy.deepcopy(b) for b in body[max(0, k - 1):k + 1]] or \
                    [ast.Pass()]
            else:
                body[k] = ast.If(ast.parse("a > b", mode="eval").body, [body[k]], [])
        return ast.fix_missing_locations(tree)


def _with_header(body: str) -> str:
    return "import kernlab as kl\n\n\n" + textwrap.dedent(body).strip() + "\n"


def test_mutated_kernels_compile_or_fail_with_a_line(pytestconfig):
    stats = Stats()

    @fuzz_settings(examples(pytestconfig, 40, 2000))
    @given(st.data())
    def one(data):
        c = Choices(data)
        if c.chance(0.5):
            source = _with_header(c.pick(CORPUS))
        else:
            source = ProgramGenerator(c, max_depth=2, max_stmts=4).program()
        tree = ast.parse(source)
        mutator = Mutator(c)
        for _ in range(c.int(1, 3)):
            tree = mutator.mutate(tree)
        try:
            mutated = ast.unparse(tree) + "\n"
        except Exception:
            stats.counts["unparse failed"] += 1
            return
        check_source(mutated, stats, exact=False, rng_seed=c.int(0, 2**16))

    one()
    print("\n" + stats.summary("mutated kernels"))
    assert stats.counts["rejected with a line"] > 0 and stats.counts["compiled"] > 0


def test_unsupported_constructs_are_rejected_with_their_line(pytestconfig):
    stats = Stats()

    @fuzz_settings(examples(pytestconfig, 40, 1000))
    @given(st.data())
    def one(data):
        c = Choices(data)
        source = _with_header(c.pick(CORPUS)) if c.chance(0.5) else \
            ProgramGenerator(c, max_depth=2, max_stmts=3).program()
        lines = source.splitlines()
        body = [k for k, line in enumerate(lines) if line.startswith("    ")
                and not line.lstrip().startswith(("kl.array", "d:", "dout:"))
                and k > next(j for j, l in enumerate(lines) if l.startswith("def fuzz"))]
        at = c.pick(body[1:] or body)
        indent = len(lines[at]) - len(lines[at].lstrip())
        if lines[at - 1].rstrip().endswith(":"):
            indent = len(lines[at - 1]) - len(lines[at - 1].lstrip()) + 4
        bad = textwrap.indent(c.pick(BAD_STATEMENTS), " " * indent)
        check_source("\n".join(lines[:at] + bad.splitlines() + lines[at:]) + "\n", stats,
                     rng_seed=c.int(0, 2**16))

    one()
    print("\n" + stats.summary("planted constructs"))
    assert stats.counts["rejected with a line"] > 0


# ---- regressions the fuzzers found ------------------------------------------------------

def test_corpus_kernels_compile_and_agree():
    stats = Stats()
    for body in CORPUS:
        check_source(_with_header(body), stats, exact=False)
    assert stats.counts["ran, agreed (with adjoint)"] + stats.counts["ran, agreed"] \
        == len(CORPUS), stats.summary("corpus")


@kl.kernel
def component_at(out: kl.array(dtype=float), k: int, r: int):
    v = kl.vec3(1.0, 2.0, 3.0)
    m = kl.mat22(1.0, 2.0, 3.0, 4.0)
    v[k] = 5.0
    out[0] = v[k] + m[r, 1]


def test_a_runtime_vector_index_out_of_range_is_an_index_error(backend):
    out = kl.zeros(1, dtype=float)
    kl.launch(component_at, 1, inputs=[out, 2, 1])
    assert out.numpy()[0] == 9.0
    for k, r, text in [(3, 0, "index 3 is out of bounds for axis 0 of vector 'v' with shape (3,)"),
                       (-1, 0, "index -1 is out of bounds for axis 0 of vector 'v'"),
                       (0, 2, "index 2 is out of bounds for axis 0 of matrix 'm' with "
                              "shape (2, 2)")]:
        with pytest.raises(IndexError, match=text.replace("(", r"\(").replace(")", r"\)")):
            kl.launch(component_at, 1, inputs=[out, k, r])


def _compile_error(body: str) -> KernelError:
    source = _with_header(f"""
        @kl.kernel
        def fuzz(out: kl.array(dtype=float), n: int):
            {body}
        """)
    namespace, filename = load(source)
    try:
        with pytest.raises(KernelError) as info:
            namespace["fuzz"].ir
        assert info.value.loc.line == 6
        return info.value
    finally:
        forget(filename)


@pytest.mark.parametrize("body, message", [
    ("out[0] = kl.vec3(1.0)[3]", "index 3 is out of range for axis 0 of a vec3"),
    ("out[0] = kl.mat22(1.0)[0, 2]", "index 2 is out of range for axis 1"),
    ("z = 2**40", "does not fit in int32"),
    ("z: 3 = 1.0", "is not a scalar, vector or matrix type"),
    ("z: kl.array(dtype=float) = out", "is not a scalar, vector or matrix type"),
    ("z: kl.sin(dtype=float) = 1.0", "cannot be evaluated"),
])
def test_what_fuzzing_found_is_a_kernel_error_with_a_line(body, message):
    assert message in str(_compile_error(body))


@kl.kernel
def literal_casts(iout: kl.array(dtype=kl.int64), uout: kl.array(dtype=kl.uint32)):
    iout[0] = kl.int64(kl.int32(2**40 + 7))
    iout[1] = kl.int64(kl.int32(1e10))
    iout[2] = kl.int64(kl.int32(-1e10))
    iout[3] = kl.int64(kl.int32(-1e300 * 1e300))
    uout[0] = kl.uint32(-1)


def test_scalar_constructors_cast_literals_as_at_run_time(backend):
    iout, uout = kl.zeros(4, dtype=kl.int64), kl.zeros(1, dtype=kl.uint32)
    kl.launch(literal_casts, 1, inputs=[iout, uout])
    assert iout.numpy().tolist() == [7, 2**31 - 1, -2**31, -2**31]
    assert uout.numpy().tolist() == [2**32 - 1]
