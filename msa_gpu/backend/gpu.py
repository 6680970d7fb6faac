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
    get_function("profile", "profile_dp")(
        (npairs,), (THREADS,),
        (batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, dirs, batch.dir_off, scratch, path, batch.path_off, path_len, score),
    )
    return path, path_len, score


def band_rows(m: int, n: int) -> int:
    """Anti-diagonals per traceback band of a long pair (about 2 sqrt(m + n))."""
    return max(64, 2 * int((m + n) ** 0.5) + 1)


def align_long(batch, lv, vec, resid, long_idx, path, path_len):
    """Align the long pairs ``long_idx`` (host ints) with checkpointed bands,
    writing into ``path``/``path_len`` beside the short pairs; returns their scores."""
    dims = batch.dims.get()
    mn = [(int(dims[p, 0]), int(dims[p, 1])) for p in long_idx]
    R = max(band_rows(m, n) for m, n in mn)
    W = [m + 1 for m, _ in mn]
    ck = [((m + n) // R) * 4 * (m + 1) for m, n in mn]
    off = lambda sizes: cp.asarray([0] + list(__import__("itertools").accumulate(sizes))[:-1], dtype=cp.int64)  # noqa: E731
    ckpt = cp.empty(max(sum(ck), 1), dtype=cp.int32)
    band = cp.empty(max(R * sum(W), 1), dtype=cp.uint8)
    scratch = cp.empty(7 * sum(W), dtype=cp.int32)
    score = cp.empty(len(long_idx), dtype=cp.int32)
    get_function("profile", "long_dp")(
        (len(long_idx),), (THREADS,),
        (vec, resid, lv.col_off, lv.W, lv.gap_pair, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, cp.asarray(long_idx, dtype=cp.int32), cp.int32(R), ckpt, off(ck), band,
         off([R * w for w in W]), scratch, off([7 * w for w in W]), path, batch.path_off, path_len, score),
    )
    return score


def profile_stats(lv, codes, weights, mats):
    vec = cp.empty((max(lv.n_cols, 1), VEC), dtype=cp.int64)
    resid = cp.empty(max(lv.n_cols, 1), dtype=cp.int32)
    rowp = cp.empty((max(lv.n_bnd, 1), 4), dtype=cp.int32)
    get_function("profile", "profile_stats")(
        (int(lv.k.shape[0]),), (128,),
        (codes, lv.code_off, lv.k, lv.L, weights, lv.w_off, lv.W, lv.gap, lv.gaps, lv.mat, mats,
         lv.col_off, lv.bnd_off, vec, resid, rowp),
    )
    return vec, resid, rowp


def column_scores(lv, vec, resid):
    S = cp.empty(max(lv.n_cells, 1), dtype=cp.int32)
    npairs = int(lv.gap_pair.shape[0])
    blocks_x = min(max(lv.max_cells // THREADS, 1), 1024)
    get_function("profile", "column_scores")(
        (blocks_x, npairs), (THREADS,), (vec, resid, lv.col_off, lv.L, lv.W, lv.gap_pair, S, lv.s_off),
    )
    return S


def merge_profiles(lv, codes, path, path_off, path_len, out_off, n_out):
    out = cp.empty(max(n_out, 1), dtype=cp.uint8)
    cols = cp.empty(2 * max(int(path.shape[0]), 1), dtype=cp.int32)
    get_function("profile", "merge_profiles")(
        (int(path_len.shape[0]),), (THREADS,),
        (codes, lv.code_off, lv.k, lv.L, lv.gap, path, path_off, path_len, cols, out, out_off),
    )
    return out
