"""The command line: a thin layer that sets up, delegates and maps errors to
exit codes (2: bad input, 3: backend unavailable, 4: out of memory or an
output that cannot be written)."""

from __future__ import annotations

import json
import warnings
import contextlib
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from msa_gpu.choices import BackendChoice, DistanceMethod, FragmentPlace, Mode, PairMode, SeqType, TreeMethod
from msa_gpu.frontends.options import (  # the commands' options
    AddOpt, Anchors, AutoFlag, BackendOpt, ColumnScores, DaskOpt, DistanceOpt, DistmatOut, EnsembleN,
    EnsembleOut, ExistingOpt, Explain, Force, Fragments, GapExtend, GapOpen, Ginsi, GpusOpt, InOpt, Inputs,
    KeepLength, KeptColumns, Linsi, Matrix, MaxIterate, MinConfidence, ModeOpt, OutDir, OutFmt, Output,
    PairModeOpt, PerturbOpt, Quiet, ReplicateOpt, ResidueScores, Retree, SeedOpt, SeqTypeOpt, Threads, TreeIn,
    TreeOpt, TreeOut, Verbose,
)
from msa_gpu.config import AlignerConfig
from msa_gpu.kernel_cache import compiling_line, cuda_kernels_cold, kernels_cold
from msa_gpu.errors import EXIT_INPUT, InputError, exits
from msa_gpu.plan import StagePlan, memory_plan, stage_plan

if TYPE_CHECKING:  # imported at first use (`_load`): --help and --version need no numpy or Biopython
    from msa_gpu.io import (
        OutFormat,
        alignable_inputs,
        check_outputs,
        format_for,
        output_name,
        read_aligned,
        read_core,
        read_guide_tree,
        read_sequences,
        render_alignment,
        write_output,
        writing,
    )

#: The names of `msa_gpu.io` that `_load` brings in: the same as an import at the top.
_IO_NAMES = ("OutFormat", "alignable_inputs", "check_outputs", "format_for", "output_name", "read_aligned",
             "read_core", "read_guide_tree", "read_sequences", "render_alignment", "write_output", "writing")


def _load() -> None:
    """Import `msa_gpu.io` (numpy and Biopython come with it) and make its
    names this module's, as an import at the top would: a command calls this
    first, so that ``--help`` and ``--version`` import none of it (the option
    enums and `AlignerConfig` are light: `msa_gpu.choices`). A name already
    set (a test's monkeypatch) is kept."""
    names = globals()
    if all(name in names for name in _IO_NAMES):
        return
    from msa_gpu import io

    for name in _IO_NAMES:
        names.setdefault(name, getattr(io, name))


def __getattr__(name: str):
    """``msa_gpu.frontends.msagpu.<name>`` of a name `_load` brings in (imports it first)."""
    if name in _IO_NAMES:
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")



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


@contextmanager
def _exit_codes(plan=None):
    """Map errors and signals to one-line messages and exit codes, as every
    front door does (`msa_gpu.errors.exits`: 2 bad input, 3 backend
    unavailable, 4 out of memory or an output that cannot be written, 1
    internal error, 130 SIGINT, 143 SIGTERM, 141 a closed output pipe);
    click's own exits pass."""
    with exits("msagpu", plan, keep=(typer.Exit, typer.Abort)):
        yield


