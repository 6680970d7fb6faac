"""The one job runner behind every front door: a `Job` is read, planned,
aligned (here, on several GPUs, or on Dask workers), ordered, rendered and
written (`msa_gpu.frontends.writer`, the one writer), and its end mapped to
an exit code by `msa_gpu.errors.exits` (the one map: 2 bad input, 3 backend
unavailable, 4 out of memory or an output that cannot be written, 1
internal error, 130 SIGINT, 143 SIGTERM, 141 a closed output pipe)."""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

from msa_gpu.settings.choices import BackendChoice, Library, Mode, SeqType, Tree
from msa_gpu.errors import EXIT_INPUT, InputError, exits
from msa_gpu.frontends.job import Caller, Job, placed
from msa_gpu.runtime.kernel_cache import compiling_line, cuda_kernels_cold, kernels_cold
from msa_gpu.runtime.memory_plan import StagePlan, memory_plan, stage_plan

#: A batch whose stage plan (or an accurate run whose library plan) holds at least this many GB gets it said.
PLAN_MIN_GB = 0.25


def say_warnings(program: str, quiet: bool, stderr=None) -> None:
    """Warnings said as one line ``PROGRAM: message`` on ``stderr`` (default:
    this process's, as it is when the warning comes; none where ``quiet``)."""
    warnings.showwarning = (lambda *a, **k: None) if quiet else \
        (lambda message, *a, **k: print(f"{program}: {message}", file=sys.stderr if stderr is None else stderr))


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
        read = _read(job, caller)
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
        _say_plans(job, aligner, config, paths, families, recipes, devices, need, caller)
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
            _say(caller, job, f"aligned {len(paths)} families on {backend} ({split})")
        if failed:
            _say(caller, job, f"error: {len(failed)} of {len(job.inputs.paths)} families failed; the others were written")
            return EXIT_INPUT
    return 0


def _say(caller: Caller, job: Job, line: str) -> None:
    print(f"{job.program}: {line}", file=caller.stderr)


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


def _read(job: Job, caller: Caller):
    """The job's families: ``(paths, families, failed)``, the paths read and
    those that failed (batch mode: said, the others aligned); None where
    MAFFT's reading found an empty input (said; nothing to write)."""
    from msa_gpu.io import read_sequences

    inputs, quiet = job.inputs, job.requests.voice == "quiet"
    if inputs.mafft_names:
        seqs = _read_mafft(job, caller)
        return None if seqs is None else ([inputs.paths[0]], [seqs], [])
    families, failed = [], []
    for p in inputs.paths:
        try:
            with warnings.catch_warnings():
                if quiet:
                    warnings.simplefilter("ignore")
                families.append(read_sequences(p, inputs.seqtype, stdin=caller.stdin))
        except InputError as exc:  # batch mode: report it, align the others
            if not inputs.batch:
                raise
            _say(caller, job, f"error: {exc}")
            failed.append(p)
    if not families:
        raise InputError("no input could be read")
    return [p for p in inputs.paths if p not in failed], families, failed


def _read_mafft(job: Job, caller: Caller):
    """One input read as MAFFT reads it: repeated names kept, ``*`` deleted
    (unless ``any_symbol``), nucleotides turned where asked; None for an
    empty input (said: MAFFT writes nothing and exits 0)."""
    from msa_gpu.io import make_sequences, parse_fasta, read_text

    inputs, quiet = job.inputs, job.requests.voice == "quiet"
    path = inputs.paths[0]
    text = read_text(path, caller.stdin)
    if not text.strip():  # as MAFFT: an empty input gives an empty output and exit 0
        if not quiet:
            _say(caller, job, f"{path}: no sequences; nothing written")
        return None
    names, raw = parse_fasta(text, str(path), unique_names=False)  # MAFFT keeps repeated names
    if len(set(names)) < len(names) and not quiet:
        _say(caller, job, "some sequence names are used more than once; kept as they are, as MAFFT does")
    raw = without_stops(names, raw, inputs.any_symbol, None if quiet else lambda line: _say(caller, job, line))
    seqs = make_sequences(names, raw, inputs.seqtype, inputs.any_symbol)
    return _adjust_direction(seqs, inputs.any_symbol) if inputs.adjust_direction else seqs


def without_stops(names: list[str], raw: list[bytes], any_symbol: bool = False, say=None) -> list[bytes]:
    """The sequences with every ``*`` deleted, as MAFFT 7.505 deletes them
    (protein and nucleotides alike, silently; ``any_symbol`` keeps them as
    residues), said by ``say(line)`` where given. A sequence of ``*`` alone,
    which MAFFT writes as a row of gaps, is an `InputError` naming it.

    >>> without_stops(["a", "b"], [b"MKV*LAW*", b"MKVLAW"])
    [b'MKVLAW', b'MKVLAW']
    >>> without_stops(["a"], [b"MKV*"], any_symbol=True)
    [b'MKV*']
    """
    if any_symbol or not any(b"*" in r for r in raw):
        return raw
    kept = [r.replace(b"*", b"") for r in raw]
    for name, r in zip(names, kept):
        if not r.strip():
            raise InputError(f"sequence {name!r} has no residues besides '*' (MAFFT deletes '*' and would write it "
                             "as a row of gaps)")
    if say is not None:
        count = sum(b"*" in r for r in raw)
        say(f"'*' deleted from {count} sequence{'s' if count > 1 else ''}, as MAFFT deletes it (--anysymbol keeps it)")
    return kept


