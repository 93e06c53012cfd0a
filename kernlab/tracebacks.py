"""Short tracebacks for kernlab's errors in scripts and at the python prompt.

A kernlab error already names the kernel, the user's line and what is wrong; the frames of
kernlab's compiler and runtime that Python prints above it only push that message off the
screen. ``import kernlab`` therefore wraps ``sys.excepthook`` so that a kernlab error which
ends a script (or a line typed at the ``>>>`` prompt) is printed with the traceback cut at
the user's last frame: the last line shown is the user's call (``kl.launch(...)``), then the
error. One line after it says how many frames were hidden and how to see them:
``KERNLAB_TRACEBACK=full`` in the environment, or ``kl.config.traceback = "full"``.

Only the hook is changed, and only when it is Python's own: IPython and Jupyter handle
exceptions themselves (kernlab's notebook display is notebook/cellerrors.py), pytest
catches them before any hook, and a hook another library installed is left alone. Other
exceptions, and kernlab errors raised from kernlab's own code alone, print as before.
"""
from __future__ import annotations

import os
import sys
import types

from . import config
from .errors import ArrayError, KernelError

_KERNLAB_DIR = os.path.dirname(os.path.abspath(__file__))
_ERRORS = (KernelError, ArrayError)
_previous = None


def is_internal(filename: str) -> bool:
    """Whether a frame's file belongs to the kernlab package."""
    return os.path.abspath(filename).startswith(_KERNLAB_DIR + os.sep)


def trim(tb: types.TracebackType | None) -> tuple[types.TracebackType | None, int]:
    """The traceback without its trailing run of kernlab frames, and how many were cut.
    A traceback made of kernlab frames only (``python -m kernlab.demo``) stays whole."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    keep = len(entries)
    while keep > 0 and is_internal(entries[keep - 1].tb_frame.f_code.co_filename):
        keep -= 1
    if keep == 0 or keep == len(entries):
        return (entries[0] if entries else None), 0
    short = None
    for entry in reversed(entries[:keep]):
        short = types.TracebackType(short, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return short, len(entries) - keep


def excepthook(exc_type, exc, tb) -> None:
    """sys.excepthook: a kernlab error's traceback without kernlab's frames (unless
    kl.config.traceback is "full"); everything else unchanged."""
    previous = _previous or sys.__excepthook__
    if not isinstance(exc, _ERRORS) or str(config.traceback).lower() == "full":
        previous(exc_type, exc, tb)
        return
    short, hidden = trim(tb)
    if not hidden:
        previous(exc_type, exc, tb)
        return
    original = exc.__traceback__
    exc.__traceback__ = short  # Python's printer reads the exception's own traceback
    try:
        previous(exc_type, exc, short)
    finally:
        exc.__traceback__ = original
    frames = "frame" if hidden == 1 else "frames"
    print(f"({hidden} kernlab {frames} hidden; KERNLAB_TRACEBACK=full shows them)",
          file=sys.stderr)


def install() -> bool:
    """Install :func:`excepthook` when ``sys.excepthook`` is still Python's default and no
    test runner is loaded; True when it was installed (or already is)."""
    global _previous
    if sys.excepthook is excepthook:
        return True
    if sys.excepthook is not sys.__excepthook__ or "pytest" in sys.modules:
        return False
    _previous = sys.excepthook
    sys.excepthook = excepthook
    return True
