"""A family as a call gives it (`Given`), as it is aligned (`Work`), its state
as it moves through the pipeline's steps (`Family`), what the steps read of
the aligner that runs them, and the stages' clock."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from msa_gpu.backend import Backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.progressive import FamilyJob, Scoring
from msa_gpu.result import AlignResult
from msa_gpu.types import Alignment, DistanceMatrix, GuideTree, MergeSchedule, Recipe, Sequences


class Context(Protocol):
    """What a step reads of the aligner that runs it (`msa_gpu.aligner.Aligner`):
    its settings, its backend (chosen on first use), its reporter (a
    `progress.StageReporter`, or None for silence) and its backend rule."""

    config: AlignerConfig
    reporter: Any

    @property
    def backend(self) -> Backend: ...

    def choose_backend(self, recipes: list[Recipe]) -> Backend: ...


@dataclass(eq=False)
class Family:
    """One family's state through the steps of `msa_gpu.pipeline.batch.align_families`.

    Made with what the steps start from: the sequences aligned (the
    family's distinct ones where repeats were dropped), the recipe, and what
    a caller gave (distances, a guide tree, a consistency library; None where
    not). Each step fills in its product; `result` gives the family's
    `AlignResult` at the end.
    """

    seqs: Sequences
    recipe: Recipe
    #: given, else the distances step's (a retree round's: its alignment's); None where the tree needs none
    distances: DistanceMatrix | None = None
    #: a tree that is never rebuilt: given, or the large path's partition tree
    fixed_tree: GuideTree | None = None
    #: given or built (accurate mode, more than one sequence); else None
    library: Any = None
    #: the family's scoring (the recipe's, this run's terminal gaps)
    scoring: Scoring | None = None
    #: its first sequence's id in the run's library stack (None without a library)
    library_base: int | None = None
    #: a tree built with its matrix in one pass, the matrix dropped (`builders.stream_trees`)
    streamed_tree: GuideTree | None = None
    tree: GuideTree | None = None
    schedule: MergeSchedule | None = None
    #: the progressive stage's input: sequences, tree, schedule, weights, scoring
    job: FamilyJob | None = None
    alignment: Alignment | None = None

    @property
    def accurate(self) -> bool:
        """Whether the family takes a consistency library (a family of one sequence has no pairs)."""
        return self.recipe.library is not None and len(self.seqs) > 1

    @property
    def streams(self) -> bool:
        """Whether its matrix serves only its tree: no distances or tree given, and the recipe streams it."""
        return self.distances is None and self.fixed_tree is None and self.recipe.streamed

    def result(self, backend: str, timings: dict[str, float]) -> AlignResult:
        """The family's `AlignResult`, with the run's ``timings``."""
        return AlignResult(self.seqs, self.alignment, self.distances, self.tree, self.schedule, backend, timings,
                           self.library, self.recipe)


@dataclass(frozen=True, eq=False)
class Given:
    """One family as a call gives it: its sequences, every one, and what came
    with them (distances, a guide tree over every sequence, a consistency
    library; None where not). ``dedupe``: whether its repeats may be dropped."""

    seqs: Sequences
    distances: DistanceMatrix | None = None
    tree: GuideTree | None = None
    library: Any = None
    dedupe: bool = True

    @classmethod
    def of(cls, seqs: Sequences, distances: DistanceMatrix | None = None, tree: GuideTree | None = None,
           library: Any = None) -> Given:
        """The family with these inputs; its repeats may be dropped only where
        no distances or library came with it (they cover every sequence)."""
        return cls(seqs, distances, tree, library, distances is None and library is None)


@dataclass(frozen=True, eq=False)
class Work:
    """One family as it is aligned (`msa_gpu.pipeline.run.dedupe`'s): its
    distinct sequences and the inverse map (the given sequences and None where
    no repeats were dropped), and the given tree cut down to those sequences."""

    given: Given
    seqs: Sequences
    inverse: np.ndarray | None = None
    tree: GuideTree | None = None

    def family(self, recipe: Recipe) -> Family:
        """Its state for the steps, with its ``recipe``."""
        return Family(self.seqs, recipe, self.given.distances, self.tree, self.given.library)


def progress(context: Context, unit: str, cap: bool = False):
    """The running stage's counter for the reporter (None without one);
    ``cap``: its total is only a bound (`StageReporter.progress`)."""
    counter = getattr(context.reporter, "progress", None)
    return None if counter is None else (lambda done, total: counter(done, total, unit, cap=cap))


def add_timings(total: dict[str, float], more: dict[str, float]) -> None:
    """``more``'s stage seconds added to ``total``'s (refinement's round count: the most of either)."""
    for key, value in more.items():
        total[key] = max(total.get(key, 0.0), value) if key == "refine_rounds" else total.get(key, 0.0) + value


@contextmanager
def timed(timings: dict[str, float], stage: str, reporter=None):
    """The block's seconds added to ``timings[stage]``, shown as ``stage`` by the ``reporter`` (if any)."""
    clock = time.perf_counter()
    if reporter is None:
        yield
    else:
        with reporter.stage(stage):
            yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - clock
