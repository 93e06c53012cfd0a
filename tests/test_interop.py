"""Interop: DLPack, NumPy, __cuda_array_interface__, and PyTorch (skipped without torch).

Expected values come from NumPy, from torch's own autograd on the same formula, and from
torch.autograd.gradcheck's finite differences.
"""
import subprocess
import sys

import numpy as np
import pytest

import kernlab as kl
from fake_cuda import install, uninstalled


@kl.kernel
def scale(x: kl.array(dtype=float), y: kl.array(dtype=float), s: float):
    i = kl.tid()
    y[i] = s * x[i]


@kl.kernel
def add_one_2d(x: kl.array(dtype=float, ndim=2)):
    i, j = kl.tid()
    x[i, j] = x[i, j] + 1.0


@kl.kernel
def vec_lengths(v: kl.array(dtype=kl.vec3), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = kl.length(v[i])


@kl.kernel
def integrate(v: kl.array(dtype=kl.vec3d), m: kl.array(dtype=kl.float64),
              gravity: kl.vec3d, dt: kl.float64, out: kl.array(dtype=kl.vec3d)):
    i = kl.tid()
    out[i] = v[i] / m[i] + gravity * dt


@kl.kernel
def square_sum(x: kl.array(dtype=kl.float64), sq: kl.array(dtype=kl.float64),
               total: kl.array(dtype=kl.float64)):
    i = kl.tid()
    sq[i] = x[i] * x[i]
    kl.atomic_add(total, 0, x[i])


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# --- DLPack export ------------------------------------------------------------------------

def test_cpu_array_reports_the_dlpack_cpu_device():
    assert kl.zeros(3).__dlpack_device__() == (1, 0)


def test_numpy_from_dlpack_shares_the_array_memory():
    a = kl.zeros(4)
    view = np.from_dlpack(a)
    view[2] = 5.0
    assert a.numpy()[2] == 5.0
    assert _address(view) == a.ptr


def test_vec3_array_exports_an_n_by_3_tensor():
    a = kl.array(np.arange(6.0).reshape(2, 3), dtype=kl.vec3)
    view = np.from_dlpack(a)
    assert view.shape == (2, 3) and view.dtype == np.float32
    np.testing.assert_array_equal(view, np.arange(6.0).reshape(2, 3))


def test_mat33_array_exports_an_n_by_3_by_3_tensor():
    a = kl.zeros(5, dtype=kl.mat33d)
    view = np.from_dlpack(a)
    assert view.shape == (5, 3, 3) and view.dtype == np.float64


def test_sliced_array_exports_its_strides():
    a = kl.array(np.arange(8.0), dtype=float)
    view = np.from_dlpack(a[1::2])
    np.testing.assert_array_equal(view, [1.0, 3.0, 5.0, 7.0])
    view[0] = -1.0
    assert a.numpy()[1] == -1.0


# --- DLPack import ------------------------------------------------------------------------

def test_from_dlpack_shares_numpy_memory():
    data = np.zeros(4, np.float32)
    a = kl.from_dlpack(data)
    kl.launch(scale, 4, inputs=[kl.ones(4), a, 3.0])
    np.testing.assert_array_equal(data, [3.0, 3.0, 3.0, 3.0])


def test_from_dlpack_keeps_the_scalar_type():
    assert kl.from_dlpack(np.zeros(2, np.float64)).dtype == kl.float64
    assert kl.from_dlpack(np.zeros(2, np.int64)).dtype == kl.int64
    assert kl.from_dlpack(np.zeros(2, np.bool_)).dtype == kl.bool


def test_from_dlpack_with_a_vector_dtype_takes_the_trailing_axis():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = kl.from_dlpack(data, dtype=kl.vec3)
    assert a.shape == (4,) and a.dtype == kl.vec3
    out = kl.zeros(4)
    kl.launch(vec_lengths, 4, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(data, axis=1), rtol=1e-6)


def test_from_dlpack_with_a_matrix_dtype_takes_two_trailing_axes():
    a = kl.from_dlpack(np.zeros((2, 5, 3, 3)), dtype=kl.mat33d)
    assert a.shape == (2, 5) and a.dtype == kl.mat33d


def test_from_dlpack_of_a_kernlab_array_is_the_same_memory():
    a = kl.array(np.arange(6.0).reshape(2, 3), dtype=kl.vec3)
    b = kl.from_dlpack(a, dtype=kl.vec3)
    assert b.ptr == a.ptr and b.shape == (2,)


def test_from_dlpack_of_a_strided_view_reads_the_right_elements(backend):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = kl.from_dlpack(data.T)  # shape (4, 3), not C-contiguous, shares memory
    assert view.ptr == _address(data)
    kl.launch(add_one_2d, view.shape, inputs=[view])
    np.testing.assert_array_equal(data, np.arange(12).reshape(3, 4) + 1)


@pytest.mark.cpu_only("the DLPack capsule comes from NumPy: host memory")
def test_from_dlpack_of_every_other_vec3(backend):
    data = np.arange(24, dtype=np.float32).reshape(8, 3)
    a = kl.from_dlpack(data[::2], dtype=kl.vec3)
    out = kl.zeros(4)
    kl.launch(vec_lengths, 4, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(data[::2], axis=1), rtol=1e-6)


def test_from_dlpack_refuses_a_scalar_type_it_would_have_to_copy():
    with pytest.raises(TypeError, match="without a copy"):
        kl.from_dlpack(np.zeros((2, 3), np.float64), dtype=kl.vec3)


def test_from_dlpack_refuses_a_wrong_trailing_axis():
    with pytest.raises(ValueError, match=r"does not end in \(3,\)"):
        kl.from_dlpack(np.zeros((2, 4), np.float32), dtype=kl.vec3)


def test_from_dlpack_refuses_elements_whose_components_are_apart():
    data = np.zeros((3, 4), np.float32).T  # each row of 3 is strided
    with pytest.raises(ValueError, match="not adjacent"):
        kl.from_dlpack(data, dtype=kl.vec3)


def test_from_dlpack_refuses_types_kernlab_lacks():
    with pytest.raises(TypeError, match="complex64"):
        kl.from_dlpack(np.zeros(2, np.complex64))


def test_from_dlpack_takes_float16():
    data = np.array([0.5, -2.0, 65504.0], np.float16)
    a = kl.from_dlpack(data)
    assert a.dtype == kl.float16
    np.testing.assert_array_equal(a.numpy(), data)


def test_from_dlpack_refuses_objects_without_the_protocol():
    with pytest.raises(TypeError, match="__dlpack__"):
        kl.from_dlpack([1.0, 2.0])


def test_from_dlpack_of_a_cuda_tensor_without_a_gpu_says_so(monkeypatch):
    uninstalled(monkeypatch)  # whatever this machine has

    class CudaTensor:
        def __dlpack__(self, stream=None):
            raise AssertionError("not reached: nothing is consumed")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(RuntimeError, match="no CUDA device: 'cuda:0'"):
        kl.from_dlpack(CudaTensor())


def test_from_dlpack_can_ask_for_a_gradient():
    a = kl.from_dlpack(np.zeros(3), requires_grad=True)
    assert a.grad is not None and a.grad.shape == (3,)


# --- NumPy --------------------------------------------------------------------------------

def test_from_numpy_shares_memory_when_the_dtype_matches():
    data = np.zeros(3, np.float32)
    a = kl.from_numpy(data)
    assert a.ptr == _address(data)
    kl.launch(scale, 3, inputs=[kl.ones(3), a, 2.0])
    np.testing.assert_array_equal(data, [2.0, 2.0, 2.0])


def test_from_numpy_shares_memory_for_vector_elements():
    data = np.ones((4, 3), np.float32)
    a = kl.from_numpy(data, dtype=kl.vec3)
    assert a.shape == (4,) and a.ptr == _address(data)


def test_from_numpy_copies_when_the_dtype_differs():
    data = np.zeros(3, np.float64)
    a = kl.from_numpy(data, dtype=kl.float32)
    a.fill_(1.0)
    assert not data.any()


def test_numpy_asarray_shares_memory_through_the_array_interface():
    a = kl.zeros(2, dtype=kl.vec3)
    view = np.asarray(a)
    assert view.shape == (2, 3) and _address(view) == a.ptr


# --- __cuda_array_interface__ -------------------------------------------------------------

def test_cpu_arrays_have_no_cuda_array_interface():
    assert not hasattr(kl.zeros(2), "__cuda_array_interface__")


def test_cuda_array_interface_describes_elements_as_trailing_axes(monkeypatch):
    install(monkeypatch)  # a fake driver: no GPU is needed to check the description
    a = kl.zeros(4, dtype=kl.vec3, device="cuda")
    desc = a.__cuda_array_interface__
    assert desc["shape"] == (4, 3) and desc["strides"] is None  # None: C-contiguous
    assert desc["typestr"] == "<f4" and desc["version"] == 3
    assert desc["data"] == (a.ptr, False)
    assert a[::2].__cuda_array_interface__["strides"] == (24, 4)
    assert a.__dlpack_device__() == (2, 0)


# --- Optional dependency ------------------------------------------------------------------

def test_importing_kernlab_does_not_import_torch():
    code = "import sys, kernlab; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


# --- PyTorch ------------------------------------------------------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_from_torch_shares_memory(torch):
    t = torch.zeros(3)
    a = kl.from_torch(t)
    assert a.dtype == kl.float32 and a.ptr == t.data_ptr()
    kl.launch(scale, 3, inputs=[kl.ones(3), a, 4.0])
    assert t.tolist() == [4.0, 4.0, 4.0]


def test_from_torch_keeps_the_scalar_type(torch):
    assert kl.from_torch(torch.zeros(2, dtype=torch.float64)).dtype == kl.float64
    assert kl.from_torch(torch.zeros(2, dtype=torch.int32)).dtype == kl.int32


def test_from_torch_with_vec3_takes_the_trailing_axis(torch):
    t = torch.tensor([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])
    out = kl.zeros(2)
    kl.launch(vec_lengths, 2, inputs=[kl.from_torch(t, dtype=kl.vec3), out])
    np.testing.assert_allclose(out.numpy(), [5.0, 2.0])


def test_from_torch_of_a_transposed_tensor_shares_memory(torch, backend):
    t = torch.zeros(3, 4)
    a = kl.from_torch(t.T)
    kl.launch(add_one_2d, a.shape, inputs=[a])
    assert bool((t == 1.0).all())


def test_from_torch_shares_a_half_tensor(torch):
    # float16 is a kernlab type (as in Warp), so a half tensor is taken without a copy
    t = torch.tensor([1.5, -2.25], dtype=torch.float16)
    a = kl.from_torch(t)
    assert a.dtype == kl.float16 and a.ptr == t.data_ptr()
    np.testing.assert_array_equal(a.numpy(), np.array([1.5, -2.25], np.float16))


def test_from_torch_of_a_tensor_needing_grad_allocates_a_shared_zero_grad(torch):
    t = torch.ones(3, requires_grad=True)
    a = kl.from_torch(t)
    assert t.grad is not None and a.grad.ptr == t.grad.data_ptr()
    assert t.grad.tolist() == [0.0, 0.0, 0.0]


def test_from_torch_wraps_an_existing_grad(torch):
    t = torch.ones(2, requires_grad=True)
    t.grad = torch.tensor([7.0, 8.0])
    a = kl.from_torch(t)
    np.testing.assert_array_equal(a.grad.numpy(), [7.0, 8.0])


def test_from_torch_requires_grad_false_gives_no_grad(torch):
    t = torch.ones(2, requires_grad=True)
    assert kl.from_torch(t, requires_grad=False).grad is None and t.grad is None


def test_kernlab_tape_gradient_lands_in_the_tensor_grad(torch):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = torch.zeros(3, requires_grad=True)
    ax, ay = kl.from_torch(x), kl.from_torch(y)
    with kl.Tape() as tape:
        kl.launch(scale, 3, inputs=[ax, ay, 2.5])
    tape.backward(grads={ay: kl.ones(3)})
    assert x.grad.tolist() == [2.5, 2.5, 2.5]


def test_torch_backward_accumulates_into_the_array_grad(torch):
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    a = kl.from_torch(t)
    (t * t).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    (t * t).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 8.0])


