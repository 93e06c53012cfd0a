"""The IR cache's key (runtime/ir_cache.py says what it covers): the source lines, file and
first line of a kernel and of every @kl.func it reaches, the values of the names they use,
and kernlab's own fingerprint. Anything the key cannot vouch for raises Uncacheable."""
from __future__ import annotations

import ast
import builtins
import functools
import linecache
import os
import stat
import sys
import types as pytypes

import numpy as np

from .. import config
from . import cache

FORMAT = "kernlab-ir-5"  # bump when what is pickled changes shape (5: one IR an entry,
                         # instructions as tuples: see ir_cache._block)
_MAX_ARRAY_BYTES = 1 << 16  # constants larger than this are not hashed: no caching
_LIBRARY_MODULES = {"math": None, "numpy": np.__version__}  # attribute reads are library
                                                           # constants


class Uncacheable(Exception):
    """Raised inside the key or the pickler: this kernel's IR is not cached."""


# ---- the key --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def source_files() -> tuple:
    """(path relative to the package, size, modification time) of each of kernlab's source
    files (the notebook package aside: the core never imports it). Taken once, when kernlab
    is imported (kernlab/__init__.py): the code a process runs is the code it imported, so
    that is the state its cache keys must name. Stat calls, not reads: a start cannot
    afford to hash a megabyte of source."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    stack = [(root, "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name not in ("notebook", "__pycache__"):
                    stack.append((e.path, f"{rel}{e.name}/"))
            elif e.name.endswith((".py", ".h")):
                st = e.stat()
                out.append((f"{rel}{e.name}", st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def package_fingerprint() -> str:
    """kernlab's source files (source_files) with the Python and NumPy versions."""
    return cache.key_for(FORMAT, sys.version, np.__version__,
                         *(f"{rel} {size} {mtime}" for rel, size, mtime in source_files()))


def kernel_key(kernel) -> str | None:
    """The cache key of ``kernel``'s front-end results, or None when it cannot have one."""
    try:
        deps = _Deps(kernel.extra_globals)
        deps.visit(kernel.pyfunc)
        extra = [deps.describe(t) for t in kernel.param_types or ()]
        if kernel.extra_globals:
            extra += [f"{k}={deps.describe(v)}" for k, v in sorted(kernel.extra_globals.items())]
        extra.append(f"mode={config.mode}")  # compiles asserts or not
        for scope, options in (("kernel", kernel.options), ("module", kernel.module.options)):
            extra += [f"{scope} option {k}={deps.describe(v)}" for k, v in
                      sorted(options.items(), key=lambda kv: str(kv[0]))]
    except Uncacheable:
        return None
    from .. import __version__
    return cache.key_for(FORMAT, __version__, package_fingerprint(), kernel.key,
                         *extra, *deps.parts)


def _block_end(lines: list, first: int, last: int) -> int:
    """The last line (1-based) of the function whose bytecode ends at ``last``: statements
    that leave no bytecode (an ``assert`` or ``if __debug__:`` under ``python -O``, a trailing
    ``pass`` or docstring) still shape the kernel's IR, so the key runs on over every later
    line indented deeper than the ``def`` (blank lines between them included)."""
    k = first - 1
    while k < len(lines) and lines[k].lstrip().startswith("@"):
        k += 1  # the decorators: the def's own indentation is what counts
    if k >= len(lines):
        return last
    indent = len(lines[k]) - len(lines[k].lstrip())
    end, k = last, last
    while k < len(lines):
        text = lines[k]
        stripped = text.lstrip()
        if stripped and not stripped.startswith("#"):
            if len(text) - len(stripped) <= indent:
                break
            end = k + 1
        k += 1
    return end


