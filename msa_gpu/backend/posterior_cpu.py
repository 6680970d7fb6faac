"""numba engine of pair-HMM posteriors (`msa_gpu.consistency.pairhmm`):
forward-backward in probability space along anti-diagonals (the order a GPU
wavefront takes), each anti-diagonal scaled by a power of two. Cells of one
anti-diagonal have emitted the same residues, so their values stay within a
double's range of each other even where a row's would not (the last cell of
a row of two unrelated 400-residue sequences lay more than 2^-1074 below the
row's largest).

As on the GPU (kernels/posterior.cu), three anti-diagonals are held at a
time, state-major (a state's cells of one anti-diagonal side by side), the
forward pass keeps each cell's scaled match value, and the backward pass
turns it into the posterior as soon as that cell's backward value is
scaled. The interior cells of an anti-diagonal go through a branch-free
loop over contiguous slices that LLVM vectorises (`_forward_run`,
`_backward_run`), the edges and the start through the cell functions: the
same products and sums in the same order either way, so the bits do not
change (dense (L1 + 1, L2 + 1, 5) matrices walked cell by cell took
2.6-2.8x the time on 400 x 400 pairs, a cache line a cell: NOTES.md,
session 54)."""

from __future__ import annotations

import math

import numba
import numpy as np

from msa_gpu.backend.threads import threaded
from msa_gpu.kernels.constants import MATCH as M  # the kernels' own values
from msa_gpu.kernels.constants import N_STATES


@numba.njit(cache=True, nogil=True, inline="always")
def _pow2(k):
    """2^k as a double where it is a normal number (so that ``v * _pow2(k)``
    is ``ldexp(v, k)`` to the bit: one correctly rounded product), else 0.0:
    the caller then takes ``ldexp`` itself."""
    if -1022 <= k <= 1023:
        return math.ldexp(1.0, k)
    return 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _times_pow2(v, f, k):
    """``ldexp(v, k)``, by the factor ``f = _pow2(k)`` where it is one."""
    return v * f if f != 0.0 else math.ldexp(v, k)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _rescale(slot, lo, hi):
    """Divide rows ``lo..hi`` of an anti-diagonal's five states (``slot``:
    (5, R), state-major) by the power of two that brings the largest into
    [0.5, 1) (exact); returns the exponent (0 if all are zero)."""
    bits = np.int64(0)  # the values are >= 0, so their bits as integers are in their order: a loop that vectorises
    for s in range(N_STATES):
        row = slot[s, lo: hi + 1].view(np.int64)
        for k in range(row.shape[0]):
            bits = max(bits, row[k])
    if bits == 0:
        return 0
    if bits >= np.int64(1) << 52:  # normal: frexp's exponent is the biased one less 1022 (as kernels/posterior.cu)
        e = np.int64(bits >> 52) - 1022
    else:  # subnormal: frexp itself
        e = math.frexp(np.array([bits]).view(np.float64)[0])[1]
    f = _pow2(-e)  # a product by 2^-e (ldexp to the bit), not a call of ldexp a value
    for s in range(N_STATES):
        row = slot[s, lo: hi + 1]
        if f != 0.0:
            for k in range(row.shape[0]):
                row[k] = row[k] * f
        else:
            for k in range(row.shape[0]):
                row[k] = math.ldexp(row[k], -e)
    return e


