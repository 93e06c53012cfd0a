"""The %%kernel cell magic, driven through a real IPython InteractiveShell."""
import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("IPython")
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

import kernlab as kl  # noqa: E402
from kernlab.errors import KernelTypeError  # noqa: E402

SAXPY = """\
%%kernel{opts}
def saxpy(x: array(dtype=float32), y: array(dtype=float32), out: array(dtype=float32),
          a: float32):
    i = tid()
    out[i] = a * x[i] + y[i]
"""


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernlab")
    return sh


@pytest.fixture(autouse=True)
def interp(monkeypatch):
    """The reference interpreter runs the kernels, so these tests need no LLVM."""
    monkeypatch.setattr(kl.config, "cpu_backend", "interp")


def run(shell, cell):
    with capture_output() as cap:
        result = shell.run_cell(cell)
    return result, cap


def ok(shell, cell):
    result, cap = run(shell, cell)
    assert result.success, (result.error_in_exec, cap.stdout)
    return result, cap


def launch_saxpy(kernel, a=2.0):
    x = kl.array(np.arange(4, dtype=np.float32))
    y = kl.array(np.ones(4, dtype=np.float32))
    out = kl.zeros(4)
    kl.launch(kernel, 4, inputs=[x, y, out, a])
    return out.numpy()


# ---- loading ------------------------------------------------------------------------------

def test_load_ext_registers_the_cell_magic(shell):
    assert "kernel" in shell.magics_manager.magics["cell"]


