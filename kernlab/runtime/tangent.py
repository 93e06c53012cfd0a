"""Forward mode at run time: tangent launches, ``kl.jvp`` and ``Tape.hvp``.

A tangent launch (``kl.launch(k, dim, inputs, outputs, tangent=True, tan_inputs=[...],
tan_outputs=[...])``) computes the tangents only: the outputs' tangents J·u for the input
tangents u, at the arguments' current values, and leaves the kernel's own arrays as they
were — as an adjoint launch (``adjoint=True``) computes gradients and writes no outputs
(JAX's ``linearize`` gives the same tangents-only function). So the tangent kernel reads
only the values its tangents need (saxpy's ``dz = a dx + da x + dy`` reads x, dx and dy,
never y, and stores no z), and it can run before or instead of the forward. ``kl.jvp``
writes both, the outputs and their tangents, in one launch (JAX's ``jvp`` returns both), and
a tape records it as the forward launch it also is.

The lists mirror Warp's ``adj_inputs``/``adj_outputs``: one entry per input and per
output; an array's entry may be None (a zero tangent for an input, not computed for an
output), a float scalar's is a number (None: 0). Like a primal output, a tangent output is
written by stores and accumulated by atomic adds, so zero it first where the kernel
accumulates. An array the kernel updates in place has one tangent array, read as the
tangent before the launch and written with the tangent after it.

``Tape.hvp(loss, v)`` gives the Hessian-vector product H·v of a scalar loss recorded on
the tape, by forward over reverse: a tangent sweep of the recorded launches in order (the
tangents-only kernels, on the values each launch read: for an in-place update, the copy
the tape kept of the values before it, with the tangent before it), then the tangent of
each adjoint kernel in reverse order, on scratch gradient arrays (the tape's own gradients
are left alone).
"""
from __future__ import annotations

import math

import numpy as np

from .. import config
from ..errors import GradientError, LaunchError
from . import array as array_mod
from .array import array, zeros_like
from .tape_records import consumes_copied_gradient


def run_variant(kernel, dims, args, device, adjoint: bool, tangent: str, retain=None):
    """Run a tangent variant of the kernel ("jvp": its computation and its tangents,
    "tangent": the tangents only), or with adjoint=True the tangent of its adjoint; args
    hold every parameter. retain: the parameters whose gradients the adjoint's stores
    leave in place (default: the arrays made with retain_grad)."""
    from .launch import written_params
    if math.prod(dims) == 0:
        return
    n = len(kernel.params) * (2 if adjoint else 1)
    if retain is None:
        retain = frozenset(k for k, a in enumerate(args[:len(kernel.params)])
                           if isinstance(a, array) and a.retain_grad)
    retain = frozenset(retain) if adjoint else frozenset()
    shared = False
    if adjoint:  # gradient arrays (or their tangents) sharing memory: the atomic adjoint
        from .launch import _gradients_overlap
        adj = kernel.adjoint_variant(retain)
        shared = bool(adj.owned) and (_gradients_overlap(adj, args[:n])
                                      or _gradients_overlap(adj, args[n:]))
    func = kernel.tangent_variant(adjoint, retain, effects=tangent == "jvp", shared=shared)
    assert len(args) == 2 * n, (len(args), n)
    args = list(args)
    for k in func.kept:  # arrays the tangents-only kernel writes and reads back: a copy
        if isinstance(args[k], array):
            args[k] = _scratch_copy(args[k])
    backend = config.cpu_backend if device.is_cpu else "cuda"
    runner = kernel.compiled(backend, adjoint, retain, tangent=tangent, shared=shared)
    written = written_params(func)
    try:
        if device.is_cpu:
            runner.launch(dims, args)
        else:
            runner.launch(dims, args, ordinal=device.ordinal)
    finally:
        for k in written:
            if args[k] is not None:
                args[k]._bump_version()


def _scratch_copy(a):
    """A copy of a that no tape records, or None for None."""
    if a is None:
        return None
    from .tape import _keep_copy
    return _keep_copy(a)


