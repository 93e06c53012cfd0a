"""What a new user meets first: suggestions for misspelt names, short tracebacks in scripts,
and a demo that tells a compile from a cache hit."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kernlab as kl
import kernlab as wp
from kernlab import tracebacks

ROOT = Path(__file__).resolve().parents[1]


def _compile_error(kernel):
    with pytest.raises(kl.KernelError) as info:
        kl.launch(kernel, dim=1, inputs=[kl.zeros(1)])
    return info.value


def test_misspelt_builtin_attribute_suggests_the_builtin():
    @kl.kernel
    def k(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = kl.sine(x[i])

    err = _compile_error(k)
    assert err.message == "'kl' has no attribute 'sine'; did you mean kl.sin?"


def test_suggestion_uses_the_name_kernlab_was_imported_as():
    @kl.kernel
    def k(x: kl.array(dtype=float)):
        i = wp.tid()
        x[i] = wp.sqrtt(x[i])

    assert _compile_error(k).message.endswith("did you mean wp.sqrt?")


def test_misspelt_bare_builtin_suggests_it_through_the_module():
    @kl.kernel
    def k(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = lenght(x[i])  # noqa: F821

    msg = _compile_error(k).message
    assert msg.startswith("name 'lenght' is not defined")
    # this module binds kernlab both as kl and as wp; either spelling names the builtin
    assert msg.endswith(("did you mean kl.length?", "did you mean wp.length?"))


def test_misspelt_local_suggests_the_local():
    @kl.kernel
    def k(x: kl.array(dtype=float)):
        i = kl.tid()
        total = x[i] + 1.0
        x[i] = totl * 2.0  # noqa: F821

    assert _compile_error(k).message == "name 'totl' is not defined; did you mean 'total'?"


def test_unrelated_name_gets_no_suggestion():
    @kl.kernel
    def k(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = qqqzx(x[i])  # noqa: F821

    assert _compile_error(k).message == "name 'qqqzx' is not defined"


def test_kernlab_leaves_pythons_excepthook_alone_under_pytest():
    assert sys.excepthook is not tracebacks.excepthook


SCRIPT = textwrap.dedent("""
    import kernlab as kl

    @kl.kernel
    def broken(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = kl.sine(x[i])

    def user_helper():
        kl.launch(broken, dim=1, inputs=[kl.zeros(1)])  # LAUNCH LINE

    user_helper()
""")


def _run_script(tmp_path, text, **env):
    script = tmp_path / "script.py"
    script.write_text(text)
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), KERNLAB_CACHE_DIR=str(tmp_path / "c"))
    full_env.pop("KERNLAB_TRACEBACK", None)
    full_env.update(env)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert proc.returncode == 1
    return proc.stderr


def _frames(stderr):
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("File ")]


def test_script_traceback_ends_at_the_users_call(tmp_path):
    err = _run_script(tmp_path, SCRIPT)
    frames = _frames(err)
    assert len(frames) == 2 and all("script.py" in f for f in frames), err
    assert "# LAUNCH LINE" in err
    assert "'kl' has no attribute 'sine'; did you mean kl.sin?" in err
    assert "KERNLAB_TRACEBACK=full" in err.splitlines()[-1]


def test_full_traceback_on_request(tmp_path):
    err = _run_script(tmp_path, SCRIPT, KERNLAB_TRACEBACK="full")
    internal = [f for f in _frames(err) if os.sep + "kernlab" + os.sep in f]
    assert internal, err
    assert "hidden" not in err


def test_other_exceptions_keep_their_traceback(tmp_path):
    err = _run_script(tmp_path, "import kernlab\nimport json\njson.loads('{')\n")
    assert any("json" + os.sep in f for f in _frames(err)), err
    assert "hidden" not in err


def test_demo_says_compiled_then_cache_hit(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERNLAB_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-m", "kernlab.demo"], capture_output=True,
                           text=True, env=env, timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    first, second = (r.stdout.splitlines() for r in runs)
    ran = [line for line in first if line.startswith("ran ")]
    assert len(ran) == 2 and all("(compiled in" in line for line in ran), first
    assert any((tmp_path / "cache").iterdir())  # what the second run can load
    ran = [line for line in second if line.startswith("ran ")]
    assert len(ran) == 2 and all("a cache hit: loaded from the disk cache" in line
                                 and "compiled in" not in line for line in ran), second
