"""Stage 2: guide trees (UPGMA through SciPy, neighbour joining), sequence
weights and Newick output."""

from __future__ import annotations

import numpy as np

from .types import DistanceMatrix, GuideTree


#: From this many sequences UPGMA runs in numba (`_linkage.upgma_rowmin`:
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
        from ._linkage import upgma_rowmin  # numba: imported only when needed

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
        from ._linkage import mixed_linkage_rowmin  # numba: imported only when needed

        children, lengths = mixed_linkage_rowmin(dm.values.copy(), float(average_share))
    return GuideTree(n, children, lengths)


DENSE_MAX = 256  # below this, the NumPy version is fast and skips importing numba


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


def nj(dm: DistanceMatrix) -> GuideTree:
    """Neighbour joining (Saitou & Nei), rooted at the middle of the last
    branch. Ties go to the lowest pair of indices."""
    n = len(dm)
    if n == 1:
        return GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))
    return _nj(dm.values.copy(), n)


def _nj(d: np.ndarray, n: int) -> GuideTree:
    active = list(range(n))
    node_of = np.arange(n)
    children, lengths = [], []
    next_node = n
    while len(active) > 2:
        r = len(active)
        sub = d[np.ix_(active, active)]
        total = sub.sum(axis=1)
        q = (r - 2) * sub - total[:, None] - total[None, :]
        np.fill_diagonal(q, np.inf)
        a, b = np.unravel_index(int(np.argmin(q)), q.shape)
        ia, ib = active[a], active[b]
        la = 0.5 * sub[a, b] + (total[a] - total[b]) / (2 * (r - 2))
        lb = sub[a, b] - la
        children.append((node_of[ia], node_of[ib]))
        lengths.append((max(la, 0.0), max(lb, 0.0)))
        new_d = 0.5 * (d[ia] + d[ib] - d[ia, ib])
        d[ia, :] = new_d
        d[:, ia] = new_d
        d[ia, ia] = 0.0
        node_of[ia] = next_node
        next_node += 1
        active.remove(ib)
    ia, ib = active
    half = max(d[ia, ib], 0.0) / 2.0
    children.append((node_of[ia], node_of[ib]))
    lengths.append((half, half))
    return GuideTree(n, np.array(children), np.array(lengths))


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


def to_newick(tree: GuideTree, names: list[str]) -> str:
    """The tree in Newick, names quoted where Newick needs it."""

    def label(name: str) -> str:
        if any(c in name for c in " ():;,[]'\t"):
            return "'" + name.replace("'", "''") + "'"
        return name

    n = tree.n_leaves
    text = [label(nm) for nm in names] + [""] * (n - 1)
    for k, (a, b) in enumerate(tree.children):
        la, lb = tree.lengths[k]
        text[n + k] = f"({text[a]}:{la:.6g},{text[b]}:{lb:.6g})"
    return text[2 * n - 2] + ";"


def from_newick(text: str, names: list[str]) -> GuideTree:
    """A guide tree from Newick (Biopython's parser), its leaves matched to
    ``names`` (input order). Multifurcations are joined left to right and a
    missing branch length counts as 0.

    >>> t = from_newick("((b:1,c:2):0.5,a:1);", ["a", "b", "c"])
    >>> t.children.tolist(), t.lengths.tolist()
    ([[1, 2], [3, 0]], [[1.0, 2.0], [0.5, 1.0]])
    """
    from io import StringIO

    from Bio import Phylo

    index = {name: i for i, name in enumerate(names)}
    root = Phylo.read(StringIO(text), "newick").root
    n = len(names)
    children: list[tuple[int, int]] = []
    lengths: list[tuple[float, float]] = []
    seen: set[int] = set()

    def visit(clade) -> tuple[int, float]:
        stack = [(clade, False)]
        out: dict[int, tuple[int, float]] = {}
        while stack:
            c, ready = stack.pop()
            if not c.clades:
                if c.name not in index or index[c.name] in seen:
                    raise ValueError(f"tree leaf {c.name!r} is not a sequence name, or is repeated")
                seen.add(index[c.name])
                out[id(c)] = (index[c.name], c.branch_length or 0.0)
            elif not ready:
                stack.append((c, True))
                stack.extend((k, False) for k in reversed(c.clades))
            else:
                node, length = out[id(c.clades[0])]
                for k in c.clades[1:]:
                    other, other_len = out[id(k)]
                    children.append((node, other))
                    lengths.append((length, other_len))
                    node, length = n + len(children) - 1, 0.0
                out[id(c)] = (node, c.branch_length or 0.0)
        return out[id(clade)]

    visit(root)
    if len(seen) != n:
        raise ValueError(f"the tree has {len(seen)} of the {n} sequences")
    return GuideTree(n, np.array(children, dtype=np.int64).reshape(-1, 2), np.array(lengths).reshape(-1, 2))
