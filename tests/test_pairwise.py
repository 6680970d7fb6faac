"""Stage 1 pairwise engine: the numba twin against Biopython, traceback
re-scoring, the checkpointed traceback, the CLI, and GPU parity."""

import itertools
import mmap

import numpy as np
import pytest
from Bio.Align import PairwiseAligner, substitution_matrices
from typer.testing import CliRunner

from msa_gpu.backend import pairwise_cpu
from msa_gpu.backend.pairwise import PairScoring, _packed, align_pairs, all_pairs
from msa_gpu.frontends.msagpu import app
from msa_gpu.distances import pairwise_distance
from msa_gpu.io import make_sequences, read_sequences

MODES = ["global", "semiglobal", "local"]
PROTEIN = "ARNDCQEGHILKMFPSTWYVBZX"
DNA = "ACGT"


def biopython(mode, matrix, go, ge):
    al = PairwiseAligner(mode="local" if mode == "local" else "global",
                         substitution_matrix=substitution_matrices.load(matrix),
                         open_gap_score=-go, extend_gap_score=-ge)
    if mode == "semiglobal":
        al.end_gap_score = 0
    return al


def random_family(rng, letters, count, lo, hi, kind):
    raw, prev = [], None
    for k in range(count):
        if prev is not None and k % 2:  # every other one a mutant of the last: gapped alignments
            s = list(prev)
            for _ in range(len(s) // 4):
                p = int(rng.integers(0, len(s) + 1))
                op = rng.integers(0, 3)
                if op == 0 and s:
                    s.pop(min(p, len(s) - 1))
                elif op == 1:
                    s.insert(p, str(rng.choice(list(letters))))
                elif s:
                    s[min(p, len(s) - 1)] = str(rng.choice(list(letters)))
            raw.append(("".join(s) or letters[0]).encode())
        else:
            raw.append("".join(rng.choice(list(letters), int(rng.integers(lo, hi)))).encode())
        prev = raw[-1].decode()
    raw += [letters[0].encode(), letters[1].encode(), (letters[0] * 3).encode()]  # length-1 edge cases
    return make_sequences([f"s{k}" for k in range(len(raw))], raw, kind)


CASES = [("protein", PROTEIN, "BLOSUM62", 11.0, 1.0), ("protein", PROTEIN, "BLOSUM62", 3.5, 2.5),
         ("dna", DNA, "NUC.4.4", 10.0, 1.0), ("dna", DNA, "NUC.4.4", 0.5, 0.0)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind,letters,matrix,go,ge", CASES)
def test_twin_scores_equal_biopython(mode, kind, letters, matrix, go, ge):
    rng = np.random.default_rng(7)
    seqs = random_family(rng, letters, 14, 1, 60, kind)
    res = all_pairs(seqs, PairScoring(mode, matrix, go, ge), traceback=True, backend="cpu")  # verify=True re-scores
    al = biopython(mode, matrix, go, ge)
    want = [al.score(seqs.raw[i].decode(), seqs.raw[j].decode()) for i, j in res.pairs]
    np.testing.assert_allclose(res.scores, want, rtol=0, atol=1e-9)
    plain = all_pairs(seqs, PairScoring(mode, matrix, go, ge), backend="cpu")
    assert np.array_equal(plain.score_fixed, res.score_fixed) and np.array_equal(plain.end, res.end)


#: (open, extend): extensions above the opening (issue 56's library gaps from
#: MAFFT's --lop -0.3 --lep 0.5 and from --lop -0.1 alone, one just above, a
#: free opening) and three below or equal.
GAP_SETTINGS = [(1.65, 5.0), (0.55, 1.0), (2.0, 2.01), (0.0, 1.0), (3.0, 3.0), (10.0, 1.0), (0.5, 0.0)]


@pytest.mark.parametrize("mode", MODES)
def test_any_extension_traces_back_to_its_dp_score(mode):
    """Issue 56: with the extension above the opening the DP scored a gap of
    k as k gaps of one (it may close a gap and open the next at once) and the
    traceback's merged run re-scored higher. The extension is taken as at most
    the opening: every traceback re-scores to its DP score (``verify``), the
    scores are Biopython's with that extension, and in the local and
    semiglobal modes they are those of the uncapped DP, cell for cell."""
    rng = np.random.default_rng(56)
    seqs = random_family(rng, DNA, 10, 20, 90, "dna")
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    for go, ge in GAP_SETTINGS:
        scoring = PairScoring(mode, "NUC.4.4", go, ge)
        res = all_pairs(seqs, scoring, traceback=True, backend="cpu")  # verify=True re-scores every pair
        al = biopython(mode, "NUC.4.4", go, min(go, ge))
        want = [al.score(seqs.raw[i].decode(), seqs.raw[j].decode()) for i, j in res.pairs]
        np.testing.assert_allclose(res.scores, want, rtol=0, atol=1e-9, err_msg=f"{go}/{ge}")
        S, fgo, fge, code = scoring.fixed(DNA)
        assert (fgo, fge) == (round(go * 100), round(min(go, ge) * 100))
        if mode != "global":  # end gaps free: the cap leaves every cell of the forward DP as it was
            raw = pairwise_cpu.align_batch(seq, off, pa, pb, S, fgo, round(ge * 100), code, False)[0]
            assert np.array_equal(raw[:, :3], np.column_stack([res.score_fixed, res.end])), f"{go}/{ge}"


@pytest.mark.parametrize("mode", MODES)
def test_real_pairs_equal_biopython_and_rows_hold_residues(refs, mode):
    seqs = read_sequences(refs / "BB20001.tfa")
    pairs = [(0, 1), (2, 5), (3, 4)]
    scoring = PairScoring(mode, "BLOSUM62", 11, 1)
    res = align_pairs(seqs, pairs, scoring, traceback=True, backend="cpu")
    al = biopython(mode, "BLOSUM62", 11, 1)
    for k, (i, j) in enumerate(pairs):
        assert res.scores[k] == al.score(seqs.raw[i].decode().upper(), seqs.raw[j].decode().upper())
        ra, rb = res.rows(k, seqs)
        assert len(ra) == len(rb) == res.aligned_length[k]
        (si, sj), (ei, ej) = res.start[k], res.end[k]
        if mode != "local":  # end gaps included: the rows hold whole sequences
            (si, sj), ei, ej = (0, 0), None, None
            assert tuple(res.start[k]) == (0, 0)
        assert ra.replace(b"-", b"") == seqs.raw[i][si:ei] and rb.replace(b"-", b"") == seqs.raw[j][sj:ej]


def _runs(moves):
    """Maximal runs (length << 2 | move) of a move list."""
    out = []
    for mv in moves:
        if out and out[-1] & 3 == mv:
            out[-1] += 4
        else:
            out.append(4 | int(mv))
    return np.array(out, np.uint32)


def test_rescore_catches_a_wrong_alignment():
    seqs = make_sequences(["a", "b"], [b"MKVLAAGIVGH", b"MKVAAGIVH"], "protein")
    res = align_pairs(seqs, [(0, 1)], PairScoring("global"), traceback=True, backend="cpu")
    S, go, ge, mode = PairScoring("global").fixed(seqs.alphabet.letters)
    runs = res.pair_runs(0)
    assert np.array_equal(runs, _runs(res.moves(0)))  # maximal runs, expanded and re-encoded
    assert res.cigar(0) == "".join(f"{w >> 2}{'MID'[w & 3]}" for w in runs.tolist())
    a, b = seqs.codes
    assert pairwise_cpu.rescore_one(a, b, S, go, ge, mode, runs, 0, 0) == res.score_fixed[0]
    ops = res.moves(0).copy()
    k = int(np.flatnonzero(ops == 0)[0])
    ops[k:k + 2] = [1, 2] if ops[k + 1] == 0 else ops[k:k + 2]
    assert pairwise_cpu.rescore_one(a, b, S, go, ge, mode, _runs(ops), 0, 0) < res.score_fixed[0]
    too_long = runs.copy()
    too_long[-1] += 4  # one more column than the sequences hold
    assert pairwise_cpu.rescore_one(a, b, S, go, ge, mode, too_long, 0, 0) < -(1 << 60)


def test_twin_chunks_give_the_same_runs(monkeypatch):
    rng = np.random.default_rng(4)
    seqs = random_family(rng, PROTEIN, 12, 20, 90, "protein")
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    S, go, ge, _ = PairScoring("local").fixed(PROTEIN)
    whole = pairwise_cpu.align_batch(seq, off, pa, pb, S, go, ge, 2, True)
    monkeypatch.setattr(pairwise_cpu, "CHUNK_WORDS", 300)  # a few pairs per chunk
    parts = pairwise_cpu.align_batch(seq, off, pa, pb, S, go, ge, 2, True)
    for x, y in zip(whole, parts):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("mode", MODES)
def test_identities_without_runs_equal_the_tracebacks(mode, monkeypatch):
    """``identities=True`` alone: the traceback's start cells and counts, no
    runs (kept nowhere, also when the twin works in chunks); score-only
    results have neither."""
    rng = np.random.default_rng(8)
    seqs = random_family(rng, PROTEIN, 14, 20, 120, "protein")
    scoring = PairScoring(mode)
    full = all_pairs(seqs, scoring, traceback=True, backend="cpu")
    monkeypatch.setattr(pairwise_cpu, "CHUNK_WORDS", 400)  # a few pairs per chunk
    counts = all_pairs(seqs, scoring, identities=True, backend="cpu")
    assert not counts.has_traceback and counts.identities is not None
    for name in ("score_fixed", "end", "start", "identities", "aligned_pairs", "columns"):
        assert np.array_equal(getattr(counts, name), getattr(full, name)), name
    assert np.array_equal(counts.identity, full.identity) and (counts.identities > 0).any()
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    S, go, ge, code = scoring.fixed(PROTEIN)
    monkeypatch.setattr(pairwise_cpu, "gather_runs", None)  # (the backend must not gather runs)
    res, runs, runs_off = pairwise_cpu.align_batch(seq, off, pa, pb, S, go, ge, code, True, runs=False)
    assert not runs.size and runs_off.shape == (len(pa) + 1,) and not runs_off.any()
    assert np.array_equal(res[:, [0, 1, 2, 3, 4, 6, 7]], np.column_stack(
        [full.score_fixed, full.end, full.start, full.identities, full.aligned_pairs]))
    with pytest.raises(ValueError, match="no traceback"):
        counts.cigar(0)
    with pytest.raises(ValueError, match="no identities"):
        _ = all_pairs(seqs, scoring, backend="cpu").identity


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_checkpointed_traceback_equals_full_matrix(mode):
    rng = np.random.default_rng(3)
    seqs = random_family(rng, PROTEIN, 10, 50, 200, "protein")
    seq, off = _packed(seqs)
    pa, pb = np.arange(len(seqs) - 1), np.arange(1, len(seqs))
    S, go, ge, _ = PairScoring("global", "BLOSUM62", 11, 1).fixed(PROTEIN)
    full = pairwise_cpu.align_batch(seq, off, pa, pb, S, go, ge, mode, True)
    tiled = pairwise_cpu.align_batch(seq, off, pa, pb, S, go, ge, mode, True, limit_cells=300)
    for x, y in zip(full, tiled):
        assert np.array_equal(x, y)


def test_30k_residue_pair_aligns_in_linear_ish_memory():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 20, 30_000).astype(np.uint8)
    b = a.copy()
    hit = rng.random(b.size) < 0.2
    b[hit] = rng.integers(0, 20, int(hit.sum()))
    b = np.delete(b, rng.integers(0, b.size, 50))
    seqs = make_sequences(["a", "b"], ["".join(PROTEIN[c] for c in x.tolist()).encode() for x in (a, b)], "protein")
    res = align_pairs(seqs, [(0, 1)], PairScoring("global"), traceback=True, backend="cpu")  # re-scored
    assert res.aligned_length[0] >= 30_000 and res.identity[0] > 0.8


def test_distance_matrix_and_kimura(refs):
    seqs = read_sequences(refs / "BB11001.tfa")
    d = pairwise_distance(seqs, backend="cpu")
    k = pairwise_distance(seqs, backend="cpu", kimura=True)
    assert d.values.shape == (4, 4) and (d.values[~np.eye(4, dtype=bool)] > 0).all()
    assert (k.values >= d.values).all() and k.method == "align-kimura"
    same = make_sequences(["x", "y"], [b"MKVLA", b"MKVLA"], "protein")
    assert pairwise_distance(same, backend="cpu").values[0, 1] == 0.0
    # a few pairs a call, progress counted after each: the same matrix
    counts = []
    chunked = pairwise_distance(seqs, backend="cpu", chunk_pairs=4, on_progress=lambda *c: counts.append(c))
    assert np.array_equal(chunked.values, d.values) and counts == [(4, 6), (6, 6)]



def test_alignment_distance_by_column_blocks_counts_by_hand():
    from msa_gpu.distances.alignment import alignment_distance

    gap = 4
    codes = np.array([[0, 1, 2, 3, gap, 0], [0, 1, 3, gap, gap, 0], [gap, 1, 2, 3, 1, 1]])
    d = alignment_distance(codes, gap).values
    # rows 0/1: 4 residue pairs (cols 0, 1, 2, 5), 3 identical; rows 0/2: 4 pairs, 3 identical; rows 1/2: 3 pairs (cols 1, 2, 5), 1
    want = 1.0 - np.array([[1, 3 / 4, 3 / 4], [3 / 4, 1, 1 / 3], [3 / 4, 1 / 3, 1]])
    assert np.allclose(d, want)
    for block in (1, 3 * 5 * 4, 3 * 5 * 4 * 4):  # a column a block, one, four
        assert np.array_equal(alignment_distance(codes, gap, block_bytes=block).values, d)


runner = CliRunner()


def test_cli_pairwise_tsv(refs, tmp_path):
    out = tmp_path / "p.tsv"
    res = runner.invoke(app, ["pairwise", str(refs / "BB11001.tfa"), "--mode", "local", "--traceback",
                              "--backend", "cpu", "-o", str(out)])
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0].split("\t")[:3] == ["name_a", "name_b", "score"] and lines[0].endswith("cigar")
    assert len(lines) == 1 + 6
    first = lines[1].split("\t")
    assert first[:2] == ["1aab_", "1j46_A"] and float(first[2]) > 0 and set(first[-1]) <= set("0123456789MID")


