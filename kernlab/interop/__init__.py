"""Sharing memory (and gradients) with other array libraries.

* DLPack both ways: ``kl.from_dlpack(x)`` views any producer's CPU tensor as a kernlab array,
  and ``np.from_dlpack(a)`` / ``torch.from_dlpack(a)`` view a kernlab array. Arrays also
  speak ``__array_interface__`` (CPU) and ``__cuda_array_interface__`` (CUDA arrays).
* PyTorch, as in Warp: ``kl.from_torch`` / ``kl.to_torch`` share memory, and gradients too;
  ``kl.to_torch_function`` turns a kernel into a differentiable PyTorch operation.

Nothing here imports torch until a torch function is called: it is an optional extra.
"""
from .dlpack import from_dlpack
from .torch import (KernelFunction, device_from_torch, device_to_torch, from_torch, to_torch,
                    to_torch_function)

__all__ = ["KernelFunction", "device_from_torch", "device_to_torch", "from_dlpack",
           "from_torch", "to_torch", "to_torch_function"]
