"""numba twin of kernels/lcs.cu: bit-parallel LCS lengths of every pair
(i, j > i) of a family (see `msa_gpu.distances.lcs`)."""

from __future__ import annotations

import numba
import numpy as np

from msa_gpu.backend.threads import call

#: Nanoseconds of one 64-bit word step of `_lcs_one` (one residue of b against one
#: word of a's masks), for sizing the parallel loops (`msa_gpu.backend.threads`).
NS_PER_WORD = 1.5


@numba.njit(cache=True, nogil=True, inline="always")
def _lcs_one(masks, m0, w_i, len_i, b):
    V = np.full(w_i, np.uint64(0xFFFFFFFFFFFFFFFF))
    for k in range(b.shape[0]):
        base = m0 + np.int64(b[k]) * w_i
        carry = np.uint64(0)
        for w in range(w_i):
            v = V[w]
            u = v & masks[base + w]
            s = v + u
            s2 = s + carry
            carry = np.uint64(1) if (s < v) or (s2 < s) else np.uint64(0)
            V[w] = s2 | (v & ~u)
    zeros = 0
    rem = len_i & 63
    for w in range(w_i):
        x = V[w]
        if w == w_i - 1 and rem:
            x |= ~((np.uint64(1) << np.uint64(rem)) - np.uint64(1))
        while x != np.uint64(0xFFFFFFFFFFFFFFFF):  # count zero bits
            x |= x + np.uint64(1)
            zeros += 1
    return zeros


def lcs_rows(masks, mask_off, codes, code_off, lens, r0, r1, n, out):
    """LCS of rows r0..r1-1 against every later sequence, into
    ``out[i - r0, j]`` (the other entries are left as they are)."""
    lens64 = np.asarray(lens[:n], np.int64)
    later = np.cumsum(lens64[::-1])[::-1] - lens64  # residues after each row
    work = float(((lens64[r0:r1] + 63) >> 6) @ later[r0:r1]) * NS_PER_WORD
    call(_lcs_rows, masks, mask_off, codes, code_off, lens, r0, r1, n, out, work=work, items=r1 - r0)


@numba.njit(cache=True, parallel=True)
def _lcs_rows(masks, mask_off, codes, code_off, lens, r0, r1, n, out):
    for i in numba.prange(r0, r1):
        w_i = (lens[i] + 63) >> 6
        for j in range(i + 1, n):
            out[i - r0, j] = _lcs_one(masks, mask_off[i], w_i, lens[i], codes[code_off[j]:code_off[j] + lens[j]])


@numba.njit(cache=True, parallel=True)
def _relax(masks, mask_off, codes, code_off, lens, powers, no_common, j, inside, best, src):
    """Twin of kernels/lcs.cu's lcs_prim_relax: d(j, k) for every k outside
    the tree, kept where lower than ``best[k]``."""
    lj = lens[j]
    b = codes[code_off[j]:code_off[j] + lj]
    for k in numba.prange(lens.shape[0]):
        if inside[k]:
            continue
        lk = lens[k]
        ell = _lcs_one(masks, mask_off[k], (lk + 63) >> 6, lk, b)
        d = powers[lj + lk - 2 * ell] / np.float64(ell) if ell > 0 else no_common
        if d < best[k]:
            best[k] = d
            src[k] = j


@numba.njit(cache=True, nogil=True)
def _pick(best, inside):
    """Twin of lcs_prim_pick: the nearest sequence outside, ties to the lowest index."""
    arg, low = -1, 0.0
    for k in range(best.shape[0]):
        if not inside[k] and (arg < 0 or best[k] < low):
            arg, low = k, best[k]
    return arg


def prim_lcs_edges(masks, mask_off, codes, code_off, lens, powers, no_common):
    """Prim's minimum spanning tree of the LCS distances from sequence 0,
    each distance computed when its row's sequence joins (no matrix held):
    the edges' ends and lengths in the order they join."""
    n = lens.shape[0]
    inside = np.zeros(n, np.bool_)
    best = np.full(n, np.inf)
    src = np.zeros(n, np.int64)
    ends = np.empty((n - 1, 2), np.int64)
    length = np.empty(n - 1)
    j = 0
    inside[0] = True
    words = (np.asarray(lens, np.int64) + 63) >> 6
    words_out = int(words.sum() - words[0])  # mask words of the sequences outside the tree
    for step in range(n - 1):
        call(_relax, masks, mask_off, codes, code_off, lens, powers, no_common, j, inside, best, src,
             work=int(lens[j]) * words_out * NS_PER_WORD, items=n - 1 - step)
        j = _pick(best, inside)
        words_out -= int(words[j])
        ends[step] = src[j], j
        length[step] = best[j]
        inside[j] = True
    return ends, length


#: Rows of LCS lengths a block of `lcs_row_blocks` holds (the stage turns
#: each block into distances on the host).
ROW_BLOCK = 512


def lcs_row_blocks(masks, mask_off, codes, code_off, lens, rows: int = ROW_BLOCK):
    """Yield ``(r0, r1, block)``: int32 ``block[i - r0, j]`` is the LCS of
    sequences i and j (``lens[i]`` where j = i), blocks of ``rows`` rows of
    the whole symmetric matrix (`lcs_rows` over i < j)."""
    n = len(lens)
    full = np.zeros((n, n), np.int32)
    lcs_rows(masks, mask_off, codes, code_off, lens, 0, n, n, full)
    full += full.T
    full[np.arange(n), np.arange(n)] = lens
    for r0 in range(0, n, rows):
        yield r0, min(r0 + rows, n), full[r0:r0 + rows]


def spanning_edges_many(families, encode, powers, no_common) -> list:
    """`prim_lcs_edges` of each family in turn (``encode(family)``: its
    arrays; ``powers(max_indel)``: the distances' table)."""
    out = []
    for seqs in families:
        masks, moff, codes, coff, lens = encode(seqs)
        out.append(prim_lcs_edges(masks, moff, codes, coff, lens, powers(2 * int(lens.max())), no_common))
    return out
