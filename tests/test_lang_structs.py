"""@kl.struct: Python instances, struct parameters, locals, funcs, arrays of structs and
gradients through struct fields. Expected values are computed with NumPy by hand."""
from typing import Any

import numpy as np
import pytest

import kernlab as kl


@kl.struct
class Inner:
    y: float
    v: kl.vec3


@kl.struct
class Model:
    dt: float
    n: int
    gravity: kl.vec3
    m: kl.array[float]
    inner: Inner


@kl.struct
class State:
    x: kl.array[kl.vec3]
    v: kl.array[kl.vec3]


@kl.struct
class Particle:
    id: int
    mass: float
    pos: kl.vec3
    inner: Inner


# ---- Python side ----------------------------------------------------------------------

def test_instance_defaults_and_fields():
    s = Model()
    assert isinstance(s, Model.cls)
    assert s.dt == 0.0 and s.n == 0 and s.m is None
    np.testing.assert_array_equal(s.gravity, np.zeros(3, np.float32))
    assert isinstance(s.inner, Inner.cls) and s.inner.y == 0.0
    s.gravity = (1, 2, 3)
    assert s.gravity.dtype == np.float32 and s.gravity.tolist() == [1.0, 2.0, 3.0]
    s.gravity = None
    assert s.gravity.tolist() == [0.0, 0.0, 0.0]
    t = Model(0.5, 3)
    assert (t.dt, t.n) == (0.5, 3)
    assert repr(Inner()) == "Inner(y=0.0, v=[0.0, 0.0, 0.0])"


def test_instance_validation_names_the_field():
    s = Model()
    with pytest.raises(TypeError, match="Struct field 'gravity' expects vec3f but got a single"):
        s.gravity = 1.5
    with pytest.raises(TypeError, match="Struct field 'm' expects a Warp array, got list"):
        s.m = [1.0, 2.0]
    with pytest.raises(TypeError, match="Struct field 'm' expects dtype float32, got int32"):
        s.m = kl.zeros(2, dtype=kl.int32)
    with pytest.raises(TypeError, match=r"expects an array with 1 dimension\(s\), got 2"):
        s.m = kl.zeros((2, 2))
    with pytest.raises(TypeError, match="Struct field 'inner' expects a Inner instance"):
        s.inner = Model()
    with pytest.raises(AttributeError, match="no field 'nope'"):
        s.nope = 1


def test_inheritance_is_refused():
    with pytest.raises(RuntimeError, match="structs must be defined as base classes"):
        @kl.struct
        class Child(Inner):  # noqa: F811
            z: int


def test_numpy_dtype_value_and_assign():
    dt = np.dtype(Particle.numpy_dtype())
    assert dt.names == ("id", "mass", "pos", "inner")
    assert dt.fields["pos"][1] == 8 and dt.itemsize == 36  # 4 + 4 + 12 + (4 + 12)
    p = Particle(7, 2.5, (1.0, 2.0, 3.0))
    p.inner.y = 4.0
    rec = p.numpy_value()
    assert rec["id"] == 7 and rec["mass"] == 2.5 and rec["inner"]["y"] == 4.0
    q = Particle()
    q.assign(p)
    assert q.same_values(p) and q.pos is not p.pos and q != p


def test_array_of_structs_python_side():
    p = Particle(1, 2.0, (1, 2, 3))
    a = kl.array([p, Particle(5)], dtype=Particle)
    assert a.dtype is Particle and a.shape == (2,)
    na = a.numpy()
    assert na["id"].tolist() == [1, 5] and na["pos"][0].tolist() == [1.0, 2.0, 3.0]
    assert a.list()[0].same_values(p)
    full = kl.full(3, p)
    assert full.dtype is Particle and full.numpy()["mass"].tolist() == [2.0] * 3
    z = kl.zeros((2, 2), dtype=Particle)
    assert z.numpy().dtype == np.dtype(Particle.numpy_dtype())
    from_np = kl.array(na, dtype=Particle)
    np.testing.assert_array_equal(from_np.numpy(), na)