def test_cli_pairwise_without_traceback_is_the_same_table_less_the_cigar(refs, tmp_path):
    rows = {}
    for flag in ([], ["--traceback"]):
        out = tmp_path / f"p{len(flag)}.tsv"
        res = runner.invoke(app, ["pairwise", str(refs / "BB11001.tfa"), "--mode", "semiglobal", "--backend", "cpu",
                                  "-o", str(out), *flag])
        assert res.exit_code == 0, res.output
        rows[bool(flag)] = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[False][0][-1] == "b_end" and len(rows[False]) == 7
    assert rows[False] == [r[:-1] for r in rows[True]]


def test_cli_distmat_phylip_in_input_order(refs, tmp_path):
    out = tmp_path / "d.phy"
    res = runner.invoke(app, ["distmat", str(refs / "BB11001.tfa"), "--backend", "cpu", "-o", str(out)])
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "4" and [l.split()[0] for l in lines[1:]] == ["1aab_", "1j46_A", "1k99_A", "2lef_A"]
    vals = np.array([[float(x) for x in l.split()[1:]] for l in lines[1:]])
    assert np.allclose(vals, vals.T) and not np.diag(vals).any()


def test_cli_bad_input_one_line_error(tmp_path):
    bad = tmp_path / "bad.fa"
    bad.write_text(">ok\nMKV\n>broken\nMK#V\n")
    out = tmp_path / "o.tsv"
    for cmd in ("pairwise", "distmat"):
        res = runner.invoke(app, [cmd, str(bad), "--backend", "cpu", "-o", str(out)])
        assert res.exit_code == 2
        assert res.stderr.strip() == f"msagpu: error: {bad}: sequence 'broken': invalid protein character '#' at position 3"
        assert not out.exists()


