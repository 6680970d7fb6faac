"""Stage 4: refinement (``Alignment -> Alignment``): iterative refinement
over cuts of the alignment (``bipartitions``: the guide tree's, or the
columns' gap patterns) and, opt-in, every sequence realigned to its
family's profile (``realign``)."""

from msa_gpu.refine.bipartitions import RefineResult, column_splits, refine, tree_splits
from msa_gpu.refine.realign import REALIGN_MAX_SEQS, realign, realign_rounds

__all__ = ["REALIGN_MAX_SEQS", "RefineResult", "column_splits", "realign", "realign_rounds", "refine", "tree_splits"]
