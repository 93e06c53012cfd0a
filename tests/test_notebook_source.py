"""Kernels defined in IPython cells: the frontend reads their source through inspect and
linecache, which IPython fills in for each cell, and errors name the cell's line."""
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import kernlab as kl  # noqa: E402


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.run_cell("import numpy as np\nimport kernlab as kl\n", store_history=True)
    yield sh
    sh.reset(new_session=False)
    # the shell keeps the last error's traceback, and with it the frames' (device) arrays
    sys.last_type = sys.last_value = sys.last_traceback = None
    sh.InteractiveTB.tb = None


def cell_text(code):
    """The cell as typed: dedented, starting on its first line (IPython drops leading
    blank lines, which would shift the line numbers)."""
    return textwrap.dedent(code).lstrip("\n")


def run_cell(shell, code):
    """Runs a cell as a notebook would (it gets an execution count); returns the result."""
    return shell.run_cell(cell_text(code), store_history=True)


def cell_line(code, needle):
    """The 1-based line of the cell that holds ``needle``."""
    lines = cell_text(code).splitlines()
    hits = [k + 1 for k, text in enumerate(lines) if needle in text]
    assert len(hits) == 1
    return hits[0]


def test_kernel_defined_and_launched_in_a_cell(backend, shell):
    result = run_cell(shell, """
        @kl.kernel
        def triple(a: kl.array(dtype=float)):
            i = kl.tid()
            a[i] = a[i] * 3.0

        a = kl.array(np.array([1.0, 2.0, -4.0], np.float32), dtype=float)
        kl.launch(triple, 3, inputs=[a])
        values = a.numpy()
    """)
    result.raise_error()
    np.testing.assert_array_equal(shell.user_ns["values"], [3.0, 6.0, -12.0])


def test_kernel_from_one_cell_is_launched_from_a_later_cell(backend, shell):
    run_cell(shell, """
        @kl.kernel
        def fill_index(a: kl.array(dtype=int)):
            i = kl.tid()
            a[i] = i * i
    """).raise_error()
    run_cell(shell, "b = kl.zeros(4, dtype=int)\nkl.launch(fill_index, 4, inputs=[b])\n"
             ).raise_error()
    np.testing.assert_array_equal(shell.user_ns["b"].numpy(), np.arange(4) ** 2)


def test_func_from_one_cell_is_called_by_a_kernel_in_another(backend, shell):
    run_cell(shell, """
        @kl.func
        def halve(x: float):
            return x * 0.5
    """).raise_error()
    run_cell(shell, """
        # a comment and a blank line first, so the kernel does not start on line 1

        @kl.kernel
        def halve_all(a: kl.array(dtype=float)):
            i = kl.tid()
            a[i] = halve(a[i])

        c = kl.array(np.array([2.0, 5.0], np.float32), dtype=float)
        kl.launch(halve_all, 2, inputs=[c])
    """).raise_error()
    np.testing.assert_array_equal(shell.user_ns["c"].numpy(), [1.0, 2.5])


def test_redefining_a_kernel_in_a_new_cell_uses_the_new_body(backend, shell):
    define = """
        @kl.kernel
        def setk(a: kl.array(dtype=float)):
            i = kl.tid()
            a[i] = {value}
    """
    launch = "d = kl.zeros(2, dtype=float)\nkl.launch(setk, 2, inputs=[d])\n"
    run_cell(shell, define.format(value="1.0")).raise_error()
    run_cell(shell, launch).raise_error()
    np.testing.assert_array_equal(shell.user_ns["d"].numpy(), [1.0, 1.0])
    run_cell(shell, define.format(value="2.0")).raise_error()
    run_cell(shell, launch).raise_error()
    np.testing.assert_array_equal(shell.user_ns["d"].numpy(), [2.0, 2.0])


BAD_CELL = """
    import kernlab as kl

    @kl.kernel
    def bad_in_cell(a: kl.array(dtype=float)):
        i = kl.tid()
        a[i] = i * 2.0

    kl.launch(bad_in_cell, 3, inputs=[kl.zeros(3, dtype=float)])
"""


def test_compile_error_in_a_cell_names_the_cells_line(backend, shell):
    result = run_cell(shell, BAD_CELL)
    err = result.error_in_exec
    assert isinstance(err, kl.KernelTypeError)
    line = cell_line(BAD_CELL, "a[i] = i * 2.0")
    assert err.loc.line == line
    text = str(err)
    assert f"cell [{result.execution_count}], line {line}" in text
    rows = text.splitlines()
    k = next(k for k, r in enumerate(rows) if "a[i] = i * 2.0" in r and "|" in r)
    assert rows[k + 1].split("| ", 1)[1].strip() == "^" * len("i * 2.0")


def test_syntax_error_in_a_cell_shows_the_cells_line(shell):
    code = """
        @kl.kernel
        def comprehension_in_cell(a: kl.array(dtype=float)):
            b = [x for x in range(3)]
    """
    run_cell(shell, code).raise_error()
    result = run_cell(shell, "kl.source(comprehension_in_cell)")
    err = result.error_in_exec
    assert isinstance(err, kl.KernelSyntaxError)
    line = cell_line(code, "b = [x for x")
    assert err.loc.line == line
    assert f"line {line}" in str(err) and "b = [x for x in range(3)]" in str(err)


def test_out_of_bounds_in_a_cell_kernel_names_the_cells_line(backend, shell):
    code = """
        @kl.kernel
        def past_end(a: kl.array(dtype=float)):
            i = kl.tid()
            a[i + 1] = 1.0
    """
    run_cell(shell, code).raise_error()
    result = run_cell(shell, "kl.launch(past_end, 3, inputs=[kl.zeros(3, dtype=float)])")
    err = result.error_in_exec
    assert isinstance(err, IndexError)
    text = str(err)
    assert "past_end" in text and f"line {cell_line(code, 'a[i + 1] = 1.0')}" in text
    assert "3" in text and "(3,)" in text
