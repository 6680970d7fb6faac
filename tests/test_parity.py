"""Backend parity: the GPU must give exactly what the CPU gives.

Runs only where a GPU is usable (MSAGPU_REQUIRE_GPU=1 makes a missing GPU a
failure instead of a skip)."""

import numpy as np
import pytest
from conftest import reached_gpu_path
from test_dp import random_batch

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend, gpu_backend, probe_gpu
from msa_gpu.settings.config import AlignerConfig
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
    dev = type(batch)(*(cp.asarray(x) if isinstance(x, np.ndarray) else x for x in batch.__dict__.values()))
    got = [x.get() for x in gpu.align_batch(dev)]
    assert np.array_equal(want[2], got[2])  # scores
    assert np.array_equal(want[1], got[1])  # path lengths
    for off, ln in zip(batch.path_off, want[1]):
        assert np.array_equal(want[0][off: off + ln], got[0][off: off + ln])
    reached_gpu_path("profile DP")


@pytest.mark.parametrize("seed", range(8))
def test_alignments_identical_random(seed):
    rng = np.random.default_rng(100 + seed)
    letters = "ACGT" if seed % 2 else "ACDEFGHIKLMNPQRSTVWY"
    raw = random_family(rng, int(rng.integers(2, 40)), 5, int(rng.integers(20, 400)), letters)
    seqs = make_sequences([f"s{i}" for i in range(len(raw))], raw)
    for cfg in (AlignerConfig(tree="upgma", mode="fast"), AlignerConfig(tree="nj", mode="fast", maxiterate=3),
                AlignerConfig(mode="accurate", maxiterate=5),
                AlignerConfig(mode="fast", gap_model="counts", gap_scaling=True, maxiterate=2),
                AlignerConfig(mode="fast", gap_model="exact", maxiterate=2),
                AlignerConfig(mode="fast", gap_model="exact", long_cells=1000, anchor_cells=0),
                AlignerConfig(mode="accurate", profile_scale=1000),
                AlignerConfig(mode="fast", profile_scale=1000, gap_open=90.0, gap_extend=9.0, maxiterate=2)):
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
    reached_gpu_path("consistency library")
    reached_gpu_path("pairwise engine")


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
                AlignerConfig(mode="fast", maxiterate=3, refine_cuts=5, weights="equal"),
                AlignerConfig(mode="fast", maxiterate=3, gap_model="counts")):
        a = Aligner(cfg, backend=cpu_backend()).align_many(fams)
        b = Aligner(cfg, backend=_gpu()).align_many(fams)
        assert [r.rows() for r in a] == [r.rows() for r in b]
        if cfg.maxiterate:  # (accurate mode's posteriors take no refinement, for protein and nucleotides alike)
            assert b[0].timings["refine_rounds"] > 0
    reached_gpu_path("refinement")


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
    for model in ("flat", "counts", "exact"):
        a = Aligner(AlignerConfig(mode="fast", gap_model=model), backend=cpu_backend()).align_many(fams)
        b = Aligner(AlignerConfig(long_cells=0, mode="fast", gap_model=model), backend=_gpu()).align_many(fams)
        assert [r.rows() for r in a] == [r.rows() for r in b], model
        c = Aligner(AlignerConfig(long_cells=0, mode="fast", gap_model=model), backend=cpu_backend()).align_many(fams)
        assert [r.rows() for r in a] == [r.rows() for r in c], model
    reached_gpu_path("checkpointed DP")


def _device_arrays_seen(monkeypatch, module) -> list:
    """Spy on ``module.to_host``: the CuPy arrays its GPU path hands back."""
    seen, real = [], module.to_host

    def spy(a):
        if type(a).__module__.startswith("cupy"):
            seen.append(a.shape)
        return real(a)

    monkeypatch.setattr(module, "to_host", spy)
    return seen


def test_distances_identical_on_both_array_modules(refs, monkeypatch):
    """The k-mer and identity counts give the same distances with CuPy as
    with NumPy, the k-mer sort included (every threshold forced down)."""
    import cupy

    from msa_gpu.distances import alignment, kmer, kmer_index
    from msa_gpu.progressive import alignment_codes

    seqs = read_sequences(refs / "BB20001.tfa")
    aln = Aligner(AlignerConfig(), backend=cpu_backend()).align(seqs).alignment
    codes = alignment_codes(seqs, aln)
    want = kmer.kmer_distance(seqs, np).values, alignment.alignment_distance(codes, 23, np).values
    sets = kmer_index.kmer_sets(seqs, xp=np)
    monkeypatch.setattr(kmer, "GPU_MIN_SEQS", 1)  # (alignment_distance takes the same threshold)
    monkeypatch.setattr(kmer_index, "GPU_MIN_RESIDUES", 0)
    on_device = {m.__name__: _device_arrays_seen(monkeypatch, m) for m in (kmer, alignment, kmer_index)}
    got_sets = kmer_index.kmer_sets(seqs, xp=cupy)
    assert on_device[kmer_index.__name__], "the k-mer sort stayed on the host"
    reached_gpu_path("k-mer sort")
    got = kmer.kmer_distance(seqs, cupy).values, alignment.alignment_distance(codes, 23, cupy).values
    assert on_device[kmer.__name__] and on_device[alignment.__name__], on_device
    assert np.array_equal(sets.ids, got_sets.ids) and np.array_equal(sets.offsets, got_sets.offsets)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    reached_gpu_path("k-mer distances")
    reached_gpu_path("identity distances")


