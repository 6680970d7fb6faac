"""``msagpu``'s command line (typer): ``align`` parses its options, which
become a `Job` (`job_of`: the same parse, for a served request) that the
runner runs (`msa_gpu.frontends.runner`); ``mafft`` is MAFFT's command line
(``msagpu-mafft``'s door; `mafft_args`); ``score``, ``pairwise``,
``distmat`` and ``serve`` live in `msa_gpu.frontends.tools`. Errors map to
exit codes through `msa_gpu.errors.exits` (2: bad input, 3: backend
unavailable, 4: out of memory or an output that cannot be written)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Annotated

import typer

from msa_gpu.settings.choices import BackendChoice, DistanceMethod, FragmentPlace, Mode, SeqType, TreeMethod
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.errors import InputError
from msa_gpu.frontends import tools
from msa_gpu.frontends.job import Caller, Inputs as JobInputs, Job, Outputs, Requests, place
from msa_gpu.frontends.options import (  # the commands' options
    AddOpt, Anchors, AutoFlag, BackendOpt, ColumnScores, DaskOpt, DistanceOpt, DistmatOut, EnsembleN,
    EnsembleOut, ExistingOpt, Explain, Force, Fragments, GapExtend, GapOpen, Ginsi, GpusOpt, InOpt, Inputs,
    KeepLength, KeptColumns, Linsi, Matrix, MaxIterate, MergeFlag, MinConfidence, ModeOpt, OutDir, OutFmt, Output,
    PerturbOpt, Quiet, ReplicateOpt, ResidueScores, Retree, SeedOpt, SeqTypeOpt, Threads, TreeIn,
    TreeOpt, TreeOut, Verbose,
)


def _run_here(options: SimpleNamespace | None, **_) -> None:
    """The app's result callback: ``align``'s options (what a command
    returns; the others return None) made into a `Job` and run for this
    process; a failed run's exit code."""
    if options is None:
        return
    from msa_gpu.frontends.runner import run

    warnings.showwarning = (lambda *a, **k: None) if options.quiet else tools.show_warning
    need: dict = {}
    with tools.exit_codes(lambda: need.get("plan", "")):
        code = run(_job(options, Caller.here()), need)
    if code:
        raise typer.Exit(code)


try:  # what the typer commands' parse raises for a command line it refuses (typer 0.29 on: its own click's)
    from typer._click.exceptions import ClickException as Refused
except ImportError:  # pragma: no cover - an older typer: click's own
    from click import ClickException as Refused


app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None, result_callback=_run_here,
                  help="msagpu: GPU-accelerated progressive multiple sequence alignment.")


def _version(value: bool) -> None:
    if value:
        from msa_gpu import __version__

        typer.echo(f"msagpu {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit")] = False,
) -> None:
    """msagpu: GPU-accelerated progressive multiple sequence alignment."""


@app.command()
def align(
    inputs: Inputs = None,
    infile: InOpt = None,
    output: Output = None,
    outdir: OutDir = None,
    outfmt: OutFmt = None,
    seqtype: SeqTypeOpt = SeqType.auto,
    backend: BackendOpt = BackendChoice.auto,
    tree: TreeOpt = TreeMethod.auto,
    distance: DistanceOpt = DistanceMethod.auto,
    tree_out: TreeOut = None,
    tree_in: TreeIn = None,
    threads: Threads = None,
    gap_open: GapOpen = None,
    gap_extend: GapExtend = None,
    matrix: Matrix = None,
    retree: Retree = 1,
    fragments: Fragments = FragmentPlace.tree,
    anchors: Anchors = True,
    mode: ModeOpt = Mode.auto,
    linsi: Linsi = False,
    ginsi: Ginsi = False,
    maxiterate: MaxIterate = None,
    dask: DaskOpt = None,
    gpus: GpusOpt = None,
    distmat_out: DistmatOut = None,
    column_scores: ColumnScores = None,
    add: AddOpt = None,
    existing: ExistingOpt = None,
    keeplength: KeepLength = False,
    merge: MergeFlag = False,
    force: Force = False,
    auto: AutoFlag = False,
    verbose: Verbose = False,
    explain: Explain = False,
    quiet: Quiet = False,
    ensemble: EnsembleN = None,
    perturb: PerturbOpt = None,
    seed: SeedOpt = None,
    replicate: ReplicateOpt = None,
    ensemble_out: EnsembleOut = None,
    min_confidence: MinConfidence = None,
    kept_columns: KeptColumns = None,
    residue_scores: ResidueScores = None,
) -> SimpleNamespace:
    """Align the sequences of INPUTS and write the alignment(s).

    One input writes to -o (or stdout). Several inputs, a folder or a list
    file need --outdir: all families are aligned in one run, their merges
    batched together.
    """
    return SimpleNamespace(**locals())  # (run by the app's result callback, `_run_here`)


