"""The full scalar set (int8 .. uint64, float16) on every CPU backend, Warp's type helpers,
and the scalar builtins' Warp semantics (C fmin/fmax, floor division, bit operations,
atomic type rules). Expected values come from Python integers, NumPy and hand analysis."""
import numpy as np
import pytest

import kernlab as kl
from kernlab import types as T

INTS = [kl.int8, kl.uint8, kl.int16, kl.uint16, kl.int32, kl.uint32, kl.int64, kl.uint64]
FLOATS = [kl.float16, kl.float32, kl.float64]


def run1(kernel, *arrays):
    kl.launch(kernel, len(arrays[0]), inputs=list(arrays))
    return arrays[-1].numpy()


# ---- type objects ----------------------------------------------------------------------------

def test_names_and_class_attributes_match_warp():
    assert kl.float32.__name__ == "float32" and kl.vec3.__name__ == "vec3f"
    assert kl.vec3ub.__name__ == "vec3ub" and kl.vec3ub.dtype == kl.uint8
    assert kl.mat44h._shape_ == (4, 4) and kl.mat44h._length_ == 16
    assert kl.vec2i._type_ == kl.int32 and kl.vec2i._wp_scalar_type_ == kl.int32
    assert T.vector(3, kl.int16) == kl.vec3s and T.matrix((3, 3), kl.float64) == kl.mat33d
    assert T.type_is_vector(kl.vec4ul) and T.type_is_matrix(kl.mat22h)
    assert T.type_scalar_type(kl.vec3h) == kl.float16 and T.type_size(kl.mat33) == 9
    assert T.type_size_in_bytes(kl.vec3h) == 6 and T.type_size_in_bytes(kl.uint64) == 8
    assert T.types_equal(float, kl.float32) and not T.types_equal(kl.int8, kl.uint8)
    assert T.type_repr(kl.vec3b) == "vec3b" and T.type_repr(T.vector(5, kl.float32)) \
        == "vector(length=5, dtype=float32)"


@pytest.mark.parametrize("np_type", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                     np.uint32, np.int64, np.uint64, np.float16, np.float32,
                                     np.float64])
def test_numpy_round_trip(np_type):
    t = kl.dtype_from_numpy(np.dtype(np_type))
    assert t.__name__ == np.dtype(np_type).name
    assert kl.dtype_to_numpy(t) == np.dtype(np_type)
    assert T.np_dtype_to_warp_type[np_type] is t and T.warp_type_to_np_dtype[t] is np_type


def test_python_scalar_values_wrap_like_c():
    assert kl.uint8(-1) == 255 and kl.int8(200) == -56 and kl.int16._type_(70000).value == 4464
    assert kl.float16(1.0 / 3.0) == np.float16(1.0 / 3.0)


# ---- kernels over every scalar ---------------------------------------------------------------

@pytest.mark.parametrize("t", INTS + FLOATS, ids=lambda t: t.name)
def test_arithmetic_on_every_scalar(backend, t):
    @kl.kernel
    def k(a: kl.array(dtype=t), b: kl.array(dtype=t), out: kl.array(dtype=t)):
        i = kl.tid()
        out[i] = a[i] * t(3) + b[i] - t(1)

    a = np.array([1, 2, 3, 4], t.np)
    b = np.array([5, 6, 7, 8], t.np)
    got = run1(k, kl.array(a, dtype=t), kl.array(b, dtype=t), kl.zeros(4, dtype=t))
    want = [int(x) * 3 + int(y) - 1 for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, np.array(want, t.np))


def test_float16_rounds_to_half_after_every_operation(backend):
    @kl.kernel
    def k(a: kl.array(dtype=kl.float16), out: kl.array(dtype=kl.float16)):
        i = kl.tid()
        out[i] = (a[i] + kl.float16(0.0001)) * kl.float16(3.0)

    a = np.array([1.0, 0.1, 2048.0], np.float16)
    got = run1(k, kl.array(a, dtype=kl.float16), kl.zeros(3, dtype=kl.float16))
    # NumPy's float16 arithmetic rounds each operation to half as well
    want = (a + np.float16(0.0001)) * np.float16(3.0)
    np.testing.assert_array_equal(got, want)


