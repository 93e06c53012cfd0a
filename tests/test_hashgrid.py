"""kl.HashGrid and the kernel-side queries (Warp's wp.HashGrid), against brute force.

The candidates a query visits are the points in the cells the box p ± r touches, with cell
coordinates wrapped around the grid's dimensions; the tests compute that set, and the
neighbours within r, directly with NumPy over all pairs of points.
"""
import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import KernelTypeError, LaunchError


@kl.kernel
def neighbours(grid: kl.uint64, pts: kl.array(dtype=kl.vec3), r: float,
               visited: kl.array(dtype=int), within: kl.array(dtype=int),
               dist_sum: kl.array(dtype=float)):
    tid = kl.tid()
    i = kl.hash_grid_point_id(grid, tid)
    p = pts[i]
    n = int(0)
    m = int(0)
    s = float(0.0)
    for j in kl.hash_grid_query(grid, p, r):
        n += 1
        d = kl.length(p - pts[j])
        if d <= r:
            m += 1
            s += d
    visited[i] = n
    within[i] = m
    dist_sum[i] = s


def candidates(P, r, dims):
    """For each point, how many points share a (wrapped) cell with its query box."""
    inv = np.float32(1.0) / np.float32(r)
    cell = np.floor(P * inv).astype(np.int64)
    lo = np.floor((P - np.float32(r)) * inv).astype(np.int64)
    hi = np.floor((P + np.float32(r)) * inv).astype(np.int64)
    out = []
    for a in range(len(P)):
        boxes = [set(np.arange(lo[a, k], min(hi[a, k], lo[a, k] + dims[k] - 1) + 1) % dims[k])
                 for k in range(3)]
        wrapped = cell % np.array(dims)
        inside = [all(wrapped[b, k] in boxes[k] for k in range(3)) for b in range(len(P))]
        out.append(sum(inside))
    return np.array(out)