def job_of(argv: list[str], caller: Caller | None = None) -> Job:
    """``msagpu align ARGS`` (``argv``: ``["align", *ARGS]``, as a client
    sends it) as a `Job` for ``caller`` (default `Caller.here`): parsed by
    the ``align`` command (a command line it refuses raises `Refused`, to
    be said by its ``show``, as typer says it), checked in the same order,
    a folder or a list of inputs found in the caller's folder."""
    return _job(options_of(argv), caller or Caller.here())


def options_of(argv: list[str]) -> SimpleNamespace:
    """``msagpu align ARGS``'s options, as the typer command gives them."""
    if argv[:1] != ["align"]:
        raise ValueError(f"not an msagpu align command line: {argv[:1]}")
    with _context("align", argv[1:]) as ctx:
        return ctx.command.invoke(ctx)


def quiet(argv: list[str]) -> bool:
    """Whether ``msagpu align ARGS`` keeps its warnings quiet (``--quiet``,
    by the command's own parse: ``-qv`` too); False where it does not parse
    (it fails with its usage error)."""
    try:
        return options_of(argv).quiet
    except Refused:
        return False


def mafft_args(argv: list[str]) -> list[str]:
    """``msagpu mafft ARGS``'s arguments (``argv``: ``["mafft", *ARGS]``) as
    its command hands them to ``msagpu-mafft`` (click drops a ``--``)."""
    with _context("mafft", argv[1:]) as ctx:
        return list(ctx.args)


def _context(name: str, args: list[str]):
    """The click context of ``msagpu NAME ARGS``'s command, ``args`` parsed."""
    group = typer.main.get_command(app)
    parent = group.make_context("msagpu", [name])
    return group.commands[name].make_context(name, list(args), parent=parent)


def _job(o: SimpleNamespace, caller: Caller) -> Job:
    """``align``'s options as a `Job` for ``caller``, or the `InputError` of
    the first that does not fit the others."""
    from msa_gpu.io import format_for

    inputs = list(o.inputs or []) + list(o.infile or [])
    side = (o.replicate, o.ensemble_out, o.min_confidence, o.kept_columns, o.residue_scores, o.perturb, o.seed)
    if (o.add is not None or o.existing is not None) and (o.ensemble is not None or any(x is not None for x in side)):
        raise InputError("--ensemble and its options do not go with --add/--existing")
    if o.merge:
        return _merge_job(o, inputs, side)
    if o.add is not None or o.existing is not None:
        if o.add is None or o.existing is None or inputs:
            raise InputError("--add NEW.fa needs --existing ALN.fa (and no other input)")
        return Job("msagpu", JobInputs((str(o.add),), o.seqtype, existing=str(o.existing)),
                   Requests(config_for=lambda st: AlignerConfig(seqtype=st, backend=o.backend, threads=o.threads),
                            keeplength=o.keeplength, voice="quiet" if o.quiet else "plans"),
                   Outputs(o.output, format_for(o.output, o.outfmt)))
    return _align_job(o, inputs, side, caller)


def _merge_job(o: SimpleNamespace, inputs: list[str], side: tuple) -> Job:
    """``msagpu align --merge A.fa B.fa ...`` as a `Job` (`MergeInputs`)."""
    from msa_gpu.frontends.job import MergeInputs
    from msa_gpu.io import format_for

    if o.add is not None or o.existing is not None or o.outdir is not None or o.ensemble is not None or any(
            x is not None for x in side):
        raise InputError("--merge takes its alignments as INPUTS and writes one alignment (-o): drop --add, "
                         "--existing, --outdir and the --ensemble options")
    if len(inputs) < 2:
        raise InputError("--merge needs at least two alignments (files) as INPUTS")
    config = AlignerConfig(seqtype=o.seqtype, backend=o.backend, threads=o.threads,
                           mode=Mode.accurate if (o.linsi or o.ginsi) else o.mode)
    return Job("msagpu", JobInputs((), o.seqtype, merge=MergeInputs(tuple(map(str, inputs)))),
               Requests(config, voice="quiet" if o.quiet else "plans"),
               Outputs(o.output, format_for(o.output, o.outfmt)))


