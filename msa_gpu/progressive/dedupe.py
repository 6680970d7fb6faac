"""Identical sequences are aligned once and copied (as FAMSA does).

A family whose encoded sequences repeat is aligned as its distinct
sequences; each repeat then gets its representative's row, joins it in the
guide tree with zero-length branches, and sits at distance 0 from it.

>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences(["a", "b", "c"], [b"MKV", b"MKW", b"mkv"], "protein")
>>> unique, inverse = distinct(seqs)
>>> unique.names, inverse.tolist()
(('a', 'b'), [0, 1, 0])
"""

from __future__ import annotations

import numpy as np

from msa_gpu.types import Alignment, DistanceMatrix, GuideTree, Sequences


def distinct(seqs: Sequences) -> tuple[Sequences, np.ndarray]:
    """The first occurrence of each distinct encoded sequence (input order)
    and, for every sequence, the index of its representative."""
    first: dict[bytes, int] = {}
    inverse = np.empty(len(seqs), dtype=np.int64)
    keep: list[int] = []
    for i, c in enumerate(seqs.codes):
        key = c.tobytes()
        if key not in first:
            first[key] = len(keep)
            keep.append(i)
        inverse[i] = first[key]
    unique = Sequences(tuple(seqs.names[i] for i in keep), tuple(seqs.raw[i] for i in keep),
                       tuple(seqs.codes[i] for i in keep), seqs.seqtype, seqs.alphabet)
    return unique, inverse


def expand_alignment(aln: Alignment, inverse: np.ndarray) -> Alignment:
    return Alignment(aln.packed[inverse], aln.n_cols)


def expand_distances(dm: DistanceMatrix | None, inverse: np.ndarray) -> DistanceMatrix | None:
    if dm is None:
        return None
    return DistanceMatrix(dm.values[np.ix_(inverse, inverse)], dm.method)


def expand_tree(tree: GuideTree, inverse: np.ndarray) -> GuideTree:
    """The tree over every sequence: each distinct leaf becomes a balanced
    tree of its copies, joined by zero-length branches in input order.

    >>> t = GuideTree(2, np.array([[0, 1]]), np.array([[0.5, 0.5]]))
    >>> expand_tree(t, np.array([0, 1, 0])).children.tolist()
    [[0, 2], [3, 1]]
    """
    n = len(inverse)
    members: list[list[int]] = [[] for _ in range(tree.n_leaves)]
    for i, u in enumerate(inverse.tolist()):
        members[u].append(i)
    children, lengths = [], []
    node_of = np.empty(2 * tree.n_leaves - 1, dtype=np.int64)
    for u, group in enumerate(members):
        layer = list(group)
        while len(layer) > 1:  # copies joined pairwise, so the tree stays shallow
            nxt = []
            for a, b in zip(layer[0::2], layer[1::2]):
                children.append((a, b))
                lengths.append((0.0, 0.0))
                nxt.append(n + len(children) - 1)
            layer = nxt + layer[len(layer) - len(layer) % 2:]
        node_of[u] = layer[0]
    for k, (a, b) in enumerate(tree.children):
        children.append((node_of[a], node_of[b]))
        lengths.append(tuple(tree.lengths[k]))
        node_of[tree.n_leaves + k] = n + len(children) - 1
    return GuideTree(n, np.array(children, dtype=np.int64).reshape(-1, 2), np.array(lengths).reshape(-1, 2))


def distinct_tree(tree: GuideTree, inverse: np.ndarray) -> GuideTree:
    """A tree over every sequence cut down to the distinct ones: each repeat's
    leaf is pruned (its parent collapses into the sibling, whose branch takes
    the parent's length too) and each first occurrence becomes leaf
    ``inverse[i]``; `expand_tree`'s output comes back as its input.

    >>> t = GuideTree(2, np.array([[0, 1]]), np.array([[0.5, 0.5]]))
    >>> back = distinct_tree(expand_tree(t, np.array([0, 1, 0])), np.array([0, 1, 0]))
    >>> back.children.tolist(), back.lengths.tolist()
    ([[0, 1]], [[0.5, 0.5]])
    """
    u = int(inverse.max()) + 1 if len(inverse) else 0
    first = np.full(u, -1, dtype=np.int64)
    for i, r in enumerate(inverse.tolist()):
        if first[r] < 0:
            first[r] = i
    leaf = np.full(tree.n_leaves, -1, dtype=np.int64)
    leaf[first] = np.arange(u)
    return tree.pruned(leaf)
