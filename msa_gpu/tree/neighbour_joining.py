"""Stage 2: neighbour-joining guide trees (Saitou and Nei)."""

from __future__ import annotations

import numpy as np

from msa_gpu.types import DistanceMatrix, GuideTree


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
