"""Arrays on CUDA devices: memory, views, copies, DLPack, launches and gradients.

Without a GPU (as in CI) a fake driver (fake_cuda.py) stands in for cuda.bindings.driver:
its "device memory" is host memory it owns and checks every address it is given. The
memory tests run on it alone. The launch tests take a ``runner``: "emulated" runs the
generated CUDA C compiled by g++ over the fake's memory (no GPU needed); "gpu" runs the
same tests on a real GPU through NVRTC and the driver, and skips cleanly without one.
Expected values come from NumPy, from calculus, or from the CPU backends.
"""
import ctypes
import gc
import math
import subprocess
import sys

import numpy as np
import pytest

import kernlab as kl
from fake_cuda import CXX, CUresult, emulation_folder, install, uninstalled
from kernlab.backends.cuda.driver import CudaError
from kernlab.runtime.dlpack import exported_count

DTYPES = [kl.float32, kl.float64, kl.int32, kl.int64, kl.uint32, kl.bool, kl.vec2, kl.vec3,
          kl.vec4, kl.vec3d, kl.mat22, kl.mat33, kl.mat44, kl.mat33d]


@pytest.fixture
def fake(monkeypatch):
    """Two fake GPUs, cuda:0 and cuda:1."""
    driver = install(monkeypatch, devices=2)
    yield driver
    gc.collect()  # free what the test left while the fake is still installed


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.cuda)])
def runner(request, monkeypatch, tmp_path_factory):
    """Where launches on "cuda" run: the fake driver with kernels emulated by g++, or a GPU."""
    if request.param == "gpu":
        if not kl.is_cuda_available():
            pytest.skip("no CUDA GPU")
        yield None
        return
    if CXX is None:
        pytest.skip("no C++ compiler to emulate CUDA code on the CPU")
    yield install(monkeypatch, devices=2, emulate_in=emulation_folder(tmp_path_factory))
    gc.collect()


def _random(dtype, n, rng):
    shape = (n,) + dtype.shape
    kind = dtype.scalar.kind
    if kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype.scalar.np)
    if kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if kind == "u" else -50
    return rng.integers(low, 50, shape).astype(dtype.scalar.np)


# --- Memory: allocation, round trips, fills -----------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_round_trips_through_device_memory(fake, dtype, rng):
    data = _random(dtype, 7, rng)
    a = kl.array(data, dtype=dtype, device="cuda")
    assert a.device == "cuda:0" and a.shape == (7,) and a.dtype == dtype
    assert fake.block_of(a.ptr) is not None  # the pointer is device memory
    np.testing.assert_array_equal(a.numpy(), data)
    assert a.numpy().shape == (7,) + dtype.shape


def test_numpy_of_a_cuda_array_is_a_host_copy(fake):
    a = kl.array([1.0, 2.0, 3.0], device="cuda")
    host = a.numpy()
    host[0] = 99.0
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 3.0])


def test_constructors_on_a_second_device(fake):
    a = kl.ones((2, 3), dtype=kl.float64, device="cuda:1")
    assert a.device == "cuda:1" and fake.block_of(a.ptr)[2] == 1
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize("make, expected", [
    (lambda: kl.zeros(5, device="cuda"), np.zeros(5, np.float32)),
    (lambda: kl.ones(5, dtype=kl.int64, device="cuda"), np.ones(5, np.int64)),
    (lambda: kl.full(4, -0.0, device="cuda"), np.full(4, -0.0, np.float32)),
    (lambda: kl.full(4, 1.5, dtype=kl.float64, device="cuda"), np.full(4, 1.5)),
    (lambda: kl.full(3, -1, dtype=kl.int64, device="cuda"), np.full(3, -1, np.int64)),
    (lambda: kl.full(3, True, device="cuda"), np.ones(3, bool)),
    (lambda: kl.full(2, (1.0, 2.0, 3.0), device="cuda"), np.tile(np.float32([1, 2, 3]), (2, 1))),
    (lambda: kl.full(2, 7.0, dtype=kl.mat22, device="cuda"), np.full((2, 2, 2), 7.0, np.float32)),
], ids=["zeros", "ones-int64", "neg-zero", "float64", "int64-minus-one", "bool", "vec3",
        "mat22"])
def test_constructors_fill_device_memory(fake, make, expected):
    a = make()
    got = a.numpy()
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.astype(got.dtype).tobytes()  # bits: -0.0 stays -0.0


def test_repeated_bytes_and_words_are_memsets_not_uploads(fake):
    kl.zeros(1000, device="cuda")
    kl.ones(1000, device="cuda")           # 1.0f: one 32-bit word repeated
    assert fake.calls.get("cuMemsetD8") == 1 and fake.calls.get("cuMemsetD32") == 1
    assert "cuMemcpyHtoD" not in fake.calls
    kl.full(10, (1.0, 2.0, 3.0), device="cuda")  # no repeating pattern: uploaded
    assert fake.calls["cuMemcpyHtoD"] == 1


