"""GPU runtime of kernels/posterior.cu (twin: posterior_cpu): pair-HMM
posteriors of many pairs, one block a pair, kept where at least a cutoff
(sparse, row-major like ``np.nonzero``) before they leave the device."""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.kernels import get_function

THREADS = 128  # kernels/posterior.cu: POST_THREADS
NS = 5


def _bytes(L1: np.ndarray, L2: np.ndarray) -> np.ndarray:
    """Device bytes of each pair: posteriors, three anti-diagonals, scales."""
    return 8 * L1 * L2 + 8 * 3 * (L1 + 1) * NS + 4 * 2 * (L1 + L2 + 1)


def sparse_posteriors(codes: list[np.ndarray], pairs: np.ndarray, init, trans, pair, single, cutoff: float,
                      block_bytes: int = 1 << 30) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each pair (s, t) of ``pairs`` (P, 2), the posteriors of sequence s's
    residues (rows) against t's that are at least ``cutoff``: (x, y, p) host
    arrays in row-major order. Pairs go in batches of about ``block_bytes``."""
    lens = np.array([len(c) for c in codes], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    d_codes = cp.asarray(np.concatenate(codes).astype(np.uint8) if len(codes) else np.zeros(1, np.uint8))
    model = [cp.asarray(np.ascontiguousarray(a, dtype=np.float64)) for a in (init, trans, pair, single)]
    A = int(np.asarray(pair).shape[0])
    kernel = get_function("posterior", "pair_posteriors")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    L1, L2 = lens[pairs[:, 0]], lens[pairs[:, 1]]
    cost = _bytes(L1, L2)
    out: list = []
    start = 0
    while start < len(pairs):
        stop, used = start, 0
        while stop < len(pairs) and (stop == start or used + cost[stop] <= block_bytes):
            used += int(cost[stop])
            stop += 1
        out.extend(_batch(kernel, d_codes, offs, pairs[start:stop], L1[start:stop], L2[start:stop], model, A, cutoff))
        start = stop
    return out


def _batch(kernel, d_codes, offs, pairs, L1, L2, model, A, cutoff):
    cells = L1 * L2
    post_off = np.concatenate([[0], np.cumsum(cells)]).astype(np.int64)
    ring_off = np.concatenate([[0], np.cumsum(3 * (L1 + 1) * NS)[:-1]]).astype(np.int64)
    scale_off = np.concatenate([[0], np.cumsum(2 * (L1 + L2 + 1))[:-1]]).astype(np.int64)
    post = cp.empty(max(int(post_off[-1]), 1), dtype=cp.float64)
    ring = cp.empty(max(int(np.sum(3 * (L1 + 1) * NS)), 1), dtype=cp.float64)
    scales = cp.empty(max(int(np.sum(2 * (L1 + L2 + 1))), 1), dtype=cp.int32)
    kernel((len(pairs),), (THREADS,),
           (d_codes, cp.asarray(offs[pairs[:, 0]]), cp.asarray(offs[pairs[:, 1]]), cp.asarray(L1.astype(np.int32)),
            cp.asarray(L2.astype(np.int32)), *model, np.int32(A), post, cp.asarray(post_off[:-1].copy()), ring,
            cp.asarray(ring_off), scales, cp.asarray(scale_off)))
    idx = cp.flatnonzero(post[: int(post_off[-1])] >= cutoff)
    vals = post[idx].get()
    idx = idx.get()
    owner = np.searchsorted(post_off[1:], idx, side="right")
    local = idx - post_off[owner]
    cols = L2[owner]
    x, y = local // cols, local % cols
    bounds = np.searchsorted(owner, np.arange(len(pairs) + 1))
    return [(x[a:b], y[a:b], vals[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def consistency_pairs(indptr, indices, data, base, lengths, n: int, cutoff: float,
                      block_bytes: int = 1 << 30) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Twin of posterior_cpu.consistency_pair for every pair s < t of a family
    (CSR of every ordered pair's posteriors, as `probabilistic._transformed`
    builds it): each pair's transformed entries (x, y, p), row-major."""
    kernel = get_function("posterior", "consistency_pairs")
    lengths = np.asarray(lengths, dtype=np.int64)
    d = [cp.asarray(a) for a in (indptr, indices, data, base, lengths)]
    pairs = np.array([(s, t) for s in range(n) for t in range(s + 1, n)], dtype=np.int32).reshape(-1, 2)
    cells = lengths[pairs[:, 0]] * lengths[pairs[:, 1]]
    out: list = []
    start = 0
    while start < len(pairs):
        stop, used = start, 0
        while stop < len(pairs) and (stop == start or used + 8 * cells[stop] <= block_bytes):
            used += 8 * int(cells[stop])
            stop += 1
        part, c = pairs[start:stop], cells[start:stop]
        off = np.concatenate([[0], np.cumsum(c)]).astype(np.int64)
        dense = cp.empty(max(int(off[-1]), 1), dtype=cp.float64)
        kernel((len(part),), (THREADS,), (*d, np.int32(n), cp.asarray(part[:, 0].copy()), cp.asarray(part[:, 1].copy()),
                                          dense, cp.asarray(off[:-1].copy()), np.float64(cutoff)))
        idx = cp.flatnonzero(dense[: int(off[-1])])
        vals, idx = dense[idx].get(), idx.get()
        owner = np.searchsorted(off[1:], idx, side="right")
        local = idx - off[owner]
        cols = lengths[part[owner, 1]]
        x, y = local // cols, local % cols
        bounds = np.searchsorted(owner, np.arange(len(part) + 1))
        out.extend((x[a:b], y[a:b], vals[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))
        start = stop
    return out