def _show_warning(message, category, filename, lineno, file=None, line=None):
    typer.echo(f"msagpu: {message}", err=True)


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
    _load()
    from msa_gpu.aligner import Aligner

    warnings.showwarning = (lambda *a, **k: None) if quiet else _show_warning
    need: dict = {}
    with _exit_codes(lambda: need.get("plan", "")), contextlib.ExitStack() as stack:
        inputs = list(inputs or []) + list(infile or [])
        side = (replicate, ensemble_out, min_confidence, kept_columns, residue_scores, perturb, seed)
        if (add is not None or existing is not None) and (ensemble is not None or any(x is not None for x in side)):
            raise InputError("--ensemble and its options do not go with --add/--existing")
        if add is not None or existing is not None:
            _add(add, existing, inputs, output, outfmt, seqtype, backend, keeplength, threads, quiet)
            return
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
        if tree_in is not None and (dask or (gpus is not None and gpus.strip() != "1")):
            raise InputError("--guidetree-in aligns one family on one device: drop --dask and --gpus")
        fmt = format_for(output, outfmt)
        ens = None
        if ensemble is not None or any(x is not None for x in side):
            from msa_gpu.frontends.ensemble import EnsembleOptions, check

            if ensemble is None:
                raise InputError("--perturb, --seed, --replicate, --ensemble-out, --min-confidence, --kept-columns and "
                                 "--residue-scores go with --ensemble N")
            ens = EnsembleOptions(ensemble, perturb or "tree,gaps", 0 if seed is None else seed, replicate,
                                  ensemble_out, min_confidence, kept_columns, residue_scores)
            check(ens, batch, bool(dask) or (gpus is not None and gpus.strip() != "1"), tree_in is not None,
                  [output, column_scores, tree_out])
            if distmat_out is not None:
                raise InputError("--ensemble writes no distance matrix: drop --distmat-out")
        check_outputs(output, tree_out, distmat_out, column_scores, ensemble_out, kept_columns, residue_scores,
                      outdir=outdir)  # before the work, not after it
        devices = _devices(gpus, backend, dask)
        pool = None
        if len(devices) > 1:  # forked now: before this process starts CUDA or numba's threads
            from msa_gpu.distributed import DevicePool

            pool = stack.enter_context(DevicePool(devices))
        families, failed = [], []
        n_inputs = len(paths)
        for p in list(paths):
            try:
                families.append(read_sequences(p, seqtype))
            except InputError as exc:  # batch mode: report it, align the others
                if not batch:
                    raise
                typer.echo(f"msagpu: error: {exc}", err=True)
                failed.append(p)
        paths = [p for p in paths if p not in failed]
        if not families:
            raise InputError("no input could be read")
        if column_scores is not None and families[0].seqtype is not SeqType.protein and ens is None:
            raise InputError("--column-scores needs protein sequences (ProbCons' pair-HMM is a protein model)")
        largest = max(families, key=len)
        need["plan"] = memory_plan(len(largest), int(largest.lengths.sum()), int(largest.lengths.max())).line()
        targets = [outdir / output_name(p, fmt) for p in paths] if batch else [output]
        if batch and len(set(targets)) != len(targets):
            raise InputError("two inputs would write the same output file name")
        if linsi and ginsi:
            raise InputError("--localpair and --globalpair exclude each other")
        # every accurate spelling takes library_mode auto, the pair-HMM posteriors: ProbCons' for protein (issue
        # 29), ProbConsRNA's for nucleotides (issue 57: bralibase3_dev 0.838 / 0.318 with them, 0.720 / 0.219
        # with global alignments)
        config = AlignerConfig(seqtype=seqtype, backend=backend, tree=tree, distance=distance, matrix=matrix,
                               gap_open=gap_open, gap_extend=gap_extend, retree=retree, threads=threads,
                               mode=Mode.accurate if (linsi or ginsi) else mode, maxiterate=maxiterate,
                               keep_distances=distmat_out is not None, fragments=fragments.value,
                               anchor_cells=AlignerConfig.anchor_cells if anchors else 0)
        from msa_gpu.progress import StageReporter

        if ens is not None:
            from msa_gpu.frontends.ensemble import run as run_ensemble

            run_ensemble(families[0], config, ens, output, fmt, column_scores, tree_out,
                         None if quiet else StageReporter(min_seconds=0.05),
                         None if quiet else lambda line: typer.echo(f"msagpu: {line}", err=True))
            return
        given = [read_guide_tree(tree_in, families[0].names)] if tree_in is not None else None
        aligner = Aligner(config, reporter=None if quiet else StageReporter(min_seconds=0.05))
        recipes = aligner.plan(families, given)  # each family's choices, decided once, here
        if not quiet:
            where = ("Dask workers" if dask else f"{len(devices)} GPUs" if len(devices) > 1
                     else aligner.backend_said(recipes))
            for line in _recipe_lines(config, paths, recipes, where, explain or verbose, batch):
                typer.echo(f"msagpu: {line}", err=True)
            cpu_cold, cuda_cold = kernels_cold(), backend is not BackendChoice.cpu and cuda_kernels_cold()
            if cpu_cold or cuda_cold:
                typer.echo(f"msagpu: {compiling_line(cpu_cold, cuda_cold)}", err=True)
            for s, r in zip(families, recipes):
                if r.mode == "large":
                    plan = memory_plan(len(s), int(s.lengths.sum()), int(s.lengths.max()))
                    typer.echo(f"msagpu: {len(s):,} sequences: {plan.line()}", err=True)
            staged = _stage_plan(config, [(s, r) for s, r in zip(families, recipes) if r.mode != "large"], fmt)
            if staged is not None:
                typer.echo(f"msagpu: {staged.line()}", err=True)
        posterior = [(s, r) for s, r in zip(families, recipes) if r.library == "posterior"]
        if posterior:  # accurate mode's library: said where it may hold much (issue 43), and by an out-of-memory exit
            from msa_gpu.consistency import library_memory
            from msa_gpu.subtrees import plan_pieces

            gpu = not dask and (len(devices) > 1 or aligner.choose_backend(recipes).name != "cpu")
            if gpu:  # the device's plan takes no host threads: numba (0.3-0.9 s to import) stays unloaded
                host_threads = 1
            else:
                import numba  # (the CPU library's host threads are numba's count)

                host_threads = threads or numba.get_num_threads()
            # (accurate mode in subtrees: pieces of its longest sequences stand in for the subtrees, whose
            # libraries are built in groups as the families' are)
            lib = library_memory([p for s, r in posterior for p in (plan_pieces(s, r.subtrees) if r.subtrees else [s])],
                                 gpu, host_threads)
            need["plan"] = lib.line(gpu)  # (not the large path's plan of the largest family: issue 58 saw 0.0 GB)
            if not quiet and (lib.device_gb if gpu else lib.host_gb) >= PLAN_MIN_GB:
                typer.echo(f"msagpu: {need['plan']}", err=True)
        if dask:
            from msa_gpu.distributed import align_many_dask

            results = align_many_dask(families, config, dask, threads, recipes)
        elif len(devices) > 1:
            from msa_gpu.distributed import align_many_gpus

            results = align_many_gpus(families, config, devices, recipes=recipes, pool=pool)
        else:
            results = aligner.align_many(families, guide_trees=given, recipes=recipes)
        run_timings, run_backend = results[0].timings, results[0].backend
        from msa_gpu.frontends.outputs import write_results

        write_results(paths, families, results, targets, fmt, batch, outdir, failed, column_scores, tree_out,
                      distmat_out)
        if batch and not quiet:
            split = ", ".join(f"{k.replace('_', ' ')} {v:g}" if k.startswith("refine_") else f"{k} {v:.2f} s"
                              for k, v in run_timings.items())  # refine_rounds/_accepted are counts
            typer.echo(f"msagpu: aligned {len(paths)} families on {run_backend} ({split})", err=True)
        if failed:
            typer.echo(f"msagpu: error: {len(failed)} of {n_inputs} families failed; the others were written", err=True)
            raise typer.Exit(EXIT_INPUT)


