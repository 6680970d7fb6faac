"""The choices the options name, as light enums (no numpy): the command
line builds its help from them without importing the engines, and
`msa_gpu.config`, `msa_gpu.alphabet` and `msa_gpu.backend.pairwise` take
them from here."""

from __future__ import annotations

import enum


class SeqType(str, enum.Enum):
    """Kind of sequence; ``auto`` means detect from the residues."""

    auto = "auto"
    protein = "protein"
    dna = "dna"
    rna = "rna"


class TreeMethod(str, enum.Enum):
    auto = "auto"  # single linkage on LCS distances; NJ for long sequences; else mixed below upgma_min_seqs, UPGMA from there
    upgma = "upgma"
    nj = "nj"
    mixed = "mixed"  # MAFFT-style: 0.1 average + 0.9 minimum linkage
    single = "single"  # minimum linkage (FAMSA's default tree, there on LCS similarities)


class DistanceMethod(str, enum.Enum):
    auto = "auto"  # lcs from lcs_min_seqs sequences, kmer below
    kmer = "kmer"  # shared k-mers: fast
    align = "align"  # 1 - identity of all-pairs global alignments: slower, better for divergent sets
    lcs = "lcs"  # FAMSA 2's indel^0.75 / LCS of all pairs (bit-parallel LCS)


class Mode(str, enum.Enum):
    auto = "auto"  # accurate for small families, fast otherwise (as MAFFT's --auto)
    fast = "fast"  # progressive alignment on profile scores (MAFFT FFT-NS-2 class)
    accurate = "accurate"  # pair-HMM posterior consistency library (MAFFT L-INS-i class)
    large = "large"  # k-mer pivots + partition tree, no N x N matrix (auto from large_min_seqs)


class FragmentPlace(str, enum.Enum):
    """Where fragments join (`msa_gpu.recipe`): where the guide tree puts them, or last."""

    tree = "tree"
    last = "last"


class BackendChoice(str, enum.Enum):
    auto = "auto"
    cpu = "cpu"
    gpu = "gpu"


class PairMode(str, enum.Enum):
    """Pairwise alignment mode."""

    global_ = "global"
    semiglobal = "semiglobal"
    local = "local"
