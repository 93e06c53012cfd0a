"""The reference interpreter: runs IR one thread at a time on NumPy values.

It is the executable spec of the IR — every builtin runs its NumPy reference — and the
oracle the LLVM and CUDA backends are tested against. It is slow on purpose: plain code
that is easy to check by reading. It runs on the calling thread in Python, so a
KeyboardInterrupt stops it like any Python loop. With ``config.verify_fp``, the first
float store that writes a NaN or Inf is reported (as the LLVM backend does).
"""
from __future__ import annotations

import copy
import math

import numpy as np

from .. import config
from ..errors import not_finite_error, out_of_bounds_error
from ..ir import printf as printf_format
from ..ir.nodes import Block, Function, Op
from ..types import Type, numpy_kind


def zero(t: Type):
    return t.np.type(0) if t.is_scalar else np.zeros(t.shape, t.scalar.np)


class _OutOfBounds(Exception):
    """Raised at the first out-of-bounds access: it ends the launch (self.failure says
    where), as the LLVM backend ends the slice of threads that hit one."""


class Interpreter:
    verify_fp = False  # set per launch from config.verify_fp
    failure = None     # the first error a launch met (raised when it ends)

    def __init__(self, func: Function):
        self.func = func

    def launch(self, dims: tuple, args: list):
        """Run every thread of the launch. The state of a launch (thread index, locals,
        stack, first failure) lives on a copy of this runner: launches of one kernel from
        several Python threads at once kept it here and mixed each other's threads up."""
        copy.copy(self)._launch(dims, args)

    def _launch(self, dims: tuple, args: list):
        func = self.func
        total = math.prod(dims)
        self.failure = None
        self.verify_fp = config.verify_fp
        views = [self._view(p, a) for p, a in zip(func.params, args)]
        with np.errstate(all="ignore"):
            try:
                for flat in range(total):
                    self.flat, self.coords = flat, np.unravel_index(flat, dims)
                    self.stack = []
                    self.vars = {v: zero(v.type) for v in func.vars}
                    env = {p.value: v for p, v in zip(func.params, views)}
                    self.block(func.body, env)
            except _OutOfBounds:
                pass
        if self.failure is not None:
            raise self.failure

    @staticmethod
    def _view(param, arg):
        if not param.type.is_array:
            return arg
        return None if arg is None else arg.numpy()

    # ---- execution -----------------------------------------------------------------------

    def block(self, block: Block, env: dict):
        for ins in block.instrs:
            getattr(self, "op_" + ins.op.name)(ins, env)

    def op_CONST(self, ins, env):
        env[ins.result] = ins.attrs["value"]

    def op_TID(self, ins, env):
        d = ins.attrs["dim"]
        coord = self.flat if self.func.ndim == 1 else int(self.coords[d])
        env[ins.result] = np.int32(coord)

    def op_LOAD_VAR(self, ins, env):
        env[ins.result] = self.vars[ins.attrs["var"]]

    def op_STORE_VAR(self, ins, env):
        self.vars[ins.attrs["var"]] = env[ins.args[0]]

    def op_CALL(self, ins, env):
        args = [env[a] for a in ins.args]
        bi = ins.attrs["builtin"]
        if "site" in ins.attrs:  # a vector/matrix component at a runtime index
            site = self.func.sites[ins.attrs["site"]]
            for d, (i, n) in enumerate(zip(args[1:], site.shape)):
                if not 0 <= int(i) < n:
                    self._fail(out_of_bounds_error(self.func, site, d, int(i), site.shape))
        kw = {"target": ins.attrs["target"]} if bi.targeted else {}
        if bi.extra.get("typed"):  # a reference that needs the operand types (tiles)
            kw.update(types=[a.type for a in ins.args], ret=ins.result and ins.result.type)
        out = bi.numpy(*args, **kw)
        if ins.result is None:  # called for its effect (tile_store)
            return
        t = ins.result.type
        env[ins.result] = t.np.type(out) if t.is_scalar else np.asarray(out, t.scalar.np)

    def _element(self, ins, env, n_index):
        arr = env[ins.args[0]]
        idx = tuple(int(env[a]) for a in ins.args[1:1 + n_index])
        if arr is None:
            if not ins.attrs.get("nullable"):  # the user's null array: nothing is in bounds
                site = self.func.sites[ins.attrs["site"]]
                self._fail(out_of_bounds_error(self.func, site, 0, idx[0], (0,) * len(idx)))
            return None, idx
        shape = arr.shape[: len(idx)]
        for d, (i, n) in enumerate(zip(idx, shape)):
            if not 0 <= i < n:
                site = self.func.sites[ins.attrs["site"]]
                self._fail(out_of_bounds_error(self.func, site, d, i, shape))
        return arr, idx

    def _fail(self, error):
        if self.failure is None:  # the first failure wins, as on LLVM
            self.failure = error
        raise _OutOfBounds

    def op_LOAD(self, ins, env):
        arr, idx = self._element(ins, env, len(ins.args) - 1)
        t = ins.result.type
        if arr is None:
            env[ins.result] = zero(t)
        else:
            v = arr[idx]
            env[ins.result] = t.np.type(v) if t.is_scalar else np.array(v)

    def op_STORE(self, ins, env):
        arr, idx = self._element(ins, env, len(ins.args) - 2)
        if arr is not None:
            arr[idx] = env[ins.args[-1]]
            self._check_finite(ins, arr, idx)

    def op_ATOMIC(self, ins, env):
        arr, idx = self._element(ins, env, ins.args[0].type.ndim)
        t = ins.result.type
        if arr is None:
            env[ins.result] = zero(t)
            return
        old = t.np.type(arr[idx]) if t.is_scalar else np.array(arr[idx])
        v = env[ins.args[-1]]
        kind = ins.attrs["kind"]
        arr[idx] = {"add": lambda: old + v, "sub": lambda: old - v,
                    "min": lambda: np.fmin(old, v), "max": lambda: np.fmax(old, v),
                    "and": lambda: old & v, "or": lambda: old | v, "xor": lambda: old ^ v,
                    "exch": lambda: v,
                    "cas": lambda: v if old == env[ins.args[-2]] else old}[kind]()
        env[ins.result] = old
        self._check_finite(ins, arr, idx)

    def _check_finite(self, ins, arr, idx):
        """verify_fp: record the first NaN or Inf a float store writes."""
        if not self.verify_fp or self.failure is not None or numpy_kind(arr.dtype) != "f":
            return
        if not np.all(np.isfinite(arr[idx])):
            site = self.func.sites[ins.attrs["site"]]
            flat = int(np.ravel_multi_index(idx, arr.shape[: len(idx)]))
            name = ins.args[0].name or site.array  # adj_x in an adjoint, not x
            self.failure = not_finite_error(self.func, site, name, arr, len(idx), flat)

    def op_SHAPE(self, ins, env):
        arr = env[ins.args[0]]
        env[ins.result] = np.int32(0 if arr is None else arr.shape[ins.attrs["dim"]])

    def op_IF(self, ins, env):
        self.block(ins.regions[0] if env[ins.args[0]] else ins.regions[1], env)

    def op_FOR(self, ins, env):
        i, stop, step = (int(env[a]) for a in ins.args)
        var, body = ins.attrs["var"], ins.regions[0]
        t = var.type.np.type
        while (step > 0 and i < stop) or (step < 0 and i > stop):
            self.vars[var] = t(i)
            self.block(body, env)
            i += step

    def op_WHILE(self, ins, env):
        cond, body = ins.regions
        while True:
            self.block(cond, env)
            if not env[cond.result]:
                break
            self.block(body, env)

    def op_CUSTOM(self, ins, env):
        self.block(ins.regions[0], env)

    def op_PRINT(self, ins, env):
        vals = [env[a] for a in ins.args]
        if ins.attrs.get("printf"):
            pieces = printf_format.parse(ins.attrs["fmt"], [a.type for a in ins.args])
            print(printf_format.python_render(pieces, vals, _show), end="")
        else:
            print(ins.attrs["fmt"].format(*map(_show, vals)))  # %g floats, as compiled

    def op_PUSH(self, ins, env):
        self.stack.extend(env[a] for a in ins.args)

    def op_POP(self, ins, env):
        env[ins.result] = self.stack.pop()


def _show(value) -> str:
    """A value as the compiled backends' print shows it (%g floats, [a, b] vectors)."""
    a = np.asarray(value)
    if a.ndim:
        return "[" + ", ".join(_show(v) for v in a.reshape(-1)) + "]"
    if a.dtype == np.bool_:
        return str(bool(a))
    return "%g" % float(a) if numpy_kind(a.dtype) == "f" else str(int(a))
