"""The profile gap models (issue 28): the flat ``gap_pair`` charge and the
count-based one, checked against costs worked out by hand for tiny profiles."""

import math
from fractions import Fraction

import numpy as np
import pytest

from msa_gpu.backend import cpu
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.progressive import level_meta_arrays
from msa_gpu.progressive.costs import Scoring
from msa_gpu.recipe import gap_factor, recipe_for
from msa_gpu.scoring import FRAC_ONE as FRAC

GO, GE, TGO, TGE, GP = 1300, 80, 0, 512, 60  # fixed point: 13, 0.8, factors 0 and 0.5, gap_pair 0.6
GAP = 20


def stats(rows_a: list[str], rows_b: list[str], model: int):
    """profile_stats of one pair (A: rows_a, B: rows_b; '-' a gap, 'A' a
    residue; weight 1 each) under gap model ``model``."""
    sc = Scoring(20, GAP, np.zeros((20, 20), np.int64), (GO, GE, TGO, TGE), GP, model)
    mats = np.zeros((1, 24, 24), np.int64)
    codes = [np.array([[GAP if ch == "-" else 0 for ch in r] for r in rows], np.uint8) for rows in (rows_a, rows_b)]
    k = np.array([len(rows_a), len(rows_b)])
    L = np.array([codes[0].shape[1], codes[1].shape[1]])
    lv = level_meta_arrays(k, L, k.astype(np.int64), [sc], [0], np.array([False]), np)
    flat = np.concatenate([c.ravel() for c in codes])
    return cpu.profile_stats(lv, flat, np.ones(int(k.sum()), np.int64), mats)


def test_counts_charge_each_gap_by_its_state():
    # one sequence opens an inner gap at column 1 and continues it at column 2;
    # the other opens a terminal gap at column 0
    _, resid, rowp = stats(["A--A", "--AA"], ["A"], model=1)
    charge = resid[:4, 1]
    inner_open, inner_ext = (GO + GE) * FRAC, GE * FRAC
    term_open, term_ext = GO * TGO + GE * TGE, GE * TGE
    assert charge[0] == term_open // 2  # row 2's leading gap starts
    assert charge[1] == (inner_open + term_ext) // 2
    assert charge[2] == inner_ext // 2
    assert charge[3] == 0
    # a new gap column's extension at each boundary: terminal where a row has
    # no residue on one side (both rows at the ends, row 2 up to boundary 2)
    ext = rowp[:5, 1]
    assert ext[0] == ext[4] == term_ext
    assert ext[1] == ext[2] == (GE * FRAC + term_ext) // 2
    assert ext[3] == GE * FRAC


def test_flat_charges_gap_pair_by_the_gap_fraction():
    _, resid, rowp = stats(["A--A", "--AA"], ["A"], model=0)
    frac = resid[:4, 0]
    assert frac.tolist() == [512, 0, 512, 1024]
    assert resid[:4, 1].tolist() == [(FRAC - f) * GP for f in frac]
    assert rowp[:5, 1].tolist() == [GE * TGE] + [GE * FRAC] * 3 + [GE * TGE]


def test_counts_make_a_residue_facing_an_opening_gap_costlier():
    """Same residue fractions, different gap states: the flat model cannot
    tell the columns apart, the counts model charges the opening gap more."""
    rows = ["A--A", "AAAA"]
    vec, resid, _ = stats(rows, ["A"], model=1)
    assert resid[1, 0] == resid[2, 0] == FRAC // 2
    opening, continuing = int(resid[1, 1]), int(resid[2, 1])
    assert opening > continuing
    _, flat, _ = stats(rows, ["A"], model=0)
    assert flat[1, 1] == flat[2, 1]
    S = cpu.column_scores(level_meta_arrays(np.array([2, 1]), np.array([4, 1]), np.array([2, 1]),
                                            [Scoring(20, GAP, np.zeros((20, 20), np.int64), (GO, GE, TGO, TGE),
                                                     GP, 1)], [0], np.array([False]), np), vec, resid)
    assert S[1] < S[2] < S[0]


