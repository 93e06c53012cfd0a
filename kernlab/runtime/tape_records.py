"""What a kl.Tape records and when a record's adjoint is still right.

A launch is recorded as a ``RecordedLaunch`` (the launch, the read/written aliasing, the
checksums of exported memory it read, and the copies in-place updates need), a copy, clone
or assignment between arrays as a ``RecordedArrayOp`` (whose adjoint is here). Before
``backward`` (or an HVP) replays a record, ``_check_replayable`` refuses one whose adjoint
would be wrong: see runtime/tape.py's module doc for the rules. ``arrays_in`` and ``_mirror``
walk the arrays a struct argument holds.
"""
from __future__ import annotations

import math
import types
from dataclasses import dataclass, field

import numpy as np

from ..errors import GradientError
from . import array as array_mod
from . import exports, storage
from .array import array


@dataclass(eq=False)
class RecordedLaunch:
    launch: object            # the kl.Launch that ran
    aliased: tuple | None = None  # (read param, written param) bound to overlapping memory
    sums: dict = field(default_factory=dict)  # id(array) -> _Snapshot (see exports.py)
    # in-place updates: id(array) -> (array, param name, version, param index) for the arrays
    # whose values (as this launch left them) the adjoint reads; param index -> the copy the
    # adjoint reads in the array's place (None: the copy could not be made)
    needs: dict = field(default_factory=dict)
    snapshots: dict = field(default_factory=dict)


class _Snapshot:
    """The checksum of a recorded read of exported memory: taken at record time if the
    memory is exported then, else when it first is (exports.watch calls this)."""
    __slots__ = ("array", "version", "sum", "__weakref__")

    def __init__(self, a, version):
        self.array, self.version, self.sum = a, version, None

    def __call__(self):
        if self.sum is None and self.array._version == self.version:
            self.sum = exports.checksum(self.array._data)

    def changed(self) -> bool:
        return self.sum is not None and exports.checksum(self.array._data) != self.sum


@dataclass(eq=False)
class RecordedArrayOp:
    kind: str                 # clone, copy or assign
    dest: array
    src: array
    info: dict = field(default_factory=dict)


def arrays_in(value):
    """The arrays a launch argument holds: itself, or the array fields of a struct value
    (recursively)."""
    if isinstance(value, array):
        yield value
        return
    fields = _struct_fields(value)
    for v in fields.values():
        yield from arrays_in(v)


def _struct_fields(value) -> dict:
    if value is None or isinstance(value, (int, float, bool, str, np.ndarray, np.generic,
                                           tuple, list)):
        return {}
    try:
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    except TypeError:
        return {}


def _mirror(value, leaf):
    """A struct value like ``value`` with each array field replaced by leaf(array)."""
    fields = _struct_fields(value)
    try:
        out = object.__new__(type(value))
    except TypeError:
        out = types.SimpleNamespace()
    for k, v in fields.items():
        if isinstance(v, array):
            v = leaf(v)
        elif _struct_fields(v):
            v = _mirror(v, leaf)
        try:
            object.__setattr__(out, k, v)
        except (AttributeError, TypeError):
            pass
    return out


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
    """Refuse a record whose adjoint would be wrong (before backward or an HVP runs): a
    read array bound to a written one, an in-place update the tape could not copy, or an
    array the adjoint reads nonlinearly changed since the launch and not copied by the
    tape."""
    cmd = record.launch
    if record.aliased is not None:
        src, dst = record.aliased
        raise GradientError(
            f"kernel '{cmd.kernel.key}' was launched with the same array as '{src}', which it "
            f"reads, and '{dst}', which it writes; its gradient would be wrong. Pass a "
            "separate output array.", kernel=cmd.kernel.key)
    names = [p.name for p in cmd.kernel.ir.params]
    for k, snap in record.snapshots.items():
        if snap is None:
            raise GradientError(
                f"kernel '{cmd.kernel.key}' updates array '{names[k]}' in place and its "
                "gradient needs the values before the launch, but the tape could not copy "
                "them (the argument is not a plain kernlab array); pass a kl.array.",
                kernel=cmd.kernel.key)
    _refuse_modified(((k, a, n, v) for k, (a, n, v, _) in record.needs.items()), record,
                     cmd, "Modify it after backward(), or modify a kl.clone of it (a "
                     "recorded launch may overwrite it: the tape copies it first).")


def _refuse_modified(entries, record, cmd, advice: str) -> None:
    """A GradientError for the first array (key, array, name, version at record time) changed
    since the record: its version moved, or the checksum of its exported memory did."""
    for key, a, name, version in entries:
        snap = record.sums.get(key)
        if a._version != version or (snap is not None and snap.changed()):
            how = "" if a._version != version else (
                " (through a NumPy view, a.numpy(), np.asarray(a) or another export of its "
                "memory)")
            raise GradientError(
                f"array '{name}' was modified{how} after kernel '{cmd.kernel.key}' read it "
                f"and before tape.backward(); its gradient would be wrong. {advice}",
                kernel=cmd.kernel.key)


def consumes_copied_gradient(rec: RecordedArrayOp) -> bool:
    """Whether the adjoint of a copy / clone / assign zeroes the destination's gradient it
    passed on: always, unless the destination retains its gradient (retain_grad)."""
    return not rec.dest.retain_grad


def _array_op_adjoint(rec: RecordedArrayOp):
    """Gradient flows from the copy back to its source (accumulated); the overwritten part
    of the destination's gradient is consumed unless the destination retains it."""
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
    # consume before accumulating: right also when source and destination overlap
    # (a copy within one array): the overwritten elements' gradient goes only to the source.
    # A clone's too (Warp 1.19's clone is a copy into a new array), so a second backward()
    # adds the source's gradient once more rather than twice.
    if consumes_copied_gradient(rec):
        array_mod._write_flat(dest.grad, do, np.zeros(n, incoming.dtype))
    from .structs import add_elements  # records of a struct add field by field
    array_mod._write_flat(src.grad, so, add_elements(array_mod._read_flat(src.grad, so, n),
                                                     incoming))
    src.grad._bump_version()