@numba.njit(cache=True, nogil=True, inline="always")
def _forward_cell(x, y, init, trans, pair, single, cur, p1, p2, i, j, s1, f21, k21):
    """Forward cell (i, j) into ``cur`` (its anti-diagonal d; ``p1``, ``p2``:
    d - 1 and d - 2, rows by i), every state (0 where the recursion has none)."""
    if i > 0 and j > 0:  # from diagonal d - 2, brought to diagonal d - 1's units
        acc = 0.0
        for s in range(N_STATES):
            acc += p2[s, i - 1] * trans[s, M]
        acc = _times_pow2(acc, f21, k21)
        if i == 1 and j == 1:
            acc += math.ldexp(init[M], -s1)
        cur[M, i] = pair[x[i - 1], y[j - 1]] * acc
    else:
        cur[M, i] = 0.0
    for k in (1, 3):  # x inserts
        if i > 0:
            acc = p1[M, i - 1] * trans[M, k] + p1[k, i - 1] * trans[k, k]
            if i == 1 and j == 0:
                acc += math.ldexp(init[k], -s1)
            cur[k, i] = single[x[i - 1]] * acc
        else:
            cur[k, i] = 0.0
    for k in (2, 4):  # y inserts
        if j > 0:
            acc = p1[M, i] * trans[M, k] + p1[k, i] * trans[k, k]
            if i == 0 and j == 1:
                acc += math.ldexp(init[k], -s1)
            cur[k, i] = single[y[j - 1]] * acc
        else:
            cur[k, i] = 0.0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _forward_run(c0, c1, c2, c3, c4, m0, m1, m2, m3, m4, u0, u1, u3, v0, v2, v4, em, sx, sy, trans, f21):
    """`_forward_cell`'s operations on a run of interior cells (i, j >= 1,
    not the start cell), each array a run's slice (``m``: diagonal d - 2 at
    rows i - 1; ``u``: d - 1 at rows i - 1; ``v``: d - 1 at rows i; ``em``,
    ``sx``, ``sy``: the cells' emissions), so that the loop vectorises:
    contiguous, no branch, the same products and sums in the same order."""
    t0, t1, t2, t3, t4 = trans[0, M], trans[1, M], trans[2, M], trans[3, M], trans[4, M]
    a1, a2, a3, a4 = trans[M, 1], trans[M, 2], trans[M, 3], trans[M, 4]
    b1, b2, b3, b4 = trans[1, 1], trans[2, 2], trans[3, 3], trans[4, 4]
    for k in range(c0.shape[0]):
        acc = 0.0
        acc += m0[k] * t0
        acc += m1[k] * t1
        acc += m2[k] * t2
        acc += m3[k] * t3
        acc += m4[k] * t4
        c0[k] = em[k] * (acc * f21)
        c1[k] = sx[k] * (u0[k] * a1 + u1[k] * b1)
        c3[k] = sx[k] * (u0[k] * a3 + u3[k] * b3)
        c2[k] = sy[k] * (v0[k] * a2 + v2[k] * b2)
        c4[k] = sy[k] * (v0[k] * a4 + v4[k] * b4)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _forward(x, y, init, trans, pair, single, ring, FM):
    """Forward along anti-diagonals, three at a time in ``ring`` (3, 5, at
    least L1 + 1: state-major, rows by i); each cell's scaled match value
    into ``FM[i - 1, j - 1]`` (i, j >= 1). Returns each anti-diagonal's
    scale (diagonal d holds values x 2^scale[d]) and the last cell's
    states' sum z (the sequence pair's probability, scaled)."""
    L1, L2 = x.shape[0], y.shape[0]
    scale = np.zeros(L1 + L2 + 1, dtype=np.int64)
    ring[0, :, : L1 + 1] = 0.0  # diagonal 0 is all zero (the start enters through init below)
    em, sy = np.empty(L1 + 1), np.empty(L1 + 1)
    sx = np.zeros(L1 + 1)
    for i in range(1, L1 + 1):
        sx[i] = single[x[i - 1]]
    for d in range(1, L1 + L2 + 1):
        cur, p1, p2 = ring[d % 3], ring[(d - 1) % 3], ring[(d - 2) % 3]
        s1 = scale[d - 1]
        s2 = scale[d - 2] if d >= 2 else 0
        f21 = _pow2(s2 - s1)
        lo, hi = max(0, d - L2), min(L1, d)
        a, b = max(2 if d == 2 else 1, d - L2), min(L1, d - 1)  # interior rows: i, j >= 1, not the start
        if f21 == 0.0:  # (no product gives the diagonals' ratio: ldexp, a cell at a time)
            a = b + 1
        for i in range(lo, hi + 1):
            if i < a or i > b:
                _forward_cell(x, y, init, trans, pair, single, cur, p1, p2, i, d - i, s1, f21, s2 - s1)
        if a <= b:
            for i in range(a, b + 1):
                em[i] = pair[x[i - 1], y[d - i - 1]]
                sy[i] = single[y[d - i - 1]]
            _forward_run(cur[0, a: b + 1], cur[1, a: b + 1], cur[2, a: b + 1], cur[3, a: b + 1], cur[4, a: b + 1],
                         p2[0, a - 1: b], p2[1, a - 1: b], p2[2, a - 1: b], p2[3, a - 1: b], p2[4, a - 1: b],
                         p1[0, a - 1: b], p1[1, a - 1: b], p1[3, a - 1: b], p1[0, a: b + 1], p1[2, a: b + 1],
                         p1[4, a: b + 1], em[a: b + 1], sx[a: b + 1], sy[a: b + 1], trans, f21)
        scale[d] = s1 + _rescale(cur, lo, hi)
        for i in range(max(1, d - L2), min(L1, d - 1) + 1):
            FM[i - 1, d - i - 1] = cur[M, i]
    last = ring[(L1 + L2) % 3]
    z = 0.0
    for s in range(N_STATES):
        z += last[s, L1] * init[s]
    return scale, z


