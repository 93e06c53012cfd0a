"""kernlab's stand-in for ``warp.tests.unittest_utils``.

Warp's test files do ``from warp.tests.unittest_utils import *``; the conformance runner
(run.py) makes that import find this module, with ``warp`` bound to kernlab. It offers the
helpers those files use, written for kernlab: the CPU is the only test device, and a test
that prints anything unexpected fails, as under Warp's own helpers.
"""
from __future__ import annotations

import contextlib
import ctypes  # noqa: F401 — as Warp's: test files use ctypes through the star import
import functools
import io
import os
import re
import sys
import tempfile
import unittest  # noqa: F401 — the test files expect it from the star import

import numpy as np

import kernlab as wp

USD_AVAILABLE = False
LIBC = None
test_mode = "basic"


def get_test_devices(mode=None):
    return [wp.get_device("cpu")]


def get_cpu_test_devices():
    return [wp.get_device("cpu")]


def get_cuda_test_devices(mode=None):
    return []


def get_selected_cuda_test_devices(mode=None):
    return []


def get_cuda_test_devices_with_mempool(mode=None):
    return []


get_selected_cuda_test_devices_with_mempool = get_cuda_test_devices_with_mempool
get_test_devices_with_graph_capture_allocation = get_cuda_test_devices_with_mempool
get_test_devices_with_cuda_graph_module_load = get_cuda_test_devices_with_mempool


def get_cuda_device_pair_with_peer_access_support(devices=None):
    return None


get_cuda_device_pair_with_mempool_access_support = get_cuda_device_pair_with_peer_access_support


@contextlib.contextmanager
def suppress_native_error_output():
    yield


class StreamCapture:
    """Captures a standard stream at the file-descriptor level, so C output is caught."""

    def __init__(self, stream_name):
        self.stream_name = stream_name

    def begin(self):
        stream = getattr(sys, self.stream_name)
        stream.flush()
        self.saved = stream
        self.saved_fd = os.dup(stream.fileno())
        self.file = tempfile.TemporaryFile()
        os.dup2(self.file.fileno(), stream.fileno())
        self.wrapper = io.TextIOWrapper(self.file, encoding="utf-8", errors="replace",
                                        write_through=True)
        setattr(sys, self.stream_name, self.wrapper)

    def end(self):
        wp.synchronize()
        self.wrapper.flush()
        os.dup2(self.saved_fd, self.saved.fileno())
        os.close(self.saved_fd)
        setattr(sys, self.stream_name, self.saved)
        self.wrapper.seek(0)
        text = self.wrapper.buffer.read().decode("utf-8", errors="replace")
        self.wrapper.close()
        return text


class StdOutCapture(StreamCapture):
    def __init__(self):
        super().__init__("stdout")


class StdErrCapture(StreamCapture):
    def __init__(self):
        super().__init__("stderr")


class CheckOutput:
    """Fails the test if it printed anything (a failed ``expect_eq`` prints)."""

    def __init__(self, test):
        self.test = test

    def __enter__(self):
        self.capture = StdOutCapture()
        self.capture.begin()

    def __exit__(self, exc_type, exc_value, traceback):
        text = self.capture.end()
        if text:
            print(text.rstrip())
        lines = [ln for ln in text.splitlines()
                 if not (ln.startswith("Module") and "load on device" in ln)]
        if exc_type is None and "\n".join(lines).strip():
            self.test.fail(f"Unexpected output:\n'{text.rstrip()}'")


def assert_array_equal(result, expect):
    np.testing.assert_equal(result.numpy(), expect.numpy())


def assert_np_equal(result, expect, tol=0.0):
    if tol != 0.0:
        np.testing.assert_allclose(np.asarray(result).flatten(), np.asarray(expect).flatten(),
                                   atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(result, expect)


def run_python_subprocess(source, *args, timeout=60, hide_gpu=False, env_updates=None):
    """Run Python ``source`` in a child interpreter where ``import warp`` gives kernlab (as
    in this process), with ``args`` as ``sys.argv[1:]``; the completed process, its output
    captured as text. Core dumps are off in the child: a test may make it abort on purpose."""
    import subprocess
    env = dict(os.environ)
    env.update(env_updates or {})
    if hide_gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    here = os.path.dirname(os.path.abspath(__file__))
    prologue = ("import sys\n"
                "try:\n    import resource\n"
                "    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
                "except (ImportError, ValueError, OSError):\n    pass\n"
                f"sys.path.insert(0, {here!r})\n"
                "import run as _run\n"
                "_run.bind_warp_to_kernlab()\n")
    return subprocess.run([sys.executable, "-c", prologue + source, *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def sanitize_identifier(s):
    s = str(s)
    return s if s.isidentifier() else re.sub(r"\W|^(?=\d)", "_", s)


def _device_test(func, device, check_output, device_check=None, **kwargs):
    @functools.wraps(func)
    def test(self):
        if device_check is not None:
            device_check(self, device)
        if check_output:
            with CheckOutput(self):
                func(self, device, **kwargs)
        else:
            func(self, device, **kwargs)
    return test


def _no_device(self):
    self.skipTest("No suitable devices to run the test.")


def add_function_test(cls, name, func, devices=None, check_output=True, device_check=None,
                      enable_cpu_blocks=False, **kwargs):
    # enable_cpu_blocks: Warp runs the test with block_dim threads per block on the CPU;
    # kernlab runs every block as one thread whatever the setting, with the same results
    if devices is None:
        setattr(cls, name, _device_test(func, None, check_output, device_check, **kwargs))
        return
    if not isinstance(devices, list):
        devices = [devices]
    if not devices:
        setattr(cls, name, _no_device)
    for device in devices:
        setattr(cls, f"{name}_{sanitize_identifier(device)}",
                _device_test(func, device, check_output, device_check, **kwargs))


def add_function_test_register_kernel(cls, name, func, devices=None, **kwargs):
    func(None, None, **kwargs, register_kernels=True)
    add_function_test(cls, name, func, devices=devices, **kwargs)


def add_kernel_test(cls, kernel, dim, name=None, expect=None, inputs=None, devices=None,
                    inputs_factory=None):
    if inputs is not None and inputs_factory is not None:
        raise ValueError("Only one of `inputs` and `inputs_factory` may be provided.")

    def run(self, device):
        args = list(inputs_factory(device) if inputs_factory is not None else inputs or [])
        if expect:
            result = wp.array(expect, dtype=int, device=device)
            output = wp.zeros_like(result)
            args.append(output)
        with CheckOutput(self):
            wp.launch(kernel, dim=dim, inputs=args, device=device)
        if expect:
            assert_array_equal(output, result)

    name = name or kernel.key
    for d in get_test_devices() if devices is None else devices:
        setattr(cls, f"{name}_{sanitize_identifier(d)}", lambda self, d=d: run(self, d))
