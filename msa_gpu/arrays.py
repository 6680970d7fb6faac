"""Small array helpers shared by every layer."""

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


def upload(host: dict, xp) -> dict:
    """Host arrays as ``xp`` arrays of the same dtypes and shapes, in one
    transfer: packed into one byte buffer (each part 8-byte aligned), copied
    once, and viewed (a tree level's dozen small arrays would otherwise take
    a dozen copies, each a few tens of microseconds). NumPy keeps them.

    >>> out = upload({"a": np.arange(3, dtype=np.int32), "b": np.ones((2, 2))}, np)
    >>> out["a"].tolist(), out["b"].shape
    ([0, 1, 2], (2, 2))
    """
    arrays = {key: np.ascontiguousarray(v) for key, v in host.items()}
    if xp is np:
        return arrays
    starts, size = {}, 0
    for key, a in arrays.items():
        starts[key] = size
        size += -(-a.nbytes // 8) * 8
    buf = np.zeros(max(size, 8), np.uint8)
    for key, a in arrays.items():
        buf[starts[key]: starts[key] + a.nbytes] = a.reshape(-1).view(np.uint8)
    dev = xp.asarray(buf)
    return {key: dev[starts[key]: starts[key] + a.nbytes].view(a.dtype).reshape(a.shape) for key, a in arrays.items()}