def test_like_constructors_keep_the_device(fake):
    src = kl.zeros((2, 2), dtype=kl.vec3, device="cuda:1", requires_grad=True)
    for like in (kl.zeros_like(src), kl.ones_like(src), kl.empty_like(src),
                 kl.full_like(src, 2.0)):
        assert like.device == "cuda:1" and like.dtype == kl.vec3 and like.shape == (2, 2)
        assert like.requires_grad and like.grad.device == "cuda:1"
    np.testing.assert_array_equal(kl.full_like(src, 2.0).numpy(), np.full((2, 2, 3), 2.0))


def test_from_numpy_to_a_device_copies(fake):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = kl.from_numpy(data, dtype=kl.vec3, device="cuda")
    data[0, 0] = 100.0
    assert a.shape == (2,)
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))


def test_fill_and_zero_on_whole_arrays_and_strided_views(fake):
    base = np.arange(10, dtype=np.float32)
    a = kl.array(base, device="cuda")
    a[::2].fill_(-3.0)
    expected = base.copy()
    expected[::2] = -3.0
    np.testing.assert_array_equal(a.numpy(), expected)
    a[1::3].zero_()
    expected[1::3] = 0.0
    np.testing.assert_array_equal(a.numpy(), expected)
    a.fill_(4.0)
    np.testing.assert_array_equal(a.numpy(), np.full(10, 4.0))


def test_fill_of_vector_elements(fake):
    a = kl.zeros(3, dtype=kl.vec3, device="cuda")
    a.fill_([1.0, -2.0, 0.5])
    np.testing.assert_array_equal(a.numpy(), np.tile([1.0, -2.0, 0.5], (3, 1)))


# --- Views ------------------------------------------------------------------------------

def test_slice_view_shares_device_memory_at_an_offset(fake):
    a = kl.array(np.arange(10, dtype=np.float64), device="cuda")
    v = a[2:5]
    assert v.device == "cuda:0" and v.shape == (3,) and v.ptr == a.ptr + 2 * 8
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0, 4.0])
    v.fill_(-1.0)
    np.testing.assert_array_equal(a.numpy(), [0, 1, -1, -1, -1, 5, 6, 7, 8, 9])


def test_row_and_column_views_of_a_2d_device_array(fake):
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = kl.array(data, device="cuda")
    row = a[2]
    assert row.shape == (6,) and row.ptr == a.ptr + 2 * 6 * 4 and row.strides == (4,)
    np.testing.assert_array_equal(row.numpy(), data[2])
    col = a[:, 1]
    assert col.strides == (24,) and not col.is_contiguous
    np.testing.assert_array_equal(col.numpy(), data[:, 1])
    np.testing.assert_array_equal(a[::-1, ::2].numpy(), data[::-1, ::2])
    assert a[1, 2] == data[1, 2]


def test_writes_through_strided_views_leave_the_rest_alone(fake):
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = kl.array(data, device="cuda")
    a[1:3, ::2] = 9.0
    a[:, 5] = [10.0, 20.0, 30.0, 40.0]
    expected = data.copy()
    expected[1:3, ::2] = 9.0
    expected[:, 5] = [10.0, 20.0, 30.0, 40.0]
    np.testing.assert_array_equal(a.numpy(), expected)


def test_setitem_from_an_overlapping_device_view_reads_before_it_writes(fake):
    a = kl.array(np.arange(6, dtype=np.float32), device="cuda")
    a[1:4] = a[0:3]
    np.testing.assert_array_equal(a.numpy(), [0, 0, 1, 2, 4, 5])
    b = kl.zeros(3, device="cuda")
    b[...] = a[3:]  # another buffer: device to device
    np.testing.assert_array_equal(b.numpy(), [2, 4, 5])


def test_element_of_a_vector_array_reads_back_as_numpy(fake):
    a = kl.array(np.arange(9, dtype=np.float32).reshape(3, 3), dtype=kl.vec3, device="cuda")
    np.testing.assert_array_equal(a[1], [3.0, 4.0, 5.0])
    a[2] = (7.0, 8.0, 9.5)
    np.testing.assert_array_equal(a.numpy()[2], [7.0, 8.0, 9.5])


def test_views_of_a_gradient_follow_the_view(fake):
    a = kl.zeros(6, device="cuda", requires_grad=True)
    a.grad.assign(np.arange(6, dtype=np.float32))
    v = a[1:4]
    assert v.grad.device == "cuda:0" and v.grad.ptr == a.grad.ptr + 4
    np.testing.assert_array_equal(v.grad.numpy(), [1.0, 2.0, 3.0])


