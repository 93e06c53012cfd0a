"""kl.autograd: Jacobians by the adjoint and by finite differences, gradcheck, gradcheck_tape.

Warp 1.19's signatures. ``function`` is a kernel (then ``dim``, ``inputs`` and ``outputs``
are its launch arguments) or a Python function of ``inputs`` that launches kernels and
returns its output array(s). Jacobians are returned as ``{(input_index, output_index): J}``
where the indices count positions in ``inputs`` and in the outputs, and J is a kernlab array
of shape (output components, input components) over the flattened arrays (a vec3 element
counts three components). Rows past ``max_outputs_per_var`` and columns past
``max_inputs_per_var`` are not computed and hold NaN.

Array inputs are restored to their values on entry after each evaluation (and on errors)
unless ``restore_inputs=False``; gradients of the arrays involved are left as they were.
Arrays may live on any device: values are read with ``a.numpy()`` (a copy on a GPU) and
written through the array's own flat writes.
"""
from __future__ import annotations

import inspect
from contextlib import contextmanager

import numpy as np

from .kernel import Kernel
from .runtime.array import _read_flat, _write_flat, array
from .runtime.launch import launch, written_params


def _components(a: array) -> int:
    """Scalars in the array: its size times those of one element."""
    return a.size * int(np.prod(a.dtype.shape, dtype=np.int64))


def _is_diff(a) -> bool:
    return isinstance(a, array) and a.dtype.is_float


@contextmanager
def _preserved(arrays, values=True):
    """Restore the arrays' values (with values) and gradients (contents, or their absence)
    on leaving."""
    arrays = list({id(a): a for a in arrays if isinstance(a, array)}.values())
    saved = [(a, a.numpy().copy() if values else None, a.grad,
              None if a.grad is None else a.grad.numpy().copy(), a._is_read) for a in arrays]
    try:
        yield
    finally:
        for a, data, grad, gdata, was_read in saved:
            a._is_read = was_read  # a caller's pending tape still counts its reads
            if data is not None:
                _write_flat(a, 0, data.reshape(-1))
            a.grad = grad
            if grad is not None:
                _write_flat(grad, 0, gdata.reshape(-1))


def _ensure_grads(arrays):
    for a in arrays:
        if a.grad is None:
            a.requires_grad = True


class _Problem:
    """What the Jacobians are of: evaluate() runs the forward pass, adjoint(seed) one
    reverse pass with output gradients seeded; names and indices for masks and reports."""

    def __init__(self, function, dim, inputs, outputs, device):
        self.function, self.dim, self.device = function, dim, device
        self.inputs = list(inputs or [])
        self.is_kernel = isinstance(function, Kernel)
        if self.is_kernel:
            if dim is None:
                raise ValueError("a kernel's Jacobian needs dim")
            self.outputs = list(outputs or [])
            names = list(inspect.signature(function.pyfunc).parameters)
            self.in_names = names[:len(self.inputs)]
            self.out_names = names[len(self.inputs):]
            self.name = function.key
        else:
            if not callable(function):
                raise TypeError(f"jacobian needs a kernel or a Python function, not "
                                f"{function!r}")
            try:
                params = list(inspect.signature(function).parameters)
            except (TypeError, ValueError):
                params = []
            self.in_names = [params[k] if k < len(params) else f"input_{k}"
                             for k in range(len(self.inputs))]
            self.name = getattr(function, "__name__", "function")
            self.outputs = None  # known after the first evaluation
            self.out_names = []

    def evaluate(self, tape=None):
        if self.is_kernel:
            launch(self.function, self.dim, inputs=self.inputs, outputs=self.outputs,
                   device=self.device, record_tape=tape is not None)
            return self.outputs
        result = self.function(*self.inputs)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        if self.outputs is None:
            self.outputs = outs
            self.out_names = [f"output_{k}" for k in range(len(outs))]
        return outs

    def pairs(self, mask):
        """(input index, output index) pairs to compute."""
        ins = [i for i, a in enumerate(self.inputs) if _is_diff(a)]
        outs = [o for o, a in enumerate(self.outputs) if _is_diff(a)]
        if mask is None:
            return [(i, o) for i in ins for o in outs]
        pairs = []
        for spec_in, spec_out in mask:
            i = _resolve(spec_in, self.in_names, "input")
            o = _resolve(spec_out, self.out_names, "output")
            if i in ins and o in outs:
                pairs.append((i, o))
        return pairs


