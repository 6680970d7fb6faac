"""Stage 1: k-mer distances, the default guide-tree distances.

k-mer distances count the distinct k-mers two sequences share, on a reduced
alphabet for protein (Dayhoff's six groups). The sharing counts come from one
product of 0/1 k-mer presence matrices, run with ``xp`` (NumPy or CuPy);
the counts are exact integers, so both backends give the same distances.

For long sequences (``divergence``) k grows with the length
(`kmer_length`): a 30 kb genome holds nearly all 4,096 nucleotide 6-mers,
so 6-mer presence told no two genomes apart. Their shared fraction ``c``
becomes an estimate of substitutions per site, ``-ln(c) / k`` (Mash's
distance, Ondov et al. 2016, Genome Biol 17:132, with the shared fraction
of the smaller set rather than the Jaccard index).
"""

from __future__ import annotations

import math

import numpy as np

from msa_gpu.alphabet import kmer_groups
from msa_gpu.backend import to_host
from msa_gpu.distances.kmer_index import kmer_sets
from msa_gpu.types import DistanceMatrix, Sequences


def kmer_ids(codes: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """Integer ids of the overlapping k-mers of one encoded sequence.

    >>> kmer_ids(np.array([0, 1, 2]), np.array([0, 1, 2]), 2).tolist()
    [1, 5]
    """
    g = groups[codes]
    base = int(groups.max()) + 1
    if g.size < k:
        return np.zeros(0, dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(g, k)
    return windows @ (base ** np.arange(k - 1, -1, -1, dtype=np.int64))


#: Chance that a given k-mer occurs in an unrelated sequence of the family's
#: mean length, at most, when k is chosen (`kmer_length`).
KMER_CHANCE = 0.05
#: The shortest k: 6, as MAFFT and MUSCLE count on Dayhoff's groups and on
#: nucleotides.
KMER_MIN = 6


def kmer_length(n_groups: int, mean_length: float, chance: float = KMER_CHANCE) -> int:
    """The k of a family: the smallest k >= `KMER_MIN` for which a given
    k-mer turns up by chance in a random sequence of ``mean_length`` letters
    over ``n_groups`` with probability at most ``chance`` (Mash's rule,
    k = ceil(log_groups(L (1 - q) / q)); Ondov et al. 2016). Protein on
    Dayhoff's six groups keeps 6 up to 2,455 residues; nucleotides take 8 at
    1,000 bases and 10 at 30,000.

    >>> kmer_length(6, 500), kmer_length(6, 2455), kmer_length(4, 1000), kmer_length(4, 30000)
    (6, 6, 8, 10)
    """
    if mean_length <= 0:
        return KMER_MIN
    return max(KMER_MIN, math.ceil(math.log(mean_length * (1.0 - chance) / chance, n_groups) - 1e-9))


#: Dense presence matrices up to this many bytes (float32); larger ones are
#: multiplied sparse (10-mers of 200 genomes: 4 million distinct k-mers).
DENSE_BYTES = 1 << 28

#: Below this many sequences the counts run with NumPy even on the GPU backend:
#: they take milliseconds, while a cold CuPy process spent 0.49 s in its first
#: ``cupy.unique`` (H100 host, 2026-11-22). The counts are integers, so the
#: distances are the same either way.
GPU_MIN_SEQS = 256


def _array_module(n: int, xp):
    return xp if n >= GPU_MIN_SEQS else np


def _shared_kmers(ids: list[np.ndarray], width: int | None = None) -> np.ndarray:
    """Matrix of distinct k-mers shared by each pair (int64, on the host): the
    product of the 0/1 presence matrix with its transpose, dense for small
    inputs, else sparse (SciPy); exact, the counts stay far below 2**24. (On
    the GPU, `_kmer_distances_on`.) ``width``: the number of possible k-mer
    ids (groups ** k), which lets the sparse matrix take the ids as its
    columns without renumbering them (1,000 genomes: 30 million entries)."""
    n = len(ids)
    # distinct (sequence, k-mer) pairs, each sequence's own first (sorted: a 30 kb genome has 30,000
    # windows but at most 4,096 distinct nucleotide 6-mers)
    ids = [np.unique(x) for x in ids]
    counts = np.array([len(x) for x in ids], dtype=np.int64)
    flat = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    if n < GPU_MIN_SEQS or width is None or width > np.iinfo(np.int32).max:  # k-mers renumbered 0..U-1
        kmers, col = np.unique(flat, return_inverse=True)
        flat, width = col.ravel(), max(len(kmers), 1)
        del kmers
        if n < GPU_MIN_SEQS and n * width * 4 <= DENSE_BYTES:  # small: a dense product is quicker
            present = np.zeros((n, width), dtype=np.float32)
            present[np.repeat(np.arange(n), counts), flat] = 1.0
            return np.rint(present @ present.T).astype(np.int64)
    from scipy import sparse

    # one entry per (sequence, k-mer), columns sorted within each row: built as CSR directly
    indptr = np.concatenate([[0], np.cumsum(counts)])
    present = sparse.csr_matrix((np.ones(len(flat), np.int32), flat.astype(np.int32), indptr), shape=(n, width))
    del flat, ids
    return (present @ present.T).toarray().astype(np.int64)


def _kmer_distances(shared, xp=np):
    """1 - shared / min(distinct_i, distinct_j), symmetric, zero diagonal
    (float64 on ``xp``'s device: the same operations give the same bits)."""
    own = xp.diag(shared).astype(xp.float64)
    denom = xp.maximum(xp.minimum(own[:, None], own[None, :]), 1.0)
    d = 1.0 - shared / denom
    d = xp.clip(d, 0.0, 1.0)
    xp.fill_diagonal(d, 0.0)
    return xp.minimum(d, d.T)


def kmer_distance(seqs: Sequences, xp=np, k: int | None = None, divergence: bool = False) -> DistanceMatrix:
    """k-mer distances: 1 - the shared fraction of distinct k-mers, on
    Dayhoff's groups for protein, k = 6 unless given. With ``divergence``
    (long sequences), ``-ln(shared fraction) / k`` instead, substitutions
    per site, and k from the mean length (`kmer_length`) unless given;
    computed on the host from the same fractions, so both backends give the
    same bits.

    Sequences shorter than ``k`` share no k-mer with any other (distance 1);
    only when every sequence is shorter does k shrink, to the longest length.
    """
    groups = kmer_groups(seqs.alphabet)
    if k is None:
        k = kmer_length(int(groups.max()) + 1, seqs.mean_length) if divergence else KMER_MIN
    k = max(1, min(k, int(seqs.lengths.max())))
    if _array_module(len(seqs), xp) is not np:
        d = _kmer_distances_on(seqs, k, xp)
    else:
        ids = [kmer_ids(c.astype(np.int64), groups, k) for c in seqs.codes]
        d = _kmer_distances(_shared_kmers(ids, (int(groups.max()) + 1) ** k))
    if divergence:
        return DistanceMatrix(divergence_from(d, k), f"kmer{k}-divergence")
    return DistanceMatrix(d, f"kmer{k}")


def kmer_unshared(seqs: Sequences, k: int = KMER_MIN) -> float:
    """The fraction of a family's pairs of sequences that share no k-mer
    (Dayhoff's groups for protein, as `kmer_distance`): their k-mer distance
    is 1 and tells the guide tree nothing. Short fragments make it high
    (extHomFam's bowman, mean length 25: 0.65 of its pairs); full-length
    domains low (balifam's PF00155, 327: 0.002). On the host.

    >>> from msa_gpu.io import make_sequences
    >>> kmer_unshared(make_sequences(["a", "b", "c"], [b"MKVLAAGIW", b"MKVLAAGIY", b"PPPPPPPP"], "protein"))
    0.6666666666666666
    """
    n = len(seqs)
    if n < 2:
        return 0.0
    groups = kmer_groups(seqs.alphabet)
    k = max(1, min(k, int(seqs.lengths.max())))
    shared = _shared_kmers([kmer_ids(c.astype(np.int64), groups, k) for c in seqs.codes], (int(groups.max()) + 1) ** k)
    return float((shared[np.triu_indices(n, 1)] == 0).mean())


def divergence_from(d: np.ndarray, k: int) -> np.ndarray:
    """Substitutions per site from k-mer distances ``d`` (1 - shared
    fraction c): ``-ln(c) / k``, as if each of a k-mer's letters survived
    independently; no shared k-mer counts as c = 1e-6.

    >>> [round(float(x), 4) for x in divergence_from(np.array([0.0, 0.5, 1.0]), 10)]
    [0.0, 0.0693, 1.3816]
    """
    c = np.maximum(1.0 - np.asarray(d, dtype=np.float64), 1e-6)
    return -np.log(c) / k + 0.0


def _kmer_distances_on(seqs: Sequences, k: int, xp) -> np.ndarray:
    """`kmer_distance` with the counting on ``xp``'s device (the GPU path: a
    10,000-sequence family spent 4 s on host k-mer ids, sorts and float64
    arithmetic). The distinct k-mers come from `msa_gpu.distances.kmer_sets`
    (the large path's, one pass over the concatenated codes); the sharing
    counts are exact (float32 sums below 2**24: dense products over column
    blocks of <= 1 GiB; cuSPARSE ran out of resources at 10,000 sequences)
    and the distances `_kmer_distances` on the device, so the result is
    bit-identical to the host path."""
    km = kmer_sets(seqs, k, xp)
    n = len(km)
    rows = xp.asarray(np.repeat(np.arange(n, dtype=np.int64), km.distinct))
    cols = xp.asarray(km.ids.astype(np.int64))
    shared = xp.zeros((n, n), dtype=xp.float32)
    block = max(1, (1 << 28) // n)
    for lo in range(0, km.width, block):
        sel = (cols >= lo) & (cols < lo + block)
        present = xp.zeros((n, min(block, km.width - lo)), dtype=xp.float32)
        present[rows[sel], cols[sel] - lo] = 1.0
        shared += present @ present.T
        del present
    return to_host(_kmer_distances(xp.rint(shared).astype(xp.float64), xp))


