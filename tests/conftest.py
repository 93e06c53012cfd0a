"""Shared fixtures: run a test on every CPU backend and, where present, on CUDA.

``backend`` runs a test on the reference interpreter, on LLVM CPU code and on a CUDA GPU
(skipped cleanly without one). With ``--cuda-emulated`` it also runs on "cuda-emulated":
a fake CUDA driver (tests/fake_cuda.py) whose kernels are the generated CUDA C++ compiled
by g++ for the CPU, so the whole backend-parametrised suite exercises the CUDA renderer,
parameter packing, device memory and status word on a machine without a GPU. On either
CUDA backend the default device is "cuda:0", so arrays the test makes (``kl.array``,
``kl.zeros``, ...) live on the GPU, and ``a.numpy()`` is a host copy, as in Warp.
"""
import gc

import numpy as np
import pytest

import kernlab as kl

CPU_BACKENDS = ["interp", "llvm"]
CUDA_BACKENDS = ["cuda", "cuda-emulated"]


def pytest_addoption(parser):
    # notebooks/conftest.py accepts both too, for a run of the notebooks alone; whichever
    # conftest loads first (the first path on the command line) defines them
    for name, text in (("--long-fuzz", "run the fuzzers long (thousands of generated kernels; "
                        "minutes)"),
                       ("--cuda-emulated", "also run the backend-parametrised tests on an "
                        "emulated GPU (the generated CUDA C++ compiled by g++; minutes)")):
        try:
            parser.addoption(name, action="store_true", default=False, help=text)
        except ValueError:  # notebooks/conftest.py added it already
            pass


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        names = CPU_BACKENDS + ["cuda"]
        if metafunc.config.getoption("--cuda-emulated"):
            names.append("cuda-emulated")
        metafunc.parametrize("backend", names, indirect=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only(why): a backend-parametrised test that only "
                            "makes sense on the CPU backends; skipped on CUDA with the reason")


# The fast tier, ``python -m pytest -m "not slow"``, leaves out what takes minutes on 2 cores
# and is covered in another way by the tests it keeps: the emulated-GPU variants (each
# compiles its kernel's CUDA C++ with g++; the interpreter and LLVM variants of the same
# tests stay), NVRTC compiles of the whole kernel and builtin corpus, the GPU benchmark
# harness, the fuzzers, Warp's test files and examples, two memory-growth soak tests, the
# tutorial notebooks (notebooks/conftest.py), the browser and extension-build tests.
# CI and README's `python -m pytest` run everything.
SLOW_FILES = {"test_warp_conformance.py", "test_warp_examples.py", "test_extension_browser.py",
              "test_bench_cuda.py", "test_fuzz_frontend.py", "test_fuzz_grad.py",
              "test_forward_mode_fuzz.py"}
SLOW_TESTS = {"test_kernel_compiles_to_ptx_forward_and_adjoint",
              "test_every_overload_of_a_builtin_compiles_forward_and_adjoint",
              "test_extension_unit_tests_pass",
              "test_redefining_a_kernel_cell_500_times_grows_rss_by_less_than_50_mb",
              "test_compiling_many_distinct_kernels_stays_bounded",
              # a real JupyterLab server, a child process waiting for Ctrl-C, a cache reload
              "test_the_lab_starts_serves_the_tutorials_and_stops",
              "test_keyboard_interrupt_stops_an_endless_kernel_within_a_second",
              "test_edited_re_runs_loaded_from_the_cache_keep_no_code",
              # compiles the adjoints of three mesh-query kernels (the others stay fast)
              "test_closest_distance_and_ray_gradients_match_finite_differences"}
# big launches on the NumPy reference interpreter (their LLVM variants stay in the fast tier)
SLOW_ON_INTERP = {"test_augmented_add_is_atomic_on_a_launch_large_enough_to_run_in_parallel",
                  "test_tid_2d_on_a_launch_large_enough_to_run_in_parallel",
                  "test_out_of_bounds_in_one_thread_of_a_large_launch",
                  "test_queries_visit_the_cell_box_and_find_every_neighbour",
                  "test_what_is_not_privatised_stays_right", "test_vector_sum",
                  # BVH walks of every mesh query on the interpreter
                  "test_rays_find_the_nearest_hit", "test_signs_of_a_closed_cube",
                  "test_output_argument_forms",
                  # Perlin noise (test_noise.py): thousands of statements interpreted
                  "test_noise_and_pnoise_match_the_float64_model",
                  "test_curlnoise_matches_the_float64_model",
                  "test_noise_gradients_by_reverse_mode_match_the_model",
                  "test_curlnoise_gradients_by_reverse_mode_match_finite_differences",
                  "test_pnoise_repeats_with_its_period_and_is_noise_within_one_period",
                  "test_noise_is_zero_at_every_lattice_point",
                  # Jacobi sweeps of svd3/eig3 (test_decompositions.py), ~40 launches each
                  "test_decomposition_jacobian_matches_finite_differences"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        # backend="cuda-emulated", and the cuda_runner/runner fixtures' "emulated" variant
        emulated = any(v in ("cuda-emulated", "emulated") for v in params.values()
                       if isinstance(v, str))
        name = getattr(item, "originalname", None) or item.name
        if emulated or item.path.name in SLOW_FILES or name in SLOW_TESTS \
                or (name in SLOW_ON_INTERP and params.get("backend") == "interp"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def backend(request, monkeypatch, tmp_path_factory):
    """The backend a test runs on: "interp", "llvm", "cuda" or "cuda-emulated"."""
    name = request.param
    if name in CUDA_BACKENDS:
        marker = request.node.get_closest_marker("cpu_only")
        if marker is not None:
            pytest.skip(f"CPU only: {marker.args[0] if marker.args else ''}")
        if name == "cuda":
            if not kl.is_cuda_available():
                pytest.skip("no CUDA GPU")
        else:
            import fake_cuda
            if fake_cuda.CXX is None:
                pytest.skip("no C++ compiler to emulate CUDA code on the CPU")
            folder = fake_cuda.emulation_folder(tmp_path_factory)
            fake = fake_cuda.install(monkeypatch, devices=1, emulate_in=folder)
        scope = kl.ScopedDevice("cuda:0")
        scope.__enter__()

        def leave():
            scope.__exit__(None, None, None)
            if name == "cuda-emulated" and set(fake.blocks) - fake.status_words:
                gc.collect()  # free the test's device arrays while their fake is installed
        request.addfinalizer(leave)
    else:
        monkeypatch.setattr(kl.config, "cpu_backend", name)
    return name


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test run compiles into its own cache directory, shared by its pytest-xdist
    workers (the cache is safe for several processes), so a kernel that tests in two
    workers' files compile, or NVRTC's PTX of it, is compiled once."""
    import fake_cuda
    root = fake_cuda.run_folder(tmp_path_factory) / "kernlab-cache"
    monkeypatch.setattr(kl.config, "cache_dir", str(root))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty compile cache folder for the test, with a fresh per-user secret."""
    from kernlab import config
    from kernlab.runtime import cache
    folder = tmp_path / "kernlab-cache"
    monkeypatch.setattr(config, "cache_dir", str(folder))
    cache._secrets.clear()
    yield folder
    cache._secrets.clear()
