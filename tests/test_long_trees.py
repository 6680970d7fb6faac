"""Guide trees of long sequences (issue 31): k-mer length from the length,
k-mer divergences, midpoint-rooted neighbour joining, flat gaps."""

from __future__ import annotations

import numpy as np

from benchmarks.genomes import family
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distances import kmer_distance
from msa_gpu.distances.kmer import kmer_length
from msa_gpu.io import make_sequences
from msa_gpu.recipe import recipe_for
from msa_gpu.tree.linkage import mixed_linkage
from msa_gpu.tree.neighbour_joining import midpoint_root, nj
from msa_gpu.types import DistanceMatrix, GuideTree


def _clades(tree: GuideTree) -> list[frozenset]:
    """Each internal node's leaf set, in merge order."""
    n = tree.n_leaves
    sets = [frozenset([i]) for i in range(n)]
    for a, b in tree.children.tolist():
        sets.append(sets[a] | sets[b])
    return sets[n:]


def _splits(clades, n: int) -> set:
    """Unrooted splits (the side without leaf 0) of clades of 2..n-2 leaves."""
    every = frozenset(range(n))
    return {c if 0 not in c else every - c for c in clades if 1 < len(c) < n - 1}


def _genomes(n: int, length: int, seed: int = 5):
    truth: list = []
    fam = family(n, length, seed=seed, clades=truth)
    true_splits = _splits([frozenset(range(lo, hi)) for lo, hi in truth], n)
    return make_sequences(fam.names, fam.sequences), true_splits


def test_kmer_length_grows_with_the_length_and_keeps_protein_at_six():
    assert kmer_length(6, 300) == 6 and kmer_length(6, 2400) == 6  # BAliBASE and Balifam keep 6-mers
    assert kmer_length(4, 200) == 6 and kmer_length(4, 6000) == 9 and kmer_length(4, 30000) == 10
    assert kmer_length(4, 0) == 6


def test_divergences_recover_the_true_tree_where_6mers_cannot():
    """6-mer presence sees every pair of 30 kb genomes as nearly the same
    (nearly all 4,096 6-mers occur in each); the length's k-mers, as
    divergences under NJ, give back the tree the genomes evolved on."""
    seqs, truth = _genomes(24, 30000)
    six = kmer_distance(seqs, k=6)
    assert six.values.max() < 0.01
    dm = kmer_distance(seqs, divergence=True)
    assert dm.method == "kmer10-divergence"
    got = _splits(_clades(nj(dm)), len(seqs))
    assert len(got & truth) >= 0.9 * len(truth)
    assert len(_splits(_clades(nj(six)), len(seqs)) & truth) < 0.5 * len(truth)
    # with 6-mers and k-mer distances under mixed linkage (the old default) the tree was no better
    assert len(_splits(_clades(mixed_linkage(kmer_distance(seqs, k=6))), len(seqs)) & truth) < 0.5 * len(truth)


def test_midpoint_root_keeps_the_splits_and_halves_the_longest_path():
    rng = np.random.default_rng(3)
    for n in (3, 7, 40):
        x = rng.random((n, 4))
        d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
        last = nj(DistanceMatrix(d, "x"), midpoint=False)
        mid = midpoint_root(last)
        assert _splits(_clades(mid), n) == _splits(_clades(last), n)
        assert np.isclose(mid.lengths.sum(), last.lengths.sum())
        # depth of the deepest leaf on each side of the root: equal at the midpoint
        depth = np.zeros(2 * n - 1)
        for k in range(n - 2, -1, -1):
            for c, w in zip(mid.children[k], mid.lengths[k]):
                depth[c] = depth[n + k] + w
        sides = [_clades(mid)[c - n] if c >= n else frozenset([c]) for c in mid.children[-1]]
        assert np.isclose(max(depth[list(sides[0])]), max(depth[list(sides[1])]))


def _leaf_depths(tree: GuideTree) -> np.ndarray:
    """Each leaf's path length from the root."""
    n = tree.n_leaves
    depth = np.zeros(2 * n - 1)
    for k in range(n - 2, -1, -1):
        for c, w in zip(tree.children[k], tree.lengths[k]):
            depth[c] = depth[n + k] + w
    return depth[:n]


