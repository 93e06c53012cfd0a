"""Shared fixtures: run a test on every CPU backend, and (where present) on CUDA."""
import numpy as np
import pytest

import kernlab as kl

CPU_BACKENDS = ["interp", "llvm"]


@pytest.fixture(params=CPU_BACKENDS)
def backend(request, monkeypatch):
    """Runs the test once on the reference interpreter and once on LLVM CPU code."""
    monkeypatch.setattr(kl.config, "cpu_backend", request.param)
    return request.param


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test session compiles into its own cache directory."""
    root = tmp_path_factory.getbasetemp() / "kernlab-cache"
    monkeypatch.setattr(kl.config, "cache_dir", str(root))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_addoption(parser):
    parser.addoption("--long-fuzz", action="store_true", default=False,
                     help="run the fuzzers long (thousands of generated kernels; minutes)")