def test_fancy_indices_are_refused_on_the_device(fake):
    a = kl.zeros(4, device="cuda")
    with pytest.raises(TypeError, match="integer and slice"):
        a[np.array([0, 1])]


# --- Reading and describing ---------------------------------------------------------------

def test_list_len_str_and_repr_read_back_from_the_device(fake):
    a = kl.array([1.5, -2.0], device="cuda")
    assert a.list() == [1.5, -2.0] and len(a) == 2 and a.size == 2
    assert str(a) == str(np.array([1.5, -2.0], np.float32))
    assert repr(a) == "array([ 1.5, -2. ], dtype=float32, device=cuda:0)"
    v = kl.array(np.ones((2, 3)), dtype=kl.vec3, device="cuda")
    assert [list(e) for e in v.list()] == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_strides_capacity_and_contiguity_are_those_of_the_layout(fake):
    a = kl.zeros((3, 4), dtype=kl.vec3d, device="cuda")
    assert a.strides == (4 * 24, 24) and a.capacity == 12 * 24 and a.is_contiguous
    assert a[:, ::2].strides == (96, 48) and not a[:, ::2].is_contiguous


def test_numpy_asarray_of_a_device_array_is_an_error_that_says_what_to_do(fake):
    a = kl.zeros(3, device="cuda")
    with pytest.raises(TypeError, match=r"a\.numpy\(\) gives a host copy"):
        np.asarray(a)
    assert not hasattr(a, "__array_interface__")


def test_cuda_array_interface_of_arrays_and_views(fake):
    a = kl.zeros((4, 5), dtype=kl.mat22, device="cuda")
    desc = a.__cuda_array_interface__
    assert desc == {"shape": (4, 5, 2, 2), "typestr": "<f4", "strides": None,
                    "data": (a.ptr, False), "version": 3, "stream": None}
    view = a[1:3, ::2].__cuda_array_interface__
    assert view["shape"] == (2, 3, 2, 2) and view["strides"] == (80, 32, 8, 4)
    assert view["data"] == (a.ptr + 80, False)
    assert kl.zeros(2, dtype=kl.int64, device="cuda").__cuda_array_interface__["typestr"] \
        == "<i8"


# --- Moving data: clone, to, copy, assign --------------------------------------------------

@pytest.mark.parametrize("src_dev, dst_dev", [("cpu", "cuda"), ("cuda", "cpu"),
                                              ("cuda", "cuda"), ("cuda:0", "cuda:1")])
def test_clone_between_devices(fake, src_dev, dst_dev, rng):
    data = _random(kl.vec3, 5, rng)
    src = kl.array(data, dtype=kl.vec3, device=src_dev)
    out = kl.clone(src, device=dst_dev)
    assert out.device == dst_dev and out.dtype == kl.vec3
    np.testing.assert_array_equal(out.numpy(), data)
    src.fill_(0.0)  # a copy, not a view
    np.testing.assert_array_equal(out.numpy(), data)


def test_clone_on_one_device_copies_device_to_device(fake):
    a = kl.array(np.arange(4.0), device="cuda")
    before = fake.calls.get("cuMemcpyDtoH", 0)
    b = kl.clone(a)
    assert fake.calls["cuMemcpyDtoD"] == 1 and fake.calls.get("cuMemcpyDtoH", 0) == before
    assert b.device == "cuda:0" and b.ptr != a.ptr


def test_clone_of_a_strided_view_is_contiguous(fake):
    data = np.arange(20, dtype=np.float32).reshape(4, 5)
    b = kl.clone(kl.array(data, device="cuda")[:, 1::2])
    assert b.is_contiguous
    np.testing.assert_array_equal(b.numpy(), data[:, 1::2])


def test_to_moves_and_keeps_the_gradient_flag(fake):
    a = kl.array([1.0, 2.0], requires_grad=True)
    assert a.to("cpu") is a
    b = a.to("cuda")
    assert b.device == "cuda:0" and b.requires_grad and b.grad.device == "cuda:0"
    np.testing.assert_array_equal(b.to("cpu").numpy(), [1.0, 2.0])
    assert b.to("cuda:0") is b


@pytest.mark.parametrize("src_dev, dst_dev", [("cpu", "cuda"), ("cuda", "cpu"),
                                              ("cuda", "cuda"), ("cuda:0", "cuda:1")])
