"""CPU twins (numba) of kernels/consistency.cu: the same integers, summed in
order instead of by atomics."""

from __future__ import annotations

import numba
import numpy as np

from msa_gpu.backend.threads import call
from msa_gpu.kernels.constants import CONS_STEPS

#: Nanoseconds of one unit of each loop on one thread, for sizing the parallel
#: loops (`msa_gpu.backend.threads`): a (residue, third sequence) step of
#: `_library_extend`, a code of `_residue_columns`, a library entry added by
#: `_consistency_add`, a cell of `_consistency_fold`.
NS_PER_UNIT = {"extend": 5.0, "columns": 1.0, "add": 4.0, "fold": 10.0}


@numba.njit(cache=True, parallel=True)
def _library_extend(pairs, dense_off, pair_map, weights, length, res_off, n, dense):
    for k in numba.prange(pairs.shape[0]):
        s, t = pairs[k, 0], pairs[k, 1]
        for x in range(length[s]):
            row = (res_off[s] + x) * n
            for u in range(n):
                z = pair_map[row + u]
                wsu, wut = weights[s * n + u], weights[u * n + t]
                if z < 0 or wsu == 0 or wut == 0:
                    continue
                y = pair_map[(res_off[u] + z) * n + t]
                if y >= 0:
                    dense[dense_off[k] + x * length[t] + y] += wsu * wut


def library_extend(pairs, dense_off, pair_map, weights, length, res_off, n: int, total: int):
    """Dense extended matrices of the pairs (host int64 (P, 2), s < t), laid
    out at ``dense_off``; see kernels/consistency.cu."""
    dense = np.zeros(max(total, 1), np.int32)
    pairs, length = np.asarray(pairs, np.int64), np.asarray(length, np.int64)
    call(_library_extend, pairs, dense_off, pair_map, weights, length, np.asarray(res_off, np.int64), n, dense,
         work=float(length[pairs[:, 0]].sum()) * n * NS_PER_UNIT["extend"], items=pairs.shape[0])
    return dense[:total]


@numba.njit(cache=True, parallel=True)
def _residue_columns(codes, code_off, k, L, gap, col):
    for q in numba.prange(k.shape[0]):
        Lq, g = L[q], gap[q]
        for r in range(k[q]):
            base = code_off[q] + r * Lq
            x = 0
            for c in range(Lq):
                if codes[base + c] != g:
                    col[base + x] = c
                    x += 1


@numba.njit(cache=True, parallel=True)
def _consistency_add(lp, code_off, k, L, col, weights, members, w_off, pair_off, ex, ey, ew,
                     g_n, g_base, g_pair, s_off, lib):
    for i in numba.prange(lp.shape[0]):
        p = lp[i]
        qa, qb = 2 * p, 2 * p + 1
        la, lb = L[qa], L[qb]
        out = s_off[p]
        for sa in range(k[qa]):
            for tb in range(k[qb]):
                gs, gt = members[w_off[qa] + sa], members[w_off[qb] + tb]
                n, base = np.int64(g_n[gs]), g_base[gs]
                s, t = gs - base, gt - base
                flip = s > t
                lo, hi = (t, s) if flip else (s, t)
                pk = g_pair[gs] + lo * (2 * n - lo - 1) // 2 + (hi - lo - 1)
                wst = weights[w_off[qa] + sa] * weights[w_off[qb] + tb]
                ca = code_off[qa] + sa * la
                cb = code_off[qb] + tb * lb
                for e in range(pair_off[pk], pair_off[pk + 1]):
                    x, y = (ey[e], ex[e]) if flip else (ex[e], ey[e])
                    lib[out + col[ca + x] * lb + col[cb + y]] += wst * ew[e]


@numba.njit(cache=True, parallel=True)
def _consistency_fold(lp, lp_n, W, s_off, lib, lam, one_sq, S):
    for i in numba.prange(lp.shape[0]):
        p = lp[i]
        n = np.int64(lp_n[i])
        denom = W[2 * p] * W[2 * p + 1]
        for c in range(s_off[p], s_off[p + 1]):
            v = (lib[c] // n) * CONS_STEPS // denom
            S[c] += np.int32(v * lam // (CONS_STEPS * one_sq))


def consistency_scores(lv, codes, weights, members, lp, lp_n, stack, S, lam: int, one: int) -> None:
    """Add the library's share to the column scores S of the pairs ``lp``
    (their families' sizes ``lp_n``), in place."""
    lp = np.asarray(lp, np.int64)
    col = np.empty(max(int(codes.shape[0]), 1), np.int32)
    call(_residue_columns, codes, lv.code_off, lv.k, lv.L, lv.gap, col,
         work=codes.shape[0] * NS_PER_UNIT["columns"], items=lv.k.shape[0])
    lib = np.zeros(max(lv.n_cells, 1), np.int64)
    seq_pairs = float(np.asarray(lv.k[2 * lp], np.int64) @ np.asarray(lv.k[2 * lp + 1], np.int64))
    entries = stack.x.shape[0] / max(stack.pair_off.shape[0] - 1, 1)  # a sequence pair's entries, on average
    call(_consistency_add, lp, lv.code_off, lv.k, lv.L, col, weights, members, lv.w_off, stack.pair_off, stack.x,
         stack.y, stack.w, stack.g_n, stack.g_base, stack.g_pair, lv.s_off, lib,
         work=seq_pairs * entries * NS_PER_UNIT["add"], items=lp.shape[0])
    cells = float((lv.s_off[lp + 1] - lv.s_off[lp]).sum())
    call(_consistency_fold, lp, lp_n, lv.W, lv.s_off, lib, np.int64(lam), np.int64(one * one), S,
         work=cells * NS_PER_UNIT["fold"], items=lp.shape[0])