def test_to_torch_shares_memory(torch):
    a = kl.zeros(3)
    t = kl.to_torch(a)
    assert t.data_ptr() == a.ptr and t.dtype == torch.float32 and not t.requires_grad
    t[1] = 9.0
    assert a.numpy()[1] == 9.0


def test_to_torch_of_vec3_gives_n_by_3(torch):
    t = kl.to_torch(kl.zeros(4, dtype=kl.vec3d))
    assert tuple(t.shape) == (4, 3) and t.dtype == torch.float64


def test_to_torch_of_an_array_with_grad_shares_the_grad(torch):
    a = kl.zeros(3, requires_grad=True)
    t = kl.to_torch(a)
    assert t.requires_grad and t.is_leaf and t.grad.data_ptr() == a.grad.ptr
    (3.0 * t).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0, 3.0])


def test_to_torch_requires_grad_false_drops_the_grad(torch):
    t = kl.to_torch(kl.zeros(2, requires_grad=True), requires_grad=False)
    assert not t.requires_grad and t.grad is None


def test_to_torch_of_an_int_array_cannot_require_grad(torch):
    with pytest.raises(TypeError, match="floating-point"):
        kl.to_torch(kl.zeros(2, dtype=kl.int32), requires_grad=True)


def test_round_trip_through_torch_is_the_same_memory(torch):
    a = kl.ones(5, dtype=kl.vec3)
    b = kl.from_torch(kl.to_torch(a), dtype=kl.vec3)
    assert b.ptr == a.ptr and b.dtype == kl.vec3 and b.shape == (5,)


