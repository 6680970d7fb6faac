"""A call's families from start to end: repeats dropped, each family's recipe
decided (or a given one checked), the families aligned (in pieces and
waves), the results expanded back to every sequence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from msa_gpu.settings.choices import Distance
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distances import kmer_unshared
from msa_gpu.pipeline.family import Context, Family
from msa_gpu.pipeline.pieces import in_pieces
from msa_gpu.progressive import distinct, distinct_tree, expand_alignment, expand_distances, expand_tree, merge_schedule
from msa_gpu.recipe import recipe_for
from msa_gpu.result import AlignResult
from msa_gpu.types import Recipe, Sequences


def align_batch(context: Context, families: list[Sequences], distances: list | None = None,
                guide_trees: list | None = None, libraries: list | None = None,
                recipes: list[Recipe] | None = None) -> list[AlignResult]:
    """`msa_gpu.aligner.Aligner.align_many`'s work (its arguments, as there)."""
    n = len(families)
    dms, trees, libs = (list(x or [None] * n) for x in (distances, guide_trees, libraries))
    may = [dms[f] is None and libs[f] is None for f in range(n)]

    def run(work: list[Sequences]) -> list[AlignResult]:
        # an injected tree over every sequence, cut down to the distinct ones where repeats were dropped
        cut = [t if t is None or len(w) == len(s) else distinct_tree(t, distinct(s)[1])
               for t, w, s in zip(trees, work, families)]
        # recipe: each family's, decided once before any stage runs (or given, and checked)
        plan = list(recipes) if recipes is not None else plan_recipes(context.config, work, families, cut, dms, libs)
        check_recipes(plan, work, cut, dms, libs)
        # the backend for these recipes
        context.choose_backend(plan)
        # the families' states through the steps
        states = [Family(w, r, d, t, lib) for w, r, d, t, lib in zip(work, plan, dms, cut, libs)]
        return in_pieces(context, states, libraries is not None)

    # expand: repeats dropped before, their rows copied back after
    return with_dedupe(context.config, families, run, may)


def plan_recipes(config: AlignerConfig, work: list[Sequences], families: list[Sequences], trees: list, dms: list,
                 libs: list) -> list[Recipe]:
    """The recipes of ``families``, aligned as ``work`` (their distinct
    sequences), with these given trees, distances and libraries (None
    where not). A family that comes with its library is aligned whole,
    with that library: never in subtrees (`Recipe.subtrees`)."""
    return [recipe_for(config if lib is None else replace(config, accurate_subtree_seqs=len(w)), w,
                       t is not None, len(s), d is not None, kmer_unshared)
            for w, s, t, d, lib in zip(work, families, trees, dms, libs)]


def check_recipes(plan: list[Recipe], work: list[Sequences], trees: list, dms: list, libs: list) -> None:
    """Refuse recipes not made for these families as given (`Aligner.plan`'s are)."""
    if len(plan) != len(work) or any(r.n_seqs != len(w) for r, w in zip(plan, work)):
        raise ValueError("each family needs its own recipe, made for its distinct sequences (Aligner.plan)")
    for r, t, d, lib in zip(plan, trees, dms, libs):
        supplied = d is not None and t is None
        if (r.distance is Distance.given) != (t is not None) or (r.distance is Distance.supplied) != supplied:
            raise ValueError("a recipe must say which trees and distances are given (Aligner.plan with them)")
        if r.subtrees and lib is not None:
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
    (where ``allowed`` and dedupe is on), its results expanded back."""
    allowed = allowed or [True] * len(families)
    work, inverses = zip(*(distinct_work(config, s, a) for s, a in zip(families, allowed))) if families else ((), ())
    results = run(list(work))
    out = []
    for f, (seqs, inv) in enumerate(zip(families, inverses)):
        res, results[f] = results[f], None  # (one family's alignment held twice at a time, not all)
        if inv is None:
            out.append(res)
            continue
        tree = expand_tree(res.guide_tree, inv)
        dm = expand_distances(res.distances, inv) if res.recipe.expands_distances else None
        out.append(AlignResult(seqs, expand_alignment(res.alignment, inv), dm,
                               tree, merge_schedule(tree), res.backend, res.timings, None, res.recipe))
    return out
