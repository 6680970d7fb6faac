"""A consistency library from pair-HMM posteriors (issue 29; accurate mode's
library for protein): every pair's posterior match probabilities (`pairhmm`),
those below ProbCons' cutoff 0.01 dropped, transformed through every third
sequence (ProbCons' consistency transformation, twice), stored as a
`ConsistencyLibrary`, on either backend with the same bits.

The hard library's entries are ``sum over u of W(s,u) W(u,t)`` with pairwise
weights W in 0..`LIBRARY_ONE`; here ``W`` is the posterior itself, so an entry
is ``n * P'(x, y) * LIBRARY_ONE^2`` and the merge's normalisation by ``n``
gives back ProbCons' averaged posterior. The guide tree takes each pair's
expected identity (posterior mass on identical residues over the shorter
length).
"""

from __future__ import annotations

import warnings

import numpy as np

from msa_gpu.backend import budget_chunks, offsets
from msa_gpu.backend import backend_of, to_host
from msa_gpu.consistency.pairhmm import PairHMM, model_for
from msa_gpu.consistency.memory import LibraryPlan, library_plan, planned_entries
from msa_gpu.types import LIBRARY_ONE, ConsistencyLibrary, Sequences

#: ProbCons drops posteriors below this, and applies the transformation twice.
CUTOFF = 0.01
PASSES = 2


#: Posterior cells (pairs x L^2) of the families whose libraries are built
#: together, by backend: on the GPU their sparse posteriors (~2% of the
#: cells) and the CSR of their ordered pairs (twice as many) stay on the
#: device at once; on the CPU a group only spreads small families' pairs
#: over the threads, so it is smaller there and the host holds less
#: (`memory.library_plan`).
GROUP_CELLS = {"gpu": 2 << 30, "cpu": 1 << 27}


def posterior_library(seqs: Sequences, model: PairHMM | None = None, cutoff: float = CUTOFF,
                      passes: int = PASSES, xp=np) -> ConsistencyLibrary:
    """One family's library (`posterior_libraries`)."""
    return posterior_libraries([seqs], model, cutoff, passes, xp)[0]


