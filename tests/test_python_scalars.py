"""Scalar values on the Python side behave as Warp's: ``isinstance(x, kl.float32)``, their
``str``/``repr`` (``int8(-1)``, ``float32(-1)``, ``bool(True)``), ``kl.bool(x).value``, and a
struct's scalar fields keep their type. Plus the wording of a bad slot-write index."""
import numpy as np
import pytest

import kernlab as kl


def test_isinstance_of_scalar_types():
    assert isinstance(kl.float32(1.5), kl.float32)
    assert isinstance(kl.uint8(3), kl.uint8)
    assert not isinstance(kl.float64(1.5), kl.float32)
    assert not isinstance(1.5, kl.float32)             # a Python float is no float32
    assert not isinstance(np.float32(1.5), kl.float32)  # nor NumPy's own scalar
    assert isinstance(kl.bool(1), kl.bool) and not isinstance(True, kl.bool)


def test_str_and_repr_as_warp():
    assert [repr(kl.int8(-1)), repr(kl.uint8(-1)), repr(kl.uint64(-1))] == \
        ["int8(-1)", "uint8(255)", f"uint64({2**64 - 1})"]
    assert [str(kl.int16(-1)), str(kl.uint32(-1))] == ["-1", str(2**32 - 1)]
    # a float made from an int shows that int (Warp keeps the number it was given)
    assert [repr(kl.float16(-1)), repr(kl.float32(-1)), repr(kl.float64(3))] == \
        ["float16(-1)", "float32(-1)", "float64(3)"]
    assert str(kl.float32(2.5)) == "2.5" and repr(kl.float64(0.1)) == "float64(0.1)"
    assert [repr(kl.bool(17)), str(kl.bool(0))] == ["bool(True)", "False"]


def test_bool_values():
    b = kl.bool(17)
    assert b.value == 17 and bool(b) and int(b) == 1 and b == True  # noqa: E712
    assert np.asarray(b).dtype == np.bool_ and np.asarray(kl.bool(0)) == np.False_
    a = kl.zeros(3, dtype=kl.bool)
    a.fill_(kl.bool(5))
    np.testing.assert_array_equal(a.numpy(), [True, True, True])

    @kl.kernel
    def negate(flag: kl.bool, out: kl.array(dtype=kl.int32)):
        out[0] = int(not flag)

    out = kl.zeros(1, dtype=kl.int32)
    kl.launch(negate, 1, inputs=[kl.bool(0), out])
    assert out.numpy()[0] == 1


@kl.struct
class Fields:
    u8: kl.uint8
    f16: kl.float16
    f64: kl.float64


def test_struct_fields_keep_their_type():
    s = Fields()
    assert isinstance(s.u8, kl.uint8) and isinstance(s.f16, kl.float16)
    s.u8, s.f64 = kl.uint8(300), kl.float64(2.718)
    assert isinstance(s.u8, kl.uint8) and int(s.u8) == 300 - 256
    assert isinstance(s.f64, kl.float64) and float(s.f64) == 2.718


def test_slot_write_index_must_be_an_integer():
    @kl.kernel
    def bad(dst: kl.array(dtype=kl.vec3)):
        dst[0.0].x = 1.0

    with pytest.raises(TypeError, match="Array slot write indices must be integers"):
        kl.launch(bad, 1, inputs=[kl.zeros(1, dtype=kl.vec3)])


def test_isinstance_of_vector_and_matrix_types():
    v = kl.vec3(1.0, 2.0, 3.0)
    assert isinstance(v, kl.vec3) and not isinstance(v, kl.vec3d)
    assert not isinstance(v, kl.vec4) and not isinstance(np.zeros(3, np.float32), kl.vec3)
    assert isinstance(kl.mat22(), kl.mat22) and not isinstance(kl.mat22(), kl.vec4)
    items = kl.full(2, kl.vec3i(1, 2, 3), dtype=kl.vec3i).list()
    assert all(isinstance(x, kl.vec3i) for x in items)
