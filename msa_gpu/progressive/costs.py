"""A family's stage-3 scoring in fixed point: its matrix, gaps and gap-pair cost, from the run's
settings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.alphabet import Alphabet
from msa_gpu.settings.choices import Objective
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.scoring import GapScheme, matrix_fixed
from msa_gpu.types import Recipe, Sequences


@dataclass(frozen=True)
class Scoring:
    """One family's scoring in fixed point."""

    alphabet_size: int
    gap_code: int
    matrix: np.ndarray  # host int64 (A, A)
    gaps: tuple[int, int, int, int]
    gap_pair: int
    gap_model: int = 0  # 0 flat (gap_pair), 1 counts, 2 exact (see AlignerConfig)


def family_scoring(config: AlignerConfig, seqs: Sequences, recipe: Recipe) -> Scoring:
    """A family's scoring, as its recipe says (matrix, offset, gap costs and
    their model and factor, the objective); the terminal gap factors and the
    gap-pair cost are the run's (``config``)."""
    if recipe.objective is Objective.mea:
        return mea_scoring(seqs.alphabet)
    gaps = GapScheme(recipe.gap_factor * recipe.gap_open, recipe.gap_factor * recipe.gap_extend,
                     config.terminal_open, config.terminal_extend)
    scale = recipe.profile_scale
    m = matrix_fixed(recipe.matrix, seqs.alphabet.letters, recipe.matrix_offset, scale)
    return Scoring(seqs.alphabet.size, seqs.alphabet.gap, m, gaps.fixed(scale), int(round(config.gap_pair * scale)),
                   GAP_MODELS[recipe.gap_model])


#: The kernels' codes of the gap models.
GAP_MODELS = {"flat": 0, "counts": 1, "exact": 2}


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
