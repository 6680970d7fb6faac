"""Stage 1 of the large-family path: k-mer sets, and distances to pivots.

No N x N matrix: `kmer_sets` keeps each sequence's distinct k-mer ids
(protein 6-mers on Dayhoff's six groups, nucleotide 6-mers), and
`pivot_distances` gives the k-mer distance of many sequences to a few
pivot sequences, as one sparse presence matrix per chunk of sequences times
the pivots' dense presence matrix, with ``xp`` (NumPy/SciPy or
CuPy/cuSPARSE). The shared counts are exact integers, so both backends give
the same distances.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences(list("abcd"), [b"MKVLAWTRES", b"MKVLAWTRES", b"MKVLAWQQQQ", b"PPPPGGGGHH"], "protein")
>>> km = kmer_sets(seqs)
>>> d = pivot_distances(km, np.arange(4), np.array([0, 3]))
>>> d.round(2).tolist()
[[0.0, 1.0], [0.0, 1.0], [0.8, 1.0], [1.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from msa_gpu.alphabet import kmer_groups
from msa_gpu.backend import offsets
from msa_gpu.backend import backend_of, to_host
from msa_gpu.types import KmerSets, Sequences

#: Sequences per chunk of the presence product.
CHUNK = 1 << 14
#: Below this many sequences the product runs with NumPy/SciPy on any backend
#: (a launch costs more than the work; the counts are the same).
GPU_MIN_SEQS = 4096


#: Residues per chunk of `kmer_sets` (its device arrays: about 40 bytes a residue).
KMER_CHUNK = 1 << 25
#: Below this many residues `kmer_sets` sorts with NumPy on any backend.
GPU_MIN_RESIDUES = GPU_MIN_SEQS * 100


def kmer_sets(seqs: Sequences, k: int = 6, xp=np) -> KmerSets:
    """Every sequence's distinct k-mer ids at once (see `KmerSets`): the
    window ids of a chunk of sequences, keyed by sequence, sorted with ``xp``
    (a radix sort on the GPU), repeats dropped."""
    groups = kmer_groups(seqs.alphabet)
    base = int(groups.max()) + 1
    k = max(1, min(k, int(seqs.lengths.max())))
    width = base ** k
    lengths = seqs.lengths
    res_off = offsets(lengths)
    if int(res_off[-1]) < GPU_MIN_RESIDUES:
        xp = np
    ids_out, counts = [], np.zeros(len(lengths), dtype=np.int64)
    g_dev = xp.asarray(groups.astype(np.int64))
    start = 0
    while start < len(lengths):
        stop = int(np.searchsorted(res_off, res_off[start] + KMER_CHUNK, side="right")) - 1
        stop = max(stop, start + 1)
        codes = np.concatenate(seqs.codes[start:stop])
        total = len(codes)
        if total < k:  # a chunk of sequences all shorter than k: no k-mers
            ids_out.append(np.zeros(0, dtype=np.int32))
            start = stop
            continue
        g = g_dev[xp.asarray(codes)]
        ids = xp.zeros(total - k + 1, dtype=xp.int64)
        for j in range(k):
            ids += g[j: total - k + 1 + j] * base ** (k - 1 - j)
        owner = xp.asarray(np.repeat(np.arange(stop - start, dtype=np.int64), lengths[start:stop])[: len(ids)])
        ends = xp.asarray(res_off[start + 1: stop + 1] - res_off[start])
        valid = xp.arange(len(ids)) + k <= ends[owner]  # the window lies inside its own sequence
        key = xp.sort(owner[valid] * width + ids[valid])
        keep = xp.ones(len(key), dtype=bool)
        keep[1:] = key[1:] != key[:-1]
        key = key[keep]
        counts[start:stop] = to_host(xp.bincount(key // width, minlength=stop - start))
        ids_out.append(to_host((key % width).astype(xp.int32)))
        start = stop
    return KmerSets(np.concatenate(ids_out), offsets(counts), width, k)


def pivot_distances(km: KmerSets, members: np.ndarray, pivots: np.ndarray, xp=np) -> np.ndarray:
    """k-mer distance (1 - shared / min(distinct)) of each of ``members`` to
    each of ``pivots`` (sequence indices): float64 (len(members), len(pivots))."""
    members = np.asarray(members, dtype=np.int64)
    pivots = np.asarray(pivots, dtype=np.int64)
    if len(members) < GPU_MIN_SEQS:
        xp = np
    piv_ids, piv_counts = km.gather(pivots)
    piv = np.zeros((km.width, len(pivots)), dtype=np.float32)
    piv[piv_ids, np.repeat(np.arange(len(pivots)), piv_counts)] = 1.0
    piv_d = xp.asarray(piv)
    sparse = backend_of(xp).sparse
    out = np.empty((len(members), len(pivots)), dtype=np.float64)
    for lo in range(0, len(members), CHUNK):
        part = members[lo: lo + CHUNK]
        cols, counts = km.gather(part)
        present = sparse.csr_matrix((xp.ones(len(cols), dtype=xp.float32), xp.asarray(cols),
                                     xp.asarray(offsets(counts).astype(np.int32))), shape=(len(part), km.width))
        shared = np.rint(to_host(present @ piv_d))
        denom = np.maximum(np.minimum(counts[:, None], piv_counts[None, :]), 1)
        d = np.clip(1.0 - shared / denom, 0.0, 1.0)
        d[part[:, None] == pivots[None, :]] = 0.0  # a sequence is at 0 from itself, k-mers or not
        out[lo: lo + len(part)] = d
    return out

