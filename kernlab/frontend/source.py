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
        try:  # (an expression or statement the parser made has all four: the common case)
            line, col, end = node.lineno, node.col_offset, node.end_col_offset
            end_line = node.end_lineno
        except AttributeError:
            line = getattr(node, "lineno", self.tree.lineno)
            col = getattr(node, "col_offset", 0)
            end = getattr(node, "end_col_offset", None)
            end_line = getattr(node, "end_lineno", line)
        if end_line != line:
            end = None
        return SourceLoc(self.file, line + self.line_offset, col + self.col_offset,
                         None if end is None else end + self.col_offset, func or self.name)


def parse_function(pyfunc) -> ParsedSource:
    """The FunctionDef of ``pyfunc`` with the offsets that map it back to its file."""
    code = pyfunc.__code__
    file = code.co_filename
    try:
        found = _parsed_block(pyfunc)
        lines, first, module = found if found is not None else \
            (*inspect.getsourcelines(pyfunc), None)
    except (OSError, TypeError) as exc:
        raise KernelSyntaxError(
            f"cannot read the source of '{pyfunc.__name__}' ({exc}); kernels must be defined "
            "in a file or a notebook cell", SourceLoc(file, code.co_firstlineno)) from None
    src = "".join(lines)
    dedented = textwrap.dedent(src)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != src else 0
    try:
        module = module or ast.parse(dedented)  # (parsed already where source_block found it)
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


_DEF_LINE = re.compile(r"\s*(@|def\s|async\s+def\s)")
_CODE_TYPE = type(parse_function.__code__)


def source_block(pyfunc) -> tuple | None:
    """(lines, first line number) of ``pyfunc``'s definition, from its first decorator to
    the end of its body, as inspect.getsourcelines gives them for the parser, without
    tokenizing (the tokenizer's first use in a process compiles its regular expressions:
    about 6 ms of a cold start). The body reaches at least the last line any instruction
    of the function (or of a function, lambda or comprehension inside it) comes from, and
    then on over the lines indented deeper than the ``def`` (and blank and comment lines)
    that follow: statements that leave no instructions (``pass``, constants, ``if False:``
    blocks, asserts under -O). None when that block does not parse as one function
    definition (a line continuation or string reaching back to the ``def``'s indentation
    can end it early): then inspect, which tokenizes, decides."""
    found = _parsed_block(pyfunc)
    return None if found is None else found[:2]


def _parsed_block(pyfunc) -> tuple | None:
    """source_block's (lines, first line number) and the module it parsed them into (the
    parser reuses it: a second parse took ~0.1 s for a 4,000-line kernel)."""
    code = pyfunc.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, getattr(pyfunc, "__globals__", None))
    first = code.co_firstlineno
    if not 0 < first <= len(lines) or not _DEF_LINE.match(lines[first - 1]):
        return None
    last, stack = first, [code]
    while stack:
        c = stack.pop()
        stack += [k for k in c.co_consts if isinstance(k, _CODE_TYPE)]
        for span in c.co_positions():
            if span[1] is not None and span[1] > last:
                last = span[1]
    if last > len(lines):
        return None
    head = lines[first - 1]
    indent = len(head) - len(head.lstrip())
    end = last
    for at in range(last, len(lines)):
        line = lines[at]
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            if len(line) - len(line.lstrip()) <= indent:
                break
            end = at + 1  # (trailing blank and comment lines are left out, as inspect does)
    block = lines[first - 1:end]
    try:
        module = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(module.body) != 1 or not isinstance(module.body[0], (ast.FunctionDef,
                                                                  ast.AsyncFunctionDef)):
        return None
    return block, first, module


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
