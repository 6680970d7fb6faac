"""The one job runner behind every front door: a `Job` is read
(`msa_gpu.frontends.reading`), planned and its plans said
(`msa_gpu.frontends.plans`), aligned (here, on several GPUs, or on Dask
workers), ordered, rendered and written (`msa_gpu.frontends.writer`, the one writer), and its end mapped to
an exit code by `msa_gpu.errors.exits` (the one map: 2 bad input, 3 backend
unavailable, 4 out of memory or an output that cannot be written, 1
internal error, 130 SIGINT, 143 SIGTERM, 141 a closed output pipe)."""

from __future__ import annotations

import contextlib
import sys
import warnings

from msa_gpu.errors import EXIT_INPUT, InputError, exits
from msa_gpu.frontends.job import Caller, Job, placed, say
from msa_gpu.frontends.plans import recipe_lines, say_plans
from msa_gpu.frontends.reading import read_job
from msa_gpu.runtime.memory_plan import memory_plan
from msa_gpu.settings.choices import BackendChoice, SeqType


def say_warnings(program: str, quiet: bool, stderr=None) -> None:
    """Warnings said as one line ``PROGRAM: message`` on ``stderr`` (default:
    this process's, as it is when the warning comes; none where ``quiet``)."""
    warnings.showwarning = ((lambda *a, **k: None) if quiet else
                            (lambda message, *a, **k: print(f"{program}: {message}",
                                                            file=sys.stderr if stderr is None else stderr)))


def main(program: str, job_of, argv: list[str], caller: Caller | None = None, plan: bool = False,
         keep: tuple = ()) -> None:
    """End a front door: ``job_of(argv)`` run for ``caller`` (default
    `Caller.here`: this process); its exit code, or an error's or a
    signal's (`msa_gpu.errors.exits`, said on the caller's stderr; ``plan``:
    an out-of-memory exit says the run's memory plan, as ``msagpu align``'s
    does), as ``SystemExit``. ``keep``: errors passed on as they are (a
    command-line library's usage errors, said by its own rules)."""
    caller = caller or Caller.here()
    need: dict = {}
    with exits(program, (lambda: need.get("plan", "")) if plan else None, keep=keep, caller=caller):
        code = run(job_of(argv), need, caller=caller)
    raise SystemExit(code)


