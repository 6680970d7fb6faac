"""numba kernels of the agglomerative guide trees (kept apart so that small
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
def _agglomerate(d, share, weighted):
    """Agglomerative clustering of the finite distances ``d`` (overwritten)
    with cached row minima: each step merges the closest pair, ties to the
    lowest row, then column. A merged cluster's distance to another is the
    size-weighted average of its parts' (``weighted``: UPGMA), else
    ``share * average + (1 - share) * minimum`` (mixed linkage). Returns each
    merge's node ids (the lower row's first; node n + k is merge k) and its
    distance. Releases the GIL, so families' trees can be built on threads."""
    n = d.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    node = np.arange(n)
    size = np.ones(n)
    rmin = np.empty(n)
    rarg = np.empty(n, dtype=np.int64)
    for i in range(n):
        rmin[i], rarg[i] = _row_min(d, i, alive)
    pairs = np.empty((n - 1, 2), dtype=np.int64)
    dist = np.empty(n - 1)
    for k in range(n - 1):
        a, best = -1, np.inf
        for i in range(n):
            if alive[i] and rmin[i] < best:
                best, a = rmin[i], i
        b = rarg[a]
        if b < a:
            a, b = b, a
        pairs[k, 0], pairs[k, 1] = node[a], node[b]
        dist[k] = d[a, b]
        alive[b] = False
        for j in range(n):
            if alive[j] and j != a:
                if weighted:
                    v = (size[a] * d[a, j] + size[b] * d[b, j]) / (size[a] + size[b])
                else:
                    v = share * (d[a, j] + d[b, j]) / 2.0 + (1.0 - share) * min(d[a, j], d[b, j])
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
    return pairs, dist


def mixed_linkage_rowmin(d, share):
    """Mixed linkage (see msa_gpu.tree.mixed_linkage): children and branch
    lengths, node heights half the merge distances."""
    children, dist = _agglomerate(d, share, False)
    return children, _branch_lengths(children, dist, d.shape[0])


def _branch_lengths(children, dist, n):
    """Each merge's two branch lengths, node heights half the merge distances."""
    height = np.concatenate([np.zeros(n), dist / 2.0])
    return np.maximum(height[n:, None] - height[children], 0.0)


def upgma_rowmin(d):
    """UPGMA in SciPy's linkage layout (children, the lower id first, and the
    merge distance; no cluster sizes)."""
    children, dist = _agglomerate(d, 0.0, True)
    return np.column_stack([np.sort(children, axis=1), dist])


@numba.njit(cache=True, nogil=True)
def _prim_edges(d):
    """Minimum spanning tree of the complete graph ``d`` (read, never written)
    by Prim's algorithm from sequence 0: ties go to the lowest index. Returns
    each edge's ends and length, in the order they join the tree."""
    n = d.shape[0]
    inside = np.zeros(n, dtype=np.bool_)
    best = np.empty(n)
    src = np.zeros(n, dtype=np.int64)
    for k in range(n):
        best[k] = d[0, k]
    inside[0] = True
    ends = np.empty((n - 1, 2), dtype=np.int64)
    length = np.empty(n - 1)
    for step in range(n - 1):
        j, low = -1, np.inf
        for k in range(n):
            if not inside[k] and (j < 0 or best[k] < low):
                j, low = k, best[k]
        ends[step, 0], ends[step, 1] = src[j], j
        length[step] = low
        inside[j] = True
        for k in range(n):
            if not inside[k] and d[j, k] < best[k]:
                best[k] = d[j, k]
                src[k] = j
    return ends, length


def single_linkage_prim(d):
    """Single linkage through the minimum spanning tree (`_prim_edges`): the
    edges in order of length (ties: the lower ends first) join clusters by
    union-find. O(n) memory beside ``d``, which is only read. Returns children
    (the lower node first) and branch lengths, node heights half the merge
    distances."""
    return single_linkage_edges(*_prim_edges(d), d.shape[0])


def single_linkage_edges(ends, length, n):
    """Single linkage from a minimum spanning tree's edges (``ends`` (n - 1,
    2), ``length``): the edges in order of length (ties: the lower ends
    first) join clusters by union-find. Returns children (the lower node
    first) and branch lengths, node heights half the merge distances."""
    lo, hi = np.minimum(ends[:, 0], ends[:, 1]), np.maximum(ends[:, 0], ends[:, 1])
    order = np.lexsort((hi, lo, length))
    children = _join(lo[order], hi[order], n)
    return children, _branch_lengths(children, length[order], n)


@numba.njit(cache=True, nogil=True)
def _join(a, b, n):
    """Children of the merges joining the clusters of ``a[k]`` and ``b[k]``
    in turn (union-find; node n + k is merge k, the lower node first)."""
    parent = np.arange(n)
    node = np.arange(n)
    children = np.empty((n - 1, 2), dtype=np.int64)
    for k in range(n - 1):
        ra, rb = a[k], b[k]
        while parent[ra] != ra:
            parent[ra] = parent[parent[ra]]
            ra = parent[ra]
        while parent[rb] != rb:
            parent[rb] = parent[parent[rb]]
            rb = parent[rb]
        x, y = node[ra], node[rb]
        children[k, 0], children[k, 1] = min(x, y), max(x, y)
        parent[rb] = ra
        node[ra] = n + k
    return children
