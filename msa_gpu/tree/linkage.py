"""Stage 2: agglomerative guide trees, UPGMA (through SciPy, or numba from
`UPGMA_NUMBA_MIN` sequences) and MAFFT-style mixed linkage."""

from __future__ import annotations

import numpy as np

from msa_gpu.settings.config import SPANNING_MIN_SEQS
from msa_gpu.types import DistanceMatrix, GuideTree, Sequences

#: From this many sequences UPGMA runs in numba (`linkage_numba.upgma_rowmin`:
#: 10,000 sequences in well under a second, without the GIL, where SciPy's
#: linkage took 2.7 s holding it); below, SciPy's.
UPGMA_NUMBA_MIN = 500


def upgma(dm: DistanceMatrix) -> GuideTree:
    """UPGMA (average linkage) tree; branch lengths are height differences.
    The two implementations merge the same pairs; where two pairs tie at the
    minimum they may take them in a different order."""
    n = len(dm)
    if n == 1:
        return GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))
    if n >= UPGMA_NUMBA_MIN:
        from msa_gpu.tree.linkage_numba import upgma_rowmin  # numba: imported only when needed

        return _tree_from_linkage(upgma_rowmin(dm.values.copy()), n)
    from scipy.cluster.hierarchy import linkage  # imported here: slow to import
    from scipy.spatial.distance import squareform

    z = linkage(squareform(dm.values, checks=False), method="average")
    return _tree_from_linkage(z, n)


def mixed_linkage(dm: DistanceMatrix, average_share: float = 0.1) -> GuideTree:
    """Agglomerative tree where a merged cluster's distance to another is
    ``average_share * average + (1 - average_share) * minimum`` of its two
    parts' distances (the mixture MAFFT's default guide tree uses).

    Ties go to the lowest (row, column) pair. Small inputs use a dense NumPy
    loop; larger ones a numba version with cached row minima (O(n^2) in the
    usual case). Both give the same tree.
    """
    n = len(dm)
    if n == 1:
        return GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))
    if n <= DENSE_MAX:
        children, lengths = _mixed_linkage_dense(dm.values.copy(), float(average_share))
    else:
        from msa_gpu.tree.linkage_numba import mixed_linkage_rowmin  # numba: imported only when needed

        children, lengths = mixed_linkage_rowmin(dm.values.copy(), float(average_share))
    return GuideTree(n, children, lengths)


DENSE_MAX = 256  # below this, the NumPy version is fast and skips importing numba


def single_linkage(dm: DistanceMatrix) -> GuideTree:
    """Minimum (single) linkage: mixed linkage with no average share for small
    inputs; from `DENSE_MAX` sequences through the minimum spanning tree
    (`_linkage.single_linkage_prim`, as FAMSA builds its tree), which reads
    the matrix without copying it. Both join the same clusters at the same
    distances; where distances tie they may take them in a different order."""
    n = len(dm)
    if n < SPANNING_MIN_SEQS:
        return mixed_linkage(dm, 0.0)
    from msa_gpu.tree.linkage_numba import single_linkage_prim  # numba: imported only when needed

    children, lengths = single_linkage_prim(dm.values)
    return GuideTree(n, children, lengths)


def lcs_single_linkage(seqs: Sequences, xp=np) -> GuideTree:
    """FAMSA's guide tree without an n x n matrix: single linkage on the LCS
    distances (`msa_gpu.distances.lcs`) through Prim's spanning tree, each
    distance computed when its row's sequence joins (O(n) memory, the LCS of
    each pair once). The same tree as `single_linkage` of `lcs_distance` from
    `SPANNING_MIN_SEQS` sequences, where that takes Prim's path too."""
    return lcs_single_linkage_many([seqs], xp)[0]


def lcs_single_linkage_many(families: list[Sequences], xp=np) -> list[GuideTree]:
    """`lcs_single_linkage` of several families, stepped together on the GPU."""
    from msa_gpu.distances import lcs_spanning_edges_many
    from msa_gpu.tree.linkage_numba import single_linkage_edges  # numba: imported only when needed

    trees: list = [GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))] * len(families)
    todo = [f for f, s in enumerate(families) if len(s) > 1]
    for f, edges in zip(todo, lcs_spanning_edges_many([families[f] for f in todo], xp)):
        n = len(families[f])
        children, lengths = single_linkage_edges(*edges, n)
        trees[f] = GuideTree(n, children, lengths)
    return trees


def _mixed_linkage_dense(d: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """The same merges as `_mixed_linkage`, by argmin over the whole matrix."""
    n = d.shape[0]
    np.fill_diagonal(d, np.inf)
    node = np.arange(n)
    alive = np.ones(n, dtype=bool)
    height = np.zeros(2 * n - 1)
    children = np.empty((n - 1, 2), dtype=np.int64)
    lengths = np.empty((n - 1, 2))
    for k in range(n - 1):
        a, b = np.unravel_index(int(np.argmin(d)), d.shape)
        a, b = min(a, b), max(a, b)
        h = d[a, b] / 2.0
        height[n + k] = h
        children[k] = node[a], node[b]
        lengths[k] = max(h - height[node[a]], 0.0), max(h - height[node[b]], 0.0)
        alive[b] = False
        live = alive.copy()
        live[a] = False
        merged = np.full(n, np.inf)  # only live clusters: 0 * inf would give NaN
        merged[live] = share * (d[a, live] + d[b, live]) / 2.0 + (1.0 - share) * np.minimum(d[a, live], d[b, live])
        d[a, :] = merged
        d[:, a] = merged
        d[b, :] = np.inf
        d[:, b] = np.inf
        node[a] = n + k
    return children, lengths


def _tree_from_linkage(z: np.ndarray, n: int) -> GuideTree:
    children = z[:, :2].astype(np.int64)
    height = np.concatenate([np.zeros(n), z[:, 2] / 2.0])
    parent_h = height[n:]
    lengths = parent_h[:, None] - height[children]
    return GuideTree(n, children, lengths)


