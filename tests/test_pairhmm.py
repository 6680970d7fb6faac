"""ProbCons' pair-HMM posteriors (issue 29, first step): against brute-force
enumeration of every path, rows sum to at most 1, long pairs stay finite."""

import numpy as np
import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.consistency.pairhmm import pair_posteriors, probcons_model
from msa_gpu.io import make_sequences

MODEL = probcons_model()
X_STATES, Y_STATES = (1, 3), (2, 4)


def _brute(x, y):
    """Z and the match posteriors by enumerating every state path."""
    L1, L2 = len(x), len(y)
    post = np.zeros((L1, L2))
    total = [0.0]

    def walk(i, j, state, prob, matches):
        if i == L1 and j == L2:
            p = prob * MODEL.init[state]
            total[0] += p
            for a, b in matches:
                post[a, b] += p
            return
        for nxt in range(5):
            t = MODEL.init[nxt] if state is None else MODEL.trans[state, nxt]
            if t == 0.0:
                continue
            if nxt == 0 and i < L1 and j < L2:
                walk(i + 1, j + 1, nxt, prob * t * MODEL.pair[x[i], y[j]], matches + [(i, j)])
            elif nxt in X_STATES and i < L1:
                walk(i + 1, j, nxt, prob * t * MODEL.single[x[i]], matches)
            elif nxt in Y_STATES and j < L2:
                walk(i, j + 1, nxt, prob * t * MODEL.single[y[j]], matches)

    walk(0, 0, None, 1.0, [])
    return total[0], post / total[0]


@pytest.mark.parametrize("x, y", [([0], [0]), ([0, 4], [4]), ([3, 3, 1], [1, 3]), ([5, 17, 2], [5, 2, 2]),
                                  ([22, 0], [0, 9, 22])])
def test_posteriors_equal_brute_force_enumeration(x, y):
    _, want = _brute(x, y)
    got = pair_posteriors(np.array(x), np.array(y), MODEL)
    assert got.shape == (len(x), len(y))
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)


def test_model_is_probcons_and_transitions_sum_to_one():
    assert MODEL.init.sum() == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(MODEL.trans.sum(axis=1), 1.0)
    assert np.allclose(MODEL.pair, MODEL.pair.T)
    assert MODEL.pair[:20, :20].sum() == pytest.approx(1.0, abs=1e-3)  # a joint distribution
    assert MODEL.trans[0, 0] == pytest.approx(1 - 2 * (0.0119511066 + 0.008008334786))


