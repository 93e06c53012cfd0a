"""A slice step known only at run time: slices follow Python's rules for either sign, and a
zero step fails the launch (as Warp's runtime check does) with a KernelValueError naming
the kernel and the slice's line, whether bounds checks are on or off. NumPy's slicing is
the oracle."""
import numpy as np
import pytest

import kernlab as kl
from helpers import line_of


@kl.kernel
def runtime_slice(a: kl.array2d(dtype=int), start: int, stop: int, step: int,
                  out: kl.array(dtype=int)):
    view = a[start:stop:step, 1]
    out[0] = view.shape[0]
    for k in range(view.shape[0]):
        out[k + 1] = view[k]


DATA = np.arange(18, dtype=np.int32).reshape(6, 3)


@pytest.mark.parametrize("start, stop, step", [(1, 6, 2), (5, 0, -2), (0, 6, 1), (4, 1, -1),
                                               (2, 2, 3), (0, 6, 7)])
def test_runtime_steps_slice_as_numpy(backend, start, stop, step):
    out = kl.zeros(8, dtype=int)
    kl.launch(runtime_slice, 1, inputs=[kl.array(DATA), start, stop, step, out])
    expected = DATA[start:stop:step, 1]
    got = out.numpy()
    assert got[0] == len(expected)
    np.testing.assert_array_equal(got[1:1 + len(expected)], expected)


@pytest.mark.parametrize("checks", [False, True])
def test_a_zero_step_fails_the_launch_at_the_slice(backend, monkeypatch, checks):
    monkeypatch.setattr(kl.config, "bounds_check", checks)
    out = kl.zeros(8, dtype=int)
    with pytest.raises(kl.KernelError) as info:
        kl.launch(runtime_slice, 1, inputs=[kl.array(DATA), 0, 6, 0, out])
        kl.synchronize()
    err = info.value
    assert isinstance(err, ValueError) and "slice step cannot be zero" in str(err)
    assert err.loc.line == line_of(runtime_slice, "view = a[start:stop:step, 1]")
    # the next launch runs normally
    kl.launch(runtime_slice, 1, inputs=[kl.array(DATA), 0, 6, 3, out])
    np.testing.assert_array_equal(out.numpy()[:3], [2, 1, 10])
