"""bfloat16 on every backend (the CUDA one too, emulated with --cuda-emulated).

A bfloat16 is the upper 16 bits of a float32 (8 exponent bits, 7 mantissa bits). Arrays store
those 16 bits; each operation computes in float32 and rounds its result to the nearest
bfloat16, ties to even, as Warp does. Expected values come from ``to_bf16`` below: the
rounding written out on float32 bit patterns with NumPy integers (independent of kernlab and
of ml_dtypes), float32 arithmetic, exact sums, or float64 finite differences.
"""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import kernlab as kl  # noqa: E402


def to_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32("nan"), out)


def bf(x):
    return kl.array(np.asarray(x, np.float32), dtype=kl.bfloat16)


def test_conversion_rounds_to_nearest_even():
    one = np.float32(1.0)
    half_step, step = np.float32(2.0 ** -8), np.float32(2.0 ** -7)
    values = np.array([1 + half_step,            # a tie: down to the even 1.0
                       1 + step + half_step,     # a tie: up to the even 1 + 2 step
                       1 + half_step * 1.5,      # past the tie: up
                       1 / 3, -2.7, 3.4e38, 1e-40, np.inf, -0.0], np.float32)
    want = np.array([1.0, 1 + 2 * step, 1 + step, to_bf16(1 / 3), to_bf16(-2.7), np.inf,
                     to_bf16(1e-40), np.inf, -0.0], np.float32)
    assert want[0] == one
    got = bf(values).numpy()
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want)
    assert np.signbit(got.astype(np.float32)[-1])
    assert np.isnan(bf([np.nan]).numpy().astype(np.float32)[0])
    # its memory: the upper half of the float32 bits
    np.testing.assert_array_equal(bf([1.0, -2.0]).numpy().view(np.uint16), [0x3F80, 0xC000])
    assert float(kl.bfloat16(1 / 3)) == float(to_bf16(1 / 3))
    assert kl.dtype_from_numpy(ml_dtypes.bfloat16) is kl.bfloat16
    assert kl.bfloat16.__name__ == "bfloat16" and kl.types.type_size_in_bytes(kl.bfloat16) == 2


@kl.kernel
def bf16_arith(a: kl.array(dtype=kl.bfloat16), b: kl.array(dtype=kl.bfloat16),
               s: kl.bfloat16, out: kl.array(dtype=kl.bfloat16, ndim=2),
               wide: kl.array(dtype=float, ndim=2), flags: kl.array(dtype=kl.int32, ndim=2)):
    i = kl.tid()
    x, y = a[i], b[i]
    out[i, 0] = x * y + s
    out[i, 1] = (x - y) / s
    out[i, 2] = kl.sqrt(kl.abs(y)) * x
    out[i, 3] = kl.min(x, y) - kl.max(x, s)
    out[i, 4] = kl.bfloat16(kl.float32(x) / 3.0)
    out[i, 5] = kl.bfloat16(i) + x
    wide[i, 0] = kl.float32(x * y)
    wide[i, 1] = kl.float32(x) * kl.float32(y)
    flags[i, 0] = int(x < y) + 2 * int(x == y) + 4 * int(x >= s)
    flags[i, 1] = int(x * kl.bfloat16(10.0))  # truncates toward zero


def test_arithmetic_rounds_each_operation(backend):
    a = np.array([0.3, -1.7, 2.5, 0.001, 7.0, -0.6, 1e30], np.float32)
    b = np.array([1.1, 0.4, 2.5, 3.0, -2.25, -0.6, 3e10], np.float32)
    s = kl.bfloat16(0.7)
    n = len(a)
    out, wide = kl.zeros((n, 6), dtype=kl.bfloat16), kl.zeros((n, 2), dtype=float)
    flags = kl.zeros((n, 2), dtype=kl.int32)
    kl.launch(bf16_arith, n, inputs=[bf(a), bf(b), s, out, wide, flags])
    x, y, sv = to_bf16(a), to_bf16(b), to_bf16(0.7)
    with np.errstate(over="ignore"):
        want = np.stack([
            to_bf16(to_bf16(x * y) + sv),
            to_bf16(to_bf16(x - y) / sv),
            to_bf16(to_bf16(np.sqrt(np.abs(y))) * x),
            to_bf16(np.minimum(x, y) - np.maximum(x, sv)),
            to_bf16(x / np.float32(3.0)),
            to_bf16(np.arange(n, dtype=np.float32) + x),
        ], axis=1)
        np.testing.assert_array_equal(out.numpy().astype(np.float32), want)
        np.testing.assert_array_equal(wide.numpy(), np.stack([to_bf16(x * y), x * y], 1))
    flag0 = (x < y).astype(int) + 2 * (x == y) + 4 * (x >= sv)
    tens = np.trunc(to_bf16(x * np.float32(10.0))).astype(np.float64)
    flag1 = np.clip(tens, -2**31, 2**31 - 1).astype(np.int64)  # saturates, as Warp on CPU
    np.testing.assert_array_equal(flags.numpy(), np.stack([flag0, flag1], 1))


