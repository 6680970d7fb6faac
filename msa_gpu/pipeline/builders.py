"""The builders the steps call for one family or a batch of them: scoring,
distances, guide trees (one, several, or streamed with their matrices),
the large path's tree and consistency libraries. `msa_gpu.aligner.Aligner`
offers each as a public method (`ensemble` and `distributed` call them)."""

from __future__ import annotations

import os

from msa_gpu.settings.choices import Distance, Library, Tree
from msa_gpu.consistency import LibrarySettings, build_libraries, on_backend, posterior_libraries
from msa_gpu.distances import kmer_distance, kmer_sets, lcs_distance
from msa_gpu.pipeline.family import Context, progress, timed
from msa_gpu.progressive import Scoring, family_scoring
from msa_gpu.tree import (DENSE_MAX, lcs_single_linkage_many, mixed_linkage, nj, partition_tree, single_linkage,
                          upgma)
from msa_gpu.types import DistanceMatrix, GuideTree, Recipe, Sequences

#: The guide tree's builder of each tree a recipe may name that is built from distances (`Tree`:
#: its vocabulary and descriptions; the partition tree and a given one come otherwise).
TREES = {Tree.nj: nj, Tree.mixed: mixed_linkage, Tree.upgma: upgma, Tree.single: single_linkage}


def _align_distance(seqs, recipe, backend, on_progress):
    from msa_gpu.distances import pairwise_distance

    return pairwise_distance(seqs, backend=backend, on_progress=on_progress)


#: The builder of each distance a recipe may name that is computed from the sequences (`Distance`;
#: the library's, the pivots' and given ones come otherwise): ``(seqs, recipe, backend, on_progress)``.
DISTANCES = {
    Distance.kmer: lambda seqs, recipe, backend, _: kmer_distance(seqs, backend.xp, divergence=recipe.divergence),
    Distance.lcs: lambda seqs, recipe, backend, _: lcs_distance(seqs, backend.xp),
    Distance.align: _align_distance,
}


def scoring(context: Context, seqs: Sequences, recipe: Recipe) -> Scoring:
    """A family's scoring (`family_scoring`: its recipe's, this run's terminal gaps)."""
    return family_scoring(context.config, seqs, recipe)


def distances(context: Context, seqs: Sequences, recipe: Recipe) -> DistanceMatrix:
    """The distances the recipe names for the first guide tree (`DISTANCES`; a family of one sequence
    in accurate mode has no library: its 1 x 1 matrix is the k-mers')."""
    build = DISTANCES.get(recipe.distance, DISTANCES[Distance.kmer])
    return build(seqs, recipe, context.backend, progress(context, "pairs"))


def large_tree(context: Context, seqs: Sequences, rows_map=None) -> GuideTree:
    """Stages 1-2 of the large-family path: k-mer sets, partition tree
    (``rows_map(km)``, if given, makes `partition_tree`'s ``rows_map``
    from the k-mer sets: pivot distances on Dask workers)."""
    cfg, xp = context.config, context.backend.xp
    km = kmer_sets(seqs, xp=xp)
    return partition_tree(km, seqs.lengths, xp, cfg.large_pivots, cfg.large_cluster,
                          rows_map(km) if rows_map is not None else None)


def libraries(context: Context, families: list[Sequences], recipes: list[Recipe]) -> list:
    """Consistency libraries of the accurate families (None for the
    others, and for those aligned in subtrees: each subtree builds its own)."""
    cfg = context.config
    todo = [f for f, r in enumerate(recipes) if r.library is not None and not r.subtrees]
    libs: list = [None] * len(families)
    kinds = {f: recipes[f].library for f in todo}
    posterior = [f for f in todo if kinds[f] == Library.posterior]
    if posterior:  # pair-HMM posteriors, every family's together
        xp = context.backend.xp
        for f, lib in zip(posterior, posterior_libraries([families[f] for f in posterior], xp=xp,
                                                               on_progress=progress(context, "pair steps"))):
            libs[f] = on_backend(lib, xp)
    hard = [f for f in todo if kinds[f] != Library.posterior]
    for kind in sorted({kinds[f] for f in hard}):
        group = [f for f in hard if kinds[f] == kind]
        settings = LibrarySettings(kind.value, cfg.library_gap_open, cfg.library_gap_extend, cfg.library_weight)
        for f, lib in zip(group, build_libraries([families[f] for f in group], settings, context.backend,
                                                 on_progress=progress(context, "pairs"))):
            libs[f] = lib
    return libs


def tree(dm: DistanceMatrix, recipe: Recipe) -> GuideTree:
    """The guide tree the recipe names, from ``dm`` (`TREES`)."""
    return TREES[recipe.tree](dm)


def trees(context: Context, dms: list[DistanceMatrix], recipes: list[Recipe]):
    """Guide trees of several families, an iterator in their order. Where
    one has at least `DENSE_MAX` sequences they are built on up to
    ``threads`` (default: the CPU count, at most 8, each holding a copy of
    its matrix) host threads: the large families' builders are numba
    kernels that release the GIL, and each tree depends only on its matrix."""
    workers = min(len(dms), context.config.threads or os.cpu_count() or 1, 8)
    if workers < 2 or max(len(d) for d in dms) < DENSE_MAX:
        return (tree(d, r) for d, r in zip(dms, recipes))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return iter(list(pool.map(tree, dms, recipes)))


def stream_trees(context: Context, families: list[Sequences], recipes: list[Recipe], todo: list[int],
                 timings: dict) -> dict[int, GuideTree]:
    """Distances and guide trees of the families ``todo``, each matrix held
    only until its tree is built: the matrices are computed here one at a
    time (on the device where there is one) while host threads build the
    trees of the previous ones: ``w`` builders, each holding a matrix and
    its working copy, beside the matrix just computed, (2w + 1) matrices
    within ``tree_memory`` bytes (w at least one). A single-linkage tree
    is built at once instead: it reads its matrix without a copy, so one
    matrix is held at a time; on LCS distances (FAMSA's tree, from 500
    sequences by default) it needs no matrix at all (`Recipe.spanning`)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    largest = max(len(families[f]) for f in todo)
    matrix = 8 * largest * largest
    workers = context.config.tree_builders(matrix)
    built: dict[int, GuideTree] = {}
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        spans = [f for f in todo if recipes[f].spanning]
        if spans:  # FAMSA's tree with no matrix at all, these families stepped together
            with timed(timings, "distance"):
                built.update(zip(spans, lcs_single_linkage_many([families[f] for f in spans], context.backend.xp)))
        for f in todo:
            if f in built:
                continue
            with timed(timings, "distance"):
                dm = distances(context, families[f], recipes[f])
            if recipes[f].tree is Tree.single:
                built[f] = tree(dm, recipes[f])  # reads its matrix without a copy, in well under a second
                del dm
                continue
            while len(pending) >= workers:  # (a free builder first: the memory stays in the budget)
                g, job = pending.popleft()
                built[g] = job.result()
            pending.append((f, pool.submit(tree, dm, recipes[f])))
            del dm
        for g, job in pending:
            built[g] = job.result()
    return built