# --- Kernels as torch functions -----------------------------------------------------------

GRAVITY = (0.0, -9.8, 0.0)


def _velocities(torch, n=6):
    gen = torch.Generator().manual_seed(7)
    v = torch.randn(n, 3, dtype=torch.float64, generator=gen).requires_grad_()
    m = (torch.rand(n, dtype=torch.float64, generator=gen) + 0.5).requires_grad_()
    return v, m


def _integrate_in_torch(torch, v, m, dt):
    return v / m[:, None] + torch.tensor(GRAVITY, dtype=torch.float64) * dt


def test_torch_function_forward_matches_the_formula(torch, backend):
    v, m = _velocities(torch)
    out = kl.to_torch_function(integrate, outputs=["out"])(v, m, GRAVITY, 0.01)
    assert out.shape == (6, 3) and out.dtype == torch.float64
    torch.testing.assert_close(out, _integrate_in_torch(torch, v, m, 0.01))


def test_torch_function_gradients_match_torch_autograd(torch, backend):
    v, m = _velocities(torch)
    weights = torch.linspace(-1.0, 2.0, 18, dtype=torch.float64).reshape(6, 3)
    step = kl.to_torch_function(integrate, outputs=["out"])
    (step(v, m, GRAVITY, 0.01) * weights).sum().backward()
    got = v.grad.clone(), m.grad.clone()
    v.grad = m.grad = None
    (_integrate_in_torch(torch, v, m, 0.01) * weights).sum().backward()
    torch.testing.assert_close(got[0], v.grad)
    torch.testing.assert_close(got[1], m.grad)


