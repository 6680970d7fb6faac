"""Stage 4's opt-in refinements (issue 42): every sequence realigned to its
family's profile (``realign``), and cuts along the columns' gap patterns
(``refine_splits="columns"``). Each is checked on a family with a known
alignment that a broken stand-in (a misplaced gap) spoils."""

import numpy as np
import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences
from msa_gpu.progressive import FamilyJob, alignment_codes
from msa_gpu.recipe import COLUMN_CUTS, recipe_for
from msa_gpu.refine import column_splits, realign, realign_rounds, refine
from msa_gpu.refine.realign import objective
from msa_gpu.tree import sequence_weights
from msa_gpu.types import Alignment

CPU = cpu_backend("test")
LETTERS = list("ACDEFGHIKLMNPQRSTVWY")


def _family(rng, n=16, length=60, cut=(25, 29), lacking=(0,)):
    """A gapless family of ``n`` close relatives, where the rows ``lacking``
    miss residues ``cut`` (a deletion): its true alignment as rows."""
    base = rng.choice(LETTERS, length)
    rows = []
    for s in range(n):
        seq = base.copy()
        mut = rng.random(length) < 0.15
        seq[mut] = rng.choice(LETTERS, int(mut.sum()))
        if s in lacking:
            seq[cut[0]: cut[1]] = "-"
        rows.append("".join(seq).encode())
    return rows


def _setup(rows, config=AlignerConfig(mode="fast")):
    names = [f"s{i}" for i in range(len(rows))]
    seqs = make_sequences(names, [r.replace(b"-", b"") for r in rows], "protein")
    aligner = Aligner(config, backend=CPU)
    res = aligner.align(seqs)
    job = FamilyJob(seqs, res.guide_tree, res.schedule, sequence_weights(res.guide_tree),
                    aligner.scoring(seqs, res.recipe))
    return seqs, job


def _mask(rows):
    return Alignment.from_mask(np.array([[c != ord("-") for c in r] for r in rows]))


def _misplaced(rows, lacking, cut):
    """The deletion of each row in ``lacking`` moved to the row's end (a broken
    stand-in for a wrong merge)."""
    out = list(rows)
    for s in lacking:
        res = rows[s].replace(b"-", b"")
        out[s] = res + b"-" * (cut[1] - cut[0])
    return out


def test_realign_puts_a_misplaced_sequence_back():
    rows = _family(np.random.default_rng(3))
    seqs, job = _setup(rows)
    bad = _mask(_misplaced(rows, (0,), (25, 29)))
    assert bad.rows(seqs)[0] != rows[0]
    fixed, before = realign(job, bad, CPU)
    assert fixed.rows(seqs) == rows
    assert objective(job, fixed, CPU) > before
    # the true alignment is a fixed point
    again, _ = realign(job, _mask(rows), CPU)
    assert again.rows(seqs) == rows


def test_realign_rounds_never_lower_the_objective():
    rng = np.random.default_rng(5)
    for _ in range(3):
        rows = _family(rng, lacking=(0, 1, 2), cut=(10, 14))
        seqs, job = _setup(rows)
        start = _mask(_misplaced(rows, (1,), (10, 14)))
        out = realign_rounds(job, start, CPU, 3)
        assert objective(job, out, CPU) >= objective(job, start, CPU)
        assert [r.replace(b"-", b"") for r in out.rows(seqs)] == list(seqs.raw)


def test_realign_through_the_aligner_keeps_every_residue():
    rows = _family(np.random.default_rng(8), n=12, lacking=(0, 3))
    seqs = make_sequences([f"s{i}" for i in range(12)], [r.replace(b"-", b"") for r in rows], "protein")
    res = Aligner(AlignerConfig(mode="fast", realign=2), backend=CPU).align(seqs)
    assert [r.replace(b"-", b"") for r in res.rows()] == list(seqs.raw)
    assert "realign" in res.timings
    with pytest.raises(ValueError):
        AlignerConfig(realign=-1)


def test_column_cuts_mend_a_gap_block_shared_by_a_subfamily():
    """Five rows share a deletion, moved to their ends: one cut along that
    gap pattern realigns the five against the rest and puts it back."""
    lacking = tuple(range(5))
    rows = _family(np.random.default_rng(13), n=14, lacking=lacking, cut=(30, 34))
    seqs, job = _setup(rows)
    bad = _mask(_misplaced(rows, lacking, (30, 34)))
    codes = alignment_codes(seqs, bad)
    splits = column_splits(codes, seqs.alphabet.gap)
    assert any((s == np.isin(np.arange(14), lacking)).all() for s in splits)
    out = refine([job], [bad], [4], CPU, sample=[COLUMN_CUTS], splits=["columns"]).alignments[0]
    assert out.rows(seqs) == rows


def test_column_cuts_are_a_recipe_choice():
    seqs = make_sequences([f"s{i}" for i in range(6)], [r.replace(b"-", b"") for r in
                                                       _family(np.random.default_rng(1), n=6)], "protein")
    r = recipe_for(AlignerConfig(mode="fast", maxiterate=2, refine_splits="columns"), seqs)
    assert (r.refine_splits, r.refine_cuts, r.iterations) == ("columns", COLUMN_CUTS, 2)
    assert recipe_for(AlignerConfig(mode="fast"), seqs).refine_splits == "tree"
    with pytest.raises(ValueError):
        AlignerConfig(refine_splits="random")
