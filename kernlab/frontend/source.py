"""Reading a Python function's source and resolving the names it uses.

Works for files and for IPython/Jupyter cells: IPython registers each cell's source with
linecache, which is what inspect.getsource reads.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import re
import textwrap
from dataclasses import dataclass

from ..errors import (KernelLimitError, KernelNameError, KernelSyntaxError, KernelTypeError,
                      SourceLoc, too_deeply_nested)
from ..types import Type, to_type


@dataclass
class ParsedSource:
    tree: ast.FunctionDef
    file: str
    line_offset: int  # add to an AST lineno to get the file's line
    col_offset: int   # add to an AST col_offset to get the file's column
    name: str

    def loc(self, node, func: str | None = None) -> SourceLoc:
        line = getattr(node, "lineno", self.tree.lineno)
        col = getattr(node, "col_offset", 0)
        end = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", line) != line:
            end = None
        return SourceLoc(self.file, line + self.line_offset, col + self.col_offset,
                         None if end is None else end + self.col_offset, func or self.name)


def parse_function(pyfunc) -> ParsedSource:
    """The FunctionDef of ``pyfunc`` with the offsets that map it back to its file."""
    code = pyfunc.__code__
    file = code.co_filename
    try:
        lines, first, module = _source_lines(pyfunc)
    except (OSError, TypeError) as exc:
        raise KernelSyntaxError(
            f"cannot read the source of '{pyfunc.__name__}' ({exc}); kernels must be defined "
            "in a file or a notebook cell", SourceLoc(file, code.co_firstlineno)) from None
    src = "".join(lines)
    dedented = textwrap.dedent(src)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != src else 0
    try:
        module = module or ast.parse(dedented)
    except SyntaxError as exc:
        raise KernelSyntaxError(f"invalid Python: {exc.msg}",
                                SourceLoc(file, first + (exc.lineno or 1) - 1)) from None
    except (RecursionError, MemoryError):
        raise too_deeply_nested(SourceLoc(file, first), pyfunc.__name__) from None
    tree = next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    if isinstance(tree, ast.AsyncFunctionDef):
        raise KernelSyntaxError("kernels cannot be async", SourceLoc(file, first))
    linecache.getlines(file)  # keep the cell's text available for error snippets
    parsed = ParsedSource(tree, file, first - 1, indent, pyfunc.__name__)
    if not (dedented.isascii() and _LONG_WORD.search(dedented) is None):
        _check_name_lengths(parsed)  # (an ASCII name is a run of word characters)
    return parsed


def _source_lines(pyfunc) -> tuple:
    """inspect.getsourcelines(pyfunc) for a function, without tokenizing its body
    (inspect.getblock tokenizes every line: a fifth of a second for a 4,000-line kernel):
    the block ends before the first code line indented no deeper than the ``def``, and
    takes the comment lines at the body's indentation before it (as getblock does). Only
    where that block parses as exactly the function; otherwise, inspect's answer. Returns
    (lines, first line number, the parsed dedented lines or None)."""
    obj = inspect.unwrap(pyfunc)
    if not inspect.isfunction(obj):
        return (*inspect.getsourcelines(pyfunc), None)
    lines, start = inspect.findsource(obj)
    found = _indented_block(lines, start)
    if found is None:
        return inspect.getblock(lines[start:]), start + 1, None
    return found[0], start + 1, found[1]


def _indented_block(lines: list, start: int) -> list | None:
    def indent(line):
        body = line.lstrip(" ")
        return None if body[:1] in ("\t", "\f") else len(line) - len(body)

    depth, head = indent(lines[start]), start
    while head < len(lines) and not lines[head].lstrip(" ").startswith(("def ", "async ")):
        head += 1  # the decorators
    if depth is None or head == len(lines):
        return None
    body_col, last, end = None, head, head  # (last: the last code line of the block)
    for k in range(head + 1, len(lines)):
        text = lines[k].strip()
        col = indent(lines[k])
        if col is None:
            return None
        if not text:
            continue
        if text.startswith("#"):
            if body_col is not None and col >= body_col:
                end = k
            continue
        if col <= depth:
            break
        if body_col is None:
            body_col = col
        last = end = k
    block = lines[start:end + 1]
    try:
        module = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(module.body) != 1 or not isinstance(module.body[0], (ast.FunctionDef,
                                                                ast.AsyncFunctionDef)) \
            or module.body[0].end_lineno != last - start + 1:
        return None
    return block, module


MAX_NAME_LENGTH = 255  # characters in an identifier (LLVM truncates value names at 1,024)
_LONG_WORD = re.compile(r"\w{%d}" % (MAX_NAME_LENGTH + 1), re.ASCII)


def _check_name_lengths(parsed: ParsedSource) -> None:
    for node in ast.walk(parsed.tree):
        name = (node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg)
                else node.attr if isinstance(node, ast.Attribute)
                else node.arg if isinstance(node, ast.keyword) and node.arg else None)
        if name is not None and len(name) > MAX_NAME_LENGTH:
            raise KernelLimitError(
                f"the name '{name[:24]}...' is {len(name)} characters long; kernlab accepts "
                f"names of up to {MAX_NAME_LENGTH} characters", parsed.loc(node),
                kernel=parsed.name)


_MISSING = object()


def resolve_global(pyfunc, name: str, extra: dict | None = None):
    """The Python object a free name refers to: closure cell, global, or Python builtin."""
    code = pyfunc.__code__
    if pyfunc.__closure__ and name in code.co_freevars:
        cell = pyfunc.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            return _MISSING
    if extra and name in extra:
        return extra[name]
    if name in pyfunc.__globals__:
        return pyfunc.__globals__[name]
    return getattr(builtins, name, _MISSING)


def is_missing(obj) -> bool:
    return obj is _MISSING


def annotation_type(pyfunc, arg: ast.arg, src: ParsedSource) -> Type:
    """The kernlab type of a parameter from its annotation."""
    from ..runtime.array import array  # runtime arrays double as annotations

    loc = src.loc(arg)
    if arg.annotation is None:
        raise KernelTypeError(f"parameter '{arg.arg}' needs a type annotation", loc)
    hints = getattr(pyfunc, "__annotations__", {})
    ann = hints.get(arg.arg, _MISSING)
    if isinstance(ann, str) or ann is _MISSING:
        ann = _eval_annotation(pyfunc, arg.annotation, loc)
    if isinstance(ann, array):
        return ann.type
    from .tuples import TuplePattern
    pattern = TuplePattern.from_annotation(ann)  # tuple[int, float]: a func's tuple argument
    if pattern is not None:
        return pattern
    try:
        return to_type(ann)
    except TypeError:
        raise KernelTypeError(f"annotation {ast.unparse(arg.annotation)!r} of parameter "
                                  f"'{arg.arg}' is not a kernlab type", loc) from None


def _eval_annotation(pyfunc, node, loc):
    env = dict(pyfunc.__globals__)
    if pyfunc.__closure__:
        for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    try:
        return eval(compile(ast.Expression(node), loc.file, "eval"), env)  # noqa: S307
    except NameError as exc:
        raise KernelNameError(f"annotation uses an unknown name: {exc}", loc) from None
    except Exception as exc:  # whatever the annotation's own code raises
        raise KernelTypeError(f"annotation {ast.unparse(node)!r} cannot be evaluated "
                              f"({type(exc).__name__}: {exc})", loc) from None
