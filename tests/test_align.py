import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distances import kmer_distance
from msa_gpu.io import make_sequences, read_aligned, read_core, read_sequences
from msa_gpu.pipeline import builders
from msa_gpu.accuracy import sp_tc
from msa_gpu.tree import upgma

CPU = cpu_backend()


def _check(seqs, result):
    rows = result.rows()
    assert len({len(r) for r in rows}) == 1
    for raw, row in zip(seqs.raw, rows):
        assert row.replace(b"-", b"") == raw
    result.alignment.check(seqs)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text("ACDEFGHIKLMNPQRSTVWYacgt", min_size=1, max_size=60), min_size=1, max_size=12),
       st.sampled_from(["upgma", "nj"]))
def test_alignment_invariants(texts, tree):
    # protein letters (and a few lower-case a/c/g/t): said so, since mostly-ACGT draws such as
    # ["A", "AE", "AAAA"] are detected as nucleotide and then rightly rejected for the E
    seqs = make_sequences([f"s{i}" for i in range(len(texts))], [t.encode() for t in texts], "protein")
    _check(seqs, Aligner(AlignerConfig(tree=tree), backend=CPU).align(seqs))


def test_identical_sequences_align_without_gaps():
    seqs = make_sequences(["a", "b", "c"], [b"MKVLAAGIVG"] * 3)
    assert Aligner(backend=CPU).align(seqs).rows() == [b"MKVLAAGIVG"] * 3


def test_single_sequence():
    seqs = make_sequences(["a"], [b"ACGT"])
    assert Aligner(backend=CPU).align(seqs).rows() == [b"ACGT"]


def test_deletion_is_placed_as_one_gap():
    seqs = make_sequences(["a", "b", "c"], [b"MKTAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQISFVKSHFSRQ", b"MKTAYIAKQRQISFVKSHFSRQ"])
    rows = Aligner(backend=CPU).align(seqs).rows()
    assert rows[1].count(b"-") == 2 and b"--" in rows[1]


def test_dna_alignment():
    seqs = make_sequences(["a", "b"], [b"ACGTACGTTTGACCA", b"ACGTACGTGACCA"])
    rows = Aligner(backend=CPU).align(seqs).rows()
    assert seqs.seqtype.value == "dna"
    assert rows[0] == b"ACGTACGTTTGACCA" and rows[1].replace(b"-", b"") == b"ACGTACGTGACCA"


def test_injected_tree_and_distances_are_used(refs):
    seqs = read_sequences(refs / "BB11001.tfa")
    dm = kmer_distance(seqs)
    tree = upgma(dm)
    res = Aligner(backend=CPU).align(seqs, guide_tree=tree)
    assert res.guide_tree is tree
    res2 = Aligner(AlignerConfig(retree=0), backend=CPU).align(seqs, distances=dm)
    assert res2.distances is dm


def test_deterministic(refs):
    seqs = read_sequences(refs / "BB11001.tfa")
    a = Aligner(backend=CPU).align(seqs).rows()
    b = Aligner(backend=CPU).align(seqs).rows()
    assert a == b


@pytest.mark.parametrize("family, min_sp", [("BB11001", 0.97), ("BB12006", 0.97), ("BB20001", 0.57)])
def test_quality_on_bundled_balibase(refs, family, min_sp):
    """Floors set below measured values; a regression in scoring or
    traceback falls through them. references/README.md's table gives the
    same figures as the defaults do (it once gave BB11001 as 0.816 / 0.632
    where `make run` printed 1.0000)."""
    import re

    seqs = read_sequences(refs / f"{family}.tfa")
    res = Aligner(backend=CPU).align(seqs)
    names, rows = read_aligned(refs / f"{family}.ref.fa")
    s = sp_tc(list(seqs.names), res.rows(), names, rows, read_core(refs / f"{family}.core"))
    assert s.sp >= min_sp
    row = re.search(rf"^\| {family} \|.*\| ([0-9.]+) / ([0-9.]+) \|$", (refs / "README.md").read_text(), re.M)
    assert row is not None and (row[1], row[2]) == (f"{s.sp:.3f}", f"{s.tc:.3f}"), (family, s)


def test_long_path_matches_standard_path(refs):
    """Checkpointed banded DP (long_cells=0 sends every merge there) gives the
    same alignments as the full-matrix DP."""
    rng = np.random.default_rng(3)
    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    for i in range(4):
        base = rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 400)
        raw = []
        for _ in range(int(rng.integers(2, 9))):
            s = base.copy()
            s[rng.random(400) < 0.3] = "W"
            raw.append("".join(s[rng.random(400) > 0.1]).encode())
        fams.append(make_sequences([f"s{j}" for j in range(len(raw))], raw))
    standard = Aligner(AlignerConfig(mode="fast"), backend=CPU).align_many(fams)
    banded = Aligner(AlignerConfig(long_cells=0, mode="fast"), backend=CPU).align_many(fams)
    assert [r.rows() for r in standard] == [r.rows() for r in banded]


def test_memory_bounded_batches_give_the_same_alignments(refs):
    """A tiny memory budget splits every level into one-pair batches."""
    from msa_gpu.progressive import FamilyJob, merge_schedule, progressive_align
    from msa_gpu.tree import sequence_weights

    aligner = Aligner(AlignerConfig(retree=0), backend=CPU)
    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    jobs = []
    for seqs in fams:
        tree = upgma(kmer_distance(seqs))
        jobs.append(FamilyJob(seqs, tree, merge_schedule(tree), sequence_weights(tree),
                              aligner.scoring(seqs, aligner.plan([seqs])[0])))
    whole = progressive_align(jobs, CPU)
    split = progressive_align(jobs, CPU, memory_budget=1)
    assert all(np.array_equal(a.trace, b.trace) for a, b in zip(whole, split))