def run(job: Job, need: dict | None = None, caller: Caller | None = None) -> int:
    """Run ``job`` for ``caller`` (default `Caller.here`: this process):
    its exit code (0, or 2 where a batch's family failed and the others
    were written). The caller's relative paths are found in its folder
    (`placed`), its standard input read, its standard output and error
    written and its umask given to new files; nothing of the process is
    changed for it. ``need["plan"]``: the run's memory plan, once known (an
    out-of-memory exit says it)."""
    need = {} if need is None else need
    caller = caller or Caller.here()
    job = placed(job, caller.cwd)
    if job.inputs.existing is not None:
        return _add(job, caller)
    if job.inputs.merge is not None:
        return _merge(job, caller)
    out, req = job.outputs, job.requests
    quiet = req.voice == "quiet"
    extra = () if req.ensemble is None else (req.ensemble.ensemble_out, req.ensemble.kept_columns,
                                             req.ensemble.residue_scores)
    from msa_gpu.io import check_outputs, output_name

    check_outputs(*out.files(), *extra, outdir=out.outdir, force=out.force, refusal=out.refusal)  # before the work
    with contextlib.ExitStack() as stack:
        devices = _devices(req.gpus, req.config_of(SeqType.auto).backend if req.gpus else None, req.dask)
        pool = None
        if len(devices) > 1:  # forked now: before this process starts CUDA or numba's threads
            from msa_gpu.distributed import DevicePool

            pool = stack.enter_context(DevicePool(devices))
        read = read_job(job, caller)
        if read is None:
            return 0
        paths, families, failed = read
        if out.column_scores is not None and families[0].seqtype is not SeqType.protein and req.ensemble is None:
            raise InputError("--column-scores needs protein sequences (ProbCons' pair-HMM is a protein model)")
        largest = max(families, key=len)
        need["plan"] = memory_plan(len(largest), int(largest.lengths.sum()), int(largest.lengths.max())).line()
        batch = job.inputs.batch
        targets = [out.outdir / output_name(p, out.fmt) for p in paths] if batch else [out.alignment]
        if batch and len(set(targets)) != len(targets):
            raise InputError("two inputs would write the same output file name")
        config = req.config_of(families[0].seqtype)
        reporter = None
        if not quiet:
            from msa_gpu.runtime.progress import StageReporter

            reporter = StageReporter(caller.stderr, min_seconds=0.05)
        if req.ensemble is not None:
            _ensemble(job, families[0], config, reporter, caller)
            return 0
        from msa_gpu.aligner import Aligner

        given = None
        if job.inputs.guide_tree is not None:
            from msa_gpu.io import read_guide_tree

            given = [read_guide_tree(job.inputs.guide_tree, list(families[0].names), job.inputs.tree_format,
                                     caller.stdin)]
        aligner = Aligner(config, reporter=reporter, batch=caller.batch)
        recipes = aligner.plan(families, given)  # each family's choices, decided once, here
        say_plans(job, aligner, config, paths, families, recipes, devices, need, caller)
        if req.dask:
            from msa_gpu.distributed import align_many_dask

            results = align_many_dask(families, config, req.dask, config.threads, recipes)
        elif len(devices) > 1:
            from msa_gpu.distributed import align_many_gpus

            results = align_many_gpus(families, config, devices, recipes=recipes, pool=pool)
        else:
            results = aligner.align_many(families, guide_trees=given, recipes=recipes)
        timings, backend = results[0].timings, results[0].backend
        from msa_gpu.frontends.writer import write_results

        write_results(job, paths, families, results, targets, failed, caller)
        if batch and not quiet:
            split = ", ".join(f"{k.replace('_', ' ')} {v:g}" if k.startswith("refine_") else f"{k} {v:.2f} s"
                              for k, v in timings.items())  # refine_rounds/_accepted are counts
            say(caller, job, f"aligned {len(paths)} families on {backend} ({split})")
        if failed:
            say(caller, job, f"error: {len(failed)} of {len(job.inputs.paths)} families failed; the others were written")
            return EXIT_INPUT
    return 0


def _devices(gpus: str | None, backend, dask: str | None) -> list[int]:
    """The GPUs ``--gpus`` asks for (one when it is not given)."""
    if gpus is None or gpus.strip() == "1":
        return [0]
    if dask:
        raise InputError("--gpus and --dask exclude each other (Dask's GPU workers take one GPU each)")
    if backend is BackendChoice.cpu:
        raise InputError("--gpus needs the GPU backend (--backend auto or gpu)")
    from msa_gpu.distributed import parse_gpus, visible_gpus

    return parse_gpus(gpus, visible_gpus())


def _ensemble(job: Job, seqs, config, reporter, caller: Caller) -> None:
    """``--ensemble N``: align the replicates, write the chosen one and
    every output asked for, and say the recipe (before the work), then the
    dispersion and the replicate written."""
    from msa_gpu.workflows.ensemble import align_ensemble, parse_perturb, trim
    from msa_gpu.frontends.writer import write_ensemble

    options, quiet = job.requests.ensemble, job.requests.voice == "quiet"

    def said(recipes, where):  # the recipe line a run without --ensemble says, before the work
        say(caller, job, recipe_lines(config, [], recipes, where, each=False, batch=False)[0])

    ens = align_ensemble(seqs, config, options.replicates, parse_perturb(options.perturb), options.seed,
                         reporter, None if quiet else said).pick(options.replicate)
    rows, confidence, kept = ens.result.rows(), ens.confidence, None
    if options.min_confidence is not None:
        rows, kept = trim(rows, confidence, options.min_confidence)
        confidence = confidence[kept]
    write_ensemble(job, seqs, ens, rows, confidence, kept, caller)
    if not quiet:
        trimmed = (f"; {len(kept)} of {ens.result.alignment.n_cols} columns kept at confidence >= "
                   f"{options.min_confidence:g}" if kept is not None else "")
        say(caller, job, f"ensemble of {len(ens.replicates)} (perturbed: {options.perturb}, seed {options.seed}): "
                  f"dispersion {ens.dispersion:.4f}; wrote replicate {ens.chosen} ({ens.labels[ens.chosen]}), mean "
                  f"column confidence {ens.support.mean[ens.chosen]:.4f}{trimmed}")


