"""``msagpu``'s command line (typer): ``align`` turns its options into a
`Job` and hands it to the runner (`msa_gpu.frontends.runner`); ``mafft``
is MAFFT's command line; ``score``, ``pairwise``, ``distmat`` and ``serve``
live in `msa_gpu.frontends.tools`. Errors map to exit codes through
`msa_gpu.errors.exits` (2: bad input, 3: backend unavailable, 4: out of
memory or an output that cannot be written)."""

from __future__ import annotations

import warnings
from typing import Annotated

import typer

from msa_gpu.choices import BackendChoice, DistanceMethod, FragmentPlace, Mode, SeqType, TreeMethod
from msa_gpu.config import AlignerConfig
from msa_gpu.errors import InputError
from msa_gpu.frontends import tools
from msa_gpu.frontends.job import Inputs as JobInputs, Job, Outputs, Requests
from msa_gpu.frontends.options import (  # the commands' options
    AddOpt, Anchors, AutoFlag, BackendOpt, ColumnScores, DaskOpt, DistanceOpt, DistmatOut, EnsembleN,
    EnsembleOut, ExistingOpt, Explain, Force, Fragments, GapExtend, GapOpen, Ginsi, GpusOpt, InOpt, Inputs,
    KeepLength, KeptColumns, Linsi, Matrix, MaxIterate, MergeFlag, MinConfidence, ModeOpt, OutDir, OutFmt, Output,
    PerturbOpt, Quiet, ReplicateOpt, ResidueScores, Retree, SeedOpt, SeqTypeOpt, Threads, TreeIn,
    TreeOpt, TreeOut, Verbose,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
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
) -> None:
    """Align the sequences of INPUTS and write the alignment(s).

    One input writes to -o (or stdout). Several inputs, a folder or a list
    file need --outdir: all families are aligned in one run, their merges
    batched together.
    """
    from msa_gpu.frontends.runner import run
    from msa_gpu.io import format_for

    warnings.showwarning = (lambda *a, **k: None) if quiet else tools.show_warning
    need: dict = {}
    with tools.exit_codes(lambda: need.get("plan", "")):
        inputs = list(inputs or []) + list(infile or [])
        side = (replicate, ensemble_out, min_confidence, kept_columns, residue_scores, perturb, seed)
        if (add is not None or existing is not None) and (ensemble is not None or any(x is not None for x in side)):
            raise InputError("--ensemble and its options do not go with --add/--existing")
        if merge:
            job = _merge_job(inputs, output, outfmt, seqtype, backend, threads, mode, linsi or ginsi, add, existing,
                             outdir, ensemble, side, quiet)
        elif add is not None or existing is not None:
            if add is None or existing is None or inputs:
                raise InputError("--add NEW.fa needs --existing ALN.fa (and no other input)")
            job = Job("msagpu", JobInputs((str(add),), seqtype, existing=str(existing)),
                      Requests(config_for=lambda st: AlignerConfig(seqtype=st, backend=backend, threads=threads),
                               keeplength=keeplength, voice="quiet" if quiet else "plans"),
                      Outputs(output, format_for(output, outfmt)))
        else:
            job = _align_job(inputs, output, outdir, outfmt, seqtype, backend, tree, distance, tree_out, tree_in,
                             threads, gap_open, gap_extend, matrix, retree, fragments, anchors, mode, linsi, ginsi,
                             maxiterate, dask, gpus, distmat_out, column_scores, keeplength, quiet, explain or verbose,
                             ensemble, side)
        code = run(job, need)
    if code:
        raise typer.Exit(code)


def _merge_job(inputs, output, outfmt, seqtype, backend, threads, mode, accurate, add, existing, outdir, ensemble,
               side, quiet) -> Job:
    """``msagpu align --merge A.fa B.fa ...`` as a `Job` (`MergeInputs`)."""
    from msa_gpu.frontends.job import MergeInputs
    from msa_gpu.io import format_for

    if add is not None or existing is not None or outdir is not None or ensemble is not None or any(
            x is not None for x in side):
        raise InputError("--merge takes its alignments as INPUTS and writes one alignment (-o): drop --add, "
                         "--existing, --outdir and the --ensemble options")
    if len(inputs) < 2:
        raise InputError("--merge needs at least two alignments (files) as INPUTS")
    config = AlignerConfig(seqtype=seqtype, backend=backend, threads=threads,
                           mode=Mode.accurate if accurate else mode)
    return Job("msagpu", JobInputs((), seqtype, merge=MergeInputs(tuple(map(str, inputs)))),
               Requests(config, voice="quiet" if quiet else "plans"), Outputs(output, format_for(output, outfmt)))