@numba.njit(cache=True, nogil=True, inline="always")
def _backward_cell(x, y, trans, pair, single, cur, q1, q2, i, j, L1, L2, f21, k21):
    """Backward cell (i, j) into ``cur`` (``q1``, ``q2``: diagonals d + 1 and d + 2, rows by i)."""
    for s in range(N_STATES):
        diag = 0.0
        if i < L1 and j < L2:
            diag = _times_pow2(trans[s, M] * pair[x[i], y[j]] * q2[M, i + 1], f21, k21)
        acc = diag
        if i < L1:
            for k in (1, 3):
                acc += trans[s, k] * single[x[i]] * q1[k, i + 1]
        if j < L2:
            for k in (2, 4):
                acc += trans[s, k] * single[y[j]] * q1[k, i]
        cur[s, i] = acc


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _backward_run(c, w0, w1, w3, v2, v4, em, sx, sy, trans, s, f21):
    """`_backward_cell`'s state ``s`` on a run of interior cells (i < L1, j <
    L2), each array a run's slice (``w``: diagonal d + 2's match at rows i +
    1, then d + 1's x inserts at rows i + 1; ``v``: d + 1's y inserts at
    rows i), vectorisable as `_forward_run`."""
    tm, t1, t2, t3, t4 = trans[s, M], trans[s, 1], trans[s, 2], trans[s, 3], trans[s, 4]
    for k in range(c.shape[0]):
        acc = tm * em[k] * w0[k] * f21
        acc += t1 * sx[k] * w1[k]
        acc += t3 * sx[k] * w3[k]
        acc += t2 * sy[k] * v2[k]
        acc += t4 * sy[k] * v4[k]
        c[k] = acc


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _posteriors_into(x, y, init, trans, pair, single, ring, FM):
    """Every cell's posterior into ``FM[:L1, :L2]`` (work space: ``ring``,
    (3, 5, at least L1 + 1), and ``FM``, at least (L1, L2)): forward, then
    backward along anti-diagonals, each cell's posterior made as soon as its
    backward value is scaled (kernels/posterior.cu does the same), as
    ``F(i, j) B(i, j) / z`` times 2^(fs[d] + bs[d] - fs[L1 + L2])."""
    L1, L2 = x.shape[0], y.shape[0]
    fs, z = _forward(x, y, init, trans, pair, single, ring, FM)
    last = L1 + L2
    scale = np.zeros(last + 3, dtype=np.int64)
    em, sy = np.empty(L1 + 1), np.empty(L1 + 1)
    sx = np.zeros(L1 + 1)
    for i in range(L1):
        sx[i] = single[x[i]]
    for d in range(last, -1, -1):
        cur, q1, q2 = ring[d % 3], ring[(d + 1) % 3], ring[(d + 2) % 3]
        lo, hi = max(0, d - L2), min(L1, d)
        if d == last:
            for s in range(N_STATES):
                cur[s, L1] = init[s]
            scale[d] = _rescale(cur, lo, hi)
        else:
            s1 = scale[d + 1]
            s2 = scale[d + 2] if d + 2 <= last else s1
            f21 = _pow2(s2 - s1)
            a, b = max(0, d - L2 + 1), min(L1 - 1, d)  # interior rows: i < L1, j < L2
            if f21 == 0.0:
                a = b + 1
            for i in range(lo, hi + 1):
                if i < a or i > b:
                    _backward_cell(x, y, trans, pair, single, cur, q1, q2, i, d - i, L1, L2, f21, s2 - s1)
            if a <= b:
                for i in range(a, b + 1):
                    em[i] = pair[x[i], y[d - i]]
                    sy[i] = single[y[d - i]]
                for s in range(N_STATES):
                    _backward_run(cur[s, a: b + 1], q2[M, a + 1: b + 2], q1[1, a + 1: b + 2], q1[3, a + 1: b + 2],
                                  q1[2, a: b + 1], q1[4, a: b + 1], em[a: b + 1], sx[a: b + 1], sy[a: b + 1], trans,
                                  s, f21)
            scale[d] = s1 + _rescale(cur, lo, hi)
        k = fs[d] + scale[d] - fs[last]
        factor = _pow2(k)
        for i in range(max(1, d - L2), min(L1, d - 1) + 1):
            j = d - i
            FM[i - 1, j - 1] = _times_pow2(FM[i - 1, j - 1] * cur[M, i] / z, factor, k)