def test_array_of_structs_from_a_list_takes_the_given_shape():
    # Warp 1.19 reshapes the instances, in order, to shape (checked by hand)
    a = kl.array([Particle(k, float(k)) for k in range(4)], dtype=Particle, shape=(2, 2))
    assert a.shape == (2, 2)
    assert a.numpy()["id"].tolist() == [[0, 1], [2, 3]]
    assert a.numpy()["mass"].tolist() == [[0.0, 1.0], [2.0, 3.0]]


# ---- kernels --------------------------------------------------------------------------

@kl.kernel
def step(s_in: State, s_out: State, model: Model):
    i = kl.tid()
    s_out.v[i] = s_in.v[i] + model.gravity / model.m[i] * model.dt
    s_out.x[i] = s_in.x[i] + s_out.v[i] * model.dt


@kl.kernel
def step_copy(s_in: State, s_out: State, model: Model):
    i = kl.tid()
    scaled = Model(1.0, 0, model.gravity / model.m[i] * model.dt, model.m)
    out = State(s_out.x, s_out.v)
    out.v[i] = s_in.v[i] + scaled.gravity
    out.x[i] = s_in.x[i] + out.v[i] * model.dt


@kl.kernel
def loss_sq(x: kl.array[kl.vec3], loss: kl.array[float]):
    i = kl.tid()
    kl.atomic_add(loss, 0, kl.dot(x[i], x[i]))


def _model(m):
    model = Model()
    model.dt, model.gravity = 0.01, kl.vec3(0.0, 0.0, -9.81)
    model.m = kl.array(m, dtype=float, requires_grad=True)
    return model


