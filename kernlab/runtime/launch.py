"""kl.launch and kl.Launch: argument validation, backend dispatch, tape recording.

Every argument is checked against the kernel's parameter before anything runs
(launch_args.py); a mismatch is a LaunchError naming the kernel and the parameter, never a
crash or a silent conversion that loses data. A small forward launch on the CPU takes the
short path of launch_short.py from the kernel's second launch on, a small adjoint launch
(kl.launch, a recorded Launch, a tape's replay through _run) its adjoint short path from
the kernel's second adjoint launch on; whatever those paths do not accept comes here.
"""
from __future__ import annotations

import math
import weakref
import numpy as np

from .. import config
from ..errors import LaunchError, LaunchTypeError, LaunchValueError
from ..ir.nodes import Op
from ..kernel import Kernel, _user_facing
from . import capture as _capture
from . import tape as _tape
from .array import array
from .device import _CPU, get_device
from .launch_args import _adjoint_args, _launch_device, _plan, convert_arg
from .launch_short import ShortPath as _Quick
from .launch_short_adjoint import AdjointShortPath as _QuickAdjoint


MAX_THREADS = 2**31 - 1  # thread ids are int32
_CAPTURES = _capture._OPEN  # the graph capture in progress, if any
_TAPE = _tape._ACTIVE_TAPE.get  # the tape recording, if any


def _dims(dim) -> tuple:
    dims = (dim,) if isinstance(dim, (int, np.integer)) else \
        tuple(dim) if isinstance(dim, (tuple, list)) else None
    if dims is None or not 1 <= len(dims) <= 4 \
            or not all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims):
        # as Warp: a count or sign that is wrong is a ValueError, a dim that is no int a
        # TypeError (both are LaunchErrors, RuntimeErrors)
        kind = LaunchTypeError if dims is None or not all(
            isinstance(d, (int, np.integer)) for d in dims) else LaunchValueError
        raise kind(f"launch dim must be an int or a tuple of 1 to 4 non-negative ints, "
                   f"not {dim!r}")
    dims = tuple(int(d) for d in dims)
    if math.prod(dims) > MAX_THREADS:
        raise LaunchError(f"a launch of {math.prod(dims)} threads is too large (thread ids are "
                          f"int32: at most {MAX_THREADS})")
    return dims


