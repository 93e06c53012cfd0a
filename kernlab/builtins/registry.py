"""The Builtin record and its type-rule matcher.

One record per builtin keeps every fact about it in one place: its signatures (the type
rule), a NumPy reference (the interpreter runs it, tests compare against it), the LLVM
lowering, the CUDA spelling and the derivative rule.

Signatures are small patterns over argument types. Letters bind type variables:

    F  a float scalar, bound to T        I  an integer scalar, bound to T
    N  an int or float scalar, bound to T X  any scalar (bool too), bound to T
    B  bool                              V  a vector, bound to V (its scalar to T)
    M  a matrix, bound to M (its scalar to T)
    FV / FM  a vector / matrix of floats  i  any integer scalar, bound to nothing
    L  a tile, bound to L (its scalar to T)  FL a tile of floats
    A  an array, bound to A

The return is one of the bound letters, a concrete Type, or a function of the binding.
Derivative rules have the form ``grad(g, args, ret, adj) -> tuple`` with one adjoint
contribution (a Value, or None) per argument; ``g`` emits IR by calling other builtins
(``g.mul(adj, g.cos(x))``), so every backend differentiates the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..types import FLOATS, INTS, Type, bool_

REGISTRY: dict[str, "Builtin"] = {}


class _Void(Type):
    """The result of a builtin called for its effect only (tile_store): no value."""

    def __repr__(self):
        return "None"


VOID = _Void()
_SCALAR_SETS = {"F": FLOATS, "I": INTS, "N": FLOATS + INTS}


@dataclass(frozen=True)
class Sig:
    params: tuple
    ret: object  # letter, Type, or callable(binding) -> Type

    def match(self, types) -> dict | None:
        if len(types) != len(self.params):
            return None
        bind: dict = {}
        for pat, t in zip(self.params, types):
            for key, val in _pattern(pat, t):
                if val is None or bind.setdefault(key, val) != val:
                    return None
        return bind

    def result(self, bind) -> Type:
        if isinstance(self.ret, Type):
            return self.ret
        if isinstance(self.ret, str):
            return bind[self.ret]
        return self.ret(bind)

    def __str__(self):
        ret = self.ret if isinstance(self.ret, (str, Type)) else "…"
        return f"({', '.join(map(str, self.params))}) -> {ret}"


def _pattern(pat, t):
    """(key, type) pairs a pattern letter binds for argument type t; a None type fails."""
    if isinstance(pat, Type):
        return [("=", t if t == pat else None)]
    s = t.is_scalar
    if pat == "F":
        return [("T", t if s and t.is_float else None)]
    if pat == "I":
        return [("T", t if s and t.is_int else None)]
    if pat == "i":
        return [("_", t if s and t.is_int else None)]
    if pat == "N":
        return [("T", t if s and t.kind != "b" else None)]
    if pat == "X":
        return [("T", t if s else None)]
    if pat == "B":
        return [("_", t if t == bool_ else None)]
    if pat in ("V", "FV", "IV"):  # any vector, a float vector, an integer vector
        ok = t.is_vector and (pat == "V" or t.is_float if pat != "IV" else t.scalar.is_int)
        return [("V", t if ok else None), ("T", t.scalar if ok else None)]
    if pat in ("M", "FM"):
        ok = t.is_matrix and (pat == "M" or t.is_float)
        return [("M", t if ok else None), ("T", t.scalar if ok else None)]
    if pat in ("L", "FL"):
        ok = t.is_tile and (pat == "L" or t.is_float)
        return [("L", t if ok else None), ("T", t.scalar if ok else None)]
    if pat == "A":
        return [("A", t if t.is_array else None)]
    raise ValueError(f"bad signature pattern {pat!r}")


def sig(*params, ret) -> Sig:
    return Sig(tuple(params), ret)


@dataclass
class Builtin:
    name: str
    sigs: list[Sig]
    numpy: Callable                      # reference implementation on NumPy values
    llvm: Callable | None = None         # (cx, *llvm_args) -> llvm value
    cuda: object = None  # format string over argument expressions, or (types, ret, args) -> str
    grad: Callable | None = None         # (g, args, ret, adj) -> tuple of adjoints
    differentiable: bool = True          # False: no gradient flows (floor, compare, ...)
    targeted: bool = False               # casts/constructors: resolve takes the target type
    # Argument positions whose primal value no adjoint of this call reads ("all": every one):
    # an array element overwritten after such a read still gets exact gradients (autodiff/
    # checks.py). ``scales``: positions that are linear only when every other argument is a
    # constant (x * 2.0, x / 4.0).
    linear_in: tuple | str = ()
    scales: tuple = ()
    doc: str = ""
    extra: dict = field(default_factory=dict)
    # Writes to its array arguments (tile_store, tile_atomic_add): an adjoint's forward
    # replay leaves it out, as it leaves out array stores.
    effects: bool = False
    # Its grad also takes ``arrays=``: the gradient array of each argument (None where
    # there is none or nobody asked), for builtins whose adjoint reads or accumulates
    # into an array's gradient (tile_load, tile_store, tile_atomic_add).
    array_grad: bool = False

    def resolve(self, types, target: Type | None = None) -> Type | None:
        """The result type for these argument types, or None when no signature fits."""
        for s in self.sigs:
            bind = s.match(types)
            if bind is not None:
                if self.targeted:
                    bind["target"] = target
                try:
                    res = s.result(bind)
                except (KeyError, ValueError):
                    continue
                if res is not None:
                    return res
        return None

    def candidates(self) -> str:
        """Signatures as a user reads them: sin(float32) -> float32 | sin(float64) -> ..."""
        out = []
        for s in self.sigs:
            params = getattr(s, "params", ())
            kinds = {p for p in params if isinstance(p, str)}
            if kinds and kinds <= set(_SCALAR_SETS) and len(kinds) == 1 \
                    and s.ret in ("T", bool_) and all(isinstance(p, str) for p in params):
                for t in _SCALAR_SETS[kinds.pop()]:
                    ret = t if s.ret == "T" else s.ret
                    out.append(f"{self.name}({', '.join([str(t)] * len(params))}) -> {ret}")
            else:
                out.append(f"{self.name}{s}")
        return " | ".join(out)


def builtin(name, sigs, numpy, **kw) -> Builtin:
    b = Builtin(name, list(sigs), numpy, **kw)
    REGISTRY[name] = b
    return b
