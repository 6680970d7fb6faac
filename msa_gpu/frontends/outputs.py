"""Writing what `msagpu align` made: each family's alignment in its
format (FASTA streamed row by row, other formats rendered a family at a
time), strict PHYLIP's names maps, and one family's column scores, guide
tree and distances. Every file goes through `write_output` (a temporary
file renamed into place)."""

from __future__ import annotations

import typer

from msa_gpu.choices import SeqType
from msa_gpu.errors import InputError
from msa_gpu.io import (OutFormat, render_alignment, stream_fasta, to_newick, write_names_map, write_output,
                        write_phylip_distances, writing)
from msa_gpu.recipe import describe


def write_results(paths: list, families: list, results: list, targets: list, fmt: OutFormat, batch: bool, outdir,
                  failed: list, column_scores=None, tree_out=None, distmat_out=None) -> None:
    """Write the alignments of ``families`` (``results``, in order) to
    ``targets``. In batch mode (into ``outdir``) a family whose alignment
    cannot be rendered is said on stderr and added to ``failed``, the others
    still written, and each result is let go once written; with one family,
    ``column_scores``, ``tree_out`` and ``distmat_out`` are written too."""
    first_scores = None  # one family's column confidences, once made
    if not batch and fmt is OutFormat.fasta:  # one family: rows streamed to the (temporary) file
        seqs, result = families[0], results[0]
        write_output(targets[0], lambda h: stream_fasta(h, seqs.names, result.alignment.iter_rows(seqs)))
    else:
        # each output is made whole before it is written, one family at a time (a batch
        # of large families never holds all its texts); in batch mode a family that
        # cannot be written is reported and the others are still written
        if batch:
            with writing(outdir):
                outdir.mkdir(parents=True, exist_ok=True)
        for i, (path, seqs, target) in enumerate(zip(paths, families, targets)):
            result = results[i]
            if batch:  # a written family's alignment is not needed again
                results[i] = None
            if fmt is OutFormat.fasta:
                write_output(target, lambda h, s=seqs, r=result: stream_fasta(h, s.names, r.alignment.iter_rows(s)))
                continue
            try:
                scores = (result.column_scores() if fmt is OutFormat.stockholm
                          and seqs.seqtype is SeqType.protein else None)  # a #=GC PP_cons line
                if not batch:  # --column-scores writes the same values
                    first_scores = scores
                text = render_alignment(list(seqs.names), result.rows(), fmt, seqs.seqtype, scores,
                                        comment=f"msagpu recipe: {describe(result.recipe)}")
            except InputError as exc:
                if not batch:
                    raise
                typer.echo(f"msagpu: error: {path}: {exc}", err=True)
                failed.append(path)
                continue
            write_output(target, lambda h, text=text: h.write(text))
            del text, result
        if fmt is OutFormat.phylip_strict:  # the short names' map beside each file
            for seqs, target in zip(families, targets):
                write_names_map(target, seqs.names)
    if column_scores is not None:
        if first_scores is None:
            first_scores = results[0].column_scores()
        values = "".join(f"{v:.4f}\n" for v in first_scores)
        write_output(column_scores, lambda h: h.write(values))
    if tree_out is not None:
        newick = to_newick(results[0].guide_tree, list(families[0].names))
        write_output(tree_out, lambda h: h.write(newick + "\n"))
    if distmat_out is not None:
        if results[0].distances is None:
            raise InputError("--distmat-out: this run made no distance matrix (the large path and an "
                             "injected tree make none)")
        with writing(distmat_out):
            write_phylip_distances(results[0].distances, families[0].names, distmat_out)
