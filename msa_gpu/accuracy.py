"""SP and TC of a test alignment against a reference (qscore semantics).

Only reference sequences are scored, matched to the test by name; scored
columns are the reference columns whose core mask is 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.errors import InputError

GAPS = b"-."


@dataclass(frozen=True)
class Score:
    sp: float
    tc: float
    pairs: int
    pairs_correct: int
    columns: int
    columns_correct: int

    def as_dict(self) -> dict:
        return dict(sp=self.sp, tc=self.tc, pairs=self.pairs, pairs_correct=self.pairs_correct,
                    columns=self.columns, columns_correct=self.columns_correct)


def _residue_columns(row: bytes) -> np.ndarray:
    """Column index of each residue of a gapped row."""
    arr = np.frombuffer(row, dtype=np.uint8)
    isgap = (arr == GAPS[0]) | (arr == GAPS[1])
    return np.flatnonzero(~isgap)


def _key(name: str) -> str:
    return name.split(None, 1)[0] if name.strip() else name


def sp_tc(test_names: list[str], test_rows: list[bytes], ref_names: list[str],
          ref_rows: list[bytes], core: str | None = None) -> Score:
    """Score ``test`` against ``ref``; both must be alignments (rows of one
    length each), else `InputError`.

    Examples
    --------
    >>> sp_tc(["a", "b"], [b"AC-", b"A-C"], ["a", "b"], [b"AC", b"AC"]).sp
    0.5
    >>> sp_tc(["a", "b"], [b"ACGT", b"AC"], ["a", "b"], [b"ACGT", b"AC--"])
    Traceback (most recent call last):
    ...
    msa_gpu.errors.InputError: not an alignment: the test rows differ in length ('b' has 2 columns, 'a' 4)
    """
    by_name = {n: i for i, n in enumerate(test_names)}
    by_key = {_key(n): i for i, n in enumerate(test_names)}
    for which, names, rows in (("test", test_names, test_rows), ("reference", ref_names, ref_rows)):
        odd = next((i for i, r in enumerate(rows) if len(r) != len(rows[0])), None)
        if odd is not None:
            raise InputError(f"not an alignment: the {which} rows differ in length ({names[odd]!r} has "
                             f"{len(rows[odd])} columns, {names[0]!r} {len(rows[0])})")
    if not ref_rows:
        raise InputError("the reference has no rows")
    ncols = len(ref_rows[0])
    mask = np.ones(ncols, dtype=bool) if core is None else np.frombuffer(core.encode(), np.uint8) == ord("1")
    if mask.size != ncols:
        raise InputError(f"core mask has {mask.size} columns, the reference {ncols}")
    test_col = np.full((len(ref_names), ncols), -1, dtype=np.int64)
    for s, (name, ref) in enumerate(zip(ref_names, ref_rows)):
        t = by_name.get(name, by_key.get(_key(name)))
        if t is None:
            raise InputError(f"reference sequence {name!r} is missing from the test alignment")
        ref_pos, test_pos = _residue_columns(ref), _residue_columns(test_rows[t])
        ref_res = bytes(np.frombuffer(ref, np.uint8)[ref_pos]).upper()
        test_res = bytes(np.frombuffer(test_rows[t], np.uint8)[test_pos]).upper()
        if ref_res != test_res:
            raise InputError(f"sequence {name!r} differs between the test and the reference")
        test_col[s, ref_pos] = test_pos
    cols = test_col[:, mask]
    present = cols >= 0
    n_j = present.sum(axis=0)
    total_pairs = int((n_j * (n_j - 1) // 2).sum())
    correct_pairs = 0
    cols_scored = int((n_j >= 2).sum())
    cols_correct = 0
    for j in np.flatnonzero(n_j >= 2):
        _, counts = np.unique(cols[present[:, j], j], return_counts=True)
        correct_pairs += int((counts * (counts - 1) // 2).sum())
        cols_correct += int(counts.size == 1)
    return Score(
        sp=correct_pairs / total_pairs if total_pairs else 0.0,
        tc=cols_correct / cols_scored if cols_scored else 0.0,
        pairs=total_pairs, pairs_correct=correct_pairs,
        columns=cols_scored, columns_correct=cols_correct,
    )
