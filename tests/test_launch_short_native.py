"""The native front of the short launch path (runtime/launch_short_native.py): a repeated
small forward launch is checked and run by one builtin, which hands anything else to the
Python short path. It must give NumPy's values, the general path's errors, version counts
and in-place marks, never crash on odd arguments, and go with its kernel.

Every test of test_launch_short.py runs here again with the native front made first."""
import gc
import weakref

import warnings

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import LaunchError
from kernlab.runtime import launch_short, launch_short_native
from test_launch_short import *  # noqa: F401,F403 - run again with the native front
from test_launch_short import (axpy, counts, doubled64, general_path_only, shifted,
                               short_path_only)

pytestmark = pytest.mark.cpu_only("LLVM machine code")


@pytest.fixture(autouse=True)
def native_front():
    if launch_short_native.layout() is None:
        pytest.skip("no native front in this Python (another object layout)")
    launch_short._make_native()  # (made where the layout is known: its IR must compile)
    assert launch_short._native["state"] == "made" and launch_short._native["front"]
    for k in (axpy, counts, doubled64, shifted, mixed, in_place, mixed_ints):
        k._quick = None  # made anew, with the front


@kl.kernel
def mixed(x: kl.array(dtype=float), y: kl.array(dtype=kl.float64), a: float, b: kl.float64,
          c: int, d: kl.uint8):
    i = kl.tid()
    y[i] = kl.float64(x[i] * a) + b * kl.float64(c) - kl.float64(d)


@kl.kernel
def mixed_ints(y: kl.array(dtype=kl.int64), a: kl.int8, b: kl.int16, c: kl.uint16,
               d: kl.int64, e: kl.uint32):
    i = kl.tid()
    y[i] = kl.int64(a) + kl.int64(b) * kl.int64(i) + kl.int64(c) + d + kl.int64(e)


@kl.kernel
def in_place(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] * 2.0
    y[i] = x[i] + 1.0


def front_only(kernel, monkeypatch):
    """Count the launches the Python short path runs (its plans' calls) and make the general
    path fail: a launch that leaves the count at 0 was the native front's."""
    ran = []
    q = kernel._quick
    assert "builtin_function_or_method" in (type(q.run).__name__,  # the front is in place
                                            type(q.run_converted).__name__)
    for plan in [*q.spec[8], *q.spec[10].values()]:  # the plans: the latest, the others
        call = plan[0]
        plan[0] = lambda call=call: ran.append(1) or call()
    monkeypatch.setattr(launch_short, "NATIVE_AFTER", 10 ** 9)
    short_path_only(monkeypatch)
    return ran


def test_the_front_runs_mixed_scalars_with_numpys_values(monkeypatch):
    rng = np.random.default_rng(5)
    xs = rng.uniform(-2, 2, 37).astype(np.float32)
    x, y = kl.array(xs), kl.zeros(37, dtype=kl.float64)
    kl.launch(mixed, 37, inputs=[x, y, 1.0, 1.0, 1, 1])
    kl.launch(mixed, 37, inputs=[x, y, 1.0, 1.0, 1, 1])
    ran = front_only(mixed, monkeypatch)
    cases = [(0.5, 2.0, 3, 4), (-0.25, -1e300, -7, 255), (3, 7, 0, 0), (1e-45, 0.1, 2**31 - 1, 9),
             (-0.0, -0.0, -2**31, 1), (float(np.finfo(np.float32).max), 1.0, 1, 0),
             (0.1, 2**53, 5, 0)]
    for a, b, c, d in cases:
        args = (x, y, a, b, c, d) if c % 2 else [x, y, a, b, c, d]  # a tuple or a list
        kl.launch(mixed, 37, inputs=args)
        with np.errstate(over="ignore"):
            want = (xs * np.float32(a)).astype(np.float64) + np.float64(b) * np.float64(c) \
                - np.float64(d)
        np.testing.assert_array_equal(y.numpy(), want)
    assert ran == [] and y._version == 2 + len(cases) and x._version == 0


