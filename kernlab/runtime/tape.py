"""kl.Tape: records launches and differentiable array ops, and runs them backwards.

Semantics follow Warp: ``backward(loss)`` sets loss.grad to 1 and runs each record's
adjoint in reverse order; gradients accumulate across calls; ``zero()`` zeroes every
gradient the tape touched (seeded outputs included). Unlike Warp, an array that a recorded
kernel reads and that is modified afterwards (before backward) is an error, not a silently
wrong gradient: each array carries a version counter and each record remembers it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import config
from ..errors import GradientError
from ..ir.nodes import Op
from . import array as array_mod
from . import storage
from .array import array

_ACTIVE: list = []
_BACKWARD_HOOKS: list = []  # called with the tape after each backward (notebook views)


def _notify_backward(tape):
    for hook in list(_BACKWARD_HOOKS):
        hook(tape)


def active_tape():
    return _ACTIVE[-1] if _ACTIVE else None


@dataclass(eq=False)
class RecordedLaunch:
    launch: object            # the kl.Launch that ran
    versions: dict            # id(array) -> (array, param name, version after the launch)
    aliased: tuple | None = None  # (read param, written param) bound to overlapping memory
    overwrites: tuple | None = None  # (param, earlier kernel) whose output this one replaced


@dataclass(eq=False)
class RecordedArrayOp:
    kind: str                 # clone, copy or assign
    dest: array
    src: array
    info: dict = field(default_factory=dict)


class _Gradients:
    def __getitem__(self, arr):
        return arr.grad


class Tape:
    def __init__(self):
        self.records: list = []
        self._touched: dict = {}
        self._written: dict = {}  # id(array) -> name of the kernel or op that last wrote it

    # ---- recording ---------------------------------------------------------------------

    def __enter__(self):
        _ACTIVE.append(self)
        array_mod._TAPE_HOOK[0] = self._record_array_op
        return self

    def __exit__(self, *exc):
        _ACTIVE.remove(self)
        array_mod._TAPE_HOOK[0] = active_tape()._record_array_op if _ACTIVE else None
        return False

    @property
    def gradients(self):
        """Warp's ``tape.gradients[a]``: the gradient array of ``a``."""
        return _Gradients()

    @property
    def launches(self) -> list:
        return [r.launch for r in self.records if isinstance(r, RecordedLaunch)]

    def _touch(self, *arrays):
        for a in arrays:
            if isinstance(a, array):
                self._touched[id(a)] = a

    def record_launch(self, cmd, n_inputs: int = 0):
        """Called by kl.launch after a forward launch ran inside this tape."""
        from .launch import written_params
        func = cmd.kernel.ir
        read = {ins.args[0] for ins in func.body.walk() if ins.op is Op.LOAD}
        versions = {}
        for p, a in zip(func.params, cmd.params):
            if isinstance(a, array):
                self._touch(a)
                if p.value in read:
                    versions[id(a)] = (a, p.name, a._version)
        record = RecordedLaunch(cmd, versions, _aliased(func, cmd.params, read,
                                                         written_params(func)))
        stored = {ins.args[0] for ins in func.body.walk() if ins.op is Op.STORE}
        for p, a in zip(func.params, cmd.params):
            if isinstance(a, array) and p.value in stored and id(a) in self._written:
                record.overwrites = (p.name, self._written[id(a)])
        for k in written_params(func):
            self._written[id(cmd.params[k])] = f"kernel '{cmd.kernel.key}'"
        self.records.append(record)

    def _record_array_op(self, kind, dest, src, **info):
        self._touch(dest, src)
        self._written[id(dest)] = f"kl.{kind}"
        self.records.append(RecordedArrayOp(kind, dest, src, info))

    # ---- backward ----------------------------------------------------------------------

    def backward(self, loss: array | None = None, grads: dict | None = None):
        if loss is not None:
            _ensure_grad(loss).fill_(1.0)
            self._touch(loss)
        for a, g in (grads or {}).items():
            _ensure_grad(a).assign(g)
            self._touch(a)
        for record in self.records:  # refuse before any gradient is touched
            if isinstance(record, RecordedLaunch):
                _check_replayable(record)
        for record in reversed(self.records):
            if isinstance(record, RecordedLaunch):
                self._launch_adjoint(record)
            else:
                _array_op_adjoint(record)
        _notify_backward(self)

    def _launch_adjoint(self, record: RecordedLaunch):
        cmd = record.launch
        if any(d == 0 for d in cmd.dim):
            return
        adj = [a.grad if isinstance(a, array) else None for a in cmd.params]
        backend = config.cpu_backend if cmd.device.is_cpu else "cuda"
        adj = [_cast_like(p, v) for p, v in zip(cmd.kernel.adjoint_ir.params[len(adj):], adj)]
        cmd.kernel.compiled(backend, adjoint=True).launch(cmd.dim, list(cmd.params) + adj)
        for a in adj:
            if isinstance(a, array):
                a._bump_version()

    # ---- clearing ------------------------------------------------------------------------

    def zero(self):
        for a in self._touched.values():
            if a.grad is not None:
                a.grad.zero_()

    def reset(self):
        self.zero()
        self.records.clear()
        self._touched.clear()
        self._written.clear()


