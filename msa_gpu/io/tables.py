"""Tables of pairwise results: alignments as TSV, distances as PHYLIP."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from msa_gpu.alphabet import MOVE_LETTERS
from msa_gpu.types import DistanceMatrix, Sequences

if TYPE_CHECKING:
    from msa_gpu.backend.pairwise import PairAlignments


TSV_CHUNK_ROWS = 1 << 16  # rows formatted and written at a time by `write_pairs_tsv`


def write_pairs_tsv(result: PairAlignments, seqs: Sequences, path, cigar: bool = False) -> None:
    """One row per pair: names, score (matrix units), identity, aligned length,
    0-based half-open residue ranges of A and B, and the CIGAR if asked."""
    from msa_gpu.io.outputs import write_output
    from msa_gpu.io.writers import ENCODING, ERRORS

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

    write_output(path, emit)


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


def write_phylip_distances(dm, names: tuple[str, ...], path, **where) -> None:
    """A (relaxed) PHYLIP distance matrix, labels (first word of each name)
    in input order: a `DistanceMatrix`, or any square array (percent
    identities); ``where``: `write_output`'s ``stdout`` and ``umask``."""
    values = dm.values if isinstance(dm, DistanceMatrix) else dm
    from msa_gpu.io.outputs import write_output

    labels = [(n.split(None, 1)[0] if n.strip() else n) for n in names]
    width = max([10] + [len(x) + 1 for x in labels])

    def emit(h) -> None:
        h.write(f"{len(labels)}\n")
        for label, row in zip(labels, values):
            h.write(label.ljust(width) + " ".join(f"{v:.6f}" for v in row) + "\n")

    write_output(path, emit, **where)
