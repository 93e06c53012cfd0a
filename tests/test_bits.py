"""bit_count and unot on every integer type: against Python's count of the set bits of the
fixed-width two's-complement form, and, where warp-lang is installed, against Warp."""
import numpy as np
import pytest

import kernlab as kl

INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
_KERNELS = {}


def kernel_for(name):
    if name not in _KERNELS:
        T = getattr(kl, name)

        def k(a: kl.array(dtype=T), n: kl.array(dtype=kl.int32), z: kl.array(dtype=kl.bool)):
            i = kl.tid()
            n[i] = kl.bit_count(a[i])
            z[i] = kl.unot(a[i])
        k.__name__ = k.__qualname__ = f"bits_{name}"
        _KERNELS[name] = kl.kernel(k)
    return _KERNELS[name]


def samples(name, rng):
    info = np.iinfo(getattr(np, name))
    edges = [0, 1, info.min, info.max, info.max // 3, info.min + 1]
    if info.min < 0:
        edges += [-1, -2]
    rand = rng.integers(info.min, info.max, 8, dtype=getattr(np, name), endpoint=True)
    return np.concatenate([np.array(edges, dtype=getattr(np, name)), rand])


@pytest.mark.parametrize("name", INT_TYPES)
def test_bit_count_and_unot(backend, rng, name):
    vals = samples(name, rng)
    bits = np.iinfo(vals.dtype).bits
    n, z = kl.zeros(len(vals), dtype=kl.int32), kl.zeros(len(vals), dtype=kl.bool)
    kl.launch(kernel_for(name), len(vals), inputs=[kl.array(vals, dtype=getattr(kl, name))],
              outputs=[n, z])
    want = [bin(int(v) & (2 ** bits - 1)).count("1") for v in vals]
    np.testing.assert_array_equal(n.numpy(), want)
    np.testing.assert_array_equal(z.numpy(), vals == 0)


def test_unot_of_bools_and_python_scope(backend):
    @kl.kernel
    def k(a: kl.array(dtype=kl.bool), o: kl.array(dtype=kl.bool)):
        i = kl.tid()
        o[i] = kl.unot(a[i])
    o = kl.zeros(2, dtype=kl.bool)
    kl.launch(k, 2, inputs=[kl.array([True, False], dtype=kl.bool)], outputs=[o])
    np.testing.assert_array_equal(o.numpy(), [False, True])
    assert kl.bit_count(-1) == 32 and kl.bit_count(np.int64(-1)) == 64
    assert kl.unot(0) and not kl.unot(3) and not kl.unot(True) and kl.unot(False)


@pytest.mark.parametrize("name", ["int8", "uint16", "int32", "uint64"])
def test_same_values_as_warp(rng, name):
    wp = pytest.importorskip("warp", reason="warp-lang is not installed")
    wp.config.quiet = True
    T = getattr(wp, name)

    def k(a: wp.array(dtype=T), n: wp.array(dtype=wp.int32), z: wp.array(dtype=wp.bool)):
        i = wp.tid()
        n[i] = wp.bit_count(a[i])
        z[i] = wp.unot(a[i])
    kernel = wp.kernel(k, module="unique")
    vals = samples(name, rng)
    n, z = wp.zeros(len(vals), dtype=wp.int32, device="cpu"), wp.zeros(len(vals),
                                                                       dtype=wp.bool,
                                                                       device="cpu")
    wp.launch(kernel, len(vals), inputs=[wp.array(vals, dtype=T, device="cpu")],
              outputs=[n, z], device="cpu")
    kn, kz = kl.zeros(len(vals), dtype=kl.int32), kl.zeros(len(vals), dtype=kl.bool)
    kl.launch(kernel_for(name), len(vals), inputs=[kl.array(vals, dtype=getattr(kl, name))],
              outputs=[kn, kz])
    np.testing.assert_array_equal(kn.numpy(), n.numpy())
    np.testing.assert_array_equal(kz.numpy(), z.numpy())