def test_copy_with_offsets_and_count_between_devices(fake, src_dev, dst_dev, rng):
    src_data, dst_data = _random(kl.vec3, 8, rng), _random(kl.vec3, 6, rng)
    src = kl.array(src_data, dtype=kl.vec3, device=src_dev)
    dst = kl.array(dst_data, dtype=kl.vec3, device=dst_dev)
    kl.copy(dst, src, dest_offset=1, src_offset=4, count=3)
    expected = dst_data.copy()
    expected[1:4] = src_data[4:7]
    np.testing.assert_array_equal(dst.numpy(), expected)
    np.testing.assert_array_equal(src.numpy(), src_data)


def test_copy_with_count_zero_copies_what_fits(fake):
    src = kl.array(np.arange(5.0), dtype=float, device="cuda")
    dst = kl.zeros(3, device="cuda:1")
    kl.copy(dst, src, src_offset=1)
    np.testing.assert_array_equal(dst.numpy(), [1.0, 2.0, 3.0])


def test_copy_into_and_out_of_strided_device_views(fake):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = kl.array(data, device="cuda")
    col = kl.zeros(3, device="cuda")
    kl.copy(col, a[:, 2])
    np.testing.assert_array_equal(col.numpy(), data[:, 2])
    kl.copy(a[:, 0], kl.array([7.0, 8.0], device="cuda"), dest_offset=1)
    expected = data.copy()
    expected[1:, 0] = [7.0, 8.0]
    np.testing.assert_array_equal(a.numpy(), expected)


def test_copy_within_one_device_array_handles_overlap(fake):
    a = kl.array(np.arange(6, dtype=np.float32), device="cuda")
    kl.copy(a, a, dest_offset=1, src_offset=0, count=4)
    np.testing.assert_array_equal(a.numpy(), [0, 0, 1, 2, 3, 5])


@pytest.mark.parametrize("src_dev", ["cpu", "cuda", "cuda:1"])
def test_assign_from_an_array_on_any_device(fake, src_dev):
    dst = kl.zeros(3, dtype=kl.vec2, device="cuda")
    dst.assign(kl.array(np.arange(6.0).reshape(3, 2), dtype=kl.vec2, device=src_dev))
    np.testing.assert_array_equal(dst.numpy(), np.arange(6.0).reshape(3, 2))


def test_assign_of_host_data_and_into_a_host_array(fake):
    dst = kl.zeros((2, 2), dtype=kl.int32, device="cuda")
    dst.assign([[1, 2], [3, 4]])
    np.testing.assert_array_equal(dst.numpy(), [[1, 2], [3, 4]])
    host = kl.zeros((2, 2), dtype=kl.int32)
    host.assign(dst)
    np.testing.assert_array_equal(host.numpy(), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="cannot assign"):
        dst.assign(kl.zeros(3, dtype=kl.int32, device="cuda"))


# --- Gradients and the tape's array ops ---------------------------------------------------

def test_gradients_are_allocated_zeroed_on_the_arrays_device(fake):
    a = kl.array(np.ones(4), device="cuda:1", requires_grad=True)
    assert a.grad.device == "cuda:1" and fake.block_of(a.grad.ptr)[2] == 1
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(4))
    b = kl.zeros(2, device="cuda")
    b.requires_grad = True
    assert b.grad.device == "cuda:0"


def test_a_gradient_on_another_device_is_refused(fake):
    a = kl.zeros(3, device="cuda")
    with pytest.raises(ValueError, match="gradient on cpu for an array on cuda:0"):
        a.grad = kl.zeros(3)


def test_tape_array_ops_carry_gradients_across_devices(fake):
    x = kl.array([1.0, 2.0, 3.0, 4.0, 5.0], device="cuda", requires_grad=True)
    with kl.Tape() as tape:
        y = kl.clone(x)                                         # y = x, on cuda:0
        z = kl.zeros(3, device="cuda:1", requires_grad=True)
        kl.copy(z, y, dest_offset=0, src_offset=2, count=3)     # z = y[2:5], on cuda:1
        w = kl.zeros(3, requires_grad=True)
        w.assign(z)                                             # w = z, on the CPU
    tape.backward(grads={w: kl.array([10.0, 20.0, 30.0])})
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 10.0, 20.0, 30.0])
    np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0, 0.0])  # consumed by assign
    tape.zero()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(5))


# --- Lifetime -----------------------------------------------------------------------------

def test_device_memory_is_freed_with_the_last_array_or_view(fake):
    a = kl.zeros(100, device="cuda", requires_grad=True)
    ptr, grad_ptr = a.ptr, a.grad.ptr
    view = a[10:20]
    del a
    gc.collect()
    assert ptr not in fake.freed and grad_ptr not in fake.freed
    np.testing.assert_array_equal(view.numpy(), np.zeros(10))  # still readable
    del view
    gc.collect()
    assert ptr in fake.freed and grad_ptr in fake.freed


