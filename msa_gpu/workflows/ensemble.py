"""Ensembles (issue 46): N replicates of one family, aligned in one batch
under perturbed guide trees and gap costs, with each column's confidence,
the ensemble's dispersion and the replicate the ensemble agrees with most.

Replicate 0 is the default alignment, unperturbed. Replicate k > 0 draws
its perturbation from ``numpy.random.default_rng([seed, k])``:
- ``tree``: every distance of the family's matrix (the one its guide tree
  came from) times exp(0.1 z), z standard normal and symmetric, and the
  recipe's tree built from that (a family without a matrix, on the large
  path, varies its gap costs only);
- ``gaps``: the recipe's gap open and extend costs each times exp(0.1 z);
- ``model`` (accurate mode's pair-HMM library only; not by default): the
  pair-HMM's gap probabilities each times exp(0.1 z)
  (`pairhmm.perturbed_model`), so each replicate builds its own library
  from its own posteriors (a library's cost a replicate).
Otherwise accurate replicates share one consistency library (replicate 0's, or one
built once where replicate 0 kept none: a family with repeated sequences),
since it does not depend on the tree or the gap costs, so a replicate costs
its progressive stage, not a library. Replicates 1..N-1 are one `Aligner.align_many` call:
their tree levels are merged in the same device batches.

Confidence is measured on residue pairs. A column's confidence in
replicate r is the mean, over the pairs of residues r puts in it, of the
fraction of the other replicates that also put that pair in one column (a
column with fewer than two residues has 0), computed as one division of
whole counts, so a column at exactly 0.2 is the float 0.2 that
``--min-confidence 0.2`` keeps. An ensemble has at least two replicates:
one would have nothing to agree with. The chosen replicate has the
highest mean column confidence (MUSCLE 5's ``-maxcc`` idea; ties: the lower
index, so the default wins a tie). The dispersion is 1 minus the mean, over
ordered pairs of replicates (r, s), of the fraction of r's aligned residue
pairs that s aligns too: 0 when every replicate is the same.

Examples
--------
>>> from msa_gpu.types import Alignment
>>> a = Alignment.from_mask(np.array([[1, 1, 0], [1, 0, 1]], bool))  # residue 2 of row 1 in column 2
>>> b = Alignment.from_mask(np.array([[1, 1], [1, 1]], bool))        # ... in column 1, beside row 0's
>>> support = agreement([residue_columns(a), residue_columns(b)], [3, 2])
>>> support.column[0].tolist(), support.column[1].tolist()  # column 0's pair is in both
([1.0, 0.0, 0.0], [1.0, 0.0])
>>> round(support.dispersion, 3)
0.25
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from msa_gpu.aligner import Aligner
from msa_gpu.settings.choices import Library
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.errors import InputError
from msa_gpu.result import AlignResult
from msa_gpu.types import Alignment, DistanceMatrix, Sequences

#: What a replicate may perturb (``--perturb``), and what it does by default.
PERTURB_KINDS = ("tree", "gaps", "model")
DEFAULT_PERTURB = ("tree", "gaps")
#: The spread of the log-normal factors on distances and gap costs.
SIGMA = 0.1
#: The most bytes of perturbed distance matrices an ensemble holds (one a
#: replicate, float64: 16 replicates of 4,000 sequences take 1.9 GB).
MATRIX_BYTES = 4 << 30


def residue_columns(aln: Alignment) -> np.ndarray:
    """Each residue's column, rows in order and residues in order within a
    row (int64, one a residue): the same residues, in the same order, for
    any alignment of the same sequences."""
    return np.nonzero(aln.mask())[1].astype(np.int64)


def _pairs(counts: np.ndarray) -> np.ndarray:
    return counts * (counts - 1) // 2


@dataclass(frozen=True)
class Agreement:
    """``column[r]``: replicate r's column confidences (float64, one a
    column); ``mean[r]``: their mean; ``pair[r, s]``: the fraction of r's
    aligned residue pairs that s aligns too; ``dispersion``: see the module."""

    column: tuple[np.ndarray, ...]
    mean: np.ndarray
    pair: np.ndarray
    dispersion: float


def agreement(cols: list[np.ndarray], n_cols: list[int]) -> Agreement:
    """The replicates' agreement from their `residue_columns` and column
    counts (at least two replicates: a confidence is the others' agreement)."""
    n = len(cols)
    if n < 2:
        raise ValueError("agreement needs at least two replicates")
    pair = np.ones((n, n))
    column = []
    for r in range(n):
        a, w = cols[r], int(n_cols[r])
        total = _pairs(np.bincount(a, minlength=w))
        agree = np.zeros(w, dtype=np.int64)
        for s in range(n):
            if s == r:
                continue
            width = int(n_cols[s]) + 1
            keys, counts = np.unique(a * width + cols[s], return_counts=True)
            same = np.bincount(keys // width, weights=_pairs(counts), minlength=w).astype(np.int64)
            agree += same
            pair[r, s] = same.sum() / total.sum() if total.sum() else 1.0
        # one division of exact integers: a confidence of exactly X is the float X, as --min-confidence X
        # reads it (agree / total / others rounded twice: 6 / 10 / 3 gave 0.19999999999999998)
        column.append(np.where(total > 0, agree / np.maximum(total * (n - 1), 1), 0.0))
    off = ~np.eye(n, dtype=bool)
    dispersion = float(1.0 - pair[off].mean())
    return Agreement(tuple(column), np.array([c.mean() if len(c) else 0.0 for c in column]), pair, dispersion)


def residue_agreement(cols: list[np.ndarray], n_cols: list[int], r: int) -> np.ndarray:
    """Each residue's confidence in replicate ``r`` (float64, in
    `residue_columns` order): the fraction of its column-mates that stay in
    its column in the other replicates, on average (0 for a residue alone in
    its column).

    >>> from msa_gpu.types import Alignment
    >>> a = Alignment.from_mask(np.array([[1, 0], [1, 0], [1, 0]], bool))
    >>> b = Alignment.from_mask(np.array([[1, 0], [1, 0], [0, 1]], bool))
    >>> residue_agreement([residue_columns(a), residue_columns(b)], [2, 2], 0).tolist()
    [0.5, 0.5, 0.0]
    """
    a = cols[r]
    mates = np.bincount(a, minlength=int(n_cols[r]))[a] - 1
    kept = np.zeros(len(a), dtype=np.int64)
    for s in range(len(cols)):
        if s == r:
            continue
        _, inverse, counts = np.unique(a * (int(n_cols[s]) + 1) + cols[s], return_inverse=True, return_counts=True)
        kept += counts[inverse] - 1
    others = max(len(cols) - 1, 1)
    return np.where(mates > 0, kept / np.maximum(mates * others, 1), 0.0)  # one division, as `agreement`'s


@dataclass(frozen=True)
class Ensemble:
    """An ensemble's replicates (``labels[k]``: what replicate k perturbed,
    MUSCLE 5's EFA header style), the agreement among them, and the chosen
    replicate (`result`)."""

    replicates: tuple[AlignResult, ...]
    labels: tuple[str, ...]
    support: Agreement
    chosen: int

    @property
    def result(self) -> AlignResult:
        return self.replicates[self.chosen]

    @property
    def confidence(self) -> np.ndarray:
        """The chosen replicate's column confidences."""
        return self.support.column[self.chosen]

    @property
    def dispersion(self) -> float:
        return self.support.dispersion

    def residue_confidence(self) -> np.ndarray:
        """The chosen replicate's residues' confidences (`residue_agreement`),
        as its alignment's (n_seqs, n_cols) matrix, NaN in gaps."""
        aln = self.result.alignment
        cols = [residue_columns(r.alignment) for r in self.replicates]
        flat = residue_agreement(cols, [r.alignment.n_cols for r in self.replicates], self.chosen)
        mask = aln.mask()
        out = np.full(mask.shape, np.nan)
        out[mask] = flat  # row-major: the residues in `residue_columns` order
        return out

    def pick(self, k: int | None) -> "Ensemble":
        """The same ensemble with replicate ``k`` chosen (None: keep the highest)."""
        if k is None:
            return self
        if not 0 <= k < len(self.replicates):
            raise InputError(f"--replicate {k}: the ensemble has replicates 0 to {len(self.replicates) - 1}")
        return replace(self, chosen=k)


def parse_perturb(text: str) -> tuple[str, ...]:
    """``--perturb``: a comma list of `PERTURB_KINDS`.

    >>> parse_perturb("gaps, tree")
    ('tree', 'gaps')
    """
    kinds = {t.strip().lower() for t in text.split(",") if t.strip()}
    bad = sorted(kinds - set(PERTURB_KINDS))
    if bad or not kinds:
        raise InputError(f"--perturb: expected a comma list of {', '.join(PERTURB_KINDS)}; got {text!r}")
    return tuple(k for k in PERTURB_KINDS if k in kinds)


def _noisy(dm: DistanceMatrix, rng) -> DistanceMatrix:
    n = len(dm)
    z = rng.standard_normal((n, n))
    z = np.triu(z, 1)
    factor = np.exp(SIGMA * (z + z.T))
    return DistanceMatrix(dm.values * factor, dm.method)


def align_ensemble(seqs: Sequences, config: AlignerConfig, n: int, perturb: tuple[str, ...] = DEFAULT_PERTURB,
                   seed: int = 0, reporter=None, on_plan=None) -> Ensemble:
    """``n`` replicates of ``seqs`` (see the module), the highest mean
    column confidence chosen."""
    return align_ensembles([seqs], config, n, perturb, seed, reporter, on_plan)[0]


def align_ensembles(families: list[Sequences], config: AlignerConfig, n: int,
                    perturb: tuple[str, ...] = DEFAULT_PERTURB, seed: int = 0, reporter=None,
                    on_plan=None) -> list[Ensemble]:
    """Each family's ensemble of ``n`` (`align_ensemble`), every family's
    replicate 0 in one batch and all their other replicates in a second.
    ``on_plan(recipes, backend_name)``, if given, is told the replicate 0s'
    recipes and the backend before any stage runs (the command line says
    the recipe line there, as a run without --ensemble does)."""
    if n < 2:
        raise InputError(f"--ensemble {n}: give at least 2 replicates (a column's confidence is the other "
                         "replicates' agreement with it); for one alignment, drop --ensemble")
    perturb = parse_perturb(",".join(perturb))
    need = 8 * (n - 1) * sum(len(f) ** 2 for f in families) if "tree" in perturb else 0
    if need > MATRIX_BYTES:
        raise InputError(f"--ensemble {n} --perturb tree would hold {need / 2**30:.1f} GB of perturbed distance "
                         f"matrices (at most {MATRIX_BYTES / 2**30:.0f} GB): use fewer replicates or --perturb gaps")
    first = Aligner(replace(config, keep_distances=True), reporter=reporter)
    planned = first.plan(families)
    if on_plan is not None:
        on_plan(planned, first.backend_said(planned))
    bases = first.align_many(families, recipes=planned)
    if perturb == ("tree",) and n > 1 and any(b.distances is None for b in bases):
        raise InputError("--perturb tree: a family's guide tree comes without a distance matrix (the large "
                         "path); add gaps to --perturb")
    fams, dms, libs, factors, models = [], [], [], [], {}  # replicates 1..n-1 of each family, in order
    for seqs, base in zip(families, bases):
        for k in range(1, n):
            tree_rng, gap_rng, model_rng = np.random.default_rng([seed, k]).spawn(3)
            if "model" in perturb and k not in models:
                models[k] = model_rng
            fams.append(seqs)
            # (a family without a matrix, the large path's, varies its gap costs only)
            dms.append(_noisy(base.distances, tree_rng) if "tree" in perturb and base.distances is not None
                       else base.distances)
            libs.append(base.library)
            factors.append(np.exp(SIGMA * gap_rng.standard_normal(2)) if "gaps" in perturb else np.ones(2))
    more: list[AlignResult] = []
    if fams:
        plan = first.plan(fams, distances=dms, libraries=libs)
        # a family whose first alignment kept no library (its repeats were dropped) builds one, once, for
        # all its replicates (as each would build it: over every sequence), unless --perturb model builds
        # each replicate its own
        missing = [f for f in range(len(families)) if bases[f].library is None and plan[f * (n - 1)].library
                   and not ("model" in perturb and plan[f * (n - 1)].library is Library.posterior)]
        for f, lib in zip(missing, first.libraries([families[f] for f in missing],
                                                    [plan[f * (n - 1)] for f in missing]) if missing else []):
            libs[f * (n - 1): (f + 1) * (n - 1)] = [lib] * (n - 1)
        if "model" in perturb:  # each replicate's own library, from its own pair-HMM
            _model_libraries(first, families, plan, libs, models, n)
        libraries = libs if any(lib is not None for lib in libs) else None
        recipes = [replace(r, gap_open=r.gap_open * g[0], gap_extend=r.gap_extend * g[1])
                   for r, g in zip(plan, factors)]
        more = first.align_many(fams, distances=dms, libraries=libraries, recipes=recipes)
    labels = ("none.0", *(f"{'+'.join(perturb)}.{k}" for k in range(1, n)))
    out = []
    for f, base in enumerate(bases):
        replicates = [base, *more[f * (n - 1): (f + 1) * (n - 1)]]
        support = agreement([residue_columns(r.alignment) for r in replicates],
                            [r.alignment.n_cols for r in replicates])
        chosen = int(np.argmax(support.mean))  # the first of the highest: the default wins a tie
        out.append(Ensemble(tuple(replicates), labels, support, chosen))
    return out


def _model_libraries(aligner: Aligner, families: list[Sequences], plan: list, libs: list, models: dict,
                     n: int) -> None:
    """Replace each replicate k's library (``libs[f (n - 1) + k - 1]``) by
    one built from the pair-HMM perturbed by ``models[k]``'s generator, for
    every family whose recipe takes the posterior library (all of replicate
    k's families in one `posterior_libraries` call)."""
    from msa_gpu.consistency import model_for, on_backend, perturbed_model, posterior_libraries

    posterior = [f for f in range(len(families)) if plan[f * (n - 1)].library is Library.posterior]
    if not posterior:
        raise InputError("--perturb model: no family here takes the pair-HMM library (accurate mode)")
    cut = [f for f in posterior if plan[f * (n - 1)].subtrees]
    if cut:  # (a whole-family library is what the subtrees avoid; theirs are built inside the aligner)
        raise InputError(f"--perturb model: a family of {len(families[cut[0]]):,} sequences is aligned in subtrees "
                         f"of at most {plan[cut[0] * (n - 1)].subtrees:,} (accurate mode over that size), whose "
                         "libraries are not perturbed; use --perturb tree,gaps")
    xp = aligner.backend.xp
    by_size: dict[int, list[int]] = {}
    for f in posterior:
        by_size.setdefault(families[f].alphabet.size, []).append(f)
    for k, rng in sorted(models.items()):
        for size, group in sorted(by_size.items()):
            model = perturbed_model(model_for(families[group[0]].alphabet), np.random.default_rng(rng.integers(1 << 62)),
                                    SIGMA)
            for f, lib in zip(group, posterior_libraries([families[f] for f in group], model=model, xp=xp)):
                libs[f * (n - 1) + k - 1] = on_backend(lib, xp)


def confidence_rows(values: np.ndarray) -> list[bytes]:
    """Per-residue confidences as alignment rows: a digit a residue (0 for
    under 0.1 ... 9 for 0.9 and over), ``-`` in gaps.

    >>> confidence_rows(np.array([[1.0, np.nan], [0.35, 0.0]]))
    [b'9-', b'30']
    """
    digits = np.where(np.isnan(values), ord("-"), ord("0") + np.clip(np.nan_to_num(values) * 10, 0, 9).astype(int))
    return [row.astype(np.uint8).tobytes() for row in digits]


def trim(rows: list[bytes], confidence: np.ndarray, minimum: float) -> tuple[list[bytes], np.ndarray]:
    """The alignment's rows without the columns whose confidence is below
    ``minimum``, and the kept columns' 0-based indices in the original.

    >>> trim([b"AC-", b"A-C"], np.array([1.0, 0.0, 0.0]), 0.5)
    ([b'A', b'A'], array([0]))
    """
    keep = np.flatnonzero(np.asarray(confidence) >= minimum)
    return take_columns(rows, keep), keep


def take_columns(rows: list[bytes], columns: np.ndarray) -> list[bytes]:
    """The rows of an alignment with only ``columns`` (0-based, in order).

    >>> take_columns([b"AC-", b"A-C"], np.array([0, 2]))
    [b'A-', b'AC']
    """
    if not rows:
        return []
    table = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), -1)[:, columns]
    return [r.tobytes() for r in table]
