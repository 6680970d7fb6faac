"""The one writer of every front door: a `Job`'s alignments in its format
(FASTA streamed row by row, other formats rendered a family at a time),
ordered and cased as asked, strict PHYLIP's names maps, and beside them
the guide tree, the distances and the column confidences, and an
ensemble's outputs. Every file goes through `msa_gpu.io.write_output` (a
temporary file renamed into place; a failed write an `OutputError`)."""

from __future__ import annotations

from msa_gpu.settings.choices import SeqType
from msa_gpu.errors import InputError
from msa_gpu.frontends.job import Caller, Job, Outputs, say
from msa_gpu.io import (OutFormat, phylip_text, render_alignment, stream_efa, stream_fasta, to_mafft_tree, to_newick,
                        write_names_map, write_output, write_phylip_distances)
from msa_gpu.recipe import describe


def _where(caller: Caller) -> dict:
    """`write_output`'s standard output and umask: ``caller``'s."""
    return {"stdout": caller.stdout.buffer, "umask": caller.umask}


def write_rows(out: Outputs, target, names: list[str], rows, seqtype: SeqType, scores=None,
               comment: str | None = None, caller: Caller | None = None) -> None:
    """One alignment (``rows``: a list, or for FASTA any iterable) to
    ``target`` as ``out`` asks: MAFFT's case, FASTA streamed, MAFFT's PHYLIP,
    names cut to ``out.name_length``, any other format rendered whole first
    (``scores``: Stockholm's ``#=GC PP_cons`` line; ``comment``: its
    ``#=GF CC`` line); standard output and new files' permissions are
    ``caller``'s (default `Caller.here`)."""
    where = _where(caller or Caller.here())
    if out.case == "mafft":  # nucleotides lower case, amino acids upper case, as MAFFT writes them
        rows = [r.lower() if seqtype is not SeqType.protein else r.upper() for r in rows]
    if out.fmt is OutFormat.fasta and not out.mafft_phylip:
        write_output(target, lambda h: stream_fasta(h, names, rows, out.width), compress=out.compress, **where)
        return
    if out.mafft_phylip:
        text = phylip_text(names, rows, out.name_length or 10)
    else:
        if out.name_length:
            names = [n.split(None, 1)[0][: out.name_length] if n.strip() else n for n in names]
        text = render_alignment(names, rows, out.fmt, seqtype, scores, comment=comment, width=out.width)
    write_output(target, lambda h: h.write(text), compress=out.compress, **where)


def _ordered(out: Outputs, seqs, result) -> tuple[list[str], object]:
    """A family's names and rows in the order asked: the input's (rows
    streamed where the format allows) or the guide tree's."""
    names = list(seqs.names)
    if out.order == "tree":
        from msa_gpu.tree import leaf_order

        rows = result.rows()
        order = leaf_order(result.guide_tree)[0].tolist()
        return [names[i] for i in order], [rows[i] for i in order]
    if out.fmt is OutFormat.fasta and out.case == "given":
        return names, result.alignment.iter_rows(seqs)
    return names, result.rows()


def write_results(job: Job, paths: list, families: list, results: list, targets: list, failed: list,
                  caller: Caller | None = None) -> None:
    """Write the alignments of ``families`` (``results``, in order) to
    ``targets``. In batch mode (into ``outdir``) a family whose alignment
    cannot be rendered is said on stderr and added to ``failed``, the others
    still written, and each result is let go once written; with one family,
    the tree, the distances and the column confidences are written too.
    Standard output and error, and new files' permissions: ``caller``'s
    (default `Caller.here`)."""
    out, batch = job.outputs, job.inputs.batch
    caller = caller or Caller.here()
    fmt = out.fmt
    first_scores = None  # one family's column confidences, once made
    if batch:
        from msa_gpu.io import make_folder, writing

        with writing(out.outdir):
            make_folder(out.outdir, caller.umask)
    for i, (path, seqs, target) in enumerate(zip(paths, families, targets)):
        result = results[i]
        if batch:  # a written family's alignment is not needed again
            results[i] = None
        names, rows = _ordered(out, seqs, result)
        if fmt is OutFormat.fasta:
            write_rows(out, target, names, rows, seqs.seqtype, caller=caller)
            continue
        try:
            scores = (result.column_scores() if out.annotate and fmt is OutFormat.stockholm
                      and seqs.seqtype is SeqType.protein else None)  # a #=GC PP_cons line
            if not batch:  # --column-scores writes the same values
                first_scores = scores
            comment = f"msagpu recipe: {describe(result.recipe)}" if out.annotate else None
            write_rows(out, target, names, rows, seqs.seqtype, scores, comment, caller)
        except InputError as exc:
            if not batch:
                raise
            say(caller, job, f"error: {path}: {exc}")
            failed.append(path)
            continue
        del rows, result
    if fmt is OutFormat.phylip_strict:  # the short names' map beside each file
        for seqs, target in zip(families, targets):
            write_names_map(target, seqs.names, caller.umask)
    if not batch:
        _write_beside(job, families[0], results[0], caller, first_scores)