def posterior_libraries(families: list[Sequences], model: PairHMM | None = None, cutoff: float = CUTOFF,
                        passes: int = PASSES, xp=np, group_cells: int | None = None,
                        on_progress=None) -> list[ConsistencyLibrary]:
    """Each family's library (see the module): posteriors cut at ``cutoff``
    and ``passes`` consistency transformations (ProbCons: 2), on ``xp``'s
    device: the same bits on either. Families go together, in groups of
    about ``group_cells`` posterior cells with one alphabet
    (`library_groups`), so that small families fill the device: one
    posterior launch and one launch a pass for all of a group's pairs. Every pair's matrix is held sparse, all pairs in
    flat arrays (q, x, y, p) that stay on the device between the passes
    (dense, a family of 142 sequences of ~400 residues would hold 13 GB), and
    so do the libraries' entry arrays. ``on_progress(done, total)`` counts
    pair steps: each pair's posteriors, then each transformation pass over
    it (``1 + passes`` steps a pair), reported as they end (on the CPU every
    1% of a group's pairs, so that one family reports too; on the GPU after
    each launch)."""
    out: list = [None] * len(families)
    total, done = sum(len(f) * (len(f) - 1) // 2 for f in families) * (1 + passes), 0

    def tick(k: int) -> None:
        nonlocal done
        done += k
        if on_progress is not None:
            on_progress(done, total)

    for group in library_groups(families, xp, group_cells):
        hmm = model or model_for(families[group[0]].alphabet)
        libs = _Group([families[i] for i in group]).libraries(hmm, cutoff, passes, xp, tick)
        for i, lib in zip(group, libs):
            out[i] = lib
    return out


def library_groups(families: list[Sequences], xp=np, group_cells: int | None = None) -> list[list[int]]:
    """The families whose libraries `posterior_libraries` builds together
    (indices): one alphabet a group, in order, about ``group_cells``
    posterior cells each (default: `GROUP_CELLS` of ``xp``'s backend)."""
    budget = group_cells or GROUP_CELLS[backend_of(xp).name]
    cells = [_cells(f) for f in families]
    out = []
    for size in sorted({f.alphabet.size for f in families}):
        todo = [i for i, f in enumerate(families) if f.alphabet.size == size]
        out += [[todo[int(k)] for k in chunk] for chunk in budget_chunks([cells[i] for i in todo], budget)]
    return out


def library_memory(families: list[Sequences], gpu: bool, threads: int = 1) -> LibraryPlan:
    """The memory plan of ``families``' libraries, built in `library_groups`
    on the GPU or the CPU (`memory.library_plan`)."""
    groups = library_groups(families, group_cells=GROUP_CELLS["gpu" if gpu else "cpu"])
    return library_plan([[families[i].lengths for i in g] for g in groups], threads,
                        [families[g[0]].alphabet.name != "protein" for g in groups])


def _cells(seqs: Sequences) -> int:
    lengths = seqs.lengths.astype(np.int64)
    return int((lengths.sum() ** 2 - (lengths ** 2).sum()) // 2)


class _Group:
    """Families whose libraries are built together: their pairs s < t
    (family after family) indexed globally, with each pair's family, local
    and global sequence indices."""

    def __init__(self, families: list[Sequences]):
        self.families = families
        self.n = np.array([len(f) for f in families], dtype=np.int64)
        self.seq0 = offsets(self.n)  # each family's first sequence, globally
        self.lengths = np.concatenate([f.lengths for f in families]).astype(np.int64)
        local = [np.array([(s, t) for s in range(n) for t in range(s + 1, n)], np.int64).reshape(-1, 2)
                 for n in self.n.tolist()]
        self.pair0 = offsets([len(p) for p in local])  # each family's first pair
        self.fam = np.repeat(np.arange(len(families)), np.diff(self.pair0))
        self.local = np.concatenate(local) if local else np.zeros((0, 2), np.int64)
        self.glob = self.local + self.seq0[self.fam][:, None]
        self.ord0 = offsets(self.n * self.n)  # each family's first ordered pair (a, b), a n + b after it

    def libraries(self, model: PairHMM, cutoff: float, passes: int, xp, tick=None) -> list[ConsistencyLibrary]:
        """The group's libraries; ``tick(k)`` is called as k more pair steps
        end. ``entries`` then holds each phase's count, which the memory plan
        bounds (`memory.ROW_ENTRIES`; a warning says where not)."""
        nucleotide = self.families[0].alphabet.name != "protein"
        planned = library_plan([[f.lengths for f in self.families]], nucleotide=nucleotide).entries
        flat = self.posteriors(model, cutoff, xp, tick, room=passes > 0)
        self.entries = [len(flat[0])]
        identity = self.expected_identity(flat, xp)
        for k in range(passes):  # each pass's input is let go as soon as its CSR holds it
            csr = self.ordered_csr(flat, xp)
            del flat
            flat = self.transformed(csr, cutoff, xp, tick, room=k + 1 < passes)
            self.entries.append(len(flat[0]))
            del csr
        if max(self.entries) > planned:
            warnings.warn(f"the pair-HMM library held {max(self.entries):,} entries in a pass, more than its memory "
                          f"plan's {planned:,}", stacklevel=2)
        q, x, y, p = flat
        counts = to_host(xp.bincount(q, minlength=len(self.local))) if len(self.local) else np.zeros(0, np.int64)
        ends = offsets(counts)
        out = []
        for f, seqs in enumerate(self.families):
            n, a, b = len(seqs), int(ends[self.pair0[f]]), int(ends[self.pair0[f + 1]])
            w = p[a:b].astype(xp.float64) * float(n * LIBRARY_ONE * LIBRARY_ONE)
            w = xp.rint(w, out=w).astype(xp.int32)
            out.append(ConsistencyLibrary(n, seqs.lengths.astype(np.int64), ends[self.pair0[f]: self.pair0[f + 1] + 1] - a,
                                          x[a:b].astype(xp.int32, copy=False), y[a:b].astype(xp.int32, copy=False), w,
                                          identity[f]))
        return out

    def posteriors(self, model: PairHMM, cutoff: float, xp, tick=None, room: bool = False):
        codes = [c for f in self.families for c in f.codes]
        return flat_posteriors_of(codes, self.glob, model, cutoff, xp, tick, room)

    def expected_identity(self, flat, xp) -> list[np.ndarray]:
        """Each family's expected identities: posterior mass on identical
        residues over the shorter length (host (n, n), 1 on the diagonal),
        summed in fixed point (`IDENTITY_ONE`) so that the order of the sum
        does not matter."""
        q, x, y, p = flat
        out = [np.eye(len(f)) for f in self.families]
        if not len(self.local):
            return out
        codes = xp.asarray(np.concatenate([c for f in self.families for c in f.codes]).astype(np.int16))
        start = xp.asarray(offsets(self.lengths)[:-1])
        gs, gt = xp.asarray(self.glob[:, 0]), xp.asarray(self.glob[:, 1])
        same = codes[start[gs[q]] + x] == codes[start[gt[q]] + y]
        mass = xp.where(same, xp.rint(p.astype(xp.float64) * IDENTITY_ONE), 0).astype(xp.int64)
        ends = xp.searchsorted(q, xp.arange(len(self.local) + 1))
        csum = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(mass)])
        total = to_host(csum[ends[1:]] - csum[ends[:-1]]).astype(np.float64) / IDENTITY_ONE
        shorter = np.maximum(np.minimum(self.lengths[self.glob[:, 0]], self.lengths[self.glob[:, 1]]), 1)
        value = total / shorter
        for f, m in enumerate(out):
            sl = slice(self.pair0[f], self.pair0[f + 1])
            s, t = self.local[sl, 0], self.local[sl, 1]
            m[s, t] = m[t, s] = value[sl]
        return out

    def ordered_csr(self, flat, xp):
        """Every ordered pair (a, b) of each family as CSR rows of a, from the
        pairs s < t's flat (q, x, y, p): (indptr, indices, data, base) on
        ``xp``'s device, family f's pair (a, b) from row ``base[ord0[f] +
        a n + b]``, each row's entries by column ((b, a) is (a, b) transposed;
        the keys are distinct, so any sort gives the same arrays). The pairs
        s < t come first, in the flat's order, so that their entries are the
        flat's own (y, p) in its order: on the CPU, where `posterior_cpu.FlatWriter` leaves room
        behind them, they stay in place and only the transposed half is
        written."""
        q, x, y, p = flat
        n_fwd = self.lengths[self.glob[:, 0]]  # rows of (s, t), then of (t, s), pair after pair
        first = offsets(np.concatenate([n_fwd, self.lengths[self.glob[:, 1]]]))
        n_q = self.n[self.fam]
        base = np.zeros(int(self.ord0[-1]), np.int64)  # (a, a) has no rows
        base[self.ord0[self.fam] + self.local[:, 0] * n_q + self.local[:, 1]] = first[: len(self.local)]
        base[self.ord0[self.fam] + self.local[:, 1] * n_q + self.local[:, 0]] = first[len(self.local): -1]
        kernels = backend_of(xp).posterior
        return (*kernels.ordered_csr(q, x, y, p, first, len(self.local), int(max(self.lengths.max(initial=0), 1))),
                base)

    def transformed(self, csr, cutoff: float, xp, tick=None, room: bool = False):
        """One consistency transformation of every pair's sparse matrix (its
        `ordered_csr`), on ``xp``'s device (the same bits on either): flat
        (q, x, y, p), on the CPU with ``room`` for the next CSR (`posterior_cpu.FlatWriter`)."""
        indptr, indices, data, base = csr
        nq, bq, lq = self.n[self.fam], self.ord0[self.fam], self.seq0[self.fam]
        return backend_of(xp).posterior.consistency_pairs(
            indptr, indices, data, base, self.lengths, nq, bq, lq, self.local[:, 0], self.local[:, 1], cutoff,
            tick=tick, room=room, planned=_planned(self.lengths[self.glob[:, 0]], self.lengths[self.glob[:, 1]]))