def _align_job(o: SimpleNamespace, inputs: list[str], side: tuple, caller: Caller) -> Job:
    """``msagpu align``'s options as a `Job`, or the `InputError` of the
    first that does not fit the others; a folder or a list of inputs is
    expanded in the caller's folder, and the files it skips said on its
    stderr."""
    from msa_gpu.io import alignable_inputs, format_for
    if o.keeplength:
        raise InputError("--keeplength goes with --add and --existing")
    if not inputs:
        raise InputError("no input: give a FASTA file (or -i FILE)")
    paths = alignable_inputs([place(item, caller.cwd) for item in inputs],
                             None if o.quiet else lambda m: print(f"msagpu: {m}", file=caller.stderr))
    batch = o.outdir is not None
    if not batch and (len(paths) > 1 or paths != inputs):
        raise InputError("several inputs, a folder or a list file need --outdir DIR")
    if batch and (o.output is not None or o.tree_out is not None or o.distmat_out is not None or o.tree_in is not None
                  or o.column_scores is not None):
        raise InputError("--outdir cannot be combined with -o, --tree-out, --guidetree-in, --distmat-out or "
                         "--column-scores")
    elsewhere = bool(o.dask) or (o.gpus is not None and o.gpus.strip() != "1")
    if o.tree_in is not None and elsewhere:
        raise InputError("--guidetree-in aligns one family on one device: drop --dask and --gpus")
    fmt = format_for(o.output, o.outfmt)
    ens = None
    if o.ensemble is not None or any(x is not None for x in side):
        from msa_gpu.frontends.ensemble import EnsembleOptions, check

        if o.ensemble is None:
            raise InputError("--perturb, --seed, --replicate, --ensemble-out, --min-confidence, --kept-columns and "
                             "--residue-scores go with --ensemble N")
        ens = EnsembleOptions(o.ensemble, o.perturb or "tree,gaps", 0 if o.seed is None else o.seed, o.replicate,
                              o.ensemble_out, o.min_confidence, o.kept_columns, o.residue_scores)
        check(ens, batch, elsewhere, o.tree_in is not None, [o.output, o.column_scores, o.tree_out])
        if o.distmat_out is not None:
            raise InputError("--ensemble writes no distance matrix: drop --distmat-out")
    if o.linsi and o.ginsi:
        raise InputError("--localpair and --globalpair exclude each other")

    def config_for(_detected) -> AlignerConfig:
        # every accurate spelling takes library_mode auto, the pair-HMM posteriors: ProbCons' for protein (issue
        # 29), ProbConsRNA's for nucleotides (issue 57: bralibase3_dev 0.838 / 0.318 with them, 0.720 / 0.219
        # with global alignments)
        return AlignerConfig(seqtype=o.seqtype, backend=o.backend, tree=o.tree, distance=o.distance, matrix=o.matrix,
                             gap_open=o.gap_open, gap_extend=o.gap_extend, retree=o.retree, threads=o.threads,
                             mode=Mode.accurate if (o.linsi or o.ginsi) else o.mode, maxiterate=o.maxiterate,
                             keep_distances=o.distmat_out is not None, fragments=o.fragments.value,
                             anchor_cells=AlignerConfig.anchor_cells if o.anchors else 0)

    return Job("msagpu", JobInputs(tuple(paths), o.seqtype, batch, str(o.tree_in) if o.tree_in is not None else None),
               Requests(config_for=config_for, gpus=o.gpus, dask=o.dask, ensemble=ens,
                        voice="quiet" if o.quiet else "plans", explain=o.explain or o.verbose),
               Outputs(o.output, fmt, o.outdir, tree=o.tree_out, distances=o.distmat_out,
                       column_scores=o.column_scores))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def mafft(ctx: typer.Context) -> None:
    """MAFFT's command line: msagpu mafft [options] input > output (as msagpu-mafft)."""
    from msa_gpu.frontends.mafft import main

    main(list(ctx.args))


for command in (tools.score, tools.pairwise, tools.distmat, tools.serve):
    app.command()(command)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
