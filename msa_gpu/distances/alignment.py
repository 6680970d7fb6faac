"""Stage 1: distances from alignments (identity of an alignment's rows, or of all-pairs
alignments)."""

from __future__ import annotations

import numpy as np

from msa_gpu.backend import Backend, PairScoring, align_pairs, all_pair_indices, default_scoring, to_host
from msa_gpu.distances.kmer import _array_module
from msa_gpu.errors import InputError
from msa_gpu.types import DistanceMatrix, Sequences


#: Bytes of one-hot columns `alignment_distance` holds at a time.
BLOCK_BYTES = 64 << 20


def alignment_distance(codes: np.ndarray, gap: int, xp=np, block_bytes: int = BLOCK_BYTES) -> DistanceMatrix:
    """Distances from an alignment: 1 - identities / aligned residue pairs.

    ``codes`` is an (n_seqs, n_cols) code matrix with ``gap`` for gaps. The
    counts are summed over blocks of columns of at most ``block_bytes`` of
    one-hot codes (each block's float32 sums are exact integers), so a long
    alignment needs no more memory than a short one; any block size gives
    the same counts.
    """
    xp = _array_module(codes.shape[0], xp)
    c = xp.asarray(codes)
    n, cols = c.shape
    step = max(1, block_bytes // max(1, n * (gap + 1) * 4))
    ident = np.zeros((n, n), dtype=np.int64)
    pairs = np.zeros((n, n), dtype=np.int64)
    for lo in range(0, cols, step):
        block = c[:, lo: lo + step]
        width = block.shape[1]
        onehot = xp.zeros((n, width, gap + 1), dtype=xp.float32)
        onehot[xp.arange(n)[:, None], xp.arange(width)[None, :], block] = 1.0
        resid = 1.0 - onehot[:, :, gap]
        onehot = onehot[:, :, :gap].reshape(n, -1)
        ident += np.rint(to_host(onehot @ onehot.T)).astype(np.int64)
        pairs += np.rint(to_host(resid @ resid.T)).astype(np.int64)
    d = 1.0 - ident / np.maximum(pairs, 1)
    d[pairs == 0] = 1.0
    np.fill_diagonal(d, 0.0)
    return DistanceMatrix(np.minimum(d, d.T), "identity")


def kimura_protein(p: np.ndarray) -> np.ndarray:
    """Kimura's protein correction ``-ln(1 - p - 0.2 p^2)`` of the fraction of
    differences ``p``, capped at 10 where the logarithm diverges (p >= ~0.85).

    >>> [round(float(x), 4) for x in kimura_protein(np.array([0.0, 0.5, 0.99]))]
    [0.0, 0.7985, 10.0]
    """
    arg = 1.0 - p - 0.2 * p * p
    return np.where(arg > np.exp(-10.0), -np.log(np.maximum(arg, np.exp(-10.0))), 10.0) + 0.0


#: Pairs a call of the pairwise engine takes in `pairwise_distance`: progress
#: is counted between calls.
CHUNK_PAIRS = 1_000_000


def pairwise_distance(
    seqs: Sequences,
    backend: Backend | str = "auto",
    kimura: bool = False,
    scoring: PairScoring | None = None,
    on_progress=None,
    chunk_pairs: int = CHUNK_PAIRS,
) -> DistanceMatrix:
    """Distances from all-pairs alignments: ``1 - identity`` (identical
    residues over aligned residue pairs, ClustalW style), optionally with
    Kimura's protein correction. ``scoring`` defaults to `default_scoring`
    (global mode). Pairs with no aligned residue pair get distance 1. The
    pairs go to the engine ``chunk_pairs`` at a time (the alignments do not
    depend on it); ``on_progress(done, total)`` counts them. ``backend``: a
    `Backend`, or ``auto``, ``cpu`` or ``gpu`` (`align_pairs`).
    """
    if kimura and seqs.alphabet.name != "protein":
        raise InputError("the Kimura correction is for protein sequences")
    scoring = scoring or default_scoring(seqs)
    n = len(seqs)
    values = np.zeros((n, n), np.float64)
    every = all_pair_indices(n)
    for start in range(0, len(every), max(chunk_pairs, 1)):
        res = align_pairs(seqs, every[start:start + chunk_pairs], scoring, identities=True, backend=backend)
        d = 1.0 - res.identity
        d = np.where(res.aligned_pairs > 0, d, 1.0)
        if kimura:
            d = kimura_protein(d)
        values[res.pairs[:, 0], res.pairs[:, 1]] = d
        values[res.pairs[:, 1], res.pairs[:, 0]] = d
        if on_progress is not None:
            on_progress(start + len(res.pairs), len(every))
    return DistanceMatrix(values, "align-kimura" if kimura else "align")