# ------------------------------------------------------------------------ GPU

def _compare(a, b):
    assert np.array_equal(a.score_fixed, b.score_fixed)
    assert np.array_equal(a.end, b.end)
    assert a.has_traceback == b.has_traceback and (a.identities is None) == (b.identities is None)
    if a.identities is not None:
        for name in ("start", "identities", "aligned_pairs", "columns"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    if a.has_traceback:
        for name in ("runs", "runs_offsets"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind,letters,matrix,go,ge", [CASES[0], CASES[3]])
def test_gpu_matches_twin_bit_for_bit(mode, kind, letters, matrix, go, ge):
    rng = np.random.default_rng(11)
    seqs = random_family(rng, letters, 40, 1, 300, kind)
    scoring = PairScoring(mode, matrix, go, ge)
    for tb, ident in ((False, False), (False, True), (True, False)):  # score-only, identities, traceback
        cpu = all_pairs(seqs, scoring, traceback=tb, identities=ident, backend="cpu")
        gpu = all_pairs(seqs, scoring, traceback=tb, identities=ident, backend="gpu")
        _compare(cpu, gpu)
        small = all_pairs(seqs, scoring, traceback=tb, identities=ident, backend="gpu", batch_bytes=300_000)
        _compare(cpu, small)  # (many batches)
        twice = all_pairs(seqs, scoring, traceback=tb, identities=ident, backend="gpu", devices=[0, 0])
        _compare(cpu, twice)  # (the split path)
    from msa_gpu.backend import pairwise_gpu

    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    S, gof, gef, code = scoring.fixed(letters)
    twin = pairwise_cpu.align_batch(seq, off, pa, pb, S, gof, gef, code, True)
    stats: dict = {}
    chunked = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, code, True, stats=stats,
                                       chunk_words=int(np.diff(off)[pa].sum() // 3))
    assert stats["traceback_chunks"] >= 3
    for x, y in zip(twin, chunked):
        assert np.array_equal(x, y)
    counts = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, code, True, runs=False,
                                      chunk_words=int(np.diff(off)[pa].sum() // 3))
    assert np.array_equal(counts[0], twin[0]) and not counts[1].size and not counts[2].any()


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_gpu_warp_per_pair_traceback_equals_twin(mode):
    """pairwise_wide (a warp per pair: bands of 256 rows, lanes handing rows
    down) gives the twin's scores, end cells and runs, on pairs of one to
    several bands and empty boxes, in any batch and on a split."""
    from msa_gpu.backend import pairwise_gpu

    rng = np.random.default_rng(23 + mode)
    seqs = random_family(rng, PROTEIN, 24, 1, 900, "protein")
    raw = list(seqs.raw) + [b"W" * 256, b"W" * 257, b"ACDWK" * 60, b"P" * 520]  # band edges, repeats
    seqs = make_sequences([f"s{k}" for k in range(len(raw))], raw, "protein")
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    for go, ge in ((11, 1), (0.5, 0.0)):
        S, gof, gef, _ = PairScoring(MODES[mode], "BLOSUM62", go, ge).fixed(PROTEIN)
        twin = pairwise_cpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True)
        stats: dict = {}
        wide = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True, wide=True, stats=stats)
        assert stats["pairs_tbw"] == len(pa) and stats.get("pairs_tb", 0) == 0, stats
        narrow: dict = {}
        split: dict = {}
        outs = [wide, pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True, wide=False, stats=narrow),
                pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True),  # as `wide_groups` says
                pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True, wide=True, devices=[0, 0],
                                         batch_bytes=40_000_000, stats=split)]  # a few groups a batch
        assert narrow["pairs_tb"] == len(pa) and narrow["pairs_tbw"] == 0, narrow
        assert split["pairs_tbw"] == len(pa), split
        for out in outs:
            for x, y in zip(twin, out):
                assert np.array_equal(x, y), (go, ge)