def _add(job: Job, caller: Caller) -> int:
    """``--add NEW --existing ALN`` (MAFFT's ``--add NEW ALN``): NEW added to
    ALN, whose columns never change."""
    from msa_gpu.frontends.writer import write_rows
    from msa_gpu.io import check_outputs, read_aligned, read_new
    from msa_gpu.progressive import add_sequences

    inputs, out = job.inputs, job.outputs
    check_outputs(*out.files())
    names, rows = read_aligned(inputs.existing, caller.stdin)
    new = read_new(inputs.paths[0], rows, inputs.seqtype, inputs.any_symbol, caller.stdin)
    out_names, out_rows = add_sequences(names, rows, new, job.requests.config_of(new.seqtype),
                                        keeplength=job.requests.keeplength, any_symbol=inputs.any_symbol)
    if job.requests.voice == "plans":
        say(caller, job, f"added {len(new)} sequences to an alignment of {len(names)}")
    write_rows(out, out.alignment, out_names, out_rows, new.seqtype, caller=caller)
    return 0


def _merge(job: Job, caller: Caller) -> int:
    """Alignments merged, each one's columns kept (`MergeInputs`): read,
    merged (`msa_gpu.workflows.merging`), written in the order the front door reads
    them (a table's rows in its input file's order; ``--seed``: the seeds'
    rows first, named ``_seed_NAME``, as MAFFT writes them)."""
    from msa_gpu.frontends.writer import write_rows
    from msa_gpu.io import check_outputs, parse_fasta, read_aligned, read_merge_table, read_text
    from msa_gpu.workflows.merging import merge_alignments

    spec, out = job.inputs.merge, job.outputs
    check_outputs(*out.files())
    groups = [read_aligned(path, caller.stdin) for path in spec.alignments]
    order = None
    if spec.table is not None:  # MAFFT: sub-MSAs (and other sequences) concatenated in one file, a table of them
        names, rows = read_aligned(job.inputs.paths[0], caller.stdin)
        lines = read_merge_table(spec.table, len(names), caller.stdin)
        listed = {i for line in lines for i in line}
        singles = [[i] for i in range(len(names)) if i not in listed]
        order = [i for line in lines + singles for i in line]
        # (an unlisted row is an alignment of one: the merge drops the columns it leaves empty, its gaps)
        groups += [([names[i] for i in line], [rows[i] for i in line]) for line in lines + singles]
    if spec.sequences is not None:
        names, raw = parse_fasta(read_text(spec.sequences, caller.stdin), str(spec.sequences))
        singles = [([n], [r]) for n, r in zip(names, raw)]
        groups = singles + groups if spec.sequences_first else groups + singles
    config = job.requests.config_of(job.inputs.seqtype)
    merged = merge_alignments(groups, config, seqtype=job.inputs.seqtype, any_symbol=job.inputs.any_symbol)
    names, rows = merged.names, merged.rows
    if order is not None:
        back = sorted(range(len(order)), key=order.__getitem__)
        names, rows = [names[k] for k in back], [rows[k] for k in back]
    if spec.seed:
        seeds = sum(len(g[0]) for g in groups[:len(spec.alignments)])
        names = [f"_seed_{n}" for n in names[:seeds]] + names[seeds:]
    if job.requests.voice == "plans":
        say(caller, job, f"merged {len(groups)} alignments of {len(names)} sequences ({merged.scoring})")
    write_rows(out, out.alignment, names, rows, merged.seqtype, caller=caller)
    return 0
