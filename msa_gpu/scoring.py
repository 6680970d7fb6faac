"""Substitution matrices (from Biopython) and gap schemes as fixed-point integers.

Every score in msagpu is an integer in units of ``1/SCALE`` of the
matrix's own unit, so the CPU and GPU backends give identical results.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from Bio.Align import substitution_matrices

from msa_gpu.alphabet import Alphabet

SCALE = 100  # fixed-point units per matrix unit
FRAC_ONE = 1024  # fixed-point one for fractions (gap and residue frequencies)


@dataclass(frozen=True)
class GapScheme:
    """Affine gap penalties in matrix units (positive numbers are costs).

    A gap of length ``k`` costs ``open + k * extend`` inside a profile merge;
    ``terminal_open`` and ``terminal_extend`` scale those at either end.
    """

    open: float
    extend: float
    terminal_open: float = 0.0
    terminal_extend: float = 1.0

    def fixed(self, scale: int = SCALE) -> tuple[int, int, int, int]:
        """(open, extend) in fixed point (``scale`` units per matrix unit) and
        the terminal factors in 1/FRAC_ONE."""
        return (
            int(round(self.open * scale)),
            int(round(self.extend * scale)),
            int(round(self.terminal_open * FRAC_ONE)),
            int(round(self.terminal_extend * FRAC_ONE)),
        )


@lru_cache(maxsize=None)
def matrix_fixed(name: str, letters: str, offset: float = 0.0, scale: int = SCALE) -> np.ndarray:
    """The named Biopython matrix over ``letters`` as an int64 array in
    fixed point (``scale`` units per matrix unit), with ``offset`` (matrix
    units) added to every entry.

    Examples
    --------
    >>> m = matrix_fixed("BLOSUM62", "ARND")
    >>> int(m[0, 0]), int(m[0, 1])
    (400, -100)
    """
    alphabet, entry = _load_matrix(name)
    missing = [c for c in letters if c not in alphabet]
    if missing:
        raise ValueError(f"matrix {name!r} has no {missing[0]!r}: it does not fit these sequences")
    out = np.empty((len(letters), len(letters)), dtype=np.int64)
    for a, ca in enumerate(letters):
        for b, cb in enumerate(letters):
            out[a, b] = int(round((entry(ca, cb) + offset) * scale))
    out.setflags(write=False)
    return out


def _load_matrix(name: str):
    """(alphabet, entry(a, b)) of a matrix: Biopython's, else the
    scoring-matrices package's (PFASUM, VTML and the PAM series), if installed."""
    try:
        mat = substitution_matrices.load(name)
        return mat.alphabet, lambda a, b: float(mat[a, b])
    except (FileNotFoundError, ValueError):
        pass
    try:
        from scoring_matrices import ScoringMatrix
    except ImportError:
        raise ValueError(f"unknown substitution matrix {name!r}") from None
    try:
        sm = ScoringMatrix.from_name(name)
    except ValueError as exc:
        raise ValueError(f"unknown substitution matrix {name!r}") from exc
    rows, alphabet = list(sm), sm.alphabet
    return alphabet, lambda a, b: float(rows[alphabet.index(a)][alphabet.index(b)])


def default_matrix(alphabet: Alphabet) -> str:
    return "BLOSUM62" if alphabet.name == "protein" else "NUC.4.4"
