"""numba engine of pair-HMM posteriors (`msa_gpu.consistency.pairhmm`):
forward-backward in probability space along anti-diagonals (the order a GPU
wavefront takes), each anti-diagonal scaled by a power of two. Cells of one
anti-diagonal have emitted the same residues, so their values stay within a
double's range of each other even where a row's would not (the last cell of
a row of two unrelated 400-residue sequences lay more than 2^-1074 below the
row's largest)."""

from __future__ import annotations

import math

import numba
import numpy as np

M, N_STATES = 0, 5


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


@numba.njit(cache=True, nogil=True)
def _rescale(A, d, L2, L1):
    """Divide anti-diagonal ``d`` of ``A`` by a power of two that brings its
    largest entry into [0.5, 1) (exact); returns the exponent (0 if all zero)."""
    lo, hi = max(0, d - L2), min(L1, d)
    top = 0.0
    for i in range(lo, hi + 1):
        for s in range(N_STATES):
            if A[i, d - i, s] > top:
                top = A[i, d - i, s]
    if top == 0.0:
        return 0
    e = math.frexp(top)[1]
    f = _pow2(-e)  # a product by 2^-e (ldexp to the bit), not a call of ldexp a value
    for i in range(lo, hi + 1):
        for s in range(N_STATES):
            A[i, d - i, s] = _times_pow2(A[i, d - i, s], f, -e)
    return e


@numba.njit(cache=True, nogil=True)
def _forward(x, y, init, trans, pair, single, F):
    """Forward values into ``F`` (at least (L1 + 1, L2 + 1, 5); only the
    cells the recursion writes are written, so row 0 and column 0 are
    cleared first)."""
    L1, L2 = x.shape[0], y.shape[0]
    F[0, : L2 + 1, :] = 0.0
    F[: L1 + 1, 0, :] = 0.0
    scale = np.zeros(L1 + L2 + 1, dtype=np.int64)  # diagonal d holds values x 2^scale[d]
    for d in range(1, L1 + L2 + 1):
        s1 = scale[d - 1]
        s2 = scale[d - 2] if d >= 2 else 0
        f21 = _pow2(s2 - s1)
        for i in range(max(0, d - L2), min(L1, d) + 1):
            j = d - i
            if i > 0 and j > 0:  # from diagonal d - 2, brought to diagonal d - 1's units
                acc = 0.0
                for s in range(N_STATES):
                    acc += F[i - 1, j - 1, s] * trans[s, M]
                acc = _times_pow2(acc, f21, s2 - s1)
                if i == 1 and j == 1:
                    acc += math.ldexp(init[M], -s1)
                F[i, j, M] = pair[x[i - 1], y[j - 1]] * acc
            if i > 0:
                for k in (1, 3):  # x inserts
                    acc = F[i - 1, j, M] * trans[M, k] + F[i - 1, j, k] * trans[k, k]
                    if i == 1 and j == 0:
                        acc += math.ldexp(init[k], -s1)
                    F[i, j, k] = single[x[i - 1]] * acc
            if j > 0:
                for k in (2, 4):  # y inserts
                    acc = F[i, j - 1, M] * trans[M, k] + F[i, j - 1, k] * trans[k, k]
                    if i == 0 and j == 1:
                        acc += math.ldexp(init[k], -s1)
                    F[i, j, k] = single[y[j - 1]] * acc
        scale[d] = s1 + _rescale(F, d, L2, L1)
    return scale


@numba.njit(cache=True, nogil=True)
def _backward(x, y, init, trans, pair, single, B):
    """Backward values into ``B`` (every cell is written)."""
    L1, L2 = x.shape[0], y.shape[0]
    last = L1 + L2
    scale = np.zeros(last + 3, dtype=np.int64)
    for s in range(N_STATES):
        B[L1, L2, s] = init[s]
    scale[last] = _rescale(B, last, L2, L1)
    for d in range(last - 1, -1, -1):
        s1 = scale[d + 1]
        s2 = scale[d + 2] if d + 2 <= last else s1
        f21 = _pow2(s2 - s1)
        for i in range(max(0, d - L2), min(L1, d) + 1):
            j = d - i
            for s in range(N_STATES):
                diag = 0.0
                if i < L1 and j < L2:
                    diag = _times_pow2(trans[s, M] * pair[x[i], y[j]] * B[i + 1, j + 1, M], f21, s2 - s1)
                acc = diag
                if i < L1:
                    for k in (1, 3):
                        acc += trans[s, k] * single[x[i]] * B[i + 1, j, k]
                if j < L2:
                    for k in (2, 4):
                        acc += trans[s, k] * single[y[j]] * B[i, j + 1, k]
                B[i, j, s] = acc
        scale[d] = s1 + _rescale(B, d, L2, L1)
    return scale


