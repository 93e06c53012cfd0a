"""Source locations and the KernelError family.

Every error a user sees names the kernel, shows the user's line with a caret under the
offending columns, and keeps compiler internals (LLVM verifier output, NVRTC logs) under
"while compiling ...". The message itself comes last, so ``str(err)`` ends with it (Warp's
tests match messages with ``$``-anchored patterns); ``err.message`` is the message alone.

Warp's names for these classes are aliases: WarpCodegenError is KernelError,
WarpCodegenTypeError KernelTypeError (also a TypeError), WarpCodegenValueError
KernelValueError (a ValueError), WarpCodegenAttributeError KernelAttributeError (an
AttributeError) and WarpCodegenKeyError KernelKeyError (a KeyError).
"""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """Where a piece of IR came from: file (or notebook cell), line, column range, function."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None
    func: str = ""

    def __str__(self):
        return f"{_pretty_file(self.file)}:{self.line}"

    def snippet(self) -> str:
        """The user's line with a caret under the columns this location covers."""
        text = linecache.getline(self.file, self.line).rstrip("\n")
        if not text:
            return ""
        gutter = f"{self.line:>4} | "
        end = self.end_col if self.end_col and self.end_col > self.col else len(text)
        caret = " " * self.col + "^" * max(1, end - self.col)
        return f"{gutter}{text}\n{' ' * (len(gutter) - 2)}| {caret}"


def _pretty_file(path: str) -> str:
    # IPython names cell files like <ipython-input-3-abc>; ipykernel like
    # /tmp/ipykernel_123/456789.py (no execution count in the name).
    if path.startswith("<ipython-input-"):
        return f"cell [{path.split('-')[2]}]"
    if re.search(r"ipykernel_\d+[/\\]\d+\.py$", path):
        return "cell"
    return path


class KernelError(RuntimeError):
    """Base of all kernlab compile and launch errors. ``loc`` is a SourceLoc or None. A
    RuntimeError, as Warp's codegen errors are."""

    def __init__(self, message: str, loc: SourceLoc | None = None, kernel: str | None = None,
                 details: str | None = None, stage: str | None = None):
        self.message = message
        self.loc = loc
        self.kernel = kernel or (loc.func if loc else None)
        self.details = details
        self.stage = stage
        super().__init__(self._render())

    def _render(self, message_first: bool = False) -> str:
        """The message with the kernel, file, line and a caret under the user's code: after
        them by default (``str(err)`` ends with the message), before them for displays
        that show the message first (a notebook's error output)."""
        parts = []
        if self.loc is not None:
            where = f"  --> {_pretty_file(self.loc.file)}, line {self.loc.line}"
            if self.kernel:
                where += f", in kernel '{self.kernel}'"
            parts.append(where)
            snippet = self.loc.snippet()
            if snippet:
                parts.append(snippet)
        elif self.kernel:
            parts.append(f"  --> in kernel '{self.kernel}'")
        if self.details:
            stage = self.stage or f"compiling kernel '{self.kernel}'"
            parts.append(f"while {stage}:\n{self.details}")
        if message_first:
            head, _, tail = self.message.partition("\n")
            return "\n".join([head, *parts] + ([tail] if tail else []))
        parts.append(self.message)
        return "\n".join(parts).lstrip(" ")  # "KernelTypeError: --> file, line 3, ..."

    def __str__(self):  # KeyError would show repr(); every KernelError shows its text
        return self._render()

    def report(self) -> str:
        """The text a display shows: the message first, then where (str(err) ends with the
        message instead, as Warp's tests read it)."""
        return self._render(message_first=True)

    @property
    def lineno(self) -> int | None:
        return self.loc.line if self.loc else None


class KernelSyntaxError(KernelError):
    """A Python construct the kernel language does not support."""


class KernelTypeError(KernelError, TypeError):
    """No overload or no implicit conversion fits the types involved."""


class KernelUnsupportedTypeError(KernelTypeError, RuntimeError):
    """An operation the type does not support on this hardware model (atomic_min on int8,
    ...); a RuntimeError too, as Warp's codegen error is."""


class KernelValueError(KernelError, ValueError):
    """A value the kernel language needs at compile time is wrong (a slice bound, ...)."""


class KernelNameError(KernelError):
    """A name that is neither a local, a parameter, a builtin nor a resolvable global."""


class KernelAttributeError(KernelNameError, AttributeError):
    """An attribute a value or module does not have."""


class KernelKeyError(KernelError, KeyError):
    """A key (a struct field, a dictionary entry) that does not exist."""


