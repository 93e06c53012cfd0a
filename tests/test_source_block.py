"""frontend.source.source_block reads a function's definition without the tokenizer (the
tokenizer's first use costs a cold start about 6 ms): for the parser it must give what
inspect.getsourcelines gives, or nothing (then inspect decides)."""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap

import pytest

import kernlab as kl
from kernlab.frontend.source import source_block


def ends_with_pass(x):
    y = x
    pass


def trailing_no_code(x):
    if x:
        return 1
    else:
        pass
    # an indented comment

    ...
# a comment at column 0


def string_at_column_0(x):
    s = """
text
"""
    return s


class Holder:
    def method(self):
        z = (1 +
             2
             )
        if False:
            z = 3
        return z
    # the class goes on


def constant_statements(x):
    y = x
    "a string"
    (1,
2)


def one_line(x): return x


def lambdas_and_comprehensions(x):
    g = lambda t: (t +  # noqa: E731
                   1)
    return [g(i) for i in
            range(3)]


@functools.lru_cache(
    maxsize=None)
def decorated(x):
    assert x, \
        "message"
    return x


CASES = [ends_with_pass, trailing_no_code, string_at_column_0, Holder.method,
         constant_statements, one_line, lambdas_and_comprehensions, decorated.__wrapped__]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_the_block_parses_as_inspect_reads_it(fn):
    lines, first = inspect.getsourcelines(fn)
    found = source_block(fn)
    assert found is not None
    mine, at = found
    assert at == first
    parse = lambda block: ast.dump(ast.parse(textwrap.dedent("".join(block))),  # noqa: E731
                                   include_attributes=True)
    assert parse(mine) == parse(lines)


def test_a_function_without_a_file_has_none():
    namespace: dict = {}
    exec("def made(x):\n    return x\n", namespace)
    assert source_block(namespace["made"]) is None


def test_a_kernel_ending_in_no_code_statements_compiles_as_before():
    """The IR of a kernel whose last statements leave no instructions (a guarded return,
    then pass): the guard's block for the rest is kept, so the adjoint and result are the
    same as with the whole body; checked against NumPy."""
    @kl.kernel
    def clipped(x: kl.array(dtype=float), y: kl.array(dtype=float)):
        i = kl.tid()
        y[i] = 2.0 * x[i]
        if x[i] > 2.0:
            return
        y[i] = y[i] + 1.0
        pass

    import numpy as np
    xs = np.array([1.0, 3.0, 0.5], dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(3)
    kl.launch(clipped, 3, inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), np.where(xs > 2.0, 2 * xs, 2 * xs + 1))
    assert "pass" in inspect.getsource(clipped.pyfunc)
    lines, _ = source_block(clipped.pyfunc)
    assert lines[-1].strip() == "pass"