def test_alternating_arrays_are_taken_by_the_front_from_the_kept_plans(monkeypatch):
    a = kl.array(np.arange(6, dtype=np.float64))
    b = kl.zeros(6, dtype=kl.float64)
    kl.launch(doubled64, 6, inputs=[a, b, 1.0])
    kl.launch(doubled64, 6, inputs=[b, a, 1.0])  # the two plans made (Python path)
    kl.launch(doubled64, 5, inputs=[b, a, 1.0])  # and a third, of another thread count
    ran = front_only(doubled64, monkeypatch)
    want_a, want_b = np.arange(6, dtype=np.float64), np.arange(6, dtype=np.float64)
    want_a[:5] = want_b[:5]
    for step in range(9):  # ping-pong, and now and then the 5-thread plan
        if step % 3 == 2:
            kl.launch(doubled64, 5, inputs=[b, a, 0.5])
            want_a[:5] = 0.5 * want_b[:5]
        elif step % 3 == 0:
            kl.launch(doubled64, 6, inputs=[a, b, 2.0])
            want_b = 2.0 * want_a
        else:
            kl.launch(doubled64, 6, inputs=(b, a, 3.0))
            want_a = 3.0 * want_b
        np.testing.assert_array_equal(a.numpy(), want_a)
        np.testing.assert_array_equal(b.numpy(), want_b)
    assert ran == [] and a._version + b._version == 3 + 9


