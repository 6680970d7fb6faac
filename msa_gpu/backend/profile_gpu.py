"""GPU runtime of kernels/profile.cu (twin: profile_cpu): the profile-profile
DP, profile statistics, column scores and merges of stage 3.

Each function takes device arrays (`LevelMeta` fields already on the device)
and launches one kernel for a whole tree level.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.backend.arrays import offsets
from msa_gpu.backend.transfer import upload
from msa_gpu.kernels import get_function

THREADS = 256
LONG_THREADS = 1024  # one block sweeps a long pair's bands
SMEM_BYTES = 48 * 1024  # shared memory a DP block may take without opting in
DIAG_INTS = 11  # wavefront state per DP row: H on two anti-diagonals, D, E and F on three (kernels/profile.cu)
CKPT_INTS = 7  # state saved per row at a long pair's band boundary (kernels/profile.cu: band_dp)
VEC = 24


def align_batch(batch):
    """Align every pair of a `PairBatch`; returns device (path, path_len, score)."""
    npairs = int(batch.dims.shape[0])
    path = cp.empty(max(batch.n_path, 1), dtype=cp.uint8)
    path_len = cp.empty(npairs, dtype=cp.int32)
    score = cp.empty(npairs, dtype=cp.int32)
    dirs = cp.empty(max(batch.n_dir, 1), dtype=cp.uint8)
    scratch = cp.empty(DIAG_INTS * max(int(batch.rowp.shape[0]), 1), dtype=cp.int32)
    # wavefront state in shared memory for pairs whose DIAG_INTS (m+1) ints fit
    smem_ints = min(DIAG_INTS * (batch.max_m + 1), SMEM_BYTES // 4)
    get_function("profile", "profile_dp")(
        (npairs,), (THREADS,),
        (batch.S, batch.s_off, batch.rowp, batch.row_off, batch.colp, batch.col_off,
         batch.dims, dirs, batch.dir_off, scratch, cp.int32(smem_ints), path, batch.path_off, path_len, score),
        shared_mem=4 * smem_ints,
    )
    return path, path_len, score


def band_rows(m: int, n: int) -> int:
    """Anti-diagonals per traceback band of a long pair (about 2 sqrt(m + n))."""
    return max(64, 2 * int((m + n) ** 0.5) + 1)


def align_long(batch, lv, vec, resid, long_idx, path, path_len):
    """Align the long pairs ``long_idx`` (host ints) band by band, writing into
    ``path``/``path_len`` beside the short pairs; returns their scores."""
    dims = batch.dims.get()
    scores = cp.empty(len(long_idx), dtype=cp.int32)
    band_scores = get_function("profile", "band_scores")
    band_dp = get_function("profile", "band_dp")
    for t, p in enumerate(long_idx):
        m, n = int(dims[p, 0]), int(dims[p, 1])
        R, W, last = band_rows(m, n), m + 1, m + n
        bands = [(d0, min(d0 + R - 1, last)) for d0 in range(0, last + 1, R)]
        state = cp.empty(DIAG_INTS * W, dtype=cp.int32)
        ckpt = cp.empty(max(len(bands) - 1, 1) * CKPT_INTS * W, dtype=cp.int32)
        Sb = cp.empty(R * W, dtype=cp.int32)
        bd = cp.empty(R * W, dtype=cp.uint8)
        tr = cp.asarray([m, n, 0, 0], dtype=cp.int32)
        grid = min(max(R * W // THREADS, 1), 4096)
        for trace, order in ((0, bands), (1, bands[::-1])):
            for d0, d1 in order:
                band_scores((grid,), (THREADS,), (vec, resid, lv.col_off, lv.W, batch.dims,
                                                  cp.int32(p), cp.int32(d0), cp.int32(d1), Sb))
                band_dp((1,), (LONG_THREADS,), (batch.rowp, batch.row_off, batch.colp, batch.col_off, batch.dims,
                                                cp.int32(p), cp.int32(R), cp.int32(d0), cp.int32(d1), Sb, state,
                                                ckpt, cp.int32(trace), bd, tr, path, batch.path_off, path_len,
                                                scores[t:t + 1]))
    return scores


def memory_budget() -> int:
    """Bytes of score matrices and direction arrays one batch may take: a
    quarter of the device's free memory, counting CuPy's pool as free."""
    free, _ = cp.cuda.runtime.memGetInfo()
    return (free + cp.get_default_memory_pool().free_bytes()) // 4


def free_cached() -> None:
    """Give CuPy's cached blocks back (before a retry after running out of memory)."""
    cp.get_default_memory_pool().free_all_blocks()


