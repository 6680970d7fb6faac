"""Stage 1 engine: batched pairwise alignment (global, semiglobal, local) with
Gotoh affine gaps, score-only or with traceback, and distances from it.

A gap of length ``k`` costs ``gap_open + (k - 1) * gap_extend`` (Biopython's
``PairwiseAligner(open_gap_score=-gap_open, extend_gap_score=-gap_extend)``);
semiglobal leaves end gaps free on both sequences (``end_gap_score=0``).
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

import enum
import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .alphabet import PROTEIN
from .scoring import SCALE, matrix_fixed
from .types import DistanceMatrix, Sequences, _frozen

MOVE_LETTERS = "MID"  # 0 both residues, 1 A residue only, 2 B residue only


class PairMode(str, enum.Enum):
    """Pairwise alignment mode."""

    global_ = "global"
    semiglobal = "semiglobal"
    local = "local"


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
        """(int32 matrix over ``letters``, gap open, gap extend, mode code) in fixed point."""
        name = self.matrix or ("BLOSUM62" if letters == PROTEIN.letters else "NUC.4.4")
        S = np.ascontiguousarray(matrix_fixed(name, letters), dtype=np.int32)
        return S, int(round(self.gap_open * SCALE)), int(round(self.gap_extend * SCALE)), MODE_CODE[self.mode]


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
    backend: str = "auto",
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
    no moves to re-score). ``backend`` is ``auto``, ``cpu`` or ``gpu``;
    ``devices`` and ``batch_bytes`` steer the GPU scheduler (results do not
    depend on them).
    """
    from .backend import select_backend

    p = _pairs_array(pairs, len(seqs))
    S, go, ge, mode = scoring.fixed(seqs.alphabet.letters)
    _check_range(seqs, p, S, go, ge)
    chosen = select_backend(backend)
    seq, off = _packed(seqs)
    raw = _run(chosen.name, seq, off, p, S, go, ge, mode, traceback or identities, traceback, devices, batch_bytes)
    result = _result(p, scoring.mode, raw, traceback, identities, chosen.name, np.diff(off))
    if traceback and verify:
        _verify(result, seq, off, S, go, ge, mode)
    return result


def _run(name, seq, off, p, S, go, ge, mode, traceback, runs, devices, batch_bytes):
    """(res int64 (P, 8), runs, runs_offsets) from the chosen backend (with
    ``traceback`` but not ``runs``: no runs, only their counts in res)."""
    if name == "gpu":
        from .backend import pairwise_gpu

        return pairwise_gpu.align_batch(seq, off, p[:, 0], p[:, 1], S, go, ge, mode, traceback,
                                        devices=devices, batch_bytes=batch_bytes, runs=runs)
    from .backend import pairwise_cpu

    return pairwise_cpu.align_batch(seq, off, p[:, 0], p[:, 1], S, go, ge, mode, traceback, runs=runs)


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
    from .backend import pairwise_cpu

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


def kimura_protein(p: np.ndarray) -> np.ndarray:
    """Kimura's protein correction ``-ln(1 - p - 0.2 p^2)`` of the fraction of
    differences ``p``, capped at 10 where the logarithm diverges (p >= ~0.85).

    >>> [round(float(x), 4) for x in kimura_protein(np.array([0.0, 0.5, 0.99]))]
    [0.0, 0.7985, 10.0]
    """
    arg = 1.0 - p - 0.2 * p * p
    return np.where(arg > np.exp(-10.0), -np.log(np.maximum(arg, np.exp(-10.0))), 10.0) + 0.0


def pairwise_distance(
    seqs: Sequences,
    backend: str = "auto",
    kimura: bool = False,
    scoring: PairScoring | None = None,
) -> DistanceMatrix:
    """Distances from all-pairs alignments: ``1 - identity`` (identical
    residues over aligned residue pairs, ClustalW style), optionally with
    Kimura's protein correction. ``scoring`` defaults to `default_scoring`
    (global mode). Pairs with no aligned residue pair get distance 1.
    """
    if kimura and seqs.alphabet.name != "protein":
        raise InputError("the Kimura correction is for protein sequences")
    scoring = scoring or default_scoring(seqs)
    n = len(seqs)
    values = np.zeros((n, n), np.float64)
    if n > 1:
        res = all_pairs(seqs, scoring, identities=True, backend=backend)
        d = 1.0 - res.identity
        d = np.where(res.aligned_pairs > 0, d, 1.0)
        if kimura:
            d = kimura_protein(d)
        values[res.pairs[:, 0], res.pairs[:, 1]] = d
        values[res.pairs[:, 1], res.pairs[:, 0]] = d
    return DistanceMatrix(values, "align-kimura" if kimura else "align")


def default_scoring(seqs: Sequences, mode: PairMode | str = PairMode.global_) -> PairScoring:
    """BLOSUM62 with gaps 11/1 for protein, NUC.4.4 with 10/1 for nucleotides."""
    if seqs.alphabet.name == "protein":
        return PairScoring(mode, "BLOSUM62", 11.0, 1.0)
    return PairScoring(mode, "NUC.4.4", 10.0, 1.0)


# --------------------------------------------------------------------- writers

TSV_CHUNK_ROWS = 1 << 16  # rows formatted and written at a time by `write_pairs_tsv`


