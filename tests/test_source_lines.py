"""frontend.source._source_lines against inspect.getsourcelines (the oracle) on layouts
that end a block in different ways; the fast path must give the same lines."""
import importlib.util
import inspect

from kernlab.frontend.source import _source_lines

SOURCE = '''
import functools


def plain(x):
    y = x + 1
    return y


def trailing_comment(x):
    return x
    # kept: at the body's indentation


def lower_comment(x):
    return x
  # not kept: shallower than the body
# nor this one


@functools.lru_cache
def decorated(
        x):
    return x


def one_line(x): return x


def doc_at_column_zero(x):
    """a docstring
with a line at column zero"""
    return x


def bracket_at_column_zero(x):
    y = (x +
1)
    return y


def backslash(x):
    y = x + \\
        1
    return y


class Holder:
    def method(self):
        if self:
            return 1
        # inside, deeper than the body
        return 2

    def after(self):
        return 3


def outer():
    def inner(x):
        return x
    return inner


async def coroutine():
    return 1


def last_in_file(x):
    return x'''


def test_source_lines_match_inspect(tmp_path):
    path = tmp_path / "layouts.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("kl_test_layouts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    funcs = [mod.plain, mod.trailing_comment, mod.lower_comment, mod.decorated,
             mod.one_line, mod.doc_at_column_zero, mod.bracket_at_column_zero, mod.backslash,
             mod.Holder.method, mod.Holder.after, mod.outer, mod.outer(), mod.coroutine,
             mod.last_in_file]
    for f in funcs:
        lines, first, _ = _source_lines(f)
        assert (lines, first) == inspect.getsourcelines(f), f.__qualname__
    # the ordinary layouts take the fast path (a parsed module comes back with the lines)
    assert _source_lines(mod.plain)[2] is not None
    assert _source_lines(mod.trailing_comment)[2] is not None
