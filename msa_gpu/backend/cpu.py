"""CPU twins of the DP kernels (numba). They are the test oracle: the GPU
kernels must give the same integers, ties included."""

from __future__ import annotations

import numba
import numpy as np

NEG_INF = -1_000_000_000


@numba.njit(cache=True, nogil=True)
def _align_one(S, rp, cp, m, n, D, out):
    """Gotoh DP for one pair, row by row; see kernels/profile_dp.cu."""
    Hrow = np.empty(n + 1, np.int32)
    Erow = np.empty(n + 1, np.int32)
    for i in range(m + 1):
        hdiag = 0
        f = NEG_INF
        hleft = 0
        for j in range(n + 1):
            bits = 0
            e = NEG_INF
            if i > 0:
                ext = rp[i, 2] if (j == 0 or j == n) else rp[i, 1]
                opened = Hrow[j] - (cp[j, 0] * rp[i, 3]) // 1024
                extended = Erow[j]
                if opened >= extended:
                    e = opened - ext
                    bits |= 4
                else:
                    e = extended - ext
            fj = NEG_INF
            if j > 0:
                ext = cp[j, 2] if (i == 0 or i == m) else cp[j, 1]
                opened = hleft - (rp[i, 0] * cp[j, 3]) // 1024
                if opened >= f:
                    fj = opened - ext
                    bits |= 8
                else:
                    fj = f - ext
            if i > 0 and j > 0:
                h = hdiag + S[(i - 1) * n + (j - 1)]
                if e > h:
                    h = e
                    bits |= 1
                if fj > h:
                    h = fj
                    bits = (bits & 12) | 2
            elif i > 0:
                h = e
                bits |= 1
            elif j > 0:
                h = fj
                bits |= 2
            else:
                h = 0
            hdiag = Hrow[j]  # H[i-1][j] becomes the diagonal of (i, j+1)
            Hrow[j] = h
            Erow[j] = e
            f = fj
            hleft = h
            D[i * (n + 1) + j] = bits
    score = Hrow[n]
    i, j, state, length = m, n, 0, 0
    while i > 0 or j > 0:
        bits = D[i * (n + 1) + j]
        if state == 0:
            state = bits & 3
        if state == 0:
            out[length] = 0
            i -= 1
            j -= 1
        elif state == 1:
            out[length] = 1
            state = 0 if (bits & 4) else 1
            i -= 1
        else:
            out[length] = 2
            state = 0 if (bits & 8) else 2
            j -= 1
        length += 1
    return score, length


@numba.njit(cache=True, parallel=True)
def _align_batch(S, s_off, rowp, row_off, colp, col_off, dims, path, path_off, path_len, score):
    for p in numba.prange(dims.shape[0]):
        m, n = dims[p, 0], dims[p, 1]
        D = np.empty((m + 1) * (n + 1), np.uint8)
        sc, ln = _align_one(
            S[s_off[p]: s_off[p] + m * n],
            rowp[row_off[p]: row_off[p] + m + 1],
            colp[col_off[p]: col_off[p] + n + 1],
            m, n, D, path[path_off[p]: path_off[p] + m + n],
        )
        score[p] = sc
        path_len[p] = ln


def align_batch(batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Align every pair of a `PairBatch`; returns (path, path_len, score)."""
    npairs = batch.dims.shape[0]
    path = np.empty(int(batch.path_off[-1]), np.uint8)
    path_len = np.empty(npairs, np.int32)
    score = np.empty(npairs, np.int32)
    _align_batch(
        batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off,
        batch.dims, path, batch.path_off, path_len, score,
    )
    return path, path_len, score