@numba.njit(cache=True, nogil=True)
def posteriors(x, y, init, trans, pair, single):
    """(len x, len y) posterior match probabilities."""
    L1, L2 = x.shape[0], y.shape[0]
    out = np.empty((L1, L2))
    _posteriors_into(x, y, init, trans, pair, single, np.empty((3, N_STATES, L1 + 1)), out)
    return out


@numba.njit(cache=True, nogil=True)
def sparse_posteriors(x, y, init, trans, pair, single, cutoff, FM, ring):
    """The posteriors of at least ``cutoff`` as row-major (rows, cols,
    values), the cells `posteriors` gives (``FM``, at least (L1, L2), and
    ``ring``, at least (3, 5, L1 + 1): work space, reused between pairs)."""
    L1, L2 = x.shape[0], y.shape[0]
    _posteriors_into(x, y, init, trans, pair, single, ring, FM)
    return _at_least(FM[:L1, :L2], cutoff, False)


@numba.njit(cache=True, nogil=True)
def _at_least(a, cutoff, nonzero):
    """The cells of the 2-D ``a`` of at least ``cutoff`` (and, with
    ``nonzero``, not 0) as row-major (rows, cols, values), the values
    rounded to single precision (`probabilistic`: ProbCons stores floats)."""
    rows = a.shape[0]
    return _at_least_in(a, np.zeros(rows, np.int64), np.full(rows, a.shape[1] - 1, np.int64), cutoff, nonzero)


@numba.njit(cache=True, nogil=True)
def _at_least_in(a, first, last, cutoff, nonzero):
    """`_at_least` of the cells ``first[x]..last[x]`` of each row x (the
    others are not kept)."""
    count = 0
    for x in range(a.shape[0]):
        for y in range(first[x], last[x] + 1):
            if a[x, y] >= cutoff and not (nonzero and a[x, y] == 0.0):
                count += 1
    rows = np.empty(count, np.int32)
    cols = np.empty(count, np.int32)
    vals = np.empty(count, np.float32)
    k = 0
    for x in range(a.shape[0]):
        for y in range(first[x], last[x] + 1):
            if a[x, y] >= cutoff and not (nonzero and a[x, y] == 0.0):
                rows[k] = x
                cols[k] = y
                vals[k] = a[x, y]
                k += 1
    return rows, cols, vals


@numba.njit(cache=True, nogil=True)
def fixed_point_bits(n):
    """F of the transformation's fixed point for a family of ``n``
    sequences: 61 less n's bit length. A cell's sum is at most about n 2^F
    (each third sequence adds at most a posterior row's sum times the largest
    posterior, the direct posterior twice), below 2^61 (kernels/posterior.cu:
    cons_frac_bits)."""
    b = 0
    while (n >> b) > 0:
        b += 1
    return 61 - b


