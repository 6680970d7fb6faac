"""A family's progressive stage cut into disjoint subtrees.

The guide tree is cut below its top merges into subtrees (`cut`, or
`cut_at_most` a size); each subtree is an ordinary family with its own tree
(`subtrees`, `subset`), aligned anywhere, and the merges above the cut
(`top_schedule`) run from those subtrees' profiles. Two users: the large
path spread over Dask workers or GPUs (`msa_gpu.distributed`: every
sequence weighs the same there, so the alignment is the one a single run
gives), and accurate mode in pieces (`msa_gpu.aligner`, issue 58: each
subtree aligned with its own consistency library).

Examples
--------
>>> t = GuideTree(4, np.array([[0, 1], [2, 3], [4, 5]]), np.ones((3, 2)))
>>> cut(t, 2)
[4, 5]
>>> [(members.tolist(), sub.children.tolist()) for members, sub in subtrees(t, [4, 5])]
[([0, 1], [[0, 1]]), ([2, 3], [[0, 1]])]
"""

from __future__ import annotations

import heapq

import numpy as np

from msa_gpu.progressive import Profile, merge_schedule
from msa_gpu.tree import leaf_order
from msa_gpu.types import GuideTree, MergeSchedule, Sequences


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


def cut_at_most(tree: GuideTree, most: int) -> list[int]:
    """Subtree roots (sorted node ids) of at most ``most`` leaves each: the
    largest subtree split into its two children while it has more (`cut`'s
    order: ties to the lower node id), so as few subtrees as that order gives.

    >>> t = GuideTree(5, np.array([[0, 1], [5, 2], [3, 4], [6, 7]]), np.ones((4, 2)))
    >>> cut_at_most(t, 3), cut_at_most(t, 2), cut_at_most(t, 5)
    ([6, 7], [2, 5, 7], [8])
    """
    if most < 1:
        raise ValueError("a subtree holds at least one leaf")
    n = tree.n_leaves
    _, start, stop = leaf_order(tree)
    size = stop - start
    heap = [(-int(size[2 * n - 2]), 2 * n - 2)]
    roots = []
    while heap:
        neg, r = heapq.heappop(heap)
        if -neg <= most:
            roots.append(r)
            continue
        for child in tree.children[r - n]:
            heapq.heappush(heap, (-int(size[child]), int(child)))
    return sorted(roots)


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


def subset(seqs: Sequences, members: np.ndarray) -> Sequences:
    """The family of ``seqs``' sequences ``members`` (in that order)."""
    return Sequences(tuple(seqs.names[i] for i in members), tuple(seqs.raw[i] for i in members),
                     tuple(seqs.codes[i] for i in members), seqs.seqtype, seqs.alphabet)


def plan_pieces(seqs: Sequences, most: int) -> list[Sequences]:
    """Stand-ins for the subtrees of at most ``most`` sequences that ``seqs``
    may be cut into, for memory plans (the tree is not known yet): its
    sequences, longest first, ``most`` a piece, each in input order. The
    libraries of pieces are built together in groups (on the GPU, several
    subtrees of a few hundred residues each), so a plan holds all of them,
    not the largest alone; no subtree is larger, and pieces of ``most``
    hold at least as many pairs as the smaller ones the cut may give.

    >>> from msa_gpu.io import make_sequences
    >>> seqs = make_sequences([f"s{i}" for i in range(5)], [b"A" * n for n in (5, 9, 3, 9, 7)])
    >>> [p.names for p in plan_pieces(seqs, 2)]
    [('s1', 's3'), ('s0', 's4'), ('s2',)]
    """
    order = np.argsort(-seqs.lengths, kind="stable")
    return [subset(seqs, np.sort(order[i: i + most])) for i in range(0, len(seqs), most)]


def profile_of(members: np.ndarray, codes: np.ndarray, xp) -> Profile:
    """A subtree's aligned codes (rows in ``members`` order) as a profile of weight-1 rows."""
    return Profile(np.asarray(members, dtype=np.int64), xp.asarray(codes), np.ones(len(members), dtype=np.int64))