def test_long_pair_rows_sum_to_at_most_one_and_the_identity_is_sure():
    """Scaling keeps 600-residue pairs finite; each residue is aligned to at
    most one residue (rows and columns sum to <= 1); a sequence against itself
    puts nearly all mass on the diagonal."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 20, 600)
    y = np.concatenate([x[:250], rng.integers(0, 20, 40), x[300:]])
    p = pair_posteriors(x, y, MODEL)
    assert np.isfinite(p).all() and p.min() >= 0.0
    assert p.sum(axis=1).max() <= 1.0 + 1e-9 and p.sum(axis=0).max() <= 1.0 + 1e-9
    assert np.mean(p[np.arange(250), np.arange(250)]) > 0.9
    same = pair_posteriors(x, x, MODEL)
    assert np.diag(same).min() > 0.99


def test_unrelated_long_pair_keeps_its_end_cell():
    """Two unrelated 400-residue sequences: per-row scaling lost the last
    cell of the last row (the partition function became 0); per-anti-diagonal
    scaling keeps it."""
    rng = np.random.default_rng(0)
    p = pair_posteriors(rng.integers(0, 20, 400), rng.integers(0, 20, 400), MODEL)
    assert np.isfinite(p).all() and 0.0 < p.sum(axis=1).max() <= 1.0 + 1e-9


def _transform(P, n, cutoff=0.01):
    """One transformation of the dense matrices P[s, t], in double precision, cut at ``cutoff``."""
    out = {}
    for s in range(n):
        for t in range(n):
            if s != t:
                m = (2 * P[s, t] + sum(P[s, u] @ P[u, t] for u in range(n) if u not in (s, t))) / n
                out[s, t] = np.where(m >= cutoff, m, 0.0)
    return out


@pytest.mark.parametrize("passes", [1, 2])
def test_posterior_library_is_the_consistency_transform_of_the_posteriors(passes):
    """Entries are n * P' * ONE^2, P' the posteriors (below 0.01 dropped, as
    ProbCons) after ``passes`` transformations P_st <- (2 P_st + sum over
    third u of P_su P_ut) / n, each cut at 0.01 again: checked against dense
    matrix products on a 4-sequence family."""
    from msa_gpu.consistency import posterior_library
    from msa_gpu.io import make_sequences
    from msa_gpu.types import LIBRARY_ONE

    raw = [b"MKVLAAGIWKE", b"MKVLSAGIWE", b"MKALAAGVWKE", b"PKVLAAGIW"]
    seqs = make_sequences(list("abcd"), raw, "protein")
    n = len(raw)
    P = {}
    for s in range(n):
        for t in range(n):
            if s != t:
                p = pair_posteriors(seqs.codes[s], seqs.codes[t], MODEL)
                P[s, t] = np.where(p >= 0.01, p, 0.0)
    for _ in range(passes):
        P = _transform(P, n)
    lib = posterior_library(seqs, passes=passes)
    k = 0
    for s in range(n):
        for t in range(s + 1, n):
            want = P[s, t] * n * LIBRARY_ONE ** 2
            got = np.zeros_like(want)
            lo, hi = lib.pair_off[k], lib.pair_off[k + 1]
            got[lib.x[lo:hi], lib.y[lo:hi]] = lib.w[lo:hi]
            assert np.abs(got - want).max() <= 0.5 + 1e-6
            k += 1
    assert lib.identity[0, 1] > lib.identity[0, 3] > 0.0


def test_libraries_built_together_equal_those_built_alone():
    """A batch's families share one posterior pass and one launch a
    transformation pass (`posterior_libraries`): each family's library is
    the one it gets alone, in one group or one group a family, a lone
    sequence included."""
    from msa_gpu.consistency import posterior_libraries, posterior_library

    rng = np.random.default_rng(8)
    letters = list(b"ACDEFGHIKLMNPQRSTVWY")
    fams = []
    for n, length in ((6, 50), (1, 20), (3, 35), (2, 12)):
        base = rng.choice(letters, length)
        raw = []
        for _ in range(n):
            s = base.copy()
            hit = rng.random(length) < 0.3
            s[hit] = rng.choice(letters, hit.sum())
            raw.append(s[rng.random(length) > 0.1].astype(np.uint8).tobytes())
        fams.append(make_sequences([f"s{i}" for i in range(n)], raw, "protein"))
    for together in (posterior_libraries(fams), posterior_libraries(fams, group_cells=1)):
        for fam, lib in zip(fams, together):
            alone = posterior_library(fam)
            for name in ("pair_off", "x", "y", "w", "identity"):
                assert np.array_equal(getattr(lib, name), getattr(alone, name)), name
    assert together[1].n_entries == 0 and together[0].n_entries > 0


def test_accurate_mode_runs_on_the_posterior_library(refs):
    from msa_gpu.aligner import Aligner
    from msa_gpu.backend import cpu_backend
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.io import read_sequences

    seqs = read_sequences(refs / "BB11001.tfa")
    res = Aligner(AlignerConfig(mode="accurate", library_mode="posterior"), backend=cpu_backend()).align(seqs)
    res.alignment.check(seqs)
    assert res.library is not None and res.library.n_entries > 0



def _blocky_family(seed: int = 3, n: int = 8):
    """n proteins: a conserved 40-residue block, 30 residues drawn at random
    for each sequence (unalignable), and another conserved 40."""
    rng = np.random.default_rng(seed)
    letters = list("ACDEFGHIKLMNPQRSTVWY")
    left, right = rng.choice(letters, 40), rng.choice(letters, 40)
    raw = []
    for _ in range(n):
        a, b = left.copy(), right.copy()
        for part in (a, b):
            hit = rng.random(40) < 0.1
            part[hit] = rng.choice(letters, hit.sum())
        raw.append("".join(a) + "".join(rng.choice(letters, 30)) + "".join(b))
    return make_sequences([f"s{i}" for i in range(n)], [r.encode() for r in raw], "protein")


def test_column_confidence_is_lower_in_a_shuffled_block():
    """Columns of the unalignable block score lower than the conserved ones,
    and every score lies in [0, 1], one a column (CPU; CPU = GPU through the
    posteriors' parity test)."""
    seqs = _blocky_family()
    res = Aligner(AlignerConfig(mode="fast", backend="cpu"), backend=cpu_backend()).align(seqs)
    scores = res.column_scores()
    assert scores.shape == (res.alignment.n_cols,) and scores.min() >= 0.0 and scores.max() <= 1.0
    cols = np.flatnonzero(res.alignment.row_mask(0))  # sequence 0's residues' columns
    conserved = np.concatenate([scores[cols[:40]], scores[cols[70:]]])
    shuffled = scores[cols[40:70]]
    print(f"conserved {conserved.mean():.3f}, shuffled {shuffled.mean():.3f}")
    assert conserved.mean() > 0.9 and shuffled.mean() < 0.6 * conserved.mean(), (conserved.mean(), shuffled.mean())
    assert np.median(shuffled) < np.min(conserved)


def test_column_scores_file_and_stockholm_pp_line(tmp_path):
    """`--column-scores FILE` writes one value a column; Stockholm output
    carries them as `#=GC PP_cons`, which Biopython reads back; DNA is refused
    before any work with a one-line error."""
    from Bio import AlignIO
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app
    from msa_gpu.io import posterior_line

    seqs = _blocky_family()
    src = tmp_path / "in.fa"
    src.write_text("".join(f">{n}\n{r.decode()}\n" for n, r in zip(seqs.names, seqs.raw)))
    out, scores = tmp_path / "out.sto", tmp_path / "cols.txt"
    res = CliRunner().invoke(app, ["align", str(src), "-o", str(out), "--column-scores", str(scores),
                                   "--backend", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    values = np.loadtxt(scores)
    aln = AlignIO.read(str(out), "stockholm")
    pp = aln.column_annotations["posterior_probability"]
    assert len(values) == aln.get_alignment_length() == len(pp)
    assert pp == posterior_line(values)
    dna = tmp_path / "dna.fa"
    dna.write_text(">a\nACGTACGT\n>b\nACGTTCGT\n")
    res = CliRunner().invoke(app, ["align", str(dna), "-o", str(tmp_path / "d.fa"), "--column-scores",
                                   str(tmp_path / "d.txt"), "--backend", "cpu", "-q"])
    assert res.exit_code != 0 and "needs protein" in res.output and not (tmp_path / "d.txt").exists()


def test_the_cpu_engine_reuses_dirty_work_space_to_the_bit():
    """The numba engine's work space is reused between pairs (issue 43): a
    pair computed in work space full of another pair's values (or NaN) gives
    `pair_posteriors`' cells to the bit, as its cut at the cutoff, row-major
    (stored in single precision, as ProbCons stores them); and powers of two taken as a product are ldexp to the bit, subnormal
    results and out-of-range exponents included."""
    from msa_gpu.backend.posterior_cpu import _pow2, _times_pow2, sparse_posteriors

    model = probcons_model(20)
    rng = np.random.default_rng(4)
    F, B = np.full((130, 130), np.nan), np.full((3, 5, 130), np.nan)
    for trial in range(40):
        x = rng.integers(0, 20, int(rng.integers(1, 129)))
        y = x.copy() if trial % 2 else rng.integers(0, 20, int(rng.integers(1, 129)))
        if trial % 2:
            y[rng.random(len(y)) < 0.3] = 7
        dense = pair_posteriors(x, y, model)
        rows, cols, vals = sparse_posteriors(x, y, model.init, model.trans, model.pair, model.single, 0.01, F, B)
        want = np.nonzero(dense >= 0.01)
        assert np.array_equal(rows, want[0]) and np.array_equal(cols, want[1])
        assert vals.dtype == np.float32 and np.array_equal(vals, dense[want].astype(np.float32))

    with np.errstate(over="ignore"):
        for v in (1.0, 0.7312, 3.3e-300, 5e-320, 1.7e308):
            for k in (-1100, -1074, -1030, -1022, -60, -1, 0, 1, 60, 1000, 1023, 1100):
                assert _times_pow2(v, _pow2(k), k) == np.ldexp(v, k)


def test_the_consistency_transformation_reuses_its_dense_work_space():
    from msa_gpu.backend.posterior_cpu import consistency_pair
    from msa_gpu.consistency.probabilistic import CUTOFF, _Group

    seqs = make_sequences([f"s{i}" for i in range(5)], [b"MKVLAWQRSTEE", b"MKVAWQRSTE", b"KVLAWRSTEEG",
                                                        b"MKVLQRSTEE", b"MVLAWQRTEE"], "protein")
    group = _Group([seqs])
    flat = group.posteriors(probcons_model(20), CUTOFF, np)
    indptr, indices, data, base = group.ordered_csr(flat, np)
    lengths = seqs.lengths
    used = np.zeros((12, 12), np.int64)  # one work space for every pair: each leaves it all zero again
    for s, t in ((0, 1), (2, 4), (1, 3)):
        fresh = consistency_pair(s, t, 5, lengths, indptr, indices, data, base, CUTOFF, np.zeros((12, 12), np.int64))
        again = consistency_pair(s, t, 5, lengths, indptr, indices, data, base, CUTOFF, used)
        assert all(np.array_equal(a, b) for a, b in zip(fresh, again)) and len(fresh[0]) > 0
        assert not used.any()


def test_model_has_probcons_published_gap_parameters_on_their_states():
    """ProbCons 1.12's ``Defaults.h`` (Do et al. 2005; ../shared/models.md):
    initial {0.6815, 8.6e-5, 8.6e-5, 0.159, 0.159}, gap open {0.01195,
    0.00801} and gap extend {0.3966, 0.8989} for the short and the long
    insert states. States 1, 2 are the short inserts (x, y), 3, 4 the long
    ones: open and extend exchanged, or the short and long states'
    parameters exchanged, keep every sum and symmetry but fail here."""
    m = probcons_model()
    published = dict(init=[0.6815, 8.6e-5, 8.6e-5, 0.159, 0.159], open_=[0.01195, 0.01195, 0.00801, 0.00801],
                     extend=[0.3966, 0.3966, 0.8989, 0.8989])
    assert m.init == pytest.approx(published["init"], rel=2e-3)
    assert m.trans[0, 1:] == pytest.approx(published["open_"], rel=2e-3)  # match -> each insert state
    assert np.diag(m.trans)[1:] == pytest.approx(published["extend"], rel=2e-3)  # each insert state -> itself
    assert m.trans[1:, 0] == pytest.approx([1 - e for e in published["extend"]], rel=2e-3)  # and back to match
    assert m.trans[0, 0] == pytest.approx(1 - 2 * (0.01195 + 0.00801), rel=1e-4)
    inserts = m.trans[1:, 1:]
    assert np.count_nonzero(inserts - np.diag(np.diag(inserts))) == 0  # no insert state enters another
    # the short state opens more often and ends sooner than the long one (ProbCons' design)
    assert m.trans[0, 1] > m.trans[0, 3] and m.trans[1, 1] < m.trans[3, 3]


def _cut(p):
    """Posteriors below ProbCons' cutoff 0.01 count as 0."""
    return np.where(p >= 0.01, p, 0.0)


def test_expected_identity_is_over_the_shorter_sequence():
    """The guide tree's expected identity of a pair: the posterior mass on
    identical residue pairs (cut at 0.01) over the SHORTER length. A
    sequence and its 6-residue prefix share every residue of the prefix:
    by hand that is about 6 / 6 = 1 (over the longer, 6 / 14 < 0.5); and the
    value is the dense posteriors' identical mass (each value in single
    precision, as stored) / 6 exactly, for every pair of a three-sequence
    family of lengths 14, 6 and 10."""
    from msa_gpu.consistency import posterior_library
    from msa_gpu.consistency.library import library_distance

    raw = [b"MKVLAWQRSTEGHP", b"MKVLAW", b"MKVIAWQRST"]
    seqs = make_sequences(["long", "prefix", "mid"], raw, "protein")
    lib = posterior_library(seqs)
    assert lib.identity[0, 1] > 0.9 and lib.identity[1, 0] == lib.identity[0, 1]
    for s, t in ((0, 1), (0, 2), (1, 2)):
        p = _cut(pair_posteriors(seqs.codes[s], seqs.codes[t], MODEL)).astype(np.float32).astype(np.float64)
        same = seqs.codes[s][:, None] == seqs.codes[t][None, :]
        want = p[same].sum() / min(len(raw[s]), len(raw[t]))
        assert lib.identity[s, t] == pytest.approx(want, rel=1e-9), (s, t)
    assert library_distance(lib).values[0, 1] == pytest.approx(1 - lib.identity[0, 1])


def test_column_confidence_averages_over_the_pairs_that_both_have_a_residue():
    """A column's confidence is the mean posterior of the residue pairs it
    holds, over the pairs of sequences with a residue in BOTH (not either).
    Hand-built alignment with gaps::

        a  M K V L W
        b  M K - L W
        c  M - - - W

    columns 1 and 3: only (a, b) counts, so the score is that pair's
    posterior alone (dividing by the 3 pairs where either has a residue
    would give a third of it); column 2: no pair, 0; columns 0 and 4: the
    mean of all three pairs' posteriors (each from the dense forward-backward,
    cut at 0.01, in single precision as stored)."""
    from msa_gpu.consistency.confidence import column_confidence
    from msa_gpu.types import Alignment

    seqs = make_sequences(list("abc"), [b"MKVLW", b"MKLW", b"MW"], "protein")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 1], [1, 0, 0, 0, 1]], bool)
    aln = Alignment.from_mask(mask)
    aln.check(seqs)
    P = {(s, t): _cut(pair_posteriors(seqs.codes[s], seqs.codes[t], MODEL)).astype(np.float32).astype(np.float64)
         for s, t in ((0, 1), (0, 2), (1, 2))}
    want = [(P[0, 1][0, 0] + P[0, 2][0, 0] + P[1, 2][0, 0]) / 3,
            P[0, 1][1, 1],
            0.0,
            P[0, 1][3, 2],
            (P[0, 1][4, 3] + P[0, 2][4, 1] + P[1, 2][3, 1]) / 3]
    assert P[0, 1][1, 1] > 0.3 and P[0, 1][3, 2] > 0.3  # the single-pair columns carry real mass
    assert column_confidence(seqs, aln) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_one_family_reports_its_library_as_it_goes():
    """Issue 44: one family's library reported nothing until it was done. Its
    pair steps (each pair's posteriors, then each transformation pass) are
    now counted as they end: many reports, rising, ending at the total."""
    from msa_gpu.consistency.probabilistic import PASSES, posterior_libraries

    rng = np.random.default_rng(6)
    base = rng.integers(0, 20, 30)
    letters = np.array(list("ARNDCQEGHILKMFPSTWYV"))
    raw = []
    for _ in range(24):
        s = base.copy()
        s[rng.random(30) < 0.2] = rng.integers(0, 20)
        raw.append("".join(letters[s]).encode())
    seqs = make_sequences([f"s{i}" for i in range(24)], raw, "protein")
    seen = []
    lib = posterior_libraries([seqs], on_progress=lambda done, total: seen.append((done, total)))[0]
    pairs = 24 * 23 // 2
    assert len(seen) >= 1 + PASSES * 2 and seen[-1] == (pairs * (1 + PASSES), pairs * (1 + PASSES))
    assert all(b[0] > a[0] for a, b in zip(seen, seen[1:]))
    assert lib.n_entries > 0


