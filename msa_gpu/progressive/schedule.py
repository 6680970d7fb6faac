"""Tree -> per-level merge lists. A merge's level is its height above the
leaves; every merge of one level can run in the same batch."""

from __future__ import annotations

import numpy as np

from msa_gpu.types import GuideTree, MergeSchedule


def merge_schedule(tree: GuideTree) -> MergeSchedule:
    """Group the tree's merges by height (leaves have height 0).

    >>> from msa_gpu.types import GuideTree
    >>> t = GuideTree(4, np.array([[0, 1], [2, 3], [4, 5]]), np.ones((3, 2)))
    >>> [l.tolist() for l in merge_schedule(t).levels]
    [[0, 1], [2]]
    """
    n = tree.n_leaves
    height = [0] * (2 * n - 1)
    for k, (a, b) in enumerate(tree.children.astype(np.int64).tolist()):  # (host lists: no numpy scalar calls)
        height[n + k] = max(height[a], height[b]) + 1
    merge_h = np.array(height[n:], dtype=np.int64)
    order = np.argsort(merge_h, kind="stable")  # merges by height, each level in merge order
    cuts = np.searchsorted(merge_h[order], np.arange(2, int(merge_h.max(initial=0)) + 1))
    return MergeSchedule(tuple(np.split(order, cuts)) if len(order) else ())
