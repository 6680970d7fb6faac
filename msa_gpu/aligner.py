"""The aligner: a run's settings, backend and reporter, the public steps of
one family or a batch (`msa_gpu.pipeline.builders`), and the entry points
that hand a call's families to the family pipeline (`msa_gpu.pipeline`)."""

from __future__ import annotations

from collections.abc import Callable

from msa_gpu.backend import Backend, cpu_backend, cpu_seconds, select_backend, set_threads, usable_cores
from msa_gpu.settings.config import AlignerConfig, BackendChoice
from msa_gpu.pipeline import (DISTANCES, TREES, align_batch, as_given, builders, distinct_work, plan_recipe,
                              with_dedupe)
from msa_gpu.progressive import Scoring
from msa_gpu.result import AlignResult
from msa_gpu.types import DistanceMatrix, GuideTree, Recipe, Sequences

__all__ = ["DISTANCES", "TREES", "Aligner", "BatchHook"]

#: A batch hook, ``hook(aligner, families, recipes) -> results``: a plain
#: `Aligner.align_many` call's families (no distances, trees or libraries
#: given) aligned with others' and their results given back (a server's
#: requests that arrive together are aligned in one batch:
#: `msa_gpu.serving.gather`).
BatchHook = Callable[["Aligner", list, "list[Recipe] | None"], list]


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
        return builders.scoring(self, seqs, recipe)

    def distances(self, seqs: Sequences, recipe: Recipe) -> DistanceMatrix:
        """The distances the recipe names for the first guide tree (`DISTANCES`; a family of one sequence
        in accurate mode has no library: its 1 x 1 matrix is the k-mers')."""
        return builders.distances(self, seqs, recipe)

    def plan(self, families: list[Sequences], guide_trees: list | None = None, distances: list | None = None,
             libraries: list | None = None) -> list[Recipe]:
        """Each family's `Recipe`, as `align_many` decides it for the same
        arguments: made for its distinct sequences (where repeats are dropped:
        not where distances or a library are given), knowing which families
        come with a tree, distances or a library (a family given its library
        is aligned whole, not in subtrees). A caller that shows the recipes
        passes them back to `align_many` (``recipes``)."""
        return [plan_recipe(self.config, given, distinct_work(self.config, given.seqs, given.dedupe)[0])
                for given in as_given(families, distances, guide_trees, libraries)]

    def large_tree(self, seqs: Sequences, rows_map=None) -> GuideTree:
        """Stages 1-2 of the large-family path: k-mer sets, partition tree
        (``rows_map(km)``, if given, makes `partition_tree`'s ``rows_map``
        from the k-mer sets: pivot distances on Dask workers)."""
        return builders.large_tree(self, seqs, rows_map)

    def libraries(self, families: list[Sequences], recipes: list[Recipe]) -> list:
        """Consistency libraries of the accurate families (None for the
        others, and for those aligned in subtrees: each subtree builds its own)."""
        return builders.libraries(self, families, recipes)

    def tree(self, dm: DistanceMatrix, recipe: Recipe) -> GuideTree:
        """The guide tree the recipe names, from ``dm`` (`TREES`)."""
        return builders.tree(dm, recipe)

    def trees(self, dms: list[DistanceMatrix], recipes: list[Recipe]):
        """Guide trees of several families, an iterator in their order (on
        host threads where one is large: `msa_gpu.pipeline.builders.trees`)."""
        return builders.trees(self, dms, recipes)

    def stream_trees(self, families: list[Sequences], recipes: list[Recipe], todo: list[int],
                     timings: dict) -> dict[int, GuideTree]:
        """Distances and guide trees of the families ``todo``, each matrix held
        only until its tree is built (`msa_gpu.pipeline.builders.stream_trees`)."""
        return builders.stream_trees(self, families, recipes, todo, timings)

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
        return align_batch(self, families, distances, guide_trees, libraries, recipes)

    def with_dedupe(self, families: list[Sequences], run, allowed: list[bool] | None = None) -> list[AlignResult]:
        """``run`` (families -> results) on the families' distinct sequences
        (where ``allowed`` and dedupe is on), its results expanded back."""
        return with_dedupe(self.config, families, run, allowed)
