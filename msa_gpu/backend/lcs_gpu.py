"""GPU runtime of kernels/lcs.cu (twin: lcs_cpu): LCS lengths of every pair,
whole rows at a time, one launch per block of rows and width of row masks."""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.kernels import get_function

THREADS = 128


def _words_class(w: int) -> int:
    """The compiled mask width serving rows of ``w`` words (a power of two:
    the state stays in registers, and few variants compile)."""
    return 1 << max(int(w) - 1, 0).bit_length()


def lcs_row_blocks(masks, mask_off, codes, code_off, lens, block_bytes: int = 1 << 27):
    """Yield ``(r0, r1, block)``: device int32 ``block[i - r0, j]`` is the LCS
    of sequences i and j (``lens[i]`` where j = i), for rows r0..r1-1 of about
    ``block_bytes``; the rows of each mask width in one launch."""
    n = len(lens)
    d_masks, d_moff = cp.asarray(masks), cp.asarray(mask_off)
    d_codes, d_coff, d_lens = cp.asarray(codes), cp.asarray(code_off), cp.asarray(lens.astype(np.int32))
    words = (lens.astype(np.int64) + 63) >> 6
    step = max(1, block_bytes // (4 * max(n, 1)))
    for r0 in range(0, n, step):
        r1 = min(r0 + step, n)
        block = cp.empty((r1 - r0, n), cp.int32)
        cls = np.array([_words_class(w) for w in words[r0:r1]])
        for c in np.unique(cls):
            rows = cp.asarray((r0 + np.flatnonzero(cls == c)).astype(np.int32))
            kernel = get_function("lcs", "lcs_rows", {"LCS_WORDS": str(int(c))})
            kernel((int(rows.size),), (THREADS,),
                   (d_masks, d_moff, d_codes, d_coff, d_lens, rows, np.int32(rows.size), np.int32(r0), np.int32(n), block))
        yield r0, r1, block


def prim_lcs_edges(masks, mask_off, codes, code_off, lens, powers, no_common):
    """Twin of lcs_cpu.prim_lcs_edges on the device: per step one relax launch
    (a thread per sequence) and one pick launch (one block), no host sync
    until the edges come back."""
    n = len(lens)
    words = int((int(lens.max()) + 63) >> 6)
    relax = get_function("lcs", "lcs_prim_relax", {"LCS_WORDS": str(_words_class(words))})
    pick = get_function("lcs", "lcs_prim_pick", {"LCS_WORDS": str(_words_class(words))})
    args = (cp.asarray(masks), cp.asarray(mask_off), cp.asarray(codes), cp.asarray(code_off),
            cp.asarray(lens.astype(np.int32)), cp.asarray(powers), np.float64(no_common))
    cur = cp.zeros(1, cp.int64)
    inside = cp.zeros(n, cp.uint8)
    inside[0] = 1
    best = cp.full(n, np.inf, cp.float64)
    src = cp.zeros(n, cp.int64)
    ends = cp.empty((n - 1, 2), cp.int64)
    length = cp.empty(n - 1, cp.float64)
    grid = ((n + THREADS - 1) // THREADS,)
    for step in range(n - 1):
        relax(grid, (THREADS,), (*args, cur, inside, best, src, np.int32(n)))
        pick((1,), (1024,), (best, src, inside, cur, ends, length, np.int32(step), np.int32(n)))
    return ends.get(), length.get()
