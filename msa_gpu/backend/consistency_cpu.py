"""CPU twins (numba) of kernels/consistency.cu: the same integers, summed in
order instead of by atomics."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, parallel=True)
def _residue_index(codes, code_off, k, L, gap, rank, col):
    for q in numba.prange(k.shape[0]):
        Lq, g = L[q], gap[q]
        for r in range(k[q]):
            base = code_off[q] + r * Lq
            x = 0
            for c in range(Lq):
                if codes[base + c] != g:
                    rank[base + c] = x
                    col[base + x] = c
                    x += 1
                else:
                    rank[base + c] = -1


@numba.njit(cache=True, parallel=True)
def _consistency_add(lp, code_off, k, L, rank, col, weights, members, w_off, pair_map, lw,
                     g_n, g_base, g_map, g_w, s_off, lib):
    for i in numba.prange(lp.shape[0]):
        p = lp[i]
        qa, qb = 2 * p, 2 * p + 1
        la, lb, kb = L[qa], L[qb], k[qb]
        for local in range(k[qa] * la):
            x = rank[code_off[qa] + local]
            if x < 0:
                continue
            s, a = local // la, local % la
            gs = members[w_off[qa] + s]
            n, base = g_n[gs], g_base[gs]
            ws = weights[w_off[qa] + s]
            rowx = g_map[gs] + x * n
            out = s_off[p] + a * lb
            for u in range(n):
                z = pair_map[rowx + u]
                wsu = np.int64(lw[g_w[gs] + u])
                if z < 0 or wsu == 0:
                    continue
                gu = base + u
                rowz = g_map[gu] + z * n
                for tb in range(kb):
                    t = members[w_off[qb] + tb] - base
                    y = pair_map[rowz + t]
                    wut = np.int64(lw[g_w[gu] + t])
                    if y < 0 or wut == 0:
                        continue
                    b = col[code_off[qb] + tb * lb + y]
                    lib[out + b] += ws * weights[w_off[qb] + tb] * wsu * wut


@numba.njit(cache=True, parallel=True)
def _consistency_fold(lp, lp_n, W, s_off, lib, lam, one_sq, S):
    for i in numba.prange(lp.shape[0]):
        p = lp[i]
        n = np.int64(lp_n[i])
        denom = W[2 * p] * W[2 * p + 1]
        for c in range(s_off[p], s_off[p + 1]):
            v = (lib[c] // n) * 16 // denom
            S[c] += np.int32(v * lam // (16 * one_sq))


def consistency_scores(lv, codes, weights, members, lp, lp_n, stack, S, lam: int, one: int) -> None:
    """Add the library's share to the column scores S of the pairs ``lp``
    (their families' sizes ``lp_n``), in place."""
    size = max(int(codes.shape[0]), 1)
    rank = np.empty(size, np.int32)
    col = np.empty(size, np.int32)
    _residue_index(codes, lv.code_off, lv.k, lv.L, lv.gap, rank, col)
    lib = np.zeros(max(lv.n_cells, 1), np.int64)
    _consistency_add(lp, lv.code_off, lv.k, lv.L, rank, col, weights, members, lv.w_off, stack.pair_map,
                     stack.weights, stack.g_n, stack.g_base, stack.g_map, stack.g_w, lv.s_off, lib)
    _consistency_fold(lp, lp_n, lv.W, lv.s_off, lib, np.int64(lam), np.int64(one * one), S)
