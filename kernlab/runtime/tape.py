"""kl.Tape: records launches and differentiable array ops, and runs them backwards.

Semantics follow Warp 1.19:

* ``backward(loss)`` sets loss.grad to 1 (``grads={a: g}`` seeds several outputs) and runs
  each record's adjoint in reverse order. Input gradients accumulate across calls.
* A store consumes the gradient of the element it writes: the adjoint reads it, then zeroes
  it, so a value that was overwritten (by a later kernel, a copy, or the same kernel) gets
  no gradient — the chain rule for overwrites. Seeded outputs therefore read zero after
  backward, unless the array has ``retain_grad = True`` (then nothing is consumed).
* ``tape.gradients`` maps each array the tape used to its gradient; ``zero()`` zeroes them
  all (seeded outputs included); ``reset()`` forgets the recording and zeroes.
* ``record_func(backward, arrays)`` adds a Python callback to the backward pass;
  ``record_scope_begin/end`` group records for ``visualize()`` (GraphViz DOT).
* Only one tape records at a time in a thread (or asyncio task): entering a second is a
  RuntimeError. Tapes on different threads record only their own thread's launches.

Unlike Warp, an array that a recorded kernel reads and that is modified afterwards (before
backward) is an error, not a silently wrong gradient: each array carries a version counter
and each record remembers it. Writes kernlab cannot count (through ``a.numpy()``,
``np.asarray(a)``, DLPack or torch views, or the NumPy array an array shares) are caught by a
checksum of exported memory (see exports.py).

In-place updates (autodiff/inplace.py): the tape keeps what an adjoint needs and a launch is
about to overwrite. Before a recorded launch runs, it copies (1) the arrays the kernel reads
and then overwrites nonlinearly, each thread its own element (``x[i] = x[i] * x[i]``): the
adjoint runs on the copy, the values before the launch; (2) the arrays the launch writes
whose current values an earlier record's adjoint reads nonlinearly (copy on write: that
record's adjoint then reads the copy). Arrays read only linearly (``x[i] + v[i] * dt``) are
never copied and never checked. ``tape.memory()`` reports what the copies hold. Through one
in-place launch ``x.grad`` goes from the gradient with respect to the values after the launch
to that with respect to the values before it (each store consumes its element's gradient,
each load adds to it), so a simulation that updates its state in place over many steps gets
the gradients of its out-of-place version. Outside a tape nothing is copied.

The records themselves, and the checks that refuse a wrong adjoint, are in tape_records.py.
"""
from __future__ import annotations

import contextvars
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from .. import config
from ..errors import GradientError
from ..ir.nodes import Op
from . import array as array_mod
from . import exports
from .array import array
# the records and the checks before their adjoints run (tangent.py and the notebook's tape
# view import them from here too)
from .tape_records import (RecordedArrayOp, RecordedLaunch, _aliased, _array_op_adjoint,
                           _check_replayable, _mirror, _Snapshot, _struct_fields, arrays_in)

# The recording tape is per thread and per asyncio task (a context variable): a tape records
# the launches of the code that entered it, never those another thread makes meanwhile.
_ACTIVE_TAPE: contextvars.ContextVar = contextvars.ContextVar("kernlab_tape", default=None)
_BACKWARD_HOOKS: list = []  # called with the tape after each backward (notebook views)


def _notify_backward(tape):
    for hook in list(_BACKWARD_HOOKS):
        hook(tape)


def active_tape():
    return _ACTIVE_TAPE.get()


class GradientMap(dict):
    """``tape.gradients``: each recorded array's gradient array, as Warp's dict; a struct
    argument (not hashable: structs compare by value) gives a struct of its arrays'
    gradients."""

    def __getitem__(self, key):
        from .structs import StructInstance
        if isinstance(key, StructInstance):
            return key.grad
        return super().__getitem__(key)