def _aliased(func, args, read, written) -> tuple | None:
    """A read parameter and a different written parameter bound to the same memory: the
    kernel then overwrites what it read, which no adjoint can undo."""
    for k in written:
        for j, p in enumerate(func.params):
            if j != k and p.value in read and isinstance(args[j], array) \
                    and storage.may_share_memory(args[j]._data, args[k]._data):
                return p.name, func.params[k].name
    return None


def _check_replayable(record: RecordedLaunch):
    cmd = record.launch
    if record.aliased is not None:
        src, dst = record.aliased
        raise GradientError(
            f"kernel '{cmd.kernel.key}' was launched with the same array as '{src}', which it "
            f"reads, and '{dst}', which it writes; its gradient would be wrong. Pass a "
            "separate output array.", kernel=cmd.kernel.key)
    if record.overwrites is not None:
        name, earlier = record.overwrites
        raise GradientError(
            f"kernel '{cmd.kernel.key}' overwrote '{name}', which {earlier} had written on this "
            "tape; the overwritten values' gradient would be wrong. Write into a new array.",
            kernel=cmd.kernel.key)
    for a, name, version in record.versions.values():
        if a._version != version:
            raise GradientError(
                f"array '{name}' was modified after kernel '{cmd.kernel.key}' read it and "
                "before tape.backward(); its gradient would be wrong. Write into a new "
                "array instead of updating it in place.", kernel=cmd.kernel.key)


def _cast_like(param, value):
    if param.type.is_array:
        return value
    return np.zeros(param.type.shape, param.type.scalar.np) if param.type.shape \
        else param.type.np.type(0)


def _ensure_grad(a: array) -> array:
    if a.grad is None:
        a.requires_grad = True
    return a.grad


def _array_op_adjoint(rec: RecordedArrayOp):
    """Gradient flows from the copy back to its source; the overwritten part of the
    destination's gradient is consumed."""
    dest, src = rec.dest, rec.src
    if dest.grad is None or src.grad is None:
        return
    if rec.kind == "copy":
        n, do, so = rec.info["count"], rec.info["dest_offset"], rec.info["src_offset"]
    else:
        n, do, so = dest.size, 0, 0
    k = math.prod(dest.dtype.shape)  # in scalars: a vec3 element is three
    n, do, so = n * k, do * k, so * k
    # works on either device (and across them, for a.to(device)): read, add, write back
    incoming = np.array(array_mod._read_flat(dest.grad, do, n))
    array_mod._write_flat(src.grad, so, array_mod._read_flat(src.grad, so, n) + incoming)
    if rec.kind != "clone":
        array_mod._write_flat(dest.grad, do, np.zeros(n, incoming.dtype))
    src.grad._bump_version()
