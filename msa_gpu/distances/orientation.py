"""Which nucleotide sequences read better reverse-complemented (MAFFT's
``--adjustdirection``): each is compared with the first sequence by the
distinct k-mers it shares forward and reverse-complemented, and turned where
the reverse complement shares more (where neither shares any, the sequences
already oriented are the reference). The first sequence keeps its direction.

>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences(["a", "b", "c"], [b"ACGTTGCAAGGCTTAC", reverse_complement(b"ACGTTGCAAGGCTTAC"),
...                                         b"ACGTTGCAAGGCTTAC"], "dna")
>>> orientations(seqs).tolist()
[False, True, False]
"""

from __future__ import annotations

import numpy as np

from msa_gpu.alphabet import SeqType
from msa_gpu.errors import InputError
from msa_gpu.types import Sequences

_COMPLEMENT = bytes.maketrans(b"ACGTUNRYKMBVDHSWacgtunrykmbvdhsw", b"TGCAANYRMKVBHDSWtgcaanyrmkvbhdsw")
_T_TO_U = bytes.maketrans(b"Tt", b"Uu")


def reverse_complement(seq: bytes) -> bytes:
    """The reverse complement of a nucleotide sequence (IUPAC codes
    complemented, case kept); an RNA sequence (U and no T) stays RNA, A's
    partner written U, as MAFFT's --adjustdirection writes it.

    >>> reverse_complement(b"ACGTrn"), reverse_complement(b"AACGu")
    (b'nyACGT', b'aCGUU')
    """
    out = seq.translate(_COMPLEMENT)[::-1]
    rna = (b"U" in seq or b"u" in seq) and not (b"T" in seq or b"t" in seq)
    return out.translate(_T_TO_U) if rna else out


def _kmers(seq: bytes, k: int) -> set[bytes]:
    seq = seq.upper().replace(b"U", b"T")
    return {seq[i:i + k] for i in range(len(seq) - k + 1)}


def orientations(seqs: Sequences, k: int = 6) -> np.ndarray:
    """For each sequence, whether its reverse complement matches the family
    better (bool, input order; the first is never turned)."""
    if seqs.seqtype is SeqType.protein:
        raise InputError("only nucleotide sequences have a reverse complement")
    first = _kmers(seqs.raw[0], k)
    oriented: set[bytes] = set(first)
    turn = np.zeros(len(seqs), dtype=bool)
    for i, raw in enumerate(seqs.raw[1:], start=1):
        forward, reverse = _kmers(raw, k), _kmers(reverse_complement(raw), k)
        f, r = len(forward & first), len(reverse & first)
        if f == r == 0:
            f, r = len(forward & oriented), len(reverse & oriented)
        turn[i] = r > f
        oriented |= reverse if turn[i] else forward
    return turn