def tangent_args(kernel, params, args, tan_inputs, tan_outputs, n_in, device) -> list:
    """The tangent arguments of a tangent launch, one per parameter, checked."""
    from .launch import convert_arg
    n_out = len(params) - n_in
    tan = list(tan_inputs if tan_inputs is not None else [None] * n_in)
    if len(tan) != n_in:
        raise LaunchError(f"kernel '{kernel.key}': tan_inputs needs one entry per input "
                          f"({n_in}), got {len(tan)}")
    outs = list(tan_outputs if tan_outputs is not None else [None] * n_out)
    if len(outs) != n_out:
        raise LaunchError(f"kernel '{kernel.key}': tan_outputs needs one entry per output "
                          f"({n_out}), got {len(outs)}")
    out = []
    for p, a, t in zip(params, args, tan + outs):
        if p.type.is_array:
            if t is not None and not isinstance(t, array) and np.isscalar(t) and t == 0:
                t = None
            t = convert_arg(kernel.key, p, t, device, allow_none=True)
            if t is not None and a is not None and t.shape != a.shape:
                raise LaunchError(f"kernel '{kernel.key}': the tangent of '{p.name}' has "
                                  f"shape {t.shape}, but '{p.name}' has shape {a.shape}")
            out.append(t)
        elif p.type.is_float or t is None:
            out.append(convert_arg(kernel.key, p, t, device, allow_none=True))
        else:
            raise LaunchError(f"kernel '{kernel.key}': parameter '{p.name}' ({p.type}) is not "
                              "a float, so it has no tangent: give None")
    return out


def jvp(kernel, dim, inputs, tan_inputs, outputs=(), device=None) -> list:
    """Run kernel with its tangents: the outputs are written as by kl.launch (and a tape
    records the launch as that forward launch), and the returned list holds one new
    tangent array (J·u) per output array (None for a non-array output)."""
    from .launch import launch
    outputs = list(outputs or ())
    tans = [zeros_like(o) if isinstance(o, array) else None for o in outputs]
    launch(kernel, dim, inputs, outputs, device=device, tangent="jvp", tan_inputs=tan_inputs,
           tan_outputs=tans)
    return tans


# ---- Hessian-vector products ------------------------------------------------------------

def tape_hvp(tape, loss, v) -> dict:
    from ..autodiff.inplace import plan
    from .launch import written_params
    from .tape import RecordedArrayOp, _check_replayable, _zero_like
    if not isinstance(loss, array) or loss.size != 1 or loss.dtype.shape \
            or not loss.dtype.is_float:
        raise RuntimeError("kernlab: Tape.hvp(loss, v) needs a one-element array of a float "
                           "type as the loss")
    if not isinstance(v, dict) or not v:
        raise RuntimeError("kernlab: Tape.hvp(loss, v) takes v as a dict {input array: its "
                           "direction (an array of the same shape)}")
    tan: dict = {}  # id(array) -> tangent array
    for a, d in v.items():
        if not isinstance(a, array):
            raise RuntimeError(f"kernlab: Tape.hvp: the keys of v must be kernlab arrays, "
                               f"not {type(a).__name__}")
        d = d.numpy() if isinstance(d, array) else np.asarray(d)
        shape = np.asarray(a.numpy()).shape  # a vec3 element is three values
        if d.size != math.prod(shape):
            raise RuntimeError(f"kernlab: Tape.hvp: the direction for an array of shape "
                               f"{a.shape} has {d.size} values")
        tan[id(a)] = array(d.reshape(shape), dtype=a.dtype, device=a.device)
    records = []  # RecordedArrayOp, or (launch, its RecordedLaunch)
    for rec in tape.launches:
        if isinstance(rec, RecordedArrayOp):
            records.append(rec)
            continue
        info = tape._info.get(id(rec))
        if info is None:
            raise GradientError("Tape.hvp cannot differentiate a Python callback recorded "
                                "with record_func twice")
        if rec.kernel.enable_backward:
            records.append((rec, info))
    for r in records:  # refuse before anything runs, as backward does
        if not isinstance(r, RecordedArrayOp):
            _check_replayable(r[1])

    _refuse_views(v, loss, records)
    needed = _tangents_read(records)

    def fresh(table, a):
        t = table.get(id(a))
        if t is None:
            t = table[id(a)] = zeros_like(a, requires_grad=False)
        return t

    # 1. the tangent sweep, in launch order (the forward itself has already run): each
    # launch's tangents-only kernel on the values it read (in-place updates: the tape's
    # copies); the tangents its adjoint will read with those values are kept beside them
    tan_kept: dict = {}  # id(RecordedLaunch) -> {param index: tangent copy or None}
    for r in records:
        if isinstance(r, RecordedArrayOp):
            if id(r.dest) in needed:
                _copy_part(r, fresh(tan, r.dest), tan.get(id(r.src)))
            continue
        rec, info = r
        params = rec.params
        before = set(plan(rec.kernel.ir).snapshot)  # copied before the launch ran
        kept = tan_kept[id(info)] = {
            k: _scratch_copy(tan.get(id(params[k]))) for k in info.snapshots if k in before}
        written = set(written_params(rec.kernel.ir))
        if any(id(params[k]) in needed for k in written):
            primal = [info.snapshots.get(k, a) for k, a in enumerate(params)]
            targs = [(fresh(tan, a) if k in written else tan.get(id(a)))
                     if isinstance(a, array) else _zero_like(p)
                     for k, (p, a) in enumerate(zip(rec.kernel.params, params))]
            run_variant(rec.kernel, rec.dim, primal + targs, rec.device, False, "tangent")
        for k in info.snapshots:  # copied when a later launch was about to overwrite it
            if k not in before:
                kept[k] = _scratch_copy(tan.get(id(params[k])))
    # 2. the adjoints in reverse order, with their tangents (scratch gradients)
    grads: dict = {}
    tgrads: dict = {}
    fresh(grads, loss).fill_(1.0)
    for r in reversed(records):
        if isinstance(r, RecordedArrayOp):
            for table in (grads, tgrads):
                if id(r.dest) in table:
                    _copy_adjoint(r, table[id(r.dest)], fresh(table, r.src))
            continue
        rec, info = r
        params = rec.kernel.params
        args = [info.snapshots.get(k, a) for k, a in enumerate(rec.params)]
        adj = [fresh(grads, a) if isinstance(a, array) else _zero_like(p)
               for p, a in zip(params, rec.params)]
        kept = tan_kept[id(info)]
        tprimal = [(kept[k] if k in kept else tan.get(id(a))) if isinstance(a, array)
                   else _zero_like(p) for k, (p, a) in enumerate(zip(params, rec.params))]
        tadj = [fresh(tgrads, a) if isinstance(a, array) else _zero_like(p)
                for p, a in zip(params, rec.params)]
        retain = frozenset(k for k, a in enumerate(rec.params)
                           if isinstance(a, array) and a.retain_grad)
        run_variant(rec.kernel, rec.dim, args + adj + tprimal + tadj, rec.device, True,
                    "tangent", retain)
    return {a: tgrads[id(a)] if id(a) in tgrads else zeros_like(a, requires_grad=False)
            for a in v}


