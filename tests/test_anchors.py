"""Long merges cut at k-mer anchors (issue 31): the same accuracy against
the truth as the full DP at a fraction of its cells, valid alignments, a
switch that turns it off, and the pieces' own parts (anchors, stitching)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.genomes import family, pair
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences
from msa_gpu.progressive import anchors
from msa_gpu.accuracy import sp_tc

CPU = cpu_backend()


def _sp(fam, res) -> float:
    _, rows = fam.true_rows(range(len(fam.names)))
    ref = dict(zip(fam.names, rows))
    names = list(res.sequences.names)
    return sp_tc(names, res.rows(), names, [ref[n] for n in names]).sp


@pytest.fixture(scope="module")
def long_pair():
    fam = pair(12000, seed=4)
    return fam, make_sequences(fam.names, fam.sequences, "dna")


def test_anchored_pair_is_as_accurate_as_the_full_dp_with_far_fewer_cells(long_pair, monkeypatch):
    fam, seqs = long_pair
    from msa_gpu.progressive import driver

    cells = []
    real = driver.merge_resilient
    monkeypatch.setattr(driver, "merge_resilient", lambda pairs, *a: cells.extend(
        (p.length + 1) * (q.length + 1) for p, q in pairs) or real(pairs, *a))
    full = Aligner(AlignerConfig(anchor_cells=0), backend=CPU).align(seqs)
    full_cells, cells[:] = sum(cells), []
    cut = Aligner(AlignerConfig(), backend=CPU).align(seqs)
    cut.alignment.check(seqs)
    assert sum(cells) < full_cells / 5 and len(cells) > 10  # many pieces, a fifth of the cells or less
    assert _sp(fam, cut) >= _sp(fam, full) - 0.002 and _sp(fam, cut) > 0.98


def test_anchors_of_a_family_and_off_below_the_threshold():
    """A family of five 6 kb genomes: valid and as accurate as the full DP;
    merges under ``anchor_cells`` are never cut (the alignment is the full DP's)."""
    fam = family(5, 6000, seed=3)
    seqs = make_sequences(fam.names, fam.sequences, "dna")
    full = Aligner(AlignerConfig(anchor_cells=0), backend=CPU).align(seqs)
    cut = Aligner(AlignerConfig(anchor_cells=1 << 20), backend=CPU).align(seqs)
    cut.alignment.check(seqs)
    assert _sp(fam, cut) >= _sp(fam, full) - 0.005
    high = Aligner(AlignerConfig(anchor_cells=1 << 40), backend=CPU).align(seqs)
    assert high.rows() == full.rows()


def test_anchors_pass_over_the_gap_columns_of_a_profile():
    """A profile whose consensus is a gap every fifth column (one member's
    insertions) breaks every 15-mer of its consensus; the anchors are found
    on the consensus without those columns, split at each one, and never
    cover one."""
    from msa_gpu.progressive.profile import Profile

    rng = np.random.default_rng(5)
    gap = 4
    core = rng.integers(0, 4, 6000).astype(np.uint8)
    cols = np.full((3, 7500), gap, np.uint8)
    keep = np.ones(7500, bool)
    keep[4::5] = False  # every fifth column: an insertion in member 0 alone
    cols[:, keep] = core
    cols[0, ~keep] = rng.integers(0, 4, int((~keep).sum()))
    a = Profile(np.arange(3), cols, np.ones(3, np.int64))
    b = Profile(np.arange(1), core[None, :], np.ones(1, np.int64))
    plain = anchors.find_anchors(anchors.consensus(a.codes, gap), anchors.consensus(b.codes, gap), 15, gap, k_min=9)
    found = anchors.profile_anchors(a, b, gap, True)
    assert sum(x.length for x in plain) == 0
    assert sum(x.length for x in found) > 0.9 * 6000
    for x in found:
        assert (a.codes[1, x.a: x.a + x.length] == b.codes[0, x.b: x.b + x.length]).all()
        assert keep[x.a: x.a + x.length].all()


def test_moved_blocks_align_validly_and_as_the_full_dp():
    """Five 6 kb genomes with about three moved blocks (rearrangements):
    the anchored alignment is valid and as close to the truth as the full DP's."""
    fam = family(5, 6000, seed=6, moves=3)
    seqs = make_sequences(fam.names, fam.sequences, "dna")
    full = Aligner(AlignerConfig(anchor_cells=0), backend=CPU).align(seqs)
    cut = Aligner(AlignerConfig(anchor_cells=1 << 20), backend=CPU).align(seqs)
    cut.alignment.check(seqs)
    assert _sp(fam, cut) >= _sp(fam, full) - 0.005


def test_chain_is_the_heaviest_increasing_one():
    """Runs out of order (a translocated block) are left out: the chain
    keeps the longer consistent set."""
    runs = [(0, 0, 100), (100, 500, 50), (200, 200, 100), (400, 400, 100)]
    assert anchors._heaviest_chain(runs) == [(0, 0, 100), (200, 200, 100), (400, 400, 100)]
    assert anchors._heaviest_chain([]) == []


def test_chain_is_strictly_increasing_in_both_profiles():
    """A block found twice in A and once in B gives two runs that start at
    the same place in B: chaining both would take 150 + 160 = 310 columns
    (and 100 + 150 + 160 in the second case), but a chain must increase
    strictly in BOTH profiles, so the heavier run alone is kept (by hand:
    160; 100 + 160 = 260); the same for two runs starting at one place in
    A. End to end, A holds a block twice that B holds once: the chained,
    trimmed anchors match, increase strictly and do not overlap in either
    profile."""
    assert anchors._heaviest_chain([(0, 500, 150), (300, 500, 160)]) == [(300, 500, 160)]
    assert anchors._heaviest_chain([(0, 0, 100), (200, 200, 150), (400, 200, 160)]) == [(0, 0, 100), (400, 200, 160)]
    assert anchors._heaviest_chain([(200, 0, 150), (200, 300, 160)]) == [(200, 300, 160)]
    rng = np.random.default_rng(11)
    left, rep, right = rng.integers(0, 4, 300), rng.integers(0, 4, 60), rng.integers(0, 4, 300)
    a = np.concatenate([left, rep, rng.integers(0, 4, 20), rep, right])
    b = np.concatenate([left, rep, right])
    found = anchors.find_anchors(a, b, 10, 15)
    assert sum(x.length for x in found) > 400
    for x in found:
        assert (a[x.a: x.a + x.length] == b[x.b: x.b + x.length]).all()
    for x, y in zip(found, found[1:]):
        assert x.a + x.length <= y.a and x.b + x.length <= y.b


def test_trimmed_anchors_do_not_overlap_and_keep_margins():
    chain = [(0, 0, 100), (90, 95, 60), (160, 170, 13)]
    out = anchors._trimmed(chain, min_run=12, margin=8)
    assert [(x.a, x.b, x.length) for x in out] == [(8, 8, 74), (98, 103, 44)]
    for x, y in zip(out, out[1:]):
        assert x.a + x.length <= y.a and x.b + x.length <= y.b


def test_stitched_profile_holds_both_sides_in_order():
    """Pieces with columns on one side only are that side over gaps; the
    anchors' columns are stacked; the rows keep A's members, then B's."""
    from msa_gpu.progressive import Profile

    gap = 4
    a = Profile(np.array([0]), np.array([[0, 1, 2, 3, 0, 1]], np.uint8), np.array([1]))
    b = Profile(np.array([1, 2]), np.array([[0, 1, 2, 3, 0, 1, 2], [0, 1, 2, 3, 0, gap, 2]], np.uint8),
                np.array([1, 1]))
    level = anchors.AnchoredLevel([(a, b)], [gap], [], [], [], {0: [("anchor", anchors.Anchor(0, 0, 6)), ("b", 6, 7)]})
    out = level.stitch([], np)[0]
    assert out.members.tolist() == [0, 1, 2] and out.codes.shape == (3, 7)
    assert out.codes[0].tolist() == [0, 1, 2, 3, 0, 1, gap] and out.codes[2].tolist() == [0, 1, 2, 3, 0, gap, 2]


def test_anchor_cells_must_not_be_negative():
    with pytest.raises(ValueError, match="anchor_cells"):
        AlignerConfig(anchor_cells=-1)


def test_long_benchmark_writes_one_tradeoff_a_set(tmp_path, monkeypatch):
    """``python -m benchmarks long``: the pair and each family size are sets
    of their own, scored against their true alignment."""
    import json
    import sys

    from benchmarks.__main__ import main

    monkeypatch.setitem(sys.modules, "pyfamsa", None)  # no peer needed
    rc = main(["long", "--sizes", "3", "--length", "3000", "--pair-length", "5000", "--peers", "famsa",
               "--backend", "cpu", "--out", str(tmp_path), "--tag", "t"])
    assert rc == 0
    for name in ("pair5000", "genomes3"):
        doc = json.loads((tmp_path / f"t-{name}-tradeoff-genomes.json").read_text())
        mine = doc["entries"][0]
        assert doc["sets"] == [name] and mine["n_ok"] == 1 and mine["mean_sp"] > 0.95