class Launch:
    """A launch to run later: made by ``kl.launch(..., record_cmd=True)`` (checked once,
    forward or adjoint as asked) or built as ``kl.Launch(kernel, device, adjoint=False)``
    and filled in with set_param_* and set_dim. ``.launch()`` runs it; every call runs it
    again with the parameters it holds then.

    ``params`` holds the kernel's arguments, followed for an adjoint launch by one adjoint
    per parameter; an array's adjoint left as None means that array's own ``.grad``.
    """

    def __init__(self, kernel, device=None, hooks=None, params=None, params_addr=None,
                 bounds=None, max_blocks=0, block_dim=256, adjoint=False, *, dim=None):
        if not isinstance(kernel, Kernel):
            raise LaunchError(f"kl.Launch needs a @kl.kernel, got {kernel!r}")
        self.kernel = kernel
        self.device = get_device(device)
        self.adjoint = bool(adjoint)
        self.max_blocks, self.block_dim = max_blocks, block_dim
        dim = bounds if dim is None else dim
        self.dim = _dims(dim) if dim is not None else (0,)
        by_hand = params is None
        if params is None:
            func = self._func()
            params = [None if p.type.is_array else
                      convert_arg(kernel.key, p, None, self.device, allow_none=True)
                      for p in func.params]
        self.params = list(params)
        self.null_arrays = False  # True: None arrays were passed on purpose (null arrays)
        self.struct_args = None  # the user's arguments where the kernel takes structs
        if by_hand and getattr(self.kernel.ir, "struct_signature", None) is not None:
            from .struct_launch import StructArgs  # set_param_* take the user's indices
            self.struct_args = StructArgs(kernel, [None] * len(kernel.ir.struct_signature),
                                          self.device)

    def _func(self):
        return self.kernel.adjoint_ir if self.adjoint else self.kernel.ir

    # Warp's tape keeps a launch as the list [kernel, dim, max_blocks, inputs, outputs,
    # device, block_dim, metadata]; a kl.Launch (what tape.launches holds) reads the same way
    def __len__(self):
        return 8

    def __getitem__(self, index):
        args = self.params[:len(self.kernel.params)]
        n_in = getattr(self, "n_inputs", len(args))
        dim = self.dim[0] if len(self.dim) == 1 else self.dim
        return [self.kernel, dim, self.max_blocks, args[:n_in], args[n_in:], self.device,
                self.block_dim, {}][index]

    def __repr__(self):
        kind = "adjoint " if self.adjoint else ""
        return f"<kernlab {kind}Launch of {self.kernel.key} dim={self.dim}>"

    def launch(self, stream=None):
        quick = self.kernel._quick
        if quick and not self.adjoint and self.struct_args is None \
                and not _capture._OPEN and self.device is _CPU and len(self.dim) == 1 \
                and quick.run_converted(self.dim[0], self.params):
            return
        if self.struct_args is not None:  # structs may have changed since: flatten again
            self.struct_args.refresh(self)
        n = len(self.kernel.params)
        args = list(self.params)
        for k, p in enumerate(self.kernel.params):
            if p.type.is_array and args[k] is None and not self.null_arrays:
                raise LaunchError(f"kernel '{self.kernel.key}': parameter '{p.name}' has no "
                                  "array; set it with set_param_by_name or set_param_at_index")
        if self.adjoint:  # an array's adjoint left as None: its own gradient
            from ..autodiff.inplace import refuse_manual_adjoint
            refuse_manual_adjoint(self.kernel.ir, self.kernel.key, args)
            for k, p in enumerate(self.kernel.params):
                if p.type.is_array and args[n + k] is None and args[k] is not None:
                    args[n + k] = args[k].grad
        kernel, dim, device, adjoint = self.kernel, self.dim, self.device, self.adjoint
        handles = getattr(kernel.ir, "handle_hidden", None)

        def run():
            if handles:  # a grid rebuilt or mesh refitted since this launch was made
                from ..handles import refresh_handle_args
                refresh_handle_args(kernel, args)
            _run(kernel, dim, args, device, adjoint)

        if _capture.defer(f"launch {kernel.key}", run):
            return  # recorded into the open graph capture (kl.ScopedCapture)
        run()
        if kernel._quick is None and not adjoint and self.struct_args is None \
                and device is _CPU and not handles:
            kernel._quick = _Quick.make(kernel)  # the next small launches take the short path

    def set_dim(self, dim):
        self.dim = _dims(dim)

    def set_param_at_index(self, index: int, value, adjoint: bool = False):
        """Set argument ``index`` (its adjoint with adjoint=True, on an adjoint launch)."""
        if self.struct_args is not None and not adjoint:
            return self.struct_args.set(self, index, value)
        n = len(self.kernel.params)
        if adjoint:
            if not self.adjoint:
                raise LaunchError(f"kernel '{self.kernel.key}': this launch is not an adjoint "
                                  "launch, so it has no adjoint parameters")
            index += n
        if not 0 <= index < len(self.params):
            raise LaunchError(f"kernel '{self.kernel.key}' has no parameter at index "
                              f"{index - n if adjoint else index}")
        param = self._func().params[index]
        self.params[index] = convert_arg(self.kernel.key, param, value, self.device,
                                         allow_none=index >= n or param.type.is_array)

    def set_param_by_name(self, name: str, value, adjoint: bool = False):
        if self.struct_args is not None and not adjoint \
                and self.struct_args.index_of(name) is not None:
            return self.set_param_at_index(self.struct_args.index_of(name), value)
        for k, p in enumerate(self.kernel.params):
            if p.name == name:
                self.set_param_at_index(k, value, adjoint=adjoint)
                return
        raise LaunchError(f"kernel '{self.kernel.key}' has no parameter named '{name}'")

    def set_params(self, values):
        """Set the leading arguments, in order."""
        for k, v in enumerate(values):
            self.set_param_at_index(k, v)

    def set_param_at_index_from_ctype(self, index: int, value):
        self.set_param_at_index(index, value)

    def set_param_by_name_from_ctype(self, name: str, value):
        self.set_param_by_name(name, value)


