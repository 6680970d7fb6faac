"""The large-family path: k-mer sets, pivot distances, the partition tree,
mode large end to end, streamed output, and the synthetic generator."""

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.synthetic import evolve_family, write_family
from msa_gpu.aligner import Aligner
from msa_gpu.alphabet import DAYHOFF6
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig, Mode
from msa_gpu.distances import kmer_distance, kmer_ids, kmer_sets, pivot_distances
from msa_gpu.io import (
    OutFormat,
    make_sequences,
    read_aligned,
    read_core,
    read_sequences,
    render_alignment,
    stream_fasta,
)
from msa_gpu.accuracy import sp_tc
from msa_gpu.tree import mixed_linkage, sequence_weights, weight_top
from msa_gpu.tree.partition import cluster_distances, partition_tree

CPU = cpu_backend()
protein = st.text("ACDEFGHIKLMNPQRSTVWY", min_size=1, max_size=40)


def _family(n=300, length=120, seed=3):
    fam = evolve_family(n, length, seed=seed)
    return fam, make_sequences(fam.names, fam.sequences, "protein")


@settings(max_examples=30, deadline=None)
@given(st.lists(protein, min_size=2, max_size=12))
def test_kmer_sets_are_each_sequences_distinct_kmers(texts):
    seqs = make_sequences([f"s{i}" for i in range(len(texts))], [t.encode() for t in texts], "protein")
    km = kmer_sets(seqs)
    for i, codes in enumerate(seqs.codes):
        want = np.unique(kmer_ids(codes.astype(np.int64), DAYHOFF6, km.k))
        assert km.ids[km.offsets[i]: km.offsets[i + 1]].tolist() == want.tolist()


@settings(max_examples=20, deadline=None)
@given(st.lists(protein, min_size=2, max_size=12), st.integers(1, 5))
def test_pivot_and_cluster_distances_equal_the_full_matrix(texts, p):
    seqs = make_sequences([f"s{i}" for i in range(len(texts))], [t.encode() for t in texts], "protein")
    full = kmer_distance(seqs).values
    km = kmer_sets(seqs)
    pivots = np.arange(min(p, len(seqs)))
    members = np.arange(len(seqs))
    assert np.array_equal(pivot_distances(km, members, pivots), full[:, pivots])
    assert np.array_equal(cluster_distances(km, members), full)


def test_partition_tree_of_one_cluster_is_the_ordinary_tree():
    _, seqs = _family(120)
    km = kmer_sets(seqs)
    got = partition_tree(km, seqs.lengths, cluster_size=len(seqs))
    want = mixed_linkage(kmer_distance(seqs))
    assert np.array_equal(got.children, want.children)


def test_partition_tree_is_a_deterministic_binary_tree():
    _, seqs = _family(400)
    km = kmer_sets(seqs)
    a = partition_tree(km, seqs.lengths, n_pivots=8, cluster_size=30)
    b = partition_tree(km, seqs.lengths, n_pivots=8, cluster_size=30)
    assert a.n_leaves == 400 and np.array_equal(a.children, b.children)
    assert (a.lengths >= 0).all()


def test_partition_tree_with_identical_sequences_halves():
    seqs = make_sequences([f"s{i}" for i in range(50)], [b"MKVLAWTRESQ"] * 50, "protein")
    tree = partition_tree(kmer_sets(seqs), seqs.lengths, n_pivots=4, cluster_size=5)
    assert tree.n_leaves == 50


def test_large_mode_aligns_a_synthetic_family_against_its_truth(tmp_path):
    fam, seqs = _family(300)
    path = write_family(fam, tmp_path, "syn300", ref_size=60)
    cfg = AlignerConfig(backend="cpu", mode="large", large_cluster=40, large_pivots=12)
    res = Aligner(cfg, backend=CPU).align(read_sequences(path))
    res.alignment.check(seqs)
    assert res.distances is None and res.timings["large_tree"] > 0
    names, ref = read_aligned(path.with_suffix(".ref.fa"))
    score = sp_tc(list(seqs.names), res.rows(), names, ref, read_core(path.with_suffix(".core")))
    fast = Aligner(AlignerConfig(backend="cpu", mode="fast"), backend=CPU).align(seqs)
    fast_score = sp_tc(list(seqs.names), fast.rows(), names, ref, read_core(path.with_suffix(".core")))
    assert score.sp > 0.6 and score.sp > fast_score.sp - 0.15
    again = Aligner(cfg, backend=CPU).align(seqs)
    assert again.rows() == res.rows()


