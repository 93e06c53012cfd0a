"""PyTorch interop: shared memory, shared gradients, and kernels as autograd Functions.

``from_torch`` and ``to_torch`` follow Warp's ``wp.from_torch`` / ``wp.to_torch``:

* memory is shared, never copied (both go through DLPack);
* gradients are shared too. ``from_torch(t)`` of a tensor that requires grad gives an array
  whose ``.grad`` is ``t.grad``'s memory (``t.grad`` is set to zeros first if it is None);
  ``to_torch(a)`` of an array with a gradient gives a leaf tensor that requires grad and
  whose ``.grad`` is ``a.grad``'s memory. Whatever writes one gradient (a kernlab tape, or
  torch's backward, which accumulates into an existing ``.grad`` in place) shows in the
  other. Replacing the gradient (``t.grad = None``, ``zero_grad(set_to_none=True)``) ends
  the sharing, as in Warp.

``to_torch_function(kernel, outputs=[...])`` wraps a kernel as a differentiable PyTorch
operation; see KernelFunction.

torch is imported on first use only: ``import kernlab`` works without it.
"""
from __future__ import annotations

import inspect

from ..errors import LaunchError
from ..kernel import Kernel
from ..runtime.array import array, zeros
from ..runtime.launch import launch
from .dlpack import from_dlpack


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("this needs PyTorch, an optional extra of kernlab: "
                          "pip install 'kernlab[torch]' (or pip install torch)") from None
    return torch


# --- Arrays <-> tensors --------------------------------------------------------------------

def from_torch(t, dtype=None, requires_grad=None, grad=None) -> array:
    """An array sharing ``t``'s memory; and, when it requires grad, its gradient's.

    dtype: None keeps the tensor's scalar type; a vector or matrix type takes the trailing
    axis (axes): an (n, 3) float32 tensor with dtype=kl.vec3 is an array of n vec3.
    requires_grad: None follows ``t.requires_grad``. grad: a tensor (or array) to use as the
    gradient instead of ``t.grad``.
    """
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"kl.from_torch takes a torch.Tensor, not {type(t).__name__}")
    if requires_grad is None:
        requires_grad = t.requires_grad
    a = from_dlpack(t.detach(), dtype=dtype)
    if requires_grad:
        if grad is None:
            if t.grad is None:
                t.grad = torch.zeros_like(t)
            grad = t.grad
        a.grad = grad if isinstance(grad, array) else from_dlpack(grad.detach(), a.dtype)
    return a


def to_torch(a: array, requires_grad=None):
    """A tensor sharing ``a``'s memory (n vec3 give an (n, 3) tensor).

    requires_grad: None follows ``a.requires_grad``. When it is true the tensor is a leaf
    that requires grad, and if ``a`` has a gradient, the tensor's ``.grad`` shares it.
    """
    torch = _torch()
    if not isinstance(a, array):
        raise TypeError(f"kl.to_torch takes a kernlab array, not {type(a).__name__}")
    if requires_grad is None:
        requires_grad = a.requires_grad
    t = _tensor_over(torch, a)
    if requires_grad:
        if not t.is_floating_point():
            raise TypeError(f"an array of {a.dtype} cannot give a tensor that requires grad "
                            "(PyTorch differentiates floating-point tensors only)")
        t.requires_grad_(True)
        if a.grad is not None:
            t.grad = _tensor_over(torch, a.grad)
    return t


def _tensor_over(torch, a: array):
    """A tensor over a's memory. CUDA arrays go through their __cuda_array_interface__,
    through which torch keeps the array (and so its device memory) alive."""
    if a.device.is_cuda:
        return torch.as_tensor(a, device=str(a.device))
    return torch.from_dlpack(a)


def device_to_torch(device=None) -> str:
    """The PyTorch device name of a kernlab device: "cpu" or "cuda:N" (as Warp's)."""
    from ..runtime.device import get_device
    return get_device(device).name


def device_from_torch(torch_device):
    """The kernlab device of a PyTorch device (a torch.device or its name); "cuda" is the
    current CUDA device, as in PyTorch."""
    from ..runtime.device import get_device
    torch = _torch()
    dev = torch.device(torch_device)
    if dev.type == "cpu":
        return get_device("cpu")
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        return get_device(f"cuda:{index}")
    raise ValueError(f"kernlab has no device for PyTorch's {dev.type!r} device")


