"""A consistency library from pair-HMM posteriors (issue 29, an experiment on
the CPU): every pair's posterior match probabilities (`pairhmm`), those below
ProbCons' cutoff 0.01 dropped, transformed through every third sequence
(ProbCons' consistency transformation, twice), stored as a `ConsistencyLibrary`.

The hard library's entries are ``sum over u of W(s,u) W(u,t)`` with pairwise
weights W in 0..`LIBRARY_ONE`; here ``W`` is the posterior itself, so an entry
is ``n * P'(x, y) * LIBRARY_ONE^2`` and the merge's normalisation by ``n``
gives back ProbCons' averaged posterior. The guide tree takes each pair's
expected identity (posterior mass on identical residues over the shorter
length).
"""

from __future__ import annotations

import numpy as np

from msa_gpu.consistency.pairhmm import PairHMM, pair_posteriors, probcons_model
from msa_gpu.types import LIBRARY_ONE, ConsistencyLibrary, Sequences

#: ProbCons drops posteriors below this, and applies the transformation twice.
CUTOFF = 0.01
PASSES = 2


def posterior_library(seqs: Sequences, model: PairHMM | None = None, cutoff: float = CUTOFF,
                      passes: int = PASSES, xp=np) -> ConsistencyLibrary:
    """The family's library (see the module): posteriors cut at ``cutoff``
    and ``passes`` consistency transformations (ProbCons: 2), on ``xp``'s
    device: the same bits on either. Each pair's matrix
    is held sparse (x, y, p): dense, a family of 142 sequences of ~400
    residues would hold 13 GB."""
    model = model or probcons_model(seqs.alphabet.size)
    n = len(seqs)
    lengths = seqs.lengths.astype(np.int64)
    identity = np.eye(n)
    pairs = [(s, t) for s in range(n) for t in range(s + 1, n)]
    rows = dict(zip(pairs, sparse_pair_posteriors(seqs, pairs, model, cutoff, xp)))
    for (s, t), (x, y, p) in rows.items():
        same = seqs.codes[s][x] == seqs.codes[t][y]
        identity[s, t] = identity[t, s] = float(p[same].sum()) / max(min(lengths[s], lengths[t]), 1)
    for _ in range(passes):
        rows = _transformed(rows, n, lengths, cutoff, xp)
    xs, ys, ws, counts = [], [], [], []
    for s in range(n):
        for t in range(s + 1, n):
            x, y, p = rows[(s, t)]
            xs.append(x.astype(np.int32))
            ys.append(y.astype(np.int32))
            ws.append(np.rint(p * n * LIBRARY_ONE * LIBRARY_ONE).astype(np.int32))
            counts.append(len(x))
    pair_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int32)  # noqa: E731
    return ConsistencyLibrary(n, lengths, pair_off, cat(xs), cat(ys), cat(ws), identity)


def sparse_pair_posteriors(seqs: Sequences, pairs: list[tuple[int, int]], model: PairHMM, cutoff: float,
                           xp=np) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each pair's posteriors of at least ``cutoff`` as (x, y, p), row-major:
    on the GPU in batches (backend/posterior_gpu.py), on the CPU a pair per
    host thread (the numba twin releases the GIL). The same bits either way."""
    if xp is not np:
        from msa_gpu.backend.posterior_gpu import sparse_posteriors

        return sparse_posteriors(list(seqs.codes), np.array(pairs, dtype=np.int64).reshape(-1, 2), model.init,
                                 model.trans, model.pair, model.single, cutoff)

    def one(pair):
        p = pair_posteriors(seqs.codes[pair[0]], seqs.codes[pair[1]], model)
        x, y = np.nonzero(p >= cutoff)
        return x, y, p[x, y]

    return _threaded(one, pairs)


def _threaded(fn, items: list) -> list:
    """``fn`` of each item on host threads (numba kernels that release the
    GIL; as many as numba may use, which ``threads`` caps), results in order."""
    import numba

    workers = min(len(items), numba.get_num_threads())
    if workers < 2:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def _transformed(rows: dict, n: int, lengths: np.ndarray, cutoff: float, xp=np) -> dict:
    """One consistency transformation of every pair s < t's sparse matrix
    (``rows``: (x, y, p) with x in s, y in t, x ascending), on ``xp``'s
    device (the same bits on either)."""
    from msa_gpu.backend.posterior_cpu import consistency_pair

    indptr, indices, data, base = [np.zeros(1, np.int64)], [], [], np.zeros(n * n, np.int64)
    row_at = 0
    for a in range(n):  # CSR of every ordered pair, rows of the first sequence
        for b in range(n):
            if a == b:
                continue
            if a < b:
                x, y, p = rows[(a, b)]
            else:  # the transpose, sorted by its rows
                y, x, p = rows[(b, a)]
                order = np.lexsort((y, x))
                x, y, p = x[order], y[order], p[order]
            base[a * n + b] = row_at
            indptr.append(indptr[-1][-1] + np.cumsum(np.bincount(x, minlength=int(lengths[a]))))
            indices.append(y.astype(np.int64))
            data.append(p)
            row_at += int(lengths[a])
    indptr_a = np.concatenate(indptr)
    indices_a = np.concatenate(indices) if indices else np.zeros(0, np.int64)
    data_a = np.concatenate(data) if data else np.zeros(0)
    pairs = [(s, t) for s in range(n) for t in range(s + 1, n)]
    if xp is not np:
        from msa_gpu.backend.posterior_gpu import consistency_pairs

        return dict(zip(pairs, consistency_pairs(indptr_a, indices_a, data_a, base, lengths, n, cutoff)))

    def one(pair):
        dense = consistency_pair(pair[0], pair[1], n, lengths, indptr_a, indices_a, data_a, base, cutoff)
        x, y = np.nonzero(dense)
        return x, y, dense[x, y]

    return dict(zip(pairs, _threaded(one, pairs)))


def on_backend(lib: ConsistencyLibrary, xp) -> ConsistencyLibrary:
    """The library with its entry arrays on ``xp``'s device."""
    if xp is np:
        return lib
    return ConsistencyLibrary(lib.n_seqs, lib.lengths, xp.asarray(lib.pair_off), xp.asarray(lib.x),
                              xp.asarray(lib.y), xp.asarray(lib.w), lib.identity)
