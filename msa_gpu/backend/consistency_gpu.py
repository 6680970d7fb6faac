"""GPU runtime of kernels/consistency.cu (twin: consistency_cpu)."""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.backend.profile_gpu import THREADS, grid_size
from msa_gpu.kernels import get_function


def library_extend(pairs, dense_off, pair_map, weights, length, res_off, n: int, total: int):
    """Dense extended matrices of the pairs (host int64 (P, 2), s < t), laid
    out at ``dense_off`` (host); see kernels/consistency.cu."""
    dense = cp.zeros(max(total, 1), dtype=cp.int32)
    length = np.asarray(length, np.int64)
    work = np.concatenate([[0], np.cumsum(length[pairs[:, 0]] * n)])
    get_function("consistency", "library_extend")(
        (grid_size(int(work[-1])),), (THREADS,),
        (cp.asarray(pairs.astype(np.int32).ravel()), cp.asarray(dense_off), cp.int32(len(pairs)), cp.asarray(work),
         pair_map, weights, cp.asarray(length), cp.asarray(np.asarray(res_off, np.int64)), cp.int32(n), dense))
    return dense[:total]


def consistency_scores(lv, codes, weights, members, lp, lp_n, stack, S, lam: int, one: int) -> None:
    """Add the library's share to the column scores S of the pairs ``lp``
    (host ints; their families' sizes ``lp_n``), in place."""
    col = cp.empty(max(int(codes.shape[0]), 1), dtype=cp.int32)
    get_function("consistency", "residue_columns")(
        (int(lv.k.shape[0]),), (128,), (codes, lv.code_off, lv.k, lv.L, lv.gap, col))
    lib = cp.zeros(max(lv.n_cells, 1), dtype=cp.uint64)
    k, L = lv.k.get().astype(np.int64), lv.L.get().astype(np.int64)
    lp = np.asarray(lp, dtype=np.int64)
    cells = np.concatenate([[0], np.cumsum(k[2 * lp] * k[2 * lp + 1])])
    d_lp = cp.asarray(lp.astype(np.int32))
    get_function("consistency", "consistency_add")(
        (grid_size(int(cells[-1])),), (THREADS,),
        (d_lp, cp.asarray(cells), cp.int32(len(lp)), lv.code_off, lv.k, lv.L, col, weights, members, lv.w_off,
         stack.pair_off, stack.x, stack.y, stack.w, stack.g_n, stack.g_base, stack.g_pair, lv.s_off, lib))
    most = int((L[2 * lp] * L[2 * lp + 1]).max(initial=1))
    get_function("consistency", "consistency_fold")(
        (min(max(most // THREADS, 1), 1024), len(lp)), (THREADS,),
        (d_lp, cp.asarray(np.asarray(lp_n, dtype=np.int32)), lv.W, lv.s_off, lib, cp.int64(lam),
         cp.int64(one * one), S))