def launch_tiled(kernel, dim=None, inputs=(), outputs=(), block_dim=None, **kwargs):
    """Launch a tiled kernel (Warp's ``launch_tiled``): ``dim`` counts blocks, and Warp
    appends ``block_dim``, the threads of a block, as a last launch dimension. kernlab runs
    each block as one thread owning its whole tiles, as Warp does on the CPU, on every
    device (the CUDA backend too), so the last dimension is 1 and ``block_dim`` only has
    to be given: ``i, j = kl.tid()`` gives the block's indices, and a kernel may read the
    extra one (``i, j, lane = kl.tid()``; lane is 0)."""
    if dim is None:
        raise LaunchError("kl.launch_tiled: give dim (the number of blocks) by keyword")
    if block_dim is None:
        raise LaunchError("kl.launch_tiled: give block_dim (the threads per block) by keyword")
    dims = (dim,) if type(dim) is int else tuple(dim)
    if len(dims) > 3:
        raise LaunchError(f"kl.launch_tiled({getattr(kernel, 'key', kernel)}): a tiled "
                          f"launch has at most 3 block dimensions, got {len(dims)}")
    if isinstance(kernel, Kernel) and kernel.param_types is None and kernel.is_generic:
        kernel = kernel.for_arguments(list(inputs) + list(outputs))  # Any: its overload
    if isinstance(kernel, Kernel) and kernel.ir.ndim <= len(dims):
        full = dims  # the kernel does not read the lane index: leave the 1 out
    else:
        full = dims + (1,)
    return launch(kernel, dim=full, inputs=inputs, outputs=outputs, block_dim=1, **kwargs)


def launch(kernel, dim=None, inputs=(), outputs=(), adj_inputs=None, adj_outputs=None,
           device=None, stream=None, adjoint=False, record_tape=True, record_cmd=False,
           max_blocks=0, block_dim=256, tangent=False, tan_inputs=None, tan_outputs=None):
    """Run ``kernel`` on ``dim`` threads; ``inputs`` then ``outputs`` are its arguments.

    ``dim`` is an int or a tuple of up to 3 ints (``kl.tid()`` gives the index; dim 0 runs
    nothing). Arrays must live on one device, which the launch runs on unless ``device``
    names it. Scalars, vectors and matrices take Python numbers, tuples, NumPy arrays or
    kernlab values. Inside a ``kl.Tape`` the launch is recorded (``record_tape=False`` opts
    out). ``adjoint=True`` runs the kernel's adjoint with ``adj_inputs``/``adj_outputs``
    (None or 0 for an array means its own ``.grad``, as in Warp); as in Warp, a store's
    adjoint zeroes the gradient it reads only in the array's own ``.grad``, not in a
    buffer passed explicitly (except for arrays the kernel also reads: _kept_gradients).
    ``tangent=True`` runs
    its tangent kernel (forward mode) from ``tan_inputs`` into ``tan_outputs``.
    ``record_cmd=True`` returns a :class:`kl.Launch` to run later instead of running. ``stream``,
    ``max_blocks`` and ``block_dim`` are accepted for Warp code; kernlab picks its own. An
    unknown keyword is a TypeError, as in Warp.
    A wrong argument is a LaunchError naming the kernel and the parameter.
    """
    if type(dim) is int and device is None and not (
            adjoint or record_cmd or tangent or _CAPTURES):  # the short path (launch_short)
        try:
            quick = kernel._quick
        except AttributeError:  # not a kernel: the general path says so
            quick = None
        if quick and (not record_tape or _TAPE() is None) \
                and quick.run(dim, [*(inputs or ()), *outputs] if outputs else inputs):
            return None
    elif adjoint is True and type(dim) is int and device is None and not (
            record_cmd or tangent or _CAPTURES):  # the adjoint's short path (launch_short)
        quick = getattr(kernel, "_quick_adjoint", None)
        if quick and quick.launch(dim, inputs, outputs, adj_inputs, adj_outputs):
            return None
    return _launch(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, adjoint,
                   record_tape, record_cmd, max_blocks, block_dim, tangent, tan_inputs,
                   tan_outputs)


