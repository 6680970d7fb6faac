"""The named steps of a batch of families (`batch.align_families` runs them
in order). Each takes the list of the families' states (`Family`) and works
on all of them together where the backend batches them (every family's
libraries in one stack, every family's tree level in one merge batch),
filling in each family's product; a step that times a stage adds its
seconds to the run's ``timings`` under the reporter's stage of that name."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from msa_gpu.settings.choices import Distance, Weights
from msa_gpu.consistency import library_distance, stack_libraries
from msa_gpu.distances import alignment_distance
from msa_gpu.pipeline import builders
from msa_gpu.pipeline.family import Context, Family, add_timings, progress, timed
from msa_gpu.progressive import FamilyJob, alignment_codes, merge_schedule, progressive_align
from msa_gpu.refine import realign_rounds, refine as refine_alignments
from msa_gpu.result import AlignResult
from msa_gpu.tree import fragments_last, sequence_weights


def score(context: Context, families: list[Family]) -> None:
    """Each family's scoring (`builders.scoring`)."""
    for fam in families:
        fam.scoring = builders.scoring(context, fam.seqs, fam.recipe)


def library(context: Context, families: list[Family], timings: dict):
    """The accurate families' consistency libraries (those not given built
    here, every family's together; a library given to a family that takes
    none is dropped), stacked for the DP (the stack, or None where no family
    is accurate); each family's ``library_base`` is its place in the stack."""
    with timed(timings, "library", context.reporter):
        missing = [fam for fam in families if fam.library is None and fam.accurate]
        for fam, lib in zip(missing, builders.libraries(context, [fam.seqs for fam in missing],
                                                        [fam.recipe for fam in missing]) if missing else []):
            fam.library = lib
        for fam in families:
            fam.library = fam.library if fam.accurate else None
        stack = (stack_libraries([fam.library for fam in families], context.backend.xp)
                 if any(fam.accurate for fam in families) else None)
    for f, fam in enumerate(families):
        fam.library_base = int(stack.family_base[f]) if fam.library is not None else None
    return stack


def large_trees(context: Context, families: list[Family], timings: dict) -> None:
    """The large families' trees without an N x N matrix (`builders.large_tree`), where none was given."""
    with timed(timings, "large_tree", context.reporter):
        for fam in families:
            if fam.recipe.distance is Distance.pivots and fam.distances is None and fam.fixed_tree is None:
                fam.fixed_tree = builders.large_tree(context, fam.seqs)


def distances(context: Context, families: list[Family], timings: dict) -> None:
    """The distances of the families given neither distances nor a tree,
    but those whose matrix is streamed into their tree (`stream_trees`):
    the library's where the recipe says so, else the recipe's builder's."""
    with timed(timings, "distance", context.reporter):
        for fam in families:
            if fam.distances is not None or fam.fixed_tree is not None or fam.streams:
                continue
            fam.distances = (library_distance(fam.library) if fam.library is not None
                             and fam.recipe.distance is Distance.library
                             else builders.distances(context, fam.seqs, fam.recipe))


def stream_trees(context: Context, families: list[Family], timings: dict) -> None:
    """The trees of the families whose matrix serves only their tree, each
    built with its matrix in one pass, the matrix dropped
    (`builders.stream_trees`; the "tree" time is the stream's less its distances)."""
    todo = [f for f, fam in enumerate(families) if fam.streams]
    if not todo:
        return
    before = timings.get("distance", 0.0)
    with timed(timings, "tree", context.reporter):
        built = builders.stream_trees(context, [fam.seqs for fam in families], [fam.recipe for fam in families],
                                      todo, timings)
        for f, tree in built.items():
            families[f].streamed_tree = tree
    timings["tree"] -= timings["distance"] - before


def tree_rounds(families: list[Family]) -> Iterator[tuple[list[Family], list[Family]]]:
    """Each round's families (a family's tree is rebuilt from its alignment
    as often as its recipe says: ``retree``) and, of those, the ones
    aligned again in the next round."""
    for rnd in range(1 + max((fam.recipe.retree for fam in families), default=0)):
        todo = [fam for fam in families if rnd <= fam.recipe.retree]
        yield todo, [fam for fam in todo if rnd < fam.recipe.retree]