def write_pairs_tsv(result: PairAlignments, seqs: Sequences, path, cigar: bool = False) -> None:
    """One row per pair: names, score (matrix units), identity, aligned length,
    0-based half-open residue ranges of A and B, and the CIGAR if asked."""
    from .io import ENCODING, ERRORS, write_text

    head = ["name_a", "name_b", "score", "identity", "aligned_length", "a_begin", "a_end", "b_begin", "b_end"]
    names = _table([n.encode(ENCODING, ERRORS) for n in seqs.names])
    score, ident = _formatted(result.scores, "g"), _formatted(result.identity, ".4f")
    ints = [result.aligned_length, result.start[:, 0], result.end[:, 0], result.start[:, 1], result.end[:, 1]]

    def emit(h) -> None:
        # each row begins with the newline that ends the line above, so a CIGAR joined on after it ends it
        h.write("\t".join(head + (["cigar"] if cigar else [])))
        h.flush()  # rows go straight to the binary buffer, names encoded as h would
        for lo in range(0, len(result), TSV_CHUNK_ROWS):
            rows = slice(lo, lo + TSV_CHUNK_ROWS)
            fields = [_take(names, result.pairs[rows, 0]), _take(names, result.pairs[rows, 1]),
                      _take(score[0], score[1][rows]), _take(ident[0], ident[1][rows])]
            fields += [_digits(x[rows]) for x in ints]
            text, length = _rows(fields, b"\n", b"\t", b"\t" if cigar else b"")
            if cigar:
                text = _interleave(text, length, *_cigars(result, rows))
            h.buffer.write(text)
        h.write("\n")

    write_text(path, emit)


# A field is one byte string per row of a block: ``(text, keep, length)``,
# row r's string being ``text[r][keep[r]]`` (``text`` a (rows, width) uint8
# matrix) and ``length[r]`` its length.
_Field = tuple[np.ndarray, np.ndarray, np.ndarray]


def _table(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``(text, length)``: byte strings as the rows of a zero-padded matrix."""
    length = np.array([len(b) for b in items], np.int64)
    text = np.zeros((len(items), int(length.max(initial=0))), np.uint8)
    text[np.arange(text.shape[1]) < length[:, None]] = np.frombuffer(b"".join(items), np.uint8)
    return text, length


def _take(table: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> _Field:
    """Rows ``rows`` of a `_table` as a field, no wider than they need."""
    text, length = table
    length = length[rows]
    width = int(length.max(initial=0))
    return text[:, :width][rows], np.arange(width) < length[:, None], length


def _formatted(values: np.ndarray, spec: str) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """``(table, inverse)``: each distinct value formatted once with ``spec``;
    value k is row ``inverse[k]`` of the `_table`."""
    uniq, inverse = np.unique(values, return_inverse=True)
    return _table([format(v, spec).encode() for v in uniq.tolist()]), inverse


_QUADS = np.frombuffer("".join(f"{k:04d}" for k in range(10000)).encode(), np.uint32)  # "0000" to "9999"


def _digits(x: np.ndarray) -> _Field:
    """Non-negative integers in decimal, as a field."""
    x = x.astype(np.int64)
    if len(x) and x.min() < 0:
        raise ValueError("_digits takes non-negative integers")
    width = len(str(int(x.max(initial=0))))
    quads = -(-width // 4)  # base-10000 digits, four characters each
    q = x[:, None] if quads == 1 else x[:, None] // 10000 ** np.arange(quads - 1, -1, -1, dtype=np.int64) % 10000
    text = _QUADS[q].view(np.uint8).reshape(len(x), 4 * quads)[:, 4 * quads - width:]
    length = np.searchsorted(10 ** np.arange(1, width, dtype=np.int64), x, side="right") + 1
    return text, np.arange(width) >= width - length[:, None], length


def _rows(fields: list[_Field], start: bytes, sep: bytes, end: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(text, length)``: per row, ``start``, the fields joined by ``sep``,
    and ``end``; the rows concatenated, and the length of each."""
    n = len(fields[0][0])

    def const(b: bytes) -> _Field:
        return np.broadcast_to(np.frombuffer(b, np.uint8), (n, len(b))), np.ones((n, len(b)), bool), len(b)

    parts = [const(start)] + [p for f in fields for p in (f, const(sep))][:-1] + [const(end)]
    text = np.concatenate([p[0] for p in parts], axis=1)
    keep = np.concatenate([p[1] for p in parts], axis=1)
    return text[keep], sum(p[2] for p in parts)


def _interleave(a: np.ndarray, a_length: np.ndarray, b: np.ndarray, b_length: np.ndarray) -> np.ndarray:
    """Row r of ``a`` then row r of ``b``, for every row (rows given by length)."""
    from_b = np.repeat(np.tile([False, True], len(a_length)), np.column_stack([a_length, b_length]).ravel())
    out = np.empty(len(from_b), np.uint8)
    out[~from_b] = a
    out[from_b] = b
    return out


def _cigars(result: PairAlignments, rows: slice) -> tuple[np.ndarray, np.ndarray]:
    """``(text, length)``: the CIGARs of pairs ``rows`` (a slice), concatenated,
    and the length of each."""
    off = result.runs_offsets[rows.start: rows.stop + 1]
    runs = result.runs[off[0]: off[-1]]
    letters = np.frombuffer(MOVE_LETTERS.encode(), np.uint8)[runs & 3, None]
    text, run_length = _rows([_digits(runs >> 2), (letters, np.ones_like(letters, bool), 1)], b"", b"", b"")
    return text, np.diff(np.concatenate([[0], np.cumsum(run_length)])[off - off[0]])


def write_phylip_distances(dm: DistanceMatrix, names: tuple[str, ...], path) -> None:
    """A (relaxed) PHYLIP distance matrix, labels (first word of each name) in input order."""
    from .io import write_text

    labels = [(n.split(None, 1)[0] if n.strip() else n) for n in names]
    width = max([10] + [len(x) + 1 for x in labels])

    def emit(h) -> None:
        h.write(f"{len(labels)}\n")
        for label, row in zip(labels, dm.values):
            h.write(label.ljust(width) + " ".join(f"{v:.6f}" for v in row) + "\n")

    write_text(path, emit)