def test_the_library_stays_within_its_memory_plan(refs):
    """Issue 43: the plan's entries a pass (`ROW_ENTRIES` a residue row of a
    pair) bound what each phase of the library holds, on the bundled
    references; the planned bytes grow with the entries, and a family past
    the plan is said in a warning. The CSR built around the flat's room
    equals the one built from a copy."""
    import warnings

    from msa_gpu.consistency import probabilistic as pr
    from msa_gpu.io import read_sequences
    from msa_gpu.consistency.memory import ROW_ENTRIES, library_plan

    for name in ("BB11001.tfa", "BB12006.tfa"):
        seqs = read_sequences(refs / name)
        group = pr._Group([seqs])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            group.libraries(probcons_model(seqs.alphabet.size), pr.CUTOFF, pr.PASSES, np)
        plan = library_plan([[seqs.lengths]])
        rows = (len(seqs) - 1) * int(seqs.lengths.sum())
        assert plan.entries == ROW_ENTRIES * rows // 2 and max(group.entries) <= plan.entries
        assert min(group.entries) > plan.entries / 50  # the plan is not empty words
        flat = group.posteriors(probcons_model(seqs.alphabet.size), pr.CUTOFF, np, room=True)
        copied = tuple(np.array(a) for a in flat)
        for a, b in zip(group.ordered_csr(flat, np), group.ordered_csr(copied, np)):
            assert np.array_equal(a, b)
    assert library_plan([[np.full(40, 300)]]).host_gb < library_plan([[np.full(80, 300)]]).host_gb
    seqs = read_sequences(refs / "BB11001.tfa")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(pr, "library_plan", lambda groups, threads=1, nucleotide=False: pr.LibraryPlan(1, 0.0, 0.0))
    try:
        with pytest.warns(UserWarning, match="more than its memory plan"):
            pr.posterior_library(seqs)
    finally:
        monkeypatch.undo()