@numba.njit(cache=True, nogil=True)
def consistency_pair(s, t, n, lengths, indptr, indices, data, base, cutoff, out):
    """ProbCons' consistency transformation of one pair s < t: the (L_s, L_t)
    matrix of sum over u of P_su P_ut (P_ss the identity), where the sparse
    posteriors of the ordered pair (a, b) are rows of a in CSR at
    ``base[a * n + b]`` (``indptr`` per row, ``indices``/``data``), summed
    in the int64 work space ``out`` (at
    least L_s x L_t, all zero on entry and left all zero, reused between
    pairs; another dtype would compile a twin whose sums differ from the
    device's); its entries of at least ``cutoff`` after division by n are
    returned row-major as (rows, cols, values). ``data`` is single
    precision, so each product of two is exact in double precision; each
    term is that product times 2^F (`fixed_point_bits`) truncated to an
    integer, and the integer sums do not depend on their order (the device
    adds them with atomics). Only the span of each row's cells that are not
    zero is converted, cut and cleared again: a pair's rows reach a few dozen
    of the other sequence's residues, not all of them."""
    Ls, Lt = lengths[s], lengths[t]
    F = fixed_point_bits(n)
    one, inv_one = np.float64(1 << F), 1.0 / np.float64(1 << F)
    for u in range(n):
        if u == s or u == t:  # P_ss P_st and P_st P_tt: the direct posteriors, once each
            b = base[s * n + t]
            for x in range(Ls):
                for k in range(indptr[b + x], indptr[b + x + 1]):
                    out[x, indices[k]] += np.int64(np.float64(data[k]) * one)
            continue
        a, c = base[s * n + u], base[u * n + t]
        for x in range(Ls):
            for k in range(indptr[a + x], indptr[a + x + 1]):
                z, p = indices[k], np.float64(data[k]) * one
                for m in range(indptr[c + z], indptr[c + z + 1]):
                    out[x, indices[m]] += np.int64(p * np.float64(data[m]))
    first = np.empty(Ls, np.int64)  # each row's span of columns not zero (the rest were never reached)
    last = np.empty(Ls, np.int64)
    for x in range(Ls):
        y = 0
        while y < Lt and out[x, y] == 0:
            y += 1
        first[x] = y
        y = Lt - 1
        while y >= first[x] and out[x, y] == 0:
            y -= 1
        last[x] = y
    sums = out.view(np.float64)  # each reached cell's integer becomes its value, in the same work space
    for x in range(Ls):
        for y in range(first[x], last[x] + 1):
            sums[x, y] = np.float64(out[x, y]) * inv_one / n
    kept = _at_least_in(sums[:Ls, :Lt], first, last, cutoff, True)
    for x in range(Ls):
        sums[x, first[x]: last[x] + 1] = 0.0  # (the bits of an int64 0)
    return kept


@numba.njit(cache=True, nogil=True)
def ordered_csr_rows(q, x, y, p, first_st, first_ts, indptr, indices, data):
    """The CSR of every ordered pair from flat (q, x, y, p) sorted by pair,
    then row-major (probabilistic._Group.ordered_csr): pair q's entry (x, y,
    v) is column y of row ``first_st[q] + x`` and column x of row
    ``first_ts[q] + y``. A counting sort: the entries arrive by x, then y,
    so each row's columns come out ascending, as the device's sort leaves
    them. Fills ``indptr`` (zeros, one more than the rows), ``indices`` and
    ``data`` (2 entries each) and returns them. Where the rows (s, t) come
    first in the flat's order, entry e of the flat is entry e of the CSR, so
    ``y`` and ``p`` may be the first halves of ``indices`` and ``data``."""
    for e in range(q.shape[0]):
        indptr[first_st[q[e]] + x[e] + 1] += 1
        indptr[first_ts[q[e]] + y[e] + 1] += 1
    for r in range(indptr.shape[0] - 1):
        indptr[r + 1] += indptr[r]
    fill = indptr[:-1].copy()
    for e in range(q.shape[0]):
        r = first_st[q[e]] + x[e]
        k = fill[r]
        indices[k] = y[e]
        data[k] = p[e]
        fill[r] = k + 1
    for e in range(q.shape[0]):  # the transposed half, once every (s, t) entry has been read
        r = first_ts[q[e]] + y[e]
        k = fill[r]
        indices[k] = x[e]
        data[k] = p[e]
        fill[r] = k + 1
    return indptr, indices, data


# ------------------------------------------------------------------ the family's interface (`PosteriorKernels`)