@numba.njit(cache=True, nogil=True)
def _posterior_cells(x, y, init, trans, pair, single, F, B):
    """Forward and backward into ``F``/``B``; returns (z, fs, bs, factor):
    the posterior of cell (i, j) is ``_times_pow2(F[i, j, M] * B[i, j, M] /
    z, factor[d], fs[d] + bs[d] - fs[L1 + L2])`` with d = i + j."""
    L1, L2 = x.shape[0], y.shape[0]
    fs = _forward(x, y, init, trans, pair, single, F)
    bs = _backward(x, y, init, trans, pair, single, B)
    z = 0.0
    for s in range(N_STATES):
        z += F[L1, L2, s] * init[s]
    factor = np.empty(L1 + L2 + 1)  # each anti-diagonal's power of two (0.0: ldexp it)
    for d in range(L1 + L2 + 1):
        factor[d] = _pow2(fs[d] + bs[d] - fs[L1 + L2])
    return z, fs, bs, factor


@numba.njit(cache=True, nogil=True)
def posteriors(x, y, init, trans, pair, single):
    """(len x, len y) posterior match probabilities."""
    L1, L2 = x.shape[0], y.shape[0]
    F = np.empty((L1 + 1, L2 + 1, N_STATES))
    B = np.empty((L1 + 1, L2 + 1, N_STATES))
    z, fs, bs, factor = _posterior_cells(x, y, init, trans, pair, single, F, B)
    out = np.zeros((L1, L2))
    for i in range(1, L1 + 1):
        for j in range(1, L2 + 1):
            d = i + j
            out[i - 1, j - 1] = _times_pow2(F[i, j, M] * B[i, j, M] / z, factor[d], fs[d] + bs[d] - fs[L1 + L2])
    return out


@numba.njit(cache=True, nogil=True)
def sparse_posteriors(x, y, init, trans, pair, single, cutoff, F, B):
    """The posteriors of at least ``cutoff`` as row-major (rows, cols,
    values), the cells `posteriors` gives (``F``, ``B``: work space of at
    least (L1 + 1, L2 + 1, 5), reused between pairs)."""
    L1, L2 = x.shape[0], y.shape[0]
    z, fs, bs, factor = _posterior_cells(x, y, init, trans, pair, single, F, B)
    for i in range(1, L1 + 1):  # F's match state becomes the posterior in place, then is gathered
        for j in range(1, L2 + 1):
            d = i + j
            F[i, j, M] = _times_pow2(F[i, j, M] * B[i, j, M] / z, factor[d], fs[d] + bs[d] - fs[L1 + L2])
    return _at_least(F[1: L1 + 1, 1: L2 + 1, M], cutoff, False)


@numba.njit(cache=True, nogil=True)
def _at_least(a, cutoff, nonzero):
    """The cells of the 2-D ``a`` of at least ``cutoff`` (and, with
    ``nonzero``, not 0) as row-major (rows, cols, values), the values
    rounded to single precision (`probabilistic`: ProbCons stores floats)."""
    count = 0
    for x in range(a.shape[0]):
        for y in range(a.shape[1]):
            if a[x, y] >= cutoff and not (nonzero and a[x, y] == 0.0):
                count += 1
    rows = np.empty(count, np.int32)
    cols = np.empty(count, np.int32)
    vals = np.empty(count, np.float32)
    k = 0
    for x in range(a.shape[0]):
        for y in range(a.shape[1]):
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
    ``base[a * n + b]`` (``indptr`` per row, ``indices``/``data``), summed in
    the int64 work space ``out`` (at least L_s x L_t, reused between pairs;
    another dtype would compile a twin whose sums differ from the device's);
    its entries of at least ``cutoff`` after division by n are returned
    row-major as (rows, cols, values). ``data`` is single precision, so each
    product of two is exact in double precision; each term is that product
    times 2^F (`fixed_point_bits`) truncated to an integer, and the integer
    sums do not depend on their order (the device adds them with atomics)."""
    Ls, Lt = lengths[s], lengths[t]
    F = fixed_point_bits(n)
    one, inv_one = np.float64(1 << F), 1.0 / np.float64(1 << F)
    for x in range(Ls):
        for y in range(Lt):
            out[x, y] = 0
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
    sums = out.view(np.float64)  # each cell's integer becomes its value, in the same work space
    for x in range(Ls):
        for y in range(Lt):
            sums[x, y] = np.float64(out[x, y]) * inv_one / n
    return _at_least(sums[:Ls, :Lt], cutoff, True)


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
