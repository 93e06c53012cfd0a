"""Tuples in kernels (Warp's): tuple locals, indexing, len, unpacking, tuple results of
funcs and builtins, tuple parameters; values checked against plain Python."""
from typing import Any

import numpy as np
import pytest

import kernlab as kl


@kl.func
def divmod_f(a: int, b: int) -> tuple[int, int]:
    return (a // b, a % b)


@kl.func
def weighted(values: tuple[kl.vec3, float]) -> float:
    return kl.length(values[0]) * values[1]


@kl.func
def total(values: tuple[int, ...]):
    out = int(0)
    for k in range(len(values)):  # a run-time index into a one-type tuple
        out += values[k] * (k + 1)
    return out


@kl.func
def count_any(values: Any):
    return kl.static(len(values))


@kl.kernel
def tuples(x: kl.array(dtype=int), out: kl.array(dtype=float)):
    i = kl.tid()
    t = divmod_f(x[i], 7)
    q, r = t
    pair = (x[i], 2.5)
    if x[i] > 20:
        pair = (x[i] * 2, 0.5)  # reassigned in a branch: its parts are locals
    out[8 * i + 0] = float(t[0] * 100 + t[-1])
    out[8 * i + 1] = float(q - r)
    out[8 * i + 2] = float(pair[0]) * pair[1]
    out[8 * i + 3] = float(len(pair) + kl.static(len(t)))
    out[8 * i + 4] = weighted((kl.vec3(3.0, 4.0, 0.0), float(x[i])))
    out[8 * i + 5] = float(total((x[i], 1, 2)))
    out[8 * i + 6] = float(count_any((1, 2.0, kl.vec2())))
    axis, angle = kl.quat_to_axis_angle(kl.quat_from_axis_angle(kl.vec3(0.0, 0.0, 1.0), 0.5))
    out[8 * i + 7] = angle + axis[2]


def test_tuple_values(backend):
    xs = [30, 9]
    out = kl.zeros(16, dtype=float)
    kl.launch(tuples, 2, inputs=[kl.array(xs, dtype=int)], outputs=[out])
    expect = []
    for x in xs:
        q, r = x // 7, x % 7
        pair = (x * 2, 0.5) if x > 20 else (x, 2.5)
        expect += [q * 100 + r, q - r, pair[0] * pair[1], 4, 5.0 * x,
                   x * 1 + 1 * 2 + 2 * 3, 3, 1.5]
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6)


def test_tuple_errors_name_kernel_and_line():
    @kl.kernel
    def past_end(out: kl.array(dtype=int)):
        t = (1, 2)
        out[0] = t[2]

    with pytest.raises(kl.KernelTypeError, match="tuple index 2 is out of range") as info:
        kl.launch(past_end, 1, outputs=[kl.zeros(1, dtype=int)])
    assert "past_end" in str(info.value) and "out[0] = t[2]" in str(info.value)

    @kl.kernel
    def mixed(out: kl.array(dtype=int)):
        i = kl.tid()
        t = (1, 2.0)
        out[0] = int(t[i])

    with pytest.raises(kl.KernelTypeError, match="values all have one type"):
        kl.launch(mixed, 1, outputs=[kl.zeros(1, dtype=int)])

    @kl.kernel
    def becomes_value(out: kl.array(dtype=int)):
        t = (1, 2)
        t = 3
        out[0] = t

    with pytest.raises(kl.KernelTypeError, match="holds a tuple"):
        kl.launch(becomes_value, 1, outputs=[kl.zeros(1, dtype=int)])
