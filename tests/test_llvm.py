"""The LLVM CPU backend: compiled kernels agree with NumPy, checks report, the cache persists."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernlab as kl
from helpers import sum_2d_rows
from kernlab import config
from kernlab import types as T
from kernlab.backends.llvm import LoweringError, compile_kernel, jit, llvm_source, runner
from kernlab.errors import KernelError, SourceLoc
from kernlab.ir.builder import Builder
from kernlab.ir.nodes import Block, Function, Op, Param, Site, Value
from kernlab.runtime.array import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def run(k, dims, *args, bounds_check=True):
    compile_kernel(k.ir, bounds_check=bounds_check).launch(tuple(dims), list(args))


def f32(values):
    return array(np.asarray(values, np.float32))


# ---- launches ------------------------------------------------------------------------------

@kl.kernel
def saxpy(x: kl.array(dtype=float), y: kl.array(dtype=float), a: float):
    i = kl.tid()
    y[i] = a * x[i] + y[i]


def test_saxpy_matches_numpy():
    rng = np.random.default_rng(0)
    xs, ys = rng.random(1000, np.float32), rng.random(1000, np.float32)
    y = f32(ys)
    run(saxpy, (1000,), f32(xs), y, np.float32(2.5))
    np.testing.assert_allclose(y.numpy(), np.float32(2.5) * xs + ys, rtol=1e-6)


@kl.kernel
def grid2(out: kl.array(dtype=float, ndim=2), x: kl.array(dtype=float, ndim=2)):
    i, j = kl.tid()
    out[i, j] = x[i, j] * 2.0 + float(i * 100 + j)


def test_2d_launch_unpacks_tid():
    xs = np.arange(35, dtype=np.float32).reshape(5, 7)
    out = array(np.zeros((5, 7), np.float32))
    run(grid2, (5, 7), out, f32(xs))
    i, j = np.indices((5, 7))
    np.testing.assert_array_equal(out.numpy(), xs * 2 + i * 100 + j)


@kl.kernel
def grid3(out: kl.array(dtype=int, ndim=3)):
    i, j, k = kl.tid()
    out[i, j, k] = i * 100 + j * 10 + k


def test_3d_launch_unpacks_tid():
    out = array(np.zeros((3, 4, 5), np.int32))
    run(grid3, (3, 4, 5), out)
    i, j, k = np.indices((3, 4, 5))
    np.testing.assert_array_equal(out.numpy(), i * 100 + j * 10 + k)


@kl.kernel
def flat_index(out: kl.array(dtype=int)):
    i = kl.tid()
    out[i] = i


def test_1d_kernel_over_a_2d_grid_sees_the_flat_index():
    out = array(np.full(12, -1, np.int32))
    run(flat_index, (3, 4), out)
    np.testing.assert_array_equal(out.numpy(), np.arange(12))


def test_zero_sized_launch_runs_nothing():
    out = array(np.full(4, -1, np.int32))
    run(flat_index, (0,), out)
    run(grid3, (3, 0, 5), array(np.zeros((3, 4, 5), np.int32)))
    np.testing.assert_array_equal(out.numpy(), -1)


def test_large_launch_split_across_threads(monkeypatch):
    monkeypatch.setattr(config, "num_threads", 3)
    n = 300_001
    out = array(np.full(n, -1, np.int32))
    run(flat_index, (n,), out)
    np.testing.assert_array_equal(out.numpy(), np.arange(n))


def test_large_2d_launch_split_mid_row(monkeypatch):
    monkeypatch.setattr(config, "num_threads", 4)
    out = array(np.zeros((701, 513), np.float32))
    xs = np.ones((701, 513), np.float32)
    run(grid2, (701, 513), out, f32(xs))
    i, j = np.indices((701, 513))
    np.testing.assert_array_equal(out.numpy(), 2 + i * 100 + j)


def test_strided_views():
    base = np.arange(20, dtype=np.float32)
    x = array(base)[::2]
    ybase = array(np.ones(30, np.float32))
    y = ybase[::3]
    run(saxpy, (10,), x, y, np.float32(3.0))
    expected = np.ones(30, np.float32)
    expected[::3] = 3 * base[::2] + 1
    np.testing.assert_array_equal(ybase.numpy(), expected)


def test_2d_view_with_a_strided_inner_axis():
    xs = np.arange(70, dtype=np.float32).reshape(5, 14)
    out = array(np.zeros((5, 7), np.float32))
    run(grid2, (5, 7), out, array(xs)[:, ::2])
    i, j = np.indices((5, 7))
    np.testing.assert_array_equal(out.numpy(), xs[:, ::2] * 2 + i * 100 + j)


# ---- vectors, matrices, parameters -------------------------------------------------------

@kl.kernel
def vec_ops(a: kl.array(dtype=T.vec3), b: kl.array(dtype=T.vec3), m: kl.array(dtype=T.mat33),
            n_out: kl.array(dtype=T.vec3), c_out: kl.array(dtype=T.vec3),
            m_out: kl.array(dtype=T.vec3)):
    i = kl.tid()
    n_out[i] = kl.normalize(a[i])
    c_out[i] = kl.cross(a[i], b[i])
    m_out[i] = kl.mul(m[i], a[i])


def test_vec3_and_mat33_arrays():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 50, 3)).astype(np.float32)
    m = rng.standard_normal((50, 3, 3)).astype(np.float32)
    outs = [array(np.zeros((50, 3), np.float32), dtype=T.vec3) for _ in range(3)]
    run(vec_ops, (50,), array(a, dtype=T.vec3), array(b, dtype=T.vec3),
        array(m, dtype=T.mat33), *outs)
    np.testing.assert_allclose(outs[0].numpy(), a / np.linalg.norm(a, axis=1)[:, None],
                               rtol=1e-5)
    np.testing.assert_allclose(outs[1].numpy(), np.cross(a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[2].numpy(), np.einsum("nij,nj->ni", m, a), rtol=1e-5,
                               atol=1e-6)


@kl.kernel
def params(out: kl.array(dtype=float), v: T.vec3, m: T.mat22, s: float, k: int, flag: bool):
    i = kl.tid()
    w = m * T.vec2(v[0], v[1])
    out[i] = w[0] + w[1] * s + float(k) + kl.length(v)
    if flag:
        out[i] = out[i] + 1000.0


def test_scalar_vector_and_matrix_params():
    out = array(np.zeros(2, np.float32))
    v, m = np.array([1, 2, 2], np.float32), np.array([[1, 2], [3, 4]], np.float32)
    run(params, (2,), out, v, m, np.float32(0.5), np.int32(7), np.bool_(True))
    w = m @ v[:2]
    np.testing.assert_allclose(out.numpy(), w[0] + w[1] * 0.5 + 7 + 3 + 1000)


@kl.kernel
def components(out: kl.array(dtype=T.vec3)):
    i = kl.tid()
    p = T.vec3(1.0, 2.0, 3.0)
    q = p
    q[0] = float(i)
    out[i] = p + q * 10.0


def test_component_assignment_copies():
    out = array(np.zeros((3, 3), np.float32), dtype=T.vec3)
    run(components, (3,), out)
    expected = np.array([[1 + 10 * i, 22, 33] for i in range(3)], np.float32)
    np.testing.assert_array_equal(out.numpy(), expected)


# ---- control flow -------------------------------------------------------------------------

@kl.func
def square(v: float):
    return v * v


@kl.kernel
def loops(out: kl.array(dtype=float), n: int):
    i = kl.tid()
    if i == 3:
        return
    s = float(0.0)
    for k in range(n):
        if k == 2:
            continue
        if k > 6:
            break
        s += square(float(k))
    for k in range(10, 0, -3):
        s += float(k) * 0.5
    while s > 100.0:
        s = s - 7.0
    out[i] = s + float(i)


def test_loops_break_continue_return_and_funcs():
    out = array(np.full(5, -1, np.float32))
    run(loops, (5,), out, np.int32(20))
    s = sum(k * k for k in range(20) if k != 2 and k <= 6) + sum(k * 0.5 for k in range(10, 0, -3))
    while s > 100:
        s -= 7
    expected = np.float32(s) + np.arange(5, dtype=np.float32)
    expected[3] = -1
    np.testing.assert_allclose(out.numpy(), expected)


# ---- atomics ------------------------------------------------------------------------------

@kl.kernel
def reduce(x: kl.array(dtype=float), total: kl.array(dtype=float), lo: kl.array(dtype=int),
           hi: kl.array(dtype=int), counts: kl.array(dtype=int)):
    i = kl.tid()
    kl.atomic_add(total, 0, x[i])
    kl.atomic_min(lo, 0, int(x[i]))
    kl.atomic_max(hi, 0, int(x[i]))
    counts[i % 4] += 1


def test_atomics_from_many_threads(monkeypatch):
    monkeypatch.setattr(config, "num_threads", 2)
    n = 200_000
    xs = (np.arange(n) % 10 - 3).astype(np.float32)  # small integers: every sum is exact
    total = array(np.zeros(1, np.float32))
    lo, hi = array(np.zeros(1, np.int32)), array(np.zeros(1, np.int32))
    counts = array(np.zeros(4, np.int32))
    run(reduce, (n,), f32(xs), total, lo, hi, counts)
    assert total.numpy()[0] == xs.sum(dtype=np.float64)
    assert lo.numpy()[0] == xs.min() and hi.numpy()[0] == xs.max()
    np.testing.assert_array_equal(counts.numpy(), [n // 4] * 4)


@kl.kernel
def vec_accumulate(x: kl.array(dtype=T.vec3), total: kl.array(dtype=T.vec3)):
    i = kl.tid()
    kl.atomic_add(total, 0, x[i])


def test_vector_atomic_add():
    xs = np.tile(np.array([1, 2, 3], np.float32), (100, 1))
    total = array(np.zeros((1, 3), np.float32), dtype=T.vec3)
    run(vec_accumulate, (100,), array(xs, dtype=T.vec3), total)
    np.testing.assert_array_equal(total.numpy()[0], [100, 200, 300])


@kl.kernel
def float_extremes(x: kl.array(dtype=float), lo: kl.array(dtype=float), hi: kl.array(dtype=float)):
    i = kl.tid()
    kl.atomic_min(lo, 0, x[i])
    kl.atomic_max(hi, 0, x[i])


def test_float_atomic_min_and_max():
    xs = np.random.default_rng(2).standard_normal(5000).astype(np.float32)
    lo, hi = f32([np.inf]), f32([-np.inf])
    run(float_extremes, (5000,), f32(xs), lo, hi)
    assert lo.numpy()[0] == xs.min() and hi.numpy()[0] == xs.max()


# ---- arithmetic ---------------------------------------------------------------------------

@kl.kernel
def int_ops(a: kl.array(dtype=int), b: kl.array(dtype=int), q: kl.array(dtype=int),
            r: kl.array(dtype=int), f: kl.array(dtype=int)):
    i = kl.tid()
    q[i] = a[i] / b[i]
    r[i] = a[i] % b[i]
    f[i] = a[i] // b[i]


def test_integer_division_never_traps():
    a = np.array([7, -7, 7, -7, 5, -2**31, -2**31, 0], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1, 0, 0], np.int32)
    q, r, f = (array(np.zeros(8, np.int32)) for _ in range(3))
    run(int_ops, (8,), array(a), array(b), q, r, f)
    safe = np.where(b == 0, 1, b).astype(np.int64)

    def wrap32(v):  # -2**31 / -1 wraps around, as in C on two's complement
        return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)

    np.testing.assert_array_equal(q.numpy(), wrap32(np.where(b == 0, 0, np.trunc(a / safe))))
    np.testing.assert_array_equal(r.numpy(), np.where(b == 0, 0, np.fmod(a, safe)))
    # integer // floors (Warp 1.19, like Python), and never traps either
    floor = [x // y if y else 0 for x, y in zip(a.astype(np.int64), safe * (b != 0))]
    np.testing.assert_array_equal(f.numpy(), wrap32(floor))


@kl.kernel
def to_int(x: kl.array(dtype=float), out: kl.array(dtype=int)):
    i = kl.tid()
    out[i] = int(x[i])


def test_float_to_int_saturates():
    xs = np.array([1.9, -1.9, 3e9, -3e9, np.nan, np.inf], np.float32)
    out = array(np.zeros(6, np.int32))
    run(to_int, (6,), f32(xs), out)
    np.testing.assert_array_equal(out.numpy(), [1, -1, 2**31 - 1, -2**31, 0, 2**31 - 1])


@kl.kernel
def math_ops(x: kl.array(dtype=float), out: kl.array(dtype=float)):
    i = kl.tid()
    out[i] = kl.sin(x[i]) + kl.sqrt(x[i]) + x[i] ** 2.0 - x[i] % 0.75


def test_float_math_matches_numpy():
    xs = np.linspace(0.1, 4.0, 40, dtype=np.float32)
    out = array(np.zeros(40, np.float32))
    run(math_ops, (40,), f32(xs), out)
    expected = np.sin(xs) + np.sqrt(xs) + xs ** 2 - np.fmod(xs, np.float32(0.75))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


# ---- bounds checks ------------------------------------------------------------------------

@kl.kernel
def shifted(x: kl.array(dtype=float), y: kl.array(dtype=float), offset: int):
    i = kl.tid()
    y[i] = x[i + offset]


def test_read_past_the_end_raises_with_the_line():
    line = shifted.pyfunc.__code__.co_firstlineno + 3  # the decorator's line + 3
    with pytest.raises(IndexError) as info:
        run(shifted, (5,), f32(np.zeros(5)), f32(np.zeros(5)), np.int32(1))
    text = str(info.value)  # where, then the message (Warp's order)
    assert "index 5 is out of bounds for axis 0 of array 'x' with shape (5,)" in text
    assert f"line {line}" in text


def test_negative_index_raises():
    with pytest.raises(IndexError, match=r"index -2 is out of bounds for axis 0 of array 'x'"):
        run(shifted, (3,), f32(np.zeros(5)), f32(np.zeros(5)), np.int32(-2))


def test_write_past_the_end_raises_and_skips_the_write():
    y = f32(np.zeros(3))
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 of array 'y' "
                                         r"with shape \(3,\)"):
        run(shifted, (5,), f32(np.arange(5)), y, np.int32(0))
    np.testing.assert_array_equal(y.numpy(), [0, 1, 2])


def test_launch_after_an_index_error_works():
    with pytest.raises(IndexError):
        run(shifted, (5,), f32(np.zeros(5)), f32(np.zeros(5)), np.int32(4))
    y = f32(np.zeros(4))
    run(shifted, (4,), f32(np.arange(5)), y, np.int32(1))
    np.testing.assert_array_equal(y.numpy(), [1, 2, 3, 4])


def test_index_error_from_a_threaded_launch(monkeypatch):
    monkeypatch.setattr(config, "num_threads", 2)
    n = 100_000
    with pytest.raises(IndexError, match=rf"index {n} is out of bounds"):
        run(shifted, (n,), f32(np.zeros(n)), f32(np.zeros(n)), np.int32(1))


def test_index_error_on_the_second_axis():
    out = array(np.zeros((5, 6), np.float32))
    with pytest.raises(IndexError, match=r"index 6 is out of bounds for axis 1 of array 'x' "
                                         r"with shape \(5, 6\)"):
        run(grid2, (5, 7), out, f32(np.zeros((5, 6))))


def test_bounds_check_off_emits_no_checks():
    checked = llvm_source(shifted.ir, bounds_check=True)
    unchecked = llvm_source(shifted.ir, bounds_check=False)
    assert "kl_report" in checked and "cmpxchg" in checked
    assert "kl_report" not in unchecked and "cmpxchg" not in unchecked
    y = f32(np.zeros(4))
    run(shifted, (4,), f32(np.arange(5)), y, np.int32(1), bounds_check=False)
    np.testing.assert_array_equal(y.numpy(), [1, 2, 3, 4])


def test_saxpy_is_vectorised():
    text = llvm_source(saxpy.ir, bounds_check=True, optimized=True)
    assert "<4 x float>" in text or "<8 x float>" in text or "<16 x float>" in text


# ---- hand-built IR: the per-thread stack, nullable arrays, internal errors ----------------

LOC = SourceLoc("handmade.py", 1, func="handmade")


def handmade(name, params):
    values = [Value(t, n) for n, t in params]
    fn = Function(name, [Param(n, t, v) for (n, t), v in zip(params, values)], Block(), LOC)
    return fn, Builder(fn, LOC), values


def for_loop(b, var, stop):
    body = Block()
    b.emit(Op.FOR, [b.const(0), b.const(stop), b.const(1)], var=var, regions=[body])
    return body


def test_push_and_pop_reverse_the_order():
    fn, b, (out,) = handmade("stack", [("out", T.ArrayType(T.float32, 1))])
    i = b.emit(Op.TID, (), T.int32, dim=0)
    x = b.cast(i, T.float32)
    k, acc = b.new_var(T.int32, "k"), b.new_var(T.float32, "acc")
    with b.at(for_loop(b, k, 1000)):  # enough pushes to grow the buffer several times
        b.emit(Op.PUSH, [b.add(x, b.cast(b.load(k), T.float32)), b.cast(b.load(k), T.float64)])
    with b.at(for_loop(b, k, 1000)):
        d = b.emit(Op.POP, (), T.float64)
        f = b.emit(Op.POP, (), T.float32)
        weight = b.cast(b.sub(b.const(999), b.load(k)), T.float32)  # pops come back reversed
        good = b.and_(b.eq(b.cast(d, T.float32), weight), b.eq(f, b.add(x, weight)))
        b.store(acc, b.add(b.load(acc), b.cast(b.cast(good, T.int32), T.float32)))
    fn.sites.append(Site(LOC, "out"))
    b.emit(Op.STORE, [out, i, b.load(acc)], site=0)
    result = f32(np.zeros(8))
    compile_kernel(fn, bounds_check=True).launch((8,), [result])
    np.testing.assert_array_equal(result.numpy(), 1000)


def test_nullable_access_to_an_absent_array_is_skipped():
    fn, b, (src, dst, out) = handmade("nullable", [(n, T.ArrayType(T.float32, 1))
                                                  for n in ("src", "dst", "out")])
    fn.sites += [Site(LOC, "src"), Site(LOC, "dst"), Site(LOC, "out")]
    i = b.emit(Op.TID, (), T.int32, dim=0)
    v = b.emit(Op.LOAD, [src, i], T.float32, site=0, nullable=True)
    b.emit(Op.STORE, [dst, i, v], site=1, nullable=True)
    b.emit(Op.ATOMIC, [dst, i, v], T.float32, kind="add", site=1, nullable=True)
    b.emit(Op.STORE, [out, i, b.add(v, b.const(1.0))], site=2)
    runner = compile_kernel(fn, bounds_check=True)
    out = f32(np.zeros(4))
    runner.launch((4,), [None, None, out])
    np.testing.assert_array_equal(out.numpy(), 1)
    dst = f32(np.zeros(4))
    runner.launch((4,), [f32([1, 2, 3, 4]), dst, out])
    np.testing.assert_array_equal(dst.numpy(), [2, 4, 6, 8])


def test_internal_lowering_errors_are_kernel_errors():
    fn, b, (out,) = handmade("broken", [("out", T.ArrayType(T.float32, 1))])
    b.emit(Op.PUSH, [b.const(1.0)])
    b.block.instrs[-1].args.append(Value(T.float32, "undefined"))  # a use without a definition
    with pytest.raises(LoweringError) as info:
        compile_kernel(fn, bounds_check=True)
    assert isinstance(info.value, KernelError) and info.value.kernel == "broken"
    assert info.value.loc == LOC and "KeyError" in info.value.details


@kl.kernel
def shout(x: kl.array(dtype=float), n: int):
    i = kl.tid()
    print(x[i], n, T.vec2(1.0, 2.5))


def test_print_writes_to_stdout(capfd):
    run(shout, (1,), f32([1.5]), np.int32(3))
    assert capfd.readouterr().out == "1.5 3 [1, 2.5]\n"


@kl.kernel
def shout_c(x: kl.array(dtype=float)):
    i = kl.tid()
    kl.printf("%d:%.2f|", i, x[i])


def test_printf_takes_a_c_format(capfd):
    run(shout_c, (1,), f32([0.25]))
    assert capfd.readouterr().out == "0:0.25|"


# ---- caching ------------------------------------------------------------------------------

CACHED_KERNEL = """
    import numpy as np
    import kernlab as kl
    from kernlab.backends.llvm import compile_kernel, jit

    @kl.kernel
    def cube(x: kl.array(dtype=float)):
        i = kl.tid()
        x[i] = x[i] * x[i] * x[i]

    if __name__ == "__main__":
        x = kl.array(np.arange(4, dtype=np.float32))
        compile_kernel(cube.ir, bounds_check=True).launch((4,), [x])
        print(x.numpy().tolist(), jit.stats["compiled"], jit.stats["loaded"])
