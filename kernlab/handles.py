"""Objects a kernel reaches through a ``uint64`` id (``kl.HashGrid``, ``kl.Mesh``,
``kl.Volume``).

A kernel parameter that a grid or mesh query uses gets hidden array parameters for the
object's data (frontend/hashgrid.py makes them); the kernel's IR lists them in
``handle_hidden``: hidden parameter name -> (index of the id parameter, its name, which
of the object's arrays, the kind of object). A launch fills them from the object whose id
it is given, here, each time it runs (a grid rebuilt or a mesh refitted since a launch was
recorded is seen as it is then). ``live_object`` finds the object of an id a launch is
given (a clear LaunchError for a stale or wrong id), and ``kernel_only`` makes the Python
stand-ins of the objects' kernel functions.
"""
from __future__ import annotations

# kind -> (hidden parameter suffixes and element types, the function giving an object's
# arrays from (kernel name, parameter name, id)); filled by hashgrid.py and mesh.py
KINDS: dict = {}


def register(kind: str, what: str, arrays: tuple, resolve) -> None:
    KINDS[kind] = (what, arrays, resolve)


def handle_arrays(kind: str, kernel_key: str, param: str, handle_id) -> tuple:
    return KINDS[kind][2](kernel_key, param, handle_id)


def live_object(objects, kernel_key: str, param: str, handle_id, what: str, cls: str,
                var: str):
    """The object of ``objects`` (id -> live object) whose id a launch passes for
    ``param``; a LaunchError naming the kernel, the parameter and ``kl.<cls>`` where
    ``handle_id`` is the id of none (``what``: the object in words, ``var``: what the
    message tells the user to pass the id of)."""
    import numpy as np
    from .errors import LaunchError
    obj = objects.get(int(handle_id)) if isinstance(handle_id, (int, np.integer)) else None
    if obj is None:
        raise LaunchError(f"kernel '{kernel_key}': argument '{param}' is used as a {what} but "
                          f"{handle_id!r} is not the id of a live kl.{cls} (pass {var}.id)")
    return obj


def kernel_only(name: str, module: str):
    """The Python stand-in, in ``module``, of the kernel function ``name``: the name a
    kernel calls, which outside a kernel raises a RuntimeError."""
    def f(*args, **kwargs):
        raise RuntimeError(f"{name} can only be called inside a kernel")
    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = module
    f.__doc__ = f"In kernels only; see the kernlab builtin reference for {name}."
    return f


def refresh_handle_args(kernel, args: list) -> None:
    """Put the current arrays of each object a launch's id parameters name into its hidden
    parameters (in place)."""
    hidden = kernel.ir.handle_hidden
    found: dict = {}
    for k, p in enumerate(kernel.ir.params):
        if p.name in hidden:
            index, pname, part, kind = hidden[p.name]
            if index not in found:
                found[index] = handle_arrays(kind, kernel.key, pname, args[index])
            args[k] = found[index][part]