def test_pivot_distances_identical_on_both_array_modules(refs, monkeypatch):
    """The large path's distances to pivots (cuSPARSE products) equal SciPy's,
    forced past the threshold that keeps small sets on the host."""
    import cupy

    from msa_gpu.distances import kmer_index

    seqs = read_sequences(refs / "BB20001.tfa")
    km = kmer_index.kmer_sets(seqs, xp=np)
    members, pivots = np.arange(len(seqs)), np.array([0, 5, 11])
    want = kmer_index.pivot_distances(km, members, pivots, np)
    monkeypatch.setattr(kmer_index, "GPU_MIN_SEQS", 1)
    monkeypatch.setattr(kmer_index, "CHUNK", 5)  # several chunks
    seen = _device_arrays_seen(monkeypatch, kmer_index)
    got = kmer_index.pivot_distances(km, members, pivots, cupy)
    assert seen, "the pivot product stayed on the host"
    assert np.array_equal(want, got)
    reached_gpu_path("pivot distances")


def test_wide_profiles_use_global_scratch_identically():
    """Profiles over 1,755 columns do not fit shared memory: the DP keeps its
    wavefront in global scratch."""
    rng = np.random.default_rng(21)
    seqs = make_sequences(["a", "b", "c"], random_family(rng, 3, 1900, 2300, "ACDEFGHIKLMNPQRSTVWY"))
    a = Aligner(AlignerConfig(retree=0), backend=cpu_backend()).align(seqs)
    b = Aligner(AlignerConfig(retree=0), backend=_gpu()).align(seqs)
    assert a.rows() == b.rows()
    reached_gpu_path("wide-profile DP")


def test_lcs_lengths_identical_on_the_gpu(monkeypatch):
    """The bit-parallel LCS kernel gives the twin's integers, in one block of
    rows and in many (a tiny output budget), across mask widths of 1-8 words,
    and the distances from them have the same bits."""
    _gpu()
    import cupy

    from msa_gpu.backend import lcs_gpu
    from msa_gpu.distances import lcs

    rng = np.random.default_rng(11)
    raw = [rng.choice(list(b"ACDEFGHIKLMNPQRSTVWY"), int(k)).astype(np.uint8).tobytes() for k in rng.integers(1, 500, 300)]
    raw += random_family(rng, 40, 50, 120, "ACDEFGHIKLMNPQRSTVWY")
    seqs = make_sequences([f"s{i}" for i in range(len(raw))], raw, "protein")
    want = lcs.lcs_lengths(seqs, np)
    assert np.array_equal(lcs.lcs_lengths(seqs, cupy), want)
    want_d = lcs.lcs_distance(seqs, np).values
    assert np.array_equal(lcs.lcs_distance(seqs, cupy).values, want_d)
    blocks = lcs_gpu.lcs_row_blocks
    monkeypatch.setattr(lcs_gpu, "lcs_row_blocks", lambda *a: blocks(*a, block_bytes=4 * 7 * len(raw)))
    assert np.array_equal(lcs.lcs_lengths(seqs, cupy), want)
    reached_gpu_path("lcs distances")