def _resolve(spec, names, what):
    if isinstance(spec, (int, np.integer)):
        if not 0 <= spec < len(names):
            raise ValueError(f"input_output_mask: no {what} at index {spec}")
        return int(spec)
    if spec in names:
        return names.index(spec)
    raise ValueError(f"input_output_mask: no {what} named {spec!r} (the {what}s are "
                     f"{', '.join(names) or 'none'})")


def _check_backward(kernels):
    for k in kernels:
        if not k.enable_backward:
            raise ValueError(f"Kernel must have backward pass enabled to compute Jacobians "
                             f"(kernel '{k.key}' has enable_backward=False)")


def _limit(n, limit):
    return n if limit is None or limit < 0 else min(n, limit)


def jacobian(function, dim=None, inputs=None, outputs=None, input_output_mask=None,
             device=None, max_blocks=0, block_dim=256, max_outputs_per_var=-1,
             plot_jacobians=False, metadata=None, kernel=None, restore_inputs=True,
             max_inputs_per_var=-1) -> dict:
    """The Jacobians of the outputs with respect to the inputs, by reverse mode: one
    backward pass per output component."""
    from .runtime.tape import Tape
    prob = _Problem(function, dim, inputs, outputs, device)
    in_arrays = [a for a in prob.inputs if isinstance(a, array)]
    with _preserved(in_arrays, values=restore_inputs):
        if prob.is_kernel:
            _check_backward([function])
        with _preserved(prob.outputs or [], values=False):
            tape = Tape()
            _ensure_grads([a for a in in_arrays if _is_diff(a)])
            if prob.is_kernel:
                _ensure_grads([a for a in prob.outputs if _is_diff(a)])
            with tape:
                outs = prob.evaluate(tape)
            _check_backward({cmd.kernel.key: cmd.kernel for cmd in tape.launches
                             if hasattr(cmd, "kernel")}.values())
            _ensure_grads([a for a in outs if _is_diff(a)])
            pairs = prob.pairs(input_output_mask)
            result = {p: np.full((_components(prob.outputs[p[1]]),
                                  _components(prob.inputs[p[0]])), np.nan) for p in pairs}
            everything = [a for a in in_arrays + outs if isinstance(a, array)]
            for o in sorted({o for _, o in pairs}):
                out = outs[o]
                rows = _limit(_components(out), max_outputs_per_var)
                for j in range(rows):
                    for a in everything:
                        if a.grad is not None:
                            a.grad.zero_()
                    tape.zero()
                    _write_flat(out.grad, j, [1.0])
                    tape.backward()
                    for i, oo in pairs:
                        if oo == o:
                            g = prob.inputs[i].grad.numpy().astype(np.float64).reshape(-1)
                            cols = _limit(g.size, max_inputs_per_var)
                            result[(i, o)][j, :cols] = g[:cols]
    out = _as_arrays(result, prob)
    if plot_jacobians:
        jacobian_plot(out, function, _names=_names_of(prob))
    return out