def test_gap_factor_and_scaled_scoring():
    from msa_gpu.io import make_sequences
    from msa_gpu.progressive import family_scoring as scoring_of

    def family_scoring(config, seqs):
        return scoring_of(config, seqs, recipe_for(config, seqs))

    assert gap_factor(2) == gap_factor(45) == 1.0
    assert gap_factor(90) == pytest.approx(1 + 1 / 7)
    seqs = make_sequences([f"s{i}" for i in range(90)], [b"ACDE"] * 90, "protein")
    plain = family_scoring(AlignerConfig(mode="fast", gap_model="flat"), seqs)
    scaled = family_scoring(AlignerConfig(mode="fast", gap_scaling=True, gap_model="counts"), seqs)
    assert scaled.gaps[0] == round(plain.gaps[0] * (1 + 1 / 7))
    assert scaled.gap_model == 1 and plain.gap_model == 0
    # auto: counts (scaled) where the family gets no refinement rounds, flat where it does
    fast = family_scoring(AlignerConfig(mode="fast"), seqs)
    assert fast.gap_model == 1 and fast.gaps == scaled.gaps  # (exact opens are from 500 sequences)
    assert family_scoring(AlignerConfig(mode="fast", maxiterate=2), seqs).gap_model == 0
    assert family_scoring(AlignerConfig(mode="accurate"), seqs).gap_model == 1  # posterior library: no refinement
    assert family_scoring(AlignerConfig(mode="accurate", library_mode="local"), seqs).gap_model == 0
    assert family_scoring(AlignerConfig(mode="fast", gap_scaling_n=45), seqs).gaps == plain.gaps
    with pytest.raises(ValueError, match="gap_model"):
        AlignerConfig(gap_model="affine")


def _merge_scores(pa, pb, gap_model, rng, n_paths):
    """Profiles ``pa`` and ``pb`` (letter indices 1..20, 0 a gap) merged along
    ``n_paths`` random paths: per path, the DP objective's score of it
    (`path_score`), the exact sum of pairs of the merged alignment under the
    same costs (per pair of sequences, its gap's own state in the merged row:
    open and extension at a gap's first column, terminal costs at the ends),
    and the DP's optimum and its own path's score."""
    from msa_gpu.aligner import Aligner
    from msa_gpu.backend import cpu_backend
    from msa_gpu.io import make_sequences
    from msa_gpu.progressive import FamilyJob
    from msa_gpu.progressive.driver import BatchContext, score_batch, side_info, stack_matrices
    from msa_gpu.refine import bipartitions as rb
    from msa_gpu.scoring import SCALE, matrix_fixed
    from msa_gpu.types import GuideTree

    letters = b"ACDEFGHIKLMNPQRSTVWY"
    ka, kb = len(pa), len(pb)
    raw = [bytes(letters[x - 1] for x in row if x) for row in np.vstack([pa, np.zeros((0, pa.shape[1]), int)])]
    raw += [bytes(letters[x - 1] for x in row if x) for row in pb]
    seqs = make_sequences([f"s{i}" for i in range(ka + kb)], raw, "protein")
    code = {x + 1: int(seqs.alphabet.table[letters[x]]) for x in range(20)}
    n = ka + kb
    children, node = [], n  # caterpillars on each side, the root between them
    tops = []
    for side in (list(range(ka)), list(range(ka, n))):
        cur = side[0]
        for leaf in side[1:]:
            children.append((cur, leaf))
            cur, node = node, node + 1
        tops.append(cur)
    children.append(tuple(tops))
    tree = GuideTree(n, np.array(children), np.ones((n - 1, 2)))
    cfg = AlignerConfig(backend="cpu", mode="fast", weights="equal", gap_scaling=False, gap_model=gap_model)
    aligner = Aligner(cfg, backend=cpu_backend("test"))
    recipe = aligner.plan([seqs], [tree])[0]
    job = FamilyJob(seqs, tree, None, np.ones(n, dtype=np.int64), aligner.scoring(seqs, recipe))
    go, ge, tgo, tge = 13.0, 0.8, cfg.terminal_open, cfg.terminal_extend
    M = matrix_fixed("BLOSUM62", seqs.alphabet.letters) / SCALE
    in_a = np.arange(n) < ka
    split = rb.tree_splits(tree)
    sides = rb._Sides.of(split[[next(e for e in range(len(split)) if (split[e] == in_a).all())]])
    mats, mat_of = stack_matrices([job], np)
    ctx = BatchContext(aligner.backend, mats, None)
    out = []
    for _ in range(n_paths):
        moves, i, j = [], 0, 0
        while i < pa.shape[1] or j < pb.shape[1]:
            options = ([0] if i < pa.shape[1] and j < pb.shape[1] else []) + ([1] if i < pa.shape[1] else []) \
                + ([2] if j < pb.shape[1] else [])
            move = options[rng.integers(len(options))]
            moves.append(move)
            i, j = i + (move != 2), j + (move != 1)
        merged = np.zeros((n, len(moves)), int)
        i = j = 0
        for c, move in enumerate(moves):
            if move != 2:
                merged[:ka, c], i = pa[:, i], i + 1
            if move != 1:
                merged[ka:, c], j = pb[:, j], j + 1
        isres = merged > 0
        cost = np.zeros(merged.shape)
        for r in range(n):
            res = np.flatnonzero(isres[r])
            for c in np.flatnonzero(~isres[r]):
                opening = c == 0 or isres[r, c - 1]
                terminal = c < res[0] or c > res[-1]
                cost[r, c] = ((tgo * go + tge * ge) if opening else tge * ge) if terminal else \
                    ((go + ge) if opening else ge)
        total = 0.0
        for a in range(ka):
            for b in range(ka, n):
                for c in range(len(moves)):
                    if isres[a, c] and isres[b, c]:
                        total += M[code[merged[a, c]], code[merged[b, c]]]
                    elif isres[a, c] or isres[b, c]:
                        total -= cost[b, c] if isres[a, c] else cost[a, c]
        codes = np.where(isres, np.vectorize(lambda x: code.get(x, 0))(merged), seqs.alphabet.gap).astype(np.uint8)
        cuts = rb._cuts([codes], [sides], [job], aligner.backend)
        sb = score_batch(cuts.block, [side_info(job, mat_of[0])], np.zeros(1, bool), ctx)
        _, _, best = aligner.backend.ops.align_batch(sb.batch)
        scored = aligner.backend.ops.path_score(sb.batch, cuts.moves, cuts.move_base[cuts.family], cuts.width[cuts.family])
        out.append((int(scored[0]) / recipe.profile_scale, total / (ka * kb), int(best[0]) / recipe.profile_scale))
    return out