def test_lcs_spanning_tree_identical_on_the_gpu():
    """Prim's spanning tree over LCS distances with no matrix (one relax and
    one pick launch a step) gives the twin's edges and lengths, bit for bit,
    with repeated sequences (ties) and mask widths of 1-8 words; the tree is
    the matrix path's."""
    _gpu()
    import cupy

    from msa_gpu.distances import lcs_distance, lcs_spanning_edges, lcs_spanning_edges_many
    from msa_gpu.tree import lcs_single_linkage, single_linkage

    rng = np.random.default_rng(12)
    raw = [rng.choice(list(b"ACDEFGHIKLMNPQRSTVWY"), int(k)).astype(np.uint8).tobytes() for k in rng.integers(1, 500, 200)]
    raw += random_family(rng, 150, 50, 120, "ACDEFGHIKLMNPQRSTVWY")
    raw += raw[-20:]
    seqs = make_sequences([f"s{i}" for i in range(len(raw))], raw, "protein")
    ends, length = lcs_spanning_edges(seqs, np)
    g_ends, g_length = lcs_spanning_edges(seqs, cupy)
    assert np.array_equal(g_ends, ends) and np.array_equal(g_length, length)
    tree = lcs_single_linkage(seqs, cupy)
    want = single_linkage(lcs_distance(seqs, np))
    assert np.array_equal(tree.children, want.children) and np.array_equal(tree.lengths, want.lengths)
    # a batch stepped together: families of other sizes and mask widths, one of two sequences
    fams = [seqs, make_sequences(["a", "b"], [b"MKV", b"MKW"], "protein")]
    for n, lo, hi in ((60, 20, 60), (300, 100, 200), (90, 600, 700)):
        fams.append(make_sequences([f"s{i}" for i in range(n)], random_family(rng, n, lo, hi, "ACDEFGHIKLMNPQRSTVWY"),
                                   "protein"))
    for got, want in zip(lcs_spanning_edges_many(fams, cupy), lcs_spanning_edges_many(fams, np)):
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    reached_gpu_path("lcs spanning tree")


@pytest.mark.parametrize("in_shared", [True, False])
def test_pair_hmm_posteriors_identical_on_the_gpu(in_shared, monkeypatch):
    """ProbCons' pair-HMM posteriors (kernels/posterior.cu) have the numba
    twin's bits: every cell (cutoff 0) of short, long, unrelated and
    one-residue pairs with unknown letters (blocks of 32 to 256 threads), in
    one batch (its size classes side by side on `POST_STREAMS` streams) and
    in many; the posterior library (its consistency
    transformation on the device too) and the accurate alignment on it are
    the same; with the anti-diagonals and the summed rows in shared memory,
    and with both in global memory."""
    _gpu()
    import cupy

    from msa_gpu.backend import posterior_gpu

    if not in_shared:
        monkeypatch.setattr(posterior_gpu, "SHARED_ROWS", 0)
        monkeypatch.setattr(posterior_gpu, "SHARED_COLS", 0)
    from msa_gpu.consistency.pairhmm import probcons_model
    from msa_gpu.consistency.probabilistic import flat_posteriors_of, posterior_libraries, sparse_pair_posteriors

    rng = np.random.default_rng(13)
    raw = random_family(rng, 6, 40, 90, "ACDEFGHIKLMNPQRSTVWY")
    raw += [rng.choice(list(b"ACDEFGHIKLMNPQRSTVWY"), 400).astype(np.uint8).tobytes() for _ in range(2)]
    raw += [b"W", b"MKXBZ", b"A" * 130]
    seqs = make_sequences([f"s{i}" for i in range(len(raw))], raw, "protein")
    model = probcons_model(seqs.alphabet.size)
    pairs = [(s, t) for s in range(len(raw)) for t in range(len(raw)) if s != t]
    for cutoff in (0.0, 0.01):
        want = sparse_pair_posteriors(seqs, pairs, model, cutoff, np)
        got = sparse_pair_posteriors(seqs, pairs, model, cutoff, cupy)
        for (s, t), w, g in zip(pairs, want, got):
            for a, b in zip(w, g):
                assert np.array_equal(a, b), (s, t, cutoff)
    small = posterior_gpu.flat_posteriors(list(seqs.codes), np.array(pairs), model.init, model.trans, model.pair,
                                          model.single, 0.01, batch_bytes=1)  # one pair a batch
    for w, g in zip(flat_posteriors_of(list(seqs.codes), np.array(pairs), model, 0.01, np), small):
        assert np.array_equal(w, cupy.asnumpy(g))
    fam = make_sequences([f"s{i}" for i in range(8)], random_family(rng, 8, 60, 120, "ACDEFGHIKLMNPQRSTVWY"), "protein")
    many = make_sequences([f"m{i}" for i in range(40)], random_family(rng, 40, 15, 30, "ACDEFGHIKLMNPQRSTVWY"),
                          "protein")  # over 32 sequences: a warp's lanes take u and u + 32
    fams = [fam, seqs, make_sequences(["a"], [b"MKV"], "protein"), many]
    for group_cells in (1, 1 << 40):  # a launch a family, or one for all
        for a, b in zip(posterior_libraries(fams, xp=np), posterior_libraries(fams, xp=cupy, group_cells=group_cells)):
            for name in ("w", "x", "y", "pair_off", "identity"):  # the GPU library's entries stay on the device
                assert np.array_equal(getattr(a, name), cupy.asnumpy(cupy.asarray(getattr(b, name)))), name
    cfg = AlignerConfig(mode="accurate", library_mode="posterior")
    assert Aligner(cfg, backend=cpu_backend()).align(fam).rows() == Aligner(cfg, backend=_gpu()).align(fam).rows()
    reached_gpu_path("pair-HMM posteriors")


