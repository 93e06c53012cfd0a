"""The reference interpreter: runs IR one thread at a time on NumPy values.

It is the executable spec of the IR — every builtin runs its NumPy reference — and the
oracle the LLVM and CUDA backends are tested against. It is slow on purpose: plain code
that is easy to check by reading.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import KernelIndexError
from ..ir.nodes import Block, Function, Op
from ..types import Type


def zero(t: Type):
    return t.np.type(0) if t.is_scalar else np.zeros(t.shape, t.scalar.np)


class _OutOfBounds(Exception):
    pass


class Interpreter:
    def __init__(self, func: Function):
        self.func = func

    def launch(self, dims: tuple, args: list):
        func = self.func
        total = math.prod(dims)
        self.failure = None
        views = [self._view(p, a) for p, a in zip(func.params, args)]
        with np.errstate(all="ignore"):
            for flat in range(total):
                self.flat, self.coords = flat, np.unravel_index(flat, dims)
                self.stack = []
                self.vars = {v: zero(v.type) for v in func.vars}
                env = {p.value: v for p, v in zip(func.params, views)}
                self.block(func.body, env)
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
        out = bi.numpy(*args, target=ins.attrs["target"]) if bi.targeted else bi.numpy(*args)
        t = ins.result.type
        env[ins.result] = t.np.type(out) if t.is_scalar else np.asarray(out, t.scalar.np)

    def _element(self, ins, env, n_index):
        arr = env[ins.args[0]]
        idx = tuple(int(env[a]) for a in ins.args[1:1 + n_index])
        if arr is None:
            return None, idx
        shape = arr.shape[: len(idx)]
        for d, (i, n) in enumerate(zip(idx, shape)):
            if not 0 <= i < n:
                if self.failure is None:
                    site = self.func.sites[ins.attrs["site"]]
                    self.failure = KernelIndexError(
                        f"index {i} is out of bounds for axis {d} of array '{site.array}' "
                        f"with shape {tuple(shape)}", site.loc, kernel=self.func.name)
                raise _OutOfBounds
        return arr, idx

    def _guarded(fn):  # an out-of-bounds access is skipped after it is recorded
        def run(self, ins, env):
            try:
                fn(self, ins, env)
            except _OutOfBounds:
                if ins.result is not None:
                    env[ins.result] = zero(ins.result.type)
        return run

    @_guarded
    def op_LOAD(self, ins, env):
        arr, idx = self._element(ins, env, len(ins.args) - 1)
        t = ins.result.type
        if arr is None:
            env[ins.result] = zero(t)
        else:
            v = arr[idx]
            env[ins.result] = t.np.type(v) if t.is_scalar else np.array(v)

    @_guarded
    def op_STORE(self, ins, env):
        arr, idx = self._element(ins, env, len(ins.args) - 2)
        if arr is not None:
            arr[idx] = env[ins.args[-1]]

    @_guarded
    def op_ATOMIC(self, ins, env):
        arr, idx = self._element(ins, env, len(ins.args) - 2)
        t = ins.result.type
        if arr is None:
            env[ins.result] = zero(t)
            return
        old = t.np.type(arr[idx]) if t.is_scalar else np.array(arr[idx])
        v = env[ins.args[-1]]
        kind = ins.attrs["kind"]
        arr[idx] = {"add": lambda: old + v, "sub": lambda: old - v,
                    "min": lambda: min(old, v), "max": lambda: max(old, v)}[kind]()
        env[ins.result] = old

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
            print(ins.attrs["fmt"] % tuple(v.item() if np.ndim(v) == 0 else tuple(v)
                                           for v in vals), end="")
        else:
            print(ins.attrs["fmt"].format(*vals))

    def op_PUSH(self, ins, env):
        self.stack.extend(env[a] for a in ins.args)

    def op_POP(self, ins, env):
        env[ins.result] = self.stack.pop()
