"""The orchestrator: Sequences -> distances -> tree -> schedule -> alignment."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from msa_gpu.backend import Backend, cpu_backend, cpu_seconds, select_backend, set_threads, usable_cores
from msa_gpu.config import AlignerConfig, BackendChoice
from msa_gpu.consistency import (
    LibrarySettings,
    build_libraries,
    library_distance,
    library_memory,
    library_waves,
    on_backend,
    posterior_libraries,
    stack_libraries,
)
from msa_gpu.distances import alignment_distance, kmer_distance, kmer_sets, kmer_unshared, lcs_distance
from msa_gpu.progressive import (
    FamilyJob,
    Profile,
    Scoring,
    alignment_codes,
    distinct,
    distinct_tree,
    expand_alignment,
    expand_distances,
    expand_tree,
    family_scoring,
    merge_schedule,
    progressive_align,
)
from msa_gpu.recipe import recipe_for
from msa_gpu.refine import realign_rounds, refine
from msa_gpu.result import AlignResult
from msa_gpu.subtrees import cut_at_most, subset, subtrees, top_schedule
from msa_gpu.tree import (DENSE_MAX, fragments_last, lcs_single_linkage_many, mixed_linkage, nj, partition_tree,
                          sequence_weights, single_linkage, upgma)
from msa_gpu.choices import Distance, Library, Mode, Tree, Weights
from msa_gpu.types import DistanceMatrix, GuideTree, Recipe, Sequences


#: A batch hook, ``hook(aligner, families, recipes) -> results``: a plain
#: `Aligner.align_many` call's families (no distances, trees or libraries
#: given) aligned with others' and their results given back (a server's
#: requests that arrive together are aligned in one batch:
#: `msa_gpu.serving.gather`).
BatchHook = Callable[["Aligner", list, "list[Recipe] | None"], list]


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


class Aligner:
    """Progressive multiple sequence aligner.

    Examples
    --------
    >>> from msa_gpu.io import make_sequences
    >>> seqs = make_sequences(["a", "b"], [b"MKTAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQISFVKSHFSRQ"])
    >>> res = Aligner(AlignerConfig(backend="cpu")).align(seqs)
    >>> [r.decode() for r in res.rows()]
    ['MKTAYIAKQRQISFVKSHFSRQ', 'MKTAYIAK--QISFVKSHFSRQ']
    """

    def __init__(self, config: AlignerConfig | None = None, backend: Backend | None = None, reporter=None,
                 batch: BatchHook | None = None):
        self.config = config or AlignerConfig()
        self.reporter = reporter  # a progress.StageReporter, or None for silence
        # where a plain align_many call's families go to be aligned with others' (`BatchHook`)
        self.batch = batch
        self._backend = backend
        self._by_cost = False  # backend auto took the CPU by the expected time (`choose_backend`)
        set_threads(self.config.threads)

    @property
    def backend(self) -> Backend:
        """The backend: ``config.backend``'s, chosen on first use (``auto``
        picks the CPU for a small input: `choose_backend`)."""
        if self._backend is None:
            self._backend = select_backend(self.config.backend)
        return self._backend

    def choose_backend(self, recipes: list[Recipe]) -> Backend:
        """The backend for families of these recipes: with ``backend`` auto,
        the CPU where its expected time for them (`backend.cost.cpu_seconds`
        on the cores this run may use) is at most ``cpu_max_seconds``, the
        GPU's start-up, without starting the GPU; else `backend`. The
        alignment's bytes are the same either way."""
        if self._backend is None and BackendChoice(self.config.backend) is BackendChoice.auto:
            cores = usable_cores(self.config.threads)
            expected = sum(cpu_seconds(r, cores) for r in recipes)
            if expected <= self.config.cpu_max_seconds:
                self._backend = cpu_backend(f"expected {expected:.2f} s on {cores} CPU core{'s' if cores > 1 else ''}, "
                                            f"within the GPU's start-up; --backend gpu uses it")
                self._by_cost = True
        return self.backend

    def backend_said(self, recipes: list[Recipe]) -> str:
        """The backend as a recipe line says it (`choose_backend`'s): its
        name, and where backend auto took the CPU by the expected time, why
        ("CPU (expected 0.01 s on 16 CPU cores, within the GPU's start-up;
        --backend gpu uses it)")."""
        backend = self.choose_backend(recipes)
        return f"CPU ({backend.reason})" if self._by_cost else backend.name

    def scoring(self, seqs: Sequences, recipe: Recipe) -> Scoring:
        """A family's scoring (`family_scoring`: its recipe's, this run's terminal gaps)."""
        return family_scoring(self.config, seqs, recipe)

    def distances(self, seqs: Sequences, recipe: Recipe) -> DistanceMatrix:
        """The distances the recipe names for the first guide tree (`DISTANCES`; a family of one sequence
        in accurate mode has no library: its 1 x 1 matrix is the k-mers')."""
        build = DISTANCES.get(recipe.distance, DISTANCES[Distance.kmer])
        return build(seqs, recipe, self.backend, self._progress("pairs"))

    def plan(self, families: list[Sequences], guide_trees: list | None = None, distances: list | None = None,
             libraries: list | None = None) -> list[Recipe]:
        """Each family's `Recipe`, as `align_many` decides it for the same
        arguments: made for its distinct sequences (where repeats are dropped:
        not where distances or a library are given), knowing which families
        come with a tree, distances or a library (a family given its library
        is aligned whole, not in subtrees). A caller that shows the recipes
        passes them back to `align_many` (``recipes``)."""
        n = len(families)
        trees, dms, libs = (list(x or [None] * n) for x in (guide_trees, distances, libraries))
        work = [self._distinct(s, d is None and lib is None)[0] for s, d, lib in zip(families, dms, libs)]
        return self._recipes(work, families, trees, dms, libs)

    def _recipes(self, work: list[Sequences], families: list[Sequences], trees: list, dms: list,
                 libs: list) -> list[Recipe]:
        """The recipes of ``families``, aligned as ``work`` (their distinct
        sequences), with these given trees, distances and libraries (None
        where not). A family that comes with its library is aligned whole,
        with that library: never in subtrees (`Recipe.subtrees`)."""
        return [recipe_for(self.config if lib is None else replace(self.config, accurate_subtree_seqs=len(w)), w,
                           t is not None, len(s), d is not None, kmer_unshared)
                for w, s, t, d, lib in zip(work, families, trees, dms, libs)]

    def large_tree(self, seqs: Sequences, rows_map=None) -> GuideTree:
        """Stages 1-2 of the large-family path: k-mer sets, partition tree
        (``rows_map(km)``, if given, makes `partition_tree`'s ``rows_map``
        from the k-mer sets: pivot distances on Dask workers)."""
        cfg, xp = self.config, self.backend.xp
        km = kmer_sets(seqs, xp=xp)
        return partition_tree(km, seqs.lengths, xp, cfg.large_pivots, cfg.large_cluster,
                              rows_map(km) if rows_map is not None else None)

    def libraries(self, families: list[Sequences], recipes: list[Recipe]) -> list:
        """Consistency libraries of the accurate families (None for the
        others, and for those aligned in subtrees: each subtree builds its own)."""
        cfg = self.config
        todo = [f for f, r in enumerate(recipes) if r.library is not None and not r.subtrees]
        libs: list = [None] * len(families)
        kinds = {f: recipes[f].library for f in todo}
        posterior = [f for f in todo if kinds[f] == "posterior"]
        if posterior:  # pair-HMM posteriors, every family's together
            xp = self.backend.xp
            for f, lib in zip(posterior, posterior_libraries([families[f] for f in posterior], xp=xp,
                                                                   on_progress=self._progress("pair steps"))):
                libs[f] = on_backend(lib, xp)
        hard = [f for f in todo if kinds[f] != "posterior"]
        for kind in sorted({kinds[f] for f in hard}):
            group = [f for f in hard if kinds[f] == kind]
            settings = LibrarySettings(kind.value, cfg.library_gap_open, cfg.library_gap_extend, cfg.library_weight)
            for f, lib in zip(group, build_libraries([families[f] for f in group], settings, self.backend,
                                                     on_progress=self._progress("pairs"))):
                libs[f] = lib
        return libs

    def tree(self, dm: DistanceMatrix, recipe: Recipe) -> GuideTree:
        """The guide tree the recipe names, from ``dm`` (`TREES`)."""
        return TREES[recipe.tree](dm)

    def trees(self, dms: list[DistanceMatrix], recipes: list[Recipe]):
        """Guide trees of several families, an iterator in their order. Where
        one has at least `DENSE_MAX` sequences they are built on up to
        ``threads`` (default: the CPU count, at most 8, each holding a copy of
        its matrix) host threads: the large families' builders are numba
        kernels that release the GIL, and each tree depends only on its matrix."""
        workers = min(len(dms), self.config.threads or os.cpu_count() or 1, 8)
        if workers < 2 or max(len(d) for d in dms) < DENSE_MAX:
            return (self.tree(d, r) for d, r in zip(dms, recipes))
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as pool:
            return iter(list(pool.map(self.tree, dms, recipes)))

    def _progress(self, unit: str, cap: bool = False):
        """The running stage's counter for the reporter (None without one);
        ``cap``: its total is only a bound (`StageReporter.progress`)."""
        counter = getattr(self.reporter, "progress", None)
        return None if counter is None else (lambda done, total: counter(done, total, unit, cap=cap))

    def stream_trees(self, families: list[Sequences], recipes: list[Recipe], todo: list[int],
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
        workers = self.config.tree_builders(matrix)
        trees: dict[int, GuideTree] = {}
        with ThreadPoolExecutor(workers) as pool:
            pending: deque = deque()
            spans = [f for f in todo if recipes[f].spanning]
            if spans:  # FAMSA's tree with no matrix at all, these families stepped together
                with _timed(timings, "distance"):
                    trees.update(zip(spans, lcs_single_linkage_many([families[f] for f in spans], self.backend.xp)))
            for f in todo:
                if f in trees:
                    continue
                with _timed(timings, "distance"):
                    dm = self.distances(families[f], recipes[f])
                if recipes[f].tree is Tree.single:
                    trees[f] = self.tree(dm, recipes[f])  # reads its matrix without a copy, in well under a second
                    del dm
                    continue
                while len(pending) >= workers:  # (a free builder first: the memory stays in the budget)
                    g, job = pending.popleft()
                    trees[g] = job.result()
                pending.append((f, pool.submit(self.tree, dm, recipes[f])))
                del dm
            for g, job in pending:
                trees[g] = job.result()
        return trees

    def align(self, seqs: Sequences, distances: DistanceMatrix | None = None,
              guide_tree: GuideTree | None = None, recipe: Recipe | None = None) -> AlignResult:
        """Align ``seqs``; precomputed ``distances`` or ``guide_tree`` skip
        stages, a ``recipe`` (`plan`) replaces the one the rules would make."""
        return self.align_many([seqs], [distances], [guide_tree], recipes=None if recipe is None else [recipe])[0]

    def align_many(self, families: list[Sequences], distances: list | None = None,
                   guide_trees: list | None = None, libraries: list | None = None,
                   recipes: list[Recipe] | None = None) -> list[AlignResult]:
        """Align several families in one run: each tree level of every family
        is merged in the same backend batch. ``timings`` in each result are
        those of the whole run. ``libraries`` (accurate mode) may be injected
        too (a None entry is built here); each result returns its family's. Identical sequences are aligned
        once and copied (`msa_gpu.progressive.dedupe`; not where distances or a
        library were injected; an injected tree is cut down to the distinct
        sequences). Each family's `Recipe` is decided here, once, before any
        stage runs (or given: ``recipes``, from `plan`); every result carries its own. With a ``batch``
        hook (`BatchHook`), a call given no distances, trees or libraries hands its families to it."""
        plain = all(v is None or all(x is None for x in v) for v in (distances, guide_trees, libraries))
        if self.batch is not None and plain:
            return self.batch(self, families, recipes)
        n = len(families)
        dms, trees, libs = (list(x or [None] * n) for x in (distances, guide_trees, libraries))
        may = [dms[f] is None and libs[f] is None for f in range(n)]

        def run(work: list[Sequences]) -> list[AlignResult]:
            # an injected tree over every sequence, cut down to the distinct ones where repeats were dropped
            cut = [t if t is None or len(w) == len(s) else distinct_tree(t, distinct(s)[1])
                   for t, w, s in zip(trees, work, families)]
            plan = list(recipes) if recipes is not None else self._recipes(work, families, cut, dms, libs)
            if len(plan) != n or any(r.n_seqs != len(w) for r, w in zip(plan, work)):
                raise ValueError("each family needs its own recipe, made for its distinct sequences (Aligner.plan)")
            for r, t, d, lib in zip(plan, cut, dms, libs):
                supplied = d is not None and t is None
                if (r.distance is Distance.given) != (t is not None) or (r.distance is Distance.supplied) != supplied:
                    raise ValueError("a recipe must say which trees and distances are given (Aligner.plan with them)")
                if r.subtrees and lib is not None:
                    raise ValueError("a family that comes with its library is aligned whole with it, not in "
                                     "subtrees (Aligner.plan with it)")
            self.choose_backend(plan)
            return self._in_pieces(work, plan, distances, cut, libraries)

        return self.with_dedupe(families, run, may)

    def _in_pieces(self, families: list[Sequences], recipes: list[Recipe], distances: list | None,
                   guide_trees: list, libraries: list | None) -> list[AlignResult]:
        """`_in_waves`, but the families whose recipes say accurate mode in
        subtrees (`Recipe.subtrees`) are aligned by `_subtree_align`; every
        result carries the whole run's timings."""
        pieces = [f for f, r in enumerate(recipes) if r.subtrees]
        if not pieces:
            return self._in_waves(families, recipes, distances, guide_trees, libraries)
        rest = [f for f, r in enumerate(recipes) if not r.subtrees]
        out: list = [None] * len(families)
        timings: dict[str, float] = {}
        for group, align in ((rest, self._in_waves), (pieces, self._subtree_align)):
            if not group:
                continue
            done = align([families[f] for f in group], [recipes[f] for f in group],
                         None if distances is None else [distances[f] for f in group],
                         [guide_trees[f] for f in group], None if libraries is None else [libraries[f] for f in group])
            _add_timings(timings, done[0].timings)
            for f, res in zip(group, done):
                out[f] = res
        return [replace(res, timings=timings) for res in out]

    def _subtree_align(self, families: list[Sequences], recipes: list[Recipe], distances: list | None,
                       guide_trees: list, libraries: list | None = None) -> list[AlignResult]:
        """Accurate mode in pieces (issue 58): each family is aligned in fast
        mode by its recipe (the fast recipe's tree, rebuilt as it says), that
        tree is cut into subtrees of at most ``recipe.subtrees`` sequences
        (`cut_at_most`), every subtree of every family is aligned in accurate
        mode with its own library (`_in_waves`: on the CPU in waves that fit
        ``library_memory``, on the GPU in waves that fit half its free
        memory), and each family's subtree profiles are merged along its
        tree above the cut with the fast scoring and weights. Refinement, where
        the recipe plans it, runs once, on the merged alignment, over the
        whole tree with that scoring (the fast run gives only its tree,
        distances and schedule: it is not refined)."""
        fast = [replace(r, mode=Mode.fast, library=None, subtrees=0) for r in recipes]
        base = self._in_waves(families, [replace(r, iterations=0) for r in fast], distances, guide_trees, None)
        timings: dict[str, float] = {}
        _add_timings(timings, base[0].timings)
        least = self.config.accurate_subtree_min  # (smaller subtrees stay in the fast merges above the cut)
        cuts, pieces = [], []
        for res, r in zip(base, recipes):
            roots = cut_at_most(res.guide_tree, r.subtrees)
            kept = [(root, made) for root, made in zip(roots, subtrees(res.guide_tree, roots)) if len(made[0]) >= least]
            cuts.append([root for root, _ in kept])
            pieces.append([made for _, made in kept])
        clades = [subset(s, members) for s, made in zip(families, pieces) for members, _ in made]
        accurate = replace(self.config, mode=Mode.accurate)
        # (each subtree's gap costs are its family's recipe's: the same as the settings give, unless a caller
        # changed them in the recipe, as an ensemble's perturbed replicates do)
        owner = [r for r, made in zip(recipes, pieces) for _ in made]
        clade_recipes = [replace(recipe_for(accurate, c), gap_open=r.gap_open, gap_extend=r.gap_extend)
                         for c, r in zip(clades, owner)]
        note = getattr(self.reporter, "note", None)
        posterior = [c for c, r in zip(clades, clade_recipes) if r.library is Library.posterior and len(c) > 1]
        if note is not None and posterior:  # the plan of the subtrees the cut gave (the command line's: a bound)
            gpu = self.backend.name != "cpu"
            plan = library_memory(posterior, gpu, 1 if gpu else usable_cores(self.config.threads))
            note(f"{len(clades):,} subtrees of at most {max(len(c) for c in clades):,} sequences: {plan.line(gpu)}")
        done = self._in_waves(clades, clade_recipes, None, [None] * len(clades), None) if clades else []
        if done:
            _add_timings(timings, done[0].timings)
        xp, jobs, initial, k = self.backend.xp, [], [], 0
        for seqs, res, r, roots, made in zip(families, base, fast, cuts, pieces):
            tree = res.guide_tree
            weights = np.ones(len(seqs), dtype=np.int64) if r.weights is Weights.equal else sequence_weights(tree)
            profiles = {}
            for root, (members, _) in zip(roots, made):
                if len(members) > 1:  # (a leaf's profile is made by the merges)
                    codes = alignment_codes(clades[k], done[k].alignment)
                    profiles[root] = Profile(members, xp.asarray(codes), weights[members])
                k += 1
            initial.append(profiles)
            jobs.append(FamilyJob(seqs, tree, top_schedule(tree, roots), weights, self.scoring(seqs, r)))
        with _timed(timings, "progressive", self.reporter):
            aligned = progressive_align(jobs, self.backend, self.config.long_cells, initial=initial,
                                        on_progress=self._progress("merges"), anchor_cells=self.config.anchor_cells)
        if any(r.iterations for r in recipes):
            aligned = self._refine([replace(job, schedule=res.schedule) for job, res in zip(jobs, base)], aligned,
                                   recipes, None, timings)
        return [replace(res, alignment=aln, timings=timings, recipe=r) for res, aln, r in zip(base, aligned, recipes)]

    def _refine(self, jobs: list, alignments: list, recipes: list[Recipe], stack, timings: dict) -> list:
        """Stage 4: each family's alignment refined over its tree's bipartitions for its recipe's rounds
        (``stack``: the families' libraries, or None); the rounds made and cuts accepted go into ``timings``."""
        with _timed(timings, "refine", self.reporter):
            refined = refine(jobs, alignments, [r.iterations for r in recipes], self.backend, stack,
                             min(self.config.long_cells, self.config.refine_max_cells),
                             sample=[r.refine_cuts for r in recipes], on_progress=self._progress("rounds", cap=True),
                             splits=[r.refine_splits for r in recipes])
        _add_timings(timings, {"refine_rounds": float(max(refined.rounds)),
                               "refine_accepted": float(sum(refined.accepted))})
        return refined.alignments

    def _in_waves(self, families: list[Sequences], recipes: list[Recipe], distances: list | None,
                  guide_trees: list, libraries: list | None) -> list[AlignResult]:
        """`_align_many`, in waves of families whose pair-HMM libraries fit
        ``config.library_memory`` bytes on the CPU, half the device's free
        memory on the GPU (`library_waves`; none where libraries are given):
        each wave's libraries are let go before
        the next is built, so its results carry none; every result carries
        the whole run's timings."""
        lengths = [s.lengths if r.library is Library.posterior and len(s) > 1 else None
                   for s, r in zip(families, recipes)]
        waves = [list(range(len(families)))]
        if libraries is None and any(L is not None for L in lengths):
            cpu = self.backend.name == "cpu"
            budget = self.config.library_memory if cpu else 2 * self.backend.ops.memory_budget()  # half the free
            waves = library_waves(lengths, budget, usable_cores(self.config.threads) if cpu else 1, gpu=not cpu,
                                  nucleotide=[s.alphabet.name != "protein" for s in families])
        if len(waves) == 1:
            return self._align_many(families, recipes, distances, guide_trees, libraries)
        out: list = [None] * len(families)
        timings: dict[str, float] = {}
        for wave in waves:
            done = self._align_many([families[f] for f in wave], [recipes[f] for f in wave],
                                    None if distances is None else [distances[f] for f in wave],
                                    [guide_trees[f] for f in wave])
            _add_timings(timings, done[0].timings)  # rounds: the most of any wave; the rest add up
            for f, res in zip(wave, done):
                out[f] = replace(res, timings=timings, library=None)
        return out

    def _distinct(self, seqs: Sequences, allowed: bool = True) -> tuple[Sequences, np.ndarray | None]:
        """The sequences a family is aligned as: its distinct ones, and the
        inverse map, where dedupe is on, ``allowed`` and there are repeats;
        else the family itself and None."""
        if self.config.dedupe and len(seqs) > 1 and allowed:
            unique, inv = distinct(seqs)
            if len(unique) < len(seqs):
                return unique, inv
        return seqs, None

    def with_dedupe(self, families: list[Sequences], run, allowed: list[bool] | None = None) -> list[AlignResult]:
        """``run`` (families -> results) on the families' distinct sequences
        (where ``allowed`` and dedupe is on), its results expanded back."""
        allowed = allowed or [True] * len(families)
        work, inverses = zip(*(self._distinct(s, a) for s, a in zip(families, allowed))) if families else ((), ())
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

    def _align_many(self, families: list[Sequences], recipes: list[Recipe], distances: list | None = None,
                    guide_trees: list | None = None, libraries: list | None = None) -> list[AlignResult]:
        n = len(families)
        dms = list(distances or [None] * n)
        fixed = list(guide_trees or [None] * n)
        timings: dict[str, float] = {}
        xp = self.backend.xp
        scorings = [self.scoring(s, r) for s, r in zip(families, recipes)]
        accurate = [r.library is not None and len(s) > 1 for s, r in zip(families, recipes)]  # one sequence: no pairs
        trees_streamed: dict[int, GuideTree] = {}

        # stage 1: consistency libraries (accurate mode) and distances where
        # neither distances nor a tree were given
        with _timed(timings, "library", self.reporter):
            libs = list(libraries) if libraries is not None else [None] * n
            missing = [f for f in range(n) if libs[f] is None and accurate[f]]  # those not given: built here
            for f, lib in zip(missing, self.libraries([families[f] for f in missing], [recipes[f] for f in missing])
                              if missing else []):
                libs[f] = lib
            libs = [lib if a else None for lib, a in zip(libs, accurate)]
            stack = stack_libraries(libs, xp) if any(accurate) else None
        with _timed(timings, "large_tree", self.reporter):  # large families: a tree without an N x N matrix
            for f in range(n):
                if recipes[f].distance is Distance.pivots and dms[f] is None and fixed[f] is None:
                    fixed[f] = self.large_tree(families[f])
        # families whose matrix serves only their tree: matrix and tree in one pass, the matrix dropped
        streamed = [f for f in range(n) if dms[f] is None and fixed[f] is None and recipes[f].streamed]
        with _timed(timings, "distance", self.reporter):
            dms = [d if d is not None or t is not None or f in streamed else
                   library_distance(lib) if lib is not None and r.distance is Distance.library
                   else self.distances(s, r)
                   for f, (s, d, t, lib, r) in enumerate(zip(families, dms, fixed, libs, recipes))]
        if streamed:  # (its "tree" time is the stream's less its distances)
            before = timings.get("distance", 0.0)
            with _timed(timings, "tree", self.reporter):
                trees_streamed.update(self.stream_trees(families, recipes, streamed, timings))
            timings["tree"] -= timings["distance"] - before
        lib_base = [int(stack.family_base[f]) if lib is not None else None for f, lib in enumerate(libs)]
        trees, schedules, alignments, jobs = list(fixed), [None] * n, [None] * n, [None] * n
        for rnd in range(1 + max((r.retree for r in recipes), default=0)):
            # a family's tree is rebuilt from its alignment as often as its recipe says
            todo = [f for f in range(n) if rnd <= recipes[f].retree]
            # stage 2: guide trees, weights and level schedules (host)
            with _timed(timings, "tree", self.reporter):
                build = [f for f in todo if fixed[f] is None and f not in trees_streamed]
                built = self.trees([dms[f] for f in build], [recipes[f] for f in build])
                for f in todo:
                    trees[f] = (fixed[f] if fixed[f] is not None else trees_streamed[f] if f in trees_streamed
                                else next(built))
                    if recipes[f].fragments and fixed[f] is None:
                        trees[f] = fragments_last(trees[f], families[f].lengths < recipes[f].fragment_length)
                    schedules[f] = merge_schedule(trees[f])
                for f in todo:
                    weights = (np.ones(len(families[f]), dtype=np.int64)
                               if recipes[f].weights is Weights.equal else sequence_weights(trees[f]))
                    jobs[f] = FamilyJob(families[f], trees[f], schedules[f], weights,
                                        scorings[f], lib_base[f], recipes[f].consistency)
            # stage 3: progressive alignment, level-batched across families
            with _timed(timings, "progressive", self.reporter):
                aligned = progressive_align([jobs[f] for f in todo], self.backend, self.config.long_cells, stack=stack,
                                            on_progress=self._progress("merges"), anchor_cells=self.config.anchor_cells)
                for f, aln in zip(todo, aligned):
                    alignments[f] = aln
            # retree: distances from this alignment for the next round
            again = [f for f in todo if rnd < recipes[f].retree]
            if again:
                with _timed(timings, "distance", self.reporter):
                    for f in again:
                        codes = alignment_codes(families[f], alignments[f])
                        dms[f] = alignment_distance(codes, families[f].alphabet.gap, xp)
        # stage 4: iterative refinement over tree bipartitions
        if any(r.iterations for r in recipes):
            alignments = self._refine(jobs, alignments, recipes, stack, timings)
        if self.config.realign:  # opt-in: every sequence realigned to its family's profile, as its recipe says
            with _timed(timings, "realign", self.reporter):
                for f in range(n):
                    if recipes[f].realign:
                        alignments[f] = realign_rounds(jobs[f], alignments[f], self.backend, recipes[f].realign)
        return [AlignResult(s, alignments[f], dms[f], trees[f], schedules[f], self.backend.name, timings, libs[f],
                            recipes[f]) for f, s in enumerate(families)]


def _add_timings(total: dict[str, float], more: dict[str, float]) -> None:
    """``more``'s stage seconds added to ``total``'s (refinement's round count: the most of either)."""
    for key, value in more.items():
        total[key] = max(total.get(key, 0.0), value) if key == "refine_rounds" else total.get(key, 0.0) + value


@contextmanager
def _timed(timings: dict[str, float], stage: str, reporter=None):
    clock = time.perf_counter()
    if reporter is None:
        yield
    else:
        with reporter.stage(stage):
            yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - clock
