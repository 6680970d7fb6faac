"""A batch of families aligned together: the steps in order
(`align_families`), in waves whose libraries fit the memory (`in_waves`)."""

from __future__ import annotations

from dataclasses import replace

from msa_gpu.backend import usable_cores
from msa_gpu.settings.choices import Library
from msa_gpu.consistency import library_waves
from msa_gpu.pipeline import steps
from msa_gpu.pipeline.family import Context, Family, add_timings
from msa_gpu.result import AlignResult


def align_families(context: Context, families: list[Family]) -> list[AlignResult]:
    """Align a batch of families, each step on all of them together; every
    result carries the run's timings."""
    timings: dict[str, float] = {}
    # each family's scoring (its recipe's, this run's terminal gaps)
    steps.score(context, families)
    # stage 1: consistency libraries (accurate mode), every family's in one stack
    stack = steps.library(context, families, timings)
    # large families: a tree without an N x N matrix
    steps.large_trees(context, families, timings)
    # distances where neither distances nor a tree were given
    steps.distances(context, families, timings)
    # families whose matrix serves only their tree: matrix and tree in one pass, the matrix dropped
    steps.stream_trees(context, families, timings)
    for todo, again in steps.tree_rounds(families):  # (a tree is rebuilt from its alignment as its recipe says)
        # stage 2: guide trees, weights and level schedules (host)
        steps.trees(context, todo, timings)
        # stage 3: progressive alignment, level-batched across families
        steps.progressive(context, todo, timings, stack=stack)
        # retree: distances from this alignment for the next round
        steps.retree(context, again, timings)
    # stage 4: iterative refinement over tree bipartitions
    steps.refine(context, families, timings, stack)
    # opt-in: every sequence realigned to its family's profile
    steps.realign(context, families, timings)
    return steps.results(context, families, timings)


def in_waves(context: Context, families: list[Family], libraries_given: bool = False) -> list[AlignResult]:
    """`align_families`, in waves of families whose pair-HMM libraries fit
    ``config.library_memory`` bytes on the CPU, half the device's free
    memory on the GPU (`library_waves`; none where libraries are given):
    each wave's libraries are let go before the next is built, so its
    results carry none; every result carries the whole run's timings."""
    waves = _waves(context, families) if not libraries_given else [list(range(len(families)))]
    if len(waves) == 1:
        return align_families(context, families)
    out: list = [None] * len(families)
    timings: dict[str, float] = {}
    for wave in waves:
        group = [families[f] for f in wave]
        done = align_families(context, group)
        add_timings(timings, done[0].timings)  # rounds: the most of any wave; the rest add up
        for f, fam, res in zip(wave, group, done):
            out[f] = replace(res, timings=timings, library=None)
            fam.library = None
        del done, group, res  # (the wave's libraries let go before the next wave's are built)
    return out


def _waves(context: Context, families: list[Family]) -> list[list[int]]:
    """The waves of the families (`library_waves`), one where no family takes a pair-HMM library."""
    lengths = [fam.seqs.lengths if fam.recipe.library is Library.posterior and len(fam.seqs) > 1 else None
               for fam in families]
    if all(L is None for L in lengths):
        return [list(range(len(families)))]
    cpu = not context.backend.on_device
    budget = context.config.library_memory if cpu else 2 * context.backend.ops.memory_budget()  # half the free
    return library_waves(lengths, budget, usable_cores(context.config.threads) if cpu else 1, gpu=not cpu,
                         nucleotide=[fam.seqs.alphabet.name != "protein" for fam in families])