def test_the_exact_gap_model_scores_a_merge_as_its_sum_of_pairs():
    """``gap_model`` exact: the DP's score of any path through a merge is the
    merged alignment's sum of pairs (up to rounding), and the DP's optimum is
    at least every path's score. The count model misses a gap's open where a
    new gap column runs into a gap that starts in the next column, when that
    column then faces only gaps (FAMSA re-prices such opens: profile_seq.cpp)."""
    rng = np.random.default_rng(11)
    worst = {"counts": 0.0, "exact": 0.0}
    errors = []
    for _ in range(12):
        shape = rng.integers(1, 4, 2), rng.integers(2, 6, 2)
        profiles = []
        for k, m in zip(shape[0], shape[1]):
            while True:
                p = np.where(rng.random((k, m)) < 0.35, 0, rng.integers(1, 21, (k, m)))
                if (p > 0).any(axis=1).all() and (p > 0).any(axis=0).all():
                    profiles.append(p)
                    break
        for model in worst:
            for scored, exact, best in _merge_scores(*profiles, model, np.random.default_rng(int(rng.integers(1 << 30))), 15):
                worst[model] = max(worst[model], abs(scored - exact))
                errors += [scored - exact] if model == "exact" else []
                assert best >= scored - 1e-9
    # the exact model rounds its fixed point to the nearest: floored, its
    # objective ran 0.0074 above the sum of pairs on average, up to 0.08
    assert worst["exact"] < 0.05 and abs(np.mean(errors)) < 0.003 and worst["counts"] > 5.0, (worst, np.mean(errors))


# ---- the count models' fixed point, pinned without tolerance (issue 56)
#
# An independent statement of profile_stats and column_scores in exact rational
# arithmetic (fractions.Fraction), each rounded once where the twin divides:
# to the nearest, halves up, in the exact model (``gap_model`` 2), down in the
# count model (1). The twin's integers must equal it exactly, so a floor for a
# rounding, a halves-to-even or halves-down rule, or a shift of the fixed point
# (FRAC, FRAC * FRAC, W * FRAC) in `backend/profile_cpu.py` fails here.

def _fix(x: Fraction, rnd: int) -> int:
    return math.floor(x + Fraction(1, 2)) if rnd else math.floor(x)


