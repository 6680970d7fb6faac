"""Families aligned in pieces: accurate mode in subtrees (`subtree_align`)
beside the others (`in_pieces`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from msa_gpu.backend import usable_cores
from msa_gpu.settings.choices import Library, Mode, Weights
from msa_gpu.consistency import library_memory
from msa_gpu.pipeline import builders, steps
from msa_gpu.pipeline.batch import in_waves
from msa_gpu.pipeline.family import Context, Family, add_timings
from msa_gpu.progressive import FamilyJob, Profile, alignment_codes
from msa_gpu.recipe import recipe_for
from msa_gpu.result import AlignResult
from msa_gpu.pipeline.subtrees import cut_at_most, subset, subtrees, top_schedule
from msa_gpu.tree import sequence_weights


def in_pieces(context: Context, families: list[Family], libraries_given: bool = False) -> list[AlignResult]:
    """`in_waves`, but the families whose recipes say accurate mode in
    subtrees (`Recipe.subtrees`) are aligned by `subtree_align`; every
    result carries the whole run's timings."""
    pieces = [f for f, fam in enumerate(families) if fam.recipe.subtrees]
    if not pieces:
        return in_waves(context, families, libraries_given)
    rest = [f for f, fam in enumerate(families) if not fam.recipe.subtrees]
    out: list = [None] * len(families)
    timings: dict[str, float] = {}
    for group, align in ((rest, in_waves), (pieces, subtree_align)):
        if not group:
            continue
        done = align(context, [families[f] for f in group], libraries_given)
        add_timings(timings, done[0].timings)
        for f, res in zip(group, done):
            out[f] = res
    return [replace(res, timings=timings) for res in out]


def subtree_align(context: Context, families: list[Family], libraries_given: bool = False) -> list[AlignResult]:
    """Accurate mode in pieces (issue 58): each family is aligned in fast
    mode by its recipe (the fast recipe's tree, rebuilt as it says), that
    tree is cut into subtrees of at most ``recipe.subtrees`` sequences
    (`cut_at_most`), every subtree of every family is aligned in accurate
    mode with its own library (`in_waves`: on the CPU in waves that fit
    ``library_memory``, on the GPU in waves that fit half its free
    memory), and each family's subtree profiles are merged along its
    tree above the cut with the fast scoring and weights. Refinement, where
    the recipe plans it, runs once, on the merged alignment, over the
    whole tree with that scoring (the fast run gives only its tree,
    distances and schedule: it is not refined). A family in subtrees
    comes with no library (``libraries_given`` is not read)."""
    recipes = [fam.recipe for fam in families]
    fast = [replace(r, mode=Mode.fast, library=None, subtrees=0) for r in recipes]
    base = in_waves(context, [Family(fam.seqs, replace(r, iterations=0), fam.distances, fam.fixed_tree)
                              for fam, r in zip(families, fast)])
    timings: dict[str, float] = {}
    add_timings(timings, base[0].timings)
    least = context.config.accurate_subtree_min  # (smaller subtrees stay in the fast merges above the cut)
    cuts, pieces = [], []
    for res, r in zip(base, recipes):
        roots = cut_at_most(res.guide_tree, r.subtrees)
        kept = [(root, made) for root, made in zip(roots, subtrees(res.guide_tree, roots)) if len(made[0]) >= least]
        cuts.append([root for root, _ in kept])
        pieces.append([made for _, made in kept])
    clades = [subset(fam.seqs, members) for fam, made in zip(families, pieces) for members, _ in made]
    accurate = replace(context.config, mode=Mode.accurate)
    # (each subtree's gap costs are its family's recipe's: the same as the settings give, unless a caller
    # changed them in the recipe, as an ensemble's perturbed replicates do)
    owner = [r for r, made in zip(recipes, pieces) for _ in made]
    clade_recipes = [replace(recipe_for(accurate, c), gap_open=r.gap_open, gap_extend=r.gap_extend)
                     for c, r in zip(clades, owner)]
    _note_subtrees(context, clades, clade_recipes)
    done = in_waves(context, [Family(c, r) for c, r in zip(clades, clade_recipes)]) if clades else []
    if done:
        add_timings(timings, done[0].timings)
    xp, tops, initial, k = context.backend.xp, [], [], 0
    for fam, res, r, roots, made in zip(families, base, fast, cuts, pieces):
        tree = res.guide_tree
        weights = np.ones(len(fam.seqs), dtype=np.int64) if r.weights is Weights.equal else sequence_weights(tree)
        profiles = {}
        for root, (members, _) in zip(roots, made):
            if len(members) > 1:  # (a leaf's profile is made by the merges)
                codes = alignment_codes(clades[k], done[k].alignment)
                profiles[root] = Profile(members, xp.asarray(codes), weights[members])
            k += 1
        initial.append(profiles)
        job = FamilyJob(fam.seqs, tree, top_schedule(tree, roots), weights, builders.scoring(context, fam.seqs, r))
        tops.append(Family(fam.seqs, fam.recipe, tree=tree, job=job))
    steps.progressive(context, tops, timings, initial=initial)
    for top, res in zip(tops, base):  # (refinement runs over the whole tree's schedule)
        top.job = replace(top.job, schedule=res.schedule)
    steps.refine(context, tops, timings)
    return [replace(res, alignment=top.alignment, timings=timings, recipe=r)
            for res, top, r in zip(base, tops, recipes)]


def _note_subtrees(context: Context, clades: list, clade_recipes: list) -> None:
    """The reporter's note of the plan of the subtrees the cut gave (the command line's: a bound)."""
    note = getattr(context.reporter, "note", None)
    posterior = [c for c, r in zip(clades, clade_recipes) if r.library is Library.posterior and len(c) > 1]
    if note is not None and posterior:
        gpu = context.backend.on_device
        plan = library_memory(posterior, gpu, 1 if gpu else usable_cores(context.config.threads))
        note(f"{len(clades):,} subtrees of at most {max(len(c) for c in clades):,} sequences: {plan.line(gpu)}")
