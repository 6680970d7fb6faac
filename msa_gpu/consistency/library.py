"""Accurate mode's consistency library: all-pairs alignments -> `ConsistencyLibrary`.

Every pair of a family is aligned by the stage-1 engine (`msa_gpu.backend.pairwise`,
on the GPU where there is one). Each alignment says which residue of ``u``
sits opposite each residue of ``s``, and how far the pair is trusted (its
identity). When profiles A and B are merged, the score of A's column ``a``
against B's column ``b`` gains

    sum over s in A, t in B, u in the family of
        w_s w_t W(s, u) W(u, t) [x_s(a) ~u~ y_t(b)]

normalised by ``W_A W_B n``: the residues of ``s`` and ``t`` in those columns
are aligned through a third sequence ``u`` (ProbCons' consistency
transformation and T-Coffee's triplet extension, with hard alignments). Since
every residue maps to itself, ``u = s`` and ``u = t`` give the direct pairwise
alignment. The sum over ``u`` is taken once per family (`build_libraries`:
dense per-pair matrices in chunks, their non-zero cells kept), so a merge
costs one pass over the entries of its row pairs, whatever the family's size.
Both steps run on the backend's device with integer atomics
(`msa_gpu.kernels` ``consistency.cu``; the numba twins are
`msa_gpu.backend.interfaces.ConsistencyKernels`), so both backends give the same integers.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences(["a", "b", "c"], [b"MKVLAW", b"MKVAW", b"KVLAW"], "protein")
>>> lib = build_libraries([seqs], LibrarySettings())[0]
>>> k = lib.pair_off   # pair (a, b) first: residues of a facing residues of b, and weights
>>> list(zip(lib.x[k[0]:k[1]].tolist(), lib.y[k[0]:k[1]].tolist(), lib.w[k[0]:k[1]].tolist()))
[(0, 0, 8192), (1, 1, 8192), (2, 2, 8192), (3, 2, 2752), (4, 3, 10944), (5, 4, 10944)]

Residue 3 of a (L) faces residue 2 of b (V) only through c, with less weight.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from msa_gpu.backend import budget_chunks, offsets
from msa_gpu.backend import PairScoring, align_pairs, all_pair_indices
from msa_gpu.settings.choices import Library
from msa_gpu.types import LIBRARY_ONE, ConsistencyLibrary, DistanceMatrix, Sequences


class LibraryWeight(str, enum.Enum):
    """How far a pairwise alignment is trusted."""

    identity = "identity"  # identical residues / aligned residue pairs
    coverage = "coverage"  # identical residues / the shorter sequence's length
    score = "score"  # alignment score / the smaller self-score of the two sequences


@dataclass(frozen=True)
class LibrarySettings:
    """The all-pairs alignments behind a library: mode (``local`` is MAFFT
    L-INS-i's choice, ``global`` G-INS-i's, ``both`` sums the two libraries
    as T-Coffee does), gap costs in matrix units, and the weighting of each
    pair."""

    mode: str = "local"
    gap_open: float = 11.0
    gap_extend: float = 1.0
    weight: LibraryWeight = LibraryWeight.identity

    def __post_init__(self) -> None:
        object.__setattr__(self, "weight", LibraryWeight(self.weight))
        for mode in self.modes:
            PairScoring(mode=mode, gap_open=self.gap_open, gap_extend=self.gap_extend)  # validates

    @property
    def modes(self) -> tuple[str, ...]:
        return (Library.local.value, Library.global_.value) if self.mode == Library.both else (self.mode,)


#: Pairs a call of the pairwise engine takes at least (whole families), so
#: that progress can be counted between calls while each call fills the GPU.
CHUNK_PAIRS = 100_000


def build_libraries(families: list[Sequences], settings: LibrarySettings = LibrarySettings(),
                    backend=None, on_progress=None, chunk_pairs: int = CHUNK_PAIRS) -> list[ConsistencyLibrary]:
    """One library per family (``backend``: a `Backend`, default the CPU).
    The pairs of families of one alphabet go to the pairwise engine in calls
    of whole families and at least ``chunk_pairs`` pairs (the alignments do
    not depend on the grouping); ``on_progress(done, total)`` counts the
    pairs aligned after each call. The extension through third sequences
    runs on the backend."""
    from msa_gpu.backend import cpu_backend

    backend = backend or cpu_backend()
    out: list[ConsistencyLibrary | None] = [None] * len(families)
    groups: list[list[int]] = []
    n_pairs = [len(s) * (len(s) - 1) // 2 for s in families]
    for name in dict.fromkeys(s.alphabet.name for s in families):
        group: list[int] = []
        held = 0
        for f, seqs in enumerate(families):
            if seqs.alphabet.name == name:
                group.append(f)
                held += n_pairs[f]
                if held >= chunk_pairs:
                    groups.append(group)
                    group, held = [], 0
        if group:
            groups.append(group)
    total, done = sum(n_pairs) * len(settings.modes), 0
    for members in groups:
        joined, pairs, pair_owner = _joined(families, members)
        base = _sequence_base(families, members)
        direct: dict[int, list] = {f: [] for f in members}
        for mode in settings.modes:
            scoring = PairScoring(mode=mode, gap_open=settings.gap_open, gap_extend=settings.gap_extend)
            res = align_pairs(joined, pairs, scoring, traceback=True, backend=backend)
            for f in members:
                sel = pair_owner == f
                trust = _trust(families[f], pairs[sel] - base[f], res.score_fixed[sel], res.identities[sel],
                               res.aligned_pairs[sel], settings.weight, scoring)
                direct[f].append(_direct(families[f], pairs[sel] - base[f], res.start[sel], res.runs,
                                         res.runs_offsets[:-1][sel], res.runs_offsets[1:][sel],
                                         res.identities[sel], trust))
            done += len(pairs)
            if on_progress is not None:
                on_progress(done, total)
        for f in members:
            maps = [(m, w) for m, w, _ in direct[f]]
            out[f] = _extended(families[f].lengths, maps, direct[f][0][2], backend)
    return out  # type: ignore[return-value]


def _sequence_base(families: list[Sequences], members: list[int]) -> dict[int, int]:
    sizes = [len(families[f]) for f in members]
    return dict(zip(members, offsets(sizes)[:-1].tolist()))


def _joined(families: list[Sequences], members: list[int]) -> tuple[Sequences, np.ndarray, np.ndarray]:
    """The families' sequences as one `Sequences`, their within-family pairs
    (indices into it) and each pair's family."""
    first = families[members[0]]
    base = _sequence_base(families, members)
    names, raw, codes, pairs, owner = [], [], [], [], []
    for f in members:
        s = families[f]
        names += [f"{f}:{i}" for i in range(len(s))]
        raw += list(s.raw)
        codes += list(s.codes)
        p = all_pair_indices(len(s)) + base[f]
        pairs.append(p)
        owner.append(np.full(len(p), f, dtype=np.int64))
    joined = Sequences(tuple(names), tuple(raw), tuple(codes), first.seqtype, first.alphabet)
    return joined, np.concatenate(pairs), np.concatenate(owner)


