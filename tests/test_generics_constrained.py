"""Warp's constrained generic annotations (kl.Int, kl.Float, kl.Scalar), ``type(x)`` in
kernels, ``.dtype``/``.length`` of values and ``@kl.overload`` stubs. Expected values are
plain Python/NumPy arithmetic; a func or launch of the wrong kind must be refused."""
from typing import Any

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import KernelTypeError, LaunchError


@kl.func
def total3(v: kl.types.vector(3, kl.Int)):
    return v[0] + v[1] + v[2]


@kl.func
def total3(v: kl.types.vector(3, kl.Float)):  # noqa: F811 — a second overload
    return v[0] * v[1] * v[2]


@kl.func
def trace2(m: kl.types.matrix((2, 2), kl.Scalar)):
    return m[0, 0] + m[1, 1]


@kl.func
def twice(x: kl.Scalar):
    return x + x


@kl.kernel
def constrained(i16: kl.array(dtype=kl.vec3s), f64: kl.array(dtype=kl.vec3d),
                mi: kl.array(dtype=kl.types.matrix((2, 2), kl.int64)),
                md: kl.array(dtype=kl.mat22d),
                out_i: kl.array(dtype=kl.int16), out_d: kl.array(dtype=kl.float64),
                out_l: kl.array(dtype=kl.int64), out_t: kl.array(dtype=kl.float64),
                lits: kl.array(dtype=float), ilits: kl.array(dtype=int)):
    k = kl.tid()
    out_i[k] = total3(i16[k])
    out_d[k] = total3(f64[k])
    out_l[k] = trace2(mi[k])
    out_t[k] = trace2(md[k])
    lits[k] = twice(1.25)
    ilits[k] = twice(21)


def test_int_float_scalar_pick_the_overload_and_keep_the_type(backend):
    rng = np.random.default_rng(3)
    n = 5
    a16 = rng.integers(-100, 100, (n, 3)).astype(np.int16)
    a64 = rng.normal(size=(n, 3))
    ml = rng.integers(-1000, 1000, (n, 2, 2)).astype(np.int64)
    md = rng.normal(size=(n, 2, 2))
    out = [kl.zeros(n, dtype=t) for t in (kl.int16, kl.float64, kl.int64, kl.float64,
                                           float, int)]
    kl.launch(constrained, n, inputs=[kl.array(a16, dtype=kl.vec3s), kl.array(a64, dtype=kl.vec3d),
                                      kl.array(ml, dtype=kl.types.matrix((2, 2), kl.int64)),
                                      kl.array(md, dtype=kl.mat22d)], outputs=out)
    np.testing.assert_array_equal(out[0].numpy(), a16.astype(np.int64).sum(1).astype(np.int16))
    np.testing.assert_allclose(out[1].numpy(), a64.prod(1), rtol=1e-15)
    np.testing.assert_array_equal(out[2].numpy(), ml[:, 0, 0] + ml[:, 1, 1])
    np.testing.assert_allclose(out[3].numpy(), md[:, 0, 0] + md[:, 1, 1], rtol=1e-15)
    np.testing.assert_array_equal(out[4].numpy(), np.full(n, 2.5))
    np.testing.assert_array_equal(out[5].numpy(), np.full(n, 42))


@kl.func
def only_floats(x: kl.Float):
    return x


@kl.kernel
def float_func_given_int(out: kl.array(dtype=int)):
    out[0] = only_floats(kl.int32(3))


@kl.kernel
def float_func_given_bool(out: kl.array(dtype=float)):
    out[0] = twice(True)


@pytest.mark.parametrize("kernel,dtype", [(float_func_given_int, int),
                                          (float_func_given_bool, float)])
def test_a_type_outside_the_set_is_refused(backend, kernel, dtype):
    with pytest.raises(KernelTypeError, match="no overload of func"):
        kl.launch(kernel, 1, outputs=[kl.zeros(1, dtype=dtype)])


@kl.kernel
def fill_ints(a: kl.array(dtype=kl.Int), value: kl.Int):
    a[kl.tid()] = value + value


def test_generic_kernel_over_int_arrays(backend):
    for dtype in (kl.int8, kl.uint16, kl.int64):
        a = kl.zeros(4, dtype=dtype)
        kl.launch(fill_ints, 4, inputs=[a, dtype(7)])
        np.testing.assert_array_equal(a.numpy(), np.full(4, 14))
    with pytest.raises(LaunchError, match="cannot take"):
        kl.launch(fill_ints, 4, inputs=[kl.zeros(4, dtype=float), 1.0])


@kl.kernel
def casts(a: Any, b: Any, arr: kl.array(dtype=Any), out: kl.array(dtype=kl.float64),
          lens: kl.array(dtype=int)):
    c = type(a)(b)  # b converted to a's type
    z = type(arr[0])()
    out[0] = kl.float64(c)
    out[1] = (arr.dtype(arr[0]) + z)[2]
    v = kl.types.vector(length=2, dtype=type(a))
    m = kl.identity(n=v.length, dtype=v.dtype) * a
    out[2] = kl.float64(kl.trace(m))
    lens[0] = v.length
    lens[1] = arr[0].length


kl.overload(casts, [kl.float32, kl.float64, kl.array(dtype=kl.vec3d), kl.array(dtype=kl.float64),
                    kl.array(dtype=int)])