def _align_job(inputs, output, outdir, outfmt, seqtype, backend, tree, distance, tree_out, tree_in, threads, gap_open,
               gap_extend, matrix, retree, fragments, anchors, mode, linsi, ginsi, maxiterate, dask, gpus, distmat_out,
               column_scores, keeplength, quiet, explain, ensemble, side) -> Job:
    """``msagpu align``'s options as a `Job`, or the `InputError` of the first
    that does not fit the others."""
    from msa_gpu.io import alignable_inputs, format_for
    if keeplength:
        raise InputError("--keeplength goes with --add and --existing")
    if not inputs:
        raise InputError("no input: give a FASTA file (or -i FILE)")
    paths = alignable_inputs(inputs, None if quiet else lambda m: typer.echo(f"msagpu: {m}", err=True))
    batch = outdir is not None
    if not batch and (len(paths) > 1 or paths != inputs):
        raise InputError("several inputs, a folder or a list file need --outdir DIR")
    if batch and (output is not None or tree_out is not None or distmat_out is not None or tree_in is not None
                  or column_scores is not None):
        raise InputError("--outdir cannot be combined with -o, --tree-out, --guidetree-in, --distmat-out or "
                         "--column-scores")
    elsewhere = bool(dask) or (gpus is not None and gpus.strip() != "1")
    if tree_in is not None and elsewhere:
        raise InputError("--guidetree-in aligns one family on one device: drop --dask and --gpus")
    fmt = format_for(output, outfmt)
    ens = None
    replicate, ensemble_out, min_confidence, kept_columns, residue_scores, perturb, seed = side
    if ensemble is not None or any(x is not None for x in side):
        from msa_gpu.frontends.ensemble import EnsembleOptions, check

        if ensemble is None:
            raise InputError("--perturb, --seed, --replicate, --ensemble-out, --min-confidence, --kept-columns and "
                             "--residue-scores go with --ensemble N")
        ens = EnsembleOptions(ensemble, perturb or "tree,gaps", 0 if seed is None else seed, replicate,
                              ensemble_out, min_confidence, kept_columns, residue_scores)
        check(ens, batch, elsewhere, tree_in is not None, [output, column_scores, tree_out])
        if distmat_out is not None:
            raise InputError("--ensemble writes no distance matrix: drop --distmat-out")
    if linsi and ginsi:
        raise InputError("--localpair and --globalpair exclude each other")

    def config_for(_detected) -> AlignerConfig:
        # every accurate spelling takes library_mode auto, the pair-HMM posteriors: ProbCons' for protein (issue
        # 29), ProbConsRNA's for nucleotides (issue 57: bralibase3_dev 0.838 / 0.318 with them, 0.720 / 0.219
        # with global alignments)
        return AlignerConfig(seqtype=seqtype, backend=backend, tree=tree, distance=distance, matrix=matrix,
                             gap_open=gap_open, gap_extend=gap_extend, retree=retree, threads=threads,
                             mode=Mode.accurate if (linsi or ginsi) else mode, maxiterate=maxiterate,
                             keep_distances=distmat_out is not None, fragments=fragments.value,
                             anchor_cells=AlignerConfig.anchor_cells if anchors else 0)

    return Job("msagpu", JobInputs(tuple(paths), seqtype, batch, str(tree_in) if tree_in is not None else None),
               Requests(config_for=config_for, gpus=gpus, dask=dask, ensemble=ens, voice="quiet" if quiet else "plans",
                        explain=explain),
               Outputs(output, fmt, outdir, tree=tree_out, distances=distmat_out, column_scores=column_scores))


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
