"""The profile gap models (issue 28): the flat ``gap_pair`` charge and the
count-based one, checked against costs worked out by hand for tiny profiles."""

import numpy as np
import pytest

from msa_gpu.backend import cpu
from msa_gpu.config import AlignerConfig
from msa_gpu.progressive import level_meta_arrays
from msa_gpu.progressive.scoring import Scoring
from msa_gpu.recipe import gap_factor, recipe_for
from msa_gpu.scoring import FRAC_ONE as FRAC

GO, GE, TGO, TGE, GP = 1300, 80, 0, 512, 60  # fixed point: 13, 0.8, factors 0 and 0.5, gap_pair 0.6
GAP = 20


def stats(rows_a: list[str], rows_b: list[str], model: int):
    """profile_stats of one pair (A: rows_a, B: rows_b; '-' a gap, 'A' a
    residue; weight 1 each) under gap model ``model``."""
    sc = Scoring(20, GAP, np.zeros((20, 20), np.int64), (GO, GE, TGO, TGE), GP, model)
    mats = np.zeros((1, 24, 24), np.int64)
    codes = [np.array([[GAP if ch == "-" else 0 for ch in r] for r in rows], np.uint8) for rows in (rows_a, rows_b)]
    k = np.array([len(rows_a), len(rows_b)])
    L = np.array([codes[0].shape[1], codes[1].shape[1]])
    lv = level_meta_arrays(k, L, k.astype(np.int64), [sc], [0], np.array([False]), np)
    flat = np.concatenate([c.ravel() for c in codes])
    return cpu.profile_stats(lv, flat, np.ones(int(k.sum()), np.int64), mats)


def test_counts_charge_each_gap_by_its_state():
    # one sequence opens an inner gap at column 1 and continues it at column 2;
    # the other opens a terminal gap at column 0
    _, resid, rowp = stats(["A--A", "--AA"], ["A"], model=1)
    charge = resid[:4, 1]
    inner_open, inner_ext = (GO + GE) * FRAC, GE * FRAC
    term_open, term_ext = GO * TGO + GE * TGE, GE * TGE
    assert charge[0] == term_open // 2  # row 2's leading gap starts
    assert charge[1] == (inner_open + term_ext) // 2
    assert charge[2] == inner_ext // 2
    assert charge[3] == 0
    # a new gap column's extension at each boundary: terminal where a row has
    # no residue on one side (both rows at the ends, row 2 up to boundary 2)
    ext = rowp[:5, 1]
    assert ext[0] == ext[4] == term_ext
    assert ext[1] == ext[2] == (GE * FRAC + term_ext) // 2
    assert ext[3] == GE * FRAC


def test_flat_charges_gap_pair_by_the_gap_fraction():
    _, resid, rowp = stats(["A--A", "--AA"], ["A"], model=0)
    frac = resid[:4, 0]
    assert frac.tolist() == [512, 0, 512, 1024]
    assert resid[:4, 1].tolist() == [(FRAC - f) * GP for f in frac]
    assert rowp[:5, 1].tolist() == [GE * TGE] + [GE * FRAC] * 3 + [GE * TGE]


def test_counts_make_a_residue_facing_an_opening_gap_costlier():
    """Same residue fractions, different gap states: the flat model cannot
    tell the columns apart, the counts model charges the opening gap more."""
    rows = ["A--A", "AAAA"]
    vec, resid, _ = stats(rows, ["A"], model=1)
    assert resid[1, 0] == resid[2, 0] == FRAC // 2
    opening, continuing = int(resid[1, 1]), int(resid[2, 1])
    assert opening > continuing
    _, flat, _ = stats(rows, ["A"], model=0)
    assert flat[1, 1] == flat[2, 1]
    S = cpu.column_scores(level_meta_arrays(np.array([2, 1]), np.array([4, 1]), np.array([2, 1]),
                                            [Scoring(20, GAP, np.zeros((20, 20), np.int64), (GO, GE, TGO, TGE),
                                                     GP, 1)], [0], np.array([False]), np), vec, resid)
    assert S[1] < S[2] < S[0]


def test_gap_factor_and_scaled_scoring():
    from msa_gpu.io import make_sequences
    from msa_gpu.progressive import family_scoring as scoring_of

    def family_scoring(config, seqs):
        return scoring_of(config, seqs, recipe_for(config, seqs))

    assert gap_factor(2) == gap_factor(45) == 1.0
    assert gap_factor(90) == pytest.approx(1 + 1 / 7)
    seqs = make_sequences([f"s{i}" for i in range(90)], [b"ACDE"] * 90, "protein")
    plain = family_scoring(AlignerConfig(gap_model="flat"), seqs)
    scaled = family_scoring(AlignerConfig(gap_scaling=True, gap_model="counts"), seqs)
    assert scaled.gaps[0] == round(plain.gaps[0] * (1 + 1 / 7))
    assert scaled.gap_model == 1 and plain.gap_model == 0
    # auto: counts (scaled) where the family gets no refinement rounds, flat where it does
    fast = family_scoring(AlignerConfig(mode="fast"), seqs)
    assert fast.gap_model == 1 and fast.gaps == scaled.gaps
    assert family_scoring(AlignerConfig(mode="fast", maxiterate=2), seqs).gap_model == 0
    assert family_scoring(AlignerConfig(mode="accurate"), seqs).gap_model == 1  # posterior library: no refinement
    assert family_scoring(AlignerConfig(mode="accurate", library_mode="local"), seqs).gap_model == 0
    assert family_scoring(AlignerConfig(mode="fast", gap_scaling_n=45), seqs).gaps == plain.gaps
    with pytest.raises(ValueError, match="gap_model"):
        AlignerConfig(gap_model="affine")
