"""A large family's progressive stage cut into disjoint subtrees.

The guide tree is cut below its top merges into subtrees (`cut`); each
subtree is an ordinary family with its own tree (`subtrees`), aligned
anywhere (a Dask worker: `msa_gpu.distributed`), and the merges above the
cut run where the family's tree was built, from those subtrees' profiles
(`merge_top`). A merge depends only on its two profiles and the family's
scoring, and the large path gives every sequence the same weight, so the
alignment is the one a single run gives.

Examples
--------
>>> t = GuideTree(4, np.array([[0, 1], [2, 3], [4, 5]]), np.ones((3, 2)))
>>> cut(t, 2)
[4, 5]
>>> [(members.tolist(), sub.children.tolist()) for members, sub in subtrees(t, [4, 5])]
[([0, 1], [[0, 1]]), ([2, 3], [[0, 1]])]
"""

from __future__ import annotations

import numpy as np

from msa_gpu.progressive import Profile, merge_schedule
from msa_gpu.tree import leaf_order
from msa_gpu.types import GuideTree, MergeSchedule


def cut(tree: GuideTree, parts: int) -> list[int]:
    """At least ``parts`` subtree roots (node ids; fewer only where leaves
    run out): the largest subtree is split into its two children until there
    are enough. Deterministic: ties go to the lower node id."""
    n = tree.n_leaves
    _, start, stop = leaf_order(tree)
    size = stop - start
    roots = [2 * n - 2]
    while len(roots) < parts:
        inner = [r for r in roots if r >= n]
        if not inner:
            break
        big = max(inner, key=lambda r: (size[r], -r))
        a, b = tree.children[big - n]
        roots = sorted([r for r in roots if r != big] + [int(a), int(b)])
    return roots


def subtrees(tree: GuideTree, roots: list[int]) -> list[tuple[np.ndarray, GuideTree]]:
    """For each root: the leaves below it (sorted) and their tree,
    renumbered. A node lies below a root when its range of the leaf order
    lies inside the root's (one leaf order for all roots)."""
    n = tree.n_leaves
    order, start, stop = leaf_order(tree)
    out = []
    for root in roots:
        members = np.sort(order[start[root]: stop[root]])
        if root < n:
            out.append((members, GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))))
            continue
        rows = np.flatnonzero((start[n:] >= start[root]) & (stop[n:] <= stop[root]))
        m = len(members)
        new_id = np.full(2 * n - 1, -1, dtype=np.int64)
        new_id[members] = np.arange(m)
        new_id[n + rows] = m + np.arange(len(rows))
        out.append((members, GuideTree(m, new_id[tree.children[rows]], tree.lengths[rows])))
    return out


def top_schedule(tree: GuideTree, roots: list[int]) -> MergeSchedule:
    """The merges above the cut (not inside any subtree), level by level."""
    n = tree.n_leaves
    _, start, stop = leaf_order(tree)
    keep = np.ones(n - 1, dtype=bool)
    for root in roots:
        keep &= ~((start[n:] >= start[root]) & (stop[n:] <= stop[root]))
    levels = [lv[keep[lv]] for lv in merge_schedule(tree).levels]
    return MergeSchedule(tuple(lv for lv in levels if len(lv)))


def profile_of(members: np.ndarray, codes: np.ndarray, xp) -> Profile:
    """A subtree's aligned codes (rows in ``members`` order) as a profile of weight-1 rows."""
    return Profile(np.asarray(members, dtype=np.int64), xp.asarray(codes), np.ones(len(members), dtype=np.int64))