def flat_posteriors(codes: list[np.ndarray], pairs: np.ndarray, init, trans, pair, single, cutoff: float, *,
                    tick=None, room: bool = False, planned: int = 0) -> tuple:
    """Twin of posterior_gpu.flat_posteriors: the posteriors of at least
    ``cutoff`` of ``pairs`` (P, 2) of ``codes`` as flat host arrays (q, x, y,
    p), by pair, then row-major, a pair per host thread (`sparse_posteriors`
    releases the GIL); ``planned`` entries made room for (`FlatWriter`)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    longest = max((len(c) for c in codes), default=0) + 1
    cells = [np.asarray(c, np.int64) for c in codes]

    def one(pr, work):
        return sparse_posteriors(cells[pr[0]], cells[pr[1]], init, trans, pair, single, cutoff, *work)

    return flat_of(one, [tuple(pr) for pr in pairs.tolist()],
                   lambda: (np.empty((longest, longest)), np.empty((3, 5, longest))), planned, longest, room, tick)


def ordered_csr(q, x, y, p, first: np.ndarray, n_pairs: int, longest: int) -> tuple:
    """Twin of posterior_gpu.ordered_csr: a counting sort (`ordered_csr_rows`)
    in place of the device's, with no temporaries of the entries' size: y and
    p become the first halves of indices and data where `FlatWriter` left
    room behind them."""
    indices, data = room_behind(y, 2 * len(q)), room_behind(p, 2 * len(q))
    wide = 2 * len(q) > np.iinfo(np.int32).max
    indptr = np.zeros(int(first[-1]) + 1, np.int64 if wide else np.int32)
    return ordered_csr_rows(q, x, y, p, first[:n_pairs], first[n_pairs:-1], indptr, indices, data)


def consistency_pairs(indptr, indices, data, base, lengths, nq, bq, lq, ps, pt, cutoff: float, *, tick=None,
                      room: bool = False, planned: int = 0) -> tuple:
    """Twin of posterior_gpu.consistency_pairs: `consistency_pair` of each
    pair on host threads, as flat host arrays (q, x, y, p)."""
    longest = int(lengths.max(initial=0))

    def one(q, work):
        n = int(nq[q])
        lens = lengths[lq[q]: lq[q] + n]
        return consistency_pair(int(ps[q]), int(pt[q]), n, lens, indptr, indices, data, base[bq[q]: bq[q] + n * n],
                                cutoff, work)

    return flat_of(one, list(range(len(ps))), lambda: np.zeros((longest, longest), np.int64), planned, longest, room,
                   tick)


# ------------------------------------------------------------------ flat arrays written from host threads

class FlatWriter:
    """Per-pair (x, y, p) host arrays written into flat (q, x, y, p) as they
    come, pair after pair: int32 pair indices, residue indices int16 where
    every sequence is shorter than 2^15 (`index_dtype`), single-precision
    values: 12 bytes an entry (a library of 142 sequences of 400 residues
    holds tens of millions). The arrays are made for ``capacity`` entries
    (the memory plan's bound: pages not written take no memory) and grow by
    half where a pass holds more. With ``room``, y and p have twice the
    room, so that the ordered CSR is built around them (`room_behind`).
    Only a step's pairs are held at once beside the flat arrays."""

    def __init__(self, capacity: int, longest: int, room: bool = False):
        self.idx, self.room, self.n = index_dtype(longest), room, 0
        self.arrays = self._made(max(int(capacity), 1))

    def _made(self, cap: int) -> tuple:
        self.cap = cap
        size = 2 * cap if self.room else cap
        return (np.empty(cap, np.int32), np.empty(cap, self.idx), np.empty(size, self.idx),
                np.empty(size, np.float32))

    def add(self, rows: list, first: int) -> None:
        """The arrays of pairs ``first``, ``first + 1``, ... (in order)."""
        k = sum(len(r[0]) for r in rows)
        if self.n + k > self.cap:  # more than planned: grown (`memory.ROW_ENTRIES` says how rare)
            old, self.arrays = self.arrays, self._made(max(self.cap + self.cap // 2, self.n + k))
            for a, b in zip(self.arrays, old):
                a[: self.n] = b[: self.n]
            del old
        q, x, y, p = self.arrays
        at = self.n
        for i, r in enumerate(rows):
            m = len(r[0])
            q[at: at + m] = first + i
            x[at: at + m], y[at: at + m], p[at: at + m] = r
            at += m
        self.n = at

    def flat(self) -> tuple:
        return tuple(a[: self.n] for a in self.arrays)


def flat_of(one, items: list, work, capacity: int, longest: int, room: bool, tick=None) -> tuple:
    """`threads.threaded` ``one`` over ``items``, each step's pairs written into a
    `FlatWriter` as the step ends (flat (q, x, y, p))."""
    writer = FlatWriter(capacity, longest, room)
    threaded(one, items, work, tick, sink=writer.add)
    return writer.flat()


def room_behind(a: np.ndarray, size: int) -> np.ndarray:
    """The array of ``size`` whose first part ``a`` is (`FlatWriter`'s
    room), or a new one with ``a`` copied in."""
    whole = a.base
    if isinstance(whole, np.ndarray) and whole.ndim == 1 and len(whole) >= size and whole.dtype == a.dtype \
            and whole.ctypes.data == a.ctypes.data:
        return whole[:size]
    out = np.empty(size, a.dtype)
    out[: len(a)] = a
    return out


def index_dtype(longest: int):
    """The residue indices' dtype of a library whose sequences are at most
    ``longest`` long: int16 where they fit, else int32."""
    return np.int16 if longest <= np.iinfo(np.int16).max else np.int32