WarpCodegenError = KernelError
WarpCodegenTypeError = KernelTypeError
WarpCodegenValueError = KernelValueError
WarpCodegenAttributeError = KernelAttributeError
WarpCodegenKeyError = KernelKeyError


class LaunchError(KernelError, RuntimeError):
    """Wrong arguments to kl.launch: count, dtype, shape, device (a RuntimeError, as
    Warp's launch errors are)."""


class LaunchValueError(LaunchError, ValueError):
    """A launch argument that cannot be converted to its parameter's type."""


class LaunchTypeError(LaunchError, TypeError):
    """A launch argument of a kind that cannot be used at all (a launch dim of None or 2.0,
    a TypeError in Warp)."""


class GradientError(KernelError):
    """A kernel whose adjoint cannot be computed correctly, or a tape used wrongly."""


class KernelIndexError(KernelError, IndexError):
    """An out-of-bounds array access inside a kernel; also an IndexError."""


class KernelFPError(KernelError, FloatingPointError):
    """A NaN or Inf written by a kernel while kl.config.verify_fp is on."""


class KernelLimitError(KernelError):
    """A kernel beyond what the compiler handles: nesting too deep, a name too long."""


def too_deeply_nested(loc, kernel: str | None) -> KernelLimitError:
    import sys
    return KernelLimitError(
        "this code is nested too deeply for the compiler (an expression with very many "
        "operands or levels, a long chain of @kl.func calls, or deeply nested blocks exceed "
        f"Python's recursion limit of {sys.getrecursionlimit()}); split it into several "
        "statements with intermediate variables", loc, kernel=kernel)


def out_of_bounds_error(func, site, axis: int, index: int, shape: tuple) -> KernelIndexError:
    """The error for an index outside ``shape`` at ``site`` (a Site of ``func``), or the
    failure of the runtime check a guard site is."""
    if getattr(site, "guard", None):
        return KernelValueError(site.guard, site.loc, kernel=func.name)
    return KernelIndexError(f"index {index} is out of bounds for axis {axis} of {site.kind} "
                            f"'{site.array}' with shape {tuple(shape)}", site.loc,
                            kernel=func.name)


def reported_error(func, not_finite: bool, site: int, axis: int, param: int, index: int,
                   args) -> KernelError:
    """The error a compiled kernel reported through its status record (the LLVM backend's
    status block, the CUDA backend's status word): (verify_fp) a NaN or Inf stored into
    element ``index`` of parameter ``param``, or else an index out of bounds at ``site``
    (an array access, or a vector/matrix component whose extents the Site holds)."""
    where = func.sites[site] if 0 <= site < len(func.sites) else None
    arr = args[param] if 0 <= param < len(args) else None
    if not_finite:
        p = func.params[param]  # its name: adj_x in an adjoint, not x
        return not_finite_error(func, where, p.name, None if arr is None else arr.numpy(),
                                p.type.ndim, index)
    if where is not None and where.shape is not None:  # a vector or matrix component
        return out_of_bounds_error(func, where, axis, index, where.shape)
    if where is not None and arr is not None:
        return out_of_bounds_error(func, where, axis, index, tuple(arr.shape))
    name = func.params[param].name if param >= 0 else "?"
    return KernelIndexError(f"index {index} is out of bounds for axis {axis} of array "
                            f"'{name}'", loc=where.loc if where is not None else func.loc,
                            kernel=func.name)


def not_finite_error(func, site, array_name: str, data, ndim: int,
                     flat_index: int) -> KernelFPError:
    """verify_fp: the error for a NaN or Inf that kernel ``func`` stored at ``site`` (a Site,
    or None) into element ``flat_index`` (row-major over the first ``ndim`` axes) of the
    NumPy view ``data`` of an array."""
    import numpy as np

    shape = tuple(data.shape[:ndim]) if data is not None else ()
    if data is not None and 0 <= flat_index < int(np.prod(shape)):
        index = tuple(int(i) for i in np.unravel_index(flat_index, shape))
        value = np.asarray(data[index])
        shown = str(value.item()) if value.ndim == 0 else np.array2string(value)
        what = f"{shown} into '{array_name}' at index {index}"
    else:
        what = f"a NaN or Inf into '{array_name}'"
    return KernelFPError(f"kernel '{func.name}' wrote {what} (kl.config.verify_fp is on)",
                         site.loc if site is not None else func.loc, kernel=func.name)


class ArrayError(RuntimeError, ValueError):
    """A bad array operation at Python scope (shapes, dtypes, offsets that do not fit).
    Both a RuntimeError (what Warp raises) and a ValueError (what kernlab raised before)."""
