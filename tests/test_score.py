import pytest

from msa_gpu.errors import InputError
from msa_gpu.accuracy import sp_tc

REF_N = ["s1", "s2", "s3"]
REF = [b"AC-DE", b"ACGDE", b"A--DE"]


def test_identical_alignment_scores_one():
    s = sp_tc(REF_N, REF, REF_N, REF)
    assert (s.sp, s.tc) == (1.0, 1.0)
    # pairs per column: 3 + 1 + 0 + 3 + 3 = 10; columns with >= 2 residues: 4
    assert (s.pairs, s.columns) == (10, 4)


def test_hand_worked_case():
    # test moves s3's D one column left: s3 = A-D-E
    test = [b"AC-DE", b"ACGDE", b"A-D-E"]
    s = sp_tc(REF_N, test, REF_N, REF)
    # ref column 4 (D): pairs (1,2) ok, (1,3) and (2,3) broken -> 1 of 3
    # correct pairs: col A 3 + col C 1 + col D 1 + col E 3 = 8 of 10
    assert s.pairs_correct == 8 and s.sp == pytest.approx(0.8)
    # correct columns: A, C, E = 3 of 4
    assert s.tc == pytest.approx(0.75)


def test_core_mask_restricts_columns():
    test = [b"AC-DE", b"ACGDE", b"A-D-E"]
    s = sp_tc(REF_N, test, REF_N, REF, core="00010")
    assert (s.sp, s.tc) == (pytest.approx(1 / 3), 0.0)
    s = sp_tc(REF_N, test, REF_N, REF, core="10001")
    assert (s.sp, s.tc) == (1.0, 1.0)


def test_extra_test_sequences_are_ignored_and_order_free():
    test = [b"A--DE-", b"XXXXXX", b"AC-DE-", b"ACGDE-"]
    s = sp_tc(["s3", "other", "s1", "s2"], test, REF_N, REF)
    assert s.sp == 1.0 and s.tc == 1.0


def test_case_insensitive_and_dot_gaps():
    test = [b"ac.de", b"acgde", b"a..de"]
    assert sp_tc(REF_N, test, REF_N, REF).sp == 1.0


def test_errors_name_the_sequence():
    with pytest.raises(InputError, match="'s2' differs"):  # its residues are not the reference's
        sp_tc(REF_N, [b"ACDE", b"ACDE", b"A-DE"], REF_N, REF)
    with pytest.raises(InputError, match="'s3' has 3 columns"):  # rows of different lengths: not an alignment
        sp_tc(REF_N, [b"ACDE", b"ACDE", b"ADE"], REF_N, REF)
    with pytest.raises(InputError, match="missing"):
        sp_tc(["s1"], [b"ACDE"], REF_N, REF)
    with pytest.raises(InputError, match="core mask"):
        sp_tc(REF_N, REF, REF_N, REF, core="01")
