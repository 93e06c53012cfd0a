"""A parallel launch on the LLVM backend hands its threads out in blocks
(backends/llvm/runner.py, Runner._parallel): the caller and the pool workers each take the
next block until none is left, and the caller waits only for blocks a worker is running.
Every thread id must run exactly once, a late or slow worker must not change the result,
and a block that sets the status stops the others."""
import ctypes
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import kernlab as kl
from kernlab import config
from kernlab.backends.llvm import runner


@kl.kernel
def count_each(hits: kl.array(dtype=int)):
    i = kl.tid()
    kl.atomic_add(hits, i, 1)


@kl.kernel
def total(x: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_add(out, 0, x[i])


def _block():
    return (ctypes.c_char * 8)()  # an argument block's status byte, as the runner has it


def _fake_runner(interruptible=False):
    layout = SimpleNamespace(status_offset=0)
    return SimpleNamespace(layout=layout, interruptible=interruptible)


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("n", [runner.PARALLEL_THRESHOLD, 1_000_003])
def test_every_thread_runs_once(monkeypatch, threads, n):
    monkeypatch.setattr(config, "num_threads", threads)
    hits = kl.zeros(n, dtype=int)
    kl.launch(count_each, n, inputs=[hits], device="cpu")
    got = hits.numpy()
    assert got.min() == 1 and got.max() == 1


def test_blocks_cover_the_range_once_with_a_slow_worker(monkeypatch):
    """Python stands in for the entry: the worker's first block is slow; the caller takes
    the rest and still returns only after the worker's block is done."""
    monkeypatch.setattr(config, "num_threads", 2)
    taken, lock = [], threading.Lock()
    caller = threading.current_thread()

    def fn(buf, start, end):
        if threading.current_thread() is not caller:
            time.sleep(0.05)  # a slow worker block
        with lock:
            taken.append((start, end))
    buf = _block()
    runner.Runner._parallel(_fake_runner(), fn, buf, [10, 500_010, 1_000_010])
    spans = sorted(taken)  # all written before _parallel returned
    assert spans[0][0] == 10 and spans[-1][1] == 1_000_010
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert len(spans) == 2 * runner.BLOCKS_PER_THREAD


def test_a_late_worker_leaves_the_work_to_the_caller(monkeypatch):
    """A pool whose workers start long after the caller: the caller runs every block, and
    the late worker's part then touches nothing; the sum is NumPy's float64 sum."""
    monkeypatch.setattr(config, "num_threads", 2)
    real = runner._workers(2)

    class LatePool:
        def submit(self, fn, *args):
            def late():
                time.sleep(0.2)
                return fn(*args)
            return real.submit(late)
    monkeypatch.setattr(runner, "_workers", lambda n: LatePool())
    x = np.random.default_rng(5).random(300_001).astype(np.float32)
    out = kl.zeros(1)
    kl.launch(total, len(x), inputs=[kl.array(x), out], device="cpu")
    first = float(out.numpy()[0])
    time.sleep(0.3)  # the late worker has woken and found no block left
    assert float(out.numpy()[0]) == first
    assert first == pytest.approx(float(np.sum(x.astype(np.float64))), rel=1e-5)


def test_a_block_that_sets_the_status_stops_the_others(monkeypatch):
    monkeypatch.setattr(config, "num_threads", 1)  # only the caller takes blocks
    runs = []

    def fn(buf, start, end):
        runs.append(start)
        buf[0] = b"\x01"  # what an error or a declining fast entry does
    runner.Runner._parallel(_fake_runner(), fn, _block(), [0, 400_000, 800_000])
    assert runs == [0]


def test_kernels_with_loops_get_small_blocks():
    """An interruptible kernel (one with loops) splits from PARALLEL_THRESHOLD_LOOPS
    threads: its blocks must be small enough that both threads get some."""
    spans = []
    runner.Runner._parallel(_fake_runner(interruptible=True),
                            lambda buf, a, b: spans.append((a, b)), _block(), [0, 300, 600])
    assert sorted(spans)[0] == (0, runner.PARALLEL_THRESHOLD_LOOPS // 4)
    assert sum(b - a for a, b in spans) == 600
