"""Fragments last: a guide tree whose fragments join the family one at a time
at the top, after every full-length sequence.

Short fragments of a family's sequences, merged where a distance tree puts
them, meet other fragments first: two pieces from different regions of the
domain are stacked on each other (a few columns of mismatches cost less
than their end gaps), and the block then lands in the wrong columns or
pulls the full-length sequences' columns apart. Merged last, each fragment
meets the full-length sequences' profile alone and is placed against it, as
MAFFT's ``--addfragments`` places fragments against an existing alignment
(Katoh and Frith 2012, Bioinformatics 28:3144). The full-length sequences
keep their own tree.
"""

from __future__ import annotations

import numpy as np

from msa_gpu.types import GuideTree


def fragments_last(tree: GuideTree, fragment: np.ndarray) -> GuideTree:
    """``tree`` with the leaves where ``fragment`` is True pruned (a parent
    left with one child collapses into it, the branch lengths adding up) and
    joined again above the rest's root, one at a time in leaf order: the
    root is ((((rest), f1), f2), ...). Leaf numbers do not change. A
    fragment's branch is the mean leaf branch of the rest's tree, the
    joins' other branches 0. Every leaf a fragment, or none: ``tree``.

    >>> t = GuideTree(4, np.array([[0, 1], [2, 3], [4, 5]]), np.ones((3, 2)))
    >>> fragments_last(t, np.array([False, True, False, False])).children.tolist()
    [[2, 3], [0, 4], [5, 1]]
    >>> fragments_last(t, np.array([True, True, False, False])).children.tolist()
    [[2, 3], [4, 0], [5, 1]]
    """
    n = tree.n_leaves
    fragment = np.asarray(fragment, dtype=bool)
    if fragment.shape != (n,):
        raise ValueError("one fragment flag a leaf")
    if fragment.all() or not fragment.any():
        return tree
    kept = np.flatnonzero(~fragment)
    leaf = np.full(n, -1, dtype=np.int64)
    leaf[kept] = np.arange(len(kept))
    rest = tree.pruned(leaf)  # over the kept leaves 0..k-1, numbered back below
    k = rest.n_leaves
    back = np.concatenate([kept, n + np.arange(k - 1)])  # its leaves to theirs, its joins to the first rows
    children = [tuple(x) for x in back[rest.children].tolist()]
    lengths = [tuple(x) for x in rest.lengths.tolist()]
    leaf_branch = rest.lengths[rest.children < k]
    branch = float(leaf_branch.mean()) if leaf_branch.size else 1.0
    top = n + len(children) - 1 if children else int(kept[0])
    for f in np.flatnonzero(fragment).tolist():
        children.append((top, f))
        lengths.append((0.0, branch))
        top = n + len(children) - 1
    return GuideTree(n, np.array(children, dtype=np.int64), np.array(lengths, dtype=np.float64))