def test_temporaries_do_not_leak_device_memory(fake):
    for _ in range(20):
        kl.clone(kl.ones(64, device="cuda"))
    gc.collect()
    assert fake.blocks == {}  # (nothing else is alive here: no launch has run)


# --- DLPack ---------------------------------------------------------------------------------

class _DLTensor(ctypes.Structure):  # DLPack's C layout, written out here independently
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def test_dlpack_device_names_the_gpu(fake):
    assert kl.zeros(1, device="cuda").__dlpack_device__() == (2, 0)
    assert kl.zeros(1, device="cuda:1").__dlpack_device__() == (2, 1)


def test_dlpack_capsule_describes_a_strided_device_view(fake):
    a = kl.zeros((4, 5), dtype=kl.vec3, device="cuda:1")
    capsule = a[1:3, ::2].__dlpack__(stream=1)
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    assert (t.device_type, t.device_id, t.ndim) == (2, 1, 3)
    assert (t.code, t.bits, t.lanes) == (2, 32, 1)  # kDLFloat, 32 bits
    assert t.data + t.byte_offset == a.ptr + 5 * 12
    assert [t.shape[d] for d in range(3)] == [2, 3, 3]
    assert [t.strides[d] for d in range(3)] == [15, 6, 1]  # in elements, as DLPack counts


def test_dlpack_round_trip_shares_memory_and_releases_it(fake):
    baseline = exported_count()
    a = kl.array(np.arange(6, dtype=np.float32), device="cuda")
    ptr = a.ptr
    b = kl.from_dlpack(a)
    assert b.device == "cuda:0" and b.ptr == ptr and exported_count() == baseline + 1
    b.fill_(2.0)
    np.testing.assert_array_equal(a.numpy(), np.full(6, 2.0))
    del a
    gc.collect()
    assert ptr not in fake.freed  # b still uses it
    del b
    gc.collect()
    assert ptr in fake.freed and exported_count() == baseline


def test_an_unconsumed_capsule_releases_the_memory(fake):
    baseline = exported_count()
    a = kl.zeros(3, device="cuda")
    ptr = a.ptr
    capsule = a.__dlpack__()
    del a
    gc.collect()
    assert ptr not in fake.freed
    del capsule
    gc.collect()
    assert ptr in fake.freed and exported_count() == baseline


def test_from_dlpack_of_a_device_tensor_takes_the_element_type(fake):
    a = kl.array(np.arange(12, dtype=np.float32).reshape(4, 3), device="cuda")
    v = kl.from_dlpack(a, dtype=kl.vec3, requires_grad=True)
    assert v.shape == (4,) and v.dtype == kl.vec3 and v.grad.device == "cuda:0"
    np.testing.assert_array_equal(v.numpy(), np.arange(12).reshape(4, 3))
    strided = kl.from_dlpack(a[::2])
    assert strided.strides == (24, 4) and strided.ptr == a.ptr
    np.testing.assert_array_equal(strided.numpy(), np.arange(12).reshape(4, 3)[::2])


# --- Devices ------------------------------------------------------------------------------

def test_scoped_device_and_set_device_choose_the_default(fake):
    assert kl.get_device() == "cpu"
    with kl.ScopedDevice("cuda:1") as dev:
        assert dev == "cuda:1" and kl.get_device() == "cuda:1"
        assert kl.zeros(2).device == "cuda:1" and kl.get_device("cuda") == "cuda:1"
    assert kl.get_device() == "cpu" and kl.zeros(2).device == "cpu"
    kl.set_device("cuda:0")
    try:
        assert kl.empty(1).device == "cuda:0"
    finally:
        kl.set_device("cpu")
    assert kl.get_device() == "cpu"


def test_synchronize_waits_only_on_devices_in_use(fake):
    kl.synchronize()
    kl.synchronize_device("cuda:1")
    assert "cuCtxSynchronize" not in fake.calls  # nothing started yet
    kl.zeros(1, device="cuda:1")
    before = fake.calls.get("cuCtxSynchronize", 0)
    kl.synchronize()
    kl.synchronize_device("cuda:1")
    kl.synchronize_device("cuda:0")  # never used: nothing to wait for
    assert fake.calls["cuCtxSynchronize"] == before + 2


def test_a_missing_second_device_is_named(fake):
    with pytest.raises(RuntimeError, match="no CUDA device 'cuda:2'.*2 CUDA devices"):
        kl.zeros(1, device="cuda:2")


