"""The pairwise engine: batched pairwise alignment (global, semiglobal, local)
with Gotoh affine gaps, score-only or with traceback, on the numba twin
(`pairwise_cpu`) or the GPU (`pairwise_gpu`). Stage 1's alignment distances
and accurate mode's consistency library call it.

A gap of length ``k`` costs ``gap_open + (k - 1) * gap_extend`` (Biopython's
``PairwiseAligner(open_gap_score=-gap_open, extend_gap_score=-gap_extend)``);
semiglobal leaves end gaps free on both sequences (``end_gap_score=0``). An
extension above the opening is taken as the opening (see `PairScoring.fixed`).
Scores are fixed-point integers (``SCALE`` units per matrix unit), so the
numba twin (`msa_gpu.backend.pairwise_cpu`) and the CUDA kernels
(`msa_gpu.kernels` ``pairwise.cu``) agree bit for bit; see the twin's module
docstring for the recurrences, tie rules and end-cell rule.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences(["a", "b"], [b"HEAGAWGHEE", b"PAWHEAE"], "protein")
>>> res = align_pairs(seqs, [(0, 1)], PairScoring(mode="local", gap_open=8, gap_extend=8),
...                   traceback=True, backend="cpu")
>>> float(res.scores[0]), res.cigar(0)
(20.0, '2M1I2M')
>>> [r.decode() for r in res.rows(0, seqs)]
['AWGHE', 'AW-HE']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from msa_gpu.alphabet import MOVE_LETTERS, PROTEIN
from msa_gpu.backend.selection import Backend, select_backend
from msa_gpu.backend.interfaces import PairwiseKernels
from msa_gpu.settings.choices import PairMode
from msa_gpu.scoring import SCALE, matrix_fixed
from msa_gpu.types import Sequences, _frozen


MODE_CODE = {PairMode.global_: 0, PairMode.semiglobal: 1, PairMode.local: 2}


@dataclass(frozen=True)
class PairScoring:
    """Scoring of a pairwise run, in matrix units (positive gap costs).

    ``matrix=None`` takes the sequence type's default (BLOSUM62 or NUC.4.4).
    """

    mode: PairMode = PairMode.global_
    matrix: str | None = None
    gap_open: float = 11.0
    gap_extend: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", PairMode(self.mode))
        for name in ("gap_open", "gap_extend"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    def fixed(self, letters: str) -> tuple[np.ndarray, int, int, int]:
        """(int32 matrix over ``letters``, gap open, gap extend, mode code) in fixed point.

        The extension is at most the opening: the DP lets a gap close and a
        new one open at once in the same sequence (H takes E and F, and E and
        F open from H), so with an extension above the opening it scores a gap
        of k residues as k gaps of one, ``k * open``; a traceback's runs can
        not tell those apart from one gap, which re-scored as one costs more
        (issue 56: MAFFT's ``--lop -0.3 --lep 0.5``). Capped, the forward DP
        gives the same cells in the local and semiglobal modes and the
        re-scored runs agree; in the global mode the end gaps, which can not
        be split, cost ``k * open`` as the inner ones do.

        >>> PairScoring("local", gap_open=1.65, gap_extend=5.0).fixed("ACGT")[1:]
        (165, 165, 2)
        """
        name = self.matrix or ("BLOSUM62" if letters == PROTEIN.letters else "NUC.4.4")
        S = np.ascontiguousarray(matrix_fixed(name, letters), dtype=np.int32)
        go = int(round(self.gap_open * SCALE))
        ge = min(int(round(self.gap_extend * SCALE)), go)
        return S, go, ge, MODE_CODE[self.mode]


@dataclass(frozen=True)
class PairAlignments:
    """Results of a batch of pairwise alignments, in the order of ``pairs``.

    ``score_fixed`` is in 1/SCALE matrix units; ``end`` (and ``start`` with a
    traceback or identities) are DP cells, i.e. residues of A and B consumed.
    With a traceback or identities, ``identities``, ``aligned_pairs`` and
    ``columns`` count the alignment's columns. With a traceback,
    ``runs[runs_offsets[k]:runs_offsets[k+1]]`` is pair k's alignment as a
    CIGAR in 32-bit words, ``length << 2 | move`` (move 0 both residues, 1 A
    only, 2 B only), from ``start`` to ``end`` plus, in the semiglobal and
    global modes, the end gaps, so they cover both sequences.
    """

    pairs: np.ndarray  # int64 (P, 2): indices of A and B
    mode: PairMode
    score_fixed: np.ndarray  # int64 (P,)
    end: np.ndarray  # int64 (P, 2)
    start: np.ndarray | None = None  # int64 (P, 2)
    runs: np.ndarray | None = None  # uint32: length << 2 | move
    runs_offsets: np.ndarray | None = None  # int64 (P+1,)
    identities: np.ndarray | None = None  # int64 (P,): identical residue pairs
    aligned_pairs: np.ndarray | None = None  # int64 (P,): columns with two residues
    columns: np.ndarray | None = None  # int64 (P,): alignment columns
    backend: str = "cpu"

    def __post_init__(self) -> None:
        P = len(self.pairs)
        for name in ("pairs", "score_fixed", "end", "start", "runs", "runs_offsets", "identities", "aligned_pairs",
                     "columns"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _frozen(np.asarray(value)))
        if self.score_fixed.shape != (P,) or self.end.shape != (P, 2):
            raise ValueError("scores and end cells must have one row per pair")
        if self.runs is not None:
            if self.runs_offsets.shape != (P + 1,) or self.runs_offsets[-1] != len(self.runs):
                raise ValueError("runs_offsets must bound runs")

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def has_traceback(self) -> bool:
        return self.runs is not None

    @property
    def scores(self) -> np.ndarray:
        """Scores in matrix units."""
        return self.score_fixed / SCALE

    @property
    def identity(self) -> np.ndarray:
        """Fraction of identical residues among aligned residue pairs (gap
        columns excluded, ClustalW style); 0 where nothing is aligned."""
        self._need_identities()
        return self.identities / np.maximum(self.aligned_pairs, 1)

    @property
    def aligned_length(self) -> np.ndarray:
        """Columns of each alignment (end gaps included outside local mode)."""
        self._need_identities()
        return self.columns

    def pair_runs(self, k: int) -> np.ndarray:
        """Pair k's runs (uint32, ``length << 2 | move``)."""
        self._need_traceback()
        return self.runs[self.runs_offsets[k]: self.runs_offsets[k + 1]]

    def moves(self, k: int) -> np.ndarray:
        """Pair k's moves, one per column (0 both, 1 A only, 2 B only)."""
        r = self.pair_runs(k)
        return np.repeat((r & 3).astype(np.uint8), (r >> 2).astype(np.int64))

    def cigar(self, k: int) -> str:
        """Pair k's alignment as a CIGAR string: M both, I residue of A only
        (gap in B), D residue of B only (gap in A)."""
        return "".join(f"{int(w) >> 2}{MOVE_LETTERS[int(w) & 3]}" for w in self.pair_runs(k))

    def rows(self, k: int, seqs: Sequences, gap: bytes = b"-") -> tuple[bytes, bytes]:
        """Pair k's two gapped rows (original characters)."""
        mv = self.moves(k)
        a, b = (seqs.raw[int(x)] for x in self.pairs[k])
        i, j = (int(x) for x in self.start[k])
        ta = np.where(mv != 2, i + np.cumsum(mv != 2) - 1, len(a))
        tb = np.where(mv != 1, j + np.cumsum(mv != 1) - 1, len(b))
        ra = np.frombuffer(a + gap, np.uint8)[ta].tobytes()
        rb = np.frombuffer(b + gap, np.uint8)[tb].tobytes()
        return ra, rb

    def _need_traceback(self) -> None:
        if self.runs is None:
            raise ValueError("this result has no traceback (use traceback=True)")

    def _need_identities(self) -> None:
        if self.identities is None:
            raise ValueError("this result has no identities (use identities=True or traceback=True)")


# ---------------------------------------------------------------- validation

def _pairs_array(pairs, n: int) -> np.ndarray:
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if p.size and (p.min() < 0 or p.max() >= n):
        raise ValueError(f"pair indices must lie in [0, {n})")
    return p


def _check_range(seqs: Sequences, pairs: np.ndarray, S: np.ndarray, go: int, ge: int) -> None:
    """Refuse inputs whose scores could overflow the int32 DP."""
    if not len(pairs):
        return
    lens = seqs.lengths
    worst = int((lens[pairs[:, 0]] + lens[pairs[:, 1]]).max())
    bound = (int(np.abs(S).max()) + go + ge) * worst + go
    if bound >= 1 << 28:
        raise ValueError(f"scores could overflow 32-bit integers (bound {bound}); "
                         "lower the gap costs or split the sequences")


def all_pair_indices(n: int) -> np.ndarray:
    """Every unordered pair (i, j), i < j, in row-major order.

    >>> all_pair_indices(3).tolist()
    [[0, 1], [0, 2], [1, 2]]
    """
    i, j = np.triu_indices(n, k=1)
    return np.stack([i, j], axis=1).astype(np.int64)


def _packed(seqs: Sequences) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(seqs.lengths, out=off[1:])
    seq = np.concatenate(seqs.codes).astype(np.uint8) if len(seqs) else np.empty(0, np.uint8)
    return seq, off


# ----------------------------------------------------------------- public API

def align_pairs(
    seqs: Sequences,
    pairs,
    scoring: PairScoring = PairScoring(),
    *,
    traceback: bool = False,
    identities: bool = False,
    backend: Backend | str = "auto",
    verify: bool = True,
    devices: list[int] | None = None,
    batch_bytes: int | None = None,
) -> PairAlignments:
    """Align each pair ``(a, b)`` of sequence indices.

    With ``traceback`` the alignments are returned as moves and, when
    ``verify``, each is re-scored and must equal its DP score (a
    `RuntimeError` otherwise). ``identities`` alone adds each alignment's
    start cell, identities, aligned pairs and length but not its moves: the
    alignments are traced where they are computed (the GPU's memory, or the
    twin's chunks) and only those counts come back, which saves the host
    memory and transfers of the moves. The counts are those of the
    traceback's alignment, bit for bit (``verify`` does not apply: there are
    no moves to re-score). ``backend`` is a `Backend` (its `PairwiseKernels`
    run the pairs), or ``auto``, ``cpu`` or ``gpu`` (`select_backend`);
    ``devices`` and ``batch_bytes`` steer the GPU scheduler (results do not
    depend on them).
    """
    p = _pairs_array(pairs, len(seqs))
    S, go, ge, mode = scoring.fixed(seqs.alphabet.letters)
    _check_range(seqs, p, S, go, ge)
    chosen = backend if isinstance(backend, Backend) else select_backend(backend)
    seq, off = _packed(seqs)
    raw = _run(chosen.pairwise, seq, off, p, S, go, ge, mode, traceback or identities, traceback, devices, batch_bytes)
    result = _result(p, scoring.mode, raw, traceback, identities, chosen.name, np.diff(off))
    if traceback and verify:
        _verify(result, seq, off, S, go, ge, mode)
    return result


def _run(kernels: PairwiseKernels, seq, off, p, S, go, ge, mode, traceback, runs, devices, batch_bytes):
    """(res int64 (P, 8), runs, runs_offsets) from the chosen backend's
    kernels (with ``traceback`` but not ``runs``: no runs, only their counts in res)."""
    return kernels.align_batch(seq, off, p[:, 0], p[:, 1], S, go, ge, mode, traceback, runs=runs, devices=devices,
                               batch_bytes=batch_bytes)


def _result(p, mode, raw, traceback, identities, backend, lens) -> PairAlignments:
    res, runs, runs_off = raw
    if not (traceback or identities):
        return PairAlignments(p, mode, res[:, 0], res[:, 1:3], backend=backend)
    if not traceback:
        runs = runs_off = None
    npair = res[:, 7]
    if mode is PairMode.local:
        columns = (res[:, 1] - res[:, 3]) + (res[:, 2] - res[:, 4]) - npair
    else:  # end gaps included: the columns cover both sequences
        columns = lens[p[:, 0]] + lens[p[:, 1]] - npair
    return PairAlignments(p, mode, res[:, 0], res[:, 1:3], res[:, 3:5], runs, runs_off,
                          res[:, 6], npair, columns, backend=backend)


def _verify(result: PairAlignments, seq, off, S, go, ge, mode) -> None:
    from msa_gpu.backend import pairwise_cpu

    got = np.empty(len(result), np.int64)
    pr = result.pairs
    pairwise_cpu.rescore_batch(seq, off, pr[:, 0], pr[:, 1], S, go, ge, mode,
                               result.runs, result.runs_offsets, result.start, got)
    bad = np.flatnonzero(got != result.score_fixed)
    if bad.size:
        k = int(bad[0])
        raise RuntimeError(f"pair {tuple(int(x) for x in pr[k])}: traceback re-scores to "
                           f"{got[k] / SCALE} but the DP score is {result.score_fixed[k] / SCALE}")


def all_pairs(seqs: Sequences, scoring: PairScoring = PairScoring(), **kwargs) -> PairAlignments:
    """`align_pairs` over every pair i < j (row-major order)."""
    return align_pairs(seqs, all_pair_indices(len(seqs)), scoring, **kwargs)


def default_scoring(seqs: Sequences, mode: PairMode | str = PairMode.global_) -> PairScoring:
    """BLOSUM62 with gaps 11/1 for protein, NUC.4.4 with 10/1 for nucleotides."""
    if seqs.alphabet.name == "protein":
        return PairScoring(mode, "BLOSUM62", 11.0, 1.0)
    return PairScoring(mode, "NUC.4.4", 10.0, 1.0)


# --------------------------------------------------------------------- writers


