"""Arrays: construction, dtype conversion, views, gradients, versions and copies."""
import numpy as np
import pytest

from kernlab import types as T
from kernlab.runtime import array as array_module
from kernlab.runtime.array import (
    array, clone, copy, empty, empty_like, from_numpy, full, full_like, ones, ones_like,
    zeros, zeros_like,
)


# --- Construction and dtypes ------------------------------------------------------------

def test_data_is_converted_to_the_requested_dtype():
    a = array(np.arange(3), dtype=float)
    assert a.dtype == T.float32
    assert a.numpy().dtype == np.float32
    np.testing.assert_array_equal(a.numpy(), [0.0, 1.0, 2.0])


def test_numpy_float64_data_keeps_its_dtype():
    assert array(np.zeros(2, np.float64)).dtype == T.float64


def test_python_lists_default_to_32_bit_types():
    assert array([1.5, 2.0]).dtype == T.float32
    assert array([1, 2]).dtype == T.int32
    assert array([True, False]).dtype == T.bool_


def test_python_ints_too_big_for_int32_become_int64():
    assert array([2**40]).dtype == T.int64


def test_numpy_dtype_argument_is_accepted():
    assert zeros(2, dtype=np.int64).dtype == T.int64


def test_unsupported_numpy_dtype_asks_for_a_dtype():
    with pytest.raises(TypeError, match="dtype="):
        array(np.zeros(2, np.complex64))  # (float16 is a kernlab type since Warp has it)


def test_shape_reshapes_data():
    a = array(np.arange(6), dtype=T.int32, shape=(2, 3))
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))


def test_shape_alone_allocates_zeros():
    a = array(shape=(2, 2), dtype=T.float64)
    assert a.shape == (2, 2) and a.dtype == T.float64
    assert not a.numpy().any()


def test_scalar_data_gives_a_one_element_array():
    assert array(3.0).shape == (1,)


def test_vec3_array_shape_and_numpy_shape():
    a = array(np.ones((5, 3)), dtype=T.vec3)
    assert a.shape == (5,) and a.ndim == 1 and a.size == 5
    assert a.numpy().shape == (5, 3)


def test_mat33_array_numpy_shape():
    a = zeros(4, dtype=T.mat33)
    assert a.shape == (4,)
    assert a.numpy().shape == (4, 3, 3)


def test_flat_data_with_shape_fills_vectors():
    a = array(np.arange(6.0), dtype=T.vec3, shape=2)
    np.testing.assert_array_equal(a.numpy(), [[0, 1, 2], [3, 4, 5]])


def test_vector_dtype_rejects_wrong_trailing_axis():
    with pytest.raises(ValueError, match="does not end in"):
        array(np.zeros((4, 2)), dtype=T.vec3)


def test_more_than_four_dimensions_is_an_error():
    with pytest.raises(ValueError, match="1 to 4"):
        zeros((1, 1, 1, 1, 1))


def test_strides_are_byte_strides_of_array_axes():
    a = zeros((2, 5), dtype=T.vec3)
    assert a.strides == (5 * 12, 12)


def test_ptr_is_the_data_address():
    host = np.zeros(4, np.float32)
    a = from_numpy(host)
    assert a.ptr == host.ctypes.data
    assert zeros(0).ptr is None  # Warp 1.19: an empty array has no pointer


# --- Annotation instances ---------------------------------------------------------------

def test_annotation_instance_has_dtype_ndim_and_no_storage():
    ann = array(dtype=float, ndim=2)
    assert ann.is_annotation
    assert ann.dtype == T.float32 and ann.ndim == 2
    assert ann.type == T.ArrayType(T.float32, 2)
    with pytest.raises(TypeError, match="annotation"):
        ann.numpy()


def test_annotation_defaults_to_float32_1d():
    ann = array(dtype=T.vec3)
    assert ann.type == T.ArrayType(T.vec3, 1)


def test_data_array_type_property():
    assert zeros((2, 3), dtype=T.int32).type == T.ArrayType(T.int32, 2)


# --- NumPy interop and views ------------------------------------------------------------

def test_numpy_is_zero_copy():
    a = zeros(3)
    a.numpy()[1] = 7.0
    assert a.numpy()[1] == 7.0
    assert np.shares_memory(a.numpy(), np.asarray(a))


def test_from_numpy_shares_memory_when_dtype_matches():
    host = np.arange(4, dtype=np.float32)
    assert np.shares_memory(from_numpy(host).numpy(), host)


def test_from_numpy_converts_when_dtype_differs():
    host = np.arange(4, dtype=np.float64)
    a = from_numpy(host, dtype=T.float32)
    assert a.dtype == T.float32 and not np.shares_memory(a.numpy(), host)