def test_small_int_overflow_wraps(backend):
    @kl.kernel
    def k(a: kl.array(dtype=kl.int8), out: kl.array(dtype=kl.int8)):
        i = kl.tid()
        out[i] = a[i] + kl.int8(100)

    got = run1(k, kl.array(np.array([27, 28, -100], np.int8), dtype=kl.int8),
               kl.zeros(3, dtype=kl.int8))
    np.testing.assert_array_equal(got, [127, -128, 0])


@pytest.mark.parametrize("t", INTS, ids=str)
@pytest.mark.parametrize("f", FLOATS, ids=str)
def test_float_to_integer_casts_saturate_and_nan_gives_zero(backend, t, f):
    @kl.kernel
    def k(x: kl.array(dtype=f), out: kl.array(dtype=t)):
        i = kl.tid()
        out[i] = t(x[i])

    info = np.iinfo(t.np)
    vals = [2.7, -2.7, 300.0, -300.0, 7.0e4, -7.0e4, float("nan"), float("inf"), -float("inf")]
    if f != kl.float16:
        vals += [1.0e30, -1.0e30, 5.0e9, -5.0e9]
    with np.errstate(over="ignore"):
        x = np.array(vals, f.np)
    want = [0 if np.isnan(v) else int(min(max(np.trunc(float(v)), info.min), info.max))
            for v in x]
    got = run1(k, kl.array(x, dtype=f), kl.zeros(len(x), dtype=t))
    np.testing.assert_array_equal(got, np.array(want, t.np))