#: A batch whose stage plan holds at least this many GB gets it said on stderr.
PLAN_MIN_GB = 0.25


def _stage_plan(config: AlignerConfig, planned: list, fmt) -> StagePlan | None:
    """The memory plan of the families (``(sequences, recipe)`` pairs) that
    build N x N matrices (not those whose tree needs none: `Recipe.spanning`),
    where it is large enough to say (`PLAN_MIN_GB`)."""
    if not planned:
        return None
    _load()
    families = [s for s, _ in planned]
    with_matrix = [(s, r) for s, r in planned if config.keep_distances or not r.spanning]
    largest, recipe = max(with_matrix, key=lambda p: len(p[0]), default=(None, None))
    n_max = len(largest) if largest is not None else 0
    matrix = 8 * n_max * n_max
    if not with_matrix:
        at_once = 0
    elif config.keep_distances:
        at_once = len(families)
    elif recipe.tree == "single":
        at_once = 1  # built as soon as its matrix is made, without a copy
    else:
        at_once = min(len(families), 2 * config.tree_builders(matrix) + 1)
    plan = stage_plan([(len(s), int(s.lengths.max())) for s in families], at_once, fmt is OutFormat.fasta, n_max)
    total = plan.distance_gb + plan.alignments_gb + plan.output_gb
    return plan if total >= PLAN_MIN_GB else None


