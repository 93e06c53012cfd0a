"""The two tiers of CPU machine code (backends/llvm/tiers.py): a small loop-free kernel runs
quick code at once and the O2 code once the helper thread has it; both give the same
results, large launches never run the quick code, and the disk cache gets the optimised
object."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernlab as kl
from kernlab import config
from kernlab.backends.llvm import compile_kernel, jit, tiers, variants
from kernlab.runtime import cache
from kernlab.runtime.array import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _kernels():
    """Fresh kernels (new IR objects each call, so nothing comes from the memo)."""
    @kl.kernel
    def mix(x: kl.array(dtype=float), y: kl.array(dtype=float), z: kl.array(dtype=float),
            a: float):
        i = kl.tid()
        z[i] = a * kl.sin(x[i]) + kl.sqrt(kl.abs(y[i])) * x[i] - kl.exp(-y[i] * y[i])

    @kl.kernel
    def looped(x: kl.array(dtype=float), n: int):
        i = kl.tid()
        t = x[i]
        for k in range(n):
            t = t * 0.5 + 1.0
        x[i] = t
    return mix, looped


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(variants, "_memo", {})  # (the memo lives in variants.py)
    monkeypatch.setattr(config, "cache_dir", "")
    monkeypatch.setattr(tiers, "ENABLED", True)
    yield
    tiers.wait()


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


def _numpy_mix(xs, ys, a):
    xs, ys = xs.astype(np.float64), ys.astype(np.float64)
    return a * np.sin(xs) + np.sqrt(np.abs(ys)) * xs - np.exp(-ys * ys)


def test_quick_and_optimised_code_agree_bit_for_bit(fresh, monkeypatch):
    mix, _ = _kernels()
    xs, ys = _inputs(1000)
    # the quick code alone: the optimised compile is held back until we let it run
    held = []
    monkeypatch.setattr(tiers, "_submit", held.append)
    runner = compile_kernel(mix.ir, bounds_check=True)
    assert runner.entry.symbol.endswith(".quick") and runner.entry.upgrade is None
    quick_out = array(np.zeros(1000, np.float32))
    runner.launch((1000,), [array(xs), array(ys), quick_out, 1.5])
    (job,) = held
    job.run(jit._new_target_machine())  # what the helper thread does
    assert runner.entry.upgrade is not None and not runner.entry.upgrade.symbol.endswith(".quick")
    fast_out = array(np.zeros(1000, np.float32))
    runner.launch((1000,), [array(xs), array(ys), fast_out, 1.5])
    np.testing.assert_allclose(quick_out.numpy(), _numpy_mix(xs, ys, 1.5), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(quick_out.numpy(), fast_out.numpy())


def test_the_trampoline_switches_every_caller_to_the_optimised_code(fresh):
    mix, _ = _kernels()
    runner = compile_kernel(mix.ir, bounds_check=True)
    raw = runner.inline_entry()  # launch.py's short path holds this from its first launch
    assert tiers.wait(timeout=120)
    upgraded = runner.entry.upgrade
    assert upgraded is not None
    # a later runner of the same variant gets the optimised entry itself
    assert compile_kernel(mix.ir, bounds_check=True).entry is upgraded
    xs, ys = _inputs(64, seed=1)
    out = array(np.zeros(64, np.float32))
    runner.launch((64,), [array(xs), array(ys), out, -0.5])
    np.testing.assert_allclose(out.numpy(), _numpy_mix(xs, ys, -0.5), rtol=1e-5, atol=1e-6)
    assert raw is not None


def test_a_large_launch_waits_for_the_optimised_code(fresh, monkeypatch):
    mix, _ = _kernels()
    runner = compile_kernel(mix.ir, bounds_check=True)
    waited = []
    real_wait = tiers.wait
    monkeypatch.setattr(tiers, "wait", lambda timeout=None: waited.append(1) or real_wait())
    n = jit.PARALLEL_THRESHOLD + 10
    xs, ys = _inputs(n, seed=2)
    out = array(np.zeros(n, np.float32))
    runner.launch((n,), [array(xs), array(ys), out, 2.0])
    assert waited and runner.entry.upgrade is not None
    np.testing.assert_allclose(out.numpy(), _numpy_mix(xs, ys, 2.0), rtol=1e-5, atol=1e-6)


def test_kernels_with_loops_compile_optimised_at_once(fresh):
    _, looped = _kernels()
    runner = compile_kernel(looped.ir, bounds_check=True)
    assert not runner.entry.symbol.endswith(".quick")
    x = array(np.full(4, 3.0, np.float32))
    runner.launch((4,), [x, 3])
    expected = 3.0
    for _ in range(3):
        expected = expected * 0.5 + 1.0
    np.testing.assert_array_equal(x.numpy(), np.full(4, expected, np.float32))


def test_switched_off_everything_compiles_optimised(fresh, monkeypatch):
    monkeypatch.setattr(tiers, "ENABLED", False)
    mix, _ = _kernels()
    assert not compile_kernel(mix.ir, bounds_check=True).entry.symbol.endswith(".quick")


def test_gradients_are_the_same_on_both_tiers(fresh, monkeypatch):
    """The adjoint of the same launch, once on quick code and once on optimised code,
    against the analytic derivative."""
    mix, _ = _kernels()
    xs, ys = _inputs(256, seed=3)
    grads = []
    for tier in ("quick", "optimised"):
        monkeypatch.setattr(variants, "_memo", {})  # (the memo lives in variants.py)
        if tier == "quick":
            monkeypatch.setattr(tiers, "_submit", lambda job: None)
        else:
            monkeypatch.setattr(tiers, "ENABLED", False)
        x, y = kl.array(xs, requires_grad=True), kl.array(ys, requires_grad=True)
        z = kl.zeros(256, dtype=float, requires_grad=True)
        mix2, _ = _kernels()  # a fresh kernel: its variants compile on this tier
        with kl.Tape() as tape:
            kl.launch(mix2, 256, inputs=[x, y, z, 0.75])
        tape.backward(grads={z: kl.ones(256, dtype=float)})
        grads.append((x.grad.numpy().copy(), y.grad.numpy().copy()))
    x64, y64 = xs.astype(np.float64), ys.astype(np.float64)
    dx = 0.75 * np.cos(x64) + np.sqrt(np.abs(y64))
    dy = np.sign(y64) * x64 / (2 * np.sqrt(np.abs(y64))) + 2 * y64 * np.exp(-y64 * y64)
    np.testing.assert_allclose(grads[0][0], dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[0][1], dy, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import kernlab as kl
    from kernlab.backends.llvm import jit, tiers

    @kl.kernel
    def cube(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = x[i] * x[i] * x[i]

    x = kl.array(np.arange(4, dtype=np.float32))
    kl.launch(cube, 4, inputs=[x])
    entry = cube.compiled("llvm").entry
    print(x.numpy().tolist(), entry.symbol.endswith(".quick"), jit.stats["loaded"])
    # exits at once: the interpreter waits for the optimised compile, which fills the cache
""")


def test_the_optimised_object_reaches_the_disk_cache_before_exit(tmp_path):
    script = tmp_path / "cube.py"
    script.write_text(CHILD)
    env = dict(os.environ, KERNLAB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    env.pop("KERNLAB_QUICK_TIER", None)
    outs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        outs.append(done.stdout.strip())
    # first process: quick code, nothing loaded; second: the optimised object from the cache
    assert outs == ["[0.0, 1.0, 8.0, 27.0] True 0", "[0.0, 1.0, 8.0, 27.0] False 1"]


def test_quick_text_renames_the_entry_and_adds_the_trampoline():
    text = ('define void @"kl_k_1"(ptr %"args", i64 %"start", i64 %"end")\n'
            '{\nentry:\n  ret void\n}\n')
    out = tiers.quick_text(text, "kl_k_1")
    assert 'define internal void @"kl_k_1.body"(' in out
    assert 'define void @"kl_k_1.quick"(' in out and '@"kl_k_1.slot" = global ptr null' in out
    with pytest.raises(ValueError):
        tiers.quick_text(text, "kl_other")