def test_load_ext_imports_nothing_heavy():
    code = textwrap.dedent("""
        import sys
        import kernlab
        from IPython.core.interactiveshell import InteractiveShell
        before = set(sys.modules)
        InteractiveShell.instance().run_line_magic("load_ext", "kernlab")
        heavy = ("ipywidgets", "matplotlib", "llvmlite", "kernlab.notebook.lab")
        print(sorted(m for m in heavy if m in set(sys.modules) - before))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(kl.__file__).parents[1]))
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_magic_help_documents_every_option(shell):
    doc = shell.magics_manager.magics["cell"]["kernel"].__doc__
    for option in ("--device", "--show", "--no-bounds-check", "--backend", "--quiet",
                   "--lazy", "--no-adjoint", "{ir,adjoint,llvm,cuda,ptx}"):
        assert option in doc


# ---- good cells -----------------------------------------------------------------------------

def test_cell_puts_a_working_kernel_into_the_namespace(shell):
    ok(shell, SAXPY.format(opts=""))
    k = shell.user_ns["saxpy"]
    assert isinstance(k, kl.Kernel)
    np.testing.assert_allclose(launch_saxpy(k), 2.0 * np.arange(4) + 1.0)


def test_kernlab_names_work_bare_and_with_kl_prefix(shell):
    ok(shell, """%%kernel
def both(x: kl.array(dtype=kl.float32), out: array(dtype=float32)):
    i = kl.tid()
    j = tid()
    out[i] = kl.sin(x[j]) + sin(x[i]) + max(x[i], 0.0)
""")
    x = kl.array(np.array([0.1, -0.2, 0.3], np.float32))
    out = kl.zeros(3)
    kl.launch(shell.user_ns["both"], 3, inputs=[x, out])
    xs = x.numpy().astype(np.float64)
    np.testing.assert_allclose(out.numpy(), 2 * np.sin(xs) + np.maximum(xs, 0), rtol=1e-6)


def test_notebook_constants_and_funcs_resolve(shell):
    ok(shell, "import kernlab as kl\nSCALE = 3.0\n"
              "@kl.func\ndef twice(v: float):\n    return 2.0 * v\n")
    ok(shell, """%%kernel
def scaled(x: array(dtype=float32), out: array(dtype=float32)):
    i = tid()
    out[i] = twice(x[i]) * SCALE
""")
    x = kl.array(np.array([1.0, 2.0], np.float32))
    out = kl.zeros(2)
    kl.launch(shell.user_ns["scaled"], 2, inputs=[x, out])
    np.testing.assert_allclose(out.numpy(), [6.0, 12.0])


def test_func_and_func_grad_decorators_keep_their_meaning(shell):
    ok(shell, """%%kernel
@func
def cube(v: float):
    return v * v * v

@func_grad(cube)
def adj_cube(v: float, adj_ret: float):
    adjoint[v] += 30.0 * adj_ret

def apply_cube(x: array(dtype=float32), out: array(dtype=float32)):
    i = tid()
    out[i] = cube(x[i])
""")
    assert isinstance(shell.user_ns["cube"], kl.Func)
    assert isinstance(shell.user_ns["apply_cube"], kl.Kernel)
    x = kl.array(np.array([2.0], np.float32), requires_grad=True)
    out = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(shell.user_ns["apply_cube"], 1, inputs=[x, out])
    tape.backward(grads={out: kl.ones(1)})
    assert out.numpy()[0] == 8.0
    assert x.grad.numpy()[0] == 30.0  # the custom gradient, not 3 x^2


def test_other_names_the_cell_defines_land_in_the_namespace(shell):
    ok(shell, """%%kernel
N_ITEMS = 7
def use_n(out: array(dtype=int32)):
    out[0] = N_ITEMS
""")
    assert shell.user_ns["N_ITEMS"] == 7
    out = kl.zeros(1, dtype=kl.int32)
    kl.launch(shell.user_ns["use_n"], 1, inputs=[out])
    assert out.numpy()[0] == 7


def test_a_kernel_can_be_launched_in_its_own_cell(shell):
    ok(shell, """%%kernel
import numpy as np
def fill(out: array(dtype=float32)):
    out[tid()] = 5.0
filled = kl.zeros(3)
kl.launch(fill, 3, inputs=[filled])
""")
    np.testing.assert_array_equal(shell.user_ns["filled"].numpy(), [5.0, 5.0, 5.0])


def test_explicit_kernel_decorator_keeps_its_options_and_gets_the_cells(shell):
    ok(shell, """%%kernel --no-bounds-check
@kernel(bounds_check=True)
def checked(out: array(dtype=float32)):
    out[tid()] = 1.0

def unchecked(out: array(dtype=float32)):
    out[tid()] = 1.0
""")
    assert shell.user_ns["checked"].bounds_check() is True
    assert shell.user_ns["unchecked"].bounds_check() is False


def test_cell_source_is_registered_with_cell_line_numbers(shell):
    ok(shell, "%%kernel\n\n\ndef late(out: array(dtype=float32)):\n    out[tid()] = 1.0\n")
    k = shell.user_ns["late"]
    assert k.pyfunc.__code__.co_firstlineno == 4  # the %%kernel line is line 1
    assert inspect.getsource(k.pyfunc).startswith("def late(out")
    assert k.ir.loc.line == 4


def test_rerunning_a_changed_cell_redefines_the_kernel(shell):
    ok(shell, SAXPY.format(opts=""))
    first = shell.user_ns["saxpy"]
    ok(shell, SAXPY.format(opts="").replace("a * x[i] + y[i]", "a * x[i] - y[i]"))
    second = shell.user_ns["saxpy"]
    assert second is not first
    np.testing.assert_allclose(launch_saxpy(second), 2.0 * np.arange(4) - 1.0)


# ---- the summary --------------------------------------------------------------------------

def test_summary_is_deterministic_text_and_html_with_timing(shell):
    result, _ = ok(shell, SAXPY.format(opts=""))
    summary = result.result
    expected = ("%%kernel: 1 kernel for cpu (interp)\n"
                "  kernel saxpy(x: array(float32, ndim=1), y: array(float32, ndim=1), "
                "out: array(float32, ndim=1), a: float32)")
    assert repr(summary) == expected
    again, _ = ok(shell, SAXPY.format(opts=""))
    assert repr(again.result) == expected
    html = summary._repr_html_()
    assert "saxpy" in html and " ms" in html and "cache" in html
    bundle = summary._repr_mimebundle_()
    assert bundle["text/plain"] == expected and "text/html" in bundle


def test_quiet_displays_no_summary(shell):
    result, _ = ok(shell, SAXPY.format(opts=" --quiet"))
    assert result.result is None


def test_non_differentiable_kernel_compiles_and_says_so(shell):
    result, _ = ok(shell, """%%kernel
def inplace(x: array(dtype=float32)):
    i = tid()
    x[0] = x[0] * x[i]  # every thread overwrites element 0: no copy makes this exact
""")
    assert "inplace: no adjoint:" in repr(result.result)


def test_no_adjoint_option_skips_the_adjoint(shell):
    result, _ = ok(shell, """%%kernel --no-adjoint
def inplace2(x: array(dtype=float32)):
    i = tid()
    x[i] = x[i] * x[i]
""")
    assert "no adjoint" not in repr(result.result)
    assert shell.user_ns["inplace2"]._adjoint is None


# ---- options ------------------------------------------------------------------------------

@pytest.mark.parametrize("target, expect", [("ir", "kernel saxpy("),
                                            ("adjoint", "adjoint kernel saxpy(")])
def test_show_displays_the_ir_listing(shell, target, expect):
    _, cap = ok(shell, SAXPY.format(opts=f" --show {target}"))
    texts = [o.data["text/plain"] for o in cap.outputs]
    listing = next(t for t in texts if expect in t)
    assert "# cell [" in listing  # every op carries its cell line
    html = next(o.data["text/html"] for o in cap.outputs if expect in o.data["text/plain"])
    assert "<span" in html  # highlighted by pygments


@pytest.mark.parametrize("target", ["llvm", "cuda", "ptx"])
def test_show_machine_listings_or_why_not(shell, target):
    _, cap = ok(shell, SAXPY.format(opts=f" --show {target}"))
    text = cap.outputs[0].data["text/plain"]
    if target == "llvm":
        assert "define" in text or "Error" in text
    else:
        assert text.startswith("not available:") or "saxpy" in text


def test_show_may_be_given_twice(shell):
    _, cap = ok(shell, SAXPY.format(opts=" --show ir --show adjoint"))
    texts = [o.data["text/plain"] for o in cap.outputs]
    assert any(t.startswith("kernel saxpy(") for t in texts)
    assert any(t.startswith("adjoint kernel saxpy(") for t in texts)


def test_no_bounds_check_option_reaches_the_kernel(shell):
    ok(shell, SAXPY.format(opts=" --no-bounds-check"))
    assert shell.user_ns["saxpy"].bounds_check() is False
    ok(shell, SAXPY.format(opts=""))
    assert shell.user_ns["saxpy"].bounds_check() is True


def test_device_option_names_the_device(shell):
    result, _ = ok(shell, SAXPY.format(opts=" --device cpu"))
    assert "for cpu" in repr(result.result)


def test_unavailable_device_fails_the_cell(shell):
    result, _ = run(shell, SAXPY.format(opts=" --device cuda:97"))
    assert not result.success
    assert isinstance(result.error_in_exec, UsageError)
    assert "cuda:97" in str(result.error_in_exec)


def test_bad_option_fails_the_cell(shell):
    result, _ = run(shell, SAXPY.format(opts=" --show everything"))
    assert not result.success


def test_backend_option_pins_how_the_kernel_runs(shell, monkeypatch):
    ok(shell, SAXPY.format(opts=" --backend interp"))
    k = shell.user_ns["saxpy"]
    from kernlab.backends.interp import Interpreter
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")
    assert isinstance(k.compiled("llvm"), Interpreter)
    np.testing.assert_allclose(launch_saxpy(k), 2.0 * np.arange(4) + 1.0)


def test_lazy_option_defers_compile_errors_to_the_launch(shell):
    ok(shell, "%%kernel --lazy\ndef later(x: array(dtype=float32)):\n"
              "    x[tid()] = sin(x[0], 2.0)\n")
    with pytest.raises(KernelTypeError):
        kl.launch(shell.user_ns["later"], 1, inputs=[kl.zeros(1)])


def test_llvm_backend_compiles_eagerly_and_reports_the_cache(shell, monkeypatch):
    pytest.importorskip("llvmlite")
    monkeypatch.setattr(kl.config, "cpu_backend", "llvm")
    # forward code only: the adjoint's cache key is not yet stable across rebuilds
    first, _ = ok(shell, SAXPY.format(opts=" --no-adjoint"))
    again, _ = ok(shell, SAXPY.format(opts=" --no-adjoint"))
    assert first.result.entries[0].status in ("compiled", "cache hit (disk)",
                                              "cache hit (memory)")
    assert again.result.cache_hit
    np.testing.assert_allclose(launch_saxpy(shell.user_ns["saxpy"]), 2.0 * np.arange(4) + 1)


# ---- errors ---------------------------------------------------------------------------------

BAD = """%%kernel
def fine(x: array(dtype=float32)):
    x[tid()] = 1.0

def broken(x: array(dtype=float32)):
    i = tid()
    x[i] = sin(x[i], 2.0)
"""


def test_compile_error_fails_the_cell_at_the_cell_line(shell):
    result, _ = run(shell, BAD)
    assert not result.success
    err = result.error_in_exec
    assert isinstance(err, KernelTypeError)
    assert err.lineno == 7  # counted from the %%kernel line, as the editor shows
    assert "line 7, in kernel 'broken'" in str(err)
    assert "   7 |     x[i] = sin(x[i], 2.0)" in str(err)
    assert "^^^" in str(err)


def test_compile_error_is_shown_without_internal_frames(shell):
    result, cap = run(shell, BAD)
    shown = cap.stdout + cap.stderr
    assert "KernelTypeError: no overload of sin()" in shown
    assert "   7 |     x[i] = sin(x[i], 2.0)" in shown
    for internal in ("magic.py", "kernel.py", "frontend", "Traceback"):
        assert internal not in shown
    assert result.error_in_exec._render_traceback_()[0].startswith("KernelTypeError:")


def test_error_in_a_later_cell_line_after_blank_lines(shell):
    result, _ = run(shell, "%%kernel\n\n\n\ndef nameless(x: array(dtype=float32)):\n"
                           "    x[tid()] = undefined_name\n")
    assert not result.success
    assert result.error_in_exec.lineno == 6
    assert "undefined_name" in str(result.error_in_exec)


def test_python_syntax_error_reports_the_cell_line(shell):
    result, _ = run(shell, "%%kernel\ndef oops(x: array(dtype=float32)):\n    x[tid()] = (\n")
    assert not result.success
    assert isinstance(result.error_in_exec, SyntaxError)
    assert result.error_in_exec.lineno >= 3


def test_failed_cell_leaves_earlier_definitions_alone(shell):
    ok(shell, SAXPY.format(opts=""))
    before = shell.user_ns["saxpy"]
    run(shell, BAD.replace("broken", "saxpy"))
    assert shell.user_ns["saxpy"] is before


def test_launch_errors_from_a_plain_cell_show_the_message_and_user_lines_only(shell):
    ok(shell, "import kernlab as kl\nimport numpy as np\n"
              "@kl.kernel\n"
              "def past_end(a: kl.array(dtype=float)):\n"
              "    i = kl.tid()\n"
              "    a[i + 1] = 1.0\n")
    ok(shell, "def step(a):\n    kl.launch(past_end, dim=4, inputs=[a])\n")
    result, cap = run(shell, "a = kl.zeros(4, dtype=float)\nstep(a)\n")
    assert isinstance(result.error_in_exec, IndexError)
    out = cap.stdout
    assert "KernelIndexError" in out and "past_end" in out and "a[i + 1] = 1.0" in out
    assert "step(a)" in out and "kl.launch(past_end" in out  # the user's own lines
    assert "kernlab/runtime" not in out and "interactiveshell.py" not in out


def test_python_syntax_error_in_a_kernel_cell_names_this_cell_without_frames(shell):
    result, cap = run(shell, "%%kernel\ndef oops(x: array(dtype=float32)):\n"
                             "    x[tid()] = 1.0 +* 2.0\n")
    err = result.error_in_exec
    assert isinstance(err, SyntaxError) and err.lineno == 3
    shown = cap.stdout + cap.stderr
    assert f"Cell In[{shell.execution_count}], line 3" in shown  # as Python shows it
    assert "x[tid()] = 1.0 +* 2.0" in shown and "SyntaxError: invalid syntax" in shown
    caret = shown.splitlines()[2]
    assert shown.splitlines()[1][caret.index("^")] == "*"  # under the offending token
    assert "magic.py" not in shown and "Traceback" not in shown


def test_error_names_the_cell_number_of_a_cell_that_stores_history(shell):
    number = shell.execution_count  # the number this cell gets; it is counted up as it starts
    with capture_output() as cap:
        result = shell.run_cell(BAD, store_history=True)
    assert not result.success and result.execution_count == number
    assert f"--> cell [{number}], line 7" in cap.stdout + cap.stderr


def test_a_cell_kernel_runs_forward_mode(shell):
    ok(shell, SAXPY.format(opts=""))
    saxpy = shell.user_ns["saxpy"]
    x = kl.array(np.arange(4, dtype=np.float32))
    y = kl.array(np.ones(4, dtype=np.float32))
    out, d_out = kl.zeros(4), kl.zeros(4)
    dx = kl.array(np.full(4, 0.5, dtype=np.float32))
    # out = a x + y; along x's tangent dx and a's tangent 1: d(out) = a dx + x
    kl.launch(saxpy, 4, inputs=[x, y, out, 3.0], tangent=True,
              tan_inputs=[dx, None, d_out, 1.0])
    np.testing.assert_allclose(d_out.numpy(), 3.0 * 0.5 + np.arange(4))
    assert "tangent kernel saxpy" in kl.source(saxpy, "ir", tangent=True)
