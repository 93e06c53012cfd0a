"""Backends run the typed IR: ``interp`` (NumPy, the reference), ``llvm`` (CPU machine code
through llvmlite) and ``cuda`` (CUDA C compiled by NVRTC)."""
from __future__ import annotations

import os
import threading

_preload: threading.Thread | None = None


def preload_cpu_backend() -> None:
    """Start loading the LLVM backend's compile side on a helper thread: llvmlite's library
    (180 MB) and the host target take 20 to 100 ms, which the first compile should not wait
    for. Called when a kernel's front end has to run (its IR is not in the disk cache,
    runtime/ir_cache.py), so the load overlaps parsing and type checking; a process whose
    kernels all come from the cache never loads llvmlite (backends/llvm/variants.py).
    Anything that goes wrong here is left for the compile to report. Set KERNLAB_PRELOAD=0
    to load on first use instead."""
    global _preload
    from .. import config
    if _preload is not None or config.cpu_backend != "llvm" \
            or os.environ.get("KERNLAB_PRELOAD", "1") == "0":
        return
    _preload = threading.Thread(target=_load_llvm, name="kernlab-preload")
    _preload.start()  # not a daemon: the interpreter waits for it instead of cutting a load


def _load_llvm() -> None:
    try:
        from .llvm import jit  # (its import maps llvmlite's library: _open_llvmlite_library)
        jit._host()
    except Exception:  # noqa: BLE001 — the first compile raises it with context
        pass


_llvmlite_handle = None  # llvmlite's library, as _open_llvmlite_library opened it


def _open_llvmlite_library() -> None:
    """Map llvmlite's library (180 MB: about 20 ms of mapping and relocating) through libc's
    dlopen called as a ctypes foreign function, which lets go of the GIL while it runs,
    ahead of llvmlite's own ``ctypes.CDLL``, which CPython runs holding the GIL: the main
    thread's front end goes on meanwhile while the preload thread (preload_cpu_backend)
    imports llvm/jit.py, which calls this first. llvmlite's load later finds the library
    loaded (the same flags, RTLD_NOW | RTLD_LOCAL) and only counts a reference. Linux with
    llvmlite found on sys.path; anything else leaves the load to llvmlite."""
    global _llvmlite_handle
    import sys
    if _llvmlite_handle is not None or not sys.platform.startswith("linux"):
        return
    for entry in sys.path:  # (where an import of llvmlite would find it)
        folder = os.path.join(entry or ".", "llvmlite")
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            path = os.path.join(folder, "binding", "libllvmlite.so")
            break
    else:
        return
    if not os.path.isfile(path):
        return
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        dlopen = libc.dlopen
    except (OSError, AttributeError):
        return
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_int)
    _llvmlite_handle = dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL) or 0


def _finish_preload() -> None:
    """Before a fork: a child must not inherit an import half done by a thread it lacks."""
    if _preload is not None and _preload.is_alive():
        _preload.join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_finish_preload)
