"""FAMSA 2's LCS guide-tree distances: bit-parallel LCS against the textbook
DP, and the distance formula by hand (CPU = GPU: tests/test_parity.py)."""

import numpy as np
import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distances.lcs import NO_COMMON, lcs_distance, lcs_lengths
from msa_gpu.io import make_sequences


def _lcs_dp(a: str, b: str) -> int:
    d = np.zeros((len(a) + 1, len(b) + 1), int)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            d[i + 1, j + 1] = d[i, j] + 1 if x == y else max(d[i, j + 1], d[i + 1, j])
    return int(d[-1, -1])


def _family(seed: int, n: int = 14):
    rng = np.random.default_rng(seed)
    letters = list("ACDEFGHIKLW")
    # lengths across word boundaries (63, 64, 65, 128, 129) and several words
    raw = ["".join(rng.choice(letters, int(k))) for k in rng.choice([1, 5, 63, 64, 65, 128, 129, 200, 300], n)]
    raw += ["A" * 64, "AC" * 65, "W"]
    return make_sequences([f"s{i}" for i in range(len(raw))], [r.encode() for r in raw], "protein"), raw


@pytest.mark.parametrize("seed", range(3))
def test_bit_parallel_lcs_equals_the_textbook_dp(seed):
    seqs, raw = _family(seed)
    got = lcs_lengths(seqs)
    want = np.array([[_lcs_dp(a, b) for b in raw] for a in raw])
    assert np.array_equal(got, want)


def test_distance_is_famsas_indel_075_over_lcs():
    seqs = make_sequences(["a", "b", "c"], [b"ACDEFG", b"ACEFGH", b"WWW"], "protein")
    d = lcs_distance(seqs).values
    # LCS(ACDEFG, ACEFGH) = 5 (ACEFG); indel = 6 + 6 - 10 = 2
    assert d[0, 1] == d[1, 0] == pytest.approx(2 ** 0.75 / 5)
    assert d[0, 2] == d[1, 2] == NO_COMMON  # no residue in common
    assert np.all(np.diag(d) == 0.0)


def test_lcs_distance_drives_a_single_linkage_tree():
    """distance=lcs with tree=single joins the two near-identical sequences first."""
    seqs = make_sequences(["a", "b", "c", "d"], [b"MKVLAAGIW", b"MKVLAAGIF", b"PPQRSTPPQ", b"MKVAAGW"], "protein")
    res = Aligner(AlignerConfig(mode="fast", distance="lcs", tree="single", retree=0), backend=cpu_backend()).align(seqs)
    assert res.distances.method == "lcs"
    assert sorted(res.guide_tree.children[0].tolist()) == [0, 1]


def _spanning_family(seed: int, n: int = 300):
    """n mutants of one sequence, some cut short, and 20 repeats (ties)."""
    rng = np.random.default_rng(seed)
    letters = list("ACDEFGHIKLMNPQRSTVWY")
    base = rng.choice(letters, 90)
    raw = []
    for i in range(n):
        s = base.copy()
        hits = rng.integers(0, len(s), rng.integers(0, 30))
        s[hits] = rng.choice(letters, len(hits))
        raw.append("".join(s[: rng.integers(10, 90)] if i % 7 == 0 else s))
    raw += raw[:20]
    return make_sequences([f"s{i}" for i in range(len(raw))], [r.encode() for r in raw], "protein")


def test_spanning_tree_without_a_matrix_is_the_matrix_paths_tree():
    """FAMSA's tree straight from the LCS distances (Prim, each row computed
    when its sequence joins) equals single linkage over the whole matrix:
    the same children and branch lengths, ties included."""
    from msa_gpu.tree import lcs_single_linkage, single_linkage

    seqs = _spanning_family(4)
    got = lcs_single_linkage(seqs)
    want = single_linkage(lcs_distance(seqs))
    assert np.array_equal(got.children, want.children)
    assert np.array_equal(got.lengths, want.lengths)


def test_default_tree_of_a_large_family_makes_no_matrix(monkeypatch):
    """From 500 sequences (lcs_min_seqs) the CLI's default builds FAMSA's tree with
    no N x N matrix: lcs_distance is never called, and the tree and the
    alignment are those along the matrix path's single-linkage tree."""
    import msa_gpu.pipeline.builders as aligner_mod
    from msa_gpu.tree import single_linkage

    seqs = _spanning_family(5, 480)
    cfg = AlignerConfig(mode="fast", backend="cpu", dedupe=False, keep_distances=False)  # as the CLI runs
    assert Aligner(cfg).plan([seqs])[0].spanning
    want_tree = single_linkage(lcs_distance(seqs))
    want = Aligner(cfg, backend=cpu_backend()).align(seqs, guide_tree=want_tree)
    monkeypatch.setattr(aligner_mod, "lcs_distance", lambda *a: pytest.fail("an N x N matrix was made"))
    res = Aligner(cfg, backend=cpu_backend()).align(seqs)
    assert res.distances is None
    assert np.array_equal(res.guide_tree.children, want_tree.children)
    assert res.rows() == want.rows()
