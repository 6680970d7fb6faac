"""Accurate mode's consistency library: all-pairs alignments -> `ConsistencyLibrary`.

Every pair of a family is aligned by the stage-1 engine (`msa_gpu.pairwise`,
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
alignment. The sum runs on the device, one thread per residue of A, with
integer atomics (`msa_gpu.kernels` ``consistency.cu``; its numba twin is
`msa_gpu.backend.consistency_cpu`), so both backends give the same integers.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences(["a", "b", "c"], [b"MKVLAW", b"MKVAW", b"KVLAW"], "protein")
>>> lib = build_libraries([seqs], LibrarySettings(), backend="cpu")[0]
>>> lib.pair_map[:6, 1].tolist()   # residues of a opposite residues of b
[0, 1, 2, -1, 3, 4]
>>> int(lib.weights[0, 0]), int(lib.weights[0, 1])
(64, 64)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from .pairwise import PairScoring, align_pairs, all_pair_indices
from .profile import offsets
from .types import LIBRARY_ONE, ConsistencyLibrary, DistanceMatrix, Sequences


class LibraryWeight(str, enum.Enum):
    """How far a pairwise alignment is trusted."""

    identity = "identity"  # identical residues / aligned residue pairs
    coverage = "coverage"  # identical residues / the shorter sequence's length


@dataclass(frozen=True)
class LibrarySettings:
    """The all-pairs alignments behind a library: mode (``local`` is MAFFT
    L-INS-i's choice, ``global`` G-INS-i's), gap costs in matrix units, and
    the weighting of each pair."""

    mode: str = "local"
    gap_open: float = 11.0
    gap_extend: float = 1.0
    weight: LibraryWeight = LibraryWeight.identity

    def __post_init__(self) -> None:
        object.__setattr__(self, "weight", LibraryWeight(self.weight))
        PairScoring(mode=self.mode, gap_open=self.gap_open, gap_extend=self.gap_extend)  # validates


def build_libraries(families: list[Sequences], settings: LibrarySettings = LibrarySettings(),
                    backend: str = "auto") -> list[ConsistencyLibrary]:
    """One library per family. The pairs of every family of one alphabet go
    to the pairwise engine in one call."""
    out: list[ConsistencyLibrary | None] = [None] * len(families)
    by_alphabet: dict[str, list[int]] = {}
    for f, seqs in enumerate(families):
        by_alphabet.setdefault(seqs.alphabet.name, []).append(f)
    scoring = PairScoring(mode=settings.mode, gap_open=settings.gap_open, gap_extend=settings.gap_extend)
    for members in by_alphabet.values():
        joined, pairs, pair_owner = _joined(families, members)
        res = align_pairs(joined, pairs, scoring, traceback=True, backend=backend)
        for f in members:
            sel = pair_owner == f
            base = int(_sequence_base(families, members)[f])
            out[f] = _library(families[f], pairs[sel] - base, res.start[sel], res.runs,
                              res.runs_offsets[:-1][sel], res.runs_offsets[1:][sel],
                              res.identities[sel], res.aligned_pairs[sel], settings.weight)
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


def _library(seqs: Sequences, pairs: np.ndarray, start: np.ndarray, runs: np.ndarray, r0: np.ndarray,
             r1: np.ndarray, identities: np.ndarray, aligned: np.ndarray,
             weight: LibraryWeight) -> ConsistencyLibrary:
    """A family's library from its pairs' alignments (runs[r0[k]:r1[k]])."""
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
        frac = identities / np.maximum(aligned if weight is LibraryWeight.identity else shorter, 1)
        q = np.rint(frac * LIBRARY_ONE).astype(np.int32)
        w[pairs[:, 0], pairs[:, 1]] = w[pairs[:, 1], pairs[:, 0]] = q
        ident[pairs[:, 0], pairs[:, 1]] = ident[pairs[:, 1], pairs[:, 0]] = identities / np.maximum(shorter, 1)
    return ConsistencyLibrary(res_off, pair_map, w, ident)


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
    (its family's size), ``g_base`` (the family's first id), ``g_map`` (where
    its residues' rows start in ``pair_map``, rows ``g_n`` wide) and ``g_w``
    (where its row of weights starts in ``weights``).
    """

    pair_map: object  # int32, flat
    weights: object  # int32, flat
    g_n: object  # int32 (G,)
    g_base: object  # int32 (G,)
    g_map: object  # int64 (G,)
    g_w: object  # int64 (G,)
    family_base: np.ndarray  # host int64 (F,): each family's first id


def stack_libraries(libs: list[ConsistencyLibrary | None], xp) -> LibraryStack:
    """Concatenate the libraries (``None`` for families without one: they
    take no ids' rows) and upload them."""
    sizes = [lib.n_seqs if lib is not None else 0 for lib in libs]
    fam_base = offsets(sizes)
    maps, wts, g_n, g_base, g_map, g_w = [], [], [], [], [], []
    map_at = w_at = 0
    for lib, base in zip(libs, fam_base[:-1]):
        if lib is None:
            continue
        n = lib.n_seqs
        maps.append(lib.pair_map.ravel())
        wts.append(lib.weights.ravel())
        g_n += [n] * n
        g_base += [int(base)] * n
        g_map += (map_at + lib.res_off[:-1] * n).tolist()
        g_w += (w_at + np.arange(n) * n).tolist()
        map_at += lib.pair_map.size
        w_at += lib.weights.size
    cat = lambda parts, dt: xp.asarray(np.concatenate(parts).astype(dt) if parts else np.zeros(1, dt))  # noqa: E731
    return LibraryStack(cat(maps, np.int32), cat(wts, np.int32), xp.asarray(np.array(g_n + [0], np.int32)),
                        xp.asarray(np.array(g_base + [0], np.int32)), xp.asarray(np.array(g_map + [0], np.int64)),
                        xp.asarray(np.array(g_w + [0], np.int64)), fam_base[:-1])