def test_from_numpy_with_shape_infers_vector_dtype():
    a = from_numpy(np.zeros((4, 3), np.float32), shape=(4,))
    assert a.dtype == T.vec3 and a.shape == (4,)


def test_array_copies_data_by_default():
    host = np.arange(3, dtype=np.float32)
    assert not np.shares_memory(array(host).numpy(), host)


def test_integer_index_returns_element_and_slice_returns_view():
    a = array(np.arange(5), dtype=T.float32)
    assert a[2] == 2.0
    view = a[1:3]
    assert isinstance(view, array) and view.shape == (2,)
    view.numpy()[0] = 9.0
    assert a.numpy()[1] == 9.0


def test_strided_view_is_not_contiguous():
    a = zeros((3, 4))
    column = a[:, 1]
    assert column.shape == (3,) and not column.is_contiguous
    assert column.strides == (16,)


def test_list_gives_flat_python_values():
    assert array([[1, 2], [3, 4]], dtype=T.int32).list() == [1, 2, 3, 4]


def test_list_of_vectors_gives_one_entry_per_vector():
    items = array(np.arange(6.0).reshape(2, 3), dtype=T.vec3).list()
    assert len(items) == 2
    np.testing.assert_array_equal(items[1], [3.0, 4.0, 5.0])


def test_repr_shows_dtype_and_device():
    text = repr(array([1.0, 2.0]))
    assert text.startswith("array([1., 2.]") and "dtype=float32" in text and "device=cpu" in text
    assert str(array([1.0, 2.0])) == str(np.array([1.0, 2.0], np.float32))


# --- Filling ------------------------------------------------------------------------------

def test_full_infers_scalar_dtypes():
    assert full(2, 1.5).dtype == T.float32
    assert full(2, 3).dtype == T.int32
    assert full(2, True).dtype == T.bool_


def test_full_with_vector_value():
    a = full(3, (1.0, 2.0, 3.0), dtype=T.vec3)
    np.testing.assert_array_equal(a.numpy(), np.tile([1.0, 2.0, 3.0], (3, 1)))


def test_full_infers_vector_dtype_from_a_sequence():
    assert full(2, (1.0, 2.0, 3.0)).dtype == T.vec3


def test_ones_and_empty_shapes():
    np.testing.assert_array_equal(ones((2, 2)).numpy(), np.ones((2, 2), np.float32))
    assert empty(7, dtype=T.vec2).numpy().shape == (7, 2)


def test_fill_vector_array_with_a_vector():
    a = zeros(2, dtype=T.vec3)
    a.fill_((1.0, 2.0, 3.0))
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [1, 2, 3]])


def test_fill_with_a_wrong_sized_value_is_an_error():
    with pytest.raises(ValueError, match="not an element"):
        zeros(2, dtype=T.vec3).fill_((1.0, 2.0))


def test_zero_clears_values():
    a = ones(3).zero_()
    np.testing.assert_array_equal(a.numpy(), np.zeros(3))


# --- *_like inheritance -------------------------------------------------------------------

def test_like_constructors_inherit_shape_dtype_and_requires_grad():
    src = zeros((2, 3), dtype=T.vec2, requires_grad=True)
    for like in (zeros_like(src), ones_like(src), empty_like(src), full_like(src, 2.0)):
        assert like.shape == (2, 3) and like.dtype == T.vec2
        assert like.device == "cpu" and like.requires_grad


def test_like_constructors_take_overrides():
    src = zeros(4, requires_grad=True)
    like = zeros_like(src, dtype=T.int32, shape=(2, 2), requires_grad=False)
    assert like.dtype == T.int32 and like.shape == (2, 2) and like.grad is None


def test_ones_like_and_full_like_values():
    src = zeros(3, dtype=T.float64)
    np.testing.assert_array_equal(ones_like(src).numpy(), np.ones(3))
    np.testing.assert_array_equal(full_like(src, 2.5).numpy(), np.full(3, 2.5))


# --- Gradients ----------------------------------------------------------------------------

def test_requires_grad_allocates_zero_grad():
    a = ones((2, 2), dtype=T.vec3, requires_grad=True)
    assert a.grad.shape == (2, 2) and a.grad.dtype == T.vec3
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 2, 3)))


def test_setting_requires_grad_later_allocates_and_clearing_drops_grad():
    a = zeros(3)
    assert a.grad is None and not a.requires_grad
    a.requires_grad = True
    assert a.grad is not None and a.grad.shape == (3,)
    a.requires_grad = False
    assert a.grad is None


def test_grad_can_be_assigned():
    a, g = zeros(3), ones(3)
    a.grad = g
    assert a.grad is g and a.requires_grad


def test_grad_of_wrong_shape_is_rejected():
    with pytest.raises(ValueError, match="does not match"):
        zeros(3).grad = zeros(4)