def test_without_a_driver_cuda_is_unavailable_and_says_why(monkeypatch):
    uninstalled(monkeypatch, why="libcuda.so.1: cannot open shared object file")
    assert kl.is_cuda_available() is False
    with pytest.raises(RuntimeError, match="no CUDA device: 'cuda' is not available .*libcuda"):
        kl.zeros(3, device="cuda")
    with pytest.raises(ValueError, match="not available"):  # as kernlab raised before
        kl.zeros(3).to("cuda:0")
    with pytest.raises(kl.LaunchError, match="no CUDA device"):
        kl.launch(scale, 3, inputs=[kl.zeros(3), kl.zeros(3), 2.0], device="cuda")


def test_import_without_the_bindings_raises_nothing():
    code = ("import sys; sys.modules['cuda'] = None; import kernlab as kl\n"
            "print(kl.is_cuda_available())\n"
            "try:\n    kl.zeros(1, device='cuda')\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "False"
    assert out[1].startswith("no CUDA device: 'cuda' is not available (the CUDA Python "
                             "bindings are not installed")


# --- Launches on device arrays ----------------------------------------------------------

@kl.kernel
def scale(x: kl.array(dtype=float), y: kl.array(dtype=float), s: float):
    i = kl.tid()
    y[i] = s * x[i]


@kl.kernel
def integrate(v: kl.array(dtype=kl.vec3), m: kl.array(dtype=float), g: kl.vec3,
              out: kl.array(dtype=kl.vec3), grid: kl.array(dtype=float, ndim=2)):
    i = kl.tid()
    out[i] = v[i] / m[i] + g * 0.5
    for j in range(grid.shape[1]):
        grid[i, j] = kl.length(out[i]) * float(j)


@kl.kernel
def sum_of_sin_squares(x: kl.array(dtype=float), loss: kl.array(dtype=float)):
    i = kl.tid()
    s = kl.sin(x[i])
    kl.atomic_add(loss, 0, s * s)


@kl.kernel
def power_loop(x: kl.array(dtype=kl.float64), n: int, y: kl.array(dtype=kl.float64)):
    i = kl.tid()
    v = kl.float64(1.0)
    for _ in range(n):
        v = v * x[i]
    y[i] = v


def test_mismatched_devices_in_a_launch_name_the_parameter(fake):
    with pytest.raises(kl.LaunchError, match=r"parameter 'y' .* got an array on cuda:0, but "
                                             r"the launch is on cpu"):
        kl.launch(scale, 3, inputs=[kl.zeros(3), kl.zeros(3, device="cuda"), 1.0])
    with pytest.raises(kl.LaunchError, match=r"parameter 'x' .* got an array on cpu, but "
                                             r"the launch is on cuda:1"):
        kl.launch(scale, 3, inputs=[kl.zeros(3), kl.zeros(3, device="cuda:1"), 1.0],
                  device="cuda:1")


def test_forward_launch_on_device_arrays_agrees_with_the_cpu(runner, rng):
    v, m = _random(kl.vec3, 16, rng), rng.uniform(1, 2, 16).astype(np.float32)
    results = {}
    for device in ("cpu", "cuda"):
        out = kl.zeros(16, dtype=kl.vec3, device=device)
        grid = kl.zeros((16, 5), device=device)
        kl.launch(integrate, 16, inputs=[kl.array(v, dtype=kl.vec3, device=device),
                                         kl.array(m, device=device), (0.0, -9.8, 0.0), out,
                                         grid])
        results[device] = (out.numpy(), grid.numpy())
    expected = v / m[:, None] + np.array([0.0, -4.9, 0.0], np.float32)
    np.testing.assert_allclose(results["cpu"][0], expected, rtol=1e-6)
    for cpu, gpu in zip(results["cpu"], results["cuda"]):
        np.testing.assert_allclose(gpu, cpu, rtol=2e-6, atol=1e-6)
    if runner is not None:
        assert [name for name, _, _ in runner.launched] == ["integrate"]


def test_a_kernel_writes_through_a_device_view_at_its_offset(runner):
    a = kl.zeros(10, device="cuda")
    kl.launch(scale, 4, inputs=[kl.ones(4, device="cuda"), a[3:7], 2.5])
    np.testing.assert_array_equal(a.numpy(), [0, 0, 0, 2.5, 2.5, 2.5, 2.5, 0, 0, 0])
    b = kl.zeros(8, device="cuda")
    kl.launch(scale, 4, inputs=[kl.array(np.arange(4.0), dtype=float, device="cuda"), b[::2],
                                1.0])
    np.testing.assert_array_equal(b.numpy(), [0, 0, 1, 0, 2, 0, 3, 0])


def test_adjoint_launch_on_device_arrays_agrees_with_the_cpu(runner, rng):
    x = rng.uniform(0.5, 1.5, 12)
    grads = {}
    for device in ("cpu", "cuda"):
        xs = kl.array(x, dtype=kl.float64, device=device)
        adj_x = kl.zeros(12, dtype=kl.float64, device=device)
        y = kl.zeros(12, dtype=kl.float64, device=device)
        kl.launch(power_loop, 12, inputs=[xs, 3], outputs=[y], adjoint=True,
                  adj_inputs=[adj_x, 0], adj_outputs=[kl.ones(12, dtype=kl.float64,
                                                               device=device)])
        grads[device] = adj_x.numpy()
    np.testing.assert_allclose(grads["cpu"], 3 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(grads["cuda"], grads["cpu"], rtol=1e-12)


def test_tape_backward_on_device_arrays_matches_calculus(runner):
    x0 = np.linspace(-1.0, 1.0, 40).astype(np.float32)
    x = kl.array(x0, device="cuda", requires_grad=True)
    loss = kl.zeros(1, device="cuda", requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(sum_of_sin_squares, 40, inputs=[x, loss])
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy(), [np.sum(np.sin(x0) ** 2)], rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.sin(x0) * np.cos(x0), rtol=1e-5,
                               atol=1e-6)
    assert x.grad.device == "cuda:0"
    tape.zero()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(40))


def test_tape_backward_through_clone_copy_assign_and_a_device_move(runner):
    x0 = np.array([0.5, 1.0, 1.5, 2.0], np.float64)
    x = kl.array(x0, dtype=kl.float64, requires_grad=True)            # on the CPU
    with kl.Tape() as tape:
        xc = x.to("cuda")                                               # clone to the GPU
        part = kl.zeros(3, dtype=kl.float64, device="cuda", requires_grad=True)
        kl.copy(part, xc, src_offset=1, count=3)                        # x[1:4]
        moved = kl.zeros(3, dtype=kl.float64, device="cuda", requires_grad=True)
        moved.assign(part)
        y = kl.zeros(3, dtype=kl.float64, device="cuda", requires_grad=True)
        kl.launch(power_loop, 3, inputs=[moved, 4], outputs=[y])        # y = x[1:4]^4
    tape.backward(grads={y: kl.ones(3, dtype=kl.float64, device="cuda")})
    np.testing.assert_allclose(y.numpy(), x0[1:] ** 4, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), [0.0, *(4 * x0[1:] ** 3)], rtol=1e-12)
    assert x.grad.device == "cpu"