def _source_lines(filename: str, module_globals) -> list:
    """The lines of a source file as linecache gives them (with their line ends). A file
    linecache does not hold yet is read directly when it is plain UTF-8 without a coding
    cookie: linecache's first read (tokenize's encoding detection) costs a warm start
    0.1 ms. Notebook cells and the rest go through linecache."""
    if filename not in linecache.cache and os.path.isabs(filename):
        try:
            fd = os.open(filename, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            fd = None
        if fd is not None:
            try:
                info = os.fstat(fd)
                data = os.read(fd, info.st_size + 1) if stat.S_ISREG(info.st_mode) \
                    and info.st_size < (1 << 24) else None
            finally:
                os.close(fd)
            if data is not None and len(data) <= info.st_size \
                    and b"coding" not in b"".join(data.split(b"\n", 2)[:2]) \
                    and not data.startswith(b"\xef\xbb\xbf"):
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
                if text is not None:  # the lines a text-mode readlines() gives
                    if "\r" in text:
                        text = text.replace("\r\n", "\n").replace("\r", "\n")
                    lines = [line + "\n" for line in text.split("\n")]
                    if text.endswith("\n") or not text:
                        lines.pop()  # (linecache ends a last line without one with "\n")
                    return lines
    linecache.checkcache(filename)
    return linecache.getlines(filename, module_globals)


class _Deps:
    """Collects the text that the IR of a kernel (and the funcs it reaches) depends on."""

    def __init__(self, extra_globals):
        self.parts: list = []
        self.seen: set = set()
        self.extra = extra_globals

    def visit(self, pyfunc) -> None:
        if id(pyfunc) in self.seen:
            return
        self.seen.add(id(pyfunc))
        if not isinstance(pyfunc, pytypes.FunctionType):
            raise Uncacheable
        code = pyfunc.__code__
        codes, stack = [], [code]
        while stack:
            c = stack.pop()
            codes.append(c)
            stack += [k for k in c.co_consts if isinstance(k, pytypes.CodeType)]
        # the function's lines, from its first decorator to the end of its last statement,
        # as linecache has them (files and notebook cells alike): inspect.getsource would
        # tokenize the file, which a warm start cannot afford
        first, last = code.co_firstlineno, code.co_firstlineno
        for c in codes:  # (end line of each instruction; Python 3.10: its line)
            spans = c.co_positions() if hasattr(c, "co_positions") else \
                ((line, line) for _, _, line in c.co_lines())
            for span in spans:
                if span[1] is not None:
                    last = max(last, span[1])
        source = _source_lines(code.co_filename, pyfunc.__globals__)
        last = _block_end(source, first, last)
        lines = source[first - 1:last]
        if not lines:
            raise Uncacheable
        self.parts += [code.co_filename, str(first), "".join(lines)]
        names = set()
        for c in codes:
            names.update(c.co_names)
            names.update(c.co_freevars)
        if "static" in names:
            raise Uncacheable  # kl.static runs arbitrary Python at compile time
        for ann in getattr(pyfunc, "__annotations__", {}).values():
            if isinstance(ann, str):  # from __future__ import annotations: names in text
                try:
                    names.update(n.id for n in ast.walk(ast.parse(ann, mode="eval"))
                                 if isinstance(n, ast.Name))
                except SyntaxError:
                    raise Uncacheable from None
            else:
                self.parts.append(f"annotation {self.describe(ann)}")
        from ..frontend.source import is_missing, resolve_global
        for name in sorted(names):
            value = resolve_global(pyfunc, name, self.extra)
            self.parts.append(f"{name}=" + ("<missing>" if is_missing(value)
                                             else self.describe(value)))

    def describe(self, v) -> str:  # noqa: C901 — one case per kind of value
        Func, Kernel, Type, array, content_key = _describe_names()
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            return f"{type(v).__name__}:{v!r}"
        if isinstance(v, np.generic):
            return f"np:{v.dtype.str}:{v.tobytes().hex()}"
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject or v.nbytes > _MAX_ARRAY_BYTES:
                raise Uncacheable
            return f"ndarray:{v.dtype.str}:{v.shape}:{np.ascontiguousarray(v).tobytes().hex()}"
        if isinstance(v, (tuple, list)):
            return f"{type(v).__name__}(" + ",".join(self.describe(x) for x in v) + ")"
        if isinstance(v, Func):
            for f in [*v.overloads, v.grad, *v.grads.values(), v.replay]:
                if isinstance(f, Func):
                    f = f.pyfunc
                if f is not None:
                    self.visit(f)
            for f in (v.grad, v.replay, *v.grads.values()):
                if isinstance(f, Func):
                    for g in f.overloads:
                        self.visit(g)
            return f"func:{v.key}:{len(v.overloads)}"
        if isinstance(v, Kernel):
            return f"kernel:{v.key}"
        if isinstance(v, array) and getattr(v, "is_annotation", False):
            return f"array-annotation:{content_key(v.dtype)}:{v.ndim}"
        if isinstance(v, Type):
            return f"type:{content_key(v)}"
        if isinstance(v, pytypes.ModuleType):
            name = v.__name__
            if name == "kernlab" or name.startswith("kernlab."):
                return "module:kernlab"
            if name in _LIBRARY_MODULES:
                return f"module:{name}:{_LIBRARY_MODULES[name]}"
            raise Uncacheable  # its attributes could be anything: module-level settings
        if v in (float, int, bool) or getattr(builtins, getattr(v, "__name__", ""), None) is v:
            return f"builtin:{v.__name__}"
        module = getattr(v, "__module__", None) or ""
        if (module == "kernlab" or module.startswith("kernlab.")) and \
                isinstance(v, (pytypes.FunctionType, pytypes.BuiltinFunctionType, type)):
            return f"kernlab:{module}.{getattr(v, '__qualname__', v.__name__)}"
        if getattr(v, "_kernlab_builtin", None) is not None or \
                (module.startswith("kernlab") and callable(v)):
            return f"kernlab-callable:{module}.{getattr(v, '__name__', type(v).__name__)}"
        if module in ("math", "numpy") and callable(v):
            return f"library:{module}.{getattr(v, '__name__', '?')}"
        raise Uncacheable


@functools.lru_cache(maxsize=None)
def _describe_names() -> tuple:
    """What _Deps.describe tests values against, imported once (four relative imports per
    call cost a warm start's key about 0.1 ms)."""
    from ..kernel import Func, Kernel
    from ..types import Type
    from .array import array
    from .structs import content_key
    return Func, Kernel, Type, array, content_key
