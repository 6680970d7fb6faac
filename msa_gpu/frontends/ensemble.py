"""``msagpu align --ensemble N``: one family's ensemble run and its outputs
(`msa_gpu.ensemble`): the chosen replicate (or ``--replicate K``) in the
asked format, optionally without the columns below ``--min-confidence``;
every replicate as Ensemble FASTA (``--ensemble-out``); the written
columns' confidences (``--column-scores``, and Stockholm's ``#=GC PP_cons``
line); each residue's confidence as a digit in an aligned FASTA file
(``--residue-scores``); the kept columns' map (``--kept-columns``); the
dispersion on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from msa_gpu.config import AlignerConfig
from msa_gpu.ensemble import align_ensemble, confidence_rows, parse_perturb, take_columns, trim
from msa_gpu.errors import InputError
from msa_gpu.io import (OutFormat, render_alignment, stream_efa, stream_fasta, to_newick, write_names_map,
                        write_output)
from msa_gpu.recipe import describe, mode_rule
from msa_gpu.types import Sequences


@dataclass(frozen=True)
class EnsembleOptions:
    replicates: int
    perturb: str = "tree,gaps"
    seed: int = 0
    replicate: int | None = None
    ensemble_out: Path | None = None
    min_confidence: float | None = None
    kept_columns: Path | None = None
    residue_scores: Path | None = None


def check(options: EnsembleOptions, batch: bool, elsewhere: bool, given_tree: bool, others: list) -> None:
    """Refuse what an ensemble run does not do, before any work (``others``:
    the run's other outputs, None where not asked)."""
    if options.replicates < 2:  # one replicate has nothing to agree with: no confidence to give
        raise InputError(f"--ensemble {options.replicates}: give at least 2 replicates (a column's confidence is "
                         "the other replicates' agreement with it); for one alignment, drop --ensemble")
    if options.replicate is not None and not 0 <= options.replicate < options.replicates:
        raise InputError(f"--replicate {options.replicate}: the ensemble has replicates 0 to "
                         f"{options.replicates - 1}")
    if options.seed < 0:
        raise InputError(f"--seed {options.seed}: give a number from 0")
    sides = [t for t in (options.ensemble_out, options.kept_columns, options.residue_scores) if t is not None]
    if any(str(t) == "-" for t in sides):
        raise InputError("--ensemble-out, --kept-columns and --residue-scores write files, not standard output")
    named = [str(t) for t in [*others, *sides] if t is not None and str(t) != "-"]
    if len(set(named)) != len(named):
        raise InputError("two outputs of this run name the same file")
    if batch:
        raise InputError("--ensemble aligns one family: give one input and -o, not --outdir")
    if elsewhere:
        raise InputError("--ensemble runs on one device: drop --dask and --gpus")
    if given_tree:
        raise InputError("--ensemble perturbs the guide tree: drop --guidetree-in")
    if options.min_confidence is not None and not 0.0 <= options.min_confidence <= 1.0:
        raise InputError(f"--min-confidence {options.min_confidence}: give a fraction from 0 to 1")
    if options.kept_columns is not None and options.min_confidence is None:
        raise InputError("--kept-columns goes with --min-confidence")
    parse_perturb(options.perturb)


def run(seqs: Sequences, config: AlignerConfig, options: EnsembleOptions, output, fmt: OutFormat,
        column_scores: Path | None, tree_out: Path | None, reporter=None, say=None) -> None:
    """Align the ensemble and write every output asked for; ``say(line)``
    (None: quiet) tells the recipe (before the work), then the dispersion
    and the replicate written."""
    def said(recipes, where):  # the recipe line a run without --ensemble says, before the work
        say(f"recipe: {describe(recipes[0], where)}{mode_rule(config, recipes)}")

    ens = align_ensemble(seqs, config, options.replicates, parse_perturb(options.perturb), options.seed,
                         reporter, None if say is None else said).pick(options.replicate)
    result, names = ens.result, list(seqs.names)
    rows, confidence = result.rows(), ens.confidence
    kept = None
    if options.min_confidence is not None:
        rows, kept = trim(rows, confidence, options.min_confidence)
        confidence = confidence[kept]
    if fmt is OutFormat.fasta:
        write_output(output, lambda h: stream_fasta(h, names, rows))
    else:
        text = render_alignment(names, rows, fmt, seqs.seqtype, confidence if fmt is OutFormat.stockholm else None,
                                comment=f"msagpu recipe: {describe(result.recipe)}; ensemble replicate {ens.chosen} "
                                        f"of {len(ens.replicates)}")
        write_output(output, lambda h: h.write(text))
        if fmt is OutFormat.phylip_strict:
            write_names_map(output, names)
    if options.ensemble_out is not None:
        write_output(options.ensemble_out,
                     lambda h: stream_efa(h, list(ens.labels), names, (r.rows() for r in ens.replicates)))
    if column_scores is not None:
        values = "".join(f"{v:.4f}\n" for v in confidence)
        write_output(column_scores, lambda h: h.write(values))
    if kept is not None and options.kept_columns is not None:
        lines = "".join(f"{c + 1}\n" for c in kept)
        write_output(options.kept_columns, lambda h: h.write(lines))
    if options.residue_scores is not None:  # each residue's confidence as a digit, the written columns
        per_residue = confidence_rows(ens.residue_confidence())
        if kept is not None:
            per_residue = take_columns(per_residue, kept)
        write_output(options.residue_scores, lambda h: stream_fasta(h, names, per_residue))
    if tree_out is not None:
        newick = to_newick(result.guide_tree, names)
        write_output(tree_out, lambda h: h.write(newick + "\n"))
    if say is not None:
        trimmed = (f"; {len(kept)} of {result.alignment.n_cols} columns kept at confidence >= "
                   f"{options.min_confidence:g}" if kept is not None else "")
        say(f"ensemble of {len(ens.replicates)} (perturbed: {options.perturb}, seed {options.seed}): dispersion "
            f"{ens.dispersion:.4f}; wrote replicate {ens.chosen} ({ens.labels[ens.chosen]}), mean column "
            f"confidence {ens.support.mean[ens.chosen]:.4f}{trimmed}")
