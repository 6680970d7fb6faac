"""numba kernel of the mixed-linkage guide tree (kept apart so that small
inputs never import numba)."""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _row_min(d, i, alive):
    best, arg = np.inf, -1
    for j in range(d.shape[0]):
        if alive[j] and j != i and d[i, j] < best:
            best, arg = d[i, j], j
    return best, arg


@numba.njit(cache=True, nogil=True)
def mixed_linkage_rowmin(d, share):
    """Mixed linkage with cached row minima; see msa_gpu.tree.mixed_linkage."""
    n = d.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    node = np.arange(n)
    height = np.zeros(2 * n - 1)
    rmin = np.empty(n)
    rarg = np.empty(n, dtype=np.int64)
    for i in range(n):
        rmin[i], rarg[i] = _row_min(d, i, alive)
    children = np.empty((n - 1, 2), dtype=np.int64)
    lengths = np.empty((n - 1, 2))
    for k in range(n - 1):
        a, best = -1, np.inf
        for i in range(n):
            if alive[i] and rmin[i] < best:
                best, a = rmin[i], i
        b = rarg[a]
        if b < a:
            a, b = b, a
        h = d[a, b] / 2.0
        height[n + k] = h
        children[k, 0], children[k, 1] = node[a], node[b]
        lengths[k, 0] = max(h - height[node[a]], 0.0)
        lengths[k, 1] = max(h - height[node[b]], 0.0)
        alive[b] = False
        for j in range(n):
            if alive[j] and j != a:
                v = share * (d[a, j] + d[b, j]) / 2.0 + (1.0 - share) * min(d[a, j], d[b, j])
                d[a, j] = v
                d[j, a] = v
        node[a] = n + k
        rmin[a], rarg[a] = _row_min(d, a, alive)
        for i in range(n):
            if not alive[i] or i == a:
                continue
            if rarg[i] == a or rarg[i] == b:
                rmin[i], rarg[i] = _row_min(d, i, alive)
            elif d[i, a] < rmin[i] or (d[i, a] == rmin[i] and a < rarg[i]):
                rmin[i], rarg[i] = d[i, a], a
    return children, lengths


@numba.njit(cache=True, nogil=True)
def upgma_rowmin(d):
    """UPGMA (size-weighted average linkage) with cached row minima: each
    step merges the closest pair (ties to the lowest row, then column), as
    `mixed_linkage_rowmin`. Returns scipy's linkage layout (children, the
    lower id first, and the merge distance); releases the GIL, so families'
    trees can be built on several threads."""
    n = d.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    node = np.arange(n)
    size = np.ones(n)
    rmin = np.empty(n)
    rarg = np.empty(n, dtype=np.int64)
    for i in range(n):
        rmin[i], rarg[i] = _row_min(d, i, alive)
    z = np.empty((n - 1, 4))
    for k in range(n - 1):
        a, best = -1, np.inf
        for i in range(n):
            if alive[i] and rmin[i] < best:
                best, a = rmin[i], i
        if a < 0:  # only infinite or NaN distances left: take the first live pair
            a = 0
            while not alive[a]:
                a += 1
            b = a + 1
            while not alive[b]:
                b += 1
        else:
            b = rarg[a]
        if b < a:
            a, b = b, a
        z[k, 0], z[k, 1] = min(node[a], node[b]), max(node[a], node[b])
        z[k, 2] = d[a, b]
        z[k, 3] = size[a] + size[b]
        alive[b] = False
        for j in range(n):
            if alive[j] and j != a:
                v = (size[a] * d[a, j] + size[b] * d[b, j]) / (size[a] + size[b])
                d[a, j] = v
                d[j, a] = v
        size[a] += size[b]
        node[a] = n + k
        rmin[a], rarg[a] = _row_min(d, a, alive)
        for i in range(n):
            if not alive[i] or i == a:
                continue
            if rarg[i] == a or rarg[i] == b:
                rmin[i], rarg[i] = _row_min(d, i, alive)
            elif d[i, a] < rmin[i] or (d[i, a] == rmin[i] and a < rarg[i]):
                rmin[i], rarg[i] = d[i, a], a
    return z