def test_torch_function_passes_gradcheck(torch, backend):
    v, m = _velocities(torch, n=4)
    step = kl.to_torch_function(integrate, outputs=["out"])
    assert torch.autograd.gradcheck(lambda v, m: step(v, m, GRAVITY, 0.01), (v, m))


def test_torch_function_takes_arguments_by_name(torch):
    v, m = _velocities(torch)
    step = kl.to_torch_function(integrate, outputs=["out"])
    torch.testing.assert_close(step(v, m, dt=0.5, gravity=GRAVITY),
                               _integrate_in_torch(torch, v, m, 0.5))


def test_torch_function_value_parameters_may_be_tensors_without_grad(torch):
    v, m = _velocities(torch)
    step = kl.to_torch_function(integrate, outputs=["out"])
    out = step(v, m, torch.tensor(GRAVITY, dtype=torch.float64), torch.tensor(0.01))
    torch.testing.assert_close(out, _integrate_in_torch(torch, v, m, 0.01))


def test_torch_function_refuses_a_value_tensor_that_requires_grad(torch):
    v, m = _velocities(torch)
    dt = torch.tensor(0.01, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match="'dt'.*no gradient"):
        kl.to_torch_function(integrate, outputs=["out"])(v, m, GRAVITY, dt)


def test_torch_function_names_the_argument_of_the_wrong_dtype(torch):
    v, m = _velocities(torch)
    with pytest.raises(TypeError, match="argument 'v'"):
        kl.to_torch_function(integrate, outputs=["out"])(v.float(), m, GRAVITY, 0.01)


def test_torch_function_refuses_an_unknown_output(torch):
    with pytest.raises(ValueError, match="no parameter 'result'"):
        kl.to_torch_function(integrate, outputs=["result"])


def test_torch_function_with_several_outputs_and_given_shapes(torch, backend):
    x = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    f = kl.to_torch_function(square_sum, outputs={"sq": None, "total": (1,)})
    sq, total = f(x)
    assert sq.tolist() == [1.0, 4.0, 9.0] and total.tolist() == [2.0]
    (sq.sum() + 10.0 * total.sum()).backward()
    assert x.grad.tolist() == [12.0, 6.0, 16.0]  # 2x + 10


def test_torch_function_dim_and_shapes_may_be_functions_of_the_arguments(torch):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    f = kl.to_torch_function(square_sum, dim=lambda x: x.shape[0] // 2,
                             outputs={"sq": lambda x: x.shape[0], "total": lambda x: 1})
    sq, total = f(x)
    assert sq.tolist() == [1.0, 4.0, 0.0, 0.0] and total.tolist() == [3.0]


def test_torch_function_does_not_record_on_a_kernlab_tape(torch):
    v, m = _velocities(torch)
    with kl.Tape() as tape:
        kl.to_torch_function(integrate, outputs=["out"])(v, m, GRAVITY, 0.01)
    assert tape.launches == []


def test_device_names_to_and_from_torch(torch):
    assert kl.device_to_torch("cpu") == "cpu"
    assert kl.device_to_torch(kl.get_device("cpu")) == str(torch.device("cpu"))
    assert kl.device_from_torch(torch.device("cpu")) == "cpu"
    assert kl.device_from_torch("cpu").is_cpu
    with pytest.raises(ValueError, match="meta"):
        kl.device_from_torch("meta")
