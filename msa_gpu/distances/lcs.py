"""Stage 1: FAMSA 2's guide-tree distances from longest common subsequences.

For sequences of lengths ``a`` and ``b`` with an LCS of ``l``, the distance is
``(a + b - 2 l) ** 0.75 / l`` (FAMSA 2's default ``indel075_div_lcs``; no
common residue gives the largest finite distance), the measure its single-
linkage guide tree is built on. The LCS lengths are exact integers from a
bit-parallel LCS on either backend (`msa_gpu.backend.interfaces.LcsKernels`),
and the distances come from them where they are, by a host-made table of
``k ** 0.75`` and one IEEE division, so both backends give the same matrix.
"""

from __future__ import annotations

import numpy as np

from msa_gpu.backend import backend_of, to_host
from msa_gpu.types import DistanceMatrix, Sequences

#: Distance of a pair with no residue in common (FAMSA: the largest float).
NO_COMMON = 1e30


def lcs_masks(seqs: Sequences) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's residue masks: ``masks[off[i] + c * W_i + w]`` has bit
    ``p % 64`` set in word ``w = p // 64`` where sequence i has code c at p
    (``W_i = ceil(len_i / 64)``); returns (masks uint64, off int64)."""
    lens = seqs.lengths
    words = (lens + 63) >> 6
    n_sym = seqs.alphabet.size + 1
    off = np.concatenate([[0], np.cumsum(words * n_sym)]).astype(np.int64)
    codes = np.concatenate(seqs.codes).astype(np.int64)
    owner = np.repeat(np.arange(len(lens)), lens)
    pos = np.arange(len(codes)) - np.repeat(np.cumsum(lens) - lens, lens)
    where = off[owner] + codes * words[owner] + (pos >> 6)
    masks = np.zeros(int(off[-1]), np.uint64)
    np.bitwise_or.at(masks, where, np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
    return masks, off[:-1].copy()


def _encoded(seqs: Sequences):
    masks, moff = lcs_masks(seqs)
    lens = seqs.lengths.astype(np.int32)
    coff = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    return masks, moff, np.concatenate(seqs.codes).astype(np.uint8), coff, lens


def lcs_row_blocks(seqs: Sequences, xp=np):
    """Yield ``(r0, r1, block)``: ``block[i - r0, j]`` (int32, on ``xp``'s
    device) is the LCS of sequences i and j, the diagonal their lengths
    (`LcsKernels.lcs_row_blocks`)."""
    yield from backend_of(xp).lcs.lcs_row_blocks(*_encoded(seqs))


def lcs_lengths(seqs: Sequences, xp=np) -> np.ndarray:
    """(n, n) int32 host matrix of LCS lengths, symmetric, the diagonal the lengths."""
    n = len(seqs)
    out = np.empty((n, n), np.int32)
    for r0, r1, block in lcs_row_blocks(seqs, xp):
        out[r0:r1] = to_host(block)
    return out


def indel_powers(max_indel: int) -> np.ndarray:
    """``k ** 0.75`` for k = 0..max_indel (float64, computed on the host: both
    backends divide by the same table, so the distances have the same bits)."""
    return np.power(np.arange(max_indel + 1, dtype=np.float64), 0.75)


def distances_from_lcs(lcs, len_rows, lens, powers, xp=np):
    """``indel ** 0.75 / lcs`` of a block of rows from their LCS lengths (int32;
    ``len_rows`` the rows' lengths, ``lens`` every length, int64): table
    look-ups and one IEEE division, the same bits on either array module."""
    indel = len_rows[:, None] + lens[None, :] - 2 * lcs.astype(xp.int64)
    return xp.where(lcs > 0, powers[indel] / xp.maximum(lcs, 1).astype(xp.float64), NO_COMMON)


def lcs_distance(seqs: Sequences, xp=np) -> DistanceMatrix:
    """FAMSA 2's ``indel ** 0.75 / lcs`` distances (see the module), computed
    block of rows by block where the LCS lengths are (on the GPU, whole rows,
    so only the float64 result comes back to the host)."""
    n = len(seqs)
    lens = seqs.lengths.astype(np.int64)
    powers = indel_powers(2 * int(lens.max()))
    lens_x, powers_x = xp.asarray(lens), xp.asarray(powers)
    d = np.empty((n, n), np.float64)
    for r0, r1, block in lcs_row_blocks(seqs, xp):
        rows = distances_from_lcs(block, lens_x[r0:r1], lens_x, powers_x, xp)
        d[r0:r1] = to_host(rows)
    return DistanceMatrix(d, "lcs")


def lcs_spanning_edges(seqs: Sequences, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """Prim's minimum spanning tree of the `lcs_distance` distances from
    sequence 0 (ties to the lowest index), with no matrix: each sequence's
    distances to those still outside are computed when it joins, on ``xp``'s
    device. The same edges, in the same order, as Prim over the matrix
    (tree/linkage_numba._prim_edges), on either backend: the same integers, table
    and division. Returns the edges' ends (n - 1, 2) and lengths, host arrays."""
    return lcs_spanning_edges_many([seqs], xp)[0]


def lcs_spanning_edges_many(families: list[Sequences], xp=np) -> list[tuple[np.ndarray, np.ndarray]]:
    """`lcs_spanning_edges` of several families (of at least 2 sequences
    each), by `LcsKernels.spanning_edges_many`: on the GPU the families whose
    masks take the same number of words step together, one launch pair a
    step for all of them; each family's edges do not depend on its company."""
    return backend_of(xp).lcs.spanning_edges_many(families, _encoded, indel_powers, NO_COMMON)