def _launch(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, adjoint,
            record_tape, record_cmd, max_blocks, block_dim, tangent, tan_inputs, tan_outputs):
    """kl.launch's general path: every check, conversion and error message."""
    if not isinstance(kernel, Kernel):
        raise LaunchError(f"kl.launch needs a @kl.kernel, got {kernel!r}")
    if dim is None:
        raise LaunchTypeError(f"kl.launch({kernel.key}): give dim, the number of threads")
    dims = (dim,) if type(dim) is int and 0 <= dim <= MAX_THREADS else _dims(dim)
    inputs, outputs = inputs or (), outputs or ()
    n_in = len(inputs)
    primal = list(inputs) + list(outputs) if outputs else list(inputs)
    if kernel.param_types is None and kernel.is_generic:  # Any parameters: this launch's
        kernel = kernel.for_arguments(primal)
    structs = None
    if getattr(kernel.ir, "struct_signature", None) is not None:  # one value per leaf field
        from .struct_launch import flatten_launch
        structs, primal, n_in, adj_inputs, adj_outputs = flatten_launch(
            kernel, inputs, outputs, adj_inputs, adj_outputs, device, adjoint)
    plan = _plan(kernel)
    if len(primal) != len(plan):
        params = kernel.params
        raise LaunchError(f"kernel '{kernel.key}' takes {len(params)} argument(s) "
                          f"({', '.join(p.name for p in params)}), but {len(primal)} were "
                          "given in inputs and outputs")
    dev = _launch_device(device, primal)
    if record_cmd:  # arrays may be filled in later
        args = [None if v is None and p.type.is_array else check(v, dev)
                for check, p, v in zip(plan, kernel.params, primal)]
    else:
        args = [check(v, dev) for check, v in zip(plan, primal)]
    if tangent:  # True: the tangents only; "jvp" (kl.jvp): the outputs too
        _tangent_launch(kernel, dims, args, dev, tan_inputs, tan_outputs, n_in,
                        adjoint or record_cmd or structs is not None, tangent == "jvp",
                        record_tape)
        return None
    tape = _tape.active_tape() if record_tape and not adjoint and not record_cmd \
        and not _capture.is_capturing() else None
    if tape is not None:  # copies what the launch overwrites and an adjoint needs
        tape.prepare_launch(kernel, args)
    if adjoint:
        from ..autodiff.inplace import refuse_manual_adjoint
        refuse_manual_adjoint(kernel.ir, kernel.key, args)
        params = kernel.params
        adj = _adjoint_args(kernel, params, args, adj_inputs, adj_outputs, n_in)
        args = args + [convert_arg(kernel.key, p, v, dev, allow_none=True)
                       for p, v in zip(kernel.adjoint_ir.params[len(params):], adj)]
    cmd = Launch(kernel, dev, params=args, adjoint=adjoint, dim=dims, max_blocks=max_blocks,
                 block_dim=block_dim)
    cmd.struct_args = structs
    cmd.n_inputs = n_in
    if record_cmd:
        return cmd
    cmd.null_arrays = True  # kl.launch(k, n, inputs=[None, ...]): a null array, as in Warp
    cmd.launch()
    if kernel._quick is None and structs is None and dev.is_cpu:
        kernel._quick = _Quick.make(kernel)  # the next small launches take the short path
    if record_tape and not adjoint and not _capture.is_capturing():
        tape = _tape.active_tape()
        if tape is not None:  # recorded after it ran: versions include its own writes
            tape.record_launch(cmd, n_inputs=n_in)
            if structs is not None:
                structs.record_gradients(tape)
    return None


