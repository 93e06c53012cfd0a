"""Graph capture: ``kl.ScopedCapture``, ``kl.capture_begin`` / ``capture_end`` and
``kl.capture_launch``, as in Warp.

While a capture is open, kernel launches and the array operations that write memory
(``zero_``, ``fill_``, ``assign``, ``kl.copy``) are recorded into a ``kl.Graph`` instead of
running; ``capture_launch(graph)`` runs the recorded operations again, in order, with the
arrays and values they were recorded with. Warp does the same on the CPU (on CUDA its
graphs are CUDA graphs; kernlab records on every device, so a graph replays the same way
wherever it was captured). Arrays created while capturing are allocated and filled at
once: kernlab has no deferred allocation. Reading an array (``.numpy()``) inside a capture
reads its memory as it is then, since nothing recorded has run yet.
"""
from __future__ import annotations

from .device import get_device

_OPEN: list["Graph"] = []   # the capture in progress (at most one, as in Warp)
_REPLAYING = [0]            # > 0 while capture_launch runs a graph


class Graph:
    """Operations recorded by a capture; run them with ``kl.capture_launch(graph)``."""

    def __init__(self, device):
        self.device = get_device(device)
        self.operations: list = []   # (description, callable)

    def __repr__(self):
        return f"<kernlab Graph on {self.device}: {len(self.operations)} operation(s)>"


def is_capturing() -> bool:
    return bool(_OPEN) and not _REPLAYING[0]


def defer(description: str, run) -> bool:
    """Record ``run`` in the open capture and return True; return False (run it now) when
    no capture is open."""
    if not is_capturing():
        return False
    _OPEN[-1].operations.append((description, run))
    return True


def capture_begin(device=None, stream=None, force_module_load=None, external=False,
                  **_warp_only):
    """Start recording launches and memory writes into a graph (see ``capture_end``)."""
    if _OPEN:
        raise RuntimeError("Graph capture already in progress")
    if stream is not None and device is None:
        device = getattr(stream, "device", None)
    _OPEN.append(Graph(device))


def capture_end(device=None, stream=None):
    """Stop recording and return the ``kl.Graph``."""
    if not _OPEN:
        raise RuntimeError("Graph capture is not in progress")
    return _OPEN.pop()


def capture_launch(graph: Graph, stream=None) -> None:
    """Run every operation recorded in ``graph``, in order."""
    if not isinstance(graph, Graph):
        raise TypeError(f"capture_launch needs a kl.Graph from a capture, got {graph!r}")
    if defer("capture_launch", lambda: capture_launch(graph)):  # a graph inside a graph
        return
    from . import array as array_mod
    hook, array_mod._TAPE_HOOK[0] = array_mod._TAPE_HOOK[0], None  # a replay is not taped
    _REPLAYING[0] += 1
    try:
        for _, run in graph.operations:
            run()
    finally:
        _REPLAYING[0] -= 1
        array_mod._TAPE_HOOK[0] = hook


class ScopedCapture:
    """``with kl.ScopedCapture() as capture: ...`` records the block; the graph is
    ``capture.graph`` afterwards."""

    def __init__(self, device=None, stream=None, force_module_load=None, external=False,
                 **_warp_only):
        self.device, self.stream = device, stream
        self.force_module_load, self.external = force_module_load, external
        self.active = False
        self.graph = None

    def __enter__(self):
        capture_begin(self.device, self.stream, self.force_module_load, self.external)
        self.active = True
        return self

    def __exit__(self, *exc):
        if self.active:
            self.graph = capture_end(self.device, self.stream)
            self.active = False
        return False
