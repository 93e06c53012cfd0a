"""Warp overloads and helpers that conformance with Warp's own tests asked for: dot of
integer vectors, sign of vectors, div_approx, randi/randu with a range, module options and
wrapping integer vectors in Python. Values are checked against NumPy / plain Python."""
import numpy as np
import pytest

import kernlab as kl

M32 = 0xFFFFFFFF


def pcg(s: int) -> int:
    b = (s * 747796405 + 2891336453) & M32
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & M32
    return (c >> 22) ^ c


@kl.kernel
def int_vector_ops(a: kl.array(dtype=kl.vec3i), b: kl.array(dtype=kl.vec3i),
                   d: kl.array(dtype=int), s: kl.array(dtype=kl.vec3i),
                   f: kl.array(dtype=kl.vec3)):
    i = kl.tid()
    d[i] = kl.dot(a[i], b[i])
    s[i] = kl.sign(a[i])
    f[i] = kl.sign(kl.vec3(float(a[i][0]), -0.5, 0.0))


def test_dot_of_int_vectors_and_sign_of_vectors(backend):
    rng = np.random.default_rng(5)
    a_np = rng.integers(-50, 50, (6, 3)).astype(np.int32)
    b_np = rng.integers(-50, 50, (6, 3)).astype(np.int32)
    d, s = kl.zeros(6, dtype=int), kl.zeros(6, dtype=kl.vec3i)
    f = kl.zeros(6, dtype=kl.vec3)
    kl.launch(int_vector_ops, 6, inputs=[kl.array(a_np, dtype=kl.vec3i),
                                          kl.array(b_np, dtype=kl.vec3i)], outputs=[d, s, f])
    np.testing.assert_array_equal(d.numpy(), (a_np * b_np).sum(axis=1))
    np.testing.assert_array_equal(s.numpy(), np.where(a_np < 0, -1, 1))  # sign(0) is 1
    expect = np.stack([np.where(a_np[:, 0] < 0, -1.0, 1.0), -np.ones(6), np.ones(6)], 1)
    np.testing.assert_array_equal(f.numpy(), expect)


@kl.kernel
def approx(a: kl.array(dtype=float), b: kl.array(dtype=float), m: kl.array(dtype=kl.mat22),
           out: kl.array(dtype=float), mo: kl.array(dtype=kl.mat22)):
    i = kl.tid()
    out[i] = kl.div_approx(a[i], b[i]) + kl.div_approx(1.0, kl.vec2(b[i], 2.0))[1]
    mo[i] = kl.div_approx(m[i], b[i])


def test_div_approx_divides_and_differentiates_like_div(backend):
    a_np, b_np = np.array([1.0, -3.0, 2.5]), np.array([2.0, 0.5, -4.0])
    m_np = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    a = kl.array(a_np, dtype=float, requires_grad=True)
    b = kl.array(b_np, dtype=float, requires_grad=True)
    out = kl.zeros(3, dtype=float, requires_grad=True)
    mo = kl.zeros(3, dtype=kl.mat22)
    tape = kl.Tape()
    with tape:
        kl.launch(approx, 3, inputs=[a, b, kl.array(m_np, dtype=kl.mat22)], outputs=[out, mo])
    np.testing.assert_allclose(out.numpy(), a_np / b_np + 0.5, rtol=1e-6)
    np.testing.assert_allclose(mo.numpy(), m_np / b_np[:, None, None], rtol=1e-6)
    tape.backward(grads={out: kl.ones(3, dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), 1.0 / b_np, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), -a_np / b_np ** 2, rtol=1e-6)
    assert kl.div_approx(6.0, 4.0) == pytest.approx(1.5)


@kl.kernel
def ranged(seed: int, lo: int, hi: int, ints: kl.array(dtype=int),
           uints: kl.array(dtype=kl.uint32)):
    i = kl.tid()
    state = kl.rand_init(seed, i)
    ints[i] = kl.randi(state, lo, hi)
    uints[i] = kl.randu(state, kl.uint32(10), kl.uint32(17))


def test_randi_and_randu_with_a_range_follow_pcg(backend):
    n, seed, lo, hi = 8, 7, -20, 45
    ints, uints = kl.zeros(n, dtype=int), kl.zeros(n, dtype=kl.uint32)
    kl.launch(ranged, n, inputs=[seed, lo, hi], outputs=[ints, uints])
    for i in range(n):
        s = pcg(pcg((seed + pcg(i)) & M32))  # rand_init, then one step
        # C: uint32 state % uint32(hi - lo) + uint32(lo), read back as int32
        want = ((s % ((hi - lo) & M32)) + (lo & M32)) & M32
        assert ints.numpy()[i] == (want - (1 << 32) if want >= 1 << 31 else want)
        assert lo <= ints.numpy()[i] < hi
        s = pcg(s)
        assert uints.numpy()[i] == s % 7 + 10


def test_module_options_are_kept_and_enable_backward_is_honoured():
    module = kl.get_module("conform2_options_test")
    assert kl.get_module_options(module)["fast_math"] is False  # Warp's default
    kl.set_module_options({"fast_math": True, "enable_backward": False}, module)
    assert kl.get_module_options("conform2_options_test")["fast_math"] is True

    def body(x: kl.array(dtype=float)):
        x[kl.tid()] = 1.0
    k = kl.kernel(body, module=module)
    assert k.enable_backward is False
    with pytest.raises(TypeError, match="dict"):
        kl.set_module_options(["fast_math"], module)
    # without a module argument the options are the caller's module's
    kl.set_module_options({"max_unroll": 3})
    assert kl.get_module(__name__).options["max_unroll"] == 3