def _trust(seqs: Sequences, pairs: np.ndarray, score: np.ndarray, identities: np.ndarray, aligned: np.ndarray,
           weight: LibraryWeight, scoring: PairScoring) -> np.ndarray:
    """Each pair's weight in 0..1 (see `LibraryWeight`)."""
    if weight is LibraryWeight.score:
        diag = np.diagonal(scoring.fixed(seqs.alphabet.letters)[0]).astype(np.int64)
        self_score = np.array([int(diag[c].sum()) for c in seqs.codes], dtype=np.int64)
        best = np.minimum(self_score[pairs[:, 0]], self_score[pairs[:, 1]])
        return np.clip(score / np.maximum(best, 1), 0.0, 1.0)
    if weight is LibraryWeight.identity:
        return identities / np.maximum(aligned, 1)
    lengths = seqs.lengths
    return identities / np.maximum(np.minimum(lengths[pairs[:, 0]], lengths[pairs[:, 1]]), 1)


def _direct(seqs: Sequences, pairs: np.ndarray, start: np.ndarray, runs: np.ndarray, r0: np.ndarray,
            r1: np.ndarray, identities: np.ndarray, trust: np.ndarray):
    """The pairwise alignments as a residue map, ``pair_map[r, u]`` = the
    residue of ``u`` facing residue ``r`` of the family (numbered sequence
    after sequence; itself in its own sequence) or -1, with each pair's
    weight (0..LIBRARY_ONE) and identity."""
    n = len(seqs)
    lengths = seqs.lengths
    res_off = offsets(lengths)
    pair_map = np.full((int(res_off[-1]), n), -1, dtype=np.int32)
    own = np.arange(int(res_off[-1]))
    pair_map[own, np.repeat(np.arange(n), lengths)] = own - np.repeat(res_off[:-1], lengths)
    a, b, x, y = _matched_residues(pairs, start, runs, r0, r1)
    pair_map[res_off[a] + x, b] = y
    pair_map[res_off[b] + y, a] = x
    ident = np.eye(n)
    w = np.full((n, n), LIBRARY_ONE, dtype=np.int32)
    if len(pairs):
        shorter = np.minimum(lengths[pairs[:, 0]], lengths[pairs[:, 1]])
        q = np.rint(trust * LIBRARY_ONE).astype(np.int32)
        w[pairs[:, 0], pairs[:, 1]] = w[pairs[:, 1], pairs[:, 0]] = q
        ident[pairs[:, 0], pairs[:, 1]] = ident[pairs[:, 1], pairs[:, 0]] = identities / np.maximum(shorter, 1)
    return pair_map, w, ident


