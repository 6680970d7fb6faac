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