def test_view_of_array_with_grad_views_the_grad():
    a = zeros(4, requires_grad=True)
    a[1:3].grad.numpy()[:] = 5.0
    np.testing.assert_array_equal(a.grad.numpy(), [0, 5, 5, 0])


# --- Versions -----------------------------------------------------------------------------

@pytest.mark.parametrize("mutate", [
    lambda a: a.fill_(1.0),
    lambda a: a.zero_(),
    lambda a: a.assign(np.ones(3)),
    lambda a: a.__setitem__(0, 2.0),
    lambda a: copy(a, ones(3)),
    lambda a: a._bump_version(),
])
def test_mutations_bump_the_version(mutate):
    a = zeros(3)
    before = a._version
    mutate(a)
    assert a._version == before + 1


def test_views_share_the_version_counter():
    a = zeros(4)
    a[1:3].fill_(1.0)
    assert a._version == 1


# --- assign, clone, copy ------------------------------------------------------------------

def test_assign_from_array_list_and_numpy():
    a = zeros(3)
    a.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3])
    a.assign(np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(a.numpy(), [4, 5, 6])
    a.assign(ones(3))
    np.testing.assert_array_equal(a.numpy(), [1, 1, 1])


def test_assign_of_wrong_shape_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        zeros(3).assign([1.0, 2.0])


def test_clone_is_a_copy_with_inherited_requires_grad():
    src = array([1.0, 2.0], requires_grad=True)
    out = clone(src)
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])
    assert not np.shares_memory(out.numpy(), src.numpy())
    assert out.requires_grad
    assert not clone(src, requires_grad=False).requires_grad


def test_copy_with_offsets_and_count_matches_numpy_slices():
    src_values = np.arange(10, dtype=np.float32)
    dest_values = np.zeros(8, np.float32)
    expected = dest_values.copy()
    expected[2:6] = src_values[3:7]
    dest = array(dest_values)
    copy(dest, array(src_values), dest_offset=2, src_offset=3, count=4)
    np.testing.assert_array_equal(dest.numpy(), expected)


def test_copy_count_zero_copies_what_fits():
    src_values = np.arange(1.0, 6.0, dtype=np.float32)
    expected = np.zeros(3, np.float32)
    expected[1:] = src_values[:2]
    dest = zeros(3)
    copy(dest, array(src_values), dest_offset=1)
    np.testing.assert_array_equal(dest.numpy(), expected)


def test_copy_flattens_multidimensional_arrays():
    src_values = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = np.zeros((3, 2), np.float32)
    expected.reshape(-1)[1:5] = src_values.reshape(-1)[0:4]
    dest = zeros((3, 2))
    copy(dest, array(src_values), dest_offset=1, count=4)
    np.testing.assert_array_equal(dest.numpy(), expected)


def test_copy_into_strided_view():
    base = zeros((3, 2))
    copy(base[:, 1], array([1.0, 2.0, 3.0]))
    expected = np.zeros((3, 2), np.float32)
    expected[:, 1] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(base.numpy(), expected)


def test_copy_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="overruns the source"):
        copy(zeros(10), zeros(4), src_offset=2, count=3)
    with pytest.raises(ValueError, match="overruns the destination"):
        copy(zeros(2), zeros(4), count=3)


def test_copy_between_dtypes_is_an_error():
    with pytest.raises(ValueError, match="cannot copy"):
        copy(zeros(2, dtype=T.int32), zeros(2))


def test_array_ops_report_to_the_tape_hook(monkeypatch):
    seen = []
    hook = lambda kind, dest, src, **info: seen.append((kind, dest, src, info))  # noqa: E731
    monkeypatch.setattr(array_module, "_TAPE_HOOK", [hook])
    src, dest = ones(4), zeros(4)
    out = clone(src)
    copy(dest, src, dest_offset=1, count=2)
    dest.assign(src)
    dest.assign(np.zeros(4))  # NumPy sources are not differentiable: not recorded
    assert seen == [
        ("clone", out, src, {}),
        ("copy", dest, src, {"dest_offset": 1, "src_offset": 0, "count": 2}),
        ("assign", dest, src, {}),
    ]


# --- Devices ------------------------------------------------------------------------------

def test_array_device_is_cpu_and_to_cpu_returns_self():
    a = zeros(2)
    assert a.device == "cpu" and str(a.device) == "cpu"
    assert a.to("cpu") is a


def test_unknown_device_is_rejected():
    with pytest.raises(ValueError, match="unknown device"):
        zeros(2, device="tpu")


def test_to_missing_cuda_device_is_a_clear_error():
    from kernlab.runtime.device import is_cuda_available
    if is_cuda_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(ValueError, match="not available"):
        zeros(2).to("cuda")