@pytest.mark.parametrize("t", [kl.int8, kl.int32, kl.int64, kl.uint16, kl.uint64], ids=str)
def test_integer_floordiv_floors_and_mod_truncates(backend, t):
    @kl.kernel
    def k(a: kl.array(dtype=t), b: kl.array(dtype=t), q: kl.array(dtype=t),
          r: kl.array(dtype=t), d: kl.array(dtype=t)):
        i = kl.tid()
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        d[i] = a[i] / b[i]

    pairs = [(-7, 2), (7, -2), (-7, -2), (7, 2), (-1, 2), (-8, 4), (5, 0)]
    if t.kind == "u":
        pairs = [(x, y) for x, y in pairs if x >= 0 and y >= 0]
    a = np.array([x for x, _ in pairs], t.np)
    b = np.array([y for _, y in pairs], t.np)
    q, r, d = (kl.zeros(len(a), dtype=t) for _ in range(3))
    kl.launch(k, len(a), inputs=[kl.array(a, dtype=t), kl.array(b, dtype=t), q, r, d])
    want_q = [x // y if y else 0 for x, y in pairs]  # Python floors
    want_r = [int(np.fmod(x, y)) if y else 0 for x, y in pairs]  # C truncates
    want_d = [int(x / y) if y else 0 for x, y in pairs]  # C truncates; 0 for a zero divisor
    np.testing.assert_array_equal(q.numpy(), want_q)
    np.testing.assert_array_equal(r.numpy(), want_r)
    np.testing.assert_array_equal(d.numpy(), want_d)


def test_int_constant_division_stays_integer(backend):
    C = kl.constant(10)

    @kl.kernel
    def k(out: kl.array(dtype=int)):
        i = kl.tid()
        out[i] = i - C / 3 + 7 // 2

    got = run1(k, kl.zeros(2, dtype=int))
    np.testing.assert_array_equal(got, [0 - 3 + 3, 1 - 3 + 3])


@pytest.mark.parametrize("t", [kl.int8, kl.uint8, kl.int32, kl.uint64], ids=str)
def test_bit_operators(backend, t):
    @kl.kernel
    def k(a: kl.array(dtype=t), b: kl.array(dtype=t), out: kl.array(dtype=t)):
        i = kl.tid()
        x, y = a[i], b[i]
        out[6 * i + 0] = x & y
        out[6 * i + 1] = x | y
        out[6 * i + 2] = x ^ y
        out[6 * i + 3] = x << t(3)
        out[6 * i + 4] = x >> t(1)
        out[6 * i + 5] = ~x

    vals = [(0b1011, 0b0110), (100, 7)]
    if t.kind == "i":
        vals.append((-5, 3))
    bits = t.bits

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if t.kind == "i" and v >> (bits - 1) else v

    want = []
    for x, y in vals:
        x, y = wrap(x), wrap(y)
        want += [wrap(x & y), wrap(x | y), wrap(x ^ y), wrap(x << 3), wrap(x >> 1), wrap(~x)]
    a = kl.array(np.array([wrap(x) for x, _ in vals], t.np), dtype=t)
    b = kl.array(np.array([wrap(y) for _, y in vals], t.np), dtype=t)
    out = kl.zeros(6 * len(vals), dtype=t)
    kl.launch(k, len(vals), inputs=[a, b, out])
    np.testing.assert_array_equal(out.numpy(), np.array(want, t.np))


# ---- builtins with Warp's semantics ---------------------------------------------------------

def test_min_max_clamp_treat_nan_as_missing(backend):
    @kl.kernel
    def k(a: kl.array(dtype=float), b: kl.array(dtype=float), out: kl.array(dtype=float)):
        i = kl.tid()
        out[3 * i] = kl.min(a[i], b[i])
        out[3 * i + 1] = kl.max(a[i], b[i])
        out[3 * i + 2] = kl.clamp(a[i], b[i], 1.0)

    nan = np.nan
    a = np.array([nan, 2.0, nan, 0.5, 3.0], np.float32)
    b = np.array([1.0, nan, nan, -1.0, 2.0], np.float32)
    out = kl.zeros(15, dtype=float)
    kl.launch(k, 5, inputs=[kl.array(a), kl.array(b), out])
    want = []
    for x, y in zip(a, b):
        want += [np.fmin(x, y), np.fmax(x, y), np.fmin(np.fmax(y, x), 1.0)]
    np.testing.assert_array_equal(out.numpy(), np.array(want, np.float32))


def test_rounding_family(backend):
    @kl.kernel
    def k(a: kl.array(dtype=float), out: kl.array(dtype=float)):
        i = kl.tid()
        out[5 * i] = kl.rint(a[i])
        out[5 * i + 1] = kl.round(a[i])
        out[5 * i + 2] = kl.frac(a[i])
        out[5 * i + 3] = kl.step(a[i])
        out[5 * i + 4] = kl.nonzero(a[i])

    a = np.array([2.5, -2.5, 1.25, 0.0, -0.75], np.float32)
    out = kl.zeros(25, dtype=float)
    kl.launch(k, 5, inputs=[kl.array(a), out])
    want = []
    for x in a:
        want += [np.rint(x), np.trunc(x) + (np.sign(x) if abs(x - np.trunc(x)) >= 0.5 else 0),
                 x - np.trunc(x), 1.0 if x < 0 else 0.0, 0.0 if x == 0 else 1.0]
    np.testing.assert_array_equal(out.numpy(), np.array(want, np.float32))


def test_float_predicates_and_vector_reductions(backend):
    @kl.kernel
    def k(a: kl.array(dtype=float), v: kl.array(dtype=kl.vec3), flags: kl.array(dtype=int),
          red: kl.array(dtype=float)):
        i = kl.tid()
        flags[5 * i] = int(kl.isnan(a[i]))
        flags[5 * i + 1] = int(kl.isinf(a[i]))
        flags[5 * i + 2] = int(kl.isfinite(a[i]))
        flags[5 * i + 3] = int(kl.argmin(v[i]))
        flags[5 * i + 4] = int(kl.argmax(v[i]))
        red[2 * i] = kl.min(v[i])
        red[2 * i + 1] = kl.max(v[i])

    a = np.array([np.nan, -np.inf, 1.0], np.float32)
    v = np.array([[3, 1, 2], [0, 5, -1], [4, 4, 4]], np.float32)
    flags, red = kl.zeros(15, dtype=int), kl.zeros(6, dtype=float)
    kl.launch(k, 3, inputs=[kl.array(a), kl.array(v, dtype=kl.vec3), flags, red])
    want_flags = []
    for x, row in zip(a, v):
        want_flags += [np.isnan(x), np.isinf(x), np.isfinite(x), np.argmin(row), np.argmax(row)]
    np.testing.assert_array_equal(flags.numpy(), np.array(want_flags, np.int32))
    np.testing.assert_array_equal(red.numpy(), np.stack([v.min(1), v.max(1)], 1).reshape(-1))


def test_frac_gradient_is_one_between_integers():
    """Warp's adjoint of frac is 0; d/dx (x - trunc(x)) is 1 away from the integers."""
    @kl.kernel
    def k(a: kl.array(dtype=float), out: kl.array(dtype=float)):
        i = kl.tid()
        out[i] = kl.frac(a[i]) * 2.0

    a = kl.array(np.array([0.25, -1.5, 3.75], np.float32), requires_grad=True)
    out = kl.zeros(3, dtype=float, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(k, 3, inputs=[a, out])
    tape.backward(grads={out: kl.array(np.ones(3, np.float32))})
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, 2.0])


