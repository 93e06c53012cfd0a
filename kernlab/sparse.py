"""Block-sparse (BSR/CSR) row look-ups in the kernel language, as ``warp.sparse`` offers them
to kernels: given the row offsets of a compressed matrix, which row holds a stored block.

A matrix of ``row_count`` block rows keeps its blocks row after row; ``offsets[r]`` is the
index of row r's first block and ``offsets[row_count]`` the number of blocks. A matrix with
spare room per row (capacity-aware storage) also has ``row_counts[r]``, the number of
blocks row r really uses, from ``offsets[r]`` on; the rest of its range is slack.
"""
from .kernel import func
from .mathfuncs import lower_bound
from .runtime.array import array
from .types import int32


@func
def bsr_row_index(offsets: array(dtype=int32), row_count: int, block_index: int) -> int:
    """The row whose range ``offsets[r] <= block_index < offsets[r + 1]`` holds the block,
    or -1 when block_index is past the last block (or negative)."""
    row = -1
    if block_index >= 0 and block_index < offsets[row_count]:
        # the first offset past the block is one row after the block's row
        row = lower_bound(offsets, 0, row_count + 1, block_index + 1) - 1
    return row


@func
def bsr_row_index(offsets: array(dtype=int32), row_count: int, block_index: int,  # noqa: F811
                  row_counts: array(dtype=int32)) -> int:
    """As above, for capacity-aware storage: -1 also when the block lies in its row's
    slack (at or past ``offsets[r] + row_counts[r]``). A null ``row_counts`` means compact
    storage."""
    row = bsr_row_index(offsets, row_count, block_index)
    if row_counts and row >= 0:
        if block_index >= offsets[row] + row_counts[row]:
            row = -1
    return row