@pytest.mark.parametrize("dims", [(4, 4, 4), (16, 3, 1)])
def test_queries_visit_the_cell_box_and_find_every_neighbour(backend, dims):
    rng = np.random.default_rng(1)
    P = rng.uniform(-5.0, 5.0, size=(200, 3)).astype(np.float32)  # beyond the grid: wraps
    r = 0.9
    pts = kl.array(P, dtype=kl.vec3)
    grid = kl.HashGrid(*dims)
    grid.build(pts, r)
    visited, within = kl.zeros(200, dtype=int), kl.zeros(200, dtype=int)
    dist_sum = kl.zeros(200)
    kl.launch(neighbours, 200, inputs=[grid.id, pts, r, visited, within, dist_sum])
    D = np.linalg.norm(P[:, None, :].astype(np.float64) - P[None, :, :], axis=2)
    np.testing.assert_array_equal(within.numpy(), (D <= r).sum(axis=1))
    np.testing.assert_allclose(dist_sum.numpy(), np.where(D <= r, D, 0.0).sum(axis=1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(visited.numpy(), candidates(P, r, dims))


@kl.kernel
def point_order(grid: kl.uint64, out: kl.array(dtype=int)):
    i = kl.tid()
    out[i] = kl.hash_grid_point_id(grid, i)


def test_point_ids_are_the_points_sorted_by_cell_then_index(backend):
    P = np.array([[2.5, 0, 0], [0.5, 0, 0], [2.2, 0, 0], [0.1, 0, 0], [1.5, 0, 0]],
                 np.float32)
    grid = kl.HashGrid(8, 1, 1)
    out = kl.zeros(6, dtype=int)
    kl.launch(point_order, 6, inputs=[grid.id, out])  # not built yet
    np.testing.assert_array_equal(out.numpy(), [-1] * 6)
    grid.build(kl.array(P, dtype=kl.vec3), 1.0)
    kl.launch(point_order, 6, inputs=[grid.id, out])
    # cells 2, 0, 2, 0, 1 -> cell 0: points 1, 3; cell 1: point 4; cell 2: points 0, 2
    np.testing.assert_array_equal(out.numpy(), [1, 3, 4, 0, 2, -1])


@kl.kernel
def count_with_next(grid: kl.uint64, p: kl.vec3, r: float, out: kl.array(dtype=int)):
    q = kl.hash_grid_query(grid, p, r)
    index = int(0)
    n = int(0)
    while kl.hash_grid_query_next(q, index):
        out[1 + n] = index
        n += 1
    out[0] = n


def test_query_next_sets_the_index_and_an_unbuilt_grid_has_no_points(backend):
    grid = kl.HashGrid(4, 4, 4)
    out = kl.zeros(8, dtype=int)
    kl.launch(count_with_next, 1, inputs=[grid.id, kl.vec3(0.0, 0.0, 0.0), 1.0, out])
    assert out.numpy()[0] == 0
    P = np.array([[0.2, 0.2, 0.2], [9.0, 9.0, 9.0], [0.4, 0.1, 0.3]], np.float32)
    grid.build(kl.array(P, dtype=kl.vec3), 10.0)  # one cell holds everything
    kl.launch(count_with_next, 1, inputs=[grid.id, kl.vec3(0.0, 0.0, 0.0), 0.5, out])
    assert out.numpy()[0] == 3 and sorted(out.numpy()[1:4]) == [0, 1, 2]


@kl.kernel
def energy(grid: kl.uint64, pts: kl.array(dtype=kl.vec3), r: float,
           e: kl.array(dtype=float)):
    i = kl.tid()
    p = pts[i]
    for j in kl.hash_grid_query(grid, p, r):
        d = kl.length(p - pts[j])
        if d <= r and j != i:
            kl.atomic_add(e, 0, (r - d) * (r - d))


def test_gradient_through_a_neighbour_sum_matches_finite_differences():
    rng = np.random.default_rng(2)
    P = rng.uniform(0.0, 2.0, size=(30, 3))
    r = 0.8
    grid = kl.HashGrid(8, 8, 8)

    def e64(Q):
        D = np.linalg.norm(Q[:, None] - Q[None], axis=2)
        np.fill_diagonal(D, np.inf)
        return np.where(D <= r, (r - D) ** 2, 0.0).sum()

    pts = kl.array(P.astype(np.float32), dtype=kl.vec3, requires_grad=True)
    grid.build(pts, r)
    e = kl.zeros(1, requires_grad=True)
    tape = kl.Tape()
    with tape:
        kl.launch(energy, 30, inputs=[grid.id, pts, r, e])
    tape.backward(loss=e)
    assert e.numpy()[0] == pytest.approx(e64(P), rel=1e-4)
    h, fd = 1e-6, np.zeros_like(P)
    for a in range(30):
        for k in range(3):
            Qp, Qm = P.copy(), P.copy()
            Qp[a, k] += h
            Qm[a, k] -= h
            fd[a, k] = (e64(Qp) - e64(Qm)) / (2 * h)
    np.testing.assert_allclose(pts.grad.numpy(), fd, rtol=1e-3, atol=1e-3)


def test_errors_name_the_problem():
    @kl.kernel
    def computed_id(grid: kl.uint64, out: kl.array(dtype=int)):
        g = grid + kl.uint64(1)
        out[0] = kl.hash_grid_point_id(g, 0)

    with pytest.raises(KernelTypeError, match="uint64 parameter of the kernel"):
        kl.launch(computed_id, 1, inputs=[0, kl.zeros(1, dtype=int)])
    with pytest.raises(LaunchError, match="not the id of a live kl.HashGrid"):
        kl.launch(point_order, 1, inputs=[12345, kl.zeros(1, dtype=int)])
    grid = kl.HashGrid(2, 2, 2)
    with pytest.raises(TypeError, match="vec3"):
        grid.build(kl.zeros(3), 1.0)
    with pytest.raises(ValueError, match="positive"):
        grid.build(kl.zeros(3, dtype=kl.vec3), 0.0)
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kl.hash_grid_query(grid.id, kl.vec3(), 1.0)


def test_a_captured_launch_sees_the_grid_as_rebuilt_when_it_replays():
    # example_dem captures its substeps once and rebuilds the grid before each replay
    grid = kl.HashGrid(4, 4, 4)
    out = kl.zeros(3, dtype=int)
    grid.build(kl.array(np.array([[0.5, 0, 0], [0.1, 0, 0]], np.float32), dtype=kl.vec3),
               1.0)
    with kl.ScopedCapture() as capture:
        kl.launch(point_order, 3, inputs=[grid.id, out])
    cmd = kl.launch(point_order, 3, inputs=[grid.id, out], record_cmd=True)
    grid.build(kl.array(np.array([[2.5, 0, 0], [0.5, 0, 0], [1.5, 0, 0]], np.float32),
                        dtype=kl.vec3), 1.0)
    kl.capture_launch(capture.graph)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 0])  # cells 2, 0, 1
    out.zero_()
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [1, 2, 0])


@kl.kernel
def query_by_branch(grid: kl.uint64, pts: kl.array(dtype=kl.vec3), far: bool,
                    out: kl.array(dtype=int)):
    if far:
        q = kl.hash_grid_query(grid, pts[0], 0.1)
    else:
        q = kl.hash_grid_query(grid, pts[1], 0.1)
    for j in q:
        out[0] += 1


def test_a_query_chosen_by_a_runtime_branch_is_the_one_that_ran(backend):
    """A query local assigned in both branches holds the one whose branch ran (its walk
    state is copied), not the last one written in the source."""
    P = np.array([[0.05, 0.05, 0.05], [5.05, 5.05, 5.05], [5.06, 5.05, 5.05]], np.float32)
    grid = kl.HashGrid(64, 64, 64)
    pts = kl.array(P, dtype=kl.vec3)
    grid.build(pts, 0.1)
    for far, expect in ((True, 1), (False, 2)):
        out = kl.zeros(1, dtype=int)
        kl.launch(query_by_branch, 1, inputs=[grid.id, pts, far, out])
        assert out.numpy()[0] == expect
