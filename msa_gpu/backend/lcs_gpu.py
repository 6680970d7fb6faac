"""GPU runtime of kernels/lcs.cu (twin: lcs_cpu): LCS lengths of every pair,
whole rows at a time, one launch per block of rows and width of row masks."""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.kernels import get_function

THREADS = 128


def words_class(w: int) -> int:
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
        cls = np.array([words_class(w) for w in words[r0:r1]])
        for c in np.unique(cls):
            rows = cp.asarray((r0 + np.flatnonzero(cls == c)).astype(np.int32))
            kernel = get_function("lcs", "lcs_rows", {"LCS_WORDS": str(int(c))})
            kernel((int(rows.size),), (THREADS,),
                   (d_masks, d_moff, d_codes, d_coff, d_lens, rows, np.int32(rows.size), np.int32(r0), np.int32(n), block))
        yield r0, r1, block


def prim_lcs_edges_many(masks, mask_off, codes, code_off, lens, powers, no_common, sizes):
    """Twin of lcs_cpu.prim_lcs_edges for every family of a batch at once
    (``sizes``: each family's sequences, in order, at least 2 each; the other
    arrays over the batch's sequences, ``mask_off`` and ``code_off`` global):
    per step one relax launch (a thread per sequence) and one pick launch (a
    block per family), no host sync until the edges come back. Returns each
    family's (ends, lengths) in its own numbering."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    words = int((int(lens.max()) + 63) >> 6)
    defines = {"LCS_WORDS": str(words_class(words))}
    relax, pick = get_function("lcs", "lcs_prim_relax", defines), get_function("lcs", "lcs_prim_pick", defines)
    base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    edge_base = np.concatenate([[0], np.cumsum(sizes - 1)[:-1]]).astype(np.int64)
    fam = cp.asarray(np.repeat(np.arange(len(sizes), dtype=np.int32), sizes))
    fam_n, d_base, d_edge = cp.asarray(sizes.astype(np.int32)), cp.asarray(base), cp.asarray(edge_base)
    args = (cp.asarray(masks), cp.asarray(mask_off), cp.asarray(codes), cp.asarray(code_off),
            cp.asarray(lens.astype(np.int32)), cp.asarray(powers), np.float64(no_common), fam, fam_n)
    cur = cp.asarray(base)
    inside = cp.zeros(n, cp.uint8)
    inside[cur] = 1
    best = cp.full(n, np.inf, cp.float64)
    src = cp.zeros(n, cp.int64)
    ends = cp.empty((n - len(sizes), 2), cp.int64)
    length = cp.empty(n - len(sizes), cp.float64)
    grid = ((n + THREADS - 1) // THREADS,)
    for step in range(int(sizes.max()) - 1):
        relax(grid, (THREADS,), (*args, cur, inside, best, src, np.int32(n), np.int32(step)))
        pick((len(sizes),), (1024,), (best, src, inside, cur, d_base, fam_n, d_edge, ends, length, np.int32(step)))
    ends, length = ends.get(), length.get()
    return [(ends[e:e + k - 1], length[e:e + k - 1]) for e, k in zip(edge_base, sizes)]


def spanning_edges_many(families, encode, powers, no_common) -> list:
    """Each family's `prim_lcs_edges_many` edges (``encode(family)``: its
    arrays; ``powers(max_indel)``: the distances' table): the families whose
    masks take the same number of words step together, one launch pair a
    step for all of them; each family's edges do not depend on its company."""
    out: list = [None] * len(families)
    groups: dict[int, list[int]] = {}
    for f, seqs in enumerate(families):
        groups.setdefault(words_class((int(seqs.lengths.max()) + 63) >> 6), []).append(f)
    for members in groups.values():
        parts = [encode(families[f]) for f in members]
        masks = np.concatenate([p[0] for p in parts])
        codes = np.concatenate([p[2] for p in parts])
        lens = np.concatenate([p[4] for p in parts])
        moff = np.concatenate([p[1] + o for p, o in zip(parts, np.cumsum([0] + [len(p[0]) for p in parts[:-1]]))])
        coff = np.concatenate([p[3] + o for p, o in zip(parts, np.cumsum([0] + [len(p[2]) for p in parts[:-1]]))])
        edges = prim_lcs_edges_many(masks, moff, codes, coff, lens, powers(2 * int(lens.max())), no_common,
                                    [len(families[f]) for f in members])
        for f, e in zip(members, edges):
            out[f] = e
    return out
