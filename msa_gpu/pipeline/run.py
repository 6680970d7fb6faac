"""A call's families from start to end, each family's record through named
steps: `dedupe` (repeats dropped), `recipe` (each family's decided, or a
given one checked), `msa_gpu.pipeline.pieces.in_pieces` (the families
aligned, in pieces and waves), `expand` (the results over every sequence)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from msa_gpu.settings.choices import Distance
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distances import kmer_unshared
from msa_gpu.pipeline.family import Context, Given, Work
from msa_gpu.pipeline.pieces import in_pieces
from msa_gpu.progressive import distinct, distinct_tree, expand_alignment, expand_distances, expand_tree, merge_schedule
from msa_gpu.recipe import recipe_for
from msa_gpu.result import AlignResult
from msa_gpu.types import Recipe, Sequences


def align_batch(context: Context, families: list[Sequences], distances: list | None = None,
                guide_trees: list | None = None, libraries: list | None = None,
                recipes: list[Recipe] | None = None) -> list[AlignResult]:
    """`msa_gpu.aligner.Aligner.align_many`'s work (its arguments, as there)."""
    # dedupe: each family's distinct sequences (where it may drop repeats), its given tree cut down to them
    work = dedupe(context.config, as_given(families, distances, guide_trees, libraries))
    # recipe: each family's, decided once before any stage runs (or given, and checked)
    plan = recipe(context.config, work, recipes)
    # the backend for these recipes
    context.choose_backend(plan)
    # the families' states through the steps, in pieces and waves
    results = in_pieces(context, [w.family(r) for w, r in zip(work, plan)], libraries is not None)
    # expand: the repeats' rows copied back
    return expand(work, results)


def as_given(families: list[Sequences], distances: list | None = None, guide_trees: list | None = None,
             libraries: list | None = None) -> list[Given]:
    """The call's families as given (`Given.of`): each with its distances,
    tree and library (None where a list or its entry is None)."""
    n = len(families)
    dms, trees, libs = (list(x or [None] * n) for x in (distances, guide_trees, libraries))
    return [Given.of(seqs, dms[f], trees[f], libs[f]) for f, seqs in enumerate(families)]


def dedupe(config: AlignerConfig, given: list[Given]) -> list[Work]:
    """Each family as it is aligned: its distinct sequences and the inverse
    map where it may drop repeats and has some (`distinct_work`), its given
    tree cut down to those sequences."""
    work = []
    for g in given:
        seqs, inverse = distinct_work(config, g.seqs, g.dedupe)
        tree = g.tree if g.tree is None or inverse is None else distinct_tree(g.tree, inverse)
        work.append(Work(g, seqs, inverse, tree))
    return work


def recipe(config: AlignerConfig, work: list[Work], recipes: list[Recipe] | None = None) -> list[Recipe]:
    """Each family's recipe (`plan_recipe`), or the ``recipes`` given (from
    `Aligner.plan`), checked against the families (`check_recipes`)."""
    plan = list(recipes) if recipes is not None else [plan_recipe(config, w.given, w.seqs) for w in work]
    check_recipes(plan, work)
    return plan


def expand(work: list[Work], results: list[AlignResult]) -> list[AlignResult]:
    """The results over every given sequence: where a family's repeats were
    dropped, their rows copied back, and its tree and distances expanded."""
    out = []
    for f, w in enumerate(work):
        res, results[f] = results[f], None  # (one family's alignment held twice at a time, not all)
        if w.inverse is None:
            out.append(res)
            continue
        tree = expand_tree(res.guide_tree, w.inverse)
        dm = expand_distances(res.distances, w.inverse) if res.recipe.expands_distances else None
        out.append(AlignResult(w.given.seqs, expand_alignment(res.alignment, w.inverse), dm,
                               tree, merge_schedule(tree), res.backend, res.timings, None, res.recipe))
    return out


def plan_recipe(config: AlignerConfig, given: Given, seqs: Sequences) -> Recipe:
    """The recipe of the family ``given``, aligned as ``seqs`` (its distinct
    sequences). A family that comes with its library is aligned whole, with
    that library: never in subtrees (`Recipe.subtrees`)."""
    if given.library is not None:
        config = replace(config, accurate_subtree_seqs=len(seqs))
    return recipe_for(config, seqs, given.tree is not None, len(given.seqs), given.distances is not None,
                      kmer_unshared)


def check_recipes(plan: list[Recipe], work: list[Work]) -> None:
    """Refuse recipes not made for these families as given (`Aligner.plan`'s are)."""
    if len(plan) != len(work) or any(r.n_seqs != len(w.seqs) for r, w in zip(plan, work)):
        raise ValueError("each family needs its own recipe, made for its distinct sequences (Aligner.plan)")
    for r, w in zip(plan, work):
        supplied = w.given.distances is not None and w.tree is None
        if (r.distance is Distance.given) != (w.tree is not None) or (r.distance is Distance.supplied) != supplied:
            raise ValueError("a recipe must say which trees and distances are given (Aligner.plan with them)")
        if r.subtrees and w.given.library is not None:
            raise ValueError("a family that comes with its library is aligned whole with it, not in "
                             "subtrees (Aligner.plan with it)")


def distinct_work(config: AlignerConfig, seqs: Sequences, allowed: bool = True) -> tuple[Sequences, np.ndarray | None]:
    """The sequences a family is aligned as: its distinct ones, and the
    inverse map, where dedupe is on, ``allowed`` and there are repeats;
    else the family itself and None."""
    if config.dedupe and len(seqs) > 1 and allowed:
        unique, inv = distinct(seqs)
        if len(unique) < len(seqs):
            return unique, inv
    return seqs, None


def with_dedupe(config: AlignerConfig, families: list[Sequences], run,
                allowed: list[bool] | None = None) -> list[AlignResult]:
    """``run`` (families -> results) on the families' distinct sequences
    (where ``allowed`` and dedupe is on), its results expanded back
    (`dedupe`, then `expand`)."""
    allowed = allowed or [True] * len(families)
    work = dedupe(config, [Given(seqs, dedupe=a) for seqs, a in zip(families, allowed)])
    return expand(work, run([w.seqs for w in work]))