def _tangents_read(records) -> set:
    """id() of the arrays whose tangents some step of an HVP reads: those a recorded kernel
    loads (its tangent sweep and the tangent of its adjoint read their tangents) and the
    sources of array copies. A sweep that writes none of them is skipped (a loss that is
    only accumulated into needs no tangent)."""
    from ..ir.nodes import Op
    out = set()
    for r in records:
        if hasattr(r, "src"):
            out.add(id(r.src))
            continue
        rec = r[0]
        func = rec.kernel.ir
        loaded = {i.args[0] for i in func.body.walk() if i.op is Op.LOAD}
        out.update(id(a) for p, a in zip(func.params, rec.params)
                   if p.value in loaded and isinstance(a, array))
    return out


def _refuse_views(v, loss, records) -> None:
    """Tape.hvp keys its tangents and scratch gradients by array object, so two different
    array objects over one memory (a view and its base, two views) would not see each
    other's tangents and the product would silently miss their terms: refused."""
    arrays = list(v) + [loss]
    for r in records:
        arrays += [a for a in (r[0].params if isinstance(r, tuple) else (r.src, r.dest))
                   if isinstance(a, array)]
    owner: dict = {}
    for a in arrays:
        other = owner.setdefault(id(a._vbox), a)
        if other is not a:
            raise GradientError(
                "Tape.hvp does not follow array views yet: two of the arrays it would "
                f"differentiate (shapes {other.shape} and {a.shape}) share memory (a view "
                "and its base, or two views). Launch on whole arrays (a.contiguous() or "
                "kl.clone gives a copy) to take the Hessian-vector product.")


def _part(rec):
    dest = rec.dest
    if rec.kind == "copy":
        n, do, so = rec.info["count"], rec.info["dest_offset"], rec.info["src_offset"]
    else:
        n, do, so = dest.size, 0, 0
    k = math.prod(dest.dtype.shape)
    return n * k, do * k, so * k


def _copy_part(rec, dest_t, src_t):
    """The tangent of an array copy: the copied part of dest's tangent becomes src's."""
    n, do, so = _part(rec)
    values = np.array(array_mod._read_flat(src_t, so, n)) if src_t is not None else \
        np.zeros(n, np.dtype(dest_t.dtype.scalar.np))
    array_mod._write_flat(dest_t, do, values)


def _copy_adjoint(rec, dest_g, src_g):
    """The adjoint of an array copy on scratch gradients (as Tape.backward does it)."""
    n, do, so = _part(rec)
    incoming = np.array(array_mod._read_flat(dest_g, do, n))
    if consumes_copied_gradient(rec):
        array_mod._write_flat(dest_g, do, np.zeros(n, incoming.dtype))
    array_mod._write_flat(src_g, so, np.array(array_mod._read_flat(src_g, so, n)) + incoming)