@kl.kernel
def bf16_count(total: kl.array(dtype=kl.bfloat16), low: kl.array(dtype=kl.bfloat16),
               high: kl.array(dtype=kl.bfloat16), v: kl.array(dtype=kl.vector(3, kl.bfloat16))):
    i = kl.tid()
    kl.atomic_add(total, 0, kl.bfloat16(1.0))
    kl.atomic_min(low, 0, kl.bfloat16(i) - kl.bfloat16(7.0))
    kl.atomic_max(high, 0, kl.bfloat16(i))
    kl.atomic_add(v, 0, kl.vector(kl.bfloat16(1.0), kl.bfloat16(0.5), kl.bfloat16(-2.0)))


@pytest.mark.parametrize("n", [64, 300])
def test_atomics_round_each_sum(backend, n):
    total, low, high = (kl.zeros(1, dtype=kl.bfloat16) for _ in range(3))
    v = kl.zeros(1, dtype=kl.vector(3, kl.bfloat16))
    kl.launch(bf16_count, n, inputs=[total, low, high, v])
    # every sum is rounded to bfloat16: from 256 on, 256 + 1 is a tie that rounds back
    # to 256 (the spacing there is 2), so counting stops at 256
    assert float(total.numpy()[0]) == min(n, 256)
    assert float(low.numpy()[0]) == -7.0
    assert float(high.numpy()[0]) == float(to_bf16(n - 1))
    np.testing.assert_array_equal(v.numpy()[0].astype(np.float32),
                                  [min(n, 256), min(n / 2, 128), -min(2 * n, 512)])


@kl.kernel
def bf16_square(x: kl.array(dtype=kl.bfloat16), y: kl.array(dtype=kl.bfloat16)):
    i = kl.tid()
    y[i] = x[i] * x[i] * kl.bfloat16(0.5) + kl.sin(x[i])


def test_gradient_in_bfloat16(backend):
    xs = np.array([0.25, -1.5, 2.0, 0.7], np.float32)
    x = kl.array(xs, dtype=kl.bfloat16, requires_grad=True)
    y = kl.zeros(4, dtype=kl.bfloat16, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(bf16_square, 4, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.array(np.ones(4, np.float32), dtype=kl.bfloat16)})
    # d/dx (x^2/2 + sin x) = x + cos x, by float64 central differences at the bf16 inputs
    x64, h = to_bf16(xs).astype(np.float64), 1e-6
    f = lambda t: t * t * 0.5 + np.sin(t)  # noqa: E731
    fd = (f(x64 + h) - f(x64 - h)) / (2 * h)
    got = x.grad.numpy().astype(np.float64)
    # each adjoint step rounds to bfloat16 (8 significant bits): a few of its ulps
    np.testing.assert_allclose(got, fd, rtol=3 * 2.0 ** -8, atol=2.0 ** -8)


def test_refused_atomics_name_the_type(backend):
    @kl.kernel
    def swap(a: kl.array(dtype=kl.bfloat16)):
        kl.atomic_exch(a, 0, kl.bfloat16(1.0))

    with pytest.raises(kl.errors.KernelError, match="atomic_exch.*bfloat16"):
        kl.launch(swap, 1, inputs=[kl.zeros(1, dtype=kl.bfloat16)])


@pytest.mark.parametrize("arch", [75, 90])
def test_nvrtc_and_ptxas_build_the_bfloat16_kernels(arch, tmp_path):
    """The kernels' CUDA C++ (forward and adjoint) builds for a GPU: NVRTC to PTX, ptxas to
    machine code; the atomics are 16-bit compare-and-swap loops (no sm_80 bf16 needed)."""
    import re
    import subprocess

    from helpers import find_ptxas
    from kernlab.backends.cuda import nvrtc
    from kernlab.backends.cuda.render import entry_name, render_cuda
    if not nvrtc.is_available():
        pytest.skip("NVRTC is not installed")
    ptxas = find_ptxas()
    text = ""
    for k in (bf16_arith, bf16_count, bf16_square):
        for func in (k.ir, k.adjoint_ir):
            ptx = nvrtc.compile_ptx(render_cuda(func, True), func.name, arch)
            assert f".entry {entry_name(func)}(" in ptx
            text += ptx
            if ptxas is None:
                continue
            path = tmp_path / f"{entry_name(func)}.ptx"
            path.write_text(ptx)
            run = subprocess.run([ptxas, f"-arch=sm_{arch}", str(path), "-o",
                                  str(path.with_suffix(".cubin"))], capture_output=True,
                                 text=True)
            if "Unsupported .version" in run.stderr:
                pytest.skip(f"ptxas is older than NVRTC {nvrtc.version()}")
            assert run.returncode == 0, f"ptxas failed on {func.name}:\n{run.stderr}"
    assert re.search(r"\batom(\.global)?\.cas\.b16\b", text)


def test_tiles_of_bfloat16_are_refused_by_name():
    @kl.kernel
    def tiled(a: kl.array(dtype=kl.bfloat16), out: kl.array(dtype=kl.bfloat16)):
        kl.tile_store(out, kl.tile_load(a, shape=4))

    a = kl.zeros(4, dtype=kl.bfloat16)
    with pytest.raises(kl.errors.KernelTypeError, match="no tiles of bfloat16"):
        kl.launch_tiled(tiled, dim=1, inputs=[a, kl.zeros(4, dtype=kl.bfloat16)], block_dim=1)