def test_python_integer_vectors_wrap_like_c():
    assert list(kl.vec3us(1, -2, 3)) == [1, 65534, 3]
    assert list(kl.vec2ub(256 + 7, -1)) == [7, 255]
    assert list(kl.vec2b(200, -129)) == [-56, 127]


@kl.struct
class Cplx:
    re: float
    im: float


@kl.func
def add(a: Cplx, b: Cplx) -> Cplx:  # `+` on two Cplx calls this, as in Warp
    return Cplx(a.re + b.re, a.im + b.im)


@kl.func
def mul(a: Cplx, b: Cplx) -> Cplx:
    return Cplx(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)


@kl.kernel
def complex_ops(x: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    a = Cplx(x[i], 2.0)
    b = Cplx(3.0, x[i])
    s = a + b
    p = a * b
    out[4 * i] = s.re
    out[4 * i + 1] = s.im
    out[4 * i + 2] = p.re
    out[4 * i + 3] = p.im + (x[i] + 1.0) * 2.0  # floats still use the builtin operators


@kl.kernel
def bare_type_names(out: kl.array(dtype=kl.vec3)):
    v = vec3(1.0, 2.0, 3.0) * 2.0  # noqa: F821 — Warp resolves bare type names
    out[0] = v + vec3(mat22(1.0, 2.0, 3.0, 4.0)[1, 1])  # noqa: F821


def test_struct_operators_call_user_funcs_and_bare_type_names(backend):
    x_np = np.array([1.0, -2.0])
    out = kl.zeros(8, dtype=float)
    kl.launch(complex_ops, 2, inputs=[kl.array(x_np, dtype=float)], outputs=[out])
    expect = []
    for x in x_np:
        a, b = complex(x, 2.0), complex(3.0, x)
        expect += [(a + b).real, (a + b).imag, (a * b).real, (a * b).imag + (x + 1.0) * 2.0]
    np.testing.assert_allclose(out.numpy(), expect)
    v = kl.zeros(1, dtype=kl.vec3)
    kl.launch(bare_type_names, 1, outputs=[v])
    np.testing.assert_allclose(v.numpy()[0], [6.0, 8.0, 10.0])


MASK = kl.constant(kl.types.vector(3, dtype=kl.bool)([True, False, True]))


@kl.kernel
def bool_vectors(out: kl.array(dtype=int)):
    total = int(0)
    for k in range(3):
        if MASK[k]:
            total += 1 << k
    out[0] = total
    v = kl.types.vector(False, True)  # bool literals make a bool vector
    if v[1] and not v[0]:
        out[1] = 1


def test_bool_vector_constants_and_literals(backend):
    out = kl.zeros(2, dtype=int)
    kl.launch(bool_vectors, 1, outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [0b101, 1])


import enum  # noqa: E402


class Flag(enum.IntFlag):
    A = 1
    B = 2
    C = 4


class Level(enum.IntEnum):
    LOW = 3
    HIGH = 9


@kl.kernel
def enum_values(x: kl.array(dtype=int), out: kl.array(dtype=int)):
    i = kl.tid()
    v = int(0)
    if x[i] & Flag.B:
        v = Flag.A | Flag.C  # int32, as the members' values
    out[i] = v + Level.HIGH.value * 10 + int(Level.LOW)


def test_enum_members_are_their_integer_values(backend):
    out = kl.zeros(2, dtype=int)
    kl.launch(enum_values, 2, inputs=[kl.array([2, 1], dtype=int)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [5 + 93, 93])


def test_assert_reports_in_debug_mode_and_vanishes_in_release(capfd, monkeypatch):
    monkeypatch.setattr(kl.config, "mode", "debug")

    @kl.kernel
    def checked(a: kl.array(dtype=int)):
        i = kl.tid()
        assert a[i] == 1, "each element must be 1"

    kl.launch(checked, 3, inputs=[kl.array([1, 0, 1], dtype=int)])
    kl.synchronize()
    out = capfd.readouterr().out
    assert out.count("Assertion failed: 'a[i] == 1'") == 1  # only thread 1 fails
    assert "each element must be 1" in out and "test_warp_overloads.py" in out

    monkeypatch.setattr(kl.config, "mode", "release")

    @kl.kernel
    def unchecked(a: kl.array(dtype=int)):
        assert a[100] == 1  # never evaluated in release mode: no IndexError

    kl.launch(unchecked, 1, inputs=[kl.array([0], dtype=int)])
    kl.synchronize()
    assert capfd.readouterr().out == ""


def test_assert_message_must_be_a_string_literal():
    @kl.kernel
    def bad(a: kl.array(dtype=int)):
        assert a[0] == 1, a[0]

    with pytest.raises(kl.KernelSyntaxError, match="string literal") as info:
        kl.launch(bad, 1, inputs=[kl.array([0], dtype=int)])
    assert "line" in str(info.value) and "bad" in str(info.value)


def test_vector_constructor_size_errors_name_kernel_and_line():
    @kl.kernel
    def copy_wrong_length():
        kl.vec3(kl.vec2(1.0, 2.0))

    @kl.kernel
    def too_few():
        kl.types.vector(1.0, 2.0, length=5)

    @kl.kernel
    def no_length():
        kl.types.vector()

    cases = [(copy_wrong_length, "incompatible vector of length 3 given when copy "
              "constructing a vector of length 2", "kl.vec3(kl.vec2(1.0, 2.0))"),
             (too_few, r"incompatible number of values given \(2\) when constructing a "
              "vector of length 5", "length=5"),
             (no_length, "`length` argument must be specified", "kl.types.vector()")]
    for k, message, line in cases:
        with pytest.raises(kl.KernelTypeError, match=message) as info:
            kl.launch(k, 1)
        assert k.key.split(".")[-1] in str(info.value) and line in str(info.value)