def test_auto_takes_the_large_path_from_its_threshold():
    _, seqs = _family(60, 80)
    res = Aligner(AlignerConfig(backend="cpu", large_min_seqs=50, large_cluster=10), backend=CPU).align(seqs)
    assert res.distances is None and res.timings["large_tree"] > 0


def test_weights_shrink_for_very_large_families():
    assert weight_top(8388) == 1000 and weight_top(20000) == 419 and weight_top(10 ** 7) == 1
    _, seqs = _family(30, 60)
    tree = mixed_linkage(kmer_distance(seqs))
    assert sequence_weights(tree).max() == 1000


def test_streamed_fasta_equals_biopythons():
    """msagpu's own FASTA writer (streamed, and behind `render_alignment`)
    gives Biopython's text, full names with spaces included."""
    from Bio import SeqIO
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    _, seqs = _family(40, 70)
    res = Aligner(AlignerConfig(backend="cpu", mode="fast"), backend=CPU).align(seqs)
    names = [f"{n} sample {i}" if i % 3 == 0 else n for i, n in enumerate(seqs.names)]
    out, bio = io.StringIO(), io.StringIO()
    stream_fasta(out, names, res.alignment.iter_rows(seqs))
    SeqIO.write([SeqRecord(Seq(r.decode()), id=n, description="") for n, r in zip(names, res.rows())], bio, "fasta")
    assert out.getvalue() == bio.getvalue() == render_alignment(names, res.rows(), OutFormat.fasta)
    assert max(len(line) for line in bio.getvalue().splitlines() if not line.startswith(">")) == 60


def test_cli_large_mode_writes_the_plan_and_the_alignment(tmp_path):
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    fam, _ = _family(80, 60)
    path = write_family(fam, tmp_path, "syn80", ref_size=20)
    out = tmp_path / "out.fa"
    r = CliRunner().invoke(app, ["align", str(path), "-o", str(out), "--mode", "large", "--backend", "cpu"])
    assert r.exit_code == 0, r.output
    assert "memory plan" in r.output and ": large, k-mer distances to pivots, partition tree" in r.output
    names, rows = read_aligned(out)
    assert names == fam.names and len({len(x) for x in rows}) == 1


def test_synthetic_reference_holds_the_sampled_sequences():
    fam = evolve_family(200, 100, seed=5)
    names, rows = fam.reference(30, seed=1)
    assert len(names) == 30 and len({len(r) for r in rows}) == 1
    cols = np.array([np.frombuffer(r, dtype=np.uint8) for r in rows])
    assert not (cols == ord("-")).all(axis=0).any()  # no all-gap column
    for n, r in zip(names, rows):
        assert r.replace(b"-", b"") == fam.sequences[fam.names.index(n)]


@pytest.mark.gpu
def test_large_mode_gpu_equals_cpu():
    from msa_gpu.backend import gpu_backend

    fam, seqs = _family(5000, 100, seed=7)  # enough for the GPU's pivot product (GPU_MIN_SEQS)
    cfg = AlignerConfig(mode="large", large_cluster=50)
    gpu = Aligner(cfg, backend=gpu_backend()).align(seqs)
    cpu = Aligner(cfg, backend=CPU).align(seqs)
    assert np.array_equal(gpu.guide_tree.children, cpu.guide_tree.children)
    assert gpu.rows() == cpu.rows()


def test_kmer_sets_in_chunks_equal_one_pass(monkeypatch):
    from msa_gpu.distances import kmer_index as embed

    _, seqs = _family(200, 90)
    whole = kmer_sets(seqs)
    monkeypatch.setattr(embed, "KMER_CHUNK", 1000)
    parts = kmer_sets(seqs)
    assert np.array_equal(whole.ids, parts.ids) and np.array_equal(whole.offsets, parts.offsets)