@pytest.mark.gpu
def test_gpu_twin_pairs_in_one_device_range_only():
    """Groups too big for ``batch_bytes`` go to the CPU twin. Here they all lie
    in the second device's range: the first places its runs on the device
    before the one synchronisation, and the host places the second's around
    the twin's. The runs and offsets are the twin's."""
    from msa_gpu.backend import pairwise_device, pairwise_gpu

    rng = np.random.default_rng(31)
    short = ["".join(rng.choice(list(PROTEIN[:20]), int(rng.integers(30, 50)))).encode() for _ in range(40)]
    long = ["".join(rng.choice(list(PROTEIN[:20]), 300)).encode() for _ in range(2)]
    seqs = make_sequences([f"s{k}" for k in range(42)], short + long, "protein")
    seq, off = _packed(seqs)
    sa, sb = np.triu_indices(40, 1)  # 780 short pairs, then 80 long ones
    pa = np.concatenate([sa, np.repeat([40, 41], 40)])
    pb = np.concatenate([sb, np.tile(np.arange(40), 2)])
    S, gof, gef, _ = PairScoring("global").fixed(PROTEIN)
    twin = pairwise_cpu.align_batch(seq, off, pa, pb, S, gof, gef, 0, True)
    stats: dict = {}
    got = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, 0, True, devices=[0, 0], batch_bytes=150_000,
                                   stats=stats)
    assert 80 <= stats["pairs_cpu_twin"] < 200, stats  # (groups holding a long pair)
    bounds = pairwise_device._Run(seq, off, pa, pb, S, gof, gef, 0, True, {}).split(2, False)
    assert 0 < bounds[1] < 780, bounds  # (the first range: short pairs only)
    for x, y in zip(twin, got):
        assert np.array_equal(x, y)
    stats = {}
    counts = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, 0, True, devices=[0, 0], batch_bytes=150_000,
                                      stats=stats, runs=False)  # (no runs: the twin's counts land in res)
    assert stats["pairs_cpu_twin"] >= 80 and np.array_equal(counts[0], twin[0]) and not counts[1].size
    assert counts[2].shape == (len(pa) + 1,) and not counts[2].any()