# ---- atomics ---------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [kl.int8, kl.uint16, kl.vec3b])
def test_atomics_refuse_small_integers_but_augassign_works(t):
    @kl.kernel
    def bad(a: kl.array(dtype=t)):
        kl.atomic_add(a, 0, t(1))

    with pytest.raises(RuntimeError, match=r"atomic_add\(\) operations only work on arrays"):
        kl.launch(bad, 1, inputs=[kl.zeros(1, dtype=t)])

    @kl.kernel
    def ok(a: kl.array(dtype=t)):
        i = kl.tid()
        a[i] += t(3)

    a = kl.zeros(2, dtype=t)
    kl.launch(ok, 2, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), np.full((2, *t.shape), 3))


def test_atomic_min_of_vectors_is_component_wise(backend):
    @kl.kernel
    def k(v: kl.array(dtype=kl.vec3i), out: kl.array(dtype=kl.vec3i)):
        i = kl.tid()
        kl.atomic_min(out, 0, v[i])

    v = np.array([[3, -1, 7], [0, 5, 2], [9, 9, -4]], np.int32)
    out = kl.array(np.full((1, 3), 100, np.int32), dtype=kl.vec3i)
    kl.launch(k, 3, inputs=[kl.array(v, dtype=kl.vec3i), out])
    np.testing.assert_array_equal(out.numpy()[0], v.min(0))


def test_float64_to_float16_rounds_once(backend):
    """double -> half must round the double directly (NumPy does): 1 + 2^-11 + 2^-40 is
    just above a halfway point, which rounding through float would lose."""
    @kl.kernel
    def k(x: kl.array(dtype=kl.float64), out: kl.array(dtype=kl.float16),
          back: kl.array(dtype=kl.float64)):
        i = kl.tid()
        out[i] = kl.float16(x[i])
        back[i] = kl.float64(out[i])

    vals = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 65519.0,
                     65520.0, 1e300, -1e-50, np.nan, 2.9802322387695312e-08, 3e-8, 0.1],
                    np.float64)
    out, back = kl.zeros(len(vals), dtype=kl.float16), kl.zeros(len(vals), dtype=kl.float64)
    kl.launch(k, len(vals), inputs=[kl.array(vals, dtype=kl.float64), out, back])
    with np.errstate(over="ignore"):
        want = vals.astype(np.float16)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(back.numpy(), want.astype(np.float64))