def _write_beside(job: Job, seqs, result, caller: Caller, scores=None) -> None:
    """One family's column confidences (``scores``, where made already), guide tree and distances."""
    out, where = job.outputs, _where(caller)
    if out.column_scores is not None:
        values = "".join(f"{v:.4f}\n" for v in (result.column_scores() if scores is None else scores))
        write_output(out.column_scores, lambda h: h.write(values), **where)
    if out.tree is not None:
        tree = (to_mafft_tree if out.tree_format == "mafft" else to_newick)(result.guide_tree, list(seqs.names))
        write_output(out.tree, lambda h: h.write(tree + "\n"), **where)
    if out.distances is not None:
        if out.percent_id:
            dm = percent_identities(result.rows())
        elif result.distances is None:
            raise InputError("--distmat-out: this run made no distance matrix (the large path and an "
                             "injected tree make none)")
        else:
            dm = result.distances
        write_phylip_distances(dm, seqs.names, out.distances, **where)


def percent_identities(rows: list[bytes]):
    """Each pair's identical residues over the columns both rows fill, in
    percent (100 on the diagonal; 0 where two rows share no column), from
    the aligned rows (gaps '-')."""
    import numpy as np

    a = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), -1) if rows else np.zeros((0, 0), np.uint8)
    upper = np.where((a >= 97) & (a <= 122), a - 32, a)
    filled = a != ord("-")
    out = np.full((len(rows), len(rows)), 100.0)
    for s in range(len(rows)):
        both = filled[s] & filled[s + 1:]
        same = both & (upper[s] == upper[s + 1:])
        n_both = both.sum(axis=1)
        pid = np.where(n_both > 0, 100.0 * same.sum(axis=1) / np.maximum(n_both, 1), 0.0)
        out[s, s + 1:] = out[s + 1:, s] = pid
    return out


def write_ensemble(job: Job, seqs, ens, rows: list[bytes], confidence, kept, caller: Caller | None = None) -> None:
    """An ensemble's outputs (`msa_gpu.workflows.ensemble.Ensemble`, its chosen
    replicate's ``rows`` and column ``confidence``, trimmed to the ``kept``
    columns where asked): the alignment, every replicate as Ensemble FASTA,
    the column confidences, the kept columns, each residue's confidence as a
    digit, the guide tree (standard output and new files' permissions:
    ``caller``'s, default `Caller.here`)."""
    from msa_gpu.workflows.ensemble import confidence_rows, take_columns

    out, options, result, names = job.outputs, job.requests.ensemble, ens.result, list(seqs.names)
    caller = caller or Caller.here()
    where = _where(caller)
    comment = f"msagpu recipe: {describe(result.recipe)}; ensemble replicate {ens.chosen} of {len(ens.replicates)}"
    write_rows(out, out.alignment, names, rows, seqs.seqtype,
               confidence if out.fmt is OutFormat.stockholm else None, comment, caller)
    if out.fmt is OutFormat.phylip_strict:
        write_names_map(out.alignment, names, caller.umask)
    if options.ensemble_out is not None:
        write_output(options.ensemble_out,
                     lambda h: stream_efa(h, list(ens.labels), names, (r.rows() for r in ens.replicates)), **where)
    if out.column_scores is not None:
        values = "".join(f"{v:.4f}\n" for v in confidence)
        write_output(out.column_scores, lambda h: h.write(values), **where)
    if kept is not None and options.kept_columns is not None:
        lines = "".join(f"{c + 1}\n" for c in kept)
        write_output(options.kept_columns, lambda h: h.write(lines), **where)
    if options.residue_scores is not None:  # each residue's confidence as a digit, the written columns
        per_residue = confidence_rows(ens.residue_confidence())
        if kept is not None:
            per_residue = take_columns(per_residue, kept)
        write_output(options.residue_scores, lambda h: stream_fasta(h, names, per_residue), **where)
    if out.tree is not None:
        newick = to_newick(result.guide_tree, names)
        write_output(out.tree, lambda h: h.write(newick + "\n"), **where)
