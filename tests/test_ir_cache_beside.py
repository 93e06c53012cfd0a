"""A compile writes the IR cache's entry while LLVM compiles the kernel on a helper thread
(runtime/ir_cache.store, backends/llvm/variants._beside_stores): the entry is
complete when the compile returns, an LLVM failure on the helper thread reaches the caller
as the same error, and the kernel still computes the right values."""
import threading
import time

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm import jit, tiers
from kernlab.backends.llvm.lower import LoweringError
from kernlab.runtime import cache, ir_cache
from test_ir_cache import load_module

MODULE = """\
import kernlab as kl


@kl.kernel
def powers(x: kl.array(dtype=float), y: kl.array(dtype=float), n: int):
    i = kl.tid()
    v = float(1.0)
    for k in range(n):  # a loop: compiled optimised at once (no quick tier)
        v = v * x[i]
    y[i] = v * {scale}
"""

XS = np.array([0.5, -1.5, 2.0, 1.25], np.float32)


def run(kernel, n=3):
    """y = x**n and dx for dy = 1, through a tape."""
    x = kl.array(XS, requires_grad=True)
    y = kl.zeros(len(XS), requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(kernel, len(XS), inputs=[x, y, n])
    tape.backward(grads={y: kl.ones(len(XS))})
    return y.numpy(), x.grad.numpy()


def check(kernel, n=3, scale=1.0):
    y, dx = run(kernel, n)
    x = XS.astype(np.float64)
    np.testing.assert_allclose(y, scale * x ** n, rtol=1e-6)
    np.testing.assert_allclose(dx, scale * n * x ** (n - 1), rtol=1e-6)


def stored(kernel, adjoint: bool) -> bool:
    """Whether the cache holds the kernel's IR (with adjoint=True: its adjoint IR too)."""
    key = kernel._ir_cache_key
    payload = cache.load(key) if key else None
    found = ir_cache.loads(payload) if payload is not None else None
    if found is None or not adjoint:
        return found is not None
    key = ir_cache._adjoint_key(kernel)  # (read against the IR it was written with)
    payload = cache.load(key) if key else None
    found = ir_cache.loads(payload, kernel._ir) if payload is not None else None
    return found is not None and found[0] is not None


def test_the_adjoints_entry_is_written_while_llvm_compiles_the_adjoint(cache_dir, tmp_path,
                                                                        monkeypatch):
    kernel = load_module(tmp_path / "kernels_beside.py", MODULE.format(scale=1.0)).powers
    real = jit.optimised_object
    seen = []

    tiers.wait()  # earlier tests' optimising jobs call optimised_object too

    def watched(func, text, tm=None):
        if func.name != "powers":  # (another kernel's job: not this test's)
            return real(func, text, tm)
        # the calling thread is pickling meanwhile: wait (bounded) for the entry to hold
        # this compile's IR. Written only after LLVM returned, it never would here.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = stored(kernel, func.is_adjoint)
            if found:
                break
            time.sleep(0.002)
        seen.append((func.is_adjoint, threading.current_thread() is threading.main_thread(),
                     found))
        return real(func, text, tm)

    monkeypatch.setattr(jit, "optimised_object", watched)
    check(kernel)
    adjoint = [s for s in seen if s[0]]
    assert adjoint == [(True, False, True)]  # on a helper thread, the entry complete


def test_an_llvm_failure_on_the_helper_thread_reaches_the_caller(cache_dir, tmp_path,
                                                                 monkeypatch):
    # (a scale of its own: the other test's machine code is in this process's memo)
    kernel = load_module(tmp_path / "kernels_beside_fail.py",
                         MODULE.format(scale=1.0 + 2.0 ** -20)).powers
    real = jit.optimised_object

    def failing(func, text, tm=None):
        raise LoweringError("internal error: LLVM rejected the code generated for this "
                            "kernel", loc=func.loc, kernel=func.name, details="(planted)")

    monkeypatch.setattr(jit, "optimised_object", failing)
    with pytest.raises(LoweringError, match="powers"):
        kl.launch(kernel, len(XS), inputs=[kl.array(XS), kl.zeros(len(XS)), 2])
    assert not ir_cache.has_deferred()  # nothing left noted on this thread
    monkeypatch.setattr(jit, "optimised_object", real)
    check(kernel, 2, 1.0 + 2.0 ** -20)  # the same kernel compiles and runs once LLVM works
    assert stored(kernel, adjoint=True)
