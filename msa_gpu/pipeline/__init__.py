"""The family pipeline: a family's state (`Family`) moves through named steps,
every family of a batch together at each step.

A call's families (`run.align_batch`, behind `msa_gpu.aligner.Aligner.align_many`)
are each held as given (`Given`: sequences, distances, tree, library) and go
through named steps: `dedupe` (repeats dropped: `Work`, the family as it is
aligned), `recipe` (each family's decided once: `plan_recipe`, or given and
checked: `check_recipes`), `in_pieces` (accurate mode in subtrees, the rest in
waves whose libraries fit the memory: `batch.in_waves`), and `expand` (the
results copied back to every sequence; `with_dedupe` runs a caller's work
between `dedupe` and `expand`). Each batch goes through the steps of
`batch.align_families` (`steps`: score, library, large trees, distances,
streamed trees, then per tree round: trees, progressive, retree; refine,
realign, results). The steps call the builders of one family or a batch
(`builders`), which the aligner offers as its public methods.
"""

from msa_gpu.pipeline.batch import align_families, in_waves
from msa_gpu.pipeline.builders import DISTANCES, TREES
from msa_gpu.pipeline.family import Context, Family, Given, Work, add_timings, progress, timed
from msa_gpu.pipeline.pieces import in_pieces, subtree_align
from msa_gpu.pipeline.run import (align_batch, as_given, check_recipes, dedupe, distinct_work, expand, plan_recipe,
                                  recipe, with_dedupe)

__all__ = ["DISTANCES", "TREES", "Context", "Family", "Given", "Work", "add_timings", "align_batch", "align_families",
           "as_given", "check_recipes", "dedupe", "distinct_work", "expand", "in_pieces", "in_waves", "plan_recipe",
           "progress", "recipe", "subtree_align", "timed", "with_dedupe"]
