import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

from msa_gpu.io import to_newick
from msa_gpu.progressive import merge_schedule
from msa_gpu.tree import leaf_order, nj, sequence_weights, upgma
from msa_gpu.types import DistanceMatrix, GuideTree


def _additive(tree_lengths: np.ndarray, children: np.ndarray, n: int) -> np.ndarray:
    """Path-length distances of a tree given as flat arrays."""
    parent = {}
    for k, (a, b) in enumerate(children):
        parent[a] = (n + k, tree_lengths[k, 0])
        parent[b] = (n + k, tree_lengths[k, 1])

    def path(x):
        out, acc = {x: 0.0}, 0.0
        while x in parent:
            x, l = parent[x]
            acc += l
            out[x] = acc
        return out

    paths = [path(i) for i in range(n)]
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            common = set(paths[i]) & set(paths[j])
            d[i, j] = min(paths[i][c] + paths[j][c] for c in common)
    return d


def _splits(tree: GuideTree) -> set:
    n = tree.n_leaves
    order, start, stop = leaf_order(tree)
    out = set()
    for node in range(n, 2 * n - 1):
        side = frozenset(order[start[node]:stop[node]].tolist())
        other = frozenset(range(n)) - side
        if 1 < len(side) < n - 1:
            out.add(min(side, other, key=lambda s: sorted(s)))
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(4, 12), st.integers(0, 2**31 - 1))
def test_nj_recovers_additive_trees(n, seed):
    rng = np.random.default_rng(seed)
    # a random rooted tree with random positive lengths
    nodes = list(range(n))
    children, lengths = [], []
    nxt = n
    while len(nodes) > 1:
        a, b = rng.choice(len(nodes), 2, replace=False)
        children.append((nodes[a], nodes[b]))
        lengths.append(rng.uniform(0.05, 1.0, 2))
        nodes = [x for i, x in enumerate(nodes) if i not in (a, b)] + [nxt]
        nxt += 1
    truth = GuideTree(n, np.array(children), np.array(lengths))
    d = _additive(truth.lengths, truth.children, n)
    est = nj(DistanceMatrix(np.round(d, 12), "test"))
    assert _splits(est) == _splits(truth)
    assert np.allclose(_additive(est.lengths, est.children, n), d, atol=1e-9)


def test_upgma_matches_scipy_average_linkage():
    rng = np.random.default_rng(1)
    x = rng.random((9, 3))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    t = upgma(DistanceMatrix(d, "t"))
    z = linkage(squareform(d, checks=False), "average")
    assert np.array_equal(t.children, z[:, :2].astype(int))
    assert (t.lengths >= 0).all()


def test_weights_downweight_close_relatives():
    # leaves 0 and 1 nearly identical, 2 distant
    t = GuideTree(3, np.array([[0, 1], [2, 3]]), np.array([[0.01, 0.01], [1.0, 0.5]]))
    w = sequence_weights(t)
    assert w[2] == 1000 and w[0] == w[1] < w[2]
    # by hand: leaf 0 gets 0.01 + 0.5/2 = 0.26 against leaf 2's 1.0
    assert w[0] == round(0.26 / 1.0 * 1000)


def test_schedule_levels_respect_dependencies():
    t = GuideTree(5, np.array([[0, 1], [5, 2], [3, 4], [6, 7]]), np.ones((4, 2)))
    levels = [l.tolist() for l in merge_schedule(t).levels]
    assert levels == [[0, 2], [1], [3]]


def test_newick_quotes_awkward_names():
    t = GuideTree(2, np.array([[0, 1]]), np.array([[0.5, 0.25]]))
    assert to_newick(t, ["a b", "c"]) == "('a b':0.5,c:0.25);"


def test_guide_tree_rejects_bad_rows():
    with pytest.raises(ValueError):
        GuideTree(3, np.array([[0, 1], [1, 2]]), np.ones((2, 2)))


def _naive_mixed(d, share=0.1):
    """Oracle: the mixed linkage by brute force over the full matrix."""
    n = len(d)
    d = d.copy()
    np.fill_diagonal(d, np.inf)
    node = list(range(n))
    rows = []
    for k in range(n - 1):
        a, b = np.unravel_index(int(np.argmin(d)), d.shape)
        a, b = min(a, b), max(a, b)
        rows.append((node[a], node[b]))
        merged = share * (d[a] + d[b]) / 2 + (1 - share) * np.minimum(d[a], d[b])
        d[a, :] = merged
        d[:, a] = merged
        d[a, a] = np.inf
        d[b, :] = np.inf
        d[:, b] = np.inf
        node[a] = n + k
    return np.array(rows)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.integers(0, 2**31 - 1), st.booleans())