"""


def run_cached_kernel(tmp_path):
    script = tmp_path / "cube.py"
    script.write_text(textwrap.dedent(CACHED_KERNEL))
    env = dict(os.environ, KERNLAB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_second_process_loads_from_the_disk_cache(tmp_path):
    assert run_cached_kernel(tmp_path) == "[0.0, 1.0, 8.0, 27.0] 1 0"
    assert run_cached_kernel(tmp_path) == "[0.0, 1.0, 8.0, 27.0] 0 1"


def test_a_damaged_cache_entry_is_recompiled(tmp_path):
    run_cached_kernel(tmp_path)
    for entry in (tmp_path / "cache").glob("*.klc"):
        entry.write_bytes(entry.read_bytes()[:-40] + b"\0" * 40)
    assert run_cached_kernel(tmp_path) == "[0.0, 1.0, 8.0, 27.0] 1 0"


def test_a_foreign_object_in_the_cache_is_recompiled(tmp_path, monkeypatch):
    from kernlab.runtime import cache
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    for key in jit.entry_keys(flat_index.ir, True).values():
        cache.store(key, b"\x7fELF not really an object")
    monkeypatch.setattr(jit, "_memo", {})
    out = array(np.zeros(3, np.int32))
    compile_kernel(flat_index.ir, bounds_check=True).launch((3,), [out])
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2])


def test_same_ir_compiles_once_per_process():
    before = dict(jit.stats)
    compile_kernel(saxpy.ir, bounds_check=True)
    compile_kernel(saxpy.ir, bounds_check=True)
    assert jit.stats["compiled"] + jit.stats["loaded"] <= before["compiled"] + before["loaded"] + 1


@kl.kernel
def scaled_sine(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = kl.sin(x[i]) * 2.0


def test_adjoint_listing_labels_sections_and_user_lines():
    text = llvm_source(scaled_sine.adjoint_ir, bounds_check=True)
    replay, reverse = text.index("; ---- forward replay ----"), text.index("; ---- reverse ----")
    assert replay < reverse
    assert "; test_llvm.py:" in text[reverse:]


# ---- the fast and the general entry -------------------------------------------------------

def _add_one_kernel():
    @kl.kernel
    def add_one(x: kl.array(dtype=float), y: kl.array(dtype=float)):
        i = kl.tid()
        y[i] = y[i] + x[i] * 2.0
    return add_one


def test_the_general_entry_is_compiled_only_when_a_launch_needs_it(monkeypatch):
    monkeypatch.setattr(jit, "_memo", {})
    monkeypatch.setattr(config, "cache_dir", "")  # every entry is compiled here
    monkeypatch.setattr(config, "cpu_backend", "llvm")
    k = _add_one_kernel()
    base = np.arange(10, dtype=np.float32)
    x, y = kl.array(base), kl.zeros(10)
    before = jit.stats["compiled"]
    kl.launch(k, 10, inputs=[x, y])
    assert jit.stats["compiled"] == before + 1          # the fast entry alone
    np.testing.assert_array_equal(y.numpy(), base * 2)
    strided = kl.array(np.arange(20, dtype=np.float32))[::2]  # 0, 2, 4, ...
    kl.launch(k, 10, inputs=[strided, y])
    assert jit.stats["compiled"] == before + 2          # the general one, on first need
    np.testing.assert_array_equal(y.numpy(), base * 2 + base * 4)
    kl.launch(k, 10, inputs=[strided, y])
    assert jit.stats["compiled"] == before + 2
    np.testing.assert_array_equal(y.numpy(), base * 2 + base * 8)


def test_a_launch_the_fast_entry_declines_runs_each_thread_once(monkeypatch):
    """Too many threads for the arrays: the fast entry declines for every slice of the
    (parallel) launch before doing anything, the general entry runs each in-bounds thread
    exactly once and reports the first thread out of bounds."""
    monkeypatch.setattr(config, "cpu_backend", "llvm")
    monkeypatch.setattr(config, "num_threads", 2)
    k = _add_one_kernel()
    n = jit.PARALLEL_THRESHOLD * 2
    x, y = kl.ones(n - 5), kl.zeros(n - 5)
    with pytest.raises(IndexError) as err:
        kl.launch(k, n, inputs=[x, y])
    assert "out of bounds" in str(err.value)
    done = y.numpy()
    assert set(np.unique(done).tolist()) <= {0.0, 2.0}   # never 4: no thread ran twice
    assert done[0] == 2.0


def test_kernels_with_long_loops_split_smaller_launches_across_threads(monkeypatch):
    """A thread of a kernel with a loop does much more work than one of an element-wise
    kernel, so a launch of 1024 such threads is already worth both cores."""
    monkeypatch.setattr(config, "cpu_backend", "llvm")
    monkeypatch.setattr(config, "num_threads", 2)
    seen = []
    real = runner._run_interruptibly
    monkeypatch.setattr(runner, "_run_interruptibly",
                        lambda fn, buf, bounds: (seen.append(list(bounds)), real(fn, buf, bounds)))
    values = np.random.default_rng(5).random((1024, 7)).astype(np.float32)
    out = kl.zeros(1024)
    kl.launch(sum_2d_rows, 1024, inputs=[kl.array(values), out])
    assert seen == [[0, 512, 1024]]
    np.testing.assert_allclose(out.numpy(), values.astype(np.float64).sum(axis=1), rtol=1e-6)


@kl.kernel
def saxpy_out(x: kl.array(dtype=float), y: kl.array(dtype=float), z: kl.array(dtype=float),
              a: float):
    i = kl.tid()
    z[i] = a * x[i] + y[i]


def test_the_fast_adjoint_is_vectorised_with_bounds_checks_on():
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64", "arm64", "aarch64"):
        pytest.skip("vector width depends on the CPU")
    listing = kl.source(saxpy_out, "llvm-opt", adjoint=True)
    fast, general = listing.split("general entry")
    assert "x float>" in fast and "x float>" not in general


@pytest.mark.parametrize("strided", [False, True])
def test_adjoint_with_an_absent_gradient_array_on_both_entries(monkeypatch, strided):
    monkeypatch.setattr(config, "cpu_backend", "llvm")
    n = 37
    rng = np.random.default_rng(3)
    xv, yv, gz = (rng.random(n).astype(np.float32) for _ in range(3))
    x, y, z = kl.array(xv), kl.array(yv), kl.zeros(n)
    adj_x = kl.zeros(n)
    if strided:  # a view with stride 2: the fast entry declines
        adj_z = kl.array(np.repeat(gz, 2))[::2]
    else:
        adj_z = kl.array(gz)
    kl.launch(saxpy_out, n, inputs=[x, y, z, 1.5], adj_inputs=[adj_x, None, adj_z, 0.0],
              adjoint=True)
    np.testing.assert_allclose(adj_x.numpy(), 1.5 * gz.astype(np.float64), rtol=1e-6)


def test_every_builtin_has_an_llvm_lowering():
    from kernlab.builtins import REGISTRY
    assert [name for name, bi in REGISTRY.items() if bi.llvm is None] == []


LAZY_FAST_ENTRY_CHILD = textwrap.dedent('''
    import collections
    import numpy as np
    import kernlab as kl
    from kernlab.backends.llvm import jit

    from kernlab.backends.llvm import variants
    jit.ARENA_SIZE = 1                          # (KERNLAB_OBJECT_LOADER=llvm) one entry per
                                                # engine: freed with it; objload frees each
    variants._recent = collections.deque(maxlen=1)  # the memo keeps an entry no longer

    @kl.kernel
    def square_plus(x: kl.array(dtype=kl.float64), z: kl.array(dtype=kl.float64),
                    y: kl.array(dtype=kl.float64)):
        i = kl.tid()
        y[i] = x[i] * x[i] + z[i]

    @kl.kernel
    def other(x: kl.array(dtype=kl.float64)):
        i = kl.tid()
        x[i] = x[i] + 1.0

    x = kl.array(np.array([1.0, 2.0, 3.0]))
    z, y = kl.zeros(3, dtype=kl.float64), kl.zeros(3, dtype=kl.float64)
    out = []
    for _ in range(2):
        gx = kl.zeros(3, dtype=kl.float64)
        # z's gradient absent: the fast entry without it, loaded when first needed
        kl.launch(square_plus, 3, inputs=[x, z], outputs=[y], adj_inputs=[gx, None],
                  adj_outputs=[kl.ones(3, dtype=kl.float64)], adjoint=True)
        out.append(gx.numpy().tolist())
        kl.launch(other, 3, inputs=[kl.zeros(3, dtype=kl.float64)])  # evicts it from memo
    print(out)
''')


@pytest.mark.parametrize("loader", ["kernlab", "llvm"])
def test_a_lazily_loaded_fast_entry_stays_loaded(tmp_path, loader):
    """A runner's fast entry loaded for a launch's absent gradient arrays is held by the
    runner: once the memo forgot it, its engine was freed and the next launch called freed
    code (garbage gradients or a segmentation fault). In a child process: a crash fails
    the test instead of the run."""
    script = tmp_path / "lazy_fast_entry.py"
    script.write_text(LAZY_FAST_ENTRY_CHILD)
    env = dict(os.environ, KERNLAB_CACHE_DIR=str(tmp_path / "cache"),
               KERNLAB_OBJECT_LOADER=loader)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str([[2.0, 4.0, 6.0]] * 2)