def test_dense_and_sparse_kmer_counts_agree(monkeypatch):
    from msa_gpu.distances import kmer as distance

    rng = np.random.default_rng(9)
    raw = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(rng.integers(10, 80)))).encode() for _ in range(30)]
    seqs = make_sequences([f"s{i}" for i in range(30)], raw)
    dense = distance.kmer_distance(seqs).values
    monkeypatch.setattr(distance, "GPU_MIN_SEQS", 1)
    assert np.array_equal(dense, distance.kmer_distance(seqs).values)


def test_large_families_skip_the_tree_rebuild(refs):
    seqs = read_sequences(refs / "BB20001.tfa")
    capped = Aligner(AlignerConfig(retree_max_seqs=len(seqs) - 1, mode="fast"), backend=CPU).align(seqs)
    once = Aligner(AlignerConfig(retree=0, mode="fast"), backend=CPU).align(seqs)
    twice = Aligner(AlignerConfig(mode="fast"), backend=CPU).align(seqs)
    assert capped.rows() == once.rows() and capped.distances.method.startswith("kmer")
    assert twice.distances.method == "identity"


def test_one_short_sequence_leaves_the_others_distances_alone(refs):
    seqs = read_sequences(refs / "BB20001.tfa")
    more = make_sequences(list(seqs.names) + ["short"], list(seqs.raw) + [b"MKV"])
    a, b = kmer_distance(seqs).values, kmer_distance(more).values
    assert np.array_equal(a, b[:-1, :-1]) and (b[-1, :-1] == 1.0).all()


def test_batches_never_exceed_the_launch_limit(monkeypatch):
    from msa_gpu.progressive import driver as progressive

    monkeypatch.setattr(progressive, "MAX_BATCH_PAIRS", 3)
    chunks = progressive.batch_chunks(np.ones(8, dtype=np.int64), np.zeros(8, bool), 1 << 30)
    assert [len(c) for c in chunks] == [3, 3, 2] and np.array_equal(np.concatenate(chunks), np.arange(8))


def test_matrices_beyond_biopython_come_from_scoring_matrices():
    """PFASUM and VTML (FAMSA's and MUSCLE's matrices) are not in Biopython:
    they are read from the scoring-matrices package; unknown names still fail."""
    sm = pytest.importorskip("scoring_matrices")
    from msa_gpu.scoring import SCALE, matrix_fixed

    m = matrix_fixed("PFASUM43", "ARNDW")
    ref = sm.ScoringMatrix.from_name("PFASUM43")
    a = ref.alphabet
    assert m[4, 4] == round(list(ref)[a.index("W")][a.index("W")] * SCALE)
    assert m[0, 1] == round(list(ref)[a.index("A")][a.index("R")] * SCALE)
    with pytest.raises(ValueError, match="unknown substitution matrix"):
        matrix_fixed("NOSUCH62", "ARND")


def test_kmer_distances_on_the_device_path_match_the_host_path():
    """The GPU path's k-mer distances (the large path's k-mer sets and dense
    block products, run here with NumPy) equal the per-sequence host path,
    bit for bit; sequences shorter than k share nothing."""
    from msa_gpu.distances import kmer as distance

    rng = np.random.default_rng(13)
    raw = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(rng.integers(3, 90)))).encode() for _ in range(40)]
    raw[5] = raw[6][:30]  # a fragment of a neighbour
    seqs = make_sequences([f"s{i}" for i in range(40)], raw)
    want = distance.kmer_distance(seqs).values
    got = distance._kmer_distances_on(seqs, 6, np)
    assert np.array_equal(want, got) and got[5, 6] < 1.0
    nuc = make_sequences(["a", "b", "c"], [b"ACGTACGTAC", b"ACGTACG", b"TTTT"])
    assert np.array_equal(distance.kmer_distance(nuc).values, distance._kmer_distances_on(nuc, 6, np))


def test_dropped_distances_give_the_same_alignments_and_hold_few_matrices(monkeypatch):
    """keep_distances=False (the CLI's batch mode): the same alignments, no
    matrices in the results, and with a one-matrix budget no more than two
    matrices alive at once (one being built into a tree, one just computed)."""
    import gc
    import weakref

    from benchmarks.synthetic import evolve_family

    fams = [make_sequences(f.names, f.sequences, "protein")
            for f in (evolve_family(n, 40, seed=60 + n) for n in (40, 55, 30, 48))]
    cfg = dict(backend="cpu", mode="fast", retree=0)
    kept = Aligner(AlignerConfig(**cfg), backend=CPU).align_many(fams)
    made, most, real = [], [0], builders.distances

    def counted(context, seqs, recipe):
        gc.collect()
        dm = real(context, seqs, recipe)
        made.append(weakref.ref(dm))
        most[0] = max(most[0], sum(r() is not None for r in made))
        return dm

    monkeypatch.setattr(builders, "distances", counted)
    dropped = Aligner(AlignerConfig(**cfg, keep_distances=False, tree_memory=1), backend=CPU).align_many(fams)
    assert [r.rows() for r in dropped] == [r.rows() for r in kept]
    assert all(r.distances is None for r in dropped) and all(r.distances is not None for r in kept)
    assert 1 <= most[0] <= 2, most