def jacobian_fd(function, dim=None, inputs=None, outputs=None, input_output_mask=None,
                device=None, max_blocks=0, block_dim=256, max_inputs_per_var=-1,
                eps: float = 1e-4, plot_jacobians=False, metadata=None, kernel=None,
                restore_inputs=True, max_outputs_per_var=-1) -> dict:
    """The Jacobians by central finite differences (forward passes only)."""
    prob = _Problem(function, dim, inputs, outputs, device)
    in_arrays = [a for a in prob.inputs if isinstance(a, array)]
    with _preserved(in_arrays, values=restore_inputs):
        start = [a.numpy().copy() for a in in_arrays]

        def run():
            if restore_inputs:
                for a, data in zip(in_arrays, start):
                    _write_flat(a, 0, data.reshape(-1))
            return prob.evaluate()

        with _preserved(prob.outputs or [], values=True):
            outs = run()
            pairs = prob.pairs(input_output_mask)
            saved_outs = [a.numpy().copy() if isinstance(a, array) else None for a in outs]
            result = {p: np.full((_components(prob.outputs[p[1]]),
                                  _components(prob.inputs[p[0]])), np.nan) for p in pairs}

            def probe(i, k, delta):
                if prob.is_kernel:  # start each forward pass from the outputs' values
                    for a, data in zip(outs, saved_outs):
                        if data is not None:
                            _write_flat(a, 0, data.reshape(-1))
                a = prob.inputs[i]
                if restore_inputs:
                    for b, data in zip(in_arrays, start):
                        _write_flat(b, 0, data.reshape(-1))
                    orig = float(start[in_arrays.index(a)].reshape(-1)[k])
                else:  # Warp's restore_inputs=False: probe wherever the inputs drifted to
                    orig = float(_read_flat(a, k, 1)[0])
                _write_flat(a, k, [orig + delta])
                got = prob.function(*prob.inputs) if not prob.is_kernel else None
                if prob.is_kernel:
                    launch(prob.function, prob.dim, inputs=prob.inputs, outputs=prob.outputs,
                           device=prob.device, record_tape=False)
                    got = prob.outputs
                got = list(got) if isinstance(got, (tuple, list)) else [got]
                if not restore_inputs:
                    _write_flat(a, k, [float(_read_flat(a, k, 1)[0]) - delta])
                return [g.numpy().astype(np.float64).reshape(-1) if isinstance(g, array)
                        else None for g in got]

            for i in sorted({i for i, _ in pairs}):
                cols = _limit(_components(prob.inputs[i]), max_inputs_per_var)
                for k in range(cols):
                    plus, minus = probe(i, k, eps), probe(i, k, -eps)
                    for ii, o in pairs:
                        if ii == i:
                            rows = _limit(plus[o].size, max_outputs_per_var)
                            result[(i, o)][:rows, k] = \
                                ((plus[o] - minus[o]) / (2 * eps))[:rows]
    out = _as_arrays(result, prob)
    if plot_jacobians:
        jacobian_plot(out, function, _names=_names_of(prob))
    return out


def _names_of(prob):
    return prob.in_names, prob.out_names, prob.name


def _as_arrays(result, prob) -> dict:
    """Warp's layout: (output scalars, input elements) of the input's dtype, so a Jacobian
    with respect to n vec3 values has shape (m, n) of vec3 (its numpy() is (m, n, 3))."""
    out = {}
    for (i, o), J in result.items():
        dtype = prob.inputs[i].dtype
        data = J.astype(dtype.scalar.np).reshape(J.shape[0], -1, *dtype.shape)
        out[(i, o)] = array(data, dtype=dtype, device="cpu")
    return out


