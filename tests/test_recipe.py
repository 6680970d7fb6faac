"""One recipe per family (issue 41): the rules on both sides of every
threshold, explicit options over the rules, the stages following the recipe
they are given, and the recipe shown on stderr, in the result and in
Stockholm output."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from typer.testing import CliRunner

import msa_gpu.pipeline.builders as aligner_mod
from msa_gpu.aligner import Aligner
from msa_gpu.alphabet import SeqType
from msa_gpu.backend import cpu_backend
from msa_gpu.frontends.msagpu import app
from msa_gpu.settings.config import SPANNING_MIN_SEQS, AlignerConfig
from msa_gpu.distances import kmer_distance
from msa_gpu.io import make_sequences, read_sequences
from msa_gpu.recipe import describe, recipe_for, recipe_from
from msa_gpu.tree import mixed_linkage, upgma
from msa_gpu.types import Recipe

CPU = cpu_backend("test")


def _r(n: int, mean: float = 300.0, longest: int | None = None, seqtype=SeqType.protein, **options) -> Recipe:
    return recipe_from(AlignerConfig(**options), n, mean, int(mean) if longest is None else longest, seqtype)


def test_mode_thresholds():
    assert _r(200, longest=2000).mode == "accurate" and _r(201).mode == "fast"
    assert _r(10, longest=2000).mode == "accurate" and _r(10, longest=2001).mode == "fast"
    assert _r(19999).mode == "fast" and _r(20000).mode == "large"
    big = _r(20000)
    assert (big.distance, big.tree, big.weights, big.retree, big.matrix_offset) == ("pivots", "partition", "equal", 0, 3.0)
    assert _r(10, large_min_seqs=10).mode == "large" and _r(9, large_min_seqs=10).mode == "accurate"


def test_distance_tree_and_retree_thresholds():
    below, at = _r(499), _r(500)
    assert (below.distance, below.tree, below.retree) == ("kmer", "mixed", 1)
    assert (at.distance, at.tree, at.retree) == ("lcs", "single", 0)  # FAMSA's tree is kept
    assert _r(499, distance="kmer").tree == "mixed" and _r(500, distance="kmer").tree == "upgma"
    assert _r(SPANNING_MIN_SEQS - 1, lcs_min_seqs=1).spanning is False
    assert _r(SPANNING_MIN_SEQS, lcs_min_seqs=1).spanning is True
    assert _r(2, mode="fast").retree == 0 and _r(3, mode="fast").retree == 1  # two sequences have one tree
    assert _r(2000, distance="kmer").retree == 1 and _r(2001, distance="kmer").retree == 0


def test_blind_kmers_take_famsas_tree_and_gaps():
    """A fast family most of whose pairs share no k-mer (short fragments)
    takes FAMSA's LCS tree and exact gaps, as one of lcs_min_seqs does; the
    measurement is asked only of families that would take k-mers."""
    frags = make_sequences([f"f{i}" for i in range(6)], [b"MKVLAAGIWQ", b"PPRSTDEHNC", b"WWYYFFLLMM", b"MKVLAHGCWY",
                                                         b"QQNNSSTTGG", b"DEKRHDEKRH"], "protein")
    asked = []

    def unshared(seqs):
        asked.append(len(seqs))
        return 0.9

    cfg = AlignerConfig(mode="fast")
    blind = recipe_for(cfg, frags, unshared=unshared)
    assert (blind.distance, blind.tree, blind.retree, blind.gap_model, blind.profile_scale) == (
        "lcs", "single", 0, "exact", 1000) and asked == [6]
    seeing = recipe_for(cfg, frags, unshared=lambda s: 0.5)
    assert (seeing.distance, seeing.tree, seeing.gap_model, seeing.profile_scale) == ("kmer", "mixed", "counts", 100)
    assert recipe_for(cfg, frags) == seeing  # without the measurement: size alone
    for other in (AlignerConfig(mode="fast", distance="kmer"), AlignerConfig(mode="accurate"),
                  AlignerConfig(mode="fast", lcs_min_seqs=6)):
        asked.clear()
        recipe_for(other, frags, unshared=unshared)
        assert asked == []  # an explicit distance, the library's tree, FAMSA's tree by size
    # the aligner measures it (msa_gpu.distances.kmer_unshared): these six share no 6-mer
    assert Aligner(cfg, backend=CPU).plan([frags])[0] == blind


def test_fragments_last_by_the_95th_length_percentile():
    """``fragments`` last: sequences under half the family's 95th length
    percentile (fragments cannot outvote the full-length sequences) are
    merged last; not on the large path, for long sequences, along a given
    tree, or by default."""
    lengths = [200] * 3 + [40] * 17  # 95th percentile 200: a cut at 100
    seqs = make_sequences([f"s{i}" for i in range(20)], [b"MKVLAAGIWQ" * (n // 10) for n in lengths], "protein")
    last = recipe_for(AlignerConfig(fragments="last"), seqs)
    assert (last.fragments, last.fragment_length) == (17, 100) and "17 fragments last" in describe(last)
    assert recipe_for(AlignerConfig(), seqs).fragments == 0
    assert recipe_for(AlignerConfig(fragments="last"), seqs, tree_given=True).fragments == 0
    assert recipe_for(AlignerConfig(fragments="last", mode="large"), seqs).fragments == 0
    even = make_sequences(["a", "b", "c"], [b"MKVLAAGIWQ"] * 3, "protein")
    assert recipe_for(AlignerConfig(fragments="last"), even).fragments == 0
    with pytest.raises(ValueError, match="fragments"):
        AlignerConfig(fragments="first")
    for broken in ({"fragment_length": 0}, {"mode": "large", "library": None}, {"distance": "given"}):
        with pytest.raises(ValueError, match="fragments"):
            dataclasses.replace(last, **broken)


def test_long_sequence_thresholds():
    short, long = _r(100, mean=3000.0), _r(100, mean=3000.5)
    assert not short.long and (short.tree, short.gap_model, short.divergence) == ("mixed", "counts", False)
    assert long.long and (long.distance, long.tree, long.gap_model, long.divergence, long.retree) == (
        "kmer", "nj", "flat", True, 0)
    assert _r(2000, mean=30000.0).tree == "nj" and _r(2001, mean=30000.0).tree == "upgma"
    assert _r(1000, mean=30000.0).distance == "kmer"  # no all-pairs LCS over genomes


def test_library_rounds_gaps_and_cells():
    protein, dna = _r(10), _r(10, seqtype=SeqType.dna)
    assert (protein.library, protein.iterations, protein.gap_model, protein.profile_scale) == ("posterior", 0, "counts", 100)
    assert (_r(499).gap_model, _r(499).profile_scale) == ("counts", 100)
    assert (_r(500).gap_model, _r(500).profile_scale) == ("exact", 1000)
    whole = _r(500, mode="accurate", accurate_subtree_seqs=500)  # the library over the whole family
    assert (whole.gap_model, whole.profile_scale, whole.subtrees) == ("counts", 100, 0)
    pieces = _r(500, mode="accurate")  # in subtrees of 200 (issue 58): the fast recipe's merges above them
    assert (pieces.gap_model, pieces.profile_scale, pieces.subtrees) == ("exact", 1000, 200)
    assert _r(201, profile_scale=100).profile_scale == 100 and _r(10, profile_scale=1000).profile_scale == 1000
    # nucleotides: ProbConsRNA's posteriors (issue 57), as protein takes ProbCons'; an alignment library asked
    # for brings its refinement rounds and flat gaps
    assert (dna.library, dna.iterations, dna.gap_model, dna.matrix) == ("posterior", 0, "counts", "NUC.4.4")
    local = _r(10, seqtype=SeqType.dna, library_mode="local")
    assert (local.library, local.iterations, local.gap_model) == ("local", 10, "flat")
    assert _r(201).library is None and _r(201).iterations == 0
    assert _r(45, mode="fast").gap_factor == 1.0 and _r(46, mode="fast").gap_factor > 1.0
    assert _r(4, mean=100.0).dp_cells == 6 * 100 * 100 and _r(4, mean=100.0, mode="fast").dp_cells == 4 * 2 * 100 * 100


@pytest.mark.parametrize("n, mean", [(3, 100.0), (150, 300.0), (499, 300.0), (800, 300.0), (3000, 300.0),
                                     (100, 30000.0)])
def test_an_explicit_option_always_wins(n, mean):
    for tree in ("mixed", "single", "upgma", "nj"):
        assert _r(n, mean, mode="fast", tree=tree).tree == tree
    for distance in ("kmer", "lcs", "align"):
        assert _r(n, mean, mode="fast", distance=distance).distance == distance
    for mode in ("fast", "accurate", "large"):
        assert _r(n, mean, mode=mode).mode == mode
    assert _r(n, mean, mode="fast", gap_model="flat").gap_model == "flat"
    assert _r(n, mean, mode="fast", gap_model="counts").gap_model == "counts"
    assert _r(n, mean, mode="fast", maxiterate=3).iterations == 3
    assert _r(n, mean, mode="accurate", library_mode="global").library == "global"
    assert _r(n, mean, weights="equal").weights == "equal"
    chosen = _r(n, mean, mode="fast", matrix="BLOSUM45", gap_open=10.0, gap_extend=1.0, matrix_offset=1.5)
    assert (chosen.matrix, chosen.gap_open, chosen.gap_extend, chosen.matrix_offset) == ("BLOSUM45", 10.0, 1.0, 1.5)
    given = recipe_from(AlignerConfig(), n, mean, int(mean), tree_given=True)
    assert (given.distance, given.tree, given.retree) == ("given", "given", 0)


def test_the_recipe_does_not_depend_on_the_backend():
    for n in (4, 300, 600):
        assert _r(n, backend="cpu") == _r(n, backend="gpu") == _r(n, backend="auto")


def test_a_recipe_checks_itself():
    good = _r(10)
    with pytest.raises(ValueError, match="mode"):
        dataclasses.replace(good, mode="medium")
    with pytest.raises(ValueError, match="library"):
        dataclasses.replace(good, library=None)  # accurate without a library
    with pytest.raises(ValueError, match="gap_factor"):
        dataclasses.replace(_r(300, mode="fast"), gap_model="flat")  # a scaled factor under flat gaps
    with pytest.raises(ValueError, match="spanning"):
        dataclasses.replace(_r(300, mode="fast"), spanning=True)  # k-mers and mixed linkage


def _family(n: int = 12, length: int = 60, seed: int = 3):
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    base = rng.choice(letters, length)
    raw = []
    for _ in range(n):
        s = base.copy()
        hits = rng.integers(0, length, 12)
        s[hits] = rng.choice(letters, len(hits))
        raw.append(s.tobytes())
    return make_sequences([f"s{i}" for i in range(n)], raw, "protein")


def test_the_stages_follow_an_injected_recipe():
    """A fast family whose rules give a mixed-linkage tree, rebuilt once,
    aligned with a recipe that says UPGMA and no rebuild: the tree is UPGMA's
    on the k-mer distances."""
    seqs = _family()
    aligner = Aligner(AlignerConfig(mode="fast"), backend=CPU)
    ruled = aligner.plan([seqs])[0]
    assert (ruled.tree, ruled.retree) == ("mixed", 1)
    res = aligner.align(seqs, recipe=dataclasses.replace(ruled, tree="upgma", retree=0))
    assert res.recipe.tree == "upgma"
    assert np.array_equal(res.guide_tree.children, upgma(kmer_distance(seqs)).children)
    plain = Aligner(AlignerConfig(mode="fast", retree=0), backend=CPU).align(seqs)
    assert np.array_equal(plain.guide_tree.children, mixed_linkage(kmer_distance(seqs)).children)


def test_an_injected_recipe_picks_the_library(monkeypatch):
    """Accurate mode's library is the recipe's: local alignments where the
    rules would take the posteriors (for protein)."""
    seqs = _family(6, 40)
    asked = []
    real = aligner_mod.build_libraries
    monkeypatch.setattr(aligner_mod, "build_libraries",
                        lambda fams, settings, *a, **k: asked.append(settings.mode) or real(fams, settings, *a, **k))
    monkeypatch.setattr(aligner_mod, "posterior_libraries", lambda *a, **k: pytest.fail("posteriors asked for"))
    aligner = Aligner(AlignerConfig(mode="accurate"), backend=CPU)
    ruled = aligner.plan([seqs])[0]
    assert ruled.library == "posterior"
    res = aligner.align(seqs, recipe=dataclasses.replace(ruled, library="local", iterations=0))
    assert asked == ["local"] and res.library is not None and res.recipe.library == "local"


def test_a_recipe_made_for_other_sequences_is_refused():
    seqs = _family()
    with pytest.raises(ValueError, match="recipe"):
        Aligner(AlignerConfig(), backend=CPU).align(seqs, recipe=_r(len(seqs) + 1))


def test_a_large_family_with_its_distances_given_builds_its_tree_from_them():
    seqs = _family(20)
    cfg = AlignerConfig(mode="large")
    dm = kmer_distance(seqs)
    recipe = Aligner(cfg).plan([seqs], distances=[dm])[0]
    assert (recipe.mode, recipe.distance, recipe.tree, recipe.weights) == ("large", "supplied", "mixed", "equal")
    res = Aligner(cfg, backend=CPU).align(seqs, distances=dm)
    assert res.recipe == recipe and len(res.rows()) == 20
    with pytest.raises(ValueError, match="given"):  # a recipe that does not know the tree was given
        Aligner(cfg, backend=CPU).align(seqs, guide_tree=upgma(dm), recipe=recipe)


def test_a_large_familys_subtrees_take_its_recipe():
    """The distributed large path aligns each subtree with the family's recipe
    (gap model and factor included), so its alignment is the one machine's
    even where a subtree's own mean length would cross the long-sequence
    rule (before, each subtree resolved ``gap_model`` auto from its own)."""
    from msa_gpu.distributed import align_large

    short, long = _family(20, 57, seed=1), _family(10, 285, seed=2)
    seqs = make_sequences([f"s{i}" for i in range(30)], list(short.raw) + list(long.raw), "protein")
    cfg = AlignerConfig(backend="cpu", mode="large", large_cluster=8, lcs_max_length=150)
    assert Aligner(cfg).plan([seqs])[0].gap_model == "counts"  # the family's mean is 133

    def in_process(fn, args):
        return [fn(*a) for a in args]

    spread = align_large(seqs, cfg, in_process, 4)
    assert spread.rows() == Aligner(cfg, backend=CPU).align(seqs).rows()


def test_repeats_are_counted_once():
    seqs = _family(6)
    doubled = make_sequences([f"d{i}" for i in range(12)], list(seqs.raw) * 2, "protein")
    recipe = Aligner(AlignerConfig()).plan([doubled])[0]
    assert recipe.n_seqs == 6
    assert Aligner(AlignerConfig(dedupe=False)).plan([doubled])[0].n_seqs == 12
    res = Aligner(AlignerConfig(), backend=CPU).align(doubled)
    assert res.recipe == recipe and len(res.rows()) == 12


def test_cli_says_the_recipe(refs, tmp_path):
    runner = CliRunner()
    one = runner.invoke(app, ["align", str(refs / "BB11001.tfa"), "--backend", "cpu", "--mode", "fast"])
    assert one.exit_code == 0, one.output
    assert ("msagpu: recipe: 4 sequences, mean length 86: fast, k-mer distances, mixed-linkage tree, rebuilt 1x, "
            "count-based gaps, no refinement, CPU\n") in one.stderr
    quiet = runner.invoke(app, ["align", str(refs / "BB11001.tfa"), "--backend", "cpu", "--quiet"])
    assert "recipe" not in quiet.stderr
    inputs = [str(refs / "BB11001.tfa"), str(refs / "BB20001.tfa")]
    batch = runner.invoke(app, ["align", *inputs, "--outdir", str(tmp_path / "a"), "--backend", "cpu"])
    assert batch.exit_code == 0, batch.output
    assert "msagpu: recipes: 2 families: accurate 2, CPU" in batch.stderr and "BB20001.tfa:" not in batch.stderr
    explained = runner.invoke(app, ["align", *inputs, "--outdir", str(tmp_path / "b"), "--backend", "cpu",
                                    "--explain"])
    fams = [read_sequences(p) for p in inputs]
    for path, recipe in zip(inputs, Aligner(AlignerConfig()).plan(fams)):
        assert f"msagpu: {path.rsplit('/', 1)[1]}: {describe(recipe)}\n" in explained.stderr
    assert (tmp_path / "a" / "BB20001.fa").read_bytes() == (tmp_path / "b" / "BB20001.fa").read_bytes()


def test_stockholm_and_the_result_carry_the_recipe(refs, tmp_path):
    out = tmp_path / "o.sto"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--mode", "fast"])
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    assert lines[0] == "# STOCKHOLM 1.0"
    assert lines[1].startswith("#=GF CC msagpu recipe: 4 sequences, mean length 86: fast,")
    assert "CPU" not in lines[1]  # the file's bytes do not depend on the backend
    res = Aligner(AlignerConfig(mode="fast"), backend=CPU).align(read_sequences(refs / "BB11001.tfa"))
    assert res.explain() == lines[1].removeprefix("#=GF CC msagpu recipe: ") + ", CPU"
    res.write(tmp_path / "api.sto")
    assert (tmp_path / "api.sto").read_text().splitlines()[1] == lines[1]
    from Bio import AlignIO

    assert len(AlignIO.read(str(out), "stockholm")) == 4  # still Stockholm to Biopython


def _recipe_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("msagpu: recipe: ")]


@pytest.mark.parametrize("mode", [[], ["--mode", "fast"]])
def test_an_ensemble_run_says_the_recipe_a_plain_run_says(refs, tmp_path, mode):
    """``--ensemble`` says the same one recipe line (the replicate 0s') as the
    run without it, before its ensemble line; mode auto's rule included."""
    args = ["align", str(refs / "BB11001.tfa"), "--backend", "cpu", *mode]
    plain = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "a.fa")])
    ens = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "b.fa"), "--ensemble", "2"])
    assert plain.exit_code == 0 and ens.exit_code == 0, ens.output
    (line,) = _recipe_lines(plain.stderr)
    assert _recipe_lines(ens.stderr) == [line]
    said = ens.stderr.splitlines()
    assert said.index(line) < [k for k, s in enumerate(said) if "ensemble of 2" in s][0]
    assert ("mode auto:" in line) == (not mode)
    assert "recipe" not in CliRunner().invoke(app, [*args, "-o", str(tmp_path / "c.fa"), "--ensemble", "2",
                                                    "-q"]).stderr