@pytest.mark.gpu
def test_gpu_30k_pair_score_and_traceback():
    rng = np.random.default_rng(5)
    raw = ["".join(rng.choice(list(PROTEIN[:20]), 30_000)).encode() for _ in range(2)]
    seqs = make_sequences(["a", "b"], raw, "protein")
    for mode in ("global", "local"):
        cpu = align_pairs(seqs, [(0, 1)], PairScoring(mode), backend="cpu")
        gpu = align_pairs(seqs, [(0, 1)], PairScoring(mode), backend="gpu")
        _compare(cpu, gpu)
    tb = align_pairs(seqs, [(0, 1)], PairScoring("local"), traceback=True, backend="gpu")  # re-scored
    assert tb.score_fixed[0] == cpu.score_fixed[0]


def _score_only_cases(mode, seed, count, maxlen, extra):
    """A random protein family of ``count`` (lengths 1..``maxlen``) plus the
    sequences ``extra(raw)`` returns, all its pairs; for each of three gap
    settings: (go, ge), the arguments of ``align_batch`` (score-only) and the
    twin's result."""
    rng = np.random.default_rng(seed)
    seqs = random_family(rng, PROTEIN, count, 1, maxlen, "protein")
    raw = list(seqs.raw) + extra(seqs.raw)
    seqs = make_sequences([f"s{k}" for k in range(len(raw))], raw, "protein")
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    code = {"global": 0, "semiglobal": 1, "local": 2}[mode]
    for go, ge in ((11, 1), (3.5, 2.5), (0.5, 0.0)):
        S, gof, gef, _ = PairScoring(mode, "BLOSUM62", go, ge).fixed(PROTEIN)
        args = (seq, off, pa, pb, S, gof, gef, code, False)
        yield (go, ge), args, pairwise_cpu.align_batch(*args)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