def test_large_synthetic_benchmark_writes_its_table(tmp_path):
    import json

    from benchmarks.__main__ import main

    rc = main(["large", "synthetic", "--sizes", "150", "--famsa-max", "0", "--backend", "cpu",
               "--out", str(tmp_path / "res"), "--work", str(tmp_path / "work"), "--tag", "t"])
    assert rc == 0
    doc = json.loads((tmp_path / "res" / "t-large-synthetic.json").read_text())
    (row,) = doc["rows"]
    assert row["ok"] and row["n"] == 150 and 0.5 < row["sp"] <= 1.0 and row["columns"] >= 1
    assert "msagpu large" in (tmp_path / "res" / "t-large-synthetic.md").read_text()


def test_auto_tree_is_mixed_for_small_and_famsas_for_large_families():
    """auto: k-mer distances and mixed linkage below 500 sequences; from 500,
    FAMSA's LCS distances and single linkage, never rebuilt; UPGMA where the
    distances are k-mers by choice."""
    from msa_gpu.distances import lcs_distance
    from msa_gpu.tree import single_linkage, upgma

    _, seqs = _family(60, 80)
    got = Aligner(AlignerConfig(backend="cpu", mode="fast", lcs_min_seqs=50), backend=CPU).align(seqs)
    assert np.array_equal(got.guide_tree.children, single_linkage(lcs_distance(seqs)).children)  # retree=1 skipped
    got = Aligner(AlignerConfig(backend="cpu", mode="fast", retree=0, distance="kmer", upgma_min_seqs=50),
                  backend=CPU).align(seqs)
    assert np.array_equal(got.guide_tree.children, upgma(kmer_distance(seqs)).children)


def test_kmer_sets_with_a_last_chunk_shorter_than_k(monkeypatch):
    from msa_gpu.distances import kmer_index as embed

    seqs = make_sequences(["a", "b", "c"], [b"MKVLAWTRESQWERTYIPAS", b"MKVLAWTRESQWERTYIPAD", b"MKVL"], "protein")
    whole = kmer_sets(seqs)
    monkeypatch.setattr(embed, "KMER_CHUNK", 20)
    parts = kmer_sets(seqs)
    assert np.array_equal(whole.ids, parts.ids) and parts.distinct.tolist()[2] == 0


def test_large_path_offset_keeps_unrelated_short_sequences_narrow():
    """Under the flat gap model, 600 random 10-residue sequences without the
    large path's matrix offset spread over 2,652 columns (each merge keeps the
    other side's columns apart); with it they take a few dozen. The count
    model (the default here) keeps them narrow with or without the offset: a
    residue facing the other side's gaps pays their own gap costs."""
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    raw = [bytes(letters[rng.integers(0, 20, 10)]) for _ in range(600)]
    seqs = make_sequences([f"r{i}" for i in range(600)], raw, "protein")

    def width(**kw) -> int:
        return Aligner(AlignerConfig(backend="cpu", mode="large", **kw)).align(seqs).alignment.n_cols

    narrow = width(gap_model="flat")
    wide = width(gap_model="flat", large_matrix_offset=0.0)
    assert narrow < 100 < 1000 < wide
    assert width(gap_model="flat", matrix_offset=0.0) == wide  # an explicit matrix_offset wins
    assert width() < 100 and width(large_matrix_offset=0.0) < 100


def test_refinement_builds_no_cuts_for_a_large_family_in_a_batch(monkeypatch):
    """A large family beside small accurate ones: refinement cuts only the
    small ones (the cuts of a 30,000-sequence family are 60,000 x 30,000 and
    took a 30k + 200 batch past 24 GB)."""
    from msa_gpu.refine import bipartitions as refine

    sizes = []
    real = refine.tree_splits
    monkeypatch.setattr(refine, "tree_splits", lambda tree: sizes.append(tree.n_leaves) or real(tree))
    big = evolve_family(320, 60, seed=6)
    small = [evolve_family(6, 50, seed=20 + i) for i in range(3)]
    families = [make_sequences(f.names, f.sequences, "protein") for f in [big, *small]]
    cfg = AlignerConfig(backend="cpu", large_min_seqs=300, maxiterate=2)
    res = Aligner(cfg).align_many(families)
    assert len(res) == 4 and sizes and max(sizes) <= 6