#: Dense cells one chunk of the extension may take (int32 each).
EXTEND_CELLS = 1 << 26


def _extended(lengths: np.ndarray, maps: list, identity: np.ndarray, backend) -> ConsistencyLibrary:
    """The library's entries: for each pair s < t, the weight of every residue
    pair that some u puts in one column, summed over u (and over the
    ``(pair_map, weights)`` of each alignment mode); pairs are extended in
    chunks of dense L_s x L_t matrices, whose non-zero cells are kept."""
    xp = backend.xp
    n = len(lengths)
    lengths = np.asarray(lengths, dtype=np.int64)
    tri = all_pair_indices(n)
    cells = lengths[tri[:, 0]] * lengths[tri[:, 1]]
    res_off = offsets(lengths)
    dev = [(xp.asarray(m.ravel()), xp.asarray(w.ravel())) for m, w in maps]
    xs, ys, ws, counts = [], [], [], []
    for chunk in budget_chunks(cells, EXTEND_CELLS):  # dense matrices within EXTEND_CELLS, a larger pair alone
        dense_off = offsets(cells[chunk])
        dense = None
        for d_map, d_w in dev:
            part = backend.consistency.library_extend(tri[chunk], dense_off, d_map, d_w, lengths, res_off, n,
                                                      int(dense_off[-1]))
            dense = part if dense is None else dense + part
        idx = xp.flatnonzero(dense)
        d_off = xp.asarray(dense_off)
        k = xp.searchsorted(d_off, idx, side="right") - 1
        local = idx - d_off[k]
        width = xp.asarray(lengths[tri[chunk, 1]])[k]
        xs.append((local // width).astype(xp.int32))
        ys.append((local % width).astype(xp.int32))
        ws.append(dense[idx])
        counts.append(xp.searchsorted(idx, d_off[1:]) - xp.searchsorted(idx, d_off[:-1]))
    cat = lambda parts, dt: xp.concatenate(parts).astype(dt) if parts else xp.zeros(0, dt)  # noqa: E731
    pair_off = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(cat(counts, xp.int64))])
    return ConsistencyLibrary(n, lengths, pair_off, cat(xs, xp.int32), cat(ys, xp.int32), cat(ws, xp.int32),
                              identity)




