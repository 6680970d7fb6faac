"""Rules at their edges (issue 56): ``--maxiterate`` N plans and runs at
most N refinement rounds, exactly 0, 1 and 2 where refinement would go on,
and the cut a family accepts in its last allowed round is checked as every
other round's is (undone unless the whole alignment's objective rose)."""

from __future__ import annotations

import numpy as np
import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import read_sequences
from msa_gpu.progressive import FamilyJob
from msa_gpu.recipe import describe
from msa_gpu.refine import refine
from msa_gpu.tree import sequence_weights

CPU = cpu_backend("test")


@pytest.fixture(scope="module")
def capped(request):
    """BB11001 (fast) refined with --maxiterate 0 to 3 and uncapped (its
    refinement stops by itself after its third round)."""
    from conftest import REFS

    seqs = read_sequences(REFS / "BB11001.tfa")
    return {m: Aligner(AlignerConfig(backend="cpu", mode="fast", maxiterate=m)).align(seqs) for m in (0, 1, 2, 3, 50)}


@pytest.mark.parametrize("m, said", [(0, "no refinement, CPU"), (1, "refinement up to 1 round, CPU"),
                                     (2, "refinement up to 2 rounds, CPU"), (3, "refinement up to 3 rounds, CPU")])
def test_maxiterate_n_runs_n_rounds_where_refinement_would_go_on(capped, m, said):
    res = capped[m]
    assert res.recipe.iterations == m and describe(res.recipe, "cpu").endswith(said)
    assert res.timings.get("refine_rounds", 0) == m  # refinement went on to round 3 by itself: each cap binds
    assert capped[50].timings["refine_rounds"] == 3  # (and stopped there: 3 is not a cap reached)
    if m:
        assert res.rows() != capped[0].rows()  # round 1 took a cut


def test_the_last_allowed_round_is_checked_too(capped):
    """BB11001's second round takes a cut that lowers the objective (its
    third round undoes it): capped at 2 rounds, that cut is checked and
    undone all the same, so --maxiterate 2 gives what 3 and 50 give."""
    assert capped[2].rows() == capped[3].rows() == capped[50].rows()
    assert capped[2].timings["refine_accepted"] == capped[50].timings["refine_accepted"] == 1


@pytest.mark.parametrize("after, kept", [(99, False), (100, False), (101, True)])
def test_a_cut_taken_in_the_last_round_stays_only_if_the_objective_rose(monkeypatch, capped, after, kept):
    """Stand-in `_best_cuts`, one round allowed (--maxiterate 1): the round
    reports cut 0 as gaining with the objective at 100 and the merge
    realigns it; the check after it (no DP) reports the new alignment's
    objective: below or equal, the cut is undone; above, it stays."""
    import msa_gpu.refine.bipartitions as rb

    res = capped[0]
    aligner = Aligner(AlignerConfig(mode="fast"), backend=CPU)
    job = FamilyJob(res.sequences, res.guide_tree, res.schedule, sequence_weights(res.guide_tree),
                    aligner.scoring(res.sequences, res.recipe))
    calls = []

    def stand_in(cuts, sides, ctx, long_cells, budget, realign=True):
        calls.append(realign)
        return ([0], [100]) if realign else ([None], [after])

    monkeypatch.setattr(rb, "_best_cuts", stand_in)
    out = refine([job], [res.alignment], [1], CPU)
    assert calls == [True, False] and out.rounds == [1]
    same = np.array_equal(out.alignments[0].trace, res.alignment.trace)
    assert out.accepted == ([1] if kept else [0]) and same != kept


def test_one_sequence_builds_no_library(monkeypatch):
    """A family of one sequence has no pairs: accurate mode builds it no
    library (it built one, 0.2-0.5 s for nothing, under "nothing to align"),
    while the family beside it in the batch still gets its own."""
    import msa_gpu.pipeline.builders as aligner_mod
    from msa_gpu.io import make_sequences

    built = []
    real = aligner_mod.posterior_libraries
    monkeypatch.setattr(aligner_mod, "posterior_libraries",
                        lambda fams, **kw: built.append([len(f) for f in fams]) or real(fams, **kw))
    one = make_sequences(["a"], [b"MKVLAAGIV"], "protein")
    three = make_sequences(["a", "b", "c"], [b"MKVLA", b"MKVA", b"MKKVLA"], "protein")
    config = AlignerConfig(backend="cpu", mode="accurate")
    res = Aligner(config).align_many([one, three])
    assert built == [[3]] and res[0].rows() == [b"MKVLAAGIV"] and len(res[1].rows()) == 3
    built.clear()
    assert Aligner(config).align(one).rows() == [b"MKVLAAGIV"] and built == []
