"""The front end's results in the compile cache (runtime/ir_cache.py): a kernel's IR and
adjoint IR are loaded instead of rebuilt when nothing they depend on changed, rebuilt when
a called func's source or a constant's value changed, and an entry tampered with is
rejected and rebuilt. Kernels come from module files written here, as a user's would."""
import itertools
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import kernlab as kl
from kernlab.frontend import lower
from kernlab.ir.nodes import Value
from kernlab.runtime import cache, ir_cache
from kernlab.types import float32
from test_reliability import child_env

_names = itertools.count()

MODULE = """\
import kernlab as kl

SCALE = kl.constant({scale})


@kl.kernel
def scaled(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = bump(x[i]) * SCALE


@kl.func
def bump(v: float):
    return v * v + {offset}
"""


def load_module(path, text):
    """Write ``text`` to ``path`` (a new modification time) and import it afresh."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    if path.stat().st_mtime_ns == before:  # a coarse clock: make the change visible
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))
    module = types.ModuleType(f"ir_cache_mod_{next(_names)}")  # no bytecode cache: its
    module.__file__ = str(path)  # check (whole seconds and size) could miss the edit
    sys.modules[module.__name__] = module
    exec(compile(text, str(path), "exec"), module.__dict__)  # noqa: S102
    return module


def front_end_runs(monkeypatch) -> list:
    calls = []
    real = lower.source_to_ir

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)
    monkeypatch.setattr(lower, "source_to_ir", counting)
    monkeypatch.setattr("kernlab.frontend.source_to_ir", counting)
    return calls


def run_forward_and_adjoint(kernel, xs):
    """y = kernel(x), then the adjoint with dy = 1: (y, dy/dx)."""
    x, y = kl.array(xs), kl.zeros(len(xs))
    kl.launch(kernel, len(xs), inputs=[x, y])
    adj_x = kl.zeros(len(xs))
    kl.launch(kernel, len(xs), inputs=[x, y], adj_inputs=[adj_x, kl.ones(len(xs))],
              adjoint=True)
    return y.numpy(), adj_x.numpy()


XS = np.array([0.5, -1.0, 2.0], np.float32)


def expected(scale, offset):
    x = XS.astype(np.float64)
    return (x * x + offset) * scale, 2 * x * scale


def check(kernel, scale, offset):
    y, dx = run_forward_and_adjoint(kernel, XS)
    want_y, want_dx = expected(scale, offset)
    np.testing.assert_allclose(y, want_y, rtol=1e-6)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-6)


def test_a_second_definition_loads_ir_and_adjoint_from_the_cache(cache_dir, tmp_path,
                                                                  monkeypatch):
    path = tmp_path / "kernels_a.py"
    runs = front_end_runs(monkeypatch)
    first = load_module(path, MODULE.format(scale=2.0, offset=1.0)).scaled
    check(first, 2.0, 1.0)
    assert runs == ["scaled"]
    mark = Value(float32).id
    second = load_module(path, MODULE.format(scale=2.0, offset=1.0)).scaled  # the same text
    check(second, 2.0, 1.0)
    assert runs == ["scaled"]  # neither the IR nor the adjoint was rebuilt
    assert second._ir is not first._ir
    assert "scaled" in kl.source(second, adjoint=True)  # the loaded IR prints
    ids = [v.id for v in second._ir.vars] + [p.value.id for p in second._ir.params]
    assert len(set(ids)) == len(ids) and min(ids) > mark  # numbered anew in this process


@pytest.mark.parametrize("change", ["func source", "constant value"])
def test_a_change_in_a_called_func_or_a_constant_rebuilds(cache_dir, tmp_path, monkeypatch,
                                                          change):
    path = tmp_path / f"kernels_{change.replace(' ', '_')}.py"
    runs = front_end_runs(monkeypatch)
    check(load_module(path, MODULE.format(scale=2.0, offset=1.0)).scaled, 2.0, 1.0)
    scale, offset = (2.0, 3.0) if change == "func source" else (5.0, 1.0)
    changed = load_module(path, MODULE.format(scale=scale, offset=offset)).scaled
    check(changed, scale, offset)
    assert runs == ["scaled", "scaled"]


TRAILING = """\
import kernlab as kl