# --- Kernels as autograd Functions ---------------------------------------------------------

def to_torch_function(kernel: Kernel, outputs, *, dim=None) -> "KernelFunction":
    """The kernel as a differentiable PyTorch operation; see KernelFunction."""
    return KernelFunction(kernel, outputs, dim=dim)


class KernelFunction:
    """A kernel called like a PyTorch function: tensors in, new tensors out, differentiable.

    ``outputs`` names the kernel's array parameters that the call allocates (zeroed), lets
    the kernel fill and returns as tensors: a list of names (each output has the launch
    shape) or a dict from name to shape. The other parameters, in the kernel's order, are
    the call's arguments (positional or by name): tensors for array parameters, plain
    values (numbers, tuples, NumPy arrays) for scalar, vector and matrix ones.

    ``dim`` is the launch grid: None takes the shape of the first array argument (without
    its element axes: n vec3 launch n threads). dim and each output shape may also be a
    function of the call's arguments.

    Gradients: backward launches the kernel's adjoint. They flow to floating-point tensor
    arguments; value parameters (and integer arrays) receive None, and a tensor that
    requires grad passed as a value is an error rather than a silently missing gradient.
    Inside the call nothing is recorded on an active kl.Tape: torch's graph holds it.

    Example — velocities divided by masses, plus gravity * dt (gravity and dt are values)::

        @kl.kernel
        def integrate(v: kl.array(dtype=kl.vec3d), m: kl.array(dtype=kl.float64),
                      gravity: kl.vec3d, dt: kl.float64, out: kl.array(dtype=kl.vec3d)):
            i = kl.tid()
            out[i] = v[i] / m[i] + gravity * dt

        step = kl.to_torch_function(integrate, outputs=["out"])
        v = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
        m = (torch.rand(8, dtype=torch.float64) + 1.0).requires_grad_()
        out = step(v, m, (0.0, -9.8, 0.0), 0.01)     # an (8, 3) tensor
        out.square().sum().backward()                # fills v.grad and m.grad
    """

    def __init__(self, kernel: Kernel, outputs, *, dim=None):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"to_torch_function needs a @kl.kernel, got {kernel!r}")
        shapes = dict(outputs) if isinstance(outputs, dict) else {n: None for n in outputs}
        params = {p.name: p for p in kernel.params}
        for name in shapes:
            if name not in params:
                raise ValueError(f"kernel '{kernel.key}' has no parameter '{name}' "
                                 f"(it has {', '.join(params)})")
            if not params[name].type.is_array:
                raise ValueError(f"output '{name}' of kernel '{kernel.key}' must be an "
                                 f"array parameter, not {params[name].type}")
        self.kernel, self.dim, self.output_shapes = kernel, dim, shapes
        self.inputs = [p for p in kernel.params if p.name not in shapes]
        self.outputs = [params[n] for n in shapes]
        self.signature = inspect.Signature(
            [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
             for p in self.inputs])

    def __call__(self, *args, **kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.kernel.key}{self.signature}: {err}") from None
        values = [bound.arguments[p.name] for p in self.inputs]
        for p, v in zip(self.inputs, values):
            self._check_argument(p, v)
        result = _autograd_function().apply(self, *values)
        return result[0] if len(result) == 1 else result

    def __repr__(self):
        outs = ", ".join(p.name for p in self.outputs)
        return f"<torch function of kernel {self.kernel.key}{self.signature} -> ({outs})>"

    def _check_argument(self, p, value):
        torch = _torch()
        if p.type.is_array and not isinstance(value, torch.Tensor):
            raise TypeError(f"{self.kernel.key}: argument '{p.name}' ({p.type}) must be a "
                            f"torch.Tensor, not {type(value).__name__}")
        if not p.type.is_array and isinstance(value, torch.Tensor) and value.requires_grad:
            raise TypeError(f"{self.kernel.key}: argument '{p.name}' ({p.type}) is a value "
                            "parameter and gets no gradient, but the tensor passed requires "
                            "grad; pass a plain value (or t.detach()), or make it an array")

    # --- used by the autograd Function ----------------------------------------------------

    def arguments(self, values) -> list:
        """The call's arguments as launch inputs: arrays over the tensors' memory."""
        torch = _torch()
        args = []
        for p, v in zip(self.inputs, values):
            if p.type.is_array:
                try:
                    args.append(from_torch(v, dtype=p.type.dtype, requires_grad=False))
                except (TypeError, ValueError) as err:
                    raise TypeError(f"{self.kernel.key}: argument '{p.name}' ({p.type}), a "
                                    f"{v.dtype} tensor of shape {tuple(v.shape)}: {err}") \
                        from None
            elif isinstance(v, torch.Tensor):
                args.append(v.detach().cpu().numpy())
            else:
                args.append(v)
        return args

    def launch_dim(self, values, args) -> tuple:
        dim = self.dim(*values) if callable(self.dim) else self.dim
        if dim is None:
            first = next((a for a in args if isinstance(a, array)), None)
            if first is None:
                raise LaunchError(f"kernel '{self.kernel.key}': give dim= (no array argument "
                                  "to take the launch shape from)")
            dim = first.shape
        return dim

    def allocate_outputs(self, values, dim, args) -> list:
        """Zeroed outputs, on the device of the array arguments (the default without)."""
        device = next((a.device for a in args if isinstance(a, array)), None)
        outs = []
        for p in self.outputs:
            shape = self.output_shapes[p.name]
            shape = shape(*values) if callable(shape) else shape
            outs.append(zeros(dim if shape is None else shape, dtype=p.type.dtype,
                              device=device))
        return outs


