"""GPU backend: CuPy arrays and the CUDA kernels of msa_gpu/kernels.

Each function takes device arrays (`LevelMeta` fields already on the device)
and launches one kernel for a whole tree level.
"""

from __future__ import annotations

import cupy as cp

from ..kernels import get_function

THREADS = 256
VEC = 24


def align_batch(batch):
    """Align every pair of a `PairBatch`; returns device (path, path_len, score)."""
    npairs = int(batch.dims.shape[0])
    path = cp.empty(max(int(batch.path_off[-1]), 1), dtype=cp.uint8)
    path_len = cp.empty(npairs, dtype=cp.int32)
    score = cp.empty(npairs, dtype=cp.int32)
    dirs = cp.empty(max(int(batch.dir_off[-1]), 1), dtype=cp.uint8)
    scratch = cp.empty(7 * max(int(batch.rowp.shape[0]), 1), dtype=cp.int32)
    get_function("profile_dp", "profile_dp")(
        (npairs,), (THREADS,),
        (batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, dirs, batch.dir_off, scratch, path, batch.path_off, path_len, score),
    )
    return path, path_len, score


def profile_stats(lv, codes, weights, mats):
    vec = cp.empty((max(lv.n_cols, 1), VEC), dtype=cp.int64)
    resid = cp.empty(max(lv.n_cols, 1), dtype=cp.int32)
    rowp = cp.empty((max(lv.n_bnd, 1), 4), dtype=cp.int32)
    get_function("profile_ops", "profile_stats")(
        (int(lv.k.shape[0]),), (128,),
        (codes, lv.code_off, lv.k, lv.L, weights, lv.w_off, lv.W, lv.gap, lv.gaps, lv.mat, mats,
         lv.col_off, lv.bnd_off, vec, resid, rowp),
    )
    return vec, resid, rowp


def column_scores(lv, vec, resid):
    S = cp.empty(max(lv.n_cells, 1), dtype=cp.int32)
    npairs = int(lv.gap_pair.shape[0])
    blocks_x = min(max(lv.max_cells // THREADS, 1), 1024)
    get_function("profile_ops", "column_scores")(
        (blocks_x, npairs), (THREADS,), (vec, resid, lv.col_off, lv.L, lv.W, lv.gap_pair, S, lv.s_off),
    )
    return S


def merge_profiles(lv, codes, path, path_off, path_len, out_off, n_out):
    out = cp.empty(max(n_out, 1), dtype=cp.uint8)
    cols = cp.empty(2 * max(int(path.shape[0]), 1), dtype=cp.int32)
    get_function("profile_ops", "merge_profiles")(
        (int(path_len.shape[0]),), (THREADS,),
        (codes, lv.code_off, lv.k, lv.L, lv.gap, path, path_off, path_len, cols, out, out_off),
    )
    return out
