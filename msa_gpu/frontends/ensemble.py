"""``msagpu align --ensemble N``'s options (`EnsembleOptions`) and what
they refuse before any work (`check`). The runner aligns the ensemble
(`msa_gpu.workflows.ensemble`) and writes the chosen replicate (or ``--replicate K``),
optionally without the columns below ``--min-confidence``; every replicate
as Ensemble FASTA (``--ensemble-out``); the written columns' confidences
(``--column-scores``, and Stockholm's ``#=GC PP_cons`` line); each
residue's confidence as a digit (``--residue-scores``); the kept columns'
map (``--kept-columns``); the dispersion on stderr.
"""

from __future__ import annotations

from msa_gpu.errors import InputError
from msa_gpu.frontends.job import EnsembleOptions

__all__ = ["EnsembleOptions", "check"]


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
    from msa_gpu.workflows.ensemble import parse_perturb

    parse_perturb(options.perturb)
