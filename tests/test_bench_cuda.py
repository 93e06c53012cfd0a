"""The GPU benchmark (benchmarks/bench_cuda.py) runs, on a machine without a GPU too.

Its GPU rows run on the fake CUDA driver (tests/fake_cuda.py), whose kernels are the
generated CUDA C++ compiled by g++ for the CPU: that checks the plumbing (device arrays,
kl.copy's cuMemcpyDtoD, forward and adjoint launches, the rows and their notes) and that the
saxpy computes the right numbers, not any timing. Its compile rows run as they do without a
GPU: fresh processes asking NVRTC for PTX.
"""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import kernlab as kl
import fake_cuda
from kernlab.backends.cuda import nvrtc

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # benchmarks/ is a folder of scripts, not a package
    sys.path.insert(0, str(BENCHMARKS))

import bench_cuda  # noqa: E402
from common import Settings  # noqa: E402

HAVE_NVRTC = nvrtc.is_available()
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC (pip install cuda-python "
                                 "nvidia-cuda-nvrtc) is not installed")
needs_cxx = pytest.mark.skipif(fake_cuda.CXX is None,
                               reason="no C++ compiler to emulate CUDA code on the CPU")
N = 4096


@pytest.fixture
def emulated_gpu(monkeypatch, tmp_path):
    """One fake GPU whose kernels run on the CPU; Warp kept out (it would look for a real
    GPU), and kernlab's disk cache in the test's folder."""
    fake = fake_cuda.install(monkeypatch, devices=1, emulate_in=tmp_path)
    monkeypatch.setattr(bench_cuda, "warp_cuda", lambda: None)
    monkeypatch.setattr(kl.config, "cache_dir", str(tmp_path / "cache"))
    return fake


def _max_diff(note: str) -> float:
    return float(re.search(r"max rel\. diff to NumPy ([0-9.e+-]+)", note).group(1))


@needs_cxx
def test_gpu_rows_run_on_the_emulated_gpu(emulated_gpu):
    settings = Settings(repeats=2, warmup=1)
    rows = bench_cuda.stream_rows(settings, n=N)
    assert [r.name for r in rows] == list(bench_cuda.STREAM_ROWS)
    copy, saxpy, adjoint = rows
    for row in rows:
        assert row.size == f"n={N:,}"
        assert row.times["kernlab"] > 0, row
        assert "warp" not in row.times
    for row in (saxpy, adjoint):
        assert row.times["bound"] > 0
        assert "goal" in row.note and _max_diff(row.note) < 1e-6, row.note
    assert "cuMemcpyDtoD" in copy.note and "GB/s" in copy.note
    # every timed call ran: copies through cuMemcpyDtoD, kernels through cuLaunchKernel
    rounds = settings.warmup + settings.repeats
    assert emulated_gpu.calls["cuMemcpyDtoD"] >= rounds
    launched = [name for name, _, _ in emulated_gpu.launched]
    assert launched.count("saxpy") == rounds + 1  # plus the checked launch
    # forward and adjoint launches each round (one name), plus the checked adjoint
    assert launched.count("saxpy_out") == 2 * rounds + 1


@needs_cxx
def test_the_benchmark_saxpy_computes_what_numpy_does(emulated_gpu):
    rng = np.random.default_rng(7)
    x, y, adj_z = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    a = np.float32(1.5)
    got = bench_cuda.saxpy_on_gpu(x, y, a)
    np.testing.assert_allclose(got, x.astype(np.float64) * 1.5 + y, rtol=1e-6, atol=1e-6)
    adj_x, adj_y = bench_cuda.saxpy_adjoint_on_gpu(x, y, adj_z, a)
    np.testing.assert_allclose(adj_x, 1.5 * adj_z.astype(np.float64), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(adj_y, adj_z)


@needs_cxx
@needs_nvrtc
def test_the_gpu_compile_probe_runs_on_the_emulated_gpu(emulated_gpu, tmp_path):
    pyfunc = bench_cuda.kernels("kernlab").saxpy_out.pyfunc
    cold = bench_cuda.first_kernlab(kl.kernel(pyfunc), gpu=True, n=64)
    assert list((tmp_path / "cache").glob("*.klc")), "NVRTC's cubins were not cached"
    warm = bench_cuda.first_kernlab(kl.kernel(pyfunc), gpu=True, n=64)  # a fresh Kernel
    for result in (cold, warm):
        for part in ("first", "frontend", "compiler_id", "compile", "module_load", "launches",
                     "reload", "context"):
            assert result[part] >= 0, part
        assert result["first"] > 0 and result["reload"] <= result["first"]


@needs_nvrtc
def test_compile_rows_without_a_gpu():
    rows = bench_cuda.compile_rows(Settings(compile_runs=1), gpu=False)
    assert [r.name for r in rows] == list(bench_cuda.COMPILE_ROWS)
    cold, warm, itself = rows
    for row in rows:
        assert row.times["kernlab"] > 0, row
        assert "FAILED" not in row.note and "goal <=" in row.note, row.note
    assert "kl.source(k, 'ptx')" in cold.note and "compiler id" in cold.note
    assert "cache hit only" in itself.note
    assert itself.times["kernlab"] < cold.times["kernlab"]


def test_without_a_gpu_the_gpu_rows_say_why(monkeypatch):
    fake_cuda.uninstalled(monkeypatch, why="RuntimeError: no driver here")
    rows = bench_cuda.stream_rows(Settings(tiny=True))
    assert [r.name for r in rows] == list(bench_cuda.STREAM_ROWS)
    for row in rows:
        assert row.times == {} and row.size == "n=1,000,000"
        assert row.note.startswith("n/a: no CUDA GPU") and "no driver here" in row.note