def test_tape_refuses_overlapping_device_views_read_and_written(runner):
    a = kl.array(np.arange(5.0), dtype=float, device="cuda", requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(scale, 3, inputs=[a[0:3], a[2:5], 2.0])  # x and y share a[2]
    with pytest.raises(kl.GradientError, match="same array as 'x'.*'y'"):
        tape.backward(grads={a: kl.ones(5, device="cuda")})
    b = kl.zeros(6, device="cuda", requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(scale, 3, inputs=[b[0:3], b[3:6], 2.0])  # side by side: no overlap
    tape.backward(grads={b: kl.ones(6, device="cuda")})
    np.testing.assert_array_equal(b.grad.numpy()[:3], [3.0, 3.0, 3.0])  # 1 + d(2x)/dx


def test_gradcheck_runs_on_device_arrays(runner, capsys):
    x = kl.array(np.linspace(0.6, 1.4, 5), dtype=kl.float64, device="cuda")
    y = kl.zeros(5, dtype=kl.float64, device="cuda")
    assert kl.autograd.gradcheck(power_loop, 5, [x, 3], [y], eps=1e-6, device="cuda")
    jac = kl.autograd.jacobian(power_loop, 5, [x, 3], [y], device="cuda")[(0, 0)]
    np.testing.assert_allclose(jac, np.diag(3 * np.linspace(0.6, 1.4, 5) ** 2), rtol=1e-10)
    np.testing.assert_allclose(x.numpy(), np.linspace(0.6, 1.4, 5))  # restored


def test_out_of_bounds_on_the_device_names_kernel_line_index_and_shape(runner):
    x, y = kl.zeros(4, device="cuda"), kl.zeros(8, device="cuda")
    with pytest.raises(IndexError) as info:
        kl.launch(scale, 8, inputs=[x, y, 1.0])
    text = str(info.value)
    assert "index 4 is out of bounds for axis 0 of array 'x' with shape (4,)" in text
    assert "in kernel 'scale'" in text and "y[i] = s * x[i]" in text


def test_the_status_word_is_cleared_after_a_failure_only(runner):
    x, y = kl.array(np.arange(4.0), dtype=float, device="cuda"), kl.zeros(8, device="cuda")
    kl.launch(scale, 4, inputs=[x, y, 2.0])  # loads the kernel: its status word starts at 0
    clears = runner.calls.get("cuMemsetD8", 0) if runner else None
    kl.launch(scale, 4, inputs=[x, y, 3.0])
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        kl.launch(scale, 6, inputs=[x, y, 1.0])
    kl.launch(scale, 4, inputs=[x, y, 5.0])  # clean again: no stale report
    np.testing.assert_array_equal(y.numpy(), [0, 5, 10, 15, 0, 0, 0, 0])
    if runner:  # a clean launch writes nothing to clear; the failed one is cleared once
        assert runner.calls.get("cuMemsetD8", 0) == clears + 1


@kl.kernel(bounds_check=False)
def scale_unchecked(x: kl.array(dtype=float), y: kl.array(dtype=float), s: float):
    i = kl.tid()
    y[i] = s * x[i]


def test_a_launch_without_checks_is_asynchronous_and_numpy_waits_for_it(runner):
    x, y = kl.array(np.arange(5.0), dtype=float, device="cuda"), kl.zeros(5, device="cuda")
    kl.launch(scale_unchecked, 5, inputs=[x, y, 3.0])
    if runner:  # nothing waited for the kernel, nor read a status word
        syncs, reads = runner.calls.get("cuCtxSynchronize", 0), runner.calls.get("cuMemcpyDtoH", 0)
        kl.launch(scale_unchecked, 5, inputs=[x, y, 2.0])
        assert runner.calls.get("cuCtxSynchronize", 0) == syncs
        assert runner.calls.get("cuMemcpyDtoH", 0) == reads
        kl.launch(scale, 5, inputs=[x, y, 2.0])  # checked: it waits and reads the status
        assert runner.calls["cuCtxSynchronize"] == syncs + 1
        kl.launch(scale_unchecked, 5, inputs=[x, y, 2.0])
        assert y.__cuda_array_interface__["stream"] is None  # so it must have waited
        assert runner.calls["cuCtxSynchronize"] == syncs + 2
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(5.0))


def test_the_runner_refuses_host_arrays_naming_the_parameter(runner):
    runner_of = scale.compiled("cuda")
    with pytest.raises(kl.LaunchError, match=r"'scale'.*parameter 'y' got an array on cpu"):
        runner_of.launch((3,), [kl.zeros(3, device="cuda"), kl.zeros(3), np.float32(1.0)])


def test_a_failing_launch_is_a_cuda_error_naming_the_kernel(runner):
    if runner is None:
        pytest.skip("the failure is injected through the fake driver")
    runner.fail_launch = CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_ADDRESS while running kernel "
                                        "'scale'") as info:
        kl.launch(scale, 3, inputs=[kl.zeros(3, device="cuda"), kl.zeros(3, device="cuda"),
                                    1.0])
    assert "restart the Python kernel" in str(info.value)  # the context is lost for good
    runner.fail_launch = CUresult.CUDA_ERROR_OUT_OF_MEMORY  # not sticky: no such advice
    with pytest.raises(CudaError, match="CUDA_ERROR_OUT_OF_MEMORY") as info:
        kl.launch(scale, 3, inputs=[kl.zeros(3, device="cuda"), kl.zeros(3, device="cuda"),
                                    1.0])
    assert "restart" not in str(info.value)