def test_gpu_packed_16bit_kernel_equals_twin_with_ties_and_fallback(mode):
    from msa_gpu.backend import pairwise_gpu

    # duplicates tie; W*2800 overflows 16 bits; repeats: the best score is met in many rows and
    # columns (local: the end row's strip is recomputed)
    def extra(raw):
        return [raw[3], raw[3], b"W" * 2800, b"W" * 2790,
                b"ACDWK" * 60, b"ACDWK" * 25, b"GWKDA" * 33 + b"ACDWK" * 7, b"MKV" * 100]

    for gaps, args, twin in _score_only_cases(mode, 17, 60, 400, extra):
        stats: dict = {}
        gpu = pairwise_gpu.align_batch(*args, stats=stats)
        assert stats["pairs_s16"] > 0 and stats["pairs_s32"] > 0, stats  # both kernels ran
        wide = pairwise_gpu.align_batch(*args, use16=False)
        split = pairwise_gpu.align_batch(*args, devices=[0, 0], batch_bytes=2_000_000)
        for out in (gpu, wide, split):
            assert np.array_equal(out[0], twin[0]), gaps


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
def test_gpu_split_16bit_kernel_equals_twin(mode):
    """The 16-bit kernel's split variant (a pair per lane, two strips of it
    skewed by a column) gives the twin's scores and end cells: every group
    split, none, as `wide_groups` says, and on a split of the pairs, with
    ties (repeats) across the two halves' rows."""
    from msa_gpu.backend import pairwise_gpu

    def extra(raw):
        return [raw[5], b"ACDWK" * 60, b"ACDWK" * 13, b"GWKDA" * 33 + b"ACDWK" * 7, b"MKV" * 70]

    for gaps, args, twin in _score_only_cases(mode, 29, 50, 600, extra):
        for kw in ({"wide": True}, {"wide": False}, {}, {"wide": True, "devices": [0, 0]}):
            stats: dict = {}
            out = pairwise_gpu.align_batch(*args, stats=stats, **kw)
            assert np.array_equal(out[0], twin[0]), (gaps, kw)
            split = [int(x.split()[1][7:]) for v in stats.values() if isinstance(v, list) for x in v
                     if x.startswith("s16split ")]
            assert stats["pairs_s16"] == len(args[2]), stats
            if "wide" in kw:
                assert (sum(split) > 0) == kw["wide"], (kw, stats)