def _devices(gpus: str | None, backend: BackendChoice, dask: str | None) -> list[int]:
    """The GPUs ``--gpus`` asks for (one when it is not given)."""
    if gpus is None or gpus.strip() == "1":
        return [0]
    if dask:
        raise InputError("--gpus and --dask exclude each other (Dask's GPU workers take one GPU each)")
    if backend is BackendChoice.cpu:
        raise InputError("--gpus needs the GPU backend (--backend auto or gpu)")
    from msa_gpu.distributed import parse_gpus, visible_gpus

    return parse_gpus(gpus, visible_gpus())


def _add(add, existing, inputs, output, outfmt, seqtype, backend, keeplength, threads, quiet) -> None:
    """``--add NEW --existing ALN``: NEW added to ALN, whose columns never change."""
    from msa_gpu.io import read_new
    from msa_gpu.progressive import add_sequences

    if add is None or existing is None or inputs:
        raise InputError("--add NEW.fa needs --existing ALN.fa (and no other input)")
    fmt = format_for(output, outfmt)
    check_outputs(output)
    names, rows = read_aligned(existing)
    new = read_new(add, rows, seqtype)
    config = AlignerConfig(seqtype=new.seqtype, backend=backend, threads=threads)
    out_names, out_rows = add_sequences(names, rows, new, config, keeplength=keeplength)
    if not quiet:
        typer.echo(f"msagpu: added {len(new)} sequences to an alignment of {len(names)}", err=True)
    text = render_alignment(out_names, out_rows, fmt, new.seqtype)
    write_output(output, lambda h: h.write(text))


def _recipe_lines(config: AlignerConfig, paths: list, recipes: list, where: str, each: bool,
                  batch: bool) -> list[str]:
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


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def mafft(ctx: typer.Context) -> None:
    """MAFFT's command line: msagpu mafft [options] input > output (as msagpu-mafft)."""
    from msa_gpu.frontends.mafft import main

    main(list(ctx.args))


