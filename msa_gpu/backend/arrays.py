"""Small array helpers: prefix offsets of ragged batches, and batches cut to a
memory budget. The engines batch with them; the stages reach them through
`msa_gpu.backend`'s exports."""

from __future__ import annotations

import numpy as np


def offsets(sizes) -> np.ndarray:
    """Exclusive prefix sums with the total appended.

    >>> offsets([2, 3]).tolist()
    [0, 2, 5]
    """
    return np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))]).astype(np.int64)


#: The most device bytes one batch of dense pair matrices takes (`backend.posterior_gpu.block_bytes`: a quarter
#: of the free memory, at most this); memory plans count it (`consistency.memory.library_plan`).
DENSE_BATCH_BYTES = 8 << 30


def budget_chunks(cost, budget: int) -> list[np.ndarray]:
    """Indices of consecutive items, in order, grouped so that each group's
    ``cost`` sums to at most ``budget`` (an item over it alone).

    >>> [c.tolist() for c in budget_chunks([4, 4, 9, 1], 8)]
    [[0, 1], [2], [3]]
    """
    out, start, used = [], 0, 0
    cost = np.asarray(cost).tolist()
    for k, c in enumerate(cost):
        if k > start and used + c > budget:
            out.append(np.arange(start, k))
            start, used = k, 0
        used += c
    if cost:
        out.append(np.arange(start, len(cost)))
    return out
