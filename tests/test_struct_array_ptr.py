"""``kl.array(ptr=a.ptr, shape=..., dtype=S)`` of an array of structs inside a kernel (as
Warp allows): the same elements in row-major order with another shape; reads and writes go
to a's elements (bounds-checked there). Expected values are NumPy's reshape of the same
data."""
import numpy as np
import pytest

import kernlab as kl


@kl.struct
class Pair:
    a: float
    b: kl.vec2


@kl.kernel
def fill_as_grid(flat: kl.array(dtype=Pair), rows: int, cols: int, out: kl.array(dtype=float)):
    grid = kl.array(ptr=flat.ptr, shape=(rows, cols), dtype=Pair)
    for i in range(rows):
        for j in range(cols):
            grid[i, j].a = float(10 * i + j)
            grid[i, j].b = kl.vec2(float(i), float(j))
    out[0] = float(grid.shape[0] * 100 + grid.shape[1])
    out[1] = grid[rows - 1, 0].a


def test_reshaped_struct_array(backend):
    flat = kl.zeros(6, dtype=Pair)
    out = kl.zeros(2, dtype=float)
    kl.launch(fill_as_grid, 1, inputs=[flat, 2, 3, out])
    data = flat.numpy()
    i, j = np.divmod(np.arange(6), 3)  # the row-major position of each flat element
    np.testing.assert_array_equal(data["a"], 10.0 * i + j)
    np.testing.assert_array_equal(data["b"], np.stack([i, j], 1).astype(np.float32))
    np.testing.assert_array_equal(out.numpy(), [203.0, 10.0])


def test_reshaped_struct_array_is_bounds_checked():
    flat = kl.zeros(6, dtype=Pair)
    with pytest.raises(IndexError):  # 3 x 3 of a 6-element array: the 7th is out of bounds
        kl.launch(fill_as_grid, 1, inputs=[flat, 3, 3, kl.zeros(2, dtype=float)])