def test_one_sequence_is_said_as_what_happens(tmp_path):
    """One sequence (or one repeated) is written as it is: the recipe line
    says "1 sequence ... nothing to align", not "1 sequences ... accurate,
    ... library" of an alignment that does not happen; two distinct
    sequences are a recipe again."""
    cases = [([b"MKTAYIAKQR"], "1 sequence, length 10: nothing to align"),
             ([b"MKTAYIAKQR"] * 3, "3 sequences, all the same, length 10: nothing to align"),
             ([b"MKTAYIAKQR", b"MKTAYIAKQ"], "2 sequences, mean length 10: accurate, pair-HMM posterior library")]
    for raw, said in cases:
        src = tmp_path / "in.fa"
        src.write_bytes(b"".join(b">s%d\n%s\n" % (k, r) for k, r in enumerate(raw)))
        r = CliRunner().invoke(app, ["align", str(src), "--backend", "cpu", "--mode", "accurate"])
        assert r.exit_code == 0, r.output
        (line,) = _recipe_lines(r.stderr)
        assert line.startswith(f"msagpu: recipe: {said}"), line
        if len(set(raw)) == 1:
            assert line == f"msagpu: recipe: {said}"  # nothing about a mode, a library or a backend
            assert r.stdout.split() == [x for k, s in enumerate(raw) for x in (f">s{k}", s.decode())]


@pytest.mark.parametrize("rounds, said", [(0, "no refinement"), (1, "refinement up to 1 round,"),
                                          (2, "refinement up to 2 rounds,")])
def test_the_recipe_line_counts_rounds_in_words(rounds, said):
    line = describe(_r(4, 100.0, mode="fast", maxiterate=rounds), "cpu")
    assert said in line and ("1 rounds" not in line)