def test_nj_is_midpoint_rooted_by_default():
    """An additive matrix of the unrooted tree (branch lengths by hand)::

        0 --10-- u --1-- v --1-- w --1-- 3
                 |       |       |
                 1       1       1
                 1       2       4

    The longest leaf-to-leaf path, 0 to 3 (or 4), is 13: its midpoint lies
    6.5 along leaf 0's branch, so the root splits {0} from {1, 2, 3, 4}
    with branches 6.5 and 3.5, and the leaves lie 6.5, 4.5, 5.5, 6.5, 6.5
    below it (0 and 3 equally far). NJ rooted at its last join instead puts
    the root between {0, 1, 2, 3} and {4}. The default ``nj`` is the
    explicitly midpoint-rooted one, children and lengths."""
    d = np.array([[0, 11, 12, 13, 13], [11, 0, 3, 4, 4], [12, 3, 0, 3, 3], [13, 4, 3, 0, 2], [13, 4, 3, 2, 0]], float)
    dm = DistanceMatrix(d, "x")
    tree = nj(dm)
    assert set(_clades(tree)) == {frozenset({3, 4}), frozenset({2, 3, 4}), frozenset({1, 2, 3, 4}), frozenset(range(5))}
    assert sorted(tree.lengths[-1].tolist()) == [3.5, 6.5]
    assert np.allclose(_leaf_depths(tree), [6.5, 4.5, 5.5, 6.5, 6.5])
    explicit = nj(dm, midpoint=True)
    assert tree.children.tolist() == explicit.children.tolist() and np.array_equal(tree.lengths, explicit.lengths)
    assert frozenset({0, 1, 2, 3}) in _clades(nj(dm, midpoint=False))  # (the other rooting differs)


def test_long_families_take_divergences_nj_and_flat_gaps():
    seqs, truth = _genomes(12, 4000, seed=2)
    cfg = AlignerConfig(backend="cpu")
    recipe = recipe_for(cfg, seqs)
    assert recipe.long and recipe.tree == "nj" and recipe.divergence and recipe.gap_model == "flat"
    short = make_sequences(["a", "b", "c"], [b"MKVLAAGIVG" * 30] * 3)
    fast = recipe_for(AlignerConfig(mode="fast"), short)
    assert not fast.long and fast.gap_model == "counts"  # 3 sequences: exact opens are from 500
    aligner = Aligner(cfg, backend=cpu_backend("test"))
    assert aligner.distances(seqs, recipe).method.endswith("-divergence")
    got = aligner.align(seqs)
    assert len(_splits(_clades(got.guide_tree), len(seqs)) & truth) >= 0.9 * len(truth)


def test_midpoint_root_of_a_tree_with_every_distance_zero_is_the_tree():
    """Every distance 0: NJ's ties go to the lowest pair of indices, so by
    hand the tree is the caterpillar (((0, 1), 2), 3)... with every branch 0;
    with no longest path to halve, midpoint rooting gives that same tree
    back, children and lengths."""
    for n in (3, 6):
        dm = DistanceMatrix(np.zeros((n, n)), "x")
        caterpillar = [[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)]
        last = nj(dm, midpoint=False)
        assert last.children.tolist() == caterpillar and not last.lengths.any()
        for tree in (nj(dm), midpoint_root(last)):
            assert tree.children.tolist() == caterpillar and not tree.lengths.any()


def test_a_genome_and_its_fragments_align_on_the_long_path():
    """A fragment shares all its k-mers with its genome (distance 0 to it):
    the all-zero distances must not break the midpoint root."""
    fam = family(2, 6000, seed=1)
    g = fam.sequences[0]
    seqs = make_sequences(["g", "head", "tail"], [g, g[:5000], g[1000:]])
    got = Aligner(AlignerConfig(backend="cpu"), backend=cpu_backend("test")).align(seqs)
    rows = got.rows()
    assert [r.replace(b"-", b"") for r in rows] == [g, g[:5000], g[1000:]]
    # the fragments sit inside the genome: at most a few columns apart at their ends (the whole genome, on
    # a branch of length 0 between them, weighs 1/1000 of each fragment)
    assert len(rows[0]) <= 1.01 * len(g)