def test_posteriors_with_just_under_48_kb_of_shared_memory():
    """Blocks whose dynamic shared memory is under 48 KB but not under 48 KB
    less the kernel's static bytes (rows of 678-682: BB50002 alone failed
    with CUDA_ERROR_INVALID_VALUE) opt in like larger ones."""
    _gpu()
    import cupy

    from msa_gpu.consistency.probabilistic import posterior_libraries

    rng = np.random.default_rng(5)
    raw = [rng.choice(list(b"ACDEFGHIKLMNPQRSTVWY"), n).astype(np.uint8).tobytes() for n in (679, 383, 381, 120)]
    fam = make_sequences([f"s{i}" for i in range(len(raw))], raw, "protein")
    for a, b in zip(posterior_libraries([fam], xp=np), posterior_libraries([fam], xp=cupy)):
        for name in ("w", "x", "y", "pair_off", "identity"):
            assert np.array_equal(getattr(a, name), cupy.asnumpy(cupy.asarray(getattr(b, name)))), name


def test_anchored_long_merges_identical_on_the_gpu():
    """Merges cut at k-mer anchors (issue 31): the anchors come from host
    integer work and the pieces go through either backend's DP, so a family
    of long genomes aligns to the same bytes on both."""
    from benchmarks.genomes import family

    fam = family(4, 9000, seed=5)
    seqs = make_sequences(fam.names, fam.sequences, "dna")
    cfg = AlignerConfig(anchor_cells=1 << 22)
    cpu_rows = Aligner(cfg, backend=cpu_backend()).align(seqs).rows()
    assert Aligner(cfg, backend=_gpu()).align(seqs).rows() == cpu_rows
    reached_gpu_path("anchored merges")


def test_rna_posteriors_identical_on_the_gpu(refs):
    """Issue 57: nucleotides take ProbConsRNA's pair-HMM through the same
    kernels as protein, with its own alphabet size; the bundled BRAliBase III
    cases (tRNA, rRNA, U5) and the same rows as DNA give the same library and
    the same alignment bytes on both backends."""
    _gpu()
    import cupy

    from msa_gpu.consistency.probabilistic import posterior_libraries

    fams = [read_sequences(t) for t in sorted((refs / "bralibase3").glob("*.tfa"))]
    fams.append(make_sequences(fams[0].names, [s.replace(b"U", b"T") for s in fams[0].raw], "dna"))
    assert {f.seqtype.value for f in fams} == {"rna", "dna"}
    for a, b in zip(posterior_libraries(fams, xp=np), posterior_libraries(fams, xp=cupy)):
        for name in ("w", "x", "y", "pair_off", "identity"):
            assert np.array_equal(getattr(a, name), cupy.asnumpy(cupy.asarray(getattr(b, name)))), name
    cfg = AlignerConfig(mode="accurate")
    cpu = [r.rows() for r in Aligner(cfg, backend=cpu_backend()).align_many(fams)]
    assert [r.rows() for r in Aligner(cfg, backend=_gpu()).align_many(fams)] == cpu
    reached_gpu_path("nucleotide pair-HMM posteriors")


def test_accurate_subtrees_identical_on_the_gpu(refs):
    """Issue 58: accurate mode in pieces (subtrees of at most 6 sequences,
    their libraries in waves of the device's free memory, the merges above
    them with the fast scoring) gives the CPU's bytes, for protein and RNA."""
    gpu = _gpu()
    fams = [read_sequences(refs / "BB20001.tfa"), read_sequences(sorted((refs / "bralibase3").glob("*.tfa"))[0])]
    cfg = AlignerConfig(mode="accurate", accurate_subtree_seqs=6)
    cpu = Aligner(cfg, backend=cpu_backend()).align_many(fams)
    assert all(r.recipe.subtrees == 6 for r in cpu)
    assert [r.rows() for r in Aligner(cfg, backend=gpu).align_many(fams)] == [r.rows() for r in cpu]
    reached_gpu_path("accurate subtrees")



def test_merged_alignments_identical_on_the_gpu(refs):
    """Issue 60: BB20001's reference cut in three by its rows and merged
    back, fast and accurate (the library across the inputs), gives the
    CPU's bytes."""
    from msa_gpu.io import read_aligned
    from msa_gpu.workflows.merging import merge_alignments

    names, rows = read_aligned(refs / "BB20001.ref.fa")
    parts = [(names[a:b], rows[a:b]) for a, b in ((0, 6), (6, 11), (11, 16))]
    gpu = _gpu()
    for mode in ("fast", "accurate"):
        cfg = AlignerConfig(mode=mode)
        cpu = merge_alignments(parts, cfg, backend=cpu_backend())
        assert cpu.scoring.startswith(mode)
        assert merge_alignments(parts, cfg, backend=gpu).rows == cpu.rows
    reached_gpu_path("merged alignments")
