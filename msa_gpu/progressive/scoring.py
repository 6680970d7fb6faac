"""A family's stage-3 scoring in fixed point: its matrix, gaps and gap-pair cost, from the run's
settings."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from msa_gpu.alphabet import Alphabet
from msa_gpu.config import DEFAULTS, AlignerConfig
from msa_gpu.scoring import SCALE, GapScheme, matrix_fixed
from msa_gpu.types import Sequences


@dataclass(frozen=True)
class Scoring:
    """One family's scoring in fixed point."""

    alphabet_size: int
    gap_code: int
    matrix: np.ndarray  # host int64 (A, A)
    gaps: tuple[int, int, int, int]
    gap_pair: int
    gap_model: int = 0  # 0 flat (gap_pair), 1 counts (see AlignerConfig)


def family_scoring(config: AlignerConfig, seqs: Sequences, large: bool | None = None) -> Scoring:
    """A family's scoring; a large-path family (``large``, default: by its
    size) takes ``large_matrix_offset`` unless ``matrix_offset`` is set."""
    matrix, go, ge, offset = DEFAULTS[seqs.alphabet.name]
    large = config.is_large(len(seqs)) if large is None else large
    if config.objective == "mea" and not large and config.is_accurate(len(seqs), int(seqs.lengths.max(initial=0))):
        return mea_scoring(seqs.alphabet)
    if large:
        offset = config.large_matrix_offset
    counts = gap_model(config, seqs, large) == "counts"
    factor = gap_factor(config.gap_scaling_n or len(seqs)) if counts and config.gap_scaling else 1.0
    gaps = GapScheme(
        factor * (config.gap_open if config.gap_open is not None else go),
        factor * (config.gap_extend if config.gap_extend is not None else ge),
        config.terminal_open, config.terminal_extend,
    )
    off = config.matrix_offset if config.matrix_offset is not None else offset
    m = matrix_fixed(config.matrix or matrix, seqs.alphabet.letters, off)
    return Scoring(seqs.alphabet.size, seqs.alphabet.gap, m, gaps.fixed(), int(round(config.gap_pair * SCALE)),
                   1 if counts else 0)


def mea_scoring(a: Alphabet) -> Scoring:
    """Maximum expected accuracy (ProbCons): no substitution scores and no
    gap costs, so a merge's column score is the library's alone (the
    transformed posteriors, averaged over the pairs it aligns) and its DP
    finds the alignment with the most expected correct pairs.

    >>> from msa_gpu.alphabet import PROTEIN
    >>> sc = mea_scoring(PROTEIN)
    >>> int(abs(sc.matrix).sum()), sc.gaps, sc.gap_pair
    (0, (0, 0, 0, 0), 0)
    """
    return Scoring(a.size, a.gap, np.zeros((len(a.letters), len(a.letters)), np.int64), (0, 0, 0, 0), 0, 0)


def gap_model(config: AlignerConfig, seqs: Sequences, large: bool) -> str:
    """The family's gap model, ``gap_model`` auto resolved: flat for long
    sequences (`AlignerConfig.is_long`: on synthetic 30 kb genome families of
    20 to 1,000 it scored higher than counts at every size, 1,000 genomes SP
    0.9683 / TC 0.7730 against 0.9669 / 0.7469; benchmarks/results/NOTES.md)
    and where the family gets refinement rounds (accurate mode or
    ``maxiterate``), counts elsewhere. Counts discount a gap column inserted
    next to a sequence's existing gap; in a genome profile, where insertion
    columns line most of the alignment, that discount let residues of a
    column slip apart."""
    if config.gap_model != "auto":
        return config.gap_model
    if config.is_long(seqs.mean_length):
        return "flat"
    accurate = not large and config.is_accurate(len(seqs), int(seqs.lengths.max(initial=0)))
    return "flat" if config.iterations(accurate, seqs.seqtype) > 0 else "counts"


def gap_factor(n_seqs: int) -> float:
    """FAMSA 2's gap-cost factor for a family of ``n_seqs``: 1 up to 45
    sequences, then 1 + log2(N / 45) / 7 (1.64 at 1,000, 2.12 at 10,000).

    >>> gap_factor(45), round(gap_factor(1000), 3)
    (1.0, 1.639)
    """
    return 1.0 + math.log2(n_seqs / 45) / 7 if n_seqs > 45 else 1.0
