"""Stage 2: leaf orders and sequence weights from a guide tree."""

from __future__ import annotations

import numpy as np

from msa_gpu.types import GuideTree


def leaf_order(tree: GuideTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A leaf order in which every subtree is contiguous: returns the order and,
    for each node, its [start, stop) range in that order."""
    n = tree.n_leaves
    size = np.ones(2 * n - 1, dtype=np.int64)
    for k, (a, b) in enumerate(tree.children):
        size[n + k] = size[a] + size[b]
    start = np.zeros(2 * n - 1, dtype=np.int64)
    for k in range(n - 2, -1, -1):  # parents before children
        a, b = tree.children[k]
        start[a] = start[n + k]
        start[b] = start[n + k] + size[a]
    order = np.empty(n, dtype=np.int64)
    order[start[:n]] = np.arange(n)
    return order, start, start + size


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
    order, start, stop = leaf_order(tree)
    diff = np.zeros(n + 1)
    for k, (a, b) in enumerate(tree.children):
        for child, length in ((a, tree.lengths[k, 0]), (b, tree.lengths[k, 1])):
            diff[start[child]] += length / (stop[child] - start[child])
            diff[stop[child]] -= length / (stop[child] - start[child])
    w_in_order = np.cumsum(diff)[:n]
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