STAT_COLS, STAT_LANES = 32, 8  # kernels/profile.cu: columns and row lanes per profile_stats block
MERGE_CHUNK = 8192  # kernels/profile.cu: merged codes per merge_profiles block


def _tiles(per_item: np.ndarray) -> tuple[object, int]:
    """Exclusive prefix sums of each item's blocks (host counts; device
    int64, n + 1) and their total: the blocks of a tiled launch (see
    ``tile_owner``)."""
    off = offsets(per_item)
    return cp.asarray(off), int(off[-1])


def profile_stats(lv, codes, weights, mats):
    vec = cp.empty((max(lv.n_cols, 1), VEC), dtype=cp.int64)
    resid = cp.empty((max(lv.n_cols, 1), 2), dtype=cp.int32)
    rowp = cp.empty((max(lv.n_bnd, 1), 4), dtype=cp.int32)
    n_prof = int(lv.k.shape[0])
    n_rows = int(weights.shape[0])
    first = cp.empty(max(n_rows, 1), dtype=cp.int32)
    last = cp.empty(max(n_rows, 1), dtype=cp.int32)
    if n_rows:
        get_function("profile", "row_span")((grid_size(n_rows),), (THREADS,),
                                            (codes, lv.code_off, lv.L, lv.w_off, lv.gap, cp.int32(n_prof),
                                             cp.int64(n_rows), first, last))
    tile_off, blocks = _tiles((lv.host_L.astype(np.int64) + STAT_COLS) // STAT_COLS)  # boundary columns 0..L
    if blocks:
        get_function("profile", "profile_stats")(
            (blocks,), (STAT_COLS * STAT_LANES,),
            (codes, lv.code_off, lv.k, lv.L, weights, lv.w_off, lv.W, lv.gap, lv.gaps, lv.gap_model, lv.gap_pair,
             lv.mat, mats, lv.col_off, lv.bnd_off, tile_off, cp.int32(n_prof), first, last, vec, resid, rowp),
        )
    return vec, resid, rowp


def column_scores(lv, vec, resid):
    S = cp.empty(max(lv.n_cells, 1), dtype=cp.int32)
    npairs = int(lv.gap_pair.shape[0])
    blocks_x = min(max(lv.max_cells // THREADS, 1), 1024)
    get_function("profile", "column_scores")(
        (blocks_x, npairs), (THREADS,), (vec, resid, lv.col_off, lv.L, lv.W, lv.gap_model, S, lv.s_off),
    )
    return S


def merge_profiles(lv, codes, path, path_off, path_len, out_off, n_out):
    """The merged profiles' codes; ``out_off`` (host int64, pairs + 1): where
    each pair's merged rows go."""
    out = cp.empty(max(n_out, 1), dtype=cp.uint8)
    cols = cp.empty(2 * max(int(path.shape[0]), 1), dtype=cp.int32)
    n_pairs = int(path_len.shape[0])
    if not n_pairs:
        return out
    get_function("profile", "merge_columns")((grid_size(n_pairs),), (THREADS,),
                                             (path, path_off, path_len, cols, cp.int32(n_pairs)))
    out_off = np.asarray(out_off, dtype=np.int64)
    tiles = offsets((np.diff(out_off) + MERGE_CHUNK - 1) // MERGE_CHUNK)
    dev = upload(dict(out_off=out_off, tile_off=tiles), cp)
    out_off, tile_off, blocks = dev["out_off"], dev["tile_off"], int(tiles[-1])
    if blocks:
        get_function("profile", "merge_profiles")(
            (blocks,), (THREADS,),
            (codes, lv.code_off, lv.k, lv.L, lv.gap, path_off, path_len, cols, tile_off, cp.int32(n_pairs),
             out, out_off),
        )
    return out


def grid_size(total: int) -> int:
    return min(max((total + THREADS - 1) // THREADS, 1), 65535)


