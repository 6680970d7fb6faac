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

from msa_gpu.arrays import offsets
from msa_gpu.consistency.pairhmm import PairHMM, pair_posteriors, probcons_model
from msa_gpu.types import LIBRARY_ONE, ConsistencyLibrary, Sequences

#: ProbCons drops posteriors below this, and applies the transformation twice.
CUTOFF = 0.01
PASSES = 2


#: Fixed point of the expected identities' sums (integer sums have the same
#: bits in any order, so both backends give the same guide tree).
IDENTITY_ONE = float(1 << 40)


def posterior_library(seqs: Sequences, model: PairHMM | None = None, cutoff: float = CUTOFF,
                      passes: int = PASSES, xp=np) -> ConsistencyLibrary:
    """The family's library (see the module): posteriors cut at ``cutoff``
    and ``passes`` consistency transformations (ProbCons: 2), on ``xp``'s
    device: the same bits on either. Every pair's matrix is held sparse, all
    pairs in flat arrays (q, x, y, p) that stay on the device between the
    passes (dense, a family of 142 sequences of ~400 residues would hold
    13 GB); the library's entry arrays stay there too."""
    model = model or probcons_model(seqs.alphabet.size)
    n = len(seqs)
    lengths = seqs.lengths.astype(np.int64)
    pairs = np.array([(s, t) for s in range(n) for t in range(s + 1, n)], dtype=np.int64).reshape(-1, 2)
    flat = flat_pair_posteriors(seqs, pairs, model, cutoff, xp)
    identity = _expected_identity(seqs, pairs, flat, xp)
    for _ in range(passes):
        flat = _transformed(flat, pairs, n, lengths, cutoff, xp)
    q, x, y, p = flat
    counts = _host(xp.bincount(q, minlength=len(pairs))) if len(pairs) else np.zeros(0, np.int64)
    w = xp.rint(p * float(n * LIBRARY_ONE * LIBRARY_ONE)).astype(xp.int32)
    return ConsistencyLibrary(n, lengths, offsets(counts), x.astype(xp.int32), y.astype(xp.int32), w, identity)


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _expected_identity(seqs: Sequences, pairs: np.ndarray, flat, xp) -> np.ndarray:
    """Each pair's expected identity: posterior mass on identical residues
    over the shorter length (host (n, n), 1 on the diagonal), summed in
    fixed point (`IDENTITY_ONE`) so that the order of the sum does not matter."""
    n = len(seqs)
    identity = np.eye(n)
    q, x, y, p = flat
    if not len(pairs):
        return identity
    codes = xp.asarray(np.concatenate(seqs.codes).astype(np.int16))
    start = xp.asarray(offsets(seqs.lengths)[:-1])
    ps, pt = xp.asarray(pairs[:, 0]), xp.asarray(pairs[:, 1])
    same = codes[start[ps[q]] + x] == codes[start[pt[q]] + y]
    mass = xp.where(same, xp.rint(p * IDENTITY_ONE), 0).astype(xp.int64)
    ends = xp.searchsorted(q, xp.arange(len(pairs) + 1))
    csum = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(mass)])
    total = _host(csum[ends[1:]] - csum[ends[:-1]]).astype(np.float64) / IDENTITY_ONE
    lengths = seqs.lengths.astype(np.int64)
    shorter = np.maximum(np.minimum(lengths[pairs[:, 0]], lengths[pairs[:, 1]]), 1)
    identity[pairs[:, 0], pairs[:, 1]] = identity[pairs[:, 1], pairs[:, 0]] = total / shorter
    return identity


