"""Backends run the typed IR: ``interp`` (NumPy, the reference), ``llvm`` (CPU machine code
through llvmlite) and ``cuda`` (CUDA C compiled by NVRTC)."""