def _tangent_launch(kernel, dims, args, dev, tan_inputs, tan_outputs, n_in, unsupported,
                    jvp, record_tape):
    """A tangent launch (runtime/tangent.py): the tangents only, or with jvp the kernel's
    outputs too, which a recording tape then records as the forward launch."""
    from ..autodiff.forward import check_launchable
    from .tangent import run_variant, tangent_args
    if unsupported:
        raise LaunchError(f"kl.launch({kernel.key}, tangent=True): a tangent launch runs now, "
                          "on plain (non-struct) arguments; it cannot be an adjoint launch or "
                          "a recorded command (for second derivatives use Tape.hvp)")
    _user_facing(check_launchable, kernel.ir)
    tans = tangent_args(kernel, kernel.params, args, tan_inputs, tan_outputs, n_in, dev)
    tape = _tape.active_tape() if jvp and record_tape and not _capture.is_capturing() \
        else None
    if tape is not None:
        tape.prepare_launch(kernel, args)
    run_variant(kernel, dims, args + tans, dev, False, "jvp" if jvp else "tangent")
    if tape is not None:  # it ran the forward too: a tape records that
        tape.record_launch(Launch(kernel, dev, params=args, dim=dims), n_inputs=n_in)


def _run(kernel: Kernel, dims, args, device, adjoint, retain=None):
    """Run the kernel (its adjoint with adjoint=True; ``retain``: the parameters whose
    gradients its stores leave in place, by default those _kept_gradients gives)."""
    from ..autodiff.inplace import mark_overwritten
    if adjoint and device is _CPU and len(dims) == 1:  # a small one: launch_short
        quick = kernel._quick_adjoint
        if quick and quick.run(dims[0], args, retain):
            return
    if math.prod(dims) == 0:
        return
    if not adjoint:
        retain = frozenset()
    elif retain is None:
        retain = _kept_gradients(kernel.ir, args)
    func = kernel.adjoint_variant(retain) if adjoint else kernel.ir
    # kl.tid() gives the leading launch indices (Warp 1.19: ``i = kl.tid()`` in a 2-D launch
    # is the row): a kernel that reads n of them runs over the launch's first n dims, once
    # per combination of the others (as many threads as Warp runs, each with its indices);
    # one that reads more than the launch has sees 0 for the missing ones
    n = max(kernel.ir.ndim, 1)
    repeats = math.prod(dims[n:]) if len(dims) > n else 1
    dims = tuple(dims[:n]) + (1,) * (n - len(dims))
    # (each repeat is a launch of its own, in turn: within one, every index is one thread's)
    shared = adjoint and bool(func.owned) and _gradients_overlap(func, args)
    if shared:  # the per-thread ownership proof does not hold for these arrays
        func = kernel.adjoint_variant(retain, shared=True)
    backend = config.cpu_backend if device.is_cpu else "cuda"
    runner = kernel.compiled(backend, adjoint, retain, shared=shared)
    written = written_params(func)
    if device.is_cpu:
        _refuse_readonly(kernel, func, args, written)
    try:
        for _ in range(repeats):
            if device.is_cpu:
                runner.launch(dims, args)
            else:  # the device, not the arrays, says where (a kernel may take no arrays)
                runner.launch(dims, args, ordinal=device.ordinal)
    finally:  # also after an IndexError or a KeyboardInterrupt: some threads have written
        for k in written:
            if args[k] is not None:
                args[k]._bump_version()
        if not adjoint:
            mark_overwritten(kernel.ir, kernel.key, args)
    if adjoint and kernel._quick_adjoint is None and device is _CPU:
        kernel._quick_adjoint = _QuickAdjoint.make(kernel)  # the next small ones take it


def _kept_gradients(func, args) -> frozenset:
    """The array parameters of an adjoint launch whose stores must leave the incoming
    gradient in place (func: the kernel's forward IR). As in Warp 1.19, a store's adjoint
    zeroes (consumes) the element's gradient only in the array's own ``.grad`` (and not
    when the array has retain_grad): a gradient buffer passed explicitly in
    ``adj_inputs``/``adj_outputs`` for an array the kernel only writes belongs to the caller
    and is only read. Warp tests the buffer's address against ``.grad``'s, so a different
    array object over the same memory counts as ``.grad``.

    On purpose unlike Warp: for an array the kernel also reads (an in-place update), the
    one buffer carries the gradient with respect to the values after the launch in and
    must carry that with respect to the values before it out, which needs the consumption
    (``x[i] = 2 x[i]`` seeded with g gives 2 g; Warp's unzeroed buffer gives 3 g), so such
    a buffer is always consumed (retain_grad aside)."""
    n = len(args) // 2
    read = _read_params(func)
    kept = []
    for k in range(n):
        a, g = args[k], args[n + k]
        if not isinstance(a, array):
            continue
        own = a.grad
        if a.retain_grad or (k not in read and (
                not isinstance(g, array) or own is None
                or (g is not own and (g.ptr != own.ptr or g.shape != own.shape)))):
            kept.append(k)
    return frozenset(kept)