@pytest.mark.parametrize("kernel", [step, step_copy])
def test_struct_parameters(backend, kernel):
    rng = np.random.default_rng(3)
    n, dt, g = 6, 0.01, np.array([0.0, 0.0, -9.81])
    m = rng.random(n) + 0.5
    x, v = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    model = _model(m)
    s_in, s_out = State(), State()
    s_in.x, s_in.v = kl.array(x, dtype=kl.vec3), kl.array(v, dtype=kl.vec3)
    s_out.x, s_out.v = kl.zeros(n, dtype=kl.vec3), kl.zeros(n, dtype=kl.vec3)
    kl.launch(kernel, dim=n, inputs=[s_in, s_out, model])
    expected = x + (v + g / m[:, None] * dt) * dt
    np.testing.assert_allclose(s_out.x.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_gradients_through_struct_array_fields(backend):
    rng = np.random.default_rng(4)
    n, dt, g = 5, 0.01, np.array([0.0, 0.0, -9.81])
    m = rng.random(n) + 0.5
    x, v = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    model = _model(m)
    s_in, s_out = State(), State()
    s_in.x = kl.array(x, dtype=kl.vec3, requires_grad=True)
    s_in.v = kl.array(v, dtype=kl.vec3, requires_grad=True)
    s_out.x = kl.zeros(n, dtype=kl.vec3, requires_grad=True)
    s_out.v = kl.zeros(n, dtype=kl.vec3, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(step, dim=n, inputs=[s_in, s_out, model])
        kl.launch(loss_sq, dim=n, inputs=[s_out.x, loss])
    tape.backward(loss)
    x_out = x + (v + g / m[:, None] * dt) * dt
    dl_dx = 2 * x_out
    np.testing.assert_allclose(s_in.x.grad.numpy(), dl_dx, rtol=1e-5)
    np.testing.assert_allclose(s_in.v.grad.numpy(), dl_dx * dt, rtol=1e-5)
    dl_dm = (dl_dx * dt * (-g * dt / m[:, None] ** 2)).sum(-1)
    np.testing.assert_allclose(model.m.grad.numpy(), dl_dm, rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(tape.gradients[s_in].x.numpy(), dl_dx, rtol=1e-5)
    tape.zero()
    assert not s_in.x.grad.numpy().any() and not model.m.grad.numpy().any()


@kl.struct
class Baz:
    data: kl.array[int]
    z: kl.vec3


@kl.struct
class Bar:
    baz: Baz
    y: float


@kl.struct
class Foo:
    bar: Bar
    x: int


@kl.kernel
def nested_param(foo: Foo):
    i = kl.tid()
    foo.bar.baz.data[i] = foo.bar.baz.data[i] + foo.x + int(foo.bar.y * 100.0) \
        + int(kl.length_sq(foo.bar.baz.z)) + i * 2


def test_nested_struct_parameter(backend):
    foo = Foo()
    foo.bar.baz.data = kl.zeros(3, dtype=int)
    foo.bar.baz.z = kl.vec3(1.0, 2.0, 3.0)
    foo.bar.y, foo.x = 1.25, 100
    kl.launch(nested_param, dim=3, inputs=[foo])
    assert foo.bar.baz.data.numpy().tolist() == [100 + 125 + 14 + 2 * i for i in range(3)]
    text = kl.source(nested_param)
    assert "%foo.bar.baz.data" in text and "$foo.bar.y" in text  # the listing names fields


@kl.struct
class Mats:
    m: kl.mat22
    v: kl.vec3
    k: int


@kl.func
def make_mats(a: float) -> Mats:
    s = Mats()
    s.m[0, 1] = a
    s.m[1][0] = 2.0 * a
    s.v.y = a
    s.v[2] = 3.0
    s.k = 7
    return s


@kl.func
def mats_sum(s: Mats) -> float:
    s.k = 0  # a copy: the caller's struct keeps its k
    return s.m[0, 1] + s.m[1, 0] + s.v[1] + s.v[2]


@kl.kernel
def locals_and_funcs(out: kl.array[float], ks: kl.array[int]):
    i = kl.tid()
    s = make_mats(float(i))
    t = s
    t.v = kl.vec3(0.0)
    out[i] = mats_sum(s) + kl.length(t.v)
    ks[i] = s.k


def test_struct_locals_funcs_and_copies(backend):
    out, ks = kl.zeros(4), kl.zeros(4, dtype=int)
    kl.launch(locals_and_funcs, dim=4, inputs=[out, ks])
    i = np.arange(4.0)
    np.testing.assert_allclose(out.numpy(), i + 2 * i + i + 3.0)
    assert ks.numpy().tolist() == [7] * 4


@kl.struct
class Holder:
    a: kl.array[float]
    k: int


@kl.kernel
def unset_array_field(out: kl.array[int]):
    h = Holder()
    out[0] = h.a.shape[0] + h.k + 5


def test_unset_array_field_is_empty(backend):
    out = kl.zeros(1, dtype=int)
    kl.launch(unset_array_field, dim=1, inputs=[out])
    assert out.numpy()[0] == 5
    kl.launch(nested_param, dim=0, inputs=[Foo()])  # an unset array parameter field


@kl.kernel
def struct_array_rw(ps: kl.array[Particle], out: kl.array[float]):
    i = kl.tid()
    p = ps[i]
    out[i] = p.mass * 2.0 + ps[i].inner.y + ps[i].pos[1]
    q = Particle()
    q.id = p.id + 10
    q.inner.v.z = 3.0
    ps[i] = q
    ps[i].mass += 1.5
    ps[i].pos[0] = float(i)
    ps[i].inner.y = p.inner.y * 2.0


def test_array_of_structs_in_kernels(backend):
    d = np.zeros(3, dtype=Particle.numpy_dtype())  # a GPU array's numpy() is a copy
    d["id"] = [1, 2, 3]
    d["mass"] = [1.0, 2.0, 3.0]
    d["pos"] = np.arange(9.0).reshape(3, 3)
    d["inner"]["y"] = [0.5, 0.25, 0.125]
    ps = kl.array(d, dtype=Particle)
    out = kl.zeros(3)
    kl.launch(struct_array_rw, dim=3, inputs=[ps, out])
    np.testing.assert_allclose(out.numpy(), [2.0 + 0.5 + 1.0, 4.0 + 0.25 + 4.0,
                                             6.0 + 0.125 + 7.0])
    r = ps.numpy()
    assert r["id"].tolist() == [11, 12, 13]
    assert r["mass"].tolist() == [1.5] * 3
    np.testing.assert_array_equal(r["pos"], [[0, 0, 0], [1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(r["inner"]["v"][:, 2], [3.0] * 3)
    np.testing.assert_array_equal(r["inner"]["y"], [1.0, 0.5, 0.25])


@kl.kernel
def struct_array_loss(ps: kl.array[Particle], loss: kl.array[float]):
    i = kl.tid()
    kl.atomic_add(loss, 0, ps[i].mass * ps[i].mass * 3.0 + kl.dot(ps[i].inner.v, ps[i].pos))


def test_array_of_structs_gradients(backend):
    rng = np.random.default_rng(5)
    d = np.zeros(4, dtype=Particle.numpy_dtype())
    d["mass"] = rng.random(4)
    d["pos"] = rng.normal(size=(4, 3))
    d["inner"]["v"] = rng.normal(size=(4, 3))
    ps = kl.array(d, dtype=Particle, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(struct_array_loss, dim=4, inputs=[ps, loss])
    tape.backward(loss)
    g = ps.grad.numpy()
    np.testing.assert_allclose(g["mass"], 6.0 * d["mass"], rtol=1e-6)
    np.testing.assert_allclose(g["pos"], d["inner"]["v"], rtol=1e-6)
    np.testing.assert_allclose(g["inner"]["v"], d["pos"], rtol=1e-6)
    assert not g["id"].any() and not g["inner"]["y"].any()


# ---- errors ---------------------------------------------------------------------------

def test_unknown_field_is_an_attribute_error():
    @kl.kernel
    def bad(foo: Foo):
        _ = foo.nonexisting

    with pytest.raises(AttributeError, match=r"`nonexisting` is not an attribute of 'foo' "
                                             r"\([\w.]+\.Foo\)$") as info:
        kl.launch(bad, dim=1, inputs=[Foo()])
    assert isinstance(info.value, kl.KernelError) and info.value.lineno is not None


def test_field_type_errors_name_the_field():
    @kl.kernel
    def bad(out: kl.array[float]):
        s = Mats()
        s.k = 1.5

    with pytest.raises(kl.KernelTypeError, match="field 'k' of Mats"):
        kl.launch(bad, dim=1, inputs=[kl.zeros(1)])


def test_launch_checks_struct_arguments():
    with pytest.raises(kl.LaunchError, match="argument 'foo' expects Foo but got None"):
        kl.launch(nested_param, dim=1, inputs=[None])
    with pytest.raises(kl.LaunchError, match="argument 'foo' expects Foo but got Bar"):
        kl.launch(nested_param, dim=1, inputs=[Bar()])
    foo = Foo()
    foo.bar.baz.data = kl.zeros(3, dtype=int)
    foo.x = 2**40
    with pytest.raises(kl.LaunchError, match="foo.x"):
        kl.launch(nested_param, dim=3, inputs=[foo])


@kl.struct
class Cloud:
    points: kl.array[Particle]
    scale: float


@kl.kernel
def cloud_kernel(c: Cloud, out: kl.array[float]):
    i = kl.tid()
    out[i] = c.points[i].mass * c.scale + float(c.points.shape[0])


def test_struct_with_an_array_of_structs_field(backend):
    c = Cloud()
    c.points = kl.array([Particle(0, 1.0), Particle(1, 2.0)], dtype=Particle)
    c.scale = 3.0
    out = kl.zeros(2)
    kl.launch(cloud_kernel, dim=2, inputs=[c, out])
    np.testing.assert_allclose(out.numpy(), [5.0, 8.0])
    kl.launch(cloud_kernel, dim=0, inputs=[Cloud(), out])  # unset: an empty array


@kl.struct
class Params:
    a: kl.array[int]
    i: int
    f: float


@kl.kernel
def params_kernel(p: Params, j: int, out: kl.array[int]):
    t = kl.tid()
    out[t] = p.i + j + int(p.f) + p.a.shape[0]


def test_recorded_launch_takes_user_indices_and_sees_later_changes():
    p = Params(None, 1, 2.0)
    out = kl.zeros(2, dtype=int)
    cmd = kl.launch(params_kernel, dim=2, inputs=[p, 10], outputs=[out], record_cmd=True)
    cmd.launch()
    assert out.numpy().tolist() == [13, 13]
    p.i = 100  # seen by the next run, as in Warp
    cmd.launch()
    assert out.numpy().tolist() == [112, 112]
    cmd.set_param_at_index(1, 20)
    cmd.set_param_at_index(0, Params(kl.zeros(5, dtype=int), 0, 0.0))
    cmd.launch()
    assert out.numpy().tolist() == [25, 25]
    other = kl.zeros(2, dtype=int)
    cmd.set_param_by_name("out", other)
    cmd.set_param_at_index(0, p.__ctype__())
    p.i = 0  # a copy was given
    cmd.launch()
    assert other.numpy().tolist() == [122, 122]


@kl.func
def generic_sum(s: Any, k: float):
    return s.mass * k + s.inner.y


@kl.kernel
def generic_func_kernel(out: kl.array[float]):
    p = Particle(mass=2.0)
    p.inner = Inner(0.5)
    out[0] = generic_sum(p, 3.0)


def test_struct_kwargs_and_generic_func_parameters(backend):
    out = kl.zeros(1)
    kl.launch(generic_func_kernel, dim=1, inputs=[out])
    assert out.numpy()[0] == 6.5


@kl.struct
class Body:
    mass: float
    energy: float


@kl.kernel
def body_energy(bs: kl.array[Body]):
    i = kl.tid()
    bs[i].energy = bs[i].mass * bs[i].mass


@kl.kernel
def body_loss(bs: kl.array[Body], loss: kl.array[float]):
    i = kl.tid()
    kl.atomic_add(loss, 0, bs[i].energy * 3.0)


def test_fields_of_one_array_of_structs_are_separate_memory(backend):
    d = np.zeros(3, dtype=Body.numpy_dtype())
    d["mass"] = [1.0, 2.0, 3.0]
    bs = kl.array(d, dtype=Body, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:  # reads mass, writes energy of the same records: no aliasing
        kl.launch(body_energy, dim=3, inputs=[bs])
        kl.launch(body_loss, dim=3, inputs=[bs, loss])
    tape.backward(loss)
    np.testing.assert_allclose(bs.grad.numpy()["mass"], 6.0 * d["mass"])
    assert loss.numpy()[0] == 3.0 * (1 + 4 + 9)


def test_rewriting_a_read_field_is_still_caught():
    d = np.zeros(3, dtype=Body.numpy_dtype())
    d["mass"] = [1.0, 2.0, 3.0]
    bs = kl.array(d, dtype=Body, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(body_energy, dim=3, inputs=[bs])
        kl.launch(body_loss, dim=3, inputs=[bs, loss])
    bs.fill_(Body(5.0))  # the whole array changes after the tape read its fields
    with pytest.raises(kl.GradientError, match="bs.mass|bs.energy"):
        tape.backward(loss)


@kl.kernel
def body_mass_loss(bs: kl.array[Body], loss: kl.array[float]):
    i = kl.tid()
    kl.atomic_add(loss, 0, bs[i].mass * float(i + 1))


def test_gradient_through_a_clone_of_an_array_of_structs():
    d = np.zeros(3, dtype=Body.numpy_dtype())
    d["mass"] = [1.0, 2.0, 3.0]
    a = kl.array(d, dtype=Body, requires_grad=True)
    loss = kl.zeros(1, requires_grad=True)
    with kl.Tape() as tape:
        c = kl.clone(a)
        kl.launch(body_mass_loss, dim=3, inputs=[c, loss])
    tape.backward(loss)
    assert a.grad.numpy()["mass"].tolist() == [1.0, 2.0, 3.0]
    assert a.grad.numpy()["energy"].tolist() == [0.0] * 3


def _hash_of_kernel_over(struct_type) -> str:
    @kl.kernel(module="struct_hash_test")
    def hashed(a: kl.array[struct_type]):
        i = kl.tid()  # noqa: F841

    return kl.get_module("struct_hash_test").hash_module()


def test_module_hash_sees_struct_fields_not_identity():
    @kl.struct
    class Hashed:
        i: int

    first = _hash_of_kernel_over(Hashed)

    @kl.struct
    class Hashed:  # noqa: F811 — the same fields again
        i: int

    assert _hash_of_kernel_over(Hashed) == first

    @kl.struct
    class Hashed:  # noqa: F811
        i: float

    assert _hash_of_kernel_over(Hashed) != first


def test_list_of_an_array_of_structs_gives_instances_with_their_fields():
    s = Model(0.5, 2, (1.0, 2.0, 3.0), kl.zeros(4))
    s.inner.y = 7.0
    out = kl.full((2, 2), s).list()
    assert len(out) == 4 and all(isinstance(x, Model.cls) for x in out)
    assert out[3].gravity == kl.vec3(1.0, 2.0, 3.0) and out[3].inner.y == 7.0
    assert out[0].m is s.m  # an array field: the array the record points at


@kl.struct
class Mixed:
    flag: kl.bool
    d: kl.float64
    u: kl.uint32
    h: kl.float16
    q: kl.int64
    vd: kl.vec3d


@kl.kernel
def mixed_kernel(ms: kl.array[Mixed], out: kl.array[kl.float64]):
    i = kl.tid()
    m = ms[i]
    if m.flag:
        out[i] = m.d + kl.float64(m.u) + kl.float64(m.h) + kl.float64(m.q) + m.vd[2]
    ms[i].q = m.q * kl.int64(2)


def test_mixed_field_sizes_keep_their_alignment(backend):
    d = np.zeros(3, dtype=Mixed.numpy_dtype())
    assert np.dtype(Mixed.numpy_dtype()).fields["d"][1] % 8 == 0
    d["flag"] = [True, False, True]
    d["d"] = [0.25, 1.0, 2.5]
    d["u"] = [1, 2, 3]
    d["h"] = [0.5, 0.5, 1.5]
    d["q"] = [2**40, 5, -7]
    d["vd"][:, 2] = [10.0, 20.0, 30.0]
    ms, out = kl.array(d, dtype=Mixed), kl.zeros(3, dtype=kl.float64)
    kl.launch(mixed_kernel, dim=3, inputs=[ms, out])
    np.testing.assert_allclose(out.numpy(), [0.25 + 1 + 0.5 + 2**40 + 10, 0.0,
                                             2.5 + 3 + 1.5 - 7 + 30])
    assert ms.numpy()["q"].tolist() == [2**41, 10, -14]


def test_a_launch_object_built_by_hand_takes_struct_arguments():
    out = kl.zeros(2, dtype=int)
    cmd = kl.Launch(params_kernel, "cpu")
    cmd.set_dim(2)
    with pytest.raises(kl.LaunchError, match="argument 'p' expects Params but got None"):
        cmd.launch()
    cmd.set_param_at_index(0, Params(kl.zeros(3, dtype=int), 4, 1.0))
    cmd.set_param_at_index(1, 2)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    assert out.numpy().tolist() == [10, 10]


def test_indexedarray_fields_are_checked_on_the_python_side():
    @kl.struct
    class WithIndexed:
        values: kl.indexedarray[kl.int32]

    s = WithIndexed()
    with pytest.raises(TypeError, match="expects a Warp indexed array, got list"):
        s.values = [1, 2]
    idx = kl.array([0], dtype=kl.int32)
    with pytest.raises(TypeError, match="expects dtype int32, got float32"):
        s.values = kl.indexedarray1d(kl.array([1.0]), [idx])
    good = kl.indexedarray1d(kl.array([3, 4], dtype=kl.int32), [idx])
    s.values = good
    assert s.values is good
