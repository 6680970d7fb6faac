"""Stage 2: leaf orders and sequence weights from a guide tree."""

from __future__ import annotations

import numpy as np

from msa_gpu.types import GuideTree


def leaf_order(tree: GuideTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A leaf order in which every subtree is contiguous: returns the order and,
    for each node, its [start, stop) range in that order."""
    n = tree.n_leaves
    children = tree.children.astype(np.int64).tolist()  # (host lists: numpy scalars cost a call each)
    size = [1] * (2 * n - 1)
    for k, (a, b) in enumerate(children):
        size[n + k] = size[a] + size[b]
    start = [0] * (2 * n - 1)
    for k in range(n - 2, -1, -1):  # parents before children
        a, b = children[k]
        start[a] = start[n + k]
        start[b] = start[n + k] + size[a]
    start_a = np.array(start, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    order[start_a[:n]] = np.arange(n)
    return order, start_a, start_a + np.array(size, dtype=np.int64)


def sequence_weights(tree: GuideTree) -> np.ndarray:
    """ClustalW-style weights: each branch's length is shared equally among
    the leaves below it; returned as integers 1..top (fixed point), where
    top is 1000, or less for families of over 8,388 sequences: their weights
    sum to at most 2^23, so profile-profile scores (products of two
    profiles' weighted counts and a matrix entry) stay inside int64."""
    n = tree.n_leaves
    top = weight_top(n)
    if n == 1:
        return np.ones(1, dtype=np.int64)
    order, start_a, stop_a = leaf_order(tree)
    start, stop = start_a.tolist(), stop_a.tolist()
    diff = [0.0] * (n + 1)
    for (a, b), (la, lb) in zip(tree.children.astype(np.int64).tolist(), np.asarray(tree.lengths, np.float64).tolist()):
        for child, length in ((a, la), (b, lb)):
            diff[start[child]] += length / (stop[child] - start[child])
            diff[stop[child]] -= length / (stop[child] - start[child])
    w_in_order = np.cumsum(np.array(diff))[:n]
    w = np.empty(n)
    w[order] = w_in_order
    if w.max() <= 0:
        return np.full(n, top, dtype=np.int64)
    return np.maximum(np.rint(w / w.max() * top), 1).astype(np.int64)


def weight_top(n: int) -> int:
    """The largest integer weight of a family of ``n`` sequences.

    >>> weight_top(100), weight_top(10000), weight_top(10_000_000)
    (1000, 838, 1)
    """
    return max(1, min(1000, (1 << 23) // max(n, 1)))
