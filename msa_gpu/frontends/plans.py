"""What a run says before the work, in its voice: its recipe lines, a cold
kernel cache, the large path's and a batch's memory plans, and an accurate
run's library plan (kept for an out-of-memory exit whatever the voice)."""

from __future__ import annotations

from pathlib import Path

from msa_gpu.frontends.job import Caller, Job, say
from msa_gpu.runtime.kernel_cache import compiling_line, cuda_kernels_cold, kernels_cold
from msa_gpu.runtime.memory_plan import StagePlan, memory_plan, stage_plan
from msa_gpu.settings.choices import BackendChoice, Library, Mode, Tree

#: A batch whose stage plan (or an accurate run whose library plan) holds at least this many GB gets it said.
PLAN_MIN_GB = 0.25


def say_plans(job: Job, aligner, config, paths, families, recipes, devices, need: dict, caller: Caller) -> None:
    """What the run says before the work, in its voice: ``strategy`` and
    ``recipe`` the recipe line; ``plans`` the recipe lines (`recipe_lines`),
    a cold kernel cache, the large path's and a batch's memory plans, and
    an accurate run's library plan (kept in ``need`` whatever the voice, for
    an out-of-memory exit)."""
    from msa_gpu.recipe import describe

    req = job.requests
    if req.voice in ("strategy", "recipe"):  # as MAFFT names its strategy; FAMSA's and Clustal Omega's -v
        where = aligner.backend_said(recipes)
        say(caller, job, f"{'recipe: ' if req.voice == 'recipe' else ''}{describe(recipes[0], where)}")
    gpus = len(devices) > 1
    plans = req.voice == "plans"
    if plans:
        where = "Dask workers" if req.dask else f"{len(devices)} GPUs" if gpus else aligner.backend_said(recipes)
        for line in recipe_lines(config, paths, recipes, where, req.explain, job.inputs.batch):
            say(caller, job, line)
        cpu_cold, cuda_cold = kernels_cold(), config.backend is not BackendChoice.cpu and cuda_kernels_cold()
        if cpu_cold or cuda_cold:
            say(caller, job, compiling_line(cpu_cold, cuda_cold))
        for s, r in zip(families, recipes):
            if r.mode == Mode.large:
                plan = memory_plan(len(s), int(s.lengths.sum()), int(s.lengths.max()))
                say(caller, job, f"{len(s):,} sequences: {plan.line()}")
        staged = stage_plan_of(config, [(s, r) for s, r in zip(families, recipes) if r.mode != Mode.large],
                               job.outputs.fmt)
        if staged is not None:
            say(caller, job, staged.line())
    posterior = [(s, r) for s, r in zip(families, recipes) if r.library == Library.posterior]
    if posterior:  # accurate mode's library: said where it may hold much (issue 43), and by an out-of-memory exit
        from msa_gpu.consistency import library_memory
        from msa_gpu.pipeline.subtrees import plan_pieces

        gpu = not req.dask and (gpus or aligner.choose_backend(recipes).on_device)
        if gpu:  # the device's plan takes no host threads: numba (0.3-0.9 s to import) stays unloaded
            host_threads = 1
        else:
            import numba  # (the CPU library's host threads are numba's count)

            host_threads = config.threads or numba.get_num_threads()
        # (accurate mode in subtrees: pieces of its longest sequences stand in for the subtrees, whose
        # libraries are built in groups as the families' are)
        lib = library_memory([p for s, r in posterior for p in (plan_pieces(s, r.subtrees) if r.subtrees else [s])],
                             gpu, host_threads)
        need["plan"] = lib.line(gpu)  # (not the large path's plan of the largest family: issue 58 saw 0.0 GB)
        if plans and (lib.device_gb if gpu else lib.host_gb) >= PLAN_MIN_GB:
            say(caller, job, need["plan"])


def recipe_lines(config, paths: list, recipes: list, where: str, each: bool, batch: bool) -> list[str]:
    """What the run says of its recipes: one family's recipe in one line
    (with the auto mode's rule where it chose), or a batch's count of each
    mode, and with ``each`` every family's recipe under its input's name."""
    from msa_gpu.recipe import describe, mode_rule, summary

    rule = mode_rule(config, recipes)
    if not batch:
        return [f"recipe: {describe(recipes[0], where)}{rule}"]
    lines = [f"recipes: {summary(recipes, where)}{rule}" + ("" if each else "; --explain says each family's")]
    if each:
        lines += [f"{Path(str(p)).name}: {describe(r)}" for p, r in zip(paths, recipes)]
    return lines


def stage_plan_of(config, planned: list, fmt) -> StagePlan | None:
    """The memory plan of the families (``(sequences, recipe)`` pairs) that
    build N x N matrices (not those whose tree needs none: `Recipe.spanning`),
    where it is large enough to say (`PLAN_MIN_GB`). The matrices held at
    once follow `msa_gpu.pipeline.builders.stream_trees`' rule (all of them
    where they are kept; one for single linkage; else ``2 * tree_builders +
    1``): a copy of it, until the pipeline offers that count itself."""
    from msa_gpu.io import OutFormat

    if not planned:
        return None
    families = [s for s, _ in planned]
    with_matrix = [(s, r) for s, r in planned if config.keep_distances or not r.spanning]
    largest, recipe = max(with_matrix, key=lambda p: len(p[0]), default=(None, None))
    n_max = len(largest) if largest is not None else 0
    matrix = 8 * n_max * n_max
    if not with_matrix:
        at_once = 0
    elif config.keep_distances:
        at_once = len(families)
    elif recipe.tree == Tree.single:
        at_once = 1  # built as soon as its matrix is made, without a copy
    else:
        at_once = min(len(families), 2 * config.tree_builders(matrix) + 1)
    plan = stage_plan([(len(s), int(s.lengths.max())) for s in families], at_once, fmt is OutFormat.fasta, n_max)
    total = plan.distance_gb + plan.alignments_gb + plan.output_gb
    return plan if total >= PLAN_MIN_GB else None