def trees(context: Context, families: list[Family], timings: dict) -> None:
    """Stage 2 (host): each family's guide tree (its fixed one, its streamed
    one, or built from its distances: `builders.trees`; fragments last where
    the recipe says so), level schedule, weights and progressive job."""
    with timed(timings, "tree", context.reporter):
        build = [fam for fam in families if fam.fixed_tree is None and fam.streamed_tree is None]
        built = builders.trees(context, [fam.distances for fam in build], [fam.recipe for fam in build])
        for fam in families:
            fam.tree = (fam.fixed_tree if fam.fixed_tree is not None else fam.streamed_tree
                        if fam.streamed_tree is not None else next(built))
            if fam.recipe.fragments and fam.fixed_tree is None:
                fam.tree = fragments_last(fam.tree, fam.seqs.lengths < fam.recipe.fragment_length)
            fam.schedule = merge_schedule(fam.tree)
        for fam in families:
            weights = (np.ones(len(fam.seqs), dtype=np.int64)
                       if fam.recipe.weights is Weights.equal else sequence_weights(fam.tree))
            fam.job = FamilyJob(fam.seqs, fam.tree, fam.schedule, weights, fam.scoring, fam.library_base,
                                fam.recipe.consistency)


def progressive(context: Context, families: list[Family], timings: dict, stack=None, initial=None) -> None:
    """Stage 3: every family's progressive alignment along its job's
    schedule, level-batched across families (one `progressive_align` call;
    ``stack``: the libraries, ``initial``: profiles to start from, each as there)."""
    with timed(timings, "progressive", context.reporter):
        aligned = progressive_align([fam.job for fam in families], context.backend, context.config.long_cells,
                                    stack=stack, initial=initial, on_progress=progress(context, "merges"),
                                    anchor_cells=context.config.anchor_cells)
        for fam, aln in zip(families, aligned):
            fam.alignment = aln


def retree(context: Context, families: list[Family], timings: dict) -> None:
    """The distances of each family's alignment, for its next round's tree."""
    if not families:
        return
    with timed(timings, "distance", context.reporter):
        for fam in families:
            codes = alignment_codes(fam.seqs, fam.alignment)
            fam.distances = alignment_distance(codes, fam.seqs.alphabet.gap, context.backend.xp)


def refine(context: Context, families: list[Family], timings: dict, stack=None) -> None:
    """Stage 4, where a recipe plans rounds: each family's alignment refined
    over its tree's bipartitions for its recipe's rounds (``stack``: the
    families' libraries, or None); the rounds made and cuts accepted go into ``timings``."""
    if not any(fam.recipe.iterations for fam in families):
        return
    recipes = [fam.recipe for fam in families]
    with timed(timings, "refine", context.reporter):
        refined = refine_alignments([fam.job for fam in families], [fam.alignment for fam in families],
                                    [r.iterations for r in recipes], context.backend, stack,
                                    min(context.config.long_cells, context.config.refine_max_cells),
                                    sample=[r.refine_cuts for r in recipes],
                                    on_progress=progress(context, "rounds", cap=True),
                                    splits=[r.refine_splits for r in recipes])
    add_timings(timings, {"refine_rounds": float(max(refined.rounds)),
                          "refine_accepted": float(sum(refined.accepted))})
    for fam, aln in zip(families, refined.alignments):
        fam.alignment = aln


def realign(context: Context, families: list[Family], timings: dict) -> None:
    """Opt-in (``config.realign``): every sequence realigned to its family's profile, as its recipe says."""
    if not context.config.realign:
        return
    with timed(timings, "realign", context.reporter):
        for fam in families:
            if fam.recipe.realign:
                fam.alignment = realign_rounds(fam.job, fam.alignment, context.backend, fam.recipe.realign)


def results(context: Context, families: list[Family], timings: dict) -> list[AlignResult]:
    """Each family's `AlignResult`, all with the run's ``timings``."""
    return [fam.result(context.backend.name, timings) for fam in families]
