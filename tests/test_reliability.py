"""Reliability: out-of-bounds accesses, verify_fp, KeyboardInterrupt, memory, the disk cache
under damage and races, and launch validation. Whatever goes wrong inside a kernel, the
process carries on and kernlab stays usable.

Tests that need a fresh process (signals, RSS, the disk cache across processes) run a small
child script; its source is in this file.
"""
import json
import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

import kernlab as kl
from helpers import line_of
from kernlab.errors import KernelFPError
from kernlab.backends.llvm.lower import is_interruptible
from kernlab.runtime import cache

REPO = Path(kl.__file__).resolve().parents[1]




def child_env(cache_dir) -> dict:
    env = dict(os.environ, KERNLAB_CACHE_DIR=str(cache_dir), IPYTHONDIR=str(cache_dir) + "-ipy")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def child_command(source: str, folder: Path, *args) -> list:
    """The command line that runs ``source`` as a script (kernels need a file to read)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"child_{abs(hash(source))}.py"
    script.write_text(textwrap.dedent(source))
    return [sys.executable, str(script), *map(str, args)]


def run_child(source: str, cache_dir: Path, *args, timeout=120) -> subprocess.CompletedProcess:
    """Run ``source`` in a fresh interpreter; it must exit 0."""
    proc = subprocess.run(child_command(source, cache_dir.parent / "scripts", *args),
                          capture_output=True, text=True, timeout=timeout,
                          env=child_env(cache_dir))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


# ---- out of bounds ------------------------------------------------------------------------

@kl.kernel
def read_in_for(a: kl.array(dtype=float), n: int, out: kl.array(dtype=float), off: int):
    s = float(0.0)
    for k in range(n):
        s += a[k + off]
    out[0] = s


@kl.kernel
def write_in_while(a: kl.array(dtype=float), start: kl.int64, step: kl.int64):
    k = start
    while k < kl.int64(100):
        a[k] = 1.0
        k += step


@kl.kernel
def write_in_nested_loops(a: kl.array(dtype=float, ndim=2), n: int):
    i = kl.tid()
    for r in range(n):
        for c in range(n):
            a[r, c + i] = 2.0


@kl.kernel
def atomic_at(a: kl.array(dtype=float), idx: kl.int64):
    a[idx] += 1.0


@kl.kernel
def read_3d(a: kl.array(dtype=float, ndim=3), k: int, out: kl.array(dtype=float)):
    i, j = kl.tid()
    out[0] = a[i, j, k]


@kl.kernel
def vec_at(a: kl.array(dtype=kl.vec3), idx: int):
    a[idx] = kl.vec3(1.0, 2.0, 3.0)


@kl.func
def fetch(a: kl.array(dtype=float), k: int):
    return a[k]


@kl.kernel
def reads_through_a_func(a: kl.array(dtype=float), k: int, out: kl.array(dtype=float)):
    out[0] = fetch(a, k)


@kl.kernel
def gather(x: kl.array(dtype=float), idx: kl.array(dtype=int), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = x[idx[i]] * 2.0


@kl.kernel
def gather_in_loop(x: kl.array(dtype=float), n: int, out: kl.array(dtype=float)):
    i = kl.tid()
    s = float(0.0)
    for k in range(n):
        s += x[i + k] * x[i + k]
    out[i] = s


def assert_index_error(err, kernel, needle, index, shape):
    text = str(err)
    assert isinstance(err, IndexError) and isinstance(err, kl.KernelError)
    assert f"'{kernel.key}'" in text
    assert f"line {line_of(kernel, needle)}" in text
    assert f"index {index} " in text
    assert str(tuple(shape)) in text


def oob_cases():
    n = 5
    return {
        "negative read in a for loop": (
            read_in_for, 1, lambda: [kl.ones(n, dtype=float), 3, kl.zeros(1, dtype=float), -2],
            "s += a[k + off]", -2, (n,)),
        "read past the end in a for loop": (
            read_in_for, 1, lambda: [kl.ones(n, dtype=float), n + 3, kl.zeros(1, dtype=float),
                                     0], "s += a[k + off]", n, (n,)),
        "write past the end in a while loop": (
            write_in_while, 1, lambda: [kl.zeros(n, dtype=float), 0, 1], "a[k] = 1.0", n, (n,)),
        "huge negative write in a while loop": (
            write_in_while, 1, lambda: [kl.zeros(n, dtype=float), -2**40, 1], "a[k] = 1.0",
            -2**40, (n,)),
        "huge atomic add": (
            atomic_at, 1, lambda: [kl.zeros(n, dtype=float), 2**40], "a[idx] += 1.0", 2**40,
            (n,)),
        "write in nested loops, second axis": (
            write_in_nested_loops, 2, lambda: [kl.zeros((3, 3), dtype=float), 3],
            "a[r, c + i] = 2.0", 3, (3, 3)),
        "atomic add past the end": (
            atomic_at, 1, lambda: [kl.zeros(n, dtype=float), n], "a[idx] += 1.0", n, (n,)),
        "atomic add at int64 min": (
            atomic_at, 1, lambda: [kl.zeros(n, dtype=float), -2**63], "a[idx] += 1.0", -2**63,
            (n,)),
        "third axis of a 3-d array": (
            read_3d, (2, 2), lambda: [kl.zeros((2, 2, 4), dtype=float), 4,
                                      kl.zeros(1, dtype=float)],
            "out[0] = a[i, j, k]", 4, (2, 2, 4)),
        "vector array": (
            vec_at, 1, lambda: [kl.zeros(n, dtype=kl.vec3), -1], "a[idx] = kl.vec3", -1, (n,)),
        "read inside a func": (
            None, 1, lambda: [kl.ones(n, dtype=float), 7, kl.zeros(1, dtype=float)],
            "return a[k]", 7, (n,)),
        "index read from an array": (
            gather, 3, lambda: [kl.ones(n, dtype=float), kl.array(np.array([0, 1, 9]), dtype=int),
                                kl.zeros(3, dtype=float)],
            "out[i] = x[idx[i]] * 2.0", 9, (n,)),
    }


@pytest.mark.parametrize("case", list(oob_cases()))
def test_planted_out_of_bounds_access_raises_index_error(backend, case):
    kernel, dim, make_args, needle, index, shape = oob_cases()[case]
    where = fetch if kernel is None else kernel
    kernel = kernel or reads_through_a_func
    with pytest.raises(IndexError) as info:
        kl.launch(kernel, dim, inputs=make_args())
    text = str(info.value)
    assert f"'{kernel.key}'" in text
    assert f"line {line_of(where, needle)}" in text
    assert f"index {index} " in text and str(tuple(shape)) in text
    # and the process carries on: the same kernel runs cleanly afterwards
    a = kl.zeros(3, dtype=float)
    kl.launch(atomic_at, 1, inputs=[a, 2])
    assert a.numpy().tolist() == [0.0, 0.0, 1.0]


def test_out_of_bounds_inside_a_loop_of_a_large_threaded_launch(backend):
    n = 200_000 if backend == "llvm" else 500
    x, out = kl.ones(n, dtype=float), kl.zeros(n, dtype=float)
    with pytest.raises(IndexError) as info:
        kl.launch(gather_in_loop, n, inputs=[x, 4, out])
    assert_index_error(info.value, gather_in_loop, "s += x[i + k] * x[i + k]", n, (n,))
    kl.launch(gather_in_loop, n - 3, inputs=[x, 4, out])
    assert out.numpy()[0] == 4.0


def test_out_of_bounds_inside_the_adjoint(backend):
    x = kl.ones(4, dtype=float, requires_grad=True)
    out = kl.zeros(3, dtype=float, requires_grad=True)
    idx = kl.array(np.array([0, 1, 7]), dtype=int)
    with pytest.raises(IndexError) as info:
        kl.launch(gather, 3, inputs=[x, idx], outputs=[out], adj_inputs=[x.grad, None],
                  adj_outputs=[out.grad], adjoint=True)
    assert_index_error(info.value, gather, "out[i] = x[idx[i]] * 2.0", 7, (4,))


def test_out_of_bounds_in_the_backward_pass_of_a_tape(backend):
    x = kl.ones(6, dtype=float, requires_grad=True)
    out = kl.zeros(4, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(gather_in_loop, 4, inputs=[x, 3, out])
    tape.backward(grads={out: kl.ones(4, dtype=float)})
    assert x.grad.numpy().tolist() == [2.0, 4.0, 6.0, 6.0, 4.0, 2.0]
    # the same recorded launch, replayed with a loop count that now runs off the end
    tape.launches[0].params[1] = np.int32(5)
    with pytest.raises(IndexError) as info:
        tape.backward(grads={out: kl.ones(4, dtype=float)})
    assert_index_error(info.value, gather_in_loop, "s += x[i + k] * x[i + k]", 6, (6,))


# ---- verify_fp ----------------------------------------------------------------------------

@kl.kernel
def log_of_some(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = 1.0
    if i == 2:
        y[i] = kl.log(x[i] - 5.0)
    y[i] = y[i] * 1.0


@kl.kernel
def overflowing_sum(y: kl.array(dtype=kl.float64)):
    y[0] += 1.0e308


@kl.kernel
def divides_vectors(x: kl.array(dtype=kl.vec3), d: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = kl.vec3(1.0, 0.0, 0.0) / d[i]


@kl.kernel
def square_root(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = kl.sqrt(x[i])


@kl.kernel
def int_division(x: kl.array(dtype=int), y: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] // 1
    y[i] = 1.0


@pytest.fixture
def verify_fp(monkeypatch):
    monkeypatch.setattr(kl.config, "verify_fp", True)


def test_verify_fp_names_the_store_that_wrote_the_nan(backend, verify_fp):
    x, y = kl.ones(4, dtype=float), kl.zeros(4, dtype=float)
    with pytest.raises(KernelFPError) as info:
        kl.launch(log_of_some, 4, inputs=[x, y])
    err = info.value
    assert isinstance(err, FloatingPointError)
    assert err.loc.line == line_of(log_of_some, "kl.log(x[i] - 5.0)")
    text = str(err)
    assert "'log_of_some'" in text and "nan" in text and "'y'" in text and "(2,)" in text


def test_verify_fp_sees_an_atomic_add_overflow(backend, verify_fp):
    with pytest.raises(KernelFPError) as info:
        kl.launch(overflowing_sum, 2, inputs=[kl.zeros(1, dtype=kl.float64)])
    assert info.value.loc.line == line_of(overflowing_sum, "y[0] += 1.0e308")
    assert "inf" in str(info.value)


def test_verify_fp_checks_every_component_of_a_vector(backend, verify_fp):
    x, d = kl.zeros(3, dtype=kl.vec3), kl.array(np.array([1.0, 0.0, 2.0]), dtype=float)
    with pytest.raises(KernelFPError) as info:
        kl.launch(divides_vectors, 3, inputs=[x, d])
    assert info.value.loc.line == line_of(divides_vectors, "x[i] = kl.vec3(1.0, 0.0, 0.0)")
    assert "(1,)" in str(info.value)


def test_verify_fp_checks_gradients_in_the_backward_pass(backend, verify_fp):
    x = kl.zeros(4, dtype=float, requires_grad=True)
    y = kl.zeros(4, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square_root, 4, inputs=[x], outputs=[y])
    with pytest.raises(KernelFPError) as info:
        tape.backward(grads={y: kl.ones(4, dtype=float)})
    assert info.value.loc.line == line_of(square_root, "y[i] = kl.sqrt(x[i])")
    assert "'adj_x'" in str(info.value)


def test_verify_fp_is_off_by_default(backend):
    x, y = kl.ones(4, dtype=float), kl.zeros(4, dtype=float)
    kl.launch(log_of_some, 4, inputs=[x, y])
    assert np.isnan(y.numpy()[2])


def test_verify_fp_passes_finite_results_and_ignores_integer_arrays(backend, verify_fp):
    x, y = kl.array(np.arange(4), dtype=int), kl.zeros(4, dtype=float)
    kl.launch(int_division, 4, inputs=[x, y])
    kl.launch(log_of_some, 2, inputs=[kl.ones(2, dtype=float), kl.zeros(2, dtype=float)])


# ---- interrupts ---------------------------------------------------------------------------

INTERRUPT_CHILD = r"""
import signal, sys
import numpy as np
import kernlab as kl

