"""Forward mode at run time: tangent launches, ``kl.jvp`` and ``Tape.hvp``.

A tangent launch (``kl.launch(k, dim, inputs, outputs, tangent=True, tan_inputs=[...],
tan_outputs=[...])``) runs the kernel's tangent kernel: the forward computation — its
outputs are written as by a plain launch — together with the outputs' tangents, J·u for
the input tangents u. The lists mirror Warp's ``adj_inputs``/``adj_outputs``: one entry per
input and per output; an array's entry may be None (a zero tangent for an input, not
computed for an output), a float scalar's is a number (None: 0). Like a primal output, a
tangent output is written by stores and accumulated by atomic adds, so zero it first
where the kernel accumulates.

``Tape.hvp(loss, v)`` gives the Hessian-vector product H·v of a scalar loss recorded on
the tape, by forward over reverse: a tangent sweep of every recorded launch (without
their side effects: the forward has already run), then the tangent of each adjoint
kernel in reverse order, on scratch gradient arrays (the tape's own gradients are left
alone).
"""
from __future__ import annotations

import math

import numpy as np

from .. import config
from ..errors import GradientError, LaunchError
from . import array as array_mod
from .array import array, zeros_like


def run_variant(kernel, dims, args, device, adjoint: bool, tangent: str):
    """Run a tangent variant ("tangent": with the kernel's effects, "sweep": without) of
    the kernel, or with adjoint=True of its adjoint; args hold every parameter."""
    from .launch import written_params
    if math.prod(dims) == 0:
        return
    n = len(kernel.params) * (2 if adjoint else 1)
    retain = frozenset(k for k, a in enumerate(args[:len(kernel.params)])
                       if isinstance(a, array) and a.retain_grad) if adjoint else frozenset()
    shared = False
    if adjoint:  # gradient arrays (or their tangents) sharing memory: the atomic adjoint
        from .launch import _gradients_overlap
        adj = kernel.adjoint_variant(retain)
        shared = bool(adj.owned) and (_gradients_overlap(adj, args[:n])
                                      or _gradients_overlap(adj, args[n:]))
    func = kernel.tangent_variant(adjoint, retain, effects=tangent != "sweep", shared=shared)
    assert len(args) == 2 * n, (len(args), n)
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
    """Run kernel with its tangents: the outputs are written as by kl.launch, and the
    returned list holds one new tangent array (J·u) per output array (None for a
    non-array output)."""
    from .launch import launch
    outputs = list(outputs or ())
    tans = [zeros_like(o) if isinstance(o, array) else None for o in outputs]
    launch(kernel, dim, inputs, outputs, device=device, tangent=True, tan_inputs=tan_inputs,
           tan_outputs=tans)
    return tans


# ---- Hessian-vector products ------------------------------------------------------------

def tape_hvp(tape, loss, v) -> dict:
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
    records = []
    for rec in tape.launches:
        if isinstance(rec, RecordedArrayOp):
            records.append(rec)
            continue
        info = tape._info.get(id(rec))
        if info is None:
            raise GradientError("Tape.hvp cannot differentiate a Python callback recorded "
                                "with record_func twice")
        _check_replayable(info)
        if rec.kernel.enable_backward:
            records.append(rec)

    _refuse_views(v, loss, records)

    def fresh(table, a):
        t = table.get(id(a))
        if t is None:
            t = table[id(a)] = zeros_like(a, requires_grad=False)
        return t

    # 1. the tangent sweep, in launch order (the forward itself has already run)
    for rec in records:
        if isinstance(rec, RecordedArrayOp):
            src = tan.get(id(rec.src))
            _copy_part(rec, fresh(tan, rec.dest), src)
            continue
        written = set(written_params(rec.kernel.ir))
        targs = []
        for k, (p, a) in enumerate(zip(rec.kernel.params, rec.params)):
            if isinstance(a, array):
                targs.append(fresh(tan, a) if k in written else tan.get(id(a)))
            else:
                targs.append(_zero_like(p))
        run_variant(rec.kernel, rec.dim, list(rec.params) + targs, rec.device, False, "sweep")
    # 2. the adjoints in reverse order, with their tangents (scratch gradients)
    grads: dict = {}
    tgrads: dict = {}
    fresh(grads, loss).fill_(1.0)
    for rec in reversed(records):
        if isinstance(rec, RecordedArrayOp):
            for table in (grads, tgrads):
                if id(rec.dest) in table:
                    _copy_adjoint(rec, table[id(rec.dest)], fresh(table, rec.src))
            continue
        params, args = rec.kernel.params, list(rec.params)
        adj = [fresh(grads, a) if isinstance(a, array) else _zero_like(p)
               for p, a in zip(params, args)]
        tprimal = [tan.get(id(a)) if isinstance(a, array) else _zero_like(p)
                   for p, a in zip(params, args)]
        tadj = [fresh(tgrads, a) if isinstance(a, array) else _zero_like(p)
                for p, a in zip(params, args)]
        run_variant(rec.kernel, rec.dim, args + adj + tprimal + tadj, rec.device, True,
                    "tangent")
    return {a: tgrads[id(a)] if id(a) in tgrads else zeros_like(a, requires_grad=False)
            for a in v}


def _refuse_views(v, loss, records) -> None:
    """Tape.hvp keys its tangents and scratch gradients by array object, so two different
    array objects over one memory (a view and its base, two views) would not see each
    other's tangents and the product would silently miss their terms: refused."""
    arrays = list(v) + [loss]
    for rec in records:
        arrays += [a for a in (getattr(rec, "params", None) or (rec.src, rec.dest))
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
    if rec.kind != "clone" and not rec.dest.retain_grad:
        array_mod._write_flat(dest_g, do, np.zeros(n, incoming.dtype))
    array_mod._write_flat(src_g, so, np.array(array_mod._read_flat(src_g, so, n)) + incoming)