def _reference_stats(rows, w, M, gaps, model, b_side, seen):
    """(vec, resid, rowp) of one profile: ``rows`` (k, L) letter codes with
    GAP for a gap, ``w`` its row weights, ``M`` the (24, 24) matrix (B's
    vectors are M times the counts), ``gaps`` (open, extend, terminal open and
    extend factors x FRAC). ``seen`` counts the divisions that land exactly
    half-way (``seen['half']``) or elsewhere between two integers."""
    go, ge, tgo, tge = gaps
    rnd = int(model == 2)
    k, L = rows.shape
    W = int(sum(w))
    res = rows != GAP

    def fix(num, den):
        x = Fraction(int(num), int(den))
        r = x - math.floor(x)
        seen["half" if r == Fraction(1, 2) else "other" if r else "whole"] += 1
        return _fix(x, rnd)

    first = [int(np.flatnonzero(res[s])[0]) for s in range(k)]
    last = [int(np.flatnonzero(res[s])[-1]) for s in range(k)]
    inner = lambda s, c: first[s] < c <= last[s]  # noqa: E731 (residues on both sides of boundary c)
    vec = np.zeros((L, 24), np.int64)
    resid = np.zeros((L, 2), np.int64)
    rowp = np.zeros((L + 1, 4), np.int64)
    for c in range(L):
        acc = np.zeros(24, np.int64)
        for s in range(k):
            if res[s, c]:
                acc[rows[s, c]] += w[s]
        vec[c] = M @ acc if b_side else acc
        resid[c, 0] = fix(FRAC * sum(w[s] for s in range(k) if res[s, c]), W)
        charge = 0
        for s in range(k):
            if not res[s, c]:  # a residue facing this gap pays its open (where it starts) and extension
                opening = c == 0 or res[s, c - 1]
                if c < first[s] or c > last[s]:
                    cost = go * tgo + ge * tge if opening else ge * tge
                else:
                    cost = (go + ge) * FRAC if opening else ge * FRAC
                charge += w[s] * cost
        resid[c, 1] = fix(charge, W)
    for c in range(L + 1):
        prev = [c > 0 and res[s, c - 1] for s in range(k)]
        opens = [c == 0 or prev[s] for s in range(k)]  # a gap column here opens each such row's gap
        open_cost = [go * FRAC if inner(s, c) else go * tgo for s in range(k)]
        fp = fix(FRAC * sum(w[s] for s in range(k) if prev[s]), W) if c > 0 else 0
        if model == 2:
            op = fix(fix(sum(w[s] * open_cost[s] for s in range(k) if opens[s]), W), FRAC)
        else:  # the count model's open: the rows with a residue on both sides (terminal factor at the ends)
            both = sum(w[s] for s in range(k) if prev[s] and c < L and res[s, c])
            frac = resid[c, 0] if c < L else fp
            op = fix(go * frac * tgo // FRAC, FRAC) if c in (0, L) else fix(go * (both * FRAC // W), FRAC)
        ext = sum(w[s] * (ge * FRAC if inner(s, c) else ge * tge) for s in range(k))
        credit = sum(w[s] * open_cost[s] for s in range(k) if opens[s] and c < L and not res[s, c])
        rowp[c] = [op, fix(ext, W), fix(credit, W * FRAC) if model == 2 else 0, fp]
    return vec, resid, rowp


def _reference_scores(va, ra, Wa, vb, rb, Wb, model, seen):
    rnd = int(model == 2)
    S = np.zeros((len(va), len(vb)), np.int64)
    for i in range(len(va)):
        for j in range(len(vb)):
            x = Fraction(int(va[i] @ vb[j]), Wa * Wb)
            seen["half" if x - math.floor(x) == Fraction(1, 2) else "other"] += 1
            S[i, j] = _fix(x, rnd) - _fix(Fraction(int(ra[i, 0] * rb[j, 1] + rb[j, 0] * ra[i, 1]), FRAC * FRAC), rnd)
    return S


def _random_profile(rng, k, L):
    while True:
        rows = np.where(rng.random((k, L)) < 0.4, GAP, rng.integers(0, 20, (k, L)))
        if (rows != GAP).any(axis=1).all():
            return rows.astype(np.uint8)


@pytest.mark.parametrize("model", [2, 1])
def test_the_count_models_fixed_point_equals_exact_arithmetic(model):
    """profile_stats, column_scores and the DP's best score and path of
    random weighted pairs, integer for integer against `_reference_stats`,
    `_reference_scores` and `dp_reference` (the exact model rounding there
    too: ``score_batch`` marks its pairs so)."""
    from dp_reference import best_score, rescore

    from msa_gpu.backend import cpu_backend
    from msa_gpu.progressive.driver import BatchContext, ProfileBlock, SideInfo, score_batch

    rng = np.random.default_rng(56)
    M = np.zeros((24, 24), np.int64)
    M[:20, :20] = rng.integers(-4000, 11000, (20, 20))
    M = M + M.T
    backend = cpu_backend("test")
    seen = {"half": 0, "other": 0, "whole": 0}
    pairs, sides = [], []
    for t in range(40):  # one batch of 40 pairs, each with its own gap costs
        gaps = (int(rng.integers(300, 20000)), int(rng.integers(0, 3000)), int(rng.integers(0, 1025)),
                int(rng.integers(0, 1025)))
        if t == 0:  # A = [A-, -A]: boundary 1's opens over W are 1023 / 2, rounded 512, its open 512 / 1024
            gaps = (1023, 7, 1, 512)  # rounded: 1 (floored on the way: 0)
        (ka, kb), (la, lb) = rng.integers(1, 5, 2), rng.integers(1, 7, 2)
        pa, wa = _random_profile(rng, ka, la), rng.integers(1, 12, ka)
        if t == 0:
            ka, pa, wa = 2, np.array([[0, GAP], [GAP, 0]], np.uint8), np.array([1, 1])
        pairs.append((pa, wa, _random_profile(rng, kb, lb), rng.integers(1, 12, kb), gaps))
        sides.append(SideInfo(Scoring(20, GAP, M[:20, :20], gaps, int(rng.integers(0, 1000)), model), 0, None, 0,
                              ka + kb))
    profiles = [(rows, w) for pa, wa, pb, wb, _ in pairs for rows, w in ((pa, wa), (pb, wb))]
    k = np.array([len(rows) for rows, _ in profiles])
    block = ProfileBlock(np.concatenate([rows.ravel() for rows, _ in profiles]), k,
                         np.array([rows.shape[1] for rows, _ in profiles]), np.arange(k.sum()),
                         np.concatenate([w for _, w in profiles]).astype(np.int64))
    sb = score_batch(block, sides, np.zeros(len(pairs), bool), BatchContext(backend, M[None], None))
    path, path_len, score = backend.ops.align_batch(sb.batch)
    lv, batch = sb.lv, sb.batch
    for p, (pa, wa, pb, wb, gaps) in enumerate(pairs):
        la, lb = pa.shape[1], pb.shape[1]
        va, ra, rpa = _reference_stats(pa, wa, M, gaps, model, False, seen)
        vb, rb, rpb = _reference_stats(pb, wb, M, gaps, model, True, seen)
        S = _reference_scores(va, ra, int(wa.sum()), vb, rb, int(wb.sum()), model, seen)
        ca, cb = int(lv.col_off[2 * p]), int(lv.col_off[2 * p + 1])
        assert np.array_equal(sb.vec[ca: ca + la], va) and np.array_equal(sb.vec[cb: cb + lb], vb), p
        assert np.array_equal(sb.resid[ca: ca + la], ra) and np.array_equal(sb.resid[cb: cb + lb], rb), p
        ba, bb = int(batch.row_off[p]), int(batch.col_off[p])
        assert np.array_equal(batch.rowp[ba: ba + la + 1], rpa) and np.array_equal(batch.colp[bb: bb + lb + 1], rpb), p
        assert np.array_equal(batch.S[batch.s_off[p]: batch.s_off[p + 1]], S.ravel()), p
        assert int(batch.dims[p, 2]) == (model == 2), p
        want = best_score(S.tolist(), rpa.tolist(), rpb.tolist(), la, lb, int(model == 2))
        assert int(score[p]) == want, p
        fwd = path[batch.path_off[p]: batch.path_off[p] + path_len[p]][::-1].tolist()
        assert rescore(fwd, S.tolist(), rpa.tolist(), rpb.tolist(), la, lb, int(model == 2)) == want, p
    assert seen["half"] >= 20 and seen["other"] >= 200, seen  # halves and other fractions both met
