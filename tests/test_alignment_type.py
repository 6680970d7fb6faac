"""The Alignment type: a residue mask held as bits, its trace and rows."""

import numpy as np
import pytest

from msa_gpu.io import make_sequences
from msa_gpu.types import Alignment


def _seqs():
    return make_sequences(["a", "b"], [b"ACDE", b"AcD"], "protein")


def test_mask_trace_and_rows_round_trip():
    mask = np.array([[1, 1, 0, 1, 1], [1, 0, 1, 1, 0]], bool)
    aln = Alignment.from_mask(mask)
    assert aln.n_cols == 5 and aln.packed.shape == (2, 1) and aln.packed.dtype == np.uint8
    assert np.array_equal(aln.mask(), mask)
    assert aln.trace.tolist() == [[0, 1, -1, 2, 3], [0, -1, 1, 2, -1]]
    assert aln.rows(_seqs()) == [b"AC-DE", b"A-cD-"]
    assert np.array_equal(Alignment.from_trace(aln.trace).packed, aln.packed)
    aln.check(_seqs())


def test_bits_span_byte_boundaries():
    rng = np.random.default_rng(0)
    mask = rng.random((7, 29)) < 0.6
    mask[:, 0] = True
    aln = Alignment.from_mask(mask)
    assert aln.packed.shape == (7, 4)
    assert all(np.array_equal(aln.row_mask(s), mask[s]) for s in range(7))


def test_bad_traces_and_rows_are_refused():
    with pytest.raises(ValueError, match="in order"):
        Alignment.from_trace(np.array([[1, 0, -1]]))
    with pytest.raises(ValueError, match="disagree"):
        Alignment(np.zeros((2, 1), np.uint8), 9)
    with pytest.raises(ValueError, match="residues"):  # row b holds 2 of its 3 residues
        Alignment.from_mask(np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool)).check(_seqs())
    with pytest.raises(ValueError, match="all-gap"):
        Alignment.from_mask(np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], bool)).check(_seqs())
