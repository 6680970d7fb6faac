"""CPU twin (numba) of kernels/refine.cu."""

from __future__ import annotations

import numba
import numpy as np

from msa_gpu.backend.profile_cpu import FRAC, fixed_div, gap_ext
from msa_gpu.backend.threads import call

#: Nanoseconds of a move of `_path_score` and of a code of `_gather_profiles`
#: on one thread, for sizing the parallel loops (`msa_gpu.backend.threads`).
NS_PER_UNIT = {"move": 8.0, "code": 4.0}


@numba.njit(cache=True, parallel=True)
def _path_score(S, s_off, rowp, row_off, colp, col_off, dims, moves, move_off, move_len, out):
    for p in numba.prange(dims.shape[0]):
        m, n, rnd = dims[p, 0], dims[p, 1], dims[p, 2]
        if s_off[p + 1] - s_off[p] != np.int64(m) * n:  # a long pair: no scores
            out[p] = 0
            continue
        rp, cp = row_off[p], col_off[p]
        score = np.int64(0)
        i = j = st = 0
        for t in range(move_len[p]):
            move = moves[move_off[p] + t]
            if move == 0:
                if st == 1:  # the opens the gap run took over (kernels/profile.cu: dp_cell)
                    score += fixed_div(colp[cp + j, 2] * rowp[rp + i + 1, 3], FRAC, rnd)
                elif st == 2:
                    score += fixed_div(rowp[rp + i, 2] * colp[cp + j + 1, 3], FRAC, rnd)
                score += S[s_off[p] + i * n + j]
                i += 1
                j += 1
                st = 0
            elif move == 1:
                i += 1
                if st != 1:
                    score -= fixed_div(colp[cp + j, 0] * rowp[rp + i, 3], FRAC, rnd)
                score -= gap_ext(rowp[rp + i, 3], colp[cp + j, 1], rnd)
                st = 1
            else:
                j += 1
                if st != 2:
                    score -= fixed_div(rowp[rp + i, 0] * colp[cp + j, 3], FRAC, rnd)
                score -= gap_ext(colp[cp + j, 3], rowp[rp + i, 1], rnd)
                st = 2
        out[p] = score


def path_score(batch, moves, move_off, move_len) -> np.ndarray:
    """Score of each pair's given path (forward moves at ``move_off``) under
    the DP's recurrences; see kernels/refine.cu."""
    out = np.empty(batch.dims.shape[0], np.int64)
    move_len = np.asarray(move_len, np.int32)
    call(_path_score, batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off, batch.dims,
         moves, np.asarray(move_off, np.int64), move_len, out,
         work=float(move_len.sum()) * NS_PER_UNIT["move"], items=out.shape[0])
    return out


@numba.njit(cache=True, parallel=True)
def _gather_profiles(flat, rows, row_off, cols, col_off, L, base, width, code_off, out):
    for q in numba.prange(L.shape[0]):
        for local in range(code_off[q + 1] - code_off[q]):
            r = rows[row_off[q] + local // L[q]]
            c = cols[col_off[q] + local % L[q]]
            out[code_off[q] + local] = flat[base[q] + r * width[q] + c]


def gather_profiles(flat, rows, row_off, cols, col_off, L, base, width, code_off):
    """Codes of profiles cut from alignments (see kernels/refine.cu); the
    per-profile arrays are host int64, ``cols`` of the backend."""
    out = np.empty(int(code_off[-1]), np.uint8)
    call(_gather_profiles, flat, np.asarray(rows, np.int64), row_off, np.asarray(cols, np.int64), col_off, L, base,
         width, code_off, out, work=out.shape[0] * NS_PER_UNIT["code"], items=L.shape[0])
    return out
