"""kl.autograd: Jacobians by the adjoint kernel and by finite differences, and gradcheck.

Jacobians are returned as ``{(input_index, output_index): J}`` where the indices count
positions in ``inputs`` and ``outputs``, and J has shape (output components, input
components) over the flattened arrays (a vec3 element counts three components).

Arrays may live on any device: values are read with ``a.numpy()`` (a copy on a GPU) and
written through the array's own flat writes, never into what ``numpy()`` returned.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .runtime.array import _read_flat, _write_flat, array
from .runtime.launch import launch


def _float_arrays(xs):
    return [(k, a) for k, a in enumerate(xs) if isinstance(a, array) and a.dtype.is_float]


@contextmanager
def _with_grads(arrays):
    """Give arrays gradients for the duration (restoring requires_grad afterwards)."""
    had = [(a, a.requires_grad) for a in arrays]
    for a in arrays:
        a.requires_grad = True
    try:
        yield
    finally:
        for a, flag in had:
            a.requires_grad = flag


def jacobian(kernel, dim, inputs, outputs, device=None) -> dict:
    ins, outs = _float_arrays(inputs), _float_arrays(outputs)
    result = {}
    with _with_grads([a for _, a in ins + outs]):
        launch(kernel, dim, inputs=inputs, outputs=outputs, device=device, record_tape=False)
        for o, out in outs:
            n_out = _components(out)
            rows = {i: np.zeros((n_out, _components(a))) for i, a in ins}
            for j in range(n_out):
                for _, a in ins + outs:
                    a.grad.zero_()
                _write_flat(out.grad, j, [1.0])
                launch(kernel, dim, inputs=inputs, outputs=outputs, device=device,
                       adjoint=True, adj_inputs=[a.grad if isinstance(a, array) else None
                                                 for a in inputs],
                       adj_outputs=[a.grad if isinstance(a, array) else None
                                    for a in outputs])
                for i, a in ins:
                    rows[i][j] = a.grad.numpy().reshape(-1)
            for i, _ in ins:
                result[(i, o)] = rows[i]
    return result


def jacobian_fd(kernel, dim, inputs, outputs, eps: float = 1e-4, device=None) -> dict:
    ins, outs = _float_arrays(inputs), _float_arrays(outputs)
    saved = [(a, a.numpy().copy()) for _, a in outs]

    def run():
        for _, a in outs:
            a.zero_()
        launch(kernel, dim, inputs=inputs, outputs=outputs, device=device, record_tape=False)
        return [a.numpy().astype(np.float64).reshape(-1) for _, a in outs]

    result = {(i, o): np.zeros((_components(a_out), _components(a_in)))
              for i, a_in in ins for o, a_out in outs}
    for i, a in ins:
        for k in range(_components(a)):
            orig = _read_flat(a, k, 1).copy()
            _write_flat(a, k, orig + eps)
            plus = run()
            _write_flat(a, k, orig - eps)
            minus = run()
            _write_flat(a, k, orig)
            for (o, _), p, m in zip(outs, plus, minus):
                result[(i, o)][:, k] = (p - m) / (2 * eps)
    for a, data in saved:
        _write_flat(a, 0, data)
    return result


def _components(a: array) -> int:
    """Scalars in the array: its size times those of one element."""
    return a.size * int(np.prod(a.dtype.shape, dtype=np.int64))


def gradcheck(kernel, dim, inputs, outputs, *, eps: float = 1e-4, atol: float = 1e-3,
              rtol: float = 1e-2, device=None, print_report: bool = True) -> bool:
    """Compare the adjoint's Jacobian with central finite differences; report mismatches."""
    fd = jacobian_fd(kernel, dim, inputs, outputs, eps=eps, device=device)
    ad = jacobian(kernel, dim, inputs, outputs, device=device)
    rows = []
    for key in sorted(fd):
        bad = ~np.isclose(ad[key], fd[key], atol=atol, rtol=rtol)
        for r, c in zip(*np.nonzero(bad)):
            rows.append((key, r, c, ad[key][r, c], fd[key][r, c]))
    if print_report:
        name = getattr(kernel, "key", kernel)
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
    return not rows