def warn_overwrite(a, arg_name=None, kernel_name=None, filename=None, lineno=None,
                   copy_site=None):
    """Warp's verify_autograd_array_access warning (printed to stderr, as Warp does)."""
    if copy_site is not None:
        what = f"is being written to by an array copy at {copy_site}"
    else:
        what = (f"passed to argument '{arg_name}' in kernel '{kernel_name}' at "
                f"{filename}:{lineno} is being written to")
    print(f"Warning: Array {a.shape} of {a.dtype} {what} but has already been read from in "
          "a previous launch. This may corrupt gradient computation in the backward pass. "
          "(kernlab's tape copies such an array before a recorded launch overwrites it.)",
          file=sys.stderr)


def _user_site() -> str:
    """file:line of the innermost caller outside kernlab."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"


def _clear_read(a):
    while a is not None:
        a._is_read = False
        a = getattr(a, "_ref", None)


class Tape:
    """Records launches (and differentiable array operations) for reverse mode, as Warp's.

    ``with kl.Tape() as tape:`` records every launch made inside; ``tape.backward(loss)``
    seeds a one-element loss with 1 (or ``grads={y: seed}`` seeds outputs) and runs the
    adjoint of each recorded launch in reverse order, accumulating into the inputs'
    ``.grad``. ``tape.zero()`` zeroes every gradient the tape touched; ``tape.reset()``
    also forgets the recording. ``tape.gradients[a]`` is the gradient array of ``a``.
    A recording that cannot be differentiated exactly (an array overwritten after a
    recorded read, the value an atomic returned) is a GradientError at ``backward``.
    """

    def __init__(self):
        self.gradients = GradientMap()
        self.launches: list = []  # kl.Launch, RecordedArrayOp, or a callable (record_func)
        self.scopes: list = []    # (record index, name, metadata); name None ends a scope
        self.loss = None
        self._info: dict = {}     # id(kl.Launch) -> RecordedLaunch
        self._readers: dict = {}  # id(array._vbox) -> [(RecordedLaunch, key in its needs)]
        self._pending = None      # (launch args, {param index: copy}) from prepare_launch

    # ---- recording ---------------------------------------------------------------------

    def __enter__(self):
        if _ACTIVE_TAPE.get() is not None:
            raise RuntimeError("kernlab: a tape is already recording; tapes do not nest")
        self._tokens = (_ACTIVE_TAPE.set(self),
                        array_mod._TAPE_HOOK.set_token(self._record_array_op))
        return self

    def __exit__(self, *exc):
        tokens = getattr(self, "_tokens", None)
        if tokens is not None and _ACTIVE_TAPE.get() is self:
            self._tokens = None
            try:
                _ACTIVE_TAPE.reset(tokens[0])
                array_mod._TAPE_HOOK.reset_token(tokens[1])
            except ValueError:  # exited in another context than it was entered in
                _ACTIVE_TAPE.set(None)
                array_mod._TAPE_HOOK[0] = None
        return False

    @property
    def records(self) -> list:
        """Launch and array-op records in order (RecordedLaunch / RecordedArrayOp)."""
        out = []
        for r in self.launches:
            if isinstance(r, RecordedArrayOp):
                out.append(r)
            elif id(r) in self._info:
                out.append(self._info[id(r)])
        return out

    def _track(self, value):
        for a in arrays_in(value):
            if a.grad is not None:
                self.gradients[a] = a.grad

    def prepare_launch(self, kernel, args):
        """Called by kl.launch just before a launch this tape will record runs: copies what
        the launch is about to overwrite and an adjoint needs (see the module docstring)."""
        self._pending = None
        if not kernel.enable_backward:
            return
        from ..autodiff.inplace import plan
        from .launch import written_params
        func = kernel.ir
        own = set(_user_facing_plan(plan, kernel).snapshot)
        copies: dict = {}  # id(array) -> its copy: one per array per launch

        def copy_of(a):
            if id(a) not in copies:
                copies[id(a)] = _keep_copy(a)
            return copies[id(a)]

        kept = {}
        for k in written_params(func):
            a = args[k]
            if not isinstance(a, array):
                continue
            for rec, key in self._readers.pop(id(a._vbox), ()):  # copy on write
                entry = rec.needs.get(key)
                if entry is not None and entry[0]._version == entry[2]:
                    rec.snapshots[entry[3]] = copy_of(entry[0])
                    del rec.needs[key]
        for k in own:
            kept[k] = copy_of(args[k]) if isinstance(args[k], array) else None
        self._pending = (list(args), kept)

    def record_launch(self, cmd, n_inputs: int = 0):
        """Called by kl.launch after a forward launch ran inside this tape."""
        from .launch import written_params
        func = cmd.kernel.ir
        read = {ins.args[0] for ins in func.body.walk() if ins.op is Op.LOAD}
        sums = {}
        for p, a in zip(func.params, cmd.params):
            self._track(a)
            if isinstance(a, array) and p.value in read:
                if id(a) not in sums and a._data is not None:
                    # writes through NumPy views and other exports bump no version: such
                    # memory gets a checksum, now or when it is first exported
                    snap = sums[id(a)] = _Snapshot(a, a._version)
                    if exports.is_exported(a._data):
                        snap()
                    else:
                        exports.watch(a._data, snap)
        info = RecordedLaunch(cmd, _aliased(
            func, cmd.params, read, written_params(func)), sums)
        self._record_needs(info)
        self._info[id(cmd)] = info
        self.launches.append(cmd)
        if config.verify_autograd_array_access:
            code = getattr(cmd.kernel.pyfunc, "__code__", None)
            written = set(written_params(func))
            for k, (p, a) in enumerate(zip(func.params, cmd.params)):
                if isinstance(a, array) and k in written:
                    a.mark_write(arg_name=p.name, kernel_name=cmd.kernel.key,
                                 filename=getattr(code, "co_filename", "?"),
                                 lineno=getattr(code, "co_firstlineno", "?"))
            for p, a in zip(func.params, cmd.params):
                if isinstance(a, array) and p.value in read:
                    a.mark_read()

    def _record_needs(self, info: RecordedLaunch):
        """Fill in what the adjoint of a launch needs: the copies prepare_launch made before
        it ran, and the arrays to copy should a later launch overwrite them."""
        cmd = info.launch
        pending, self._pending = self._pending, None
        if not cmd.kernel.enable_backward:
            return
        from ..autodiff.inplace import plan
        p = _user_facing_plan(plan, cmd.kernel)
        kept = {}
        if pending is not None and len(pending[0]) == len(cmd.params) \
                and all(x is y for x, y in zip(pending[0], cmd.params)):
            kept = pending[1]
        for k in p.snapshot:  # not copied before the launch: backward refuses
            info.snapshots[k] = kept.get(k)
        names = [q.name for q in cmd.kernel.ir.params]
        for k in p.needs:
            a = cmd.params[k]
            if isinstance(a, array):
                info.needs[id(a)] = (a, names[k], a._version, k)
                self._readers.setdefault(id(a._vbox), []).append((info, id(a)))

    def memory(self) -> "TapeMemory":
        """What the tape keeps for backward beyond the arrays themselves: the copies made for
        in-place updates (their count and bytes)."""
        seen = {}
        for info in self._info.values():
            for snap in info.snapshots.values():
                if snap is not None:
                    seen[id(snap)] = snap
        return TapeMemory(len(seen), sum(a.nbytes for a in seen.values()))

    def __repr__(self):
        return (f"<kernlab Tape: {len(self.launches)} record(s), keeps "
                f"{self.memory()}>")

    def _record_array_op(self, kind, dest, src, **info):
        self._track(dest)
        self._track(src)
        if config.verify_autograd_array_access:
            dest.mark_write(copy_site=_user_site())
            src.mark_read()
        self.launches.append(RecordedArrayOp(kind, dest, src, info))

    def record_func(self, backward, arrays):
        """Run ``backward()`` (a Python callable) at this point of the backward pass; the
        tape zeroes the gradients of ``arrays`` in zero()."""
        if not callable(backward):
            raise TypeError("Tape.record_func needs a callable")
        for a in arrays:
            if not isinstance(a, array) or a.grad is None:
                raise RuntimeError(f"Tape.record_func: {a!r} is not a kernlab array with a "
                                   "gradient; create it with requires_grad=True")
        self.launches.append(backward)
        for a in arrays:
            self.gradients[a] = a.grad

    def record_scope_begin(self, scope_name, metadata=None):
        """Open a named group of records (used by visualize())."""
        self.scopes.append((len(self.launches), scope_name, dict(metadata or {})))

    def record_scope_end(self, remove_scope_if_empty=True):
        """Close the innermost open scope; an empty one is dropped when remove_scope_if_empty.
        """
        depth = sum(1 if name is not None else -1 for _, name, _ in self.scopes)
        if depth <= 0:
            raise RuntimeError("kernlab: ended tape scope, but scope not present")
        last = self.scopes[-1]
        if remove_scope_if_empty and last[1] is not None and last[0] == len(self.launches):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.launches), None, None))

    # ---- backward ----------------------------------------------------------------------

    def backward(self, loss: array | None = None, grads: dict | None = None):
        """Seed loss (gradient 1) or the arrays in grads, then run the records backwards."""
        if loss is not None:
            if not isinstance(loss, array) or loss.size != 1 or loss.dtype.shape:
                what = f"an array of shape {loss.shape} of {loss.dtype}" \
                    if isinstance(loss, array) else f"a {type(loss).__name__}"
                raise GradientError("Tape.backward(loss) needs a one-element array of a "
                                    f"scalar type, got {what} (use grads={{...}} to seed "
                                    "other outputs)")
            if loss.grad is None:
                raise RuntimeError("kernlab: the loss array needs requires_grad=True before "
                                   "Tape.backward()")
            loss.grad.fill_(1.0)
            self.loss = loss
            self.gradients[loss] = loss.grad
        for a, g in (grads or {}).items():
            if a.grad is None:
                a.grad = g if isinstance(g, array) else array(g, dtype=a.dtype,
                                                              device=a.device)
            else:
                _write_quietly(a.grad, g)
            self.gradients[a] = a.grad
        for cmd in self.launches:  # refuse before any gradient is touched
            info = self._info.get(id(cmd))
            if info is not None:
                _check_replayable(info)
        for rec in reversed(self.launches):
            if isinstance(rec, RecordedArrayOp):
                _array_op_adjoint(rec)
            elif id(rec) in self._info:
                self._launch_adjoint(rec)
            elif callable(rec):
                rec()
        if config.verify_autograd_array_access:  # the recorded reads are consumed
            self._clear_reads()
        _notify_backward(self)

    def hvp(self, loss: array, v: dict) -> dict:
        """The Hessian-vector product H·v of the scalar ``loss`` recorded on this tape, with
        respect to the arrays in ``v`` ({input array: direction}): {input array: (H·v) for
        it}. Forward over reverse (runtime/tangent.py); the tape's gradients are left alone.
        """
        from .tangent import tape_hvp
        return tape_hvp(self, loss, v)

    def _clear_reads(self):
        for rec in self.launches:
            if isinstance(rec, RecordedArrayOp):
                _clear_read(rec.src)
                _clear_read(rec.dest)
            elif id(rec) in self._info:
                for a in rec.params:
                    if isinstance(a, array):
                        _clear_read(a)
        for a in self.gradients:
            if isinstance(a, array):
                _clear_read(a)

    def _launch_adjoint(self, cmd):
        from .launch import _run
        if not cmd.kernel.enable_backward:
            warnings.warn(f"kernlab: kernel '{cmd.kernel.key}' has enable_backward=False; "
                          "Tape.backward() skips it, so gradients through it are missing",
                          UserWarning, stacklevel=3)
            return
        if any(d == 0 for d in cmd.dim):
            return
        for a in cmd.params:
            self._track(a)
        n = len(cmd.params)
        adj = [self.adjoint_of(p, a) for p, a in zip(cmd.kernel.adjoint_ir.params[n:],
                                                       cmd.params)]
        primal = list(cmd.params)
        for k, snap in self._info[id(cmd)].snapshots.items():
            primal[k] = snap  # the values the launch read (in-place updates)
        # the adjoints are the arrays' own gradients: stores consume them (retain_grad aside)
        retain = frozenset(k for k, a in enumerate(cmd.params)
                           if isinstance(a, array) and a.retain_grad)
        _run(cmd.kernel, cmd.dim, primal + adj, cmd.device, True, retain)

    def adjoint_of(self, param, value):
        """The adjoint argument of a launch argument: an array's gradient, a struct with its
        arrays' gradients, or a zero value."""
        t = param.type
        if isinstance(value, array):
            return value.grad
        if t.is_array:
            return None
        if not t.is_scalar and not getattr(t, "shape", None) and _struct_fields(value):
            adj = _mirror(value, lambda a: a.grad)
            self.gradients[value] = adj
            return adj
        return _zero_like(param)

    # ---- clearing ------------------------------------------------------------------------

    def zero(self):
        """Zero every gradient the tape used (seeded outputs included)."""
        for g in self.gradients.values():
            for a in arrays_in(g):
                a.zero_()

    def reset(self):
        """Forget the recording and zero the gradients; the tape can record again."""
        if config.verify_autograd_array_access:
            self._clear_reads()
        self.zero()
        self.launches = []
        self.scopes = []
        self._info.clear()
        self._readers.clear()  # the copies go with the records
        self._pending = None

    def visualize(self, filename: str | None = None, simplify_graph: bool = True,
                  hide_readonly_arrays: bool = False, array_labels: dict | None = None,
                  choose_longest_node_name: bool = True, ignore_graph_scopes: bool = False,
                  track_inputs=None, track_outputs=None, track_input_names=None,
                  track_output_names=None, graph_direction: str = "LR") -> str:
        """The recording as GraphViz DOT text (also written to filename when given):
        arrays and kernel launches as nodes, repeated launch sequences folded into one node
        ("repeated Nx") when simplify_graph, scopes as clusters."""
        from .tape_dot import tape_to_dot
        labels = dict(array_labels or {})
        for arrs, names in ((track_inputs, track_input_names),
                            (track_outputs, track_output_names)):
            for a, name in zip(arrs or [], names or []):
                labels.setdefault(a, name)
        dot = tape_to_dot(self, simplify=simplify_graph, labels=labels,
                          hide_readonly=hide_readonly_arrays,
                          scopes=not ignore_graph_scopes, direction=graph_direction,
                          keep=list(track_inputs or []) + list(track_outputs or []))
        if filename is not None:
            with open(filename, "w", encoding="utf-8") as f:
                f.write(dot)
        return dot


@dataclass(frozen=True)
class TapeMemory:
    """``tape.memory()``: the copies a tape keeps for in-place updates."""
    snapshots: int
    bytes: int

    def __str__(self):
        return f"{self.snapshots} snapshot(s), {_bytes(self.bytes)}"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _user_facing_plan(plan, kernel):
    from ..kernel import _user_facing
    return _user_facing(plan, kernel.ir)


def _keep_copy(a: array) -> array:
    """A copy of a on its device that no tape records (it is the tape's own)."""
    from .array_create import clone
    hook, array_mod._TAPE_HOOK[0] = array_mod._TAPE_HOOK[0], None
    try:
        out = clone(a, requires_grad=False)
    finally:
        array_mod._TAPE_HOOK[0] = hook
    return out


def _zero_like(param):
    t = param.type
    if getattr(t, "shape", None):
        return np.zeros(t.shape, t.scalar.np)
    np_type = getattr(t, "np", None)
    return np_type.type(0) if np_type is not None else None


def _write_quietly(dest: array, src):
    """dest[...] = src without recording on an active tape (seeding is not an op)."""
    token = array_mod._TAPE_HOOK.set_token(None)
    try:
        dest.assign(src)
    finally:
        array_mod._TAPE_HOOK.reset_token(token)


