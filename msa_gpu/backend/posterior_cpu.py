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
    for i in range(lo, hi + 1):
        for s in range(N_STATES):
            A[i, d - i, s] = math.ldexp(A[i, d - i, s], -e)
    return e


@numba.njit(cache=True, nogil=True)
def _forward(x, y, init, trans, pair, single):
    L1, L2 = x.shape[0], y.shape[0]
    F = np.zeros((L1 + 1, L2 + 1, N_STATES))
    scale = np.zeros(L1 + L2 + 1, dtype=np.int64)  # diagonal d holds values x 2^scale[d]
    for d in range(1, L1 + L2 + 1):
        s1 = scale[d - 1]
        s2 = scale[d - 2] if d >= 2 else 0
        for i in range(max(0, d - L2), min(L1, d) + 1):
            j = d - i
            if i > 0 and j > 0:  # from diagonal d - 2, brought to diagonal d - 1's units
                acc = 0.0
                for s in range(N_STATES):
                    acc += F[i - 1, j - 1, s] * trans[s, M]
                acc = math.ldexp(acc, s2 - s1)
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
    return F, scale


@numba.njit(cache=True, nogil=True)
def _backward(x, y, init, trans, pair, single):
    L1, L2 = x.shape[0], y.shape[0]
    last = L1 + L2
    B = np.zeros((L1 + 1, L2 + 1, N_STATES))
    scale = np.zeros(last + 3, dtype=np.int64)
    for s in range(N_STATES):
        B[L1, L2, s] = init[s]
    scale[last] = _rescale(B, last, L2, L1)
    for d in range(last - 1, -1, -1):
        s1 = scale[d + 1]
        s2 = scale[d + 2] if d + 2 <= last else s1
        for i in range(max(0, d - L2), min(L1, d) + 1):
            j = d - i
            for s in range(N_STATES):
                diag = 0.0
                if i < L1 and j < L2:
                    diag = math.ldexp(trans[s, M] * pair[x[i], y[j]] * B[i + 1, j + 1, M], s2 - s1)
                acc = diag
                if i < L1:
                    for k in (1, 3):
                        acc += trans[s, k] * single[x[i]] * B[i + 1, j, k]
                if j < L2:
                    for k in (2, 4):
                        acc += trans[s, k] * single[y[j]] * B[i, j + 1, k]
                B[i, j, s] = acc
        scale[d] = s1 + _rescale(B, d, L2, L1)
    return B, scale


@numba.njit(cache=True, nogil=True)
def posteriors(x, y, init, trans, pair, single):
    """(len x, len y) posterior match probabilities."""
    L1, L2 = x.shape[0], y.shape[0]
    F, fs = _forward(x, y, init, trans, pair, single)
    B, bs = _backward(x, y, init, trans, pair, single)
    z = 0.0
    for s in range(N_STATES):
        z += F[L1, L2, s] * init[s]
    out = np.zeros((L1, L2))
    for i in range(1, L1 + 1):
        for j in range(1, L2 + 1):
            d = i + j
            out[i - 1, j - 1] = math.ldexp(F[i, j, M] * B[i, j, M] / z, fs[d] + bs[d] - fs[L1 + L2])
    return out


@numba.njit(cache=True, nogil=True)
def consistency_pair(s, t, n, lengths, indptr, indices, data, base, cutoff):
    """ProbCons' consistency transformation of one pair s < t: the dense
    (L_s, L_t) matrix of sum over u of P_su P_ut (P_ss the identity), where
    the sparse posteriors of the ordered pair (a, b) are rows of a in CSR
    at ``base[a * n + b]`` (``indptr`` per row, ``indices``/``data``);
    entries below ``cutoff`` (after division by n) are zeroed."""
    Ls, Lt = lengths[s], lengths[t]
    out = np.zeros((Ls, Lt))
    for u in range(n):
        if u == s or u == t:  # P_ss P_st and P_st P_tt: the direct posteriors, once each
            b = base[s * n + t]
            for x in range(Ls):
                for k in range(indptr[b + x], indptr[b + x + 1]):
                    out[x, indices[k]] += data[k]
            continue
        a, c = base[s * n + u], base[u * n + t]
        for x in range(Ls):
            for k in range(indptr[a + x], indptr[a + x + 1]):
                z, p = indices[k], data[k]
                for m in range(indptr[c + z], indptr[c + z + 1]):
                    out[x, indices[m]] += p * data[m]
    for x in range(Ls):
        for y in range(Lt):
            v = out[x, y] / n
            out[x, y] = v if v >= cutoff else 0.0
    return out