signal.signal(signal.SIGINT, signal.default_int_handler)
backend = kl.config.cpu_backend = sys.argv[1]


@kl.kernel
def while_true(x: kl.array(dtype=float)):
    i = kl.tid()
    while True:
        x[i] = x[i] + 1.0


@kl.kernel
def while_data(x: kl.array(dtype=float)):
    i = kl.tid()
    while x[i] > 0.0:
        x[i] = x[i] * 1.0


@kl.kernel
def nested_for(x: kl.array(dtype=float), n: int):
    i = kl.tid()
    for a in range(n):
        for b in range(n):
            x[i] = x[i] + 1.0e-30


@kl.kernel
def carried(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    s = x[i]
    while s > 0.0:
        s = s * 1.0
    y[i] = s


@kl.kernel
def add_one(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] + 1.0


def say(text):
    print(text, flush=True)


big = 200_000 if backend == "llvm" else 2
cases = [("while_true", while_true, 1, False), ("while_data", while_data, 3, False),
         ("nested_for", nested_for, 2, False), ("parallel", while_data, big, False),
         ("adjoint", carried, 2, True)]
for name, kernel, dim, adjoint in cases:
    x = kl.ones(dim, dtype=float, requires_grad=adjoint)
    args = [x, 2**30] if kernel is nested_for else [x]
    if kernel is carried:
        args.append(kl.zeros(dim, dtype=float, requires_grad=True))
    kernel.compiled(backend, adjoint)  # compile before the parent starts its clock
    say(f"ready {name}")
    try:
        if adjoint:
            kl.launch(kernel, dim, inputs=args, adj_inputs=[x.grad],
                      adj_outputs=[args[1].grad], adjoint=True)
        else:
            kl.launch(kernel, dim, inputs=args)
    except KeyboardInterrupt:
        say(f"interrupted {name}")
    else:
        say(f"finished {name}")
y = kl.zeros(4, dtype=float)
kl.launch(add_one, 4, inputs=[y])
kl.launch(while_data, 4, inputs=[kl.zeros(4, dtype=float)])
assert y.numpy().tolist() == [1.0, 1.0, 1.0, 1.0]
say("done")
"""


def _lines(stream, out: queue.Queue):
    for line in stream:
        out.put(line.strip())
    out.put(None)


@pytest.mark.cpu_only("a kernel running on a GPU cannot be stopped from the host")
def test_keyboard_interrupt_stops_an_endless_kernel_within_a_second(backend, tmp_path):
    proc = subprocess.Popen(child_command(INTERRUPT_CHILD, tmp_path, backend),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(tmp_path / "cache"))
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        for name in ("while_true", "while_data", "nested_for", "parallel", "adjoint"):
            assert lines.get(timeout=60) == f"ready {name}"
            time.sleep(0.5)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            assert lines.get(timeout=10) == f"interrupted {name}"
            assert time.monotonic() - sent < 1.0, name
        assert lines.get(timeout=30) == "done"
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


@kl.kernel
def no_loop(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] + 1.0


@kl.kernel
def short_constant_loop(x: kl.array(dtype=float)):
    i = kl.tid()
    for k in range(3):
        x[i] = x[i] + 1.0


@kl.kernel
def runtime_loop(x: kl.array(dtype=float), n: int):
    i = kl.tid()
    for k in range(n):
        x[i] = x[i] + 1.0


def test_only_kernels_with_long_loops_leave_the_main_thread():
    assert not is_interruptible(no_loop.ir)
    assert not is_interruptible(short_constant_loop.ir)
    assert is_interruptible(runtime_loop.ir)
    assert is_interruptible(write_in_while.ir)


def test_kernels_with_loops_run_from_other_threads(backend):
    n = 100_000 if backend == "llvm" else 100
    x = kl.zeros(n, dtype=float)
    errors = []

    def work():
        try:
            kl.launch(runtime_loop, n, inputs=[x, 3])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(60)
    assert not errors and np.all(x.numpy() == 3.0)


# ---- memory -------------------------------------------------------------------------------

MEMORY_CHILD = r"""
import gc, os, sys
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

config = Config()
config.HistoryManager.hist_file = ":memory:"
shell = InteractiveShell.instance(config=config, colors="NoColor")
distinct = sys.argv[1] == "distinct"
rounds = int(sys.argv[2])


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(cell):
    result = shell.run_cell(cell, store_history=True)
    result.raise_error()


CELL = '''%%kernel -q
def step(a: array(dtype=float), s: float):
    i = tid()
    t = a[i]
    for k in range(3 + int(s)):
        t = t * s + {c}
    a[i] = t
'''
run("%load_ext kernlab")
run("import kernlab as kl; x = kl.zeros(1000, dtype=float)")
for k in range(20 + rounds):
    if k == 20:
        gc.collect()
        before = rss_mb()
    run(CELL.format(c=f"{k}.0" if distinct else "1.0"))
    run("kl.launch(step, 1000, inputs=[x, 0.5])")
gc.collect()
print(rss_mb() - before)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc/self/statm")
def test_redefining_a_kernel_cell_500_times_grows_rss_by_less_than_50_mb(tmp_path):
    pytest.importorskip("IPython")
    grown = float(run_child(MEMORY_CHILD, tmp_path / "cache", "same", 500).stdout.split()[-1])
    assert grown < 50, f"RSS grew by {grown:.1f} MB"


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc/self/statm")
def test_compiling_many_distinct_kernels_stays_bounded(tmp_path):
    # Each fresh compile costs ~0.1 MB that kernlab cannot return: llvmlite's PassBuilder
    # leaks its PassInstrumentationCallbacks. This guards against anything worse.
    pytest.importorskip("IPython")
    grown = float(run_child(MEMORY_CHILD, tmp_path / "cache", "distinct", 50).stdout.split()[-1])
    assert grown < 20, f"RSS grew by {grown:.1f} MB for 50 kernels"


def test_arrays_kernels_and_tapes_are_freed_when_unreferenced(backend):
    @kl.kernel
    def scale(a: kl.array(dtype=float), s: float, b: kl.array(dtype=float)):
        i = kl.tid()
        for j in range(i + 1):
            b[i] += a[i] * s

    a = kl.ones(10, dtype=float, requires_grad=True)
    b = kl.zeros(10, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(scale, 10, inputs=[a, 2.0, b])
    tape.backward(grads={b: kl.ones(10, dtype=float)})
    refs = [weakref.ref(o) for o in (scale, a, b, a._data, a.grad, tape)]
    del scale, a, b, tape
    import gc
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def test_an_identical_redefined_kernel_reuses_its_machine_code():
    source = textwrap.dedent("""
        import kernlab as kl

        @kl.kernel
        def twice(a: kl.array(dtype=float)):
            i = kl.tid()
            a[i] = a[i] * 2.0
        """)
    runners = []
    for k in range(3):
        namespace = _exec_source(source, f"<reliability-redefine-{k}>")
        runners.append(namespace["twice"].compiled("llvm"))
    assert len({id(r.entry) for r in runners}) == 1


def _exec_source(source: str, filename: str) -> dict:
    import linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace


# ---- the disk cache -----------------------------------------------------------------------

CACHE_CHILD = r"""
import json, os, sys, time
import numpy as np
import kernlab as kl
from kernlab.backends.llvm import jit
from kernlab.errors import KernelFPError

go = sys.argv[1]
while go != "-" and not os.path.exists(go):  # start together with the other racers
    time.sleep(0.001)

kernels = []
for c in range(6):
    namespace = {}
    source = f'''
import kernlab as kl

@kl.kernel
def poly{c}(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    t = x[i]
    for k in range(int(x[i]) + 2):
        t = t * 0.5 + {c}.0
    y[i] = t
'''
    filename = f"<cache-child-{c}>"
    import linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    kernels.append(namespace[f"poly{c}"])

results, keys = [], {}
for c, kernel in enumerate(kernels):
    x = kl.array(np.linspace(0.0, 3.0, 8), dtype=float)
    y = kl.zeros(8, dtype=float)
    kl.launch(kernel, 8, inputs=[x, y])
    results.append(y.numpy().tolist())
    keys[c] = jit.entry_keys(kernel.ir, True)["fast"]  # the only entry these launches need
print(json.dumps({"stats": jit.stats, "results": results, "keys": keys}))
"""


def _expected_cache_results():
    xs = np.linspace(0.0, 3.0, 8).astype(np.float32)
    out = []
    for c in range(6):
        row = []
        for x in xs:
            t = np.float32(x)
            for _ in range(int(x) + 2):
                t = np.float32(t * np.float32(0.5) + np.float32(c))
            row.append(float(t))
        out.append(row)
    return out


def _cache_run(cache_dir, go="-") -> dict:
    return json.loads(run_child(CACHE_CHILD, cache_dir, go).stdout.splitlines()[-1])


def test_the_cache_folder_and_entries_are_private(tmp_path):
    folder = tmp_path / "cache"
    first = _cache_run(folder)
    assert first["stats"]["compiled"] == 6
    assert folder.stat().st_mode & 0o777 == 0o700
    # each kernel's object code, its IR (ir_cache) and its plan (backends/llvm/variants.py),
    # and the host record (the same file for every kernel)
    entries = list(folder.glob("*.klc"))
    assert len(entries) == 19 and all(e.stat().st_mode & 0o777 == 0o600 for e in entries)
    second = _cache_run(folder)
    assert second["stats"]["loaded"] == 6 and second["stats"]["compiled"] == 0
    assert second["results"] == first["results"]
    np.testing.assert_allclose(second["results"], _expected_cache_results(), rtol=1e-6)


def test_damaged_or_foreign_cache_entries_are_recompiled_never_run(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    first = _cache_run(folder)
    monkeypatch.setattr(kl.config, "cache_dir", str(folder))  # envelopes under its secret
    keys = first["keys"]
    path = {c: folder / f"{keys[str(c)]}.klc" for c in range(6)}
    payload = {c: cache._decode(keys[str(c)], path[c].read_bytes()) for c in range(6)}
    blob = bytearray(path[0].read_bytes())
    blob[-40] ^= 0xFF                                         # a flipped bit in the code
    path[0].write_bytes(bytes(blob))
    path[1].write_bytes(path[1].read_bytes()[:-100])           # truncated
    path[2].write_bytes(path[3].read_bytes())                 # another kernel's entry
    path[3].write_bytes(cache._encode(keys["3"], payload[4]))  # valid envelope, wrong code
    path[4].write_bytes(cache._encode(keys["4"], b"\x7fELF" + b"\x00" * 200))  # not code
    second = _cache_run(folder)
    assert second["stats"]["compiled"] == 5 and second["stats"]["loaded"] == 1
    assert second["results"] == first["results"]
    np.testing.assert_allclose(second["results"], _expected_cache_results(), rtol=1e-6)
    third = _cache_run(folder)  # the damaged entries were replaced by good ones
    assert third["stats"]["loaded"] == 6 and third["stats"]["compiled"] == 0


def test_processes_racing_to_fill_an_empty_cache_leave_it_sound(tmp_path):
    folder, go = tmp_path / "cache", tmp_path / "go"
    racers = [subprocess.Popen(child_command(CACHE_CHILD, tmp_path / "scripts", go),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=child_env(folder)) for _ in range(2)]
    time.sleep(1.0)  # both import kernlab and wait for the signal to start
    go.touch()
    outputs = [r.communicate(timeout=120) for r in racers]
    assert all(r.returncode == 0 for r in racers), [err[-2000:] for _, err in outputs]
    expected = _expected_cache_results()
    for out, _ in outputs:
        np.testing.assert_allclose(json.loads(out.splitlines()[-1])["results"], expected,
                                   rtol=1e-6)
    third = _cache_run(folder)
    assert third["stats"]["loaded"] == 6 and third["stats"]["compiled"] == 0
    np.testing.assert_allclose(third["results"], expected, rtol=1e-6)
    # object code, IR and plan of 6 kernels, the host record; no temporaries left
    assert sorted(p.suffix for p in folder.iterdir() if p.name != cache.SECRET_NAME) \
        == [".klc"] * 19


# ---- launch validation --------------------------------------------------------------------

@kl.kernel
def takes_everything(f: float, n: int, d: kl.float64, u: kl.uint32, w: kl.int64, b: kl.bool,
                     v: kl.vec3, iv: kl.types.vector(3, kl.int32), m: kl.mat22,
                     a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = f


GOOD = dict(f=1.0, n=2, d=3.0, u=4, w=5, b=True, v=(1.0, 2.0, 3.0), iv=(1, 2, 3), m=np.eye(2),
            a=None)
BAD = [
    ("f", "1.0"), ("f", None), ("f", np.str_("1.0")), ("f", b"1"), ("f", 1 + 2j),
    ("f", np.complex128(1.0)), ("f", np.datetime64("2020")), ("f", 10**400), ("f", 1e300),
    ("f", np.float64(-1e39)), ("f", [1.0]), ("f", np.ones(1)), ("f", object()),
    ("n", 2.5), ("n", 2**31), ("n", -2**31 - 1), ("n", "3"), ("n", None), ("n", np.float32(1.5)),
    ("n", np.uint64(2**40)), ("n", float("nan")), ("n", float("inf")), ("n", np.complex64(1)),
    ("u", -1), ("u", 2**32), ("u", 0.5), ("w", 2**63), ("w", -2**63 - 1), ("w", 1e19),
    ("b", 2), ("b", "yes"), ("b", 0.5), ("b", None), ("b", np.array([True, False])),
    ("v", (1.0, 2.0)), ("v", "abc"), ("v", None), ("v", (1 + 1j, 2, 3)), ("v", ("a", "b", "c")),
    ("v", np.ones(4)), ("v", (1e300, 0.0, 0.0)),
    ("iv", (1.5, 2, 3)), ("iv", (2**40, 1, 1)), ("iv", (float("nan"), 1, 1)),
    ("m", np.eye(3)), ("m", "ab"), ("m", None),
    ("a", np.zeros(3, np.float64)), ("a", [1.0, 2.0, 3.0]), ("a", 1.0),
    ("a", "float64"), ("a", "2d"),
]


def _array_arg(kind):
    if not isinstance(kind, str):
        return kind
    if kind == "float64":
        return kl.zeros(3, dtype=kl.float64)
    return kl.zeros((3, 3), dtype=float) if kind == "2d" else kind


@pytest.mark.parametrize("name, value", BAD, ids=[re.sub(r" at 0x[0-9a-f]+", "", f"{n}={v!r}")[:40] for n, v in BAD])
def test_a_bad_argument_is_a_launch_error_naming_the_parameter(backend, name, value):
    args = dict(GOOD, a=kl.zeros(3, dtype=float))
    args[name] = _array_arg(value) if name == "a" else value
    with pytest.raises(kl.LaunchError) as info:
        kl.launch(takes_everything, 3, inputs=list(args.values()))
    assert f"parameter '{name}'" in str(info.value) and "takes_everything" in str(info.value)


def test_none_for_an_array_is_a_null_array_whose_access_is_an_index_error(backend):
    # Warp's null array: None passes, `if a:` is False, and touching it is out of bounds.
    args = dict(GOOD, a=None)
    with pytest.raises(IndexError) as info:
        kl.launch(takes_everything, 3, inputs=list(args.values()))
    assert "'a'" in str(info.value) and "takes_everything" in str(info.value)


def test_an_array_where_a_value_is_expected_is_a_launch_error(backend):
    args = dict(GOOD, a=kl.zeros(3, dtype=float), f=kl.zeros(3, dtype=float))
    with pytest.raises(kl.LaunchError, match="parameter 'f'"):
        kl.launch(takes_everything, 3, inputs=list(args.values()))


@pytest.mark.parametrize("value", [0.0, -0.0, 3.4028234663852886e38, float("inf"), float("nan"),
                                   True, np.float16(2.5), 7, np.int64(-3)])
def test_representable_floats_are_accepted(backend, value):
    args = dict(GOOD, a=kl.zeros(3, dtype=float), f=value)
    kl.launch(takes_everything, 3, inputs=list(args.values()))
    np.testing.assert_array_equal(args["a"].numpy(), np.float32(value))


def test_exact_values_of_every_scalar_type_are_accepted(backend):
    args = dict(GOOD, a=kl.zeros(3, dtype=float), n=np.int64(-2**31), u=np.float64(2**32 - 1),
                w=-2**63, b=np.bool_(False), iv=np.array([1.0, -2.0, 3.0]), d=2**60)
    kl.launch(takes_everything, 3, inputs=list(args.values()))


@pytest.mark.parametrize("dim", [-1, (1, 2, 3, 4, 5), (), "3", 3.0, None, (3, -1), (2.0,),
                                 2**31, (2**16, 2**16)])
def test_a_bad_launch_dim_is_a_launch_error(backend, dim):
    with pytest.raises(kl.LaunchError):
        kl.launch(no_loop, dim, inputs=[kl.zeros(3, dtype=float)])


@pytest.mark.parametrize("device", ["tpu", "cpu:1", 3, "cuda:99"])
def test_a_bad_device_is_a_launch_error(device):
    with pytest.raises(kl.LaunchError, match="device"):
        kl.launch(no_loop, 3, inputs=[kl.zeros(3, dtype=float)], device=device)


def test_adjoint_arguments_are_validated(backend):
    x, out = kl.ones(4, dtype=float), kl.zeros(3, dtype=float)
    idx = kl.array(np.array([0, 1, 2]), dtype=int)
    bad = [([kl.zeros(4, dtype=kl.float64), None], [kl.zeros(3, dtype=float)], "'adj_x'"),
           ([kl.zeros(5, dtype=float), None], [kl.zeros(3, dtype=float)], "of 'x'"),
           ([np.zeros(4, np.float64), None], [kl.zeros(3, dtype=float)], "'x'"),
           ([None, None], [kl.zeros(3, dtype=float), None], "entries")]
    for adj_in, adj_out, needle in bad:
        with pytest.raises(kl.LaunchError, match=needle):
            kl.launch(gather, 3, inputs=[x, idx], outputs=[out], adj_inputs=adj_in,
                      adj_outputs=adj_out, adjoint=True)


def test_recorded_launch_validates_new_parameters_and_dims(backend):
    a = kl.zeros(3, dtype=float)
    cmd = kl.launch(atomic_at, 1, inputs=[a, 0], record_cmd=True)
    with pytest.raises(kl.LaunchError, match="parameter 'idx'"):
        cmd.set_param_at_index(1, 1.5)
    with pytest.raises(kl.LaunchError, match="parameter 'a'"):
        cmd.set_param_at_index(0, np.zeros(3, np.float64))  # float32 NumPy memory passes
    with pytest.raises(kl.LaunchError):
        cmd.set_dim("3")
    cmd.set_param_at_index(1, 2)
    cmd.launch()
    assert a.numpy().tolist() == [0.0, 0.0, 1.0]
