"""float16 kernels on every backend, the CUDA one included (emulated with --cuda-emulated).

A float16 is stored as an IEEE half; each operation computes in float32 and rounds its
result to half, as Warp does. Expected values are NumPy's float16 arithmetic (which rounds
each operation the same way), exact sums of numbers a half holds exactly, or float64
finite differences of the same function for gradients. The last test has the real NVRTC
compile the kernels' CUDA C++ to PTX and ptxas assemble it (skipped without them).
"""
import re
import subprocess

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.cuda import nvrtc
from kernlab.backends.cuda.render import entry_name, render_cuda
from kernlab.errors import KernelFPError
from helpers import find_ptxas

H = np.float16


def assert_within_half_ulps(got, want, ulps=1):
    """Each value within ``ulps`` units in the last place of half (libm's float32 results
    may differ by one float ulp, which can move a half rounding by one)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, H)
    gap = np.abs(got - want.astype(np.float64))
    assert np.all(gap <= ulps * np.spacing(np.abs(want)).astype(np.float64)), (got, want)


# ---- forward values --------------------------------------------------------------------------

@kl.kernel
def half_arith(a: kl.array(dtype=kl.float16), b: kl.array(dtype=kl.float16),
               s: kl.float16, out: kl.array(dtype=kl.float16, ndim=2),
               flags: kl.array(dtype=kl.int32, ndim=2)):
    i = kl.tid()
    x, y = a[i], b[i]
    out[i, 0] = x * y + s
    out[i, 1] = (x - y) / s
    out[i, 2] = -x * kl.sqrt(y)
    out[i, 3] = kl.min(x, y) - kl.max(x, s)
    out[i, 4] = kl.abs(x - y) + kl.float16(0.1)
    out[i, 5] = x % y + x // y
    out[i, 6] = kl.clamp(x * kl.float16(100.0), kl.float16(-50.0), kl.float16(60.0))
    out[i, 7] = kl.float16(kl.float64(x) / 3.0)  # the double rounded to half once
    flags[i, 0] = int(x < y) + 2 * int(x == y) + 4 * int(x >= s)
    flags[i, 1] = int(x * kl.float16(10.0))  # truncates toward zero
    flags[i, 2] = int(kl.float16(kl.float32(x) * 1000000.0) > kl.float16(60000.0))


def test_arithmetic_comparisons_and_casts_round_to_half(backend):
    a = np.array([0.3, -1.7, 2.5, 0.001, 7.0, -0.6], H)
    b = np.array([1.1, 0.4, 2.5, 3.0, -2.25, -0.6], H)
    s = H(0.7)
    out, flags = kl.zeros((6, 8), dtype=kl.float16), kl.zeros((6, 3), dtype=kl.int32)
    kl.launch(half_arith, 6, inputs=[kl.array(a, dtype=kl.float16),
                                     kl.array(b, dtype=kl.float16), s, out, flags])
    with np.errstate(invalid="ignore", over="ignore"):  # sqrt(-0.6) is NaN everywhere
        want, big = _arith_reference(a, b, s)
    np.testing.assert_array_equal(out.numpy(), want)
    wflags = np.stack([(a < b) * 1 + (a == b) * 2 + (a >= s) * 4,
                       np.trunc((a * H(10.0)).astype(np.float64)).astype(np.int32), big * 1],
                      axis=1)
    np.testing.assert_array_equal(flags.numpy(), wflags)


def _arith_reference(a, b, s):
    want = np.stack([a * b + s, (a - b) / s, -a * np.sqrt(b), np.minimum(a, b) - np.maximum(a, s),
                     np.abs(a - b) + H(0.1), np.fmod(a, b) + np.floor(a / b),
                     np.clip(a * H(100.0), H(-50.0), H(60.0)),
                     (a.astype(np.float64) / 3.0).astype(H)], axis=1)
    return want, (a.astype(np.float32) * np.float32(1e6)).astype(H) > H(60000.0)


@kl.kernel
def half_math(x: kl.array(dtype=kl.float16), out: kl.array(dtype=kl.float16, ndim=2)):
    i = kl.tid()
    v = x[i]
    out[i, 0] = kl.sin(v)
    out[i, 1] = kl.exp(v)
    out[i, 2] = kl.log(v + kl.float16(2.0))
    out[i, 3] = kl.atan2(v, kl.float16(0.5))
    out[i, 4] = kl.pow(kl.float16(2.0), v)
    out[i, 5] = kl.tanh(v) * kl.cos(v)


def test_math_functions_are_the_float_function_rounded_to_half(backend):
    x = np.array([-1.5, -0.3, 0.0, 0.2, 0.77, 1.9, 3.3], H)
    out = kl.zeros((7, 6), dtype=kl.float16)
    kl.launch(half_math, 7, inputs=[kl.array(x, dtype=kl.float16), out])
    f = x.astype(np.float32)
    want = np.stack([np.sin(f), np.exp(f), np.log((x + H(2.0)).astype(np.float32)),
                     np.arctan2(f, np.float32(0.5)), np.power(np.float32(2.0), f),
                     np.tanh(f).astype(H) * np.cos(f).astype(H)], axis=1).astype(H)
    assert_within_half_ulps(out.numpy(), want)


@kl.kernel
def half_vectors(v: kl.array(dtype=kl.vec3h), w: kl.array(dtype=kl.vec3h),
                 out: kl.array(dtype=kl.vec3h), d: kl.array(dtype=kl.float16),
                 m: kl.array(dtype=kl.mat22h), mv: kl.array(dtype=kl.vec2h)):
    i = kl.tid()
    a, b = v[i], w[i]
    out[i] = a * kl.float16(2.0) + b - kl.vec3h(kl.float16(0.5), kl.float16(0.25), a[0])
    d[i] = kl.dot(a, b)
    mv[i] = m[i] * kl.vec2h(a[1], b[2])


def test_vectors_and_matrices_of_halves(backend):
    rng = np.random.default_rng(3)
    v = rng.uniform(-2, 2, (5, 3)).astype(H)
    w = rng.uniform(-2, 2, (5, 3)).astype(H)
    m = rng.uniform(-2, 2, (5, 2, 2)).astype(H)
    out, d = kl.zeros(5, dtype=kl.vec3h), kl.zeros(5, dtype=kl.float16)
    mv = kl.zeros(5, dtype=kl.vec2h)
    kl.launch(half_vectors, 5, inputs=[kl.array(v, dtype=kl.vec3h), kl.array(w, dtype=kl.vec3h),
                                       out, d, kl.array(m, dtype=kl.mat22h), mv])
    c = np.stack([np.full(5, H(0.5)), np.full(5, H(0.25)), v[:, 0]], axis=1)
    np.testing.assert_array_equal(out.numpy(), v * H(2.0) + w - c)
    p = v * w  # each product rounded, then summed left to right, each sum rounded
    np.testing.assert_array_equal(d.numpy(), (p[:, 0] + p[:, 1]) + p[:, 2])
    x = np.stack([v[:, 1], w[:, 2]], axis=1)
    q = m * x[:, None, :]
    np.testing.assert_array_equal(mv.numpy(), q[:, :, 0] + q[:, :, 1])


@kl.kernel
def half_parameter(s: kl.float16, v: kl.vec3h, out: kl.array(dtype=kl.float16)):
    out[0] = s
    out[1] = v[2] + s


def test_half_kernel_parameters_are_passed_as_halves(backend):
    out = kl.zeros(2, dtype=kl.float16)
    kl.launch(half_parameter, 1, inputs=[H(1.0009765625), kl.vec3h(1.0, 2.0, -3.5), out])
    np.testing.assert_array_equal(out.numpy(), [H(1.0009765625), H(-3.5) + H(1.0009765625)])


@kl.kernel
def half_overflow(x: kl.array(dtype=kl.float16)):
    i = kl.tid()
    x[i] = x[i] * kl.float16(1000.0)


def test_verify_fp_sees_a_half_overflow(backend, monkeypatch):
    monkeypatch.setattr(kl.config, "verify_fp", True)
    x = kl.array(np.array([1.0, 70.0, 2.0], H), dtype=kl.float16)  # 70000 > 65504
    with pytest.raises(KernelFPError) as info:
        kl.launch(half_overflow, 3, inputs=[x])
    assert "inf" in str(info.value) and "(1,)" in str(info.value)


# ---- atomics -----------------------------------------------------------------------------------

@kl.kernel
def half_histogram(x: kl.array(dtype=kl.float16), bins: kl.array(dtype=kl.float16),
                   old: kl.array(dtype=kl.float16)):
    i = kl.tid()
    kl.atomic_add(bins, i % 4, x[i])
    bins[4] += x[i]
    old[i] = kl.atomic_sub(bins, 5, x[i])


def test_atomic_add_and_sub_on_half_arrays(backend):
    # quarters below 512: every partial sum is a half exactly, so any order gives the same
    x = (np.arange(64) % 9 * 0.25 + 0.25).astype(H)
    bins, old = kl.zeros(6, dtype=kl.float16), kl.zeros(64, dtype=kl.float16)
    kl.launch(half_histogram, 64, inputs=[kl.array(x, dtype=kl.float16), bins, old])
    xs = x.astype(np.float64)
    want = [xs[k::4].sum() for k in range(4)] + [xs.sum(), -xs.sum()]
    np.testing.assert_array_equal(bins.numpy(), np.array(want, H))
    # each thread got the total before its own subtraction: in the order the subtractions
    # happened (whatever it was), the first saw 0 and each saw the last one's minus its x
    seen = -old.numpy().astype(np.float64)
    order = np.argsort(seen)
    assert seen[order[0]] == 0.0
    np.testing.assert_array_equal(seen[order[1:]], seen[order[:-1]] + xs[order[:-1]])


def test_half_atomics_other_than_add_and_sub_are_refused_as_in_warp():
    with pytest.raises(kl.KernelError, match="atomic_min"):
        @kl.kernel
        def k(a: kl.array(dtype=kl.float16)):
            kl.atomic_min(a, 0, kl.float16(1.0))
        k.ir


# ---- gradients ---------------------------------------------------------------------------------

@kl.kernel
def half_smooth(x: kl.array(dtype=kl.float16), y: kl.array(dtype=kl.float16)):
    i = kl.tid()
    v = x[i]
    y[i] = kl.sin(v) * v + v * v * kl.float16(0.5)


def _smooth64(x):
    return np.sin(x) * x + 0.5 * x * x


def test_gradient_of_a_half_kernel_matches_float64_finite_differences(backend):
    x0 = np.array([-1.2, -0.4, 0.1, 0.6, 1.3], H)
    x = kl.array(x0, dtype=kl.float16, requires_grad=True)
    y = kl.zeros(5, dtype=kl.float16, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(half_smooth, 5, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.array(np.ones(5, H), dtype=kl.float16)})
    xs = x0.astype(np.float64)
    np.testing.assert_allclose(y.numpy().astype(np.float64), _smooth64(xs), rtol=4e-3,
                               atol=2e-3)
    h = 1e-6
    fd = (_smooth64(xs + h) - _smooth64(xs - h)) / (2 * h)
    assert x.grad.dtype == kl.float16
    # a handful of half roundings on the way: a few parts in a thousand
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), fd, rtol=5e-3, atol=3e-3)


@kl.kernel
def half_gather(x: kl.array(dtype=kl.vec3h), idx: kl.array(dtype=kl.int32),
                y: kl.array(dtype=kl.float16)):
    i = kl.tid()
    v = x[idx[i]]
    y[i] = kl.dot(v, kl.vec3h(kl.float16(1.0), kl.float16(2.0), kl.float16(-0.5)))


def test_gradients_accumulate_atomically_into_half_gradient_arrays(backend):
    idx = np.array([0, 2, 2, 1, 2, 0, 2], np.int32)
    x = kl.array(np.ones((3, 3), H), dtype=kl.vec3h, requires_grad=True)
    y = kl.zeros(7, dtype=kl.float16, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(half_gather, 7, inputs=[x, kl.array(idx, dtype=kl.int32)], outputs=[y])
    seed = np.array([1.0, 0.5, 0.25, 2.0, 1.0, 3.0, 0.5], H)
    tape.backward(grads={y: kl.array(seed, dtype=kl.float16)})
    # d y_i / d x[idx_i] = (1, 2, -0.5): each row of x.grad gathers its seeds (exact here)
    per_row = np.array([seed[idx == r].astype(np.float64).sum() for r in range(3)])
    want = per_row[:, None] * np.array([1.0, 2.0, -0.5])
    np.testing.assert_array_equal(x.grad.numpy().astype(np.float64), want)
    np.testing.assert_array_equal(y.numpy(), np.full(7, H(2.5)))


# ---- the real NVRTC and ptxas ------------------------------------------------------------------

HALF_KERNELS = [half_arith, half_math, half_vectors, half_parameter, half_histogram,
                half_smooth, half_gather]


@pytest.mark.skipif(not nvrtc.is_available(), reason="NVRTC (pip install cuda-python "
                    "nvidia-cuda-nvrtc) is not installed")
@pytest.mark.parametrize("arch", [80, 90])
def test_nvrtc_and_ptxas_build_the_half_kernels(arch, tmp_path):
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    funcs = [k.ir for k in HALF_KERNELS] + [k.adjoint_ir for k in (half_smooth, half_gather)]
    text = ""
    for func in funcs:
        ptx = nvrtc.compile_ptx(render_cuda(func, True), func.name, arch)
        assert f".entry {entry_name(func)}(" in ptx and f".target sm_{arch}" in ptx
        path = tmp_path / f"{entry_name(func)}.ptx"
        path.write_text(ptx)
        run = subprocess.run([ptxas, f"-arch=sm_{arch}", str(path), "-o",
                              str(path.with_suffix(".cubin"))], capture_output=True, text=True)
        if "Unsupported .version" in run.stderr:
            pytest.skip(f"ptxas is older than NVRTC {nvrtc.version()}")
        assert run.returncode == 0, f"ptxas failed on {func.name}:\n{run.stderr}"
        text += ptx
    # the half type's conversions are the hardware's, and the atomic add a 16-bit CAS loop
    for instruction in ("cvt.f32.f16", "cvt.rn.f16.f32", "cvt.rn.f16.f64"):
        assert instruction in text, instruction
    assert re.search(r"\batom(\.global)?\.cas\.b16\b", text)