def _matched_residues(pairs, start, runs, r0, r1):
    """(a, b, x, y): residue x of a faces residue y of b, for every column of
    every pair's alignment that holds two residues."""
    counts = r1 - r0
    idx = np.repeat(r0 - offsets(counts)[:-1], counts) + np.arange(int(counts.sum()))
    owner = np.repeat(np.arange(len(r0)), counts)
    w = runs[idx].astype(np.int64)
    length, move = w >> 2, w & 3
    di = np.where(move != 2, length, 0)
    dj = np.where(move != 1, length, 0)
    first = offsets(counts)[:-1]
    # position of each run's first column within its pair: exclusive sums restarting per pair
    ci = np.cumsum(di) - di
    cj = np.cumsum(dj) - dj
    ci -= np.repeat(ci[first[counts > 0]] if len(ci) else ci, counts[counts > 0])
    cj -= np.repeat(cj[first[counts > 0]] if len(cj) else cj, counts[counts > 0])
    ci += start[owner, 0]
    cj += start[owner, 1]
    m = move == 0
    run_len = length[m]
    k = np.arange(int(run_len.sum())) - np.repeat(offsets(run_len)[:-1], run_len)
    x = np.repeat(ci[m], run_len) + k
    y = np.repeat(cj[m], run_len) + k
    pr = np.repeat(owner[m], run_len)
    return pairs[pr, 0], pairs[pr, 1], x, y


def library_distance(lib: ConsistencyLibrary) -> DistanceMatrix:
    """Guide-tree distances from the library's alignments: 1 - identity over
    the shorter sequence."""
    d = 1.0 - lib.identity
    np.fill_diagonal(d, 0.0)
    return DistanceMatrix(np.maximum((d + d.T) / 2, 0.0), "library")


@dataclass(frozen=True)
class LibraryStack:
    """The libraries of one run, concatenated for the kernels (xp arrays).

    Sequences get run-wide ids (``family base + index``). Per id: ``g_n``
    (its family's size), ``g_base`` (the family's first id) and ``g_pair``
    (where its family's pair ranges start in ``pair_off``; families that
    share one library object share its ranges).
    """

    pair_off: object  # int64, every family's ranges, rebased into the entries
    x: object  # int32
    y: object  # int32
    w: object  # int32
    g_n: object  # int32 (G,)
    g_base: object  # int32 (G,)
    g_pair: object  # int64 (G,)
    family_base: np.ndarray  # host int64 (F,): each family's first id


def stack_libraries(libs: list[ConsistencyLibrary | None], xp) -> LibraryStack:
    """Concatenate the libraries (``None`` for families without one); a
    library that several families share (an ensemble's replicates share one)
    is held once, and each of those families reads it: 16 replicates of
    balifam100's 59 families held 885 copies, more than an H100's memory."""
    sizes = [lib.n_seqs if lib is not None else 0 for lib in libs]
    fam_base = offsets(sizes)
    ranges, xs, ys, ws, g_n, g_base, g_pair = [], [], [], [], [], [], []
    entries = pairs = 0
    held: dict[int, int] = {}  # id of a library already stacked -> its first pair
    for lib, base in zip(libs, fam_base[:-1]):
        if lib is None:
            continue
        n = lib.n_seqs
        first = held.get(id(lib))
        if first is None:
            first = held[id(lib)] = pairs
            ranges.append(lib.pair_off[:-1] + entries)
            xs.append(lib.x)
            ys.append(lib.y)
            ws.append(lib.w)
            entries += lib.n_entries
            pairs += n * (n - 1) // 2
        g_n += [n] * n
        g_base += [int(base)] * n
        g_pair += [first] * n
    ranges.append(xp.full(1, entries, dtype=xp.int64))
    cat = lambda parts, dt: xp.concatenate(parts).astype(dt) if parts else xp.zeros(1, dt)  # noqa: E731
    host = lambda v, dt: xp.asarray(np.array(v + [0], dtype=dt))  # noqa: E731
    return LibraryStack(xp.concatenate(ranges), cat(xs, xp.int32), cat(ys, xp.int32), cat(ws, xp.int32),
                        host(g_n, np.int32), host(g_base, np.int32), host(g_pair, np.int64), fam_base[:-1])