def gradcheck(function, dim=None, inputs=None, outputs=None, *, eps: float = 1e-4,
              atol: float = 1e-3, rtol: float = 1e-2, raise_exception: bool = False,
              input_output_mask=None, device=None, max_blocks=0, block_dim=256,
              max_inputs_per_var=-1, max_outputs_per_var=-1, plot_relative_error=False,
              plot_absolute_error=False, show_summary: bool = True,
              restore_inputs: bool = True, print_report: bool | None = None) -> bool:
    """Compare the adjoint's Jacobian with central finite differences; report mismatches
    (NaN in either counts as a mismatch). Returns whether they agree; with raise_exception,
    a disagreement is a ValueError. (Warp raises by default; kernlab returns False unless
    asked: docs/tape.rst.)"""
    if print_report is not None:
        show_summary = print_report
    fd = jacobian_fd(function, dim, inputs, outputs, input_output_mask, device,
                     max_inputs_per_var=max_inputs_per_var,
                     max_outputs_per_var=max_outputs_per_var, eps=eps,
                     restore_inputs=restore_inputs)
    ad = jacobian(function, dim, inputs, outputs, input_output_mask, device,
                  max_inputs_per_var=max_inputs_per_var,
                  max_outputs_per_var=max_outputs_per_var, restore_inputs=restore_inputs)
    name = getattr(function, "key", getattr(function, "__name__", "function"))
    if plot_relative_error or plot_absolute_error:
        prob = _Problem(function, dim, inputs, outputs, device)
        if prob.outputs is None:
            prob.out_names = [f"output_{k}" for k in range(max(o for _, o in fd) + 1)] \
                if fd else []
        names = (prob.in_names, prob.out_names, name)
        absolute = {k: np.abs(ad[k].numpy().astype(np.float64) - fd[k].numpy()) for k in fd}
        if plot_relative_error:
            rel = {k: absolute[k] / np.maximum(np.abs(fd[k].numpy()), 1e-12) for k in fd}
            jacobian_plot(rel, function, _names=names,
                          title=f"{name} kernel Jacobian relative error")
        if plot_absolute_error:
            jacobian_plot(absolute, function, _names=names,
                          title=f"{name} kernel Jacobian absolute error")
    return _compare(name, ad, fd, atol, rtol, raise_exception, show_summary)


def _compare(name, ad, fd, atol, rtol, raise_exception, show_summary) -> bool:
    rows = []
    for key in sorted(fd):
        a, f = ad[key].numpy().astype(np.float64), fd[key].numpy().astype(np.float64)
        rows_a = ~np.all(np.isnan(a), axis=1)
        cols_f = ~np.all(np.isnan(f), axis=0)
        region = np.outer(rows_a, cols_f)  # computed by both
        bad = region & ~np.isclose(a, f, atol=atol, rtol=rtol)
        for r, c in zip(*np.nonzero(bad)):
            rows.append((key, r, c, a[r, c], f[r, c]))
    if show_summary:
        if not rows:
            print(f"gradcheck '{name}': {len(fd)} Jacobian block(s) agree "
                  f"(atol={atol}, rtol={rtol})")
        else:
            print(f"gradcheck '{name}': {len(rows)} entr{'y' if len(rows) == 1 else 'ies'} "
                  "disagree")
            print(f"  {'input':>5} {'output':>6} {'row':>5} {'col':>5} {'adjoint':>14} "
                  f"{'finite diff':>14}")
            for (i, o), r, c, a, f in rows[:20]:
                print(f"  {i:>5} {o:>6} {r:>5} {c:>5} {a:>14.6g} {f:>14.6g}")
            if len(rows) > 20:
                print(f"  ... and {len(rows) - 20} more")
    if rows and raise_exception:
        raise ValueError(f"gradcheck '{name}': {len(rows)} Jacobian entries of the adjoint "
                         "disagree with finite differences (or are NaN)")
    return not rows


def gradcheck_tape(tape, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=False,
                   input_output_masks=None, blacklist_kernels=None, whitelist_kernels=None,
                   max_inputs_per_var=-1, max_outputs_per_var=-1,
                   plot_relative_error=False, plot_absolute_error=False,
                   show_summary: bool = True, reverse_launches: bool = False,
                   skip_to_launch_index: int = 0) -> bool:
    """gradcheck every kernel launch recorded on the tape (its written arrays as outputs,
    the others as inputs). Kernels with enable_backward=False are skipped, as are those
    named in blacklist_kernels or, when whitelist_kernels is given, not named there."""
    masks = input_output_masks or {}
    launches = [c for c in tape.launches if hasattr(c, "kernel") and hasattr(c, "params")]
    if reverse_launches:
        launches = launches[::-1]
    ok = True
    for cmd in launches[skip_to_launch_index:]:
        k = cmd.kernel
        if not k.enable_backward or k.key in (blacklist_kernels or ()) or \
                (whitelist_kernels and k.key not in whitelist_kernels):
            continue
        n = len(k.params)
        written = set(written_params(k.ir))
        params = list(cmd.params[:n])
        ins = [k_ for k_ in range(n) if k_ not in written]
        outs = [k_ for k_ in range(n) if k_ in written]
        _Reordered = _reordered_kernel(k, ins + outs)
        ok &= gradcheck(_Reordered, cmd.dim, [params[j] for j in ins],
                        [params[j] for j in outs], eps=eps, atol=atol, rtol=rtol,
                        raise_exception=raise_exception, device=cmd.device,
                        input_output_mask=masks.get(k.key),
                        max_inputs_per_var=max_inputs_per_var,
                        max_outputs_per_var=max_outputs_per_var, show_summary=show_summary)
    return bool(ok)