def flat_pair_posteriors(seqs: Sequences, pairs: np.ndarray, model: PairHMM, cutoff: float, xp=np):
    """Each pair's posteriors of at least ``cutoff`` as flat arrays
    (q, x, y, p) on ``xp``'s device, by pair index q, then row-major: on the
    GPU in batches (backend/posterior_gpu.py), on the CPU a pair per host
    thread (the numba twin releases the GIL). The same bits either way."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if xp is not np:
        from msa_gpu.backend.posterior_gpu import flat_posteriors

        return flat_posteriors(list(seqs.codes), pairs, model.init, model.trans, model.pair, model.single, cutoff)

    def one(pair):
        p = pair_posteriors(seqs.codes[pair[0]], seqs.codes[pair[1]], model)
        x, y = np.nonzero(p >= cutoff)
        return x, y, p[x, y]

    return _flat(_threaded(one, [tuple(pr) for pr in pairs.tolist()]))


def sparse_pair_posteriors(seqs: Sequences, pairs: list[tuple[int, int]], model: PairHMM, cutoff: float,
                           xp=np) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`flat_pair_posteriors` as each pair's (x, y, p) host arrays."""
    q, x, y, p = (_host(a) for a in flat_pair_posteriors(seqs, np.array(pairs, np.int64), model, cutoff, xp))
    bounds = np.searchsorted(q, np.arange(len(pairs) + 1))
    return [(x[a:b], y[a:b], p[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _flat(rows: list):
    """Per-pair (x, y, p) host arrays as flat (q, x, y, p)."""
    counts = [len(r[0]) for r in rows]
    q = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    cat = lambda i, dt: np.concatenate([np.asarray(r[i], dt) for r in rows]) if rows else np.zeros(0, dt)  # noqa: E731
    return q, cat(0, np.int64), cat(1, np.int64), cat(2, np.float64)


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


def ordered_csr(flat, pairs: np.ndarray, n: int, lengths: np.ndarray, xp=np):
    """Every ordered pair (a, b)'s posteriors as CSR rows of a, from the pairs
    s < t's flat (q, x, y, p): (indptr, indices, data, base) on ``xp``'s
    device, pair (a, b)'s rows from ``base[a * n + b]``, each row's entries
    by column. (b, a) is (a, b) transposed; the keys are distinct, so any
    sort gives the same arrays."""
    q, x, y, p = flat
    ps, pt = xp.asarray(pairs[:, 0]), xp.asarray(pairs[:, 1])
    s, t = ps[q], pt[q]
    a, b = xp.concatenate([s, t]), xp.concatenate([t, s])
    row, col, val = xp.concatenate([x, y]), xp.concatenate([y, x]), xp.concatenate([p, p])
    first = np.repeat(np.arange(n), n)
    rows_of = np.where(first != np.tile(np.arange(n), n), lengths[first], 0)  # rows of each ordered pair
    base = offsets(rows_of)
    g = xp.asarray(base[:-1])[a * n + b] + row
    order = xp.argsort(g * int(max(lengths.max(initial=0), 1)) + col)
    counts = xp.bincount(g, minlength=int(base[-1]))
    indptr = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(counts)])
    return indptr, col[order], val[order], base[:-1]


def _transformed(flat, pairs: np.ndarray, n: int, lengths: np.ndarray, cutoff: float, xp=np):
    """One consistency transformation of every pair s < t's sparse matrix
    (flat (q, x, y, p)), on ``xp``'s device (the same bits on either)."""
    indptr, indices, data, base = ordered_csr(flat, pairs, n, lengths, xp)
    if xp is not np:
        from msa_gpu.backend.posterior_gpu import consistency_pairs

        return consistency_pairs(indptr, indices, data, base, lengths, pairs, n, cutoff)
    from msa_gpu.backend.posterior_cpu import consistency_pair

    def one(pair):
        dense = consistency_pair(pair[0], pair[1], n, lengths, indptr, indices, data, base, cutoff)
        x, y = np.nonzero(dense)
        return x, y, dense[x, y]

    return _flat(_threaded(one, [tuple(pr) for pr in pairs.tolist()]))


def on_backend(lib: ConsistencyLibrary, xp) -> ConsistencyLibrary:
    """The library with its entry arrays on ``xp``'s device."""
    if xp is np:
        return lib
    return ConsistencyLibrary(lib.n_seqs, lib.lengths, xp.asarray(lib.pair_off), xp.asarray(lib.x),
                              xp.asarray(lib.y), xp.asarray(lib.w), lib.identity)