#: Fixed point of the expected identities' sums (integer sums have the same
#: bits in any order, so both backends give the same guide tree).
IDENTITY_ONE = float(1 << 40)


def flat_posteriors_of(codes: list[np.ndarray], pairs: np.ndarray, model: PairHMM, cutoff: float, xp=np,
                       tick=None, room: bool = False):
    """The posteriors of at least ``cutoff`` of ``pairs`` (P, 2) of ``codes``
    as flat arrays (q, x, y, p) on ``xp``'s device, by pair index q, then
    row-major: on the GPU in batches (backend/posterior_gpu.py), on the CPU
    a pair per host thread (the numba twin releases the GIL). The same bits
    either way. ``tick(k)`` is called as k more pairs are done; ``room``:
    see `posterior_cpu.FlatWriter`."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    lens = np.array([len(c) for c in codes], np.int64)
    return backend_of(xp).posterior.flat_posteriors(
        codes, pairs, model.init, model.trans, model.pair, model.single, cutoff, tick=tick, room=room,
        planned=_planned(lens[pairs[:, 0]], lens[pairs[:, 1]]) if len(pairs) else 0)


def sparse_pair_posteriors(seqs: Sequences, pairs: list[tuple[int, int]], model: PairHMM, cutoff: float,
                           xp=np) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each pair's posteriors of at least ``cutoff`` as (x, y, p) host
    arrays, row-major (`flat_posteriors_of`)."""
    flat = flat_posteriors_of(list(seqs.codes), np.array(pairs, np.int64), model, cutoff, xp)
    q, x, y, p = (to_host(a) for a in flat)
    bounds = np.searchsorted(q, np.arange(len(pairs) + 1))
    return [(x[a:b], y[a:b], p[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _planned(lengths_s: np.ndarray, lengths_t: np.ndarray) -> int:
    """Entries the memory plan allows pairs of these lengths in a phase."""
    return planned_entries(int(np.sum(lengths_s, dtype=np.int64) + np.sum(lengths_t, dtype=np.int64)))


def on_backend(lib: ConsistencyLibrary, xp) -> ConsistencyLibrary:
    """The library with its entry arrays on ``xp``'s device (arrays already
    there are kept, not copied)."""
    return ConsistencyLibrary(lib.n_seqs, lib.lengths, xp.asarray(lib.pair_off), xp.asarray(lib.x),
                              xp.asarray(lib.y), xp.asarray(lib.w), lib.identity)