def _sparse_family(rng, n, lengths, density):
    """Random sparse 'posteriors' of n sequences (rows and columns summing to at
    most 1, single precision) as the ordered pairs' CSR that `consistency_pair` reads."""
    mats = {}
    for a in range(n):
        for b in range(a + 1, n):
            m = (rng.random((lengths[a], lengths[b])) < density) * rng.random((lengths[a], lengths[b]))
            m = (m / max(1.0, m.sum(1).max(), m.sum(0).max())).astype(np.float32)
            mats[a, b], mats[b, a] = m, m.T.copy()
    indptr, indices, data, base, rows = [0], [], [], np.zeros(n * n, np.int64), 0
    for a in range(n):
        for b in range(n):
            if a != b:
                base[a * n + b] = rows
                for x in range(lengths[a]):
                    nz = np.flatnonzero(mats[a, b][x])
                    indices += nz.tolist()
                    data += mats[a, b][x, nz].tolist()
                    indptr.append(len(indices))
                rows += lengths[a]
    return mats, np.array(indptr, np.int64), np.array(indices, np.int32), np.array(data, np.float32), base


@pytest.mark.parametrize("n, longest, density", [(2, 30, 0.5), (3, 70, 1.0), (33, 12, 0.6)])
def test_fixed_point_transformation_equals_dense_products(n, longest, density):
    """The transformation's fixed-point sums (each term truncated at 2^-F, F
    from n) give (2 P_st + sum over u of P_su P_ut) / n of dense products to
    float precision, keeping exactly the cells of at least the cutoff: with no
    third sequence (n = 2), rows of over 32 entries (the GPU's runs of a warp),
    and over 32 sequences."""
    from msa_gpu.backend.posterior_cpu import consistency_pair, fixed_point_bits

    rng = np.random.default_rng(n)
    lengths = rng.integers(max(1, longest // 2), longest + 1, n).astype(np.int64)
    mats, indptr, indices, data, base = _sparse_family(rng, n, lengths, density)
    assert density < 1.0 or np.diff(indptr).max() > 32
    work = np.zeros((longest, longest), np.int64)
    dense = _transform({k: m.astype(np.float64) for k, m in mats.items()}, n, 0.0)
    for s, t in [(0, 1), (0, n - 1), (n - 2, n - 1)][: 1 if n == 2 else 3]:
        want = dense[s, t]
        assert want.max() * n * 2.0 ** fixed_point_bits(n) < 2.0 ** 63
        for cutoff in (0.0, 0.01):
            rows, cols, vals = consistency_pair(s, t, n, lengths, indptr, indices, data, base, cutoff, work)
            keep = np.nonzero((want >= cutoff) & (want > 0))
            assert np.array_equal(rows, keep[0]) and np.array_equal(cols, keep[1])
            assert np.allclose(vals, want[keep].astype(np.float32), rtol=1e-6, atol=0)


def test_nucleotides_take_probconsrna_published_model():
    """Issue 57: a nucleotide family's pair-HMM is ProbConsRNA 1.1's (its
    Defaults.h): A, C, G, T (U) emit as its ACGU, every ambiguity code as its
    N; protein keeps ProbCons' model."""
    from msa_gpu.alphabet import NUCLEOTIDE, PROTEIN
    from msa_gpu.consistency import model_for, probcons_model

    m = model_for(NUCLEOTIDE)
    code = {c: NUCLEOTIDE.letters.index(c) for c in "ACGTNR"}
    assert m.pair.shape == (NUCLEOTIDE.size, NUCLEOTIDE.size) and np.allclose(m.pair, m.pair.T)
    assert m.pair[code["A"], code["A"]] == 0.1487240046 and m.pair[code["G"], code["T"]] == 0.0244289003
    assert m.pair[code["C"], code["G"]] == 0.0275536999 and m.single[code["G"]] == 0.2839320004
    assert m.pair[code["N"], code["R"]] == 0.0000263252 and m.single[code["R"]] == 0.0003124650
    assert tuple(m.init) == (0.9615409374, 0.0000004538, 0.0000004538, 0.0192291681, 0.0192291681)
    assert m.trans[0, 0] == 1.0 - (0.0082473317 * 2 + 0.0107844425 * 2) and m.trans[1, 1] == 0.3210460842
    assert np.allclose(m.trans.sum(axis=1), 1.0)
    p = model_for(PROTEIN)
    assert np.array_equal(p.pair, probcons_model(PROTEIN.size).pair)