def _reordered_kernel(k, order):
    """The kernel itself when its written parameters already come last."""
    if order == sorted(order):
        return k
    raise NotImplementedError(f"gradcheck_tape: kernel '{k.key}' writes a parameter that "
                              "comes before one it only reads; check it with gradcheck() "
                              "and explicit inputs/outputs")


def jacobian_plot(jacobians, kernel, inputs=None, outputs=None, show_plot=True,
                  show_colorbar=True, scale_colors_per_submatrix=False, title=None,
                  colormap="coolwarm", log_scale=False, _names=None):
    """Plot Jacobians with Matplotlib: one panel per (input, output) pair in a grid of
    outputs (rows) by inputs (columns), sized by the components; pairs not computed are
    blank. Returns the figure (None when there is nothing to plot)."""
    if _names is None:
        if inputs is None:
            raise ValueError("jacobian_plot: inputs must be provided")
        try:
            params = list(inspect.signature(getattr(kernel, "pyfunc", kernel)).parameters)
        except (TypeError, ValueError):
            params = []
        n_in = len(inputs)
        name = getattr(kernel, "key", getattr(kernel, "__name__", "unknown"))
        if isinstance(kernel, Kernel):
            in_names = params[:n_in]
            out_names = params[n_in:]
        else:
            in_names = params[:n_in] if callable(kernel) else []
            out_names = []
        in_names += [f"input_{k}" for k in range(len(in_names), n_in)]
        _names = (in_names, out_names, name)
    in_names, out_names, name = _names
    if not jacobians:
        return None
    import matplotlib.pyplot as plt
    mats = {k: (J.numpy() if isinstance(J, array) else np.asarray(J)).astype(np.float64)
            for k, J in jacobians.items()}
    cols = sorted({i for i, _ in mats})
    rows = sorted({o for _, o in mats})
    width = [next(m.shape[1] for (i, _), m in mats.items() if i == c) for c in cols]
    height = [next(m.shape[0] for (_, o), m in mats.items() if o == r) for r in rows]
    fig = plt.figure()
    grid = fig.add_gridspec(len(rows), len(cols), width_ratios=width, height_ratios=height)
    finite = [m[np.isfinite(m)] for m in mats.values()]
    finite = np.concatenate(finite) if finite else np.zeros(1)
    limit = float(np.max(np.abs(finite))) if finite.size else 1.0
    image, shown = None, []
    for r, o in enumerate(rows):
        for c, i in enumerate(cols):
            ax = fig.add_subplot(grid[r, c])
            m = mats.get((i, o))
            if m is None:
                ax.axis("off")
                continue
            lim = float(np.nanmax(np.abs(m))) if scale_colors_per_submatrix and m.size \
                else limit
            lim = lim if np.isfinite(lim) and lim > 0 else 1.0
            image = ax.imshow(m, cmap=colormap, vmin=-lim, vmax=lim, aspect="auto",
                              interpolation="nearest")
            ax.set_xlabel(in_names[i] if i < len(in_names) else f"input_{i}")
            ax.set_ylabel(out_names[o] if o < len(out_names) else f"output_{o}")
            shown.append(ax)
    fig.suptitle(title or f"{name} kernel Jacobian")
    if show_colorbar and image is not None:
        fig.colorbar(image, ax=shown)
    if show_plot:
        plt.show()
    return fig