def _adjust_direction(seqs, any_symbol: bool):
    """The sequences with those that read better reverse-complemented turned
    and renamed ``_R_<name>`` (MAFFT's --adjustdirection); protein input as is."""
    from msa_gpu.alphabet import encode
    from msa_gpu.distances import orientations, reverse_complement
    from msa_gpu.types import Sequences

    if seqs.seqtype is SeqType.protein:
        return seqs
    turn = orientations(seqs)
    if not turn.any():
        return seqs
    names = tuple(f"_R_{n}" if t else n for n, t in zip(seqs.names, turn))
    raw = tuple(reverse_complement(r) if t else r for r, t in zip(seqs.raw, turn))
    # (encoded again, not re-read: the input's warnings were said once already)
    return Sequences(names, raw, tuple(encode(names, raw, seqs.alphabet, any_symbol)), seqs.seqtype, seqs.alphabet)


def _say_plans(job: Job, aligner, config, paths, families, recipes, devices, need: dict, caller: Caller) -> None:
    """What the run says before the work, in its voice: ``strategy`` and
    ``recipe`` the recipe line; ``plans`` the recipe lines (`recipe_lines`),
    a cold kernel cache, the large path's and a batch's memory plans, and
    an accurate run's library plan (kept in ``need`` whatever the voice, for
    an out-of-memory exit)."""
    from msa_gpu.recipe import describe

    req = job.requests
    if req.voice in ("strategy", "recipe"):  # as MAFFT names its strategy; FAMSA's and Clustal Omega's -v
        where = aligner.backend_said(recipes)
        _say(caller, job, f"{'recipe: ' if req.voice == 'recipe' else ''}{describe(recipes[0], where)}")
    gpus = len(devices) > 1
    plans = req.voice == "plans"
    if plans:
        where = "Dask workers" if req.dask else f"{len(devices)} GPUs" if gpus else aligner.backend_said(recipes)
        for line in recipe_lines(config, paths, recipes, where, req.explain, job.inputs.batch):
            _say(caller, job, line)
        cpu_cold, cuda_cold = kernels_cold(), config.backend is not BackendChoice.cpu and cuda_kernels_cold()
        if cpu_cold or cuda_cold:
            _say(caller, job, compiling_line(cpu_cold, cuda_cold))
        for s, r in zip(families, recipes):
            if r.mode == Mode.large:
                plan = memory_plan(len(s), int(s.lengths.sum()), int(s.lengths.max()))
                _say(caller, job, f"{len(s):,} sequences: {plan.line()}")
        staged = stage_plan_of(config, [(s, r) for s, r in zip(families, recipes) if r.mode != Mode.large],
                               job.outputs.fmt)
        if staged is not None:
            _say(caller, job, staged.line())
    posterior = [(s, r) for s, r in zip(families, recipes) if r.library == Library.posterior]
    if posterior:  # accurate mode's library: said where it may hold much (issue 43), and by an out-of-memory exit
        from msa_gpu.consistency import library_memory
        from msa_gpu.pipeline.subtrees import plan_pieces

        gpu = not req.dask and (gpus or aligner.choose_backend(recipes).name != "cpu")
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
            _say(caller, job, need["plan"])


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
    once follow `Aligner._stream_trees`' rule (all of them where they are
    kept; one for single linkage; else ``2 * tree_builders + 1``): a copy of
    it, until the aligner offers that count itself."""
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


def _ensemble(job: Job, seqs, config, reporter, caller: Caller) -> None:
    """``--ensemble N``: align the replicates, write the chosen one and
    every output asked for, and say the recipe (before the work), then the
    dispersion and the replicate written."""
    from msa_gpu.workflows.ensemble import align_ensemble, parse_perturb, trim
    from msa_gpu.frontends.writer import write_ensemble
    from msa_gpu.recipe import describe, mode_rule

    options, quiet = job.requests.ensemble, job.requests.voice == "quiet"

    def said(recipes, where):  # the recipe line a run without --ensemble says, before the work
        _say(caller, job, f"recipe: {describe(recipes[0], where)}{mode_rule(config, recipes)}")

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
        _say(caller, job, f"ensemble of {len(ens.replicates)} (perturbed: {options.perturb}, seed {options.seed}): "
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
        _say(caller, job, f"added {len(new)} sequences to an alignment of {len(names)}")
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
        _say(caller, job, f"merged {len(groups)} alignments of {len(names)} sequences ({merged.scoring})")
    write_rows(out, out.alignment, names, rows, merged.seqtype, caller=caller)
    return 0