def test_mixed_linkage_matches_brute_force(n, seed, coarse):
    from msa_gpu.tree import mixed_linkage

    rng = np.random.default_rng(seed)
    x = rng.random((n, n))
    if coarse:  # many ties
        x = np.round(x * 3) / 3
    d = np.triu(x, 1) + np.triu(x, 1).T
    t = mixed_linkage(DistanceMatrix(d, "t"))
    assert np.array_equal(t.children, _naive_mixed(d))
    assert (t.lengths >= 0).all()
    from msa_gpu.tree.linkage_numba import mixed_linkage_rowmin
    from msa_gpu.tree.linkage import _mixed_linkage_dense

    rows, lengths = mixed_linkage_rowmin(d.copy(), 0.1)
    rows2, lengths2 = _mixed_linkage_dense(d.copy(), 0.1)
    assert np.array_equal(rows, rows2) and np.array_equal(lengths, lengths2)


def _clusters(children: np.ndarray, n: int) -> set:
    """The leaf sets of a tree's internal nodes (independent of node numbering)."""
    sets = [frozenset([i]) for i in range(n)]
    for a, b in children:
        sets.append(sets[int(a)] | sets[int(b)])
    return set(sets[n:])


@pytest.mark.parametrize("share, method", [(0.0, "single"), (1.0, "weighted")])
@settings(max_examples=20, deadline=None)
@given(n=st.integers(3, 300), seed=st.integers(0, 2**31 - 1))
def test_mixed_linkage_extremes_match_scipy(share, method, n, seed):
    """With all weight on the minimum it is single linkage, with all on the
    average of the two parts it is WPGMA: SciPy's, an independent oracle
    (both the dense path and, above 256 leaves, the numba path)."""
    from msa_gpu.tree import mixed_linkage

    rng = np.random.default_rng(seed)
    x = rng.random((n, 4))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    d = np.minimum(d, d.T)
    ours = mixed_linkage(DistanceMatrix(d, "t"), average_share=share)
    ref = linkage(squareform(d, checks=False), method=method)
    assert _clusters(ours.children, n) == _clusters(ref[:, :2].astype(int), n)


def test_numba_upgma_merges_as_scipy_does(monkeypatch):
    """From `UPGMA_NUMBA_MIN` sequences UPGMA runs in numba: on distances
    without ties it merges the same pairs in the same order as SciPy's."""
    from scipy.spatial.distance import pdist, squareform

    from msa_gpu.tree import linkage as tree_mod

    rng = np.random.default_rng(2)
    d = DistanceMatrix(squareform(pdist(rng.random((300, 6)))), "x")
    monkeypatch.setattr(tree_mod, "UPGMA_NUMBA_MIN", 2)
    fast = tree_mod.upgma(d)
    monkeypatch.setattr(tree_mod, "UPGMA_NUMBA_MIN", 10**9)
    slow = tree_mod.upgma(d)
    assert np.array_equal(fast.children, slow.children)
    assert np.allclose(fast.lengths, slow.lengths, rtol=0, atol=1e-12)


def test_trees_built_on_threads_are_the_sequential_ones():
    from scipy.spatial.distance import pdist, squareform

    from msa_gpu.aligner import Aligner
    from msa_gpu.backend import cpu_backend
    from msa_gpu.settings.config import AlignerConfig

    rng = np.random.default_rng(3)
    dms = [DistanceMatrix(squareform(pdist(rng.random((n, 5)))), "x") for n in (300, 520, 40, 700)]
    from msa_gpu.recipe import recipe_from

    config = AlignerConfig()
    aligner = Aligner(config, backend=cpu_backend())
    recipes = [recipe_from(config, len(d), 300.0, 300) for d in dms]  # mixed linkage, and FAMSA's from 500
    assert [r.tree for r in recipes] == ["mixed", "single", "mixed", "single"]
    threaded = list(aligner.trees(dms, recipes))  # this machine's CPUs, at least 2 threads on CI
    assert len(threaded) == len(dms)
    for t, d, r in zip(threaded, dms, recipes):
        a = aligner.tree(d, r)
        assert np.array_equal(t.children, a.children) and np.array_equal(t.lengths, a.lengths)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(257, 400), seed=st.integers(0, 2**31 - 1))
def test_single_linkage_through_the_spanning_tree_matches_scipy(n, seed):
    """From `DENSE_MAX` sequences single linkage goes through Prim's spanning
    tree: the same clusters at the same heights as SciPy's single linkage, and
    the matrix is left as it was (it is read, not copied)."""
    from msa_gpu.tree import single_linkage

    rng = np.random.default_rng(seed)
    x = rng.random((n, 4))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    d = np.minimum(d, d.T)
    dm = DistanceMatrix(d, "t")
    before = dm.values.copy()
    ours = single_linkage(dm)
    ref = linkage(squareform(d, checks=False), method="single")
    assert _clusters(ours.children, n) == _clusters(ref[:, :2].astype(int), n)
    heights = np.concatenate([np.zeros(n), np.zeros(n - 1)])
    for k, (a, b) in enumerate(ours.children):
        heights[n + k] = heights[a] + ours.lengths[k, 0]
        assert heights[n + k] == pytest.approx(heights[b] + ours.lengths[k, 1])
    assert np.allclose(np.sort(heights[n:]), np.sort(ref[:, 2] / 2.0))
    assert np.array_equal(dm.values, before)
