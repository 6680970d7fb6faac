"""Backend parity: the GPU must give exactly what the CPU gives.

Runs only where a GPU is usable (MSAGPU_REQUIRE_GPU=1 makes a missing GPU a
failure instead of a skip)."""

import numpy as np
import pytest
from test_dp import random_batch

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend, gpu_backend, probe_gpu
from msa_gpu.config import AlignerConfig
from msa_gpu.io import make_sequences, read_sequences

pytestmark = pytest.mark.gpu


def _gpu():
    ok, reason = probe_gpu()
    if not ok:
        pytest.fail(f"GPU required: {reason}")
    return gpu_backend()


def random_family(rng, n, lo, hi, letters):
    base = rng.choice(list(letters), hi)
    out = []
    for _ in range(n):
        s = base.copy()
        mut = rng.random(hi) < 0.3
        s[mut] = rng.choice(list(letters), mut.sum())
        keep = rng.random(hi) > 0.15
        s = s[keep][: rng.integers(lo, hi + 1)]
        out.append("".join(s).encode() or b"A")
    return out


@pytest.mark.parametrize("seed", range(6))
def test_dp_kernel_matches_cpu_twin(seed):
    import cupy as cp

    from msa_gpu.backend import cpu, gpu

    rng = np.random.default_rng(seed)
    sizes = [tuple(rng.integers(0, 700, 2)) for _ in range(20)] + [(1, 1), (0, 5), (700, 1)]
    batch = random_batch(rng, sizes)
    want = cpu.align_batch(batch)
    dev = type(batch)(*(cp.asarray(x) for x in batch.__dict__.values()))
    got = [x.get() for x in gpu.align_batch(dev)]
    assert np.array_equal(want[2], got[2])  # scores
    assert np.array_equal(want[1], got[1])  # path lengths
    for off, ln in zip(batch.path_off, want[1]):
        assert np.array_equal(want[0][off: off + ln], got[0][off: off + ln])


@pytest.mark.parametrize("seed", range(8))
def test_alignments_identical_random(seed):
    rng = np.random.default_rng(100 + seed)
    letters = "ACGT" if seed % 2 else "ACDEFGHIKLMNPQRSTVWY"
    raw = random_family(rng, int(rng.integers(2, 40)), 5, int(rng.integers(20, 400)), letters)
    seqs = make_sequences([f"s{i}" for i in range(len(raw))], raw)
    for cfg in (AlignerConfig(tree="upgma", mode="fast"), AlignerConfig(tree="nj", mode="fast", maxiterate=3),
                AlignerConfig(mode="accurate", maxiterate=5)):
        a = Aligner(cfg, backend=cpu_backend()).align(seqs)
        b = Aligner(cfg, backend=gpu_backend()).align(seqs)
        assert a.rows() == b.rows()
        assert np.array_equal(a.guide_tree.children, b.guide_tree.children)


def test_alignments_identical_references(refs):
    for tfa in sorted(refs.glob("*.tfa")):
        seqs = read_sequences(tfa)
        a = Aligner(AlignerConfig(), backend=cpu_backend()).align(seqs)
        b = Aligner(AlignerConfig(), backend=_gpu()).align(seqs)
        assert a.rows() == b.rows(), tfa.name


def test_accurate_libraries_identical(refs):
    """The library's extension gives the same entries on the GPU."""
    from msa_gpu.consistency import build_libraries

    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    a = build_libraries(fams, backend=cpu_backend())
    b = build_libraries(fams, backend=_gpu())
    for x, y in zip(a, b):
        for name in ("pair_off", "x", "y", "w"):
            assert np.array_equal(getattr(x, name), getattr(y, name).get()), name


def test_accurate_batch_identical(refs):
    """Accurate mode (library, consistency scores, refinement) and fast mode
    with refinement, several families in one batch."""
    rng = np.random.default_rng(17)
    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    for i in range(4):
        raw = random_family(rng, int(rng.integers(3, 30)), 5, int(rng.integers(20, 300)),
                            "ACGT" if i % 2 else "ACDEFGHIKLMNPQRSTVWY")
        fams.append(make_sequences([f"s{j}" for j in range(len(raw))], raw))
    for cfg in (AlignerConfig(mode="accurate"), AlignerConfig(mode="fast", maxiterate=4),
                AlignerConfig(mode="fast", maxiterate=3, refine_cuts=5, weights="equal")):
        a = Aligner(cfg, backend=cpu_backend()).align_many(fams)
        b = Aligner(cfg, backend=_gpu()).align_many(fams)
        assert [r.rows() for r in a] == [r.rows() for r in b]


def test_batch_mode_identical(refs):
    rng = np.random.default_rng(7)
    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    for i in range(6):
        raw = random_family(rng, int(rng.integers(2, 30)), 5, int(rng.integers(20, 300)),
                            "ACGT" if i % 2 else "ACDEFGHIKLMNPQRSTVWY")
        fams.append(make_sequences([f"s{j}" for j in range(len(raw))], raw))
    a = Aligner(AlignerConfig(), backend=cpu_backend()).align_many(fams)
    b = Aligner(AlignerConfig(), backend=_gpu()).align_many(fams)
    assert [r.rows() for r in a] == [r.rows() for r in b]


def test_long_kernel_matches_cpu(refs):
    """The GPU's checkpointed kernel (every merge forced there) against the
    CPU's full-matrix DP."""
    fams = [read_sequences(t) for t in sorted(refs.glob("*.tfa"))]
    rng = np.random.default_rng(11)
    fams += [make_sequences(["a", "b", "c"], random_family(rng, 3, 900, 1500, "ACDEFGHIKLMNPQRSTVWY"))]
    a = Aligner(AlignerConfig(mode="fast"), backend=cpu_backend()).align_many(fams)
    b = Aligner(AlignerConfig(long_cells=0, mode="fast"), backend=_gpu()).align_many(fams)
    assert [r.rows() for r in a] == [r.rows() for r in b]


def test_distances_identical_on_both_array_modules(refs, monkeypatch):
    """The k-mer and identity counts give the same distances with CuPy as
    with NumPy (forced past the small-input threshold)."""
    import cupy

    from msa_gpu.distances import alignment_distance, kmer
    from msa_gpu.progressive import alignment_codes

    seqs = read_sequences(refs / "BB20001.tfa")
    aln = Aligner(AlignerConfig(), backend=cpu_backend()).align(seqs).alignment
    want = kmer.kmer_distance(seqs, np).values, alignment_distance(alignment_codes(seqs, aln), 23, np).values
    monkeypatch.setattr(kmer, "GPU_MIN_SEQS", 1)  # (alignment_distance takes the same threshold)
    got = kmer.kmer_distance(seqs, cupy).values, alignment_distance(alignment_codes(seqs, aln), 23, cupy).values
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])


def test_wide_profiles_use_global_scratch_identically():
    """Profiles over 1,755 columns do not fit shared memory: the DP keeps its
    wavefront in global scratch."""
    rng = np.random.default_rng(21)
    seqs = make_sequences(["a", "b", "c"], random_family(rng, 3, 1900, 2300, "ACDEFGHIKLMNPQRSTVWY"))
    a = Aligner(AlignerConfig(retree=0), backend=cpu_backend()).align(seqs)
    b = Aligner(AlignerConfig(retree=0), backend=_gpu()).align(seqs)
    assert a.rows() == b.rows()
