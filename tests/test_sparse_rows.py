"""kernlab.sparse.bsr_row_index: the row of a compressed (BSR/CSR) matrix that holds a block,
checked against NumPy's searchsorted on random row layouts."""
import inspect

import numpy as np
import pytest

import kernlab as kl
from kernlab.sparse import bsr_row_index


@kl.kernel
def compact_rows(offsets: kl.array(dtype=int), row_count: int, out: kl.array(dtype=int)):
    i = kl.tid()
    out[i] = bsr_row_index(offsets, row_count, i - 2)


@kl.kernel
def active_rows(offsets: kl.array(dtype=int), row_count: int,
                row_counts: kl.array(dtype=int), out: kl.array(dtype=int)):
    i = kl.tid()
    out[i] = bsr_row_index(offsets, row_count, i - 2, row_counts)


def expected_rows(offsets, blocks, used=None):
    """NumPy's answer: the row r with offsets[r] <= b < offsets[r + 1] (searchsorted on the
    right, less one), -1 out of range or, with ``used``, in the row's slack."""
    rows = np.searchsorted(offsets, blocks, side="right") - 1
    rows[(blocks < 0) | (blocks >= offsets[-1])] = -1
    if used is not None:
        hit = rows >= 0
        slack = np.zeros_like(hit)
        slack[hit] = blocks[hit] >= offsets[rows[hit]] + used[rows[hit]]
        rows[slack] = -1
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_row_of_each_block_matches_searchsorted(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 4, size=7)  # empty rows included
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    n = int(offsets[-1]) + 5
    blocks = np.arange(n) - 2
    out = kl.zeros(n, dtype=int)
    kl.launch(compact_rows, n, inputs=[kl.array(offsets), len(sizes), out])
    np.testing.assert_array_equal(out.numpy(), expected_rows(offsets, blocks))

    used = np.array([rng.integers(0, s + 1) for s in sizes], dtype=np.int32)
    kl.launch(active_rows, n, inputs=[kl.array(offsets), len(sizes), kl.array(used), out])
    np.testing.assert_array_equal(out.numpy(), expected_rows(offsets, blocks, used))


def test_null_row_counts_means_compact_storage():
    offsets = np.array([0, 2, 2, 5, 6], dtype=np.int32)
    out = kl.zeros(10, dtype=int)
    kl.launch(active_rows, 10, inputs=[kl.array(offsets), 4, None, out])
    np.testing.assert_array_equal(out.numpy(), [-1, -1, 0, 0, 2, 2, 2, 3, -1, -1])


def test_signature_names_warps_parameters():
    assert list(inspect.signature(bsr_row_index).parameters)[:3] == [
        "offsets", "row_count", "block_index"]
