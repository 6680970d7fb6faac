"""GPU backend: CuPy arrays and the CUDA kernels of msa_gpu/kernels."""

from __future__ import annotations

import cupy as cp

from ..kernels import get_function

THREADS = 256


def align_batch(batch):
    """Align every pair of a `PairBatch` on the current device; returns
    device arrays (path, path_len, score)."""
    npairs = int(batch.dims.shape[0])
    total_rows = int(batch.row_off[-1])
    dirs_total = int(batch.dir_off[-1])
    path = cp.empty(int(batch.path_off[-1]), dtype=cp.uint8)
    path_len = cp.empty(npairs, dtype=cp.int32)
    score = cp.empty(npairs, dtype=cp.int32)
    dirs = cp.empty(max(dirs_total, 1), dtype=cp.uint8)
    scratch = cp.empty(7 * max(total_rows, 1), dtype=cp.int32)
    kernel = get_function("profile_dp", "profile_dp")
    kernel(
        (npairs,), (THREADS,),
        (batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, dirs, batch.dir_off, scratch, path, batch.path_off, path_len, score),
    )
    return path, path_len, score
