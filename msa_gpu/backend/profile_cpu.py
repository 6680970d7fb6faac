"""CPU twin (numba) of kernels/profile.cu: the profile-profile DP, profile
statistics, column scores and merges of stage 3. It is the test oracle: the
GPU kernels must give the same integers, ties included."""

from __future__ import annotations

import numba
import numpy as np

from msa_gpu.backend.threads import call
from msa_gpu.kernels.constants import FRAC, GAP_COUNTS, GAP_EXACT, NEG_INF, VEC  # the kernels' own values


@numba.njit(cache=True, inline="always")
def pick_h(h, e, f, bits):
    """H = max(diag + s (given as ``h``), E, F), ties to the diagonal, then E,
    then F, the source in bits 0-1 of the direction nibble ``bits``. Shared by
    the profile twin and the pairwise twin (`pairwise_cpu`)."""
    if e > h:
        h = e
        bits |= 1
    if f > h:
        h = f
        bits = (bits & 0xFC) | 2  # (the other bits kept: gap opens, D's source)
    return h, bits


@numba.njit(cache=True, inline="always")
def _gap(opened, prev, ext):
    """A gap state from opening (ties open) or extending: (value, whether it opened)."""
    if opened >= prev:
        return opened - ext, True
    return prev - ext, False


@numba.njit(cache=True, inline="always")
def fixed_div(a, d, rnd):
    """Twin of fixed_div in kernels/profile.cu: ``a / d`` (d > 0) floored, or
    rounded to the nearest (halves up) where ``rnd`` (1: the exact gap model,
    whose objective is the sum of pairs; floors there make every gap column
    a little cheaper and so favour wider alignments)."""
    return (a + rnd * (d // 2)) // d


@numba.njit(cache=True, inline="always")
def gap_ext(res, ext, rnd):
    """Twin of gap_ext in kernels/profile.cu: a new gap column's extension, the
    consumed column's residue fraction ``res`` times the other side's
    extension cost ``ext`` at that boundary (x FRAC)."""
    return fixed_div(np.int64(res) * np.int64(ext), FRAC * FRAC, rnd)


@numba.njit(cache=True, inline="always")
def _cell(i, j, m, n, rp, cp, h_up, e_up, h_left, f_left, d_diag, e_diag, f_diag, s, rnd):
    """One DP cell; twin of dp_cell in kernels/profile.cu. Returns (h, d, e, f, bits).
    D (the diagonal state) continues the best of D, E and F at (i-1, j-1); after
    E (F) it is credited the opens that the gap run took over from gaps
    starting in B's column j (A's column i): column 2 of colp (rowp)."""
    bits = 0
    e = NEG_INF
    f = NEG_INF
    d = NEG_INF
    if i > 0:
        e, opened = _gap(h_up - fixed_div(cp[j, 0] * rp[i, 3], FRAC, rnd), e_up, gap_ext(rp[i, 3], cp[j, 1], rnd))
        if opened:
            bits |= 4
    if j > 0:
        f, opened = _gap(h_left - fixed_div(rp[i, 0] * cp[j, 3], FRAC, rnd), f_left,
                         gap_ext(cp[j, 3], rp[i, 1], rnd))
        if opened:
            bits |= 8
    if i > 0 and j > 0:
        d = d_diag
        from_e = e_diag + fixed_div(cp[j - 1, 2] * rp[i, 3], FRAC, rnd)
        from_f = f_diag + fixed_div(rp[i - 1, 2] * cp[j, 3], FRAC, rnd)
        if from_e > d:
            d = from_e
            bits |= 16
        if from_f > d:
            d = from_f
            bits = (bits & 15) | 32
        d += s
        h, bits = pick_h(d, e, f, bits)
    elif i > 0:
        h = e
        bits |= 1
    elif j > 0:
        h = f
        bits |= 2
    else:
        h = 0
        d = 0
    return h, d, e, f, bits


@numba.njit(cache=True, inline="always")
def _trace_step(bits, i, j, st):
    """Twin of trace_step: returns (move, i, j, state); states 0 H (the
    cell's best), 1 E, 2 F, 3 D."""
    if st == 0:
        st = bits & 3
        if st == 0:
            st = 3
    if st == 3:
        pred = (bits >> 4) & 3
        return 0, i - 1, j - 1, 3 if pred == 0 else pred
    if st == 1:
        return 1, i - 1, j, 0 if (bits & 4) else 1
    return 2, i, j - 1, 0 if (bits & 8) else 2


@numba.njit(cache=True, nogil=True)
def _row(i, m, n, rp, cp, Hrow, Erow, Drow, Frow, S, va, vb, ra, rb, denom, D, drow, rnd):
    """Row i of the DP in place over (Hrow, Erow, Drow, Frow), holding row i-1 on entry.
    Scores come from S (row-major m x n) when it is non-empty, else from the
    profile vectors. Direction bits go to D[drow * (n+1) + j] when D is non-empty."""
    ddiag = NEG_INF
    ediag = NEG_INF
    fdiag = NEG_INF
    f = NEG_INF
    hleft = 0
    for j in range(n + 1):
        s = 0
        if i > 0 and j > 0:
            if S.shape[0] > 0:
                s = S[(i - 1) * n + (j - 1)]
            else:
                s = _col_score(va, vb, ra, rb, i - 1, j - 1, denom, rnd)
        h, dj, e, fj, bits = _cell(i, j, m, n, rp, cp, Hrow[j], Erow[j], hleft, f, ddiag, ediag, fdiag, s, rnd)
        ddiag, ediag, fdiag = Drow[j], Erow[j], Frow[j]
        Hrow[j] = h
        Erow[j] = e
        Drow[j] = dj
        Frow[j] = fj
        f = fj
        hleft = h
        if D.shape[0] > 0:
            D[drow * (n + 1) + j] = bits


@numba.njit(cache=True, nogil=True)
def _align_one(S, rp, cp, m, n, D, out, rnd):
    """Gotoh DP for one pair, row by row; see kernels/profile.cu:profile_dp."""
    Hrow = np.empty(n + 1, np.int64)
    Erow = np.empty(n + 1, np.int64)
    Drow = np.empty(n + 1, np.int64)
    Frow = np.empty(n + 1, np.int64)
    nothing = np.zeros((0, VEC), np.int64)
    none_i = np.zeros((0, 2), np.int32)
    for i in range(m + 1):
        _row(i, m, n, rp, cp, Hrow, Erow, Drow, Frow, S, nothing, nothing, none_i, none_i, 1, D, i, rnd)
    score = Hrow[n]
    i, j, st, length = m, n, 0, 0
    while i > 0 or j > 0:
        mv, i, j, st = _trace_step(D[i * (n + 1) + j], i, j, st)
        out[length] = mv
        length += 1
    return score, length


@numba.njit(cache=True, nogil=True)
def _align_long_one(rp, cp, m, n, va, vb, ra, rb, denom, R, out, rnd):
    """Twin of long_dp: rows instead of anti-diagonals, the state saved before
    every R-th row, the traceback recomputing one band of R rows at a time."""
    Hrow = np.empty(n + 1, np.int64)
    Erow = np.empty(n + 1, np.int64)
    Drow = np.empty(n + 1, np.int64)
    Frow = np.empty(n + 1, np.int64)
    nb = m // R + 1
    ckH = np.empty((nb, n + 1), np.int64)
    ckE = np.empty((nb, n + 1), np.int64)
    ckD = np.empty((nb, n + 1), np.int64)
    ckF = np.empty((nb, n + 1), np.int64)
    D = np.empty(R * (n + 1), np.uint8)
    noS = np.zeros(0, np.int32)
    noD = np.zeros(0, np.uint8)
    for i in range(m + 1):
        if i > 0 and i % R == 0:
            ckH[i // R] = Hrow
            ckE[i // R] = Erow
            ckD[i // R] = Drow
            ckF[i // R] = Frow
        _row(i, m, n, rp, cp, Hrow, Erow, Drow, Frow, noS, va, vb, ra, rb, denom, noD, 0, rnd)
    score = Hrow[n]
    i, j, st, length = m, n, 0, 0
    for b in range(nb - 1, -1, -1):
        r0 = b * R
        r1 = min(r0 + R - 1, m)
        if b > 0:
            Hrow[:] = ckH[b]
            Erow[:] = ckE[b]
            Drow[:] = ckD[b]
            Frow[:] = ckF[b]
        for r in range(r0, r1 + 1):
            _row(r, m, n, rp, cp, Hrow, Erow, Drow, Frow, noS, va, vb, ra, rb, denom, D, r - r0, rnd)
        while (i > 0 or j > 0) and i >= r0:
            mv, i, j, st = _trace_step(D[(i - r0) * (n + 1) + j], i, j, st)
            out[length] = mv
            length += 1
    return score, length


@numba.njit(cache=True, parallel=True)
def _align_batch(S, s_off, rowp, row_off, colp, col_off, dims, dir_off, path, path_off, path_len, score):
    for p in numba.prange(dims.shape[0]):
        m, n = dims[p, 0], dims[p, 1]
        if dir_off[p + 1] == dir_off[p]:  # a long pair: align_long's
            continue
        D = np.empty((m + 1) * (n + 1), np.uint8)
        sc, ln = _align_one(
            S[s_off[p]: s_off[p] + m * n],
            rowp[row_off[p]: row_off[p] + m + 1],
            colp[col_off[p]: col_off[p] + n + 1],
            m, n, D, path[path_off[p]: path_off[p] + m + n], dims[p, 2],
        )
        score[p] = sc
        path_len[p] = ln


def align_batch(batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Align every pair of a `PairBatch`; returns (path, path_len, score)."""
    npairs = batch.dims.shape[0]
    path = np.empty(int(batch.path_off[-1]), np.uint8)
    path_len = np.empty(npairs, np.int32)
    score = np.empty(npairs, np.int32)
    call(_align_batch, batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, batch.dir_off, path, batch.path_off, path_len, score,
         work=batch.n_dir * NS_PER_CELL["dp"], items=npairs)
    return path, path_len, score


@numba.njit(cache=True, parallel=True)
def _align_long(vec, resid, pcol_off, W, rowp, row_off, colp, col_off, dims, long_idx,
                path, path_off, path_len, score):
    for t in numba.prange(long_idx.shape[0]):
        p = long_idx[t]
        m, n = dims[p, 0], dims[p, 1]
        qa, qb = 2 * p, 2 * p + 1
        R = max(64, 2 * int((m + n) ** 0.5) + 1)
        sc, ln = _align_long_one(
            rowp[row_off[p]: row_off[p] + m + 1], colp[col_off[p]: col_off[p] + n + 1], m, n,
            vec[pcol_off[qa]: pcol_off[qa] + m], vec[pcol_off[qb]: pcol_off[qb] + n],
            resid[pcol_off[qa]: pcol_off[qa] + m], resid[pcol_off[qb]: pcol_off[qb] + n],
            W[qa] * W[qb], R, path[path_off[p]: path_off[p] + m + n], dims[p, 2],
        )
        score[t] = sc
        path_len[p] = ln


def align_long(batch, lv, vec, resid, long_idx, path, path_len):
    """Align the long pairs ``long_idx`` with checkpointed bands, writing into
    ``path``/``path_len`` beside the short pairs; returns their scores."""
    score = np.empty(len(long_idx), np.int32)
    long_idx = np.asarray(long_idx, dtype=np.int64)
    dims = np.asarray(batch.dims[long_idx], np.int64)
    call(_align_long, vec, resid, lv.col_off, lv.W, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, long_idx, path, batch.path_off, path_len, score,
         work=2 * float(dims[:, 0] @ dims[:, 1]) * NS_PER_CELL["dp"], items=len(long_idx))
    return score



@numba.njit(cache=True, parallel=True)
def _profile_stats(codes, code_off, k, L, weights, w_off, W, gap, gaps, gap_model, gap_pair, mat, mats,
                   col_off, bnd_off, vec, resid, rowp):
    """Twin of kernels/profile.cu:profile_stats (with row_span)."""
    for q in numba.prange(k.shape[0]):
        kq, Lq, g = k[q], L[q], gap[q]
        Wq = W[q]
        go, ge, tgo, tge = np.int64(gaps[q, 0]), np.int64(gaps[q, 1]), np.int64(gaps[q, 2]), np.int64(gaps[q, 3])
        counts = gap_model[q] >= GAP_COUNTS
        exact = gap_model[q] == GAP_EXACT
        gp = np.int64(gap_pair[q // 2])
        b_side = (q & 1) == 1
        M = mats[mat[q]]
        acc = np.zeros(VEC, np.int64)
        base = code_off[q]
        first = np.full(kq, Lq, np.int64)
        last = np.full(kq, -1, np.int64)
        for s in range(kq if counts else 0):  # the flat model needs no spans
            for c in range(Lq):
                if codes[base + s * Lq + c] != g:
                    if first[s] == Lq:
                        first[s] = c
                    last[s] = c
        for c in range(Lq + 1):
            acc[:] = 0
            res_c = np.int64(0)
            res_prev = np.int64(0)
            both = np.int64(0)
            ext = np.int64(0)
            charge = np.int64(0)
            opens = np.int64(0)
            credit = np.int64(0)
            for s in range(kq):
                w = weights[w_off[q] + s]
                here = c < Lq and codes[base + s * Lq + c] != g
                prev = c > 0 and codes[base + s * Lq + c - 1] != g
                if here:
                    acc[codes[base + s * Lq + c]] += w
                    res_c += w
                if prev:
                    res_prev += w
                if here and prev:
                    both += w
                if exact and (c == 0 or prev):  # a new gap column here opens this sequence's gap
                    cost = go * FRAC if (first[s] < c and last[s] >= c) else go * tgo
                    opens += w * cost
                    if c < Lq and not here:  # its gap in column c then continues: that open is credited back
                        credit += w * cost
                if counts:
                    ext += w * _boundary_ext(c, first[s], last[s], ge, tge)
                    if c < Lq and not here:
                        charge += w * _gap_charge(c, prev, first[s], last[s], go, ge, tgo, tge)
            rnd = 1 if exact else 0
            fc = fixed_div(res_c * FRAC, Wq, rnd)
            fp = fixed_div(res_prev * FRAC, Wq, rnd)
            if c < Lq:
                row = col_off[q] + c
                if b_side:
                    for x in range(VEC):
                        t = np.int64(0)
                        for y in range(VEC):
                            t += M[x, y] * acc[y]
                        vec[row, x] = t
                else:
                    vec[row, :] = acc
                resid[row, 0] = fc
                resid[row, 1] = fixed_div(charge, Wq, rnd) if counts else (FRAC - fc) * gp
            if exact:
                op = fixed_div(opens, Wq, rnd)
            elif c == 0:
                op = go * fc * tgo // FRAC
            elif c == Lq:
                op = go * fp * tgo // FRAC
            else:
                op = go * (both * FRAC // Wq)
            r = bnd_off[q] + c
            rowp[r, 0] = fixed_div(op, FRAC, rnd)
            if counts:
                rowp[r, 1] = fixed_div(ext, Wq, rnd)
            else:
                rowp[r, 1] = ge * tge if (c == 0 or c == Lq) else ge * FRAC
            rowp[r, 2] = fixed_div(credit, Wq * FRAC, rnd) if exact else 0
            rowp[r, 3] = fp if c > 0 else 0


@numba.njit(cache=True, inline="always")
def _boundary_ext(c, first, last, ge, tge):
    """Twin of boundary_ext: a new gap column's extension cost (x FRAC) for a
    sequence at boundary c, terminal where it has no residue on one side."""
    return ge * tge if (first >= c or last < c) else ge * FRAC


@numba.njit(cache=True, inline="always")
def _gap_charge(c, prev, first, last, go, ge, tgo, tge):
    """Twin of gap_charge: what a sequence's existing gap at column c costs a
    residue facing it (x FRAC): open and extension where the gap starts
    there, the extension where it continues; terminal costs where the
    sequence has no residue before or after c."""
    opening = c == 0 or prev
    if first > c or last < c:
        return go * tgo + ge * tge if opening else ge * tge
    return (go + ge) * FRAC if opening else ge * FRAC


@numba.njit(cache=True, inline="always")
def _col_score(va, vb, ra, rb, i, j, denom, rnd):
    """Twin of col_score in kernels/profile.cu: ``ra``/``rb`` rows are
    (residue fraction, gap charge) of each column."""
    num = np.int64(0)
    for x in range(VEC):
        num += va[i, x] * vb[j, x]
    s = fixed_div(num, denom, rnd)
    return s - fixed_div(np.int64(ra[i, 0]) * rb[j, 1] + np.int64(rb[j, 0]) * ra[i, 1], FRAC * FRAC, rnd)


@numba.njit(cache=True, parallel=True)
def _column_scores(vec, resid, col_off, L, W, gap_model, S, s_off):
    """Twin of kernels/profile.cu:column_scores (long pairs have no S)."""
    for p in numba.prange(s_off.shape[0] - 1):
        if s_off[p + 1] == s_off[p]:
            continue
        qa, qb = 2 * p, 2 * p + 1
        m, n = L[qa], L[qb]
        va, vb = vec[col_off[qa]: col_off[qa] + m], vec[col_off[qb]: col_off[qb] + n]
        ra, rb = resid[col_off[qa]: col_off[qa] + m], resid[col_off[qb]: col_off[qb] + n]
        denom = W[qa] * W[qb]
        rnd = 1 if gap_model[qa] == GAP_EXACT else 0
        for i in range(m):
            for j in range(n):
                S[s_off[p] + i * n + j] = _col_score(va, vb, ra, rb, i, j, denom, rnd)


@numba.njit(cache=True, parallel=True)
def _merge_profiles(codes, code_off, k, L, gap, path, path_off, path_len, out, out_off):
    """Twin of kernels/profile_ops.cu:merge_profiles."""
    for p in numba.prange(path_len.shape[0]):
        qa, qb = 2 * p, 2 * p + 1
        ln = path_len[p]
        ka, kb, la, lb = k[qa], k[qb], L[qa], L[qb]
        ca = np.empty(ln, np.int64)
        cb = np.empty(ln, np.int64)
        ia = 0
        ib = 0
        for t in range(ln):
            mv = path[path_off[p] + ln - 1 - t]
            if mv != 2:
                ca[t] = ia
                ia += 1
            else:
                ca[t] = -1
            if mv != 1:
                cb[t] = ib
                ib += 1
            else:
                cb[t] = -1
        o = out_off[p]
        for s in range(ka + kb):
            for t in range(ln):
                if s < ka:
                    v = codes[code_off[qa] + s * la + ca[t]] if ca[t] >= 0 else gap[qa]
                else:
                    v = codes[code_off[qb] + (s - ka) * lb + cb[t]] if cb[t] >= 0 else gap[qb]
                out[o + s * ln + t] = v


#: Bytes of score matrices and direction arrays one CPU batch may take. With
#: 2 GB, 60 BAliBASE families (RV20 and the first of RV30, fast mode, 2-core
#: VM) took 17.4 s and 995 MB, with 64 MB 16.9 s and 311 MB, the same bytes.
#: With 8 MB they take 37.3 s / 35.4 s against 64 MB's 38.0 s / 34.2 s
#: (a second run, one core busy elsewhere), and a 2 x 100 kb pair's pieces
#: between anchors peak at 197 MB (64 MB: 262 MB; 16 MB: 206 MB).
CPU_BATCH_BYTES = 8 << 20

#: Nanoseconds of one unit of each loop on one thread, for sizing the parallel
#: loops (`msa_gpu.backend.threads`): a DP cell (`_align_batch`; `_align_long`
#: counts each cell twice), a profile code and a profile column
#: (`_profile_stats`), a column score (`_column_scores`), a merged code
#: (`_merge_profiles`).
NS_PER_CELL = {"dp": 8.0, "stats": 2.0, "stats_col": 100.0, "score": 8.0, "merge": 1.0}


def memory_budget() -> int:
    """Bytes of score matrices and direction arrays one batch may take."""
    return CPU_BATCH_BYTES


def free_cached() -> None:
    """Nothing to give back: host arrays are freed as they die (the GPU's
    twin empties CuPy's pool)."""


def profile_stats(lv, codes, weights, mats):
    """Statistics and gap rows of every profile of a level (`LevelMeta` lv)."""
    vec = np.empty((lv.n_cols, VEC), np.int64)
    resid = np.empty((lv.n_cols, 2), np.int32)
    rowp = np.empty((lv.n_bnd, 4), np.int32)
    call(_profile_stats, codes, lv.code_off, lv.k, lv.L, weights, lv.w_off, lv.W, lv.gap, lv.gaps, lv.gap_model,
         lv.gap_pair, lv.mat, mats, lv.col_off, lv.bnd_off, vec, resid, rowp,
         work=codes.shape[0] * NS_PER_CELL["stats"] + lv.n_cols * NS_PER_CELL["stats_col"], items=lv.k.shape[0])
    return vec, resid, rowp


def column_scores(lv, vec, resid):
    S = np.empty(lv.n_cells, np.int32)
    call(_column_scores, vec, resid, lv.col_off, lv.L, lv.W, lv.gap_model, S, lv.s_off,
         work=lv.n_cells * NS_PER_CELL["score"], items=lv.s_off.shape[0] - 1)
    return S


def merge_profiles(lv, codes, path, path_off, path_len, out_off, n_out):
    out = np.empty(n_out, np.uint8)
    call(_merge_profiles, codes, lv.code_off, lv.k, lv.L, lv.gap, path, path_off, path_len, out, out_off,
         work=n_out * NS_PER_CELL["merge"], items=path_len.shape[0])
    return out
