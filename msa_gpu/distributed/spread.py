"""Batch runs beyond one device: a batch's families spread over Dask workers
(or, through `msa_gpu.distributed.gpus`, this machine's GPUs).

The families are cut into one group per worker, balanced by their planned
DP cells, and each group is one `Aligner.align_many` call on a worker (so a
worker with a GPU batches its group's merges as one machine does). A family
on the large path is spread itself: its tree is built here, its subtrees
are aligned on the workers and the merges above them here (`align_large`). A
family's alignment does not depend on which families share its batch, so
the output is byte-identical to a run on one machine. ``address`` is a
scheduler's address, or ``local`` for a cluster of worker processes on this
machine (dask-cuda's, one worker a GPU, where it is installed and GPUs are
visible).

Needs ``dask[distributed]`` (``pip install 'msagpu[dask]'``).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from msa_gpu.settings.choices import Mode
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.errors import BackendError
from msa_gpu.recipe import part_recipe
from msa_gpu.result import AlignResult
from msa_gpu.types import Recipe, Sequences


def groups(costs: list[int], parts: int) -> list[list[int]]:
    """Groups of indices with about equal total cost (none empty), each in
    index order: the costliest first, each to the least loaded group (ties:
    the lower index, the lower group), so the same costs give the same groups.

    >>> groups([5, 1, 1, 1, 5, 1], 2)
    [[0, 1, 3], [2, 4, 5]]
    >>> groups([9, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2)
    [[0], [1, 2, 3, 4, 5, 6, 7, 8, 9]]
    >>> groups([1, 1], 5)
    [[0], [1]]
    """
    parts = max(1, min(parts, len(costs)))
    load = [0] * parts
    members: list[list[int]] = [[] for _ in range(parts)]
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        k = min(range(parts), key=lambda k: (load[k], k))
        load[k] += costs[i]
        members[k].append(i)
    return [sorted(m) for m in members if m]


@contextmanager
def _worker_quiet():
    """A worker's backend fallback (auto, no GPU there) unsaid: its process
    has no reporter and would print the warning with a source line, once a
    worker, under ``-q`` too; the run's own line says which backend ran."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="using the CPU backend", category=RuntimeWarning)
        yield


def _align_subtree(seqs: Sequences, tree, config: AlignerConfig, recipe: Recipe) -> tuple[np.ndarray, str]:
    """One subtree of a large family, aligned along its tree with the
    family's recipe (`part_recipe`: equal weights, the family's gap factor):
    its code matrix, rows in input order."""
    from msa_gpu.aligner import Aligner
    from msa_gpu.progressive import alignment_codes

    with _worker_quiet():
        res = Aligner(replace(config, dedupe=False)).align(seqs, guide_tree=tree, recipe=part_recipe(recipe, seqs))
    return alignment_codes(seqs, res.alignment), res.backend


def _pivot_rows(km, members: np.ndarray, pivots: np.ndarray, backend: str) -> np.ndarray:
    """Rows of `msa_gpu.distances.pivot_distances`, on a worker (its GPU if it has one)."""
    from msa_gpu.backend import select_backend
    from msa_gpu.distances import pivot_distances

    with _worker_quiet():
        xp = select_backend(backend).xp
    return pivot_distances(km, members, pivots, xp)


def align_large(seqs: Sequences, config: AlignerConfig, run_all, parts: int, share=None,
                recipe: Recipe | None = None) -> AlignResult:
    """The large path with its pivot distances cut into ``parts`` row blocks
    and its progressive stage into ``parts`` subtrees (`msa_gpu.pipeline.subtrees`):
    ``run_all(fn, [args, ...])`` runs them (on Dask workers, or in process;
    ``share(x)`` hands data every task reads to the workers once: the k-mer
    sets), the merges above the subtrees run here. The alignment is the one
    `Aligner.align` gives. ``seqs`` are distinct (`Aligner.with_dedupe`);
    ``recipe`` is theirs (default: `Aligner.plan`'s), on the large path."""
    import time

    from msa_gpu.aligner import Aligner
    from msa_gpu.pipeline.subtrees import cut, profile_of, subset, subtrees, top_schedule
    from msa_gpu.progressive import FamilyJob, merge_schedule, progressive_align

    aligner = Aligner(config)
    recipe = recipe if recipe is not None else aligner.plan([seqs])[0]
    if recipe.mode is not Mode.large:  # deduplicated below the large path's size: as one machine does
        return aligner.align_many([seqs], recipes=[recipe])[0]
    clock = time.perf_counter()
    backend = config.backend.value

    def rows_map(km):
        shared = share(km) if share is not None else km

        def rows(members, pivots):
            blocks = [b for b in np.array_split(members, parts) if len(b)]
            return np.concatenate(run_all(_pivot_rows, [(shared, b, pivots, backend) for b in blocks]))
        return rows

    tree = aligner.large_tree(seqs, rows_map)
    roots = cut(tree, parts)
    pieces = subtrees(tree, roots)
    timings = {"large_tree": time.perf_counter() - clock}
    clock = time.perf_counter()
    made = run_all(_align_subtree, [(subset(seqs, members), sub, config, recipe) for members, sub in pieces])
    xp = aligner.backend.xp
    initial = {r: profile_of(members, codes, xp) for r, (members, _), (codes, _) in zip(roots, pieces, made)}
    job = FamilyJob(seqs, tree, top_schedule(tree, roots), np.ones(len(seqs), dtype=np.int64),
                    aligner.scoring(seqs, recipe))
    aln = progressive_align([job], aligner.backend, config.long_cells, initial=[initial],
                            anchor_cells=config.anchor_cells)[0]
    timings["progressive"] = time.perf_counter() - clock
    return AlignResult(seqs, aln, None, tree, merge_schedule(tree), aligner.backend.name, timings, None, recipe)


def _align_group(families: list[Sequences], config: AlignerConfig, recipes: list[Recipe]) -> list[AlignResult]:
    from msa_gpu.aligner import Aligner

    with _worker_quiet():
        results = Aligner(config).align_many(families, recipes=recipes)
    return [replace(r, library=None) for r in results]


def _client(address: str, workers: int | None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise BackendError("--dask needs dask.distributed (pip install 'msagpu[dask]')") from exc
    if address != "local":
        return Client(address), None
    try:
        from dask_cuda import LocalCUDACluster  # one worker a visible GPU

        cluster = LocalCUDACluster()
    except Exception:  # not installed, or no GPU: CPU worker processes
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def align_spread(families: list[Sequences], config: AlignerConfig, workers: int, submit,
                 share=None, recipes: list[Recipe] | None = None, spread_large: bool = True) -> list[AlignResult]:
    """`Aligner.align_many` with the work spread by ``submit(fn, *args)``
    (a future with ``.result()``) over ``workers`` workers: Dask's, or one
    host thread or process a GPU (`msa_gpu.distributed.gpus`). Large families
    are spread themselves (`align_large`; ``share`` as there), the others go
    in one group a worker, balanced by their DP cells (`Recipe.dp_cells`, the
    work the recipe plans, not the residues: an accurate family's library
    grows with its pairs). ``recipes`` are the families' (`Aligner.plan`;
    made here when not given). With ``spread_large`` False a large family is
    one more family of the groups, aligned whole on one worker."""
    from msa_gpu.aligner import Aligner

    aligner = Aligner(config)
    recipes = list(recipes) if recipes is not None else aligner.plan(families)
    out: list[AlignResult | None] = [None] * len(families)
    big = [f for f, r in enumerate(recipes) if r.mode is Mode.large] if spread_large else []
    if big:  # their pivot distances and subtrees over the workers, the merges above them here
        def run_all(fn, args):
            return [fut.result() for fut in [submit(fn, *a) for a in args]]

        for f in big:
            out[f] = aligner.with_dedupe([families[f]], lambda w, r=recipes[f]: [
                align_large(w[0], config, run_all, 4 * workers, share, r)])[0]
    rest = [f for f in range(len(families)) if f not in big]
    parts = groups([max(1, recipes[f].dp_cells) for f in rest], workers) if rest else []
    futures = [submit(_align_group, [families[rest[i]] for i in g], config, [recipes[rest[i]] for i in g])
               for g in parts]
    for g, fut in zip(parts, futures):
        for i, r in zip(g, fut.result()):
            out[rest[i]] = r
    return out  # type: ignore[return-value]


def align_many_dask(families: list[Sequences], config: AlignerConfig, address: str = "local",
                    workers: int | None = None, recipes: list[Recipe] | None = None) -> list[AlignResult]:
    """`Aligner.align_many` with the families spread over Dask workers."""
    client, cluster = _client(address, workers)
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or (workers or 1))
        return align_spread(families, config, n_workers, lambda fn, *a: client.submit(fn, *a, pure=False),
                            lambda x: client.scatter(x, broadcast=True), recipes)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
