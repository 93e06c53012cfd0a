"""kernlab's errors as a notebook shows them: the message (which already names the kernel,
the user's line and a caret) and the notebook lines that led there, without the frames of
kernlab, IPython or ipykernel in between.

``%load_ext kernlab`` installs :func:`show_kernel_error` as IPython's handler for
``KernelError`` (compile, launch, index and gradient errors all derive from it). Any other
exception keeps IPython's own traceback.
"""
from __future__ import annotations

import linecache
import os
import traceback

from ..errors import KernelError, KernelSyntaxError, SourceLoc, _pretty_file

_KERNLAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CellSyntaxError(KernelSyntaxError, SyntaxError):
    """Python cannot parse a ``%%kernel`` cell. A SyntaxError (what Python code expects),
    shown as Python shows one (``Cell In[n], line k``, the line, a caret, ``SyntaxError:
    msg``) but without the magic's frames above it."""

    @classmethod
    def from_syntax_error(cls, exc: SyntaxError, filename: str) -> "CellSyntaxError":
        col = max((exc.offset or 1) - 1, 0)
        end = (exc.end_offset - 1) if exc.end_offset and exc.end_lineno == exc.lineno else None
        loc = SourceLoc(filename, exc.lineno or 1, col, end)
        err = cls(exc.msg, loc)
        err.python_msg = exc.msg
        return err

    def structured(self, shell) -> list[str]:
        name = cell_name(shell, self.loc.file)
        where = f"In[{name[6:-1]}]" if name else self.loc.file
        text = linecache.getline(self.loc.file, self.loc.line).rstrip("\n")
        indent = len(text) - len(text.lstrip())
        return [f"  Cell {where}, line {self.loc.line}", f"    {text.strip()}",
                "    " + " " * (self.loc.col - indent) + "^",
                f"SyntaxError: {self.python_msg}"]


def install(shell) -> None:
    """Make ``shell`` show kernlab's errors with :func:`show_kernel_error`."""
    shell.set_custom_exc((KernelError,), show_kernel_error)


def cell_name(shell, filename: str) -> str | None:
    """``cell [n]`` for a notebook cell's file (ipykernel's temporary file or IPython's
    ``<ipython-input-n-...>``), None for a real file."""
    number = getattr(shell.compile, "_filename_map", {}).get(filename)
    if number is None and filename.startswith("<ipython-input-"):
        number = filename.split("-")[2]
    return None if number is None else f"cell [{number}]"


def _is_internal(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith(_KERNLAB_DIR + os.sep):
        return True
    parts = path.replace("\\", "/").split("/")
    return any(p in ("IPython", "ipykernel", "traitlets", "asyncio") for p in parts)


def user_frames(shell, tb) -> list[str]:
    """One line per frame of the user's own code (cells and their files), outermost first."""
    lines = []
    for frame in traceback.extract_tb(tb):
        if _is_internal(frame.filename) or "get_ipython().run_" in (frame.line or ""):
            continue  # kernlab's or IPython's own frames, or a magic's call line
        where = cell_name(shell, frame.filename) or frame.filename
        code = f": {frame.line.strip()}" if frame.line else ""
        lines.append(f"  from {where}, line {frame.lineno}, in {frame.name}{code}")
    return lines


def render(shell, err: KernelError, tb=None) -> list[str]:
    """The structured traceback (a list of lines) for a kernlab error."""
    text = err.report()  # the message first, then where
    loc = err.loc
    if loc is not None:
        name = cell_name(shell, loc.file)
        if name:  # ipykernel's temporary files have no number in their name
            text = text.replace(f"--> {_pretty_file(loc.file)}, line", f"--> {name}, line", 1)
    head, *rest = text.splitlines() or [""]
    lines = [f"{type(err).__name__}: {head}", *rest]
    frames = user_frames(shell, tb) if tb is not None else []
    if frames:
        lines += ["", "raised while running:", *frames]
    return lines


def show_kernel_error(shell, etype, value, tb, tb_offset=None):
    """IPython's custom exception handler (``set_custom_exc``) for KernelError. The error
    output's evalue is the message-first text (``err.report()``), as the traceback is."""
    if isinstance(value, CellSyntaxError):  # ename SyntaxError, as Python's own
        stb = value.structured(shell)
        shell._showtraceback(SyntaxError, value.python_msg, stb)
        return stb
    stb = render(shell, value, tb)
    shell._showtraceback(etype, value.report(), stb)
    return stb