@kl.kernel
def checked(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * 2.0

    # a trailing assert leaves no bytecode under python -O
    assert x[i] {op} 0.0


LATER = 1
"""


def test_an_edit_to_a_trailing_statement_without_bytecode_changes_the_key(cache_dir,
                                                                          tmp_path):
    """Under python -O a kernel's last assert compiles to nothing, so the code object's
    lines end before it; the key must still cover it (stale IR otherwise)."""
    path = tmp_path / "kernels_trailing.py"
    keys = []
    for op in (">=", "<"):
        text = TRAILING.format(op=op)
        path.write_text(text)
        module = types.ModuleType(f"ir_cache_mod_{next(_names)}")
        module.__file__ = str(path)
        exec(compile(text, str(path), "exec", optimize=1), module.__dict__)  # noqa: S102
        code = module.checked.pyfunc.__code__
        assert max(line for *_, line in code.co_lines() if line) < text.count("\n") - 3
        keys.append(ir_cache.kernel_key(module.checked))
    assert None not in keys and keys[0] != keys[1]


def test_a_tampered_ir_entry_is_rejected_and_rebuilt(cache_dir, tmp_path, monkeypatch):
    path = tmp_path / "kernels_tampered.py"
    runs = front_end_runs(monkeypatch)
    first = load_module(path, MODULE.format(scale=2.0, offset=1.0)).scaled
    check(first, 2.0, 1.0)
    key = ir_cache.kernel_key(first)
    entry = cache_dir / (key + cache.SUFFIX)
    blob = bytearray(entry.read_bytes())
    blob[-20] ^= 0xFF  # one byte of the pickled IR
    entry.write_bytes(bytes(blob))
    again = load_module(path, MODULE.format(scale=2.0, offset=1.0)).scaled
    assert ir_cache.kernel_key(again) == key
    check(again, 2.0, 1.0)
    assert runs == ["scaled", "scaled"]  # the entry read as a miss: built again
    assert cache.load(key) is not None  # and stored anew, authenticated


def test_what_the_key_cannot_vouch_for_is_not_cached(cache_dir, tmp_path):
    helper = tmp_path / "ir_cache_settings.py"
    helper.write_text("N = 3\n")
    sys.path.insert(0, str(tmp_path))
    try:
        module = load_module(tmp_path / "kernels_uncacheable.py", textwrap.dedent("""\
            import kernlab as kl
            import ir_cache_settings


            @kl.kernel
            def reads_a_module(y: kl.array(dtype=float)):
                y[kl.tid()] = float(ir_cache_settings.N)


            @kl.kernel
            def uses_static(y: kl.array(dtype=float)):
                y[kl.tid()] = kl.static(1.0 + 2.0)


            @kl.kernel
            def plain(y: kl.array(dtype=float)):
                y[kl.tid()] = 1.0
            """))
    finally:
        sys.path.remove(str(tmp_path))
    assert ir_cache.kernel_key(module.reads_a_module) is None
    assert ir_cache.kernel_key(module.uses_static) is None
    assert ir_cache.kernel_key(module.plain) is not None


def test_a_fresh_process_with_a_warm_cache_skips_the_front_end(tmp_path):
    script = tmp_path / "warm_child.py"
    script.write_text(MODULE.format(scale=2.0, offset=1.0) + textwrap.dedent("""\

        import sys
        import numpy as np
        import kernlab.frontend as fe
        if sys.argv[1] == "warm":  # the front end must not run
            def refuse(*args, **kwargs):
                raise AssertionError("the front end ran")
            fe.source_to_ir = refuse
            import kernlab.frontend.lower as lower
            lower.source_to_ir = refuse
        x = kl.array(np.array([0.5, -1.0, 2.0], np.float32))
        y, adj_x = kl.zeros(3), kl.zeros(3)
        kl.launch(scaled, 3, inputs=[x, y])
        kl.launch(scaled, 3, inputs=[x, y], adj_inputs=[adj_x, kl.ones(3)], adjoint=True)
        print(repr(y.numpy().tolist()), repr(adj_x.numpy().tolist()))
        """))
    env = child_env(tmp_path / "cache")
    outs = [subprocess.run([sys.executable, str(script), phase], env=env, capture_output=True,
                           text=True, timeout=180) for phase in ("cold", "warm")]
    for out in outs:
        assert out.returncode == 0, out.stderr[-2000:]
    want_y, want_dx = expected(2.0, 1.0)
    for out in outs:
        y, dx = _parse(out.stdout)
        np.testing.assert_allclose(y, want_y, rtol=1e-6)
        np.testing.assert_allclose(dx, want_dx, rtol=1e-6)


def _parse(text):
    first, second = text.strip().rsplit("] [", 1)
    return (np.array([float(v) for v in first.strip("[]").split(",")]),
            np.array([float(v) for v in second.strip("[]").split(",")]))
