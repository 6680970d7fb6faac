"""Stage 2: neighbour-joining guide trees (Saitou and Nei)."""

from __future__ import annotations

import numpy as np

from msa_gpu.types import DistanceMatrix, GuideTree


def nj(dm: DistanceMatrix, midpoint: bool = True) -> GuideTree:
    """Neighbour joining (Saitou & Nei), rooted at the middle of the last
    branch, or with ``midpoint`` at the middle of the longest path between
    two leaves (`midpoint_root`, as ClustalW roots its NJ guide trees). Ties
    go to the lowest pair of indices."""
    n = len(dm)
    if n == 1:
        return GuideTree(1, np.zeros((0, 2)), np.zeros((0, 2)))
    tree = _nj(dm.values.copy(), n)
    return midpoint_root(tree) if midpoint else tree


def midpoint_root(tree: GuideTree) -> GuideTree:
    """The same unrooted tree rooted at the midpoint of its longest
    leaf-to-leaf path (ties: the lowest leaf indices), so that the first
    merges join the closest sequences and the last one the two halves.

    >>> t = GuideTree(4, np.array([[0, 1], [4, 2], [5, 3]]), np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 9.0]]))
    >>> r = midpoint_root(t)
    >>> r.children.tolist(), r.lengths.tolist()
    ([[0, 1], [4, 2], [5, 3]], [[1.0, 1.0], [1.0, 1.0], [4.0, 6.0]])
    """
    n = tree.n_leaves
    if n < 3:
        return tree
    m = 2 * n - 1
    adj: list[list[tuple[int, float]]] = [[] for _ in range(m)]
    for k, ((a, b), (la, lb)) in enumerate(zip(tree.children.tolist(), tree.lengths.tolist())):
        adj[n + k] += [(a, la), (b, lb)]
        adj[a].append((n + k, la))
        adj[b].append((n + k, lb))

    def farthest(src: int):
        dist = np.full(m, -1.0)
        parent = np.full(m, -1, dtype=np.int64)
        dist[src] = 0.0
        stack = [src]
        while stack:
            x = stack.pop()
            for y, w in adj[x]:
                if dist[y] < 0:
                    dist[y], parent[y] = dist[x] + w, x
                    stack.append(y)
        leaf = int(np.argmax(dist[:n]))  # the first of equals: the lowest index
        return leaf, dist, parent

    a, _, _ = farthest(0)
    b, dist, parent = farthest(a)
    if dist[b] <= 0.0:  # every leaf at distance 0 (identical or contained sequences): no midpoint to move to
        return tree
    half = dist[b] / 2.0
    v = b  # walk from b towards a until the midpoint's edge (parent[v], v)
    while parent[v] >= 0 and dist[parent[v]] > half:
        v = int(parent[v])
    u = int(parent[v])
    to_u, to_v = half - dist[u], dist[v] - half
    children, lengths = [], []
    # post-order over the tree seen from the new root; a node of degree 2 (the old root) is passed through
    stack = [(u, v, to_u, False), (v, u, to_v, False)]
    results: list[tuple[int, float]] = []
    while stack:
        x, p, length, done = stack.pop()
        kids = [(y, w) for y, w in adj[x] if y != p]
        if not kids:
            results.append((x, length))
        elif len(kids) == 1:
            y, w = kids[0]
            stack.append((y, x, length + w, False))
        elif not done:
            stack.append((x, p, length, True))
            for y, w in reversed(kids):
                stack.append((y, x, w, False))
        else:
            (c2, l2), (c1, l1) = results.pop(), results.pop()
            children.append((c1, c2))
            lengths.append((l1, l2))
            results.append((n + len(children) - 1, length))
    (c2, l2), (c1, l1) = results.pop(), results.pop()
    children.append((c1, c2))
    lengths.append((l1, l2))
    return GuideTree(n, np.array(children, dtype=np.int64), np.array(lengths))


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
