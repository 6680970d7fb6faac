"""``msagpu``'s commands beside ``align`` (`msa_gpu.frontends.msagpu`
registers them): ``score``, ``pairwise``, ``distmat`` and ``serve``; and
the exit-code wrapper all its commands share (`exit_codes`)."""

from __future__ import annotations

import json
import warnings
from contextlib import contextmanager
from typing import Annotated, Optional

import typer

from msa_gpu.settings.choices import BackendChoice, PairMode, SeqType
from msa_gpu.errors import InputError, exits
from msa_gpu.frontends.options import GapExtend, GapOpen, Matrix, Output, PairModeOpt, Quiet, SeqTypeOpt, Threads, \
    BackendOpt


@contextmanager
def exit_codes(plan=None):
    """Map errors and signals to one-line messages and exit codes, as every
    front door does (`msa_gpu.errors.exits`: 2 bad input, 3 backend
    unavailable, 4 out of memory or an output that cannot be written, 1
    internal error, 130 SIGINT, 143 SIGTERM, 141 a closed output pipe),
    said on this process's stderr; click's own exits pass."""
    with exits("msagpu", plan, keep=(typer.Exit, typer.Abort)):
        yield


def show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as one line ``msagpu: message`` on this process's stderr."""
    typer.echo(f"msagpu: {message}", err=True)


def score(
    test: Annotated[str, typer.Argument(help="Test alignment (any format msagpu writes)")],
    reference: Annotated[str, typer.Argument(help="Reference alignment (any format msagpu writes)")],
    core: Annotated[Optional[str], typer.Option("--core", help="Core mask: one line of 0/1")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Print SP and TC of TEST against REFERENCE."""
    from msa_gpu.io import read_core, write_output
    from msa_gpu.accuracy import sp_tc

    with exit_codes():
        tn, tr = _read_alignment(test)
        rn, rr = _read_alignment(reference)
        result = sp_tc(tn, tr, rn, rr, read_core(core) if core else None)
        text = json.dumps(result.as_dict()) + "\n" if as_json else f"SP {result.sp:.4f}\nTC {result.tc:.4f}\n"
        write_output(None, lambda h: h.write(text))


def _read_alignment(path) -> tuple[list[str], list[bytes]]:
    """`read_aligned`, refusing a file whose rows differ in length (unaligned
    sequences are not an alignment to score)."""
    from msa_gpu.io import read_aligned

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
    from msa_gpu.backend import set_threads
    from msa_gpu.backend.pairwise import all_pairs
    from msa_gpu.io import check_outputs, read_sequences, write_pairs_tsv

    warnings.showwarning = (lambda *a, **k: None) if quiet else show_warning
    with exit_codes():
        set_threads(threads)
        check_outputs(output)
        seqs = read_sequences(input, seqtype)
        scoring = _pair_scoring(seqs, mode, matrix, gap_open, gap_extend)
        result = all_pairs(seqs, scoring, traceback=traceback, identities=True, backend=backend)
        write_pairs_tsv(result, seqs, output, cigar=traceback)


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
    from msa_gpu.backend import set_threads
    from msa_gpu.distances import pairwise_distance
    from msa_gpu.io import check_outputs, read_sequences, write_phylip_distances

    warnings.showwarning = (lambda *a, **k: None) if quiet else show_warning
    with exit_codes():
        set_threads(threads)
        check_outputs(output)
        seqs = read_sequences(input, seqtype)
        scoring = _pair_scoring(seqs, "global", matrix, gap_open, gap_extend)
        dm = pairwise_distance(seqs, backend=backend, kimura=kimura, scoring=scoring)
        write_phylip_distances(dm, seqs.names, output)


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

    with exit_codes():
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
