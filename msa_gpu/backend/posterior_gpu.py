"""GPU runtime of kernels/posterior.cu (twin: posterior_cpu): pair-HMM
posteriors of many pairs, one block a pair, kept where at least a cutoff
(sparse, row-major like ``np.nonzero``) before they leave the device."""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.arrays import budget_chunks, offsets
from msa_gpu.kernels import get_function

THREADS = 128  # kernels/posterior.cu: POST_THREADS
NS = 5


def _bytes(L1: np.ndarray, L2: np.ndarray) -> np.ndarray:
    """Device bytes of each pair: posteriors, three anti-diagonals, scales."""
    return 8 * L1 * L2 + 8 * 3 * (L1 + 1) * NS + 4 * 2 * (L1 + L2 + 1)


def flat_posteriors(codes: list[np.ndarray], pairs: np.ndarray, init, trans, pair, single, cutoff: float,
                    block_bytes: int = 1 << 30):
    """For each pair q = (s, t) of ``pairs`` (P, 2), the posteriors of
    sequence s's residues (rows) against t's that are at least ``cutoff``,
    as flat device arrays (q, x, y, p) sorted by pair, then row-major. Pairs
    go in batches of about ``block_bytes``."""
    lens = np.array([len(c) for c in codes], dtype=np.int64)
    offs = offsets(lens)[:-1]
    d_codes = cp.asarray(np.concatenate(codes).astype(np.uint8) if len(codes) else np.zeros(1, np.uint8))
    model = [cp.asarray(np.ascontiguousarray(a, dtype=np.float64)) for a in (init, trans, pair, single)]
    A = int(np.asarray(pair).shape[0])
    kernel = get_function("posterior", "pair_posteriors")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    L1, L2 = lens[pairs[:, 0]], lens[pairs[:, 1]]
    parts = [_batch(kernel, d_codes, offs, pairs[c], L1[c], L2[c], model, A, cutoff, c)
             for c in budget_chunks(_bytes(L1, L2), block_bytes)]
    return _concat(parts)


def _kept(values, keep, off: np.ndarray, cols: np.ndarray, ids: np.ndarray):
    """The kept entries of flat device matrices ``values`` (matrix i's
    ``off[i + 1] - off[i]`` cells, ``cols[i]`` to a row, pair id ``ids[i]``)
    where the device mask ``keep`` holds: device (q, x, y, value), row-major."""
    idx = cp.flatnonzero(keep)
    owner = cp.searchsorted(cp.asarray(off[1:]), idx, side="right")
    local = idx - cp.asarray(off)[owner]
    width = cp.asarray(np.asarray(cols, np.int64))[owner]
    return cp.asarray(np.asarray(ids, np.int64))[owner], local // width, local % width, values[idx]


def _concat(parts: list):
    if not parts:
        return tuple(cp.zeros(0, dt) for dt in (cp.int64, cp.int64, cp.int64, cp.float64))
    return tuple(cp.concatenate([p[i] for p in parts]) for i in range(4))


def _batch(kernel, d_codes, offs, pairs, L1, L2, model, A, cutoff, ids):
    cells = L1 * L2
    post_off, ring_off, scale_off = offsets(cells), offsets(3 * (L1 + 1) * NS), offsets(2 * (L1 + L2 + 1))
    post = cp.empty(max(int(post_off[-1]), 1), dtype=cp.float64)
    ring = cp.empty(max(int(ring_off[-1]), 1), dtype=cp.float64)
    scales = cp.empty(max(int(scale_off[-1]), 1), dtype=cp.int32)
    kernel((len(pairs),), (THREADS,),
           (d_codes, cp.asarray(offs[pairs[:, 0]]), cp.asarray(offs[pairs[:, 1]]), cp.asarray(L1.astype(np.int32)),
            cp.asarray(L2.astype(np.int32)), *model, np.int32(A), post, cp.asarray(post_off[:-1].copy()), ring,
            cp.asarray(ring_off[:-1].copy()), scales, cp.asarray(scale_off[:-1].copy())))
    flat = post[: int(post_off[-1])]
    return _kept(flat, flat >= cutoff, post_off, L2, ids)


def consistency_pairs(indptr, indices, data, base, lengths, nq, bq, lq, ps, pt, cutoff: float,
                      block_bytes: int = 1 << 30):
    """Twin of posterior_cpu.consistency_pair for pairs s < t of one or more
    families (pair q: local indices ``ps[q] < pt[q]`` in a family of ``nq[q]``
    sequences whose lengths start at ``lengths[lq[q]]`` and whose ordered
    pairs' CSR rows start at ``base[bq[q] + a n + b]``; `probabilistic`
    builds it on the device; the per-pair arrays are host): the transformed
    entries as flat device arrays (q, x, y, p), by pair, then row-major."""
    kernel = get_function("posterior", "consistency_pairs")
    lengths = np.asarray(lengths, dtype=np.int64)
    d = [cp.asarray(a) for a in (indptr, indices, data, base, lengths)]
    ps, pt = np.asarray(ps, np.int64), np.asarray(pt, np.int64)
    lq = np.asarray(lq, np.int64)
    ls, lt = lengths[lq + ps], lengths[lq + pt]
    cells = ls * lt
    parts = []
    for c in budget_chunks(8 * cells, block_bytes):
        off = offsets(cells[c])
        dense = cp.empty(max(int(off[-1]), 1), dtype=cp.float64)
        per_pair = [cp.asarray(np.ascontiguousarray(a[c]).astype(dt)) for a, dt in
                    ((np.asarray(nq), np.int32), (np.asarray(bq), np.int64), (lq, np.int64), (ps, np.int32), (pt, np.int32))]
        kernel((len(c),), (THREADS,), (*d, *per_pair, dense, cp.asarray(off[:-1].copy()), np.float64(cutoff)))
        dense = dense[: int(off[-1])]
        parts.append(_kept(dense, dense != 0, off, lt[c], c))
    return _concat(parts)
