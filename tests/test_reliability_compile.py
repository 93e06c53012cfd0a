"""Compile time stays near-linear in kernel length: bodies too large for LLVM's vectorisers to
pay (whose time grows superlinearly with the loop body) are compiled without them."""
import re

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm import jit


def long_kernel(tmp_path, n: int):
    lines = ["import kernlab as kl", "@kl.kernel",
             "def long_kernel(x: kl.array(dtype=float), y: kl.array(dtype=float)):",
             "    i = kl.tid()", "    v = x[i]"]
    for k in range(n):
        lines.append("    " + ("v = v * 1.0001 + 0.5", "v = kl.sin(v) + v",
                              "v = v - 0.25 * v * v")[k % 3])
    lines.append("    y[i] = v")
    path = tmp_path / f"long_{n}.py"
    path.write_text("\n".join(lines) + "\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["long_kernel"]


def reference(x: np.ndarray, n: int) -> np.ndarray:
    v = x.astype(np.float64)
    for k in range(n):
        v = (v * 1.0001 + 0.5, np.sin(v) + v, v - 0.25 * v * v)[k % 3]
    return v


VECTOR = re.compile(r"<\d+ x (float|double)>")


@pytest.mark.cpu_only("LLVM code generation")
def test_a_long_adjoint_is_compiled_without_the_vectorisers_and_stays_correct(tmp_path):
    n = 400
    kernel = long_kernel(tmp_path, n)
    assert jit._body_size(kernel.adjoint_ir) > jit.VECTORIZE_MAX_INSTRUCTIONS
    assert not VECTOR.search(kl.source(kernel, "llvm-opt", adjoint=True))
    x = kl.array(np.linspace(-0.5, 0.5, 64, dtype=np.float32), requires_grad=True)
    y = kl.zeros(64, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, 64, inputs=[x], outputs=[y])
    np.testing.assert_allclose(y.numpy(), reference(x.numpy(), n), rtol=2e-4)
    tape.backward(grads={y: kl.ones(64, dtype=float)})
    h = 1e-4  # float64 central differences of the reference
    fd = (reference(x.numpy() + h, n) - reference(x.numpy() - h, n)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=2e-3, atol=1e-3)


@pytest.mark.cpu_only("LLVM code generation")
def test_a_short_kernel_is_still_vectorised(tmp_path):
    kernel = long_kernel(tmp_path, 3)
    assert VECTOR.search(kl.source(kernel, "llvm-opt"))
