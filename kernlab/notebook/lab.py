"""``kl.lab``: inspector widgets for notebooks (ipywidgets 8; pygments; matplotlib).

    kl.lab.inspect(kernel)                      source next to IR / LLVM / CUDA / PTX
    kl.lab.grads(x, y, loss=loss)               values and gradients, live after backward
    kl.lab.tape(tape, loss=loss)                the recording as a graph; step backward
    kl.lab.step(kernel, dim, inputs, tid=3)     one thread, line by line, primal + adjoint
    kl.lab.step(..., mode="tangent")            ... through the tangent (forward-mode) sweep

Each returns a widget with a short deterministic repr and a static HTML fallback, so a
saved notebook, nbconvert and nbval show something useful without a widget manager.
"""
from __future__ import annotations

__all__ = ["inspect", "grads", "tape", "step"]


def _require_widgets():
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        raise ImportError("kl.lab needs ipywidgets 8: pip install 'kernlab[lab]'") from None


def inspect(kernel, targets=("ir", "llvm", "cuda", "ptx"),
            listings=("forward", "adjoint", "tangent")):
    """A kernel's source next to its forward, adjoint and tangent (forward-mode) listings,
    side by side in one tab per target; choose a user line to
    highlight the generated lines that came from it. A listing that cannot be produced
    (no CUDA backend, say) shows why in its tab. ``listings`` keeps only some of the three
    (``("forward", "adjoint")`` for reverse mode alone)."""
    _require_widgets()
    from .inspector import InspectView
    return InspectView(_kernel(kernel), targets, tuple(listings))


def grads(*arrays, **named):
    """Values and gradients of arrays (a table when small, a plot when large), refreshed in
    place after every ``tape.backward()``; ``refresh()`` re-reads them on demand. Arrays
    passed by keyword are shown under that name."""
    _require_widgets()
    from .grads import GradsView, named_arrays
    if not arrays and not named:
        raise TypeError("kl.lab.grads() needs at least one array")
    return GradsView(named_arrays(arrays, named))


def tape(tape, loss=None, grads=None, **names):
    """The records of a Tape as a dataflow graph with gradient norms; selecting a record
    shows its adjoint listing; the step buttons run the adjoints one record at a time on
    copies of the arrays (seeded with ``loss``/``grads`` as ``tape.backward`` would be).
    Keyword arrays name the arrays in the graph."""
    _require_widgets()
    from .tapeview import TapeView
    return TapeView(tape, loss=loss, grads=grads, names=names)


def step(kernel, dim, inputs, tid=0, seeds=None, max_steps=None, mode="adjoint"):
    """Thread ``tid`` of ``kernel`` launched over ``dim`` with ``inputs`` (every parameter,
    in order), run line by line on the reference interpreter through the adjoint's forward
    replay and reverse sweep. ``seeds`` maps parameter names to their adjoints' starting
    values (default: ones for arrays the kernel writes, zeros elsewhere). Runs on copies.

    ``mode="tangent"`` steps the tangent kernel instead (forward mode, ``kl.jvp``'s): one
    sweep in program order, each line showing the values and their tangents; ``seeds``
    then maps parameter names to their tangents (default: ones for float arrays the kernel
    reads, zeros elsewhere, numbers included)."""
    _require_widgets()
    from .stepper import StepView
    return StepView(_kernel(kernel), dim, inputs, tid=tid, seeds=seeds, max_steps=max_steps,
                    mode=mode)


def _kernel(k):
    from ..kernel import Kernel
    if not isinstance(k, Kernel):
        raise TypeError(f"expected a kernlab kernel, got {k!r}")
    return k