_FUNCTION = []  # the torch.autograd.Function subclass, made on first use


def _autograd_function():
    if not _FUNCTION:
        _FUNCTION.append(_make_autograd_function(_torch()))
    return _FUNCTION[0]


def _make_autograd_function(torch):
    from torch.autograd.function import once_differentiable

    class KernelAutogradFunction(torch.autograd.Function):
        """forward: launch the kernel; backward: launch its adjoint."""

        @staticmethod
        def forward(ctx, fn: KernelFunction, *values):
            args = fn.arguments(values)
            dim = fn.launch_dim(values, args)
            outs = fn.allocate_outputs(values, dim, args)
            launch(fn.kernel, dim, inputs=args, outputs=outs, record_tape=False)
            tensors = [to_torch(o, requires_grad=False) for o in outs]
            ctx.fn, ctx.dim = fn, dim
            ctx.tensor_at = [k for k, v in enumerate(values) if isinstance(v, torch.Tensor)]
            ctx.values = [None if k in ctx.tensor_at else v for k, v in enumerate(values)]
            ctx.save_for_backward(*(values[k] for k in ctx.tensor_at), *tensors)
            ctx.mark_non_differentiable(*(t for t in tensors if not t.is_floating_point()))
            return tuple(tensors)

        @staticmethod
        @once_differentiable
        def backward(ctx, *grad_outputs):
            fn, saved = ctx.fn, ctx.saved_tensors
            values = list(ctx.values)
            for k, t in zip(ctx.tensor_at, saved):  # saved: checked for in-place changes
                values[k] = t
            args = fn.arguments(values)
            outs = [from_torch(t, dtype=p.type.dtype, requires_grad=False)
                    for p, t in zip(fn.outputs, saved[len(ctx.tensor_at):])]
            adj_inputs = [zeros(a.shape, dtype=a.dtype, device=a.device)
                          if isinstance(a, array) and a.dtype.is_float
                          and ctx.needs_input_grad[1 + k] else None
                          for k, a in enumerate(args)]
            adj_outputs = [_grad_array(g, o) for g, o in zip(grad_outputs, outs)]
            launch(fn.kernel, ctx.dim, inputs=args, outputs=outs, adj_inputs=adj_inputs,
                   adj_outputs=adj_outputs, adjoint=True)
            grads = [to_torch(g, requires_grad=False) if g is not None else None
                     for g in adj_inputs]
            return (None, *grads)

    return KernelAutogradFunction


def _grad_array(g, out: array):
    """The incoming gradient of an output as a fresh array (a copy: the adjoint must not
    touch torch's tensor, which may be shared or broadcast); None where none flows."""
    if g is None or not out.dtype.is_float:
        return None
    torch = _torch()
    g = g.detach().clone(memory_format=torch.contiguous_format)
    return from_torch(g, dtype=out.dtype, requires_grad=False)