def test_guessed_run_memory_keeps_its_first_words_or_is_dropped():
    from msa_gpu.backend import pairwise_host as pg

    g = pg._Guess(1 << 22)
    assert g.size == int((1 << 22) * pg.RUNS_GUESS) > 5000
    out = g.take(5000)
    assert out.shape == (5000,) and out.flags.writeable and not out.any()
    out[:] = np.arange(5000)
    g.release().result()  # (the rest of its pages went back: what is kept is untouched)
    assert np.array_equal(out, np.arange(5000))
    g = pg._Guess(1 << 22)
    out = g.take(g.size + 3000)  # (the mapping grows, its first pages kept: faulted in, zeros)
    assert out.shape == (g.size + 3000,) and not out[:g.size].any()
    out[-3000:] = 7
    assert g.release() is None and out[-1] == 7
    g = pg._Guess(1 << 22)
    held = g.array[:1]  # (a view left on it: the mapping cannot move, so the guess is dropped)
    assert g.take(g.size + 1) is None and held[0] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("share", [1.0, 0.01, 1e-6])
def test_gpu_runs_land_in_a_guess_or_beside_it(monkeypatch, share):
    """The runs land in memory faulted in while the kernels ran: all of them
    when the guess holds them (share 1: the whole bound), else the guess
    grows and the rest is faulted in as the runs copy (a device's part may
    straddle the two); on one device, on a split, and with pairs of the CPU
    twin (the guess is dropped)."""
    from msa_gpu.backend import pairwise_gpu, pairwise_host

    monkeypatch.setattr(pairwise_host, "RUNS_GUESS_MIN", 0)
    monkeypatch.setattr(pairwise_host, "RUNS_GUESS", share)
    made = []

    class Guess(pairwise_gpu._Guess):
        def take(self, n):
            made.append((self.size, n))
            return super().take(n)

    monkeypatch.setattr(pairwise_gpu, "_Guess", Guess)
    twin_runs = 0
    rng = np.random.default_rng(5)
    seqs = random_family(rng, PROTEIN, 30, 1, 200, "protein")
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    for mode in (0, 2):
        S, gof, gef, _ = PairScoring(MODES[mode]).fixed(PROTEIN)
        twin = pairwise_cpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True)
        for kw in ({}, {"devices": [0, 0]}, {"devices": [0, 0], "batch_bytes": 60_000}):
            made.clear()
            stats: dict = {}
            got = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, True, stats=stats, **kw)
            for x, y in zip(twin, got):
                assert np.array_equal(x, y), (mode, kw)
            if stats["pairs_cpu_twin"]:
                twin_runs += 1
                assert not made, made  # (dropped: the host places the runs around the twin's)
            else:
                assert len(made) == 1 and (made[0][0] >= made[0][1]) == (share == 1.0), made
                owner = got[1]
                while isinstance(owner, np.ndarray) and owner.base is not None:
                    owner = owner.base
                assert isinstance(getattr(owner, "obj", owner), mmap.mmap), owner
    assert twin_runs, "no call sent pairs to the CPU twin"


