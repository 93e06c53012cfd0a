"""Objects a kernel reaches through a ``uint64`` id (``kl.HashGrid``, ``kl.Mesh``).

A kernel parameter that a grid or mesh query uses gets hidden array parameters for the
object's data (frontend/hashgrid.py makes them); the kernel's IR lists them in
``handle_hidden``: hidden parameter name -> (index of the id parameter, its name, which
of the object's arrays, the kind of object). A launch fills them from the object whose id
it is given, here, each time it runs (a grid rebuilt or a mesh refitted since a launch was
recorded is seen as it is then).
"""
from __future__ import annotations

# kind -> (hidden parameter suffixes and element types, the function giving an object's
# arrays from (kernel name, parameter name, id)); filled by hashgrid.py and mesh.py
KINDS: dict = {}


def register(kind: str, what: str, arrays: tuple, resolve) -> None:
    KINDS[kind] = (what, arrays, resolve)


def handle_arrays(kind: str, kernel_key: str, param: str, handle_id) -> tuple:
    return KINDS[kind][2](kernel_key, param, handle_id)


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
