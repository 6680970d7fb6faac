"""GPU runtime of kernels/refine.cu (twin: refine_cpu)."""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.backend.profile_gpu import THREADS, grid_size
from msa_gpu.kernels import get_function


def path_score(batch, moves, move_off, move_len):
    """Score of each pair's given path (forward moves at ``move_off``, host)
    under the DP's recurrences; see kernels/refine.cu. Returns host int64."""
    npairs = int(batch.dims.shape[0])
    out = cp.empty(max(npairs, 1), dtype=cp.int64)
    get_function("refine", "path_score")(
        ((npairs + 127) // 128,), (128,),
        (batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off, batch.dims, moves,
         cp.asarray(np.asarray(move_off, np.int64)), cp.asarray(np.asarray(move_len, np.int32)), cp.int32(npairs),
         out))
    return out[:npairs].get()


def gather_profiles(flat, rows, row_off, cols, col_off, L, base, width, code_off):
    """Codes of profiles cut from alignments (see kernels/refine.cu); the
    per-profile arrays are host int64, ``cols`` on the device."""
    total = int(code_off[-1])
    out = cp.empty(max(total, 1), dtype=cp.uint8)
    d = [cp.asarray(np.asarray(a, np.int64)) for a in (rows, row_off, L, base, width, code_off)]
    get_function("refine", "gather_profiles")(
        (grid_size(total),), (THREADS,),
        (flat, d[0], d[1], cols.astype(cp.int64), cp.asarray(np.asarray(col_off, np.int64)), d[2], d[3], d[4], d[5],
         cp.int32(len(L)), out))
    return out[:total]