def test_gpu_schedule_helpers_without_a_gpu():
    from msa_gpu.backend import pairwise_device as device
    from msa_gpu.backend import pairwise_host as host
    from msa_gpu.backend import pairwise_launch as pg

    S, go, ge, _ = PairScoring("global", "BLOSUM62", 11, 1).fixed(PROTEIN)
    u = pg.cost_unit(S, go, ge)
    assert u == 100  # BLOSUM62 with gaps 11/1 in fixed point: back to integer units
    dims = np.array([[1000, 1000], [2720, 2720], [3000, 3000]])
    assert pg.fits16(dims, S // u, go // u, ge // u).tolist() == [True, True, False]
    m = np.array([5, 900, 33, 17, 900]); n = np.array([7, 10, 900, 33, 880])
    plan = pg.plan_warps(m, n, 2, 4)
    assert sorted(plan.slots.ravel().tolist()) == [-1, 0, 1, 2, 3, 4]
    assert (plan.dims[:, 0] % 4 == 0).all() and (plan.dims[:, 1] % 4 == 0).all()
    # groups run costliest first (Mw x Nw), whatever the pair order made them
    assert (np.diff(plan.cost()) <= 0).all()
    lpt = pg.plan_warps(np.array([100, 20, 20]), np.array([4, 1000, 1000]), 1, 4)
    assert lpt.slots.ravel().tolist() == [1, 2, 0]
    # a warp per pair for groups that would outlast their share of the pass
    dims = np.array([[1000, 1000], [200, 200], [208, 104]] + [[96, 96]] * 100)
    assert pg.wide_groups(dims, 4000, 1.0).all()  # 103 warps on 4,000 slots: every one is the whole pass
    assert pg.wide_groups(dims, 10, 1.0).tolist() == [True] + [False] * 102
    many = np.concatenate([dims[:3], np.full((100_000, 2), 96)])
    assert pg.wide_groups(many, 4000, 1.0).tolist() == [True, False, False] + [False] * 100_000
    wp = pg.WarpPlan(np.zeros((2, 32), np.int64), np.array([[256, 100], [264, 4]]))
    assert wp.wide_dir_words().tolist() == [32 * 32 * 136, 32 * 64 * 40]  # 1 or 2 bands of 32 strips; steps n + 31 to 8
    batches = pg._batches(np.arange(5), np.array([4, 4, 4, 9, 1]), 8)
    assert [b.tolist() for b in batches] == [[0, 1], [2], [3], [4]]
    rng = np.random.default_rng(2)
    # the devices' ranges come from the estimated cost of spans of the pairs
    lens = rng.integers(50, 1000, 300)
    off = np.concatenate(([0], np.cumsum(lens)))
    pa = rng.integers(0, 300, 200_000)
    pb = rng.integers(0, 300, 200_000)
    pa[:50_000] = np.argmax(lens)  # the first quarter is the heaviest
    run = device._Run(np.zeros(int(off[-1]), np.uint8), off, pa, pb, S, go, ge, 0, False, {})
    full = (lens[pa] * lens[pb]).astype(np.float64)
    for k in (1, 2, 3, 4):
        b = run.split(k, False)
        assert b[0] == 0 and b[-1] == len(pa) and (np.diff(b) > 0).all()
        shares = np.array([full[x:y].sum() for x, y in itertools.pairwise(b)])
        assert shares.max() / shares.mean() < 1.01, (k, shares)
    # the pairs are staged as two int32 columns, from the columns of one (P, 2) array or from two arrays
    rows = np.stack([pa, pb], axis=1)
    for a, b in ((rows[:, 0], rows[:, 1]), (pa, pb), (pa[:3], pb[:3]), (pa[:0], pb[:0])):
        out = np.full(2 * len(a), -1, np.int32)
        host._cast_columns(a, b, out)
        assert np.array_equal(out, np.concatenate([a, b]))
    for P in (0, 1, 3, 5):  # fewer pairs than spans, or than devices: every pair in exactly one range
        b = device._Run(np.zeros(int(off[-1]), np.uint8), off, pa[:P], pb[:P], S, go, ge, 0, False, {}).split(4, False)
        assert len(b) == 5 and b[0] == 0 and b[-1] == P and (np.diff(b) >= 0).all()



@pytest.mark.gpu
def test_gpu_bad_device_raises_instead_of_hanging():
    from msa_gpu.backend import pairwise_gpu

    rng = np.random.default_rng(3)
    seqs = random_family(rng, PROTEIN, 6, 20, 60, "protein")
    seq, off = _packed(seqs)
    pa, pb = np.triu_indices(len(seqs), 1)
    S, gof, gef, code = PairScoring("global").fixed(PROTEIN)
    import cupy as cp

    for mode, tb in ((code, False), (code, True), (2, True)):  # (tracebacks: the good device's thread waits for the bad one's)
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
            pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, mode, tb, devices=[0, 1 << 20],
                                     chunk_words=1 << 40)  # (no early check of the devices' memory)
    good = pairwise_gpu.align_batch(seq, off, pa, pb, S, gof, gef, code, False, devices=[0])  # still usable
    assert np.array_equal(good[0], pairwise_cpu.align_batch(seq, off, pa, pb, S, gof, gef, code, False)[0])
