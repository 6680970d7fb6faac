"""The command line: a thin layer that sets up, delegates and maps errors to
exit codes (2: bad input, 3: backend unavailable)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from .alphabet import SeqType
from .config import AlignerConfig, BackendChoice, TreeMethod
from .errors import BackendError, InputError, MsaGpuError
from .io import OutFormat, format_for, read_aligned, read_core, read_sequences, write_alignment, write_text

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="msagpu: GPU-accelerated progressive multiple sequence alignment.")

Input = Annotated[str, typer.Argument(help="Unaligned FASTA: a path, '-' for stdin, or .gz")]
Output = Annotated[Optional[Path], typer.Option("-o", "--output", help="Output file (default: stdout)")]
OutFmt = Annotated[Optional[OutFormat], typer.Option("--outfmt", help="Output format (default: from the extension, else FASTA)")]
SeqTypeOpt = Annotated[SeqType, typer.Option("--seqtype", help="Sequence type")]
BackendOpt = Annotated[BackendChoice, typer.Option("--backend", help="auto: GPU if usable, else CPU")]
TreeOpt = Annotated[TreeMethod, typer.Option("--tree", help="Guide-tree method")]
TreeOut = Annotated[Optional[Path], typer.Option("--tree-out", help="Write the guide tree as Newick")]
Threads = Annotated[Optional[int], typer.Option("--threads", min=1, help="Cap on CPU threads")]
GapOpen = Annotated[Optional[float], typer.Option("--gap-open", min=0.0, help="Gap open cost (matrix units)")]
GapExtend = Annotated[Optional[float], typer.Option("--gap-extend", min=0.0, help="Gap extension cost (matrix units)")]
Matrix = Annotated[Optional[str], typer.Option("--matrix", help="Substitution matrix name (Biopython)")]
Retree = Annotated[int, typer.Option("--retree", min=0, max=10, help="Guide-tree rebuilds from the alignment")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No messages on stderr")]


def _fail(exc: Exception, code: int) -> None:
    typer.echo(f"msagpu: error: {exc}", err=True)
    raise typer.Exit(code)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    typer.echo(f"msagpu: {message}", err=True)


@app.command()
def align(
    input: Input,
    output: Output = None,
    outfmt: OutFmt = None,
    seqtype: SeqTypeOpt = SeqType.auto,
    backend: BackendOpt = BackendChoice.auto,
    tree: TreeOpt = TreeMethod.mixed,
    tree_out: TreeOut = None,
    threads: Threads = None,
    gap_open: GapOpen = None,
    gap_extend: GapExtend = None,
    matrix: Matrix = None,
    retree: Retree = 1,
    quiet: Quiet = False,
) -> None:
    """Align the sequences of INPUT and write the alignment."""
    from .aligner import Aligner
    from .tree import to_newick

    warnings.showwarning = (lambda *a, **k: None) if quiet else _show_warning
    try:
        fmt = format_for(output, outfmt)
        seqs = read_sequences(input, seqtype)
        config = AlignerConfig(seqtype=seqs.seqtype, backend=backend, tree=tree, matrix=matrix,
                               gap_open=gap_open, gap_extend=gap_extend, retree=retree, threads=threads)
        result = Aligner(config).align(seqs)
        write_alignment(list(seqs.names), result.rows(), output, fmt, seqs.seqtype)
        if tree_out is not None:
            newick = to_newick(result.guide_tree, list(seqs.names))
            write_text(tree_out, lambda h: h.write(newick + "\n"))
    except (InputError, ValueError) as exc:
        _fail(exc, 2)
    except BackendError as exc:
        _fail(exc, 3)
    except MsaGpuError as exc:
        _fail(exc, 1)


@app.command()
def score(
    test: Annotated[str, typer.Argument(help="Test alignment (aligned FASTA)")],
    reference: Annotated[str, typer.Argument(help="Reference alignment (aligned FASTA)")],
    core: Annotated[Optional[str], typer.Option("--core", help="Core mask: one line of 0/1")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Print SP and TC of TEST against REFERENCE."""
    from .score import sp_tc

    try:
        tn, tr = read_aligned(test)
        rn, rr = read_aligned(reference)
        result = sp_tc(tn, tr, rn, rr, read_core(core) if core else None)
    except (InputError, ValueError) as exc:
        _fail(exc, 2)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
    else:
        typer.echo(f"SP {result.sp:.4f}\nTC {result.tc:.4f}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