@app.command()
def score(
    test: Annotated[str, typer.Argument(help="Test alignment (any format msagpu writes)")],
    reference: Annotated[str, typer.Argument(help="Reference alignment (any format msagpu writes)")],
    core: Annotated[Optional[str], typer.Option("--core", help="Core mask: one line of 0/1")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Print SP and TC of TEST against REFERENCE."""
    _load()
    from msa_gpu.score import sp_tc

    with _exit_codes():
        tn, tr = _read_alignment(test)
        rn, rr = _read_alignment(reference)
        result = sp_tc(tn, tr, rn, rr, read_core(core) if core else None)
        text = json.dumps(result.as_dict()) + "\n" if as_json else f"SP {result.sp:.4f}\nTC {result.tc:.4f}\n"
        write_output(None, lambda h: h.write(text))


def _read_alignment(path) -> tuple[list[str], list[bytes]]:
    """`read_aligned`, refusing a file whose rows differ in length (unaligned
    sequences are not an alignment to score)."""
    names, rows = read_aligned(path)
    lengths = sorted({len(r) for r in rows})
    if len(lengths) > 1:
        raise InputError(f"{path}: not an alignment: its rows differ in length ({lengths[0]} to {lengths[-1]} "
                         "columns); align it first")
    return names, rows



def _pair_scoring(seqs, mode: str, matrix, gap_open, gap_extend):
    from msa_gpu.backend.pairwise import PairScoring, default_scoring

    base = default_scoring(seqs, mode)
    return PairScoring(base.mode, matrix or base.matrix,
                       base.gap_open if gap_open is None else gap_open,
                       base.gap_extend if gap_extend is None else gap_extend)


@app.command()
def pairwise(
    input: Annotated[str, typer.Argument(help="Unaligned FASTA ('-' for stdin, .gz allowed)")],
    output: Output = None,
    mode: PairModeOpt = PairMode.global_,
    matrix: Matrix = None,
    gap_open: GapOpen = None,
    gap_extend: GapExtend = None,
    traceback: Annotated[bool, typer.Option("--traceback", help="Add each alignment's CIGAR (M, I = A only, D = B only)")] = False,
    seqtype: SeqTypeOpt = SeqType.auto,
    backend: BackendOpt = BackendChoice.auto,
    threads: Threads = None,
    quiet: Quiet = False,
) -> None:
    """Align every pair of sequences; write one TSV row per pair (names, score,
    identity, aligned length, residue ranges, CIGAR with --traceback).

    Gaps default to 11/1 (BLOSUM62, protein) or 10/1 (NUC.4.4); a gap of
    length k costs open + (k-1)*extend.
    """
    _load()
    from msa_gpu.backend import set_threads
    from msa_gpu.backend.pairwise import all_pairs
    from msa_gpu.io import write_pairs_tsv

    warnings.showwarning = (lambda *a, **k: None) if quiet else _show_warning
    with _exit_codes():
        set_threads(threads)
        check_outputs(output)
        seqs = read_sequences(input, seqtype)
        scoring = _pair_scoring(seqs, mode, matrix, gap_open, gap_extend)
        result = all_pairs(seqs, scoring, traceback=traceback, identities=True, backend=backend)
        with writing(output):
            write_pairs_tsv(result, seqs, output, cigar=traceback)


@app.command()
def distmat(
    input: Annotated[str, typer.Argument(help="Unaligned FASTA ('-' for stdin, .gz allowed)")],
    output: Output = None,
    kimura: Annotated[bool, typer.Option("--kimura", help="Kimura's protein correction")] = False,
    matrix: Matrix = None,
    gap_open: GapOpen = None,
    gap_extend: GapExtend = None,
    seqtype: SeqTypeOpt = SeqType.auto,
    backend: BackendOpt = BackendChoice.auto,
    threads: Threads = None,
    quiet: Quiet = False,
) -> None:
    """Write a PHYLIP distance matrix (1 - identity of global alignments),
    labels in input order."""
    _load()
    from msa_gpu.backend import set_threads
    from msa_gpu.distances import pairwise_distance
    from msa_gpu.io import write_phylip_distances

    warnings.showwarning = (lambda *a, **k: None) if quiet else _show_warning
    with _exit_codes():
        set_threads(threads)
        check_outputs(output)
        seqs = read_sequences(input, seqtype)
        scoring = _pair_scoring(seqs, "global", matrix, gap_open, gap_extend)
        dm = pairwise_distance(seqs, backend=backend, kimura=kimura, scoring=scoring)
        with writing(output):
            write_phylip_distances(dm, seqs.names, output)


@app.command()
def serve(
    socket_path: Annotated[str | None, typer.Option("--socket", help="Socket path (default: MSAGPU_SERVER, "
                                                    "else $XDG_RUNTIME_DIR/msagpu/server.sock)")] = None,
    idle_timeout: Annotated[float, typer.Option(help="End after this many seconds without a request")] = 3600.0,
    detach: Annotated[bool, typer.Option("--detach", help="Start in the background; return once it listens")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="End the running server")] = False,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Requests answered at once, each by a "
                                                  "process of its own (default: one a core, at most 8)")] = None,
) -> None:
    """A warm server for many small calls: msagpu align, msagpu-mafft,
    msagpu-famsa and msagpu-clustalo use it when it runs (same bytes), and
    work alone otherwise. One a user (a Unix socket, mode 0600)."""
    from msa_gpu.serving import server

    with _exit_codes():
        try:
            if stop:
                if not server.stop(socket_path):
                    raise typer.Exit(1)
                typer.echo("msagpu: server stopped", err=True)
            elif detach:
                server.start_detached(socket_path, idle_timeout, workers=workers)
                typer.echo(f"msagpu: server listening at {socket_path or server.socket_path()}", err=True)
            else:
                server.serve(socket_path, idle_timeout, ready=lambda: typer.echo(
                    f"msagpu: server listening at {socket_path or server.socket_path()}", err=True), workers=workers)
        except server.ServerError as exc:
            typer.echo(f"msagpu: error: {exc}", err=True)
            raise typer.Exit(1) from None


def main() -> None:
    app()


if __name__ == "__main__":
    main()
