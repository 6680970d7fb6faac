"""Accurate mode: the consistency library, its scores, and stage 4 refinement."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dp import random_batch
from typer.testing import CliRunner

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.backend.cpu import align_batch, path_score
from msa_gpu.backend.pairwise import PairScoring, align_pairs
from msa_gpu.frontends.msagpu import app
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.consistency import LibrarySettings, build_libraries
from msa_gpu.io import make_sequences, read_aligned, read_core, read_sequences
from msa_gpu.progressive import FamilyJob
from msa_gpu.refine import refine, tree_splits
from msa_gpu.accuracy import sp_tc
from msa_gpu.types import LIBRARY_ONE

CPU = cpu_backend()


def _entries(lib, k):
    lo, hi = int(lib.pair_off[k]), int(lib.pair_off[k + 1])
    return list(zip(lib.x[lo:hi].tolist(), lib.y[lo:hi].tolist(), lib.w[lo:hi].tolist()))


def test_two_sequences_give_their_alignment_twice_weighted():
    """With no third sequence, u = s and u = t give the direct alignment, each
    weighted W(s,t) * LIBRARY_ONE."""
    seqs = make_sequences(["a", "b"], [b"MKVLAAGIVGW", b"MKVAAGLVGW"], "protein")
    lib = build_libraries([seqs], LibrarySettings(mode="global"))[0]
    pw = align_pairs(seqs, [(0, 1)], PairScoring(mode="global", gap_open=11, gap_extend=1), traceback=True,
                     backend="cpu")
    mv = pw.moves(0)
    x = np.cumsum(mv != 2) - 1
    y = np.cumsum(mv != 1) - 1
    w = int(np.rint(pw.identity[0] * LIBRARY_ONE))
    want = [(int(i), int(j), 2 * LIBRARY_ONE * w) for i, j, m in zip(x, y, mv) if m == 0]
    assert _entries(lib, 0) == want


def test_third_sequences_add_what_they_agree_on():
    """Residue pairs that a third sequence links get W(s,u) W(u,t) more."""
    seqs = make_sequences(["a", "b", "c"], [b"MKVLAW", b"MKVAW", b"KVLAW"], "protein")
    lib = build_libraries([seqs])[0]
    entries = {(x, y): v for x, y, v in _entries(lib, 0)}  # pair (a, b)
    assert entries[(3, 2)] > 0  # L of a faces V of b only through c
    assert all(v > entries[(3, 2)] for key, v in entries.items() if key != (3, 2))


def test_library_identity_and_coverage_are_over_the_shorter_sequence():
    """Worked by hand: the local alignment of MKVLAWQRSTEG (12) with
    GGGMKVIAW (9) pairs MKVLAW with MKVIAW (GGG and QRSTEG left out): 6
    aligned pairs, 5 identical. The guide tree's identity is 5 over the
    SHORTER length, 5/9 (over the longer it would be 5/12), its distance
    4/9; the ``coverage`` weight is 5/9 too, rint(5/9 * 64) = 36, and each
    entry (u = s and u = t) 2 * 64 * 36; the ``identity`` weight is over the
    aligned pairs, 5/6: rint(53.3) = 53, 2 * 64 * 53."""
    from msa_gpu.consistency.library import library_distance

    seqs = make_sequences(["long", "short"], [b"MKVLAWQRSTEG", b"GGGMKVIAW"], "protein")
    pairs = [(i, 3 + i) for i in range(6)]
    for weight, w in (("coverage", 36), ("identity", 53)):
        lib = build_libraries([seqs], LibrarySettings(weight=weight))[0]
        assert lib.identity[0, 1] == lib.identity[1, 0] == pytest.approx(5 / 9)
        assert _entries(lib, 0) == [(x, y, 2 * LIBRARY_ONE * w) for x, y in pairs], weight
        assert library_distance(lib).values[0, 1] == pytest.approx(4 / 9)


def test_library_is_the_same_in_one_call_or_many(refs):
    """Alone, together, or a family a pairwise call (progress counted between
    calls): the same libraries."""
    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    together = build_libraries(fams)
    counts = []
    chunked = build_libraries(fams, chunk_pairs=1, on_progress=lambda done, total: counts.append((done, total)))
    total = sum(len(f) * (len(f) - 1) // 2 for f in fams)
    assert len(counts) == len(fams) and counts[-1] == (total, total)
    assert all(a[0] < b[0] for a, b in zip(counts, counts[1:]))
    for fam, lib, lib2 in zip(fams, together, chunked):
        alone = build_libraries([fam])[0]
        for name in ("pair_off", "x", "y", "w"):
            assert np.array_equal(getattr(lib, name), getattr(alone, name))
            assert np.array_equal(getattr(lib, name), getattr(lib2, name))


def test_a_library_that_families_share_is_stacked_once():
    """An ensemble's replicates share their family's library: the stack holds
    it once, each replicate reading the same pair ranges, and the alignments
    are those of a stack holding a copy for each (issue 46: 16 replicates of
    59 families held 885 copies)."""
    from dataclasses import replace

    from msa_gpu.consistency import stack_libraries

    a, b = _random_family(np.random.default_rng(31), 6, 50), _random_family(np.random.default_rng(32), 4, 40)
    lib_a, lib_b = build_libraries([a, b])
    shared = stack_libraries([lib_a, None, lib_a, lib_b], np)
    copied = stack_libraries([lib_a, None, replace(lib_a), lib_b], np)  # an equal library, another object
    assert len(shared.x) == lib_a.n_entries + lib_b.n_entries and len(copied.x) == 2 * lib_a.n_entries + lib_b.n_entries
    g = shared.family_base
    assert shared.g_pair[g[2]] == shared.g_pair[g[0]] and shared.g_base[g[2]] == g[2]
    fams = [a, a, a, b]
    cfg = AlignerConfig(mode="accurate")
    given = Aligner(cfg, backend=CPU).align_many(fams, libraries=[lib_a, lib_a, lib_a, lib_b])
    apart = Aligner(cfg, backend=CPU).align_many(fams, libraries=[lib_a, replace(lib_a), replace(lib_a), lib_b])
    assert [r.rows() for r in given] == [r.rows() for r in apart]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=6), st.integers(0, 2**32 - 1),
       st.integers(0, 1))
def test_path_score_of_the_dp_path_is_the_dp_score(sizes, seed, rnd):
    """path_score follows the DP's recurrences: the DP's own path scores
    exactly the DP's best score (floored, or rounded with credits as in the
    exact model)."""
    sizes = [s for s in sizes if s[0] + s[1] > 0] or [(1, 1)]
    batch = random_batch(np.random.default_rng(seed), sizes, rnd)
    path, lens, score = align_batch(batch)
    fwd = [path[batch.path_off[p]: batch.path_off[p] + lens[p]][::-1] for p in range(len(sizes))]
    moves = np.concatenate(fwd + [np.zeros(1, np.uint8)])
    off = np.concatenate([[0], np.cumsum(lens)])[:-1]
    assert np.array_equal(path_score(batch, moves, off, lens), score.astype(np.int64))


def test_path_score_of_another_path_is_lower():
    rng = np.random.default_rng(3)
    batch = random_batch(rng, [(40, 35)])
    path, lens, score = align_batch(batch)
    other = np.array([1] * 40 + [2] * 35, dtype=np.uint8)  # everything against gaps
    got = path_score(batch, other, np.array([0]), np.array([75]))
    assert got[0] < score[0]


def _random_family(rng, n, length):
    base = rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), length)
    out = []
    for _ in range(n):
        s = base.copy()
        mut = rng.random(length) < 0.35
        s[mut] = rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), mut.sum())
        out.append("".join(s[rng.random(length) > 0.12]).encode())
    return make_sequences([f"s{i}" for i in range(n)], out, "protein")


def test_refinement_stops_at_a_fixed_point():
    """Refinement keeps only gaining cuts: once it stops, another round finds
    nothing to gain and leaves the alignment as it is."""
    seqs = _random_family(np.random.default_rng(5), 8, 60)
    aligner = Aligner(AlignerConfig(mode="fast", maxiterate=50), backend=CPU)
    res = aligner.align(seqs)
    assert 0 < res.timings["refine_accepted"] and res.timings["refine_rounds"] < 50
    scoring = aligner.scoring(seqs, res.recipe)
    from msa_gpu.tree import sequence_weights

    job = FamilyJob(seqs, res.guide_tree, res.schedule, sequence_weights(res.guide_tree), scoring)
    again = refine([job], [res.alignment], [3], CPU)
    assert again.accepted == [0] and again.rounds[0] <= 2  # a cut tried and undone, or none
    assert np.array_equal(again.alignments[0].trace, res.alignment.trace)


def test_refinement_keeps_the_best_objective_it_saw(monkeypatch):
    """Each cut's DP scores only its own profiles, so accepted cuts can lower
    the family's objective (the sum of its paths over all cuts): such a cut
    is undone and refinement ends, so the alignment returned has the highest
    objective of those it went through, and the cap is only a cap."""
    import msa_gpu.refine.bipartitions as rb

    totals = []
    real = rb._best_cuts
    monkeypatch.setattr(rb, "_best_cuts", lambda *a: (lambda r: totals.append(r[1][0]) or r)(real(*a)))
    for seed in range(4):
        seqs = _random_family(np.random.default_rng(20 + seed), 12, 70)
        aligner = Aligner(AlignerConfig(mode="fast", maxiterate=1000), backend=CPU)
        totals.clear()
        res = aligner.align(seqs)
        seen = list(totals)
        assert res.timings["refine_rounds"] < 1000
        job = FamilyJob(seqs, res.guide_tree, res.schedule, _weights(res.guide_tree), aligner.scoring(seqs, res.recipe))
        totals.clear()
        refine([job], [res.alignment], [1], CPU)
        assert totals[0] == max(seen)
        assert all(b > a for a, b in zip(seen[:-2], seen[1:-1]))  # rising, but for the last (undone) round


@pytest.mark.parametrize("second, kept", [(100, False), (101, True)])
def test_refinement_keeps_a_cut_only_when_the_objective_strictly_rises(monkeypatch, second, kept):
    """Stand-in `_best_cuts`: round 1 reports cut 0 (leaf 0 against the
    rest) as gaining with the objective at 100, and the merge realigns it;
    round 2 finds no cut and reports the objective of the new alignment. An
    objective only EQUAL to the one before (100) is no rise: the cut is
    undone and the input alignment comes back with nothing accepted; a
    strict rise (101) keeps it."""
    import msa_gpu.refine.bipartitions as rb
    from msa_gpu.types import Alignment

    seqs = _random_family(np.random.default_rng(7), 6, 40)
    aligner = Aligner(AlignerConfig(mode="fast", maxiterate=0), backend=CPU)
    res = aligner.align(seqs)
    left = Alignment.from_mask(np.arange(max(seqs.lengths))[None, :] < seqs.lengths[:, None])  # left-justified
    job = FamilyJob(seqs, res.guide_tree, res.schedule, _weights(res.guide_tree), aligner.scoring(seqs, res.recipe))
    calls = []

    def stand_in(cuts, sides, *a):
        calls.append(len(calls))
        return ([0], [100]) if len(calls) == 1 else ([None], [second])

    monkeypatch.setattr(rb, "_best_cuts", stand_in)
    out = refine([job], [left], [5], CPU)
    assert out.rounds == [2] and len(calls) == 2
    same = np.array_equal(out.alignments[0].trace, left.trace)
    if kept:
        assert out.accepted == [1] and not same  # the realigned cut changed the alignment, and stays
    else:
        assert out.accepted == [0] and same


def _weights(tree):
    from msa_gpu.tree import sequence_weights

    return sequence_weights(tree)


def test_sampled_cuts_do_not_depend_on_the_batch():
    """``refine_cuts``: a round tries at most that many cuts, drawn by the
    round and the family's cut count, so a family refined beside others gets
    the same alignment as alone; a round without gain does not stop it."""
    from msa_gpu.refine.bipartitions import _Sides

    sides = _Sides.of(tree_splits(Aligner(AlignerConfig(), backend=CPU).align(
        _random_family(np.random.default_rng(3), 12, 50)).guide_tree))
    a, b, c = sides.sample(4, 0), sides.sample(4, 0), sides.sample(4, 1)
    assert a.n_cuts == 4 and np.array_equal(a.split, b.split) and not np.array_equal(a.split, c.split)
    assert sides.sample(sides.n_cuts, 0) is sides
    fams = [_random_family(np.random.default_rng(s), n, 60) for s, n in ((5, 12), (6, 9), (7, 15))]
    cfg = AlignerConfig(mode="fast", maxiterate=6, refine_cuts=4)
    together = Aligner(cfg, backend=CPU).align_many(fams)
    alone = Aligner(cfg, backend=CPU).align(fams[0])
    assert together[0].rows() == alone.rows()
    assert together[0].timings["refine_rounds"] == 6  # every round ran


def test_equal_weights_reach_the_progressive_stage(monkeypatch):
    from msa_gpu.pipeline import steps as aligner_mod

    seen = []
    real = aligner_mod.progressive_align
    monkeypatch.setattr(aligner_mod, "progressive_align",
                        lambda jobs, *a, **k: seen.extend(j.weights for j in jobs) or real(jobs, *a, **k))
    seqs = _random_family(np.random.default_rng(4), 7, 40)
    Aligner(AlignerConfig(mode="fast", weights="equal"), backend=CPU).align(seqs)
    assert seen and all((w == 1).all() for w in seen)
    seen.clear()
    Aligner(AlignerConfig(mode="fast"), backend=CPU).align(seqs)
    assert seen and any(len(set(w.tolist())) > 1 for w in seen)
    with pytest.raises(ValueError):
        AlignerConfig(weights="henikoff")
    with pytest.raises(ValueError):
        AlignerConfig(refine_cuts=-1)


def test_tree_splits_cover_every_edge_once():
    from msa_gpu.distances import kmer_distance
    from msa_gpu.tree import upgma

    seqs = _random_family(np.random.default_rng(1), 9, 40)
    splits = tree_splits(upgma(kmer_distance(seqs)))
    assert splits.shape == (2 * 9 - 3, 9)
    keys = {tuple(s) for s in splits} | {tuple(~s) for s in splits}
    assert len(keys) == 2 * len(splits)  # no bipartition twice, either way round


def test_accurate_mode_is_deterministic_and_valid():
    seqs = _random_family(np.random.default_rng(9), 10, 80)
    a = Aligner(AlignerConfig(mode="accurate"), backend=CPU).align(seqs)
    b = Aligner(AlignerConfig(mode="accurate"), backend=CPU).align(seqs)
    a.alignment.check(seqs)
    assert a.rows() == b.rows() and a.distances.method == "library"


#: Families of references/balibase12 where accurate mode is known to lose more
#: than 0.10 TC to fast mode (measured 2026-11-25, CPU, defaults), with the
#: accurate TC they had then: kept out of the per-family bar, and held to that
#: TC, so that a further drop fails; a family that improves passes (when it no
#: longer loses, drop it from the list). BB30027: TC 18/22 = 0.818 fast, 11/22
#: = 0.500 accurate (posterior library; 0.818 with the local one).
KNOWN_REGRESSIONS = {"BB30027": 11 / 22}


def check_accurate_beats_fast(fast: dict[str, float], accurate: dict[str, float], margin: float = 0.10) -> None:
    """Accurate mode's mean TC is at least fast mode's, and no family (but the
    known regressions) is more than ``margin`` below its fast-mode TC."""
    assert np.mean(list(accurate.values())) >= np.mean(list(fast.values())), (fast, accurate)
    worse = {f: (fast[f], accurate[f]) for f in fast
             if accurate[f] < fast[f] - margin and f not in KNOWN_REGRESSIONS}
    assert not worse, worse


def check_known_regressions(accurate: dict[str, float], known: dict[str, float] = KNOWN_REGRESSIONS) -> None:
    """No known regression's accurate TC is below the one recorded for it (a
    drop fails; a gain, or a fix, does not)."""
    dropped = {f: (accurate[f], tc) for f, tc in known.items() if accurate[f] < tc - 1e-9}
    assert not dropped, dropped


def test_accurate_mode_beats_fast_mode_on_twelve_families(refs):
    """The point of the mode, on references/balibase12 (two families a
    BAliBASE reference set, chosen by size alone)."""
    from conftest import BALIBASE12, reference_score

    fams = [read_sequences(refs / "balibase12" / f"{f}.tfa") for f in BALIBASE12]
    tc, accepted = {}, {}
    for name, kw in (("fast", {"mode": "fast"}), ("accurate", {"mode": "accurate"}),
                     ("local", {"mode": "accurate", "library_mode": "local"}),
                     ("local unrefined", {"mode": "accurate", "library_mode": "local", "maxiterate": 0})):
        res = Aligner(AlignerConfig(**kw), backend=CPU).align_many(fams)
        tc[name] = {f: reference_score(refs, f, r.sequences.names, r.rows()).tc for f, r in zip(BALIBASE12, res)}
        accepted[name] = sum(r.timings.get("refine_accepted", 0.0) for r in res)
    check_accurate_beats_fast(tc["fast"], tc["accurate"])
    assert accepted["accurate"] == 0  # the posterior library's families are not refined by default
    check_refinement_gains(tc["local unrefined"], tc["local"], accepted["local"])
    check_known_regressions(tc["accurate"])


def check_refinement_gains(before: dict[str, float], after: dict[str, float], accepted: float) -> None:
    """Refinement accepted cuts and did not lower the mean TC (on balibase12
    it raised it from 0.500 to 0.588, 2026-11-25)."""
    assert accepted > 0
    assert np.mean(list(after.values())) >= np.mean(list(before.values())), (before, after)


def test_the_accurate_bar_rejects_a_mode_that_loses():
    """(The bar can fail: a lower mean, or one family far below, is refused;
    a known regression fails when it drops below its recorded TC, never when
    it improves.)"""
    fast = {"a": 0.5, "b": 0.5, "c": 0.5}
    with pytest.raises(AssertionError):
        check_accurate_beats_fast(fast, {"a": 0.45, "b": 0.5, "c": 0.5})
    with pytest.raises(AssertionError):
        check_accurate_beats_fast(fast, {"a": 0.9, "b": 0.35, "c": 0.5})
    check_accurate_beats_fast(fast, {"a": 0.9, "b": 0.45, "c": 0.5})
    with pytest.raises(AssertionError):  # a refinement that accepts nothing
        check_refinement_gains(fast, fast, 0)
    with pytest.raises(AssertionError):  # one that makes things worse
        check_refinement_gains(fast, {"a": 0.4, "b": 0.5, "c": 0.5}, 3)
    known = {"b": 0.2}  # a known regression: b at 0.2
    check_known_regressions({"a": 0.5, "b": 0.2, "c": 0.5}, known)
    check_known_regressions({"a": 0.5, "b": 0.45, "c": 0.5}, known)  # it improves: no failure
    with pytest.raises(AssertionError):  # it drops further
        check_known_regressions({"a": 0.5, "b": 0.15, "c": 0.5}, known)


@pytest.mark.parametrize("args, said", [
    ([], "4 sequences, mean length 86: accurate, pair-HMM posterior library"),
    (["--mode", "fast", "--maxiterate", "2"], ": fast, k-mer distances, mixed-linkage tree, rebuilt 1x, flat gaps, "
                                              "refinement up to 2 rounds, CPU"),
    (["--localpair", "--maxiterate", "3"], ": accurate, pair-HMM posterior library"),
])
def test_cli_modes(refs, args, said):
    res = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "--backend", "cpu", *args])
    assert res.exit_code == 0, res.output
    assert said in res.stderr and res.stdout.startswith(">")


def test_cli_refuses_two_pair_modes(refs):
    res = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "--localpair", "--globalpair"])
    assert res.exit_code == 2 and "exclude each other" in res.stderr


def test_refinement_stops_when_it_comes_back_to_an_earlier_alignment(monkeypatch):
    """A cut whose realignment gives back an alignment the family had before
    ends its refinement (cut scores can go round in a circle: BB20006 came
    back after 73 rounds and would otherwise run to --maxiterate). Stand-in:
    every round 'gains' on cut 0 and the merge returns the alignment as it was."""
    from types import SimpleNamespace

    from msa_gpu.progressive import Profile
    from msa_gpu.refine import bipartitions

    seqs = _random_family(np.random.default_rng(5), 8, 60)
    base = Aligner(AlignerConfig(mode="fast", maxiterate=0, gap_model="flat"), backend=CPU).align(seqs)
    from msa_gpu.progressive import alignment_codes

    codes = alignment_codes(seqs, base.alignment)
    import itertools

    rising = itertools.count()  # the objective rises each round, so only the circle can stop it
    monkeypatch.setattr(bipartitions, "_best_cuts",
                        lambda cuts, sides, *a: ([0] * len(sides), [next(rising)] * len(sides)))
    same = SimpleNamespace(profiles=[Profile(np.arange(len(seqs)), codes, np.ones(len(seqs), np.int64))])
    monkeypatch.setattr(bipartitions, "merge_batch", lambda pairs, *a: same)
    res = Aligner(AlignerConfig(mode="fast", maxiterate=50, gap_model="flat"), backend=CPU).align(seqs)
    assert res.timings["refine_rounds"] == 1 and res.timings["refine_accepted"] == 1
    assert res.rows() == base.rows()