def _read_params(func) -> frozenset:
    """Indices of the array parameters the function loads from (cached on the Function)."""
    cached = getattr(func, "_read", None)
    if cached is None:
        sources = {ins.args[0] for ins in func.body.walk() if ins.op is Op.LOAD}
        cached = func._read = frozenset(k for k, p in enumerate(func.params)
                                        if p.value in sources)
    return cached


def _gradients_overlap(func, args) -> bool:
    """Whether an adjoint launch's gradient arrays share memory where the adjoint's plain
    (non-atomic) accumulation needs them apart: an array in ``func.owned`` (each thread owns
    one element of it) overlapping another gradient array, unless both are the same view
    accessed at the same index (then each element still has one thread). Views of one
    array have views of one gradient, so ``k(a[1:], a[:-1])`` needs the atomic adjoint."""
    n = len(func.params) // 2
    spans = []
    for k in range(n):
        a = args[n + k]
        if isinstance(a, array):
            span = _span(a, func.params[k].type.dtype.nbytes)
            if span is not None:
                spans.append((k, *span))
    owned = func.owned
    for x, (i, lo, hi, view) in enumerate(spans):
        for j, lo2, hi2, view2 in spans[x + 1:]:
            if (i in owned or j in owned) and lo < hi2 and lo2 < hi and not (
                    view == view2 and owned.get(i) is not None and owned.get(i) == owned.get(j)):
                return True
    return False


_spans: dict = {}  # id(NumPy data) -> (weak reference, itemsize, span)


def _span(a, itemsize):
    """(lo, hi, view) of an array: the bytes [lo, hi) it spans and (ptr, shape, strides);
    None when empty. Kept per NumPy buffer object: an adjoint launch asks for every
    gradient array's, and a.ptr alone costs microseconds."""
    data = getattr(a, "_data", None)
    cpu = type(data) is np.ndarray
    if cpu:
        hit = _spans.get(id(data))
        if hit is not None and hit[0]() is data and hit[1] == itemsize:
            return hit[2]
    ptr = a.ptr
    if not ptr:
        span = None
    else:
        shape, strides = tuple(a.shape[:a.ndim]), tuple(a.strides)
        reach = [(s - 1) * d for s, d in zip(shape, strides)]
        span = (ptr + sum(r for r in reach if r < 0),
                ptr + sum(r for r in reach if r > 0) + itemsize, (ptr, shape, strides))
    if cpu:
        key = id(data)
        _spans[key] = (weakref.ref(data, lambda _, key=key: _spans.pop(key, None)), itemsize,
                       span)
    return span


def _refuse_readonly(kernel, func, args, written) -> None:
    """A kernel that stores into an array over read-only memory (a read-only memory map,
    bytes, a NumPy array with writeable=False) is refused before it runs: the write would
    crash the process or change data its owner declared immutable."""
    for k in written:
        a = args[k]
        data = getattr(a, "_data", None)
        if type(data) is np.ndarray and not data.flags.writeable:
            raise LaunchError(
                f"kernel '{kernel.key}' writes parameter '{func.params[k].name}', but the "
                "array passed for it is read-only (made from read-only memory: a memory map "
                "opened with mode='r', bytes, or a NumPy array with writeable=False); pass a "
                "writable copy (kl.array(data) copies)", kernel=kernel.key)


def written_params(func) -> list[int]:
    """Indices of the array parameters the function stores into (cached on the Function)."""
    cached = getattr(func, "_written", None)
    if cached is None:
        targets = {ins.args[0] for ins in func.body.walk() if ins.op in (Op.STORE, Op.ATOMIC)}
        cached = [k for k, p in enumerate(func.params) if p.value in targets]
        func._written = cached
    return cached


