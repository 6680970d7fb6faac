"""Stage 2 of the large-family path: a guide tree in O(N log N) time and
O(N) memory from `KmerSets` (MAFFT's PartTree idea).

A set of more than ``cluster_size`` sequences is partitioned around
``n_pivots`` pivots (spread evenly over its members sorted by length, then
index): each member joins the pivot it shares most k-mers with (the first
on ties). A mixed-linkage tree of the pivots' exact k-mer distances joins
the parts, and each part is partitioned again. A set of at most
``cluster_size`` gets the ordinary path's tree: mixed linkage on its exact
k-mer distances. Only ``members x pivots`` and ``cluster x cluster``
matrices are ever made. The choices depend on integer k-mer counts only,
so the tree is the same on every backend.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> from msa_gpu.distances import kmer_sets
>>> raw = [b"MKVLAWTRESQ", b"MKVLAWTRESA", b"PPGGHHKKLLM", b"PPGGHHKKLLW", b"MKVLAWTRQSQ"]
>>> seqs = make_sequences(list("abcde"), raw, "protein")
>>> tree = partition_tree(kmer_sets(seqs), seqs.lengths, n_pivots=2, cluster_size=2)
>>> tree.n_leaves, tree.children.tolist()
(5, [[2, 3], [0, 4], [6, 1], [7, 5]])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.backend import offsets
from msa_gpu.distances import pivot_distances
from msa_gpu.types import GuideTree, KmerSets


@dataclass(frozen=True)
class _Join:
    """A set partitioned into ``parts`` (slots), joined by the local
    linkage ``children``/``heights`` over the parts; the result fills ``out``."""

    parts: list[int]
    children: np.ndarray
    heights: np.ndarray
    out: int


def pivot_count(n: int, n_pivots: int = 0) -> int:
    """Pivots for a set of ``n``: ``n_pivots``, or when 0, 4 sqrt(n) within
    64..2048 (more pivots, better parts: on a synthetic family of 5,000
    proteins TC went 0.14 / 0.29 / 0.37 / 0.47 with 16 / 64 / 256 / 1000).

    >>> pivot_count(10), pivot_count(10_000), pivot_count(1_000_000), pivot_count(500, 32)
    (10, 400, 2048, 32)
    """
    p = n_pivots if n_pivots > 0 else int(np.clip(4 * np.sqrt(n), 64, 2048))
    return min(n, p)


#: Sets of at least this many members take ``rows_map`` for their pivot distances.
MAP_MIN_ROWS = 20000


def partition_tree(km: KmerSets, lengths: np.ndarray, xp=np, n_pivots: int = 0,
                   cluster_size: int = 300, rows_map=None) -> GuideTree:
    """The large path's guide tree (see the module's doc); ``n_pivots`` 0
    takes `pivot_count`'s default for each set. ``rows_map(members,
    pivots)``, if given, computes the member-to-pivot distances of sets of at
    least `MAP_MIN_ROWS` members elsewhere (Dask workers); each row depends
    only on its member, so the tree is the same."""
    from msa_gpu.tree.linkage_numba import mixed_linkage_rowmin

    n = len(km)
    if n == 1:
        return GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))
    lengths = np.asarray(lengths, dtype=np.int64)
    clusters: list[tuple[np.ndarray, int]] = []  # (members, slot)
    joins: list[_Join] = []
    todo = [(np.arange(n), 0)]
    slots = 1
    while todo:
        members, slot = todo.pop()
        if len(members) <= cluster_size:
            clusters.append((members, slot))
            continue
        mapper = rows_map if rows_map is not None and len(members) >= MAP_MIN_ROWS else None
        parts, d_piv = _partition(km, lengths, members, pivot_count(len(members), n_pivots), xp, mapper)
        if len(parts) == 1:  # every member nearest to one pivot: halve instead
            parts = [members[: len(members) // 2], members[len(members) // 2:]]
            d_piv = np.array([[0.0, 1.0], [1.0, 0.0]])
        ch, ln = _linkage(d_piv, mixed_linkage_rowmin)
        joins.append(_Join(list(range(slots, slots + len(parts))), ch, _heights(ch, ln, len(parts)), slot))
        todo.extend(zip(parts, range(slots, slots + len(parts))))
        slots += len(parts)
    b = _Builder(n)
    node = np.full(slots, -1, dtype=np.int64)
    for members, slot in clusters:  # leaf clusters first, in the order they were found
        node[slot] = _cluster_tree(km, members, b, mixed_linkage_rowmin)
    for j in reversed(joins):  # a join's parts were all made after it
        local = list(node[j.parts]) + [0] * (len(j.parts) - 1)
        for k, (a, c) in enumerate(j.children):
            local[len(j.parts) + k] = b.join(int(local[a]), int(local[c]), float(j.heights[k]))
        node[j.out] = local[-1]
    return b.tree()


def _partition(km: KmerSets, lengths, members, p: int, xp, rows_map=None):
    """Members grouped by their nearest pivot (parts in pivot order, empty
    ones dropped) and the k-mer distances among the kept parts' pivots."""
    order = np.lexsort((members, lengths[members]))
    pos = np.sort(order[(np.arange(p) * len(members)) // p])  # pivots' positions within members
    d = (rows_map(members, members[pos]) if rows_map is not None
         else pivot_distances(km, members, members[pos], xp))
    near = np.argmin(d, axis=1)
    near[pos] = np.arange(p)  # a pivot is in its own part
    kept = np.flatnonzero(np.bincount(near, minlength=p))
    parts = [members[near == c] for c in kept]
    dp = d[pos[kept]][:, kept]
    dp = np.minimum(dp, dp.T)
    np.fill_diagonal(dp, 0.0)
    return parts, dp


def _linkage(d: np.ndarray, linkage) -> tuple[np.ndarray, np.ndarray]:
    if len(d) == 2:
        return np.array([[0, 1]]), np.full((1, 2), d[0, 1] / 2.0)
    return linkage(d.copy(), 0.1)


def _heights(children: np.ndarray, lengths: np.ndarray, n: int) -> np.ndarray:
    h = np.zeros(2 * n - 1)
    for k, (a, b) in enumerate(children):
        h[n + k] = max(h[a] + lengths[k, 0], h[b] + lengths[k, 1])
    return h[n:]


def _cluster_tree(km: KmerSets, members: np.ndarray, b: "_Builder", linkage) -> int:
    """Mixed-linkage tree of one cluster from its exact k-mer distances;
    returns its root's node id."""
    if len(members) == 1:
        return int(members[0])
    ch, ln = _linkage(cluster_distances(km, members), linkage)
    h = _heights(ch, ln, len(members))
    local = list(members) + [0] * (len(members) - 1)
    for k, (a, c) in enumerate(ch):
        local[len(members) + k] = b.join(int(local[a]), int(local[c]), float(h[k]))
    return int(local[-1])


def cluster_distances(km: KmerSets, members: np.ndarray) -> np.ndarray:
    """Exact k-mer distances among ``members`` (1 - shared / min distinct),
    from a sparse presence product."""
    from scipy import sparse

    cols, counts = km.gather(members)
    present = sparse.csr_matrix((np.ones(len(cols), dtype=np.int32), cols, offsets(counts)),
                                shape=(len(members), km.width))
    shared = (present @ present.T).toarray().astype(np.float64)
    d = np.clip(1.0 - shared / np.maximum(np.minimum(counts[:, None], counts[None, :]), 1), 0.0, 1.0)
    np.fill_diagonal(d, 0.0)
    return np.minimum(d, d.T)


class _Builder:
    """Collects merge rows; a node's height is at least its children's."""

    def __init__(self, n: int):
        self.n = n
        self.children: list[tuple[int, int]] = []
        self.lengths: list[tuple[float, float]] = []
        self.height = np.zeros(2 * n - 1)

    def join(self, a: int, b: int, h: float) -> int:
        node = self.n + len(self.children)
        h = max(h, self.height[a], self.height[b])
        self.children.append((a, b))
        self.lengths.append((h - self.height[a], h - self.height[b]))
        self.height[node] = h
        return node

    def tree(self) -> GuideTree:
        return GuideTree(self.n, np.array(self.children, dtype=np.int64), np.array(self.lengths))
