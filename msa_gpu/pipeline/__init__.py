"""The family pipeline: a family's state (`Family`) moves through named steps,
every family of a batch together at each step.

A call's families (`run.align_batch`, behind `msa_gpu.aligner.Aligner.align_many`)
have their repeats dropped, their recipes decided once (`plan_recipes`), and are
aligned in pieces (`pieces`: accurate mode in subtrees) and in waves whose
libraries fit the memory (`batch.in_waves`); each batch goes through the steps
of `batch.align_families` (`steps`: score, library, large trees, distances,
streamed trees, then per tree round: trees, progressive, retree; refine,
realign, results), and the results are expanded back to every sequence
(`with_dedupe`). The steps call the builders of one family or a batch
(`builders`), which the aligner offers as its public methods.
"""

from msa_gpu.pipeline.batch import align_families, in_waves
from msa_gpu.pipeline.builders import DISTANCES, TREES
from msa_gpu.pipeline.family import Context, Family, add_timings, progress, timed
from msa_gpu.pipeline.pieces import in_pieces, subtree_align
from msa_gpu.pipeline.run import align_batch, check_recipes, distinct_work, plan_recipes, with_dedupe

__all__ = ["DISTANCES", "TREES", "Context", "Family", "add_timings", "align_batch", "align_families",
           "check_recipes", "distinct_work", "in_pieces", "in_waves", "plan_recipes", "progress", "subtree_align",
           "timed", "with_dedupe"]
