"""``python -m kernlab.demo``: compile a kernel, run it, differentiate it, show the listings.

The kernel raises each element to the n-th power with a loop whose state is carried from
one iteration to the next — the case where Warp 1.19 silently returns a wrong gradient.
"""
from __future__ import annotations

import time

import numpy as np

import kernlab as kl


@kl.kernel
def power(x: kl.array(dtype=float), y: kl.array(dtype=float), n: int):
    i = kl.tid()
    v = 1.0
    for _ in range(n):
        v = v * x[i]  # loop-carried state: v depends on the previous iteration
    y[i] = kl.sin(v)


def compile_counts() -> dict:
    """The CPU backend's counters: kernels compiled and kernels loaded from the disk cache."""
    from kernlab.backends.llvm import variants
    return dict(variants.stats)


def how_it_was_built(before: dict) -> str:
    """How the last launch got its machine code, from the counters' change: compiled it,
    loaded it from the disk cache (a second run of the demo), or found it in memory."""
    after = compile_counts()
    if after["compiled"] > before["compiled"]:
        return f"compiled in {(after['compile_s'] - before['compile_s']) * 1e3:.0f} ms"
    if after["loaded"] > before["loaded"]:
        return (f"a cache hit: loaded from the disk cache in "
                f"{(after['load_s'] - before['load_s']) * 1e3:.1f} ms, nothing compiled")
    return "a cache hit: the compiled code was already in memory"


def main():
    print("kernlab demo: y[i] = sin(x[i] ** n), computed by a loop\n")
    x = kl.array([0.5, 1.0, 1.5, 2.0], dtype=float, requires_grad=True)
    y = kl.zeros(4, requires_grad=True)
    n = 3

    before = compile_counts()
    start = time.perf_counter()
    tape = kl.Tape()
    with tape:
        kl.launch(power, dim=4, inputs=[x, y, n])
    took = time.perf_counter() - start
    print(f"ran 'power' on {kl.get_device()} in {took * 1e3:.1f} ms "
          f"({how_it_was_built(before)})")
    print("x          =", x.numpy())
    print("y          =", y.numpy())

    before = compile_counts()
    start = time.perf_counter()
    tape.backward(grads={y: kl.ones(4)})
    took = time.perf_counter() - start
    print(f"\nran the adjoint of 'power' in {took * 1e3:.1f} ms ({how_it_was_built(before)})")
    xs = x.numpy().astype(np.float64)
    expected = np.cos(xs ** n) * n * xs ** (n - 1)
    print("dy/dx      =", x.grad.numpy(), " (kernlab adjoint)")
    print("analytic   =", expected.astype(np.float32), " (cos(x^n) * n x^(n-1))")
    ok = np.allclose(x.grad.numpy(), expected, rtol=1e-4)
    print("agree      =", ok)

    print("\nThe typed IR kernlab compiled (one op per line, with the user's line):\n")
    print(kl.source(power, "ir"))
    print("The adjoint's reverse sweep of the loop (see kl.source(power, 'ir', adjoint=True)):")
    listing = kl.source(power, "ir", adjoint=True)
    reverse = listing[listing.index("# ---- reverse ----"):]
    print("  " + "\n".join(reverse.splitlines()[:24]) + "\n  ...")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
