"""Graph capture (kl.ScopedCapture, capture_begin/end, capture_launch) and kl.ScopedTimer.

Warp's examples capture work once and replay it each step (example_fluid's pressure solve)
and time their steps with ScopedTimer. A capture records launches and memory writes without
running them; a replay runs them in order with the arrays they were recorded with. The
expected values are worked out by hand or with NumPy.
"""
import time

import numpy as np
import pytest

import kernlab as kl


@kl.kernel
def add_one(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = a[i] + 1.0


@kl.kernel
def scale_into(src: kl.array(dtype=float), s: float, dst: kl.array(dtype=float)):
    i = kl.tid()
    dst[i] = src[i] * s


def test_capture_records_without_running_and_replays_in_order():
    a = kl.full(4, 5.0)
    b = kl.zeros(4)
    c = kl.full(4, 7.0)
    with kl.ScopedCapture() as capture:
        a.zero_()                                    # a = 0
        kl.launch(add_one, 4, inputs=[a])            # a = 1
        kl.launch(add_one, 4, inputs=[a])            # a = 2
        kl.launch(scale_into, 4, inputs=[a, 3.0, b])  # b = 6
        c.fill_(-1.0)
        kl.copy(c, b, dest_offset=1, count=2)        # c = [-1, 6, 6, -1]
    np.testing.assert_array_equal(a.numpy(), [5.0] * 4)  # nothing ran yet
    np.testing.assert_array_equal(b.numpy(), [0.0] * 4)
    np.testing.assert_array_equal(c.numpy(), [7.0] * 4)
    assert isinstance(capture.graph, kl.Graph) and len(capture.graph.operations) == 6
    kl.capture_launch(capture.graph)
    np.testing.assert_array_equal(a.numpy(), [2.0] * 4)
    np.testing.assert_array_equal(b.numpy(), [6.0] * 4)
    np.testing.assert_array_equal(c.numpy(), [-1.0, 6.0, 6.0, -1.0])
    a.fill_(10.0)  # a replay reads the arrays as they are then
    kl.capture_launch(capture.graph)
    np.testing.assert_array_equal(a.numpy(), [2.0] * 4)  # zero_ is replayed first


def test_replaying_twice_runs_the_recorded_launches_twice():
    a = kl.zeros(3)
    kl.capture_begin()
    kl.launch(add_one, 3, inputs=[a])
    graph = kl.capture_end()
    for _ in range(3):
        kl.capture_launch(graph)
    np.testing.assert_array_equal(a.numpy(), [3.0, 3.0, 3.0])


def test_swapped_python_references_are_captured_as_they_were():
    # example_fluid swaps p0/p1 between captured launches: each launch keeps its own arrays
    p0, p1 = kl.array(np.array([1.0, 2.0], np.float32)), kl.zeros(2)
    with kl.ScopedCapture() as capture:
        for _ in range(3):
            kl.launch(scale_into, 2, inputs=[p0, 2.0, p1])
            p0, p1 = p1, p0
    kl.capture_launch(capture.graph)
    # three doublings, ping-ponging: the last write (8x) lands in the original p1
    np.testing.assert_array_equal(p0.numpy(), [8.0, 16.0])
    np.testing.assert_array_equal(p1.numpy(), [4.0, 8.0])


def test_captures_do_not_nest_and_end_needs_a_begin():
    with kl.ScopedCapture():
        with pytest.raises(RuntimeError, match="already in progress"):
            kl.capture_begin()
    with pytest.raises(RuntimeError, match="not in progress"):
        kl.capture_end()
    with pytest.raises(TypeError, match="kl.Graph"):
        kl.capture_launch("not a graph")


def test_a_capture_is_not_recorded_on_a_tape_but_later_launches_are():
    x = kl.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = kl.zeros(2, requires_grad=True)
    tape = kl.Tape()
    with tape:
        with kl.ScopedCapture():
            kl.launch(scale_into, 2, inputs=[x, 3.0, y])
        assert len(tape.launches) == 0
        kl.launch(scale_into, 2, inputs=[x, 3.0, y])
    assert len(tape.launches) == 1
    tape.backward(grads={y: kl.array(np.ones(2, np.float32))})
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_scoped_timer_measures_prints_and_collects(capsys):
    times = {}
    with kl.ScopedTimer("outer", dict=times) as outer:
        with kl.ScopedTimer("inner", dict=times):
            time.sleep(0.02)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("    inner took ") and out[0].endswith(" ms")  # nested: indented
    assert out[1].startswith("outer took ")
    assert outer.elapsed >= 20.0 and times["inner"][0] >= 20.0
    assert times["outer"] == [outer.elapsed]
    assert float(out[1].split()[2]) == pytest.approx(outer.elapsed, abs=0.01)


def test_scoped_timer_inactive_or_silent():
    with kl.ScopedTimer("quiet", print=False) as t:
        time.sleep(0.005)
    assert t.elapsed >= 5.0
    with kl.ScopedTimer("off", active=False) as t:
        time.sleep(0.005)
    assert t.elapsed == 0.0


def test_scoped_timer_is_a_tape_scope():
    tape = kl.Tape()
    x = kl.zeros(2, requires_grad=True)
    with tape:
        with kl.ScopedTimer("step", print=False):
            kl.launch(add_one, 2, inputs=[x])
    assert [name for _, name, _ in tape.scopes] == ["step", None]