def test_erfinv_inverts_erf(backend):
    @kl.kernel
    def k(x: kl.array(dtype=float), out: kl.array(dtype=float)):
        i = kl.tid()
        out[2 * i] = kl.erf(kl.erfinv(x[i]))
        out[2 * i + 1] = kl.erfc(kl.erfcinv(x[i] + 1.0))

    x = np.array([-0.999, -0.5, 0.0, 0.123, 0.9, 0.99999], np.float32)
    out = kl.zeros(12, dtype=float)
    kl.launch(k, 6, inputs=[kl.array(x), out])
    np.testing.assert_allclose(out.numpy()[0::2], x, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(out.numpy()[1::2], x.astype(np.float64) + 1.0, rtol=2e-6)


def test_bitwise_atomics_and_exchange(backend):
    @kl.kernel
    def k(flags: kl.array(dtype=kl.uint32), bits: kl.array(dtype=kl.uint32),
          slot: kl.array(dtype=float), olds: kl.array(dtype=float)):
        i = kl.tid()
        kl.atomic_or(flags, 0, bits[i])
        kl.atomic_and(flags, 1, ~bits[i])
        flags[2] ^= bits[i]
        olds[i] = kl.atomic_exch(slot, i, 2.0 * float(i))

    bits = np.array([1, 2, 8, 2], np.uint32)
    flags = kl.array(np.array([0, 0xFF, 0], np.uint32), dtype=kl.uint32)
    slot = kl.array(np.array([5.0, 6.0, 7.0, 8.0], np.float32))
    olds = kl.zeros(4, dtype=float)
    kl.launch(k, 4, inputs=[flags, kl.array(bits, dtype=kl.uint32), slot, olds])
    x = 0
    for b in bits:
        x ^= int(b)
    np.testing.assert_array_equal(flags.numpy(), [1 | 2 | 8, 0xFF & ~(1 | 2 | 8), x])
    np.testing.assert_array_equal(slot.numpy(), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(olds.numpy(), [5.0, 6.0, 7.0, 8.0])



def test_atomic_cas_builds_a_lock_free_maximum(backend):
    @kl.kernel
    def k(vals: kl.array(dtype=int), slot: kl.array(dtype=int), fslot: kl.array(dtype=float),
          seen: kl.array(dtype=int)):
        i = kl.tid()
        v = vals[i]
        old = slot[0]
        while old < v:
            prev = kl.atomic_cas(slot, 0, old, v)
            if prev == old:
                break
            old = prev
        seen[i] = int(kl.atomic_cas(fslot, i, 1.5, 2.5) == 1.5)

    vals = np.array([3, 9, -2, 7, 9, 4], np.int32)
    slot, seen = kl.zeros(1, dtype=int), kl.zeros(6, dtype=int)
    fslot = kl.array(np.array([1.5, 0.0, 1.5, 3.0, 1.5, 1.5], np.float32))
    kl.launch(k, 6, inputs=[kl.array(vals, dtype=int), slot, fslot, seen])
    assert slot.numpy()[0] == vals.max()
    np.testing.assert_array_equal(seen.numpy(), [1, 0, 1, 0, 1, 1])
    np.testing.assert_array_equal(fslot.numpy(), [2.5, 0.0, 2.5, 3.0, 2.5, 2.5])


def test_vector_remainder_and_division_of_int_vectors(backend):
    @kl.kernel
    def k(a: kl.array(dtype=kl.vec3i), b: kl.array(dtype=kl.vec3i), r: kl.array(dtype=kl.vec3i),
          q: kl.array(dtype=kl.vec3i)):
        i = kl.tid()
        r[i] = a[i] % b[i]
        q[i] = kl.cw_div(a[i], b[i])

    a = np.array([[7, -7, 5], [-8, 9, 0]], np.int32)
    b = np.array([[2, 2, 0], [3, -4, 5]], np.int32)
    r, q = kl.zeros(2, dtype=kl.vec3i), kl.zeros(2, dtype=kl.vec3i)
    kl.launch(k, 2, inputs=[kl.array(a, dtype=kl.vec3i), kl.array(b, dtype=kl.vec3i), r, q])
    safe = np.where(b == 0, 1, b)
    np.testing.assert_array_equal(r.numpy(), np.where(b == 0, 0, np.fmod(a, safe)))
    np.testing.assert_array_equal(q.numpy(), np.where(b == 0, 0, np.trunc(a / safe)))