def test_numpy_scalars_are_taken_with_the_python_paths_values(monkeypatch):
    xs = np.linspace(-3, 3, 9, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(9, dtype=kl.float64)
    kl.launch(mixed, 9, inputs=[x, y, 1.0, 1.0, 1, 1])
    kl.launch(mixed, 9, inputs=[x, y, 1.0, 1.0, 1, 1])
    ran = front_only(mixed, monkeypatch)
    floats = [np.float16(0.1), np.float32(-2.5), np.float64(1e-3), np.int64(2**60),
              np.uint8(7), np.int8(-3), np.uint64(2**64 - 1)]
    ints = [np.int8(-5), np.uint16(65535), np.int32(-2**31), np.int64(2**31 - 1)]
    for k, a in enumerate(floats):
        b, c, d = floats[-1 - k], ints[k % len(ints)], np.uint8(k)
        kl.launch(mixed, 9, inputs=[x, y, a, b, c, d])
        want = (xs * np.float32(float(a))).astype(np.float64) \
            + np.float64(float(b)) * np.float64(int(c)) - np.float64(int(d))
        np.testing.assert_array_equal(y.numpy(), want)
    assert ran == [] and y._version == 2 + len(floats)


def test_warp_style_scalar_values_are_taken_by_the_front_and_the_python_path(monkeypatch):
    # kl.float32(x), kl.int32(n) (Warp's wp.float32(x) values) ran through the general path,
    # about 13 µs a launch; both short paths take them, with the values NumPy gives them
    xs = np.linspace(-3, 3, 9, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(9, dtype=kl.float64)
    kl.launch(mixed, 9, inputs=[x, y, 1.0, 1.0, 1, 1])
    kl.launch(mixed, 9, inputs=[x, y, 1.0, 1.0, 1, 1])
    cases = [(kl.float32(-2.5), kl.float64(0.125), kl.int32(-7), kl.uint8(200)),
             (kl.int16(3), kl.float16(0.1), kl.int64(2**31 - 1), kl.uint8(0))]

    def want(a, b, c, d):
        return (xs * np.float32(float(a))).astype(np.float64) \
            + np.float64(float(b)) * np.float64(int(c)) - np.float64(int(d))

    for args in cases:  # the Python short path (the front not made yet or declining)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            half = isinstance(args[1], np.float16)  # (declined: the general path's)
            assert mixed._quick.python(9, [x, y, *args]) is not half
        kl.launch(mixed, 9, inputs=[x, y, *args])
        np.testing.assert_array_equal(y.numpy(), want(*args))
    ran = front_only(mixed, monkeypatch)
    for args in cases:
        kl.launch(mixed, 9, inputs=[x, y, *args])
        np.testing.assert_array_equal(y.numpy(), want(*args))
    assert ran == []


def test_every_integer_width_is_stored_as_numpy_converts_it(monkeypatch):
    y = kl.zeros(5, dtype=kl.int64)
    kl.launch(mixed_ints, 5, inputs=[y, 0, 0, 0, 0, 0])
    kl.launch(mixed_ints, 5, inputs=[y, 0, 0, 0, 0, 0])
    ran = front_only(mixed_ints, monkeypatch)
    for a, b, c, d, e in [(-128, -32768, 65535, -2**63, 2**32 - 1), (127, 32767, 0, 2**63 - 1, 0),
                          (-1, 3, 1, -5, 7)]:
        kl.launch(mixed_ints, 5, inputs=[y, a, b, c, d, e])
        i = np.arange(5, dtype=np.int64)
        with np.errstate(over="ignore"):
            want = (np.int64(a) + np.int64(b) * i + np.int64(c) + np.int64(d) + np.int64(e))
        np.testing.assert_array_equal(y.numpy(), want)
    assert ran == []


def test_what_the_front_does_not_take_goes_to_the_python_path(monkeypatch):
    xs = np.arange(6, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(6, dtype=kl.float64)
    kl.launch(mixed, 6, inputs=[x, y, 1.0, 1.0, 1, 1])
    kl.launch(mixed, 6, inputs=[x, y, 1.0, 1.0, 1, 1])
    ran = front_only(mixed, monkeypatch)
    class Args(list):  # (a list of another type)
        pass
    # another sequence, a thread count of another plan, an int beyond 2**53 for a float
    kl.launch(mixed, 6, inputs=Args([x, y, 2.0, 0.5, 2, 3]))
    np.testing.assert_array_equal(y.numpy(), 2.0 * xs.astype(np.float64) + 1.0 - 3.0)
    assert len(ran) == 1  # (the plans the Python path makes next are not counted)
    kl.launch(mixed, 4, inputs=[x, y, 1.0, 2**53 + 2, 0, 0])
    np.testing.assert_array_equal(y.numpy()[:4], xs[:4].astype(np.float64))
    kl.launch(mixed, 6, inputs=[x, y, 2**60, 0.0, 0, 0])  # exact on the Python path
    np.testing.assert_array_equal(y.numpy(), (xs * np.float32(2**60)).astype(np.float64))
    assert y._version == 5


def bad_launches(x, y):
    """Arguments each path must refuse with the same error."""
    frozen = np.zeros(8, np.float64)
    frozen.flags.writeable = False

    class Odd:  # an argument whose attributes fail in odd ways
        def __getattr__(self, name):
            raise RuntimeError("no " + name)
    return [[x, y, 1e39, 1.0, 1, 1], [x, y, 1.0, 1.0, 2**31, 1], [x, y, 1.0, 1.0, 1, 256],
            [x, y, 1.0, 1.0, 1, -1], [x, y, float("nan"), 1.0, 1.0, 1], [x, y, True, 1.0, 1, 1],
            [x, y, 1.0, 1.0, 1], [x, y, 1.0, 1.0, 1, 1, 1], [x, kl.zeros(8), 1.0, 1.0, 1, 1],
            [x, kl.from_numpy(frozen), 1.0, 1.0, 1, 1], [Odd(), y, 1.0, 1.0, 1, 1],
            [x, y, "1", 1.0, 1, 1], [x, None, 1.0, 1.0, 1, 1], [x, y, 1.0, 1.0, 1.5, 1],
            [x, y, np.float64(1e39), 1.0, 1, 1], [x, y, 1.0, 1.0, np.int64(2**31), 1],
            [x, y, 1.0, 1.0, np.uint64(2**64 - 1), 1], [x, y, 1.0, 1.0, 1, np.int16(-1)],
            [x, y, 1.0, 1.0, np.float32(1.0), 1], [x, y, np.bool_(True), 1.0, 1, 1],
            [x, y, np.float32("nan"), 1.0, 1, 1], [x, y, np.complex64(1), 1.0, 1, 1]]


def outcome(kernel, n, args):
    try:
        kl.launch(kernel, n, inputs=args)
    except Exception as exc:  # compared below, type and message
        return type(exc), str(exc)
    return None


def test_bad_arguments_get_the_general_paths_errors_through_the_front(monkeypatch):
    x, y = kl.array(np.ones(8, np.float32)), kl.zeros(8, dtype=kl.float64)
    kl.launch(mixed, 8, inputs=[x, y, 1.0, 1.0, 1, 1])
    kl.launch(mixed, 8, inputs=[x, y, 1.0, 1.0, 1, 1])
    assert type(mixed._quick.run).__name__ == "builtin_function_or_method"
    front = [outcome(mixed, 8, args) for args in bad_launches(x, y)]
    with monkeypatch.context() as m:
        general_path_only(m)
        mixed._quick = None
        general = [outcome(mixed, 8, args) for args in bad_launches(x, y)]
    assert front == general
    assert all(k is LaunchError for k, _ in filter(None, front[:10]))
    assert "'mixed'" in front[0][1] and "'a'" in front[0][1]


def test_an_out_of_bounds_index_through_the_front_is_the_general_paths_error(monkeypatch):
    xb, yb = kl.array(np.arange(8, dtype=np.float32)), kl.zeros(8)
    kl.launch(shifted, 7, inputs=[xb, yb])
    kl.launch(shifted, 7, inputs=[xb, yb])
    with monkeypatch.context() as m:
        ran = front_only(shifted, m)
        for _ in range(3):  # the failing launch's plan is dropped; the next ones run clean
            with pytest.raises(IndexError) as front:
                kl.launch(shifted, 8, inputs=[xb, yb])
            kl.launch(shifted, 7, inputs=[xb, yb])
    with monkeypatch.context() as m:
        general_path_only(m)
        shifted._quick = None
        with pytest.raises(IndexError) as general:
            kl.launch(shifted, 8, inputs=[xb, yb])
    assert str(front.value) == str(general.value) and "x[i + 1]" in str(front.value)
    np.testing.assert_array_equal(yb.numpy()[:7], np.arange(1, 8, dtype=np.float32))
    # a failed launch's plan is dropped (made anew by the Python path each time); the
    # 7-thread plan waits among the others, where the front finds it
    assert ran == []


@kl.kernel
def offset(x: kl.array(dtype=float), y: kl.array(dtype=float), k: int):
    i = kl.tid()
    y[i] = x[i + k]


def test_an_index_out_of_bounds_in_a_launch_the_front_took(monkeypatch):
    """The same plan fails for one scalar and not another: the front runs the failing
    launch itself, and the runner settles it (tail) with the general path's error."""
    xs = np.arange(8, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(8)
    errors = []
    for front in (True, False):
        with monkeypatch.context() as m:
            if not front:
                general_path_only(m)
            offset._quick = None
            kl.launch(offset, 6, inputs=[x, y, 0])
            kl.launch(offset, 6, inputs=[x, y, 0])
            if front:
                ran = front_only(offset, m)
            with pytest.raises(IndexError) as info:
                kl.launch(offset, 6, inputs=[x, y, 3])
            errors.append(str(info.value))
            before = y._version
            kl.launch(offset, 6, inputs=[x, y, 2])  # a plan made anew: the next one clean
            kl.launch(offset, 6, inputs=[x, y, 1])
            assert y._version == before + 2
            np.testing.assert_array_equal(y.numpy()[:6], xs[1:7])
    assert ran == [] and errors[0] == errors[1] and "x[i + k]" in errors[0]


def test_versions_and_in_place_marks_are_the_general_paths(monkeypatch):
    def run(front: bool):
        base = np.arange(6, dtype=np.float32)
        x, y = kl.array(base), kl.zeros(6)
        view = x[1:4]  # a view shares x's version count
        with monkeypatch.context() as m:
            if not front:
                general_path_only(m)
                in_place._quick = None
            kl.launch(in_place, 6, inputs=[x, y])
            kl.launch(in_place, 6, inputs=[x, y])
            if front:
                assert front_only(in_place, m) is not None
            kl.launch(in_place, 6, inputs=[x, y])
            kl.launch(in_place, 3, inputs=[x, y])
        in_place._quick = None
        return (x.numpy().tolist(), y.numpy().tolist(), x._version, y._version, view._version,
                getattr(x, "_overwritten_by", None), getattr(y, "_overwritten_by", None))
    got, want = run(True), run(False)
    assert got == want
    xs = np.arange(6, dtype=np.float32) * 8
    xs[:3] *= 2
    assert got[0] == xs.tolist() and got[2] == 4 and got[4] == 4


def test_settings_changed_reach_the_front(monkeypatch):
    x, y = kl.array(np.arange(8, dtype=np.float32)), kl.zeros(8)
    kl.launch(shifted, 7, inputs=[x, y])
    kl.launch(shifted, 7, inputs=[x, y])
    made = shifted._quick
    assert type(made.run).__name__ == "builtin_function_or_method"
    monkeypatch.setattr(kl.config, "bounds_check", False)
    kl.launch(shifted, 7, inputs=[x, y])  # declined and remade for the new setting
    assert shifted._quick is not made
    monkeypatch.undo()
    kl.launch(shifted, 7, inputs=[x, y])
    with pytest.raises(IndexError):
        kl.launch(shifted, 8, inputs=[x, y])


def test_a_kernel_and_its_front_are_freed_together(tmp_path, monkeypatch):
    from kernlab.backends.llvm import variants
    monkeypatch.setattr(variants, "_recent", type(variants._recent)(maxlen=8))
    path = tmp_path / "cell.py"
    path.write_text("import kernlab as kl\n@kl.kernel\n"
                    "def cell(x: kl.array(dtype=float), a: float):\n"
                    "    i = kl.tid()\n    x[i] = x[i] + a\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = namespace.pop("cell")
    x = kl.zeros(4)
    for _ in range(3):
        kl.launch(kernel, 4, inputs=[x, 0.5])
    assert type(kernel._quick.run).__name__ == "builtin_function_or_method"
    np.testing.assert_array_equal(x.numpy(), np.full(4, 1.5, np.float32))
    gone = [weakref.ref(kernel), weakref.ref(kernel._quick), weakref.ref(kernel._quick.run),
            weakref.ref(kernel.compiled("llvm").entry)]
    del kernel, namespace
    variants._recent.clear()  # (the latest entries are kept a while: not this test's point)
    gc.collect()
    assert all(ref() is None for ref in gone)


def test_short_paths_written_before_the_native_calls_get_the_front_once_they_are_made(
        monkeypatch):
    """A process's first short launches go through ctypes; the short paths written meanwhile
    get their front when the native calls are made (after NATIVE_AFTER calls)."""
    monkeypatch.setattr(launch_short, "_native", {"state": "unmade", "calls": 0})
    monkeypatch.setattr(launch_short, "NATIVE_AFTER", 5)
    xs = np.arange(4, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(4)
    kl.launch(axpy, 4, inputs=[x, y, 1.0])
    kl.launch(axpy, 4, inputs=[x, y, 1.0])
    assert type(axpy._quick.run).__name__ == "function"  # waiting for the native calls
    for _ in range(6):
        kl.launch(axpy, 4, inputs=[x, y, 0.5])
    assert launch_short._native["state"] == "made"
    assert type(axpy._quick.run).__name__ == "builtin_function_or_method"
    ran = front_only(axpy, monkeypatch)
    kl.launch(axpy, 4, inputs=[x, y, 2.0])
    assert ran == []
    np.testing.assert_allclose(y.numpy(), (2.0 + 3.0 + 2.0) * xs, rtol=1e-6)
    assert y._version == 9


def test_an_unknown_keyword_is_a_type_error_as_in_warp():
    """kl.launch has no **kwargs (Warp's launch has none either; an empty one cost a dict
    per launch): a misspelt keyword is an error, not silently ignored."""
    x = kl.zeros(4)
    with pytest.raises(TypeError, match="imputs"):
        kl.launch(axpy, 4, imputs=[x, x, 1.0])
    np.testing.assert_array_equal(x.numpy(), np.zeros(4, np.float32))


def test_recorded_launches_go_through_the_front_with_their_converted_parameters(monkeypatch):
    xs = np.linspace(-1, 1, 7, dtype=np.float32)
    x, y = kl.array(xs), kl.zeros(7, dtype=kl.float64)
    cmd = kl.launch(mixed, 7, inputs=[x, y, 1.0, 1.0, 1, 1], record_cmd=True)
    cmd.launch()  # the general path: makes the short one
    cmd.launch()
    cmd.launch()
    assert type(mixed._quick.run_converted).__name__ == "builtin_function_or_method"
    ran = front_only(mixed, monkeypatch)
    for a, b, c, d in [(0.25, -2.0, 3, 4), (2, 0.5, -7, 255), (np.float32(1.5), 3, 0, 0)]:
        for k, v in enumerate((a, b, c, d)):
            cmd.set_param_at_index(2 + k, v)
        cmd.launch()
        want = (xs * np.float32(a)).astype(np.float64) + np.float64(b) * np.float64(c) \
            - np.float64(d)
        np.testing.assert_array_equal(y.numpy(), want)
    assert ran == [] and y._version == 6
    with pytest.raises(LaunchError, match="out of range"):  # still set_param's error
        cmd.set_param_at_index(5, 256)