def test_torch_shares_device_memory_both_ways(runner):
    torch = pytest.importorskip("torch")
    if runner is not None or not torch.cuda.is_available():
        pytest.skip("needs torch with CUDA and a GPU")
    a = kl.array(np.arange(4.0), device="cuda")
    t = kl.to_torch(a)
    assert t.device.type == "cuda" and t.data_ptr() == a.ptr
    t.mul_(2.0)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.numpy(), [0.0, 2.0, 4.0, 6.0])
    src = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    b = kl.from_torch(src, dtype=kl.vec3)
    assert b.device == "cuda:0" and b.ptr == src.data_ptr() and b.shape == (2,)
    assert math.isclose(b.numpy()[1, 2], 5.0)


@kl.kernel
def no_arrays(n: int, scale: float):
    i = kl.tid()
    if i < 0:
        kl.printf("%d %f\n", n, scale)


def test_a_kernel_without_arrays_runs_on_the_device_the_launch_names(monkeypatch, tmp_path):
    if CXX is None:
        pytest.skip("no C++ compiler to emulate CUDA code on the CPU")
    fake = install(monkeypatch, devices=2, emulate_in=tmp_path)
    seen = []
    real = fake.cuLaunchKernel

    def spy(*args):
        seen.append(fake.current)
        return real(*args)
    monkeypatch.setattr(fake, "cuLaunchKernel", spy)
    kl.launch(no_arrays, 4, inputs=[3, 0.5], device="cuda:1")
    kl.launch(no_arrays, 4, inputs=[3, 0.5], device="cuda:0")
    assert seen == [1, 0]
