"""Stage 4: iterative refinement over guide-tree bipartitions
(``Alignment -> Alignment``; ``bipartitions``)."""

from msa_gpu.refine.bipartitions import RefineResult, refine, tree_splits

__all__ = ["RefineResult", "refine", "tree_splits"]