def test_type_of_values_casts_and_builds(backend):
    out, lens = kl.zeros(3, dtype=kl.float64), kl.zeros(2, dtype=int)
    kl.launch(casts, 1, inputs=[1.5, kl.float64(2.0 ** 0.5),
                                kl.array([[1.0, 2.0, 3.0]], dtype=kl.vec3d)],
              outputs=[out, lens])
    assert out.numpy()[0] == pytest.approx(float(np.float32(2.0 ** 0.5)), rel=0, abs=0)
    assert out.numpy()[1] == 3.0
    assert out.numpy()[2] == 3.0
    np.testing.assert_array_equal(lens.numpy(), [2, 3])


@kl.kernel
def stubbed(x: Any, out: kl.array(dtype=float)):
    out[0] = float(x) * 2.0


@kl.overload
def stubbed(x: kl.float64, out: kl.array(dtype=float)):
    """declares the float64 variant"""
    ...


def test_overload_stub_keeps_the_generic_kernel():
    assert isinstance(stubbed, kl.Kernel) and stubbed.is_generic
    assert list(stubbed.overloads) == [(kl.float64, kl.array(dtype=float).type)]
    out = kl.zeros(1, dtype=float)
    kl.launch(stubbed, 1, inputs=[kl.float64(1.25)], outputs=[out])
    assert out.numpy()[0] == 2.5


def test_overload_stubs_declare_types_only():
    @kl.kernel(name="renamed_generic")
    def named(x: Any):
        return

    @kl.overload
    def named(x: float): ...

    assert named.key == "renamed_generic" and len(named.overloads) == 1

    def returns(x: float) -> float: ...
    returns.__name__ = returns.__qualname__ = "named"
    with pytest.raises(TypeError, match="Return annotations are not allowed"):
        kl.overload(returns)

    with pytest.raises(kl.KernelSyntaxError, match="declares types only"):
        @kl.overload
        def named(x: kl.float64):  # noqa: F811
            return x


# ---- subscript spellings of types (Warp's Vector[...], Matrix[...], tile[...]) ----------------

def test_subscript_types_are_the_factories_types():
    from typing import Literal

    from kernlab.types import Matrix, Quaternion, Transformation, Vector
    assert Vector[float, Literal[3]] is kl.vec3
    assert Vector[kl.float64, 4] is kl.types.vector(4, kl.float64)
    assert Matrix[kl.float64, Literal[2], Literal[4]].shape == (2, 4)
    assert Matrix[float, 3, 3] is kl.mat33
    assert Quaternion[kl.float64] is kl.quatd and Transformation[float] is kl.transform
    assert kl.types.vector(5, kl.int8) is kl.types.vector(5, kl.int8)
    with pytest.raises(TypeError, match="requires 2 parameters"):
        Vector[float]
    with pytest.raises(TypeError, match="positive integer"):
        Vector[float, 0]
    with pytest.raises(TypeError, match="requires 3 parameters"):
        Matrix[float, 3]
    with pytest.raises(ValueError, match="exactly two dimensions"):
        kl.types.matrix((2,), kl.float32)
    assert kl.tile[float, Literal[8], Literal[4]].tile_shape == (8, 4)
    assert kl.tile[float, (4, 4)].tile_shape == (4, 4)


@kl.func
def tile_twice(t: kl.tile[float]):  # a tile of any shape
    return t + t


@kl.kernel
def tile_any_shape(a: kl.array2d(dtype=float), out: kl.array2d(dtype=float)):
    t = kl.tile_load(a, shape=(2, 3))
    kl.tile_store(out, tile_twice(t))


def test_tile_of_any_shape_parameter(backend):
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = kl.zeros((2, 3), dtype=float)
    kl.launch_tiled(tile_any_shape, [1], inputs=[kl.array(a_np, dtype=float)], outputs=[out],
                    block_dim=1)
    np.testing.assert_array_equal(out.numpy(), 2 * a_np)


# ---- loops unrolled for static() --------------------------------------------------------

@kl.func
def plus_one(x: float):
    return x + 1.0


@kl.func
def times_three(x: float):
    return x * 3.0


OPS = [plus_one, times_three, plus_one]


@kl.kernel
def static_loop(x: kl.array(dtype=float), out: kl.array(dtype=float),
                picks: kl.array(dtype=int)):
    v = x[0]
    for i in range(3):
        v = kl.static(OPS[i])(v)  # a different func in each unrolled copy
        picks[i] = kl.static(i * 10)
    out[0] = v
    for j in range(2):
        for j in range(4):
            pass
        picks[3] = kl.static(j)  # j is the inner loop's last value, 3


def test_static_reads_the_loop_variable_of_an_unrolled_loop(backend):
    x = kl.array([2.0], dtype=float, requires_grad=True)
    out = kl.zeros(1, dtype=float, requires_grad=True)
    picks = kl.zeros(4, dtype=int)
    tape = kl.Tape()
    with tape:
        kl.launch(static_loop, 1, inputs=[x], outputs=[out, picks])
    assert out.numpy()[0] == (2.0 + 1.0) * 3.0 + 1.0
    np.testing.assert_array_equal(picks.numpy(), [0, 10, 20, 3])
    tape.backward(grads={out: kl.ones(1, dtype=float)})
    assert x.grad.numpy()[0] == 3.0  # d((x + 1) * 3 + 1)/dx


@kl.kernel
def static_loop_reassigned(out: kl.array(dtype=int)):
    for i in range(2):
        out[i] = kl.static(i)
    i = out[0] + 5
    out[2] = kl.static(i)


def test_a_reassigned_loop_variable_is_no_constant(backend):
    with pytest.raises(KernelTypeError, match="static"):
        kl.launch(static_loop_reassigned, 1, outputs=[kl.zeros(3, dtype=int)])
