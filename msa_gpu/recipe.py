"""One recipe per family: every rule that picks how a family is aligned, in one place.

`recipe_for` turns a family's size, lengths and type and the run's settings
(`AlignerConfig`) into a frozen `Recipe`; an explicit option always wins over
the rule it names. The aligner decides each family's recipe once, before any
stage runs, and the stages read their part of it. `describe` writes it as the
one line the command line prints (MAFFT prints its strategy the same way).

The rules, in the order they are applied (the evidence for each threshold is
in benchmarks/results/NOTES.md):

====================  ==========================================================
choice                rule (``auto``)
====================  ==========================================================
mode                  large from ``large_min_seqs`` (20,000) sequences; accurate
                      up to ``accurate_max_seqs`` (200) sequences of up to
                      ``accurate_max_length`` (2,000) residues; fast otherwise
subtrees              accurate mode (asked) on more than
                      ``accurate_subtree_seqs`` (200) sequences: the fast
                      recipe's distances, tree and scoring, its tree cut into
                      subtrees of at most that many, each aligned with its own
                      library (issue 58)
long                  mean length over ``lcs_max_length`` (3,000): genomes
distances             accurate: the library's alignments (``accurate_tree``
                      library); k-mers below
                      ``lcs_min_seqs`` (500) sequences or for long ones (k-mer
                      divergences there), FAMSA 2's LCS distances from 500 and
                      where k-mers are blind: over `KMER_BLIND` (half) of the
                      pairs share no k-mer (short fragments)
tree                  single linkage on LCS distances (FAMSA's tree, through
                      Prim's spanning tree from `SPANNING_MIN_SEQS`); long: NJ
                      up to ``nj_max_seqs`` (2,000), UPGMA above; else mixed
                      linkage below ``upgma_min_seqs`` (500), UPGMA from there;
                      large: the k-mer pivots' partition tree
retree                ``retree`` (1) rebuilds, none for FAMSA's tree, long
                      sequences' tree, a given tree, accurate mode's library
                      tree, 2 sequences or more than ``retree_max_seqs`` (2,000)
library               accurate only: the pair-HMM posteriors, ProbCons' model for
                      protein, ProbConsRNA's for nucleotides
objective             accurate mode with nucleotides' posteriors: the library
                      alone (maximum expected accuracy, ProbConsRNA's); else
                      the sum of pairs with matrix, gaps and library
fragments             where the tree puts them; with ``fragments`` last,
                      sequences under half the family's 95th length
                      percentile are merged last, one at a time above the
                      others' tree (not on the large path, for long
                      sequences or along a given tree)
refinement            ``maxiterate``; else none, but `ACCURATE_ITERATIONS` (10)
                      in accurate mode with a library of alignments; never on
                      the large path
gaps                  flat for long sequences and where refinement is planned;
                      otherwise counts, and where FAMSA's tree is taken
                      outside accurate mode (``lcs_min_seqs``, 500, sequences
                      or blind k-mers) the count model with exact opens (``exact``: the DP's
                      objective is the merge's sum of pairs, FAMSA's count
                      model); scaled by FAMSA 2's 1 + log2(N / 45) / 7 from
                      45 sequences
DP fixed point        1/1000 of a matrix unit where the gaps are ``exact`` by
                      that rule, else 1/100; the exact model rounds every
                      division to the nearest, the others round down
weights, matrix       equal weights and ``large_matrix_offset`` on the large
                      path; ClustalW tree weights and the alphabet's matrix
                      (`DEFAULTS`) otherwise
====================  ==========================================================

>>> from msa_gpu.io import make_sequences
>>> seqs = make_sequences([f"s{i}" for i in range(3)], [b"MKTAYIAKQR", b"MKTAYIAKQ", b"MKTYIAKQR"])
>>> r = recipe_for(AlignerConfig(), seqs)
>>> [str(c) for c in (r.mode, r.distance, r.tree, r.library, r.gap_model)], r.profile_scale
(['accurate', 'library', 'mixed', 'posterior', 'counts'], 100)
>>> r.tree is Tree.mixed  # each choice is its enum (`msa_gpu.settings.choices`), compared as one
True
>>> recipe_for(AlignerConfig(mode="fast"), seqs).retree
1
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from msa_gpu.alphabet import SeqType, alphabet_for
from msa_gpu.settings.choices import (AccurateTree, Distance, DistanceMethod, FragmentPlace, GapModel, Library, Mode, Objective,
                             RefineSplits, Tree, TreeMethod, Weights)
from msa_gpu.settings.config import ACCURATE_ITERATIONS, DEFAULTS, SPANNING_MIN_SEQS, AlignerConfig
from msa_gpu.types import Recipe, Sequences

#: Over this fraction of a family's pairs sharing no k-mer, its k-mer distances
#: are blind (1 for most pairs: a guide tree drawn at random), and it takes
#: FAMSA's LCS tree and gaps as a family of ``lcs_min_seqs`` does. On
#: extHomFam's dev set, the short families of 300-499 sequences that pass it
#: (bowman, ghf33, HTH_AraC, scorptoxin: 0.60-0.75 of their pairs) had TC
#: 0.04, 0.01, 0.50 and 0.62 along the k-mer tree; no family of BAliBASE or
#: Balifam that takes k-mers passes it.
KMER_BLIND = 0.5
#: Fragments: sequences shorter than `FRAGMENT_SHARE` of the family's full
#: length, taken as its `FULL_LENGTH_PERCENTILE`th length percentile (so that
#: fragments do not outvote the full-length sequences); merged last
#: (`msa_gpu.tree.fragments_last`).
FRAGMENT_SHARE = 0.5
FULL_LENGTH_PERCENTILE = 95
#: Cuts tried a round where refinement cuts along the columns' gap patterns
#: (``refine_splits`` columns, `msa_gpu.refine.column_splits`), drawn at
#: random (seeded), as FAMSA tries one random column's pattern at a time.
COLUMN_CUTS = 32
#: ``realign`` rounds only for fast-mode families of up to this many sequences
#: (`msa_gpu.refine.realign`: each pair holds a copy of the family's profile,
#: so a round moves n^2 x width bytes).
REALIGN_MAX_SEQS = 5000


def recipe_for(config: AlignerConfig, seqs: Sequences, tree_given: bool = False, n_input: int = 0,
               distances_given: bool = False, unshared: Callable[[Sequences], float] | None = None,
               adding: bool = False) -> Recipe:
    """The recipe of a family: ``seqs`` are the sequences that will be
    aligned (the distinct ones where repeats are dropped, of ``n_input``
    in all); ``tree_given`` says a guide tree comes with them,
    ``distances_given`` a distance matrix (the API's). ``unshared`` measures
    the fraction of the family's pairs that share no k-mer
    (`msa_gpu.distances.kmer_unshared`), asked only of a family that would
    take k-mer distances by size (without it, size alone decides).
    ``adding``: the recipe of sequences added to an existing alignment
    (``--add``, `msa_gpu.progressive.add_sequences`): fast mode's scoring,
    the sum of pairs, and flat gaps unless a gap model is asked for (its
    placement was measured with them)."""
    if len(seqs) < 1:
        raise ValueError("a recipe needs at least one sequence")
    if adding:
        config = replace(config, mode=Mode.fast, objective=Objective.sp,
                         gap_model=GapModel.flat if config.gap_model is GapModel.auto else config.gap_model)
    args = (config, len(seqs), seqs.mean_length, int(seqs.lengths.max()), seqs.seqtype, tree_given, distances_given)
    recipe = recipe_from(*args)
    if (unshared is not None and config.distance is DistanceMethod.auto and recipe.distance is Distance.kmer
            and not recipe.long and unshared(seqs) > KMER_BLIND):
        recipe = recipe_from(*args, kmer_blind=True)
    if (config.fragments is FragmentPlace.last and recipe.mode is not Mode.large and not recipe.long
            and not tree_given and len(seqs) > 2):
        cut = int(math.ceil(FRAGMENT_SHARE * float(np.percentile(seqs.lengths, FULL_LENGTH_PERCENTILE))))
        short = int((seqs.lengths < cut).sum())
        if 0 < short < len(seqs) - 1:
            recipe = replace(recipe, fragments=short, fragment_length=cut)
    if n_input <= len(seqs):
        return recipe
    # no N x N matrix expanded over an input the size of the large path's
    return replace(recipe, n_input=n_input, expands_distances=n_input < config.large_min_seqs)


def recipe_from(config: AlignerConfig, n: int, mean: float, longest: int,
                seqtype: SeqType = SeqType.protein, tree_given: bool = False, distances_given: bool = False,
                kmer_blind: bool = False) -> Recipe:
    """The recipe of a family of ``n`` sequences of this mean and longest
    length and type (`recipe_for`'s rules, from the numbers alone);
    ``kmer_blind``: most of its pairs share no k-mer, so it takes FAMSA's
    tree and gaps as from ``lcs_min_seqs`` sequences.

    >>> [recipe_from(AlignerConfig(), n, 300.0, 400).mode.value for n in (200, 201, 20000)]
    ['accurate', 'fast', 'large']
    """
    if n < 1 or seqtype is SeqType.auto:
        raise ValueError("a recipe needs at least one sequence of a known type")
    long = mean > config.lcs_max_length
    # mode: an explicit one, else by size
    mode = config.mode
    if mode is Mode.auto:
        mode = (Mode.large if n >= config.large_min_seqs else
                Mode.accurate if n <= config.accurate_max_seqs and longest <= config.accurate_max_length else
                Mode.fast)
    accurate, large = mode is Mode.accurate, mode is Mode.large
    if accurate and n > config.accurate_subtree_seqs:  # in pieces: the fast recipe, with subtrees of the library
        fast = recipe_from(replace(config, mode=Mode.fast), n, mean, longest, seqtype, tree_given, distances_given,
                           kmer_blind)
        k = config.accurate_subtree_seqs
        return replace(fast, mode=mode, library=library_for(config), subtrees=k,
                       dp_cells=int(n * (k - 1) // 2 * mean * mean))
    # the first tree's distances (all-pairs LCS costs n^2 L^2 / 64 word steps: not for genomes)
    method = config.distance
    famsa_sized = n >= config.lcs_min_seqs or kmer_blind
    if method is DistanceMethod.auto:
        method = DistanceMethod.lcs if famsa_sized and not long else DistanceMethod.kmer
    # the tree method those distances feed (NJ is cubic: 14 s at 2,000 on 2 cores)
    tree = (Tree(config.tree) if config.tree is not TreeMethod.auto else
            Tree.single if method is DistanceMethod.lcs else
            (Tree.nj if n <= config.nj_max_seqs else Tree.upgma) if long else
            Tree.upgma if n >= config.upgma_min_seqs else Tree.mixed)
    library = library_for(config) if accurate else None
    own_tree = accurate and config.accurate_tree is AccurateTree.library
    # given distances (the API's) make the tree, by the same rules, also on the large path
    pivots = large and not distances_given
    distance = (Distance.given if tree_given else Distance.supplied if distances_given else
                Distance.pivots if pivots else Distance.library if own_tree else Distance(method))
    tree = Tree.given if tree_given else Tree.partition if pivots else tree
    # FAMSA's tree (rebuilding it lowered Balifam 1000's TC from 0.569 to 0.531) and long
    # sequences' tree (the rebuild changed 1,000 genomes' SP/TC by 0.0005 at twice the time) are kept
    kept = (config.distance is DistanceMethod.auto and config.tree is TreeMethod.auto
            and (long or method is DistanceMethod.lcs))
    rebuilds = not (tree_given or pivots or own_tree or kept) and 2 < n <= config.retree_max_seqs
    retree = config.retree if rebuilds else 0
    # refinement rounds: with the posteriors it lowered TC (BAliBASE 0.5846 to 0.5729)
    planned = config.maxiterate if config.maxiterate is not None else (
        ACCURATE_ITERATIONS if accurate and library is not Library.posterior else 0)
    # refinement along the columns' gap patterns (FAMSA's and MUSCLE's cuts) only when asked: as the
    # default for FAMSA-sized families it lowered extHomFam's dev set (TC 0.6982 to 0.6845; NOTES.md)
    by_columns = config.refine_splits is RefineSplits.columns
    # gaps: counts let long profiles' columns slip apart, and refinement under counts need not converge;
    # elsewhere the count model; from lcs_min_seqs sequences (or k-mers blind) outside accurate mode,
    # where FAMSA's tree is taken, FAMSA's count model exactly (exact opens: the merge's sum of pairs)
    # with the DP in 1/1000 of a matrix unit, rounded to the nearest (issue 42; smaller families of
    # BAliBASE and balifam100 lost TC with it)
    many = famsa_sized and not accurate
    gap_model = config.gap_model
    if gap_model is GapModel.auto:
        gap_model = GapModel.flat if long or planned > 0 else GapModel.exact if many else GapModel.counts
    scale = config.profile_scale if config.profile_scale is not None else 1000 if many else 100
    factor = gap_factor(config.gap_scaling_n or n) if gap_model is not GapModel.flat and config.gap_scaling else 1.0
    matrix, go, ge, offset = DEFAULTS[alphabet_for(seqtype).name]
    if large:
        offset = config.large_matrix_offset
    cells = int(n * (n - 1) // 2 * mean * mean) if accurate else int(n * (1 + config.retree) * mean * mean)
    return Recipe(
        n_seqs=n, mean_length=mean, max_length=longest, seqtype=seqtype, mode=mode,
        distance=distance, tree=tree, retree=retree, library=library,
        objective=objective_for(config.objective, accurate, library, seqtype),
        iterations=0 if large else planned,
        matrix=config.matrix or matrix,
        matrix_offset=config.matrix_offset if config.matrix_offset is not None else offset,
        gap_open=config.gap_open if config.gap_open is not None else go,
        gap_extend=config.gap_extend if config.gap_extend is not None else ge,
        gap_model=gap_model, gap_factor=factor, weights=Weights.equal if large else config.weights,
        profile_scale=scale, long=long, divergence=long and distance is Distance.kmer,
        spanning=n >= SPANNING_MIN_SEQS and distance is Distance.lcs and tree is Tree.single,
        refine_splits=config.refine_splits,
        refine_cuts=config.refine_cuts or (COLUMN_CUTS if by_columns else 0),
        # computed distances (not the library's, the pivots' or given ones), only for the tree
        streamed=not config.keep_distances and distance.asked and retree == 0,
        dp_cells=cells,
        # opt-in: every sequence realigned to its family's profile, in fast mode, up to REALIGN_MAX_SEQS
        realign=config.realign if mode is Mode.fast and n <= REALIGN_MAX_SEQS else 0,
        # the library's weight, in the DP's fixed point (read where there is a library)
        consistency=int(round(config.consistency * scale)))


def library_for(config: AlignerConfig) -> Library:
    """Accurate mode's library: the one asked for, else (auto) the pair-HMM
    posteriors, ProbCons' model for protein and ProbConsRNA's for
    nucleotides (issue 57: bralibase3_dev 0.650 / 0.201 with the
    local-alignment library, 0.833 / 0.317 with ProbConsRNA's).

    >>> library_for(AlignerConfig()), library_for(AlignerConfig(library_mode="local"))
    (<Library.posterior: 'posterior'>, <Library.local: 'local'>)
    """
    return Library.posterior if config.library_mode is Library.auto else config.library_mode


def objective_for(asked: Objective, accurate: bool, library: Library | None, seqtype: SeqType) -> Objective:
    """The merges' objective: ``mea`` (the library alone, ProbCons' maximum
    expected accuracy) only in accurate mode, where asked or, with ``auto``,
    for nucleotides' pair-HMM library, as ProbConsRNA aligns (issue 57:
    bralibase3_dev 0.8329 / 0.3174 with ``sp``, 0.8377 / 0.3180 with it);
    ``sp`` otherwise.

    >>> auto, mea, post = Objective.auto, Objective.mea, Library.posterior
    >>> [objective_for(auto, True, post, t).value for t in (SeqType.rna, SeqType.dna, SeqType.protein)]
    ['mea', 'mea', 'sp']
    >>> objective_for(auto, True, Library.global_, SeqType.rna).value, objective_for(mea, False, None, SeqType.protein).value
    ('sp', 'sp')
    """
    if not accurate:
        return Objective.sp
    if asked is Objective.auto:
        return Objective.mea if library is Library.posterior and seqtype is not SeqType.protein else Objective.sp
    return asked


def part_recipe(recipe: Recipe, seqs: Sequences) -> Recipe:
    """The recipe of a part of a family (a large family's subtree, aligned
    along its given tree): the family's choices, its scoring included (the
    gap factor of the whole family, not the part's)."""
    return replace(recipe, n_seqs=len(seqs), n_input=0, expands_distances=True, mean_length=seqs.mean_length,
                   max_length=int(seqs.lengths.max()), distance=Distance.given, tree=Tree.given, retree=0,
                   streamed=False,
                   spanning=False, dp_cells=int(len(seqs) * seqs.mean_length ** 2))


def gap_factor(n_seqs: int) -> float:
    """FAMSA 2's gap-cost factor for a family of ``n_seqs``: 1 up to 45
    sequences, then 1 + log2(N / 45) / 7 (1.64 at 1,000, 2.12 at 10,000).

    >>> gap_factor(45), round(gap_factor(1000), 3)
    (1.0, 1.639)
    """
    return 1.0 + math.log2(n_seqs / 45) / 7 if n_seqs > 45 else 1.0


def describe(recipe: Recipe, backend: str | None = None) -> str:
    """The recipe in one line, as the command line prints it.

    >>> r = Recipe(2106, 163.0, 410, "protein", "fast", "lcs", "single", 0, None, "sp", 0, "BLOSUM62", 0.0,
    ...            13.0, 0.8, "counts", 1.8, "tree")
    >>> describe(r, "gpu")
    '2,106 sequences, mean length 163: fast, LCS distances, FAMSA single-linkage tree, count-based gaps x1.80, no refinement, GPU'

    One distinct sequence has nothing to align: it is written as it is
    (each copy of it, where it is repeated), and the line says so.

    >>> describe(replace(r, n_seqs=1, mean_length=163.0), "gpu"), describe(replace(r, n_seqs=1, n_input=3))
    ('1 sequence, length 163: nothing to align', '3 sequences, all the same, length 163: nothing to align')
    """
    if recipe.n_seqs == 1:
        head = "1 sequence" if recipe.n_input <= 1 else f"{recipe.n_input:,} sequences, all the same"
        return f"{head}, length {recipe.mean_length:,.0f}: nothing to align"
    parts = [recipe.mode.value + (" (long sequences)" if recipe.long else "")]
    if recipe.library is not None:
        name = recipe.library.description
        if recipe.library is Library.posterior and recipe.seqtype is not SeqType.protein:  # which model ran (issue 57)
            name = "ProbConsRNA " + name
        if recipe.subtrees:  # accurate mode in pieces (issue 58)
            parts[0] += (f" in subtrees of at most {recipe.subtrees:,} sequences, each with its own {name}, merged "
                         "along the fast tree")
        else:
            parts.append(name + (", " + Objective.mea.description if recipe.objective is Objective.mea else ""))
    if recipe.distance is Distance.given:
        parts.append(Distance.given.description)
    else:
        parts.append(("k-mer divergences" if recipe.divergence else recipe.distance.description) + ", "
                     + recipe.tree.description + (f", rebuilt {recipe.retree}x" if recipe.retree else ""))
    if recipe.objective is Objective.sp:
        parts.append(recipe.gap_model.description
                     + (f" x{recipe.gap_factor:.2f}" if recipe.gap_factor != 1.0 else ""))
    if recipe.fragments:
        parts.append(f"{recipe.fragments:,} fragment{'s' if recipe.fragments > 1 else ''} last")
    if recipe.weights is Weights.equal:
        parts.append(Weights.equal.description)
    rounds = recipe.iterations
    parts.append(f"refinement up to {rounds} round{'s' if rounds > 1 else ''}" if rounds else "no refinement")
    if backend is not None:
        parts.append(_where(backend))
    head = (f"{recipe.n_input:,} sequences ({recipe.n_seqs:,} distinct)" if recipe.n_input > recipe.n_seqs
            else f"{recipe.n_seqs:,} sequences") + f", mean length {recipe.mean_length:,.0f}"
    return f"{head}: " + ", ".join(parts)


def mode_rule(config: AlignerConfig, recipes: list[Recipe]) -> str:
    """What the recipe line adds where ``--mode auto`` chose the mode: the
    rule it chose by (nothing where no family had a choice to make: one
    sequence, or one distinct sequence, is not aligned).

    >>> r = recipe_from(AlignerConfig(), 4, 100.0, 120)
    >>> mode_rule(AlignerConfig(), [r])
    ' (mode auto: accurate up to 200 sequences of up to 2,000 residues, large from 20,000 sequences)'
    >>> mode_rule(AlignerConfig(mode="fast"), [r]), mode_rule(AlignerConfig(), [replace(r, n_seqs=1)])
    ('', '')
    """
    if Mode(config.mode) is not Mode.auto or all(r.n_seqs == 1 for r in recipes):
        return ""
    return (f" (mode auto: accurate up to {config.accurate_max_seqs:,} sequences of up to "
            f"{config.accurate_max_length:,} residues, large from {config.large_min_seqs:,} sequences)")


def summary(recipes: list[Recipe], backend: str | None = None) -> str:
    """A batch's recipes in one line: how many families take each mode.

    >>> r = Recipe(10, 100.0, 120, "protein", "fast", "kmer", "mixed", 1, None, "sp", 0, "BLOSUM62", 0.0,
    ...            13.0, 0.8, "counts", 1.0, "tree")
    >>> summary([r, r, replace(r, mode="large", tree="partition", distance="pivots", retree=0)], "cpu")
    '3 families: fast 2, large 1, CPU'
    """
    modes = [r.mode for r in recipes]
    counts = ", ".join(f"{m.value} {modes.count(m)}" for m in (Mode.accurate, Mode.fast, Mode.large) if modes.count(m))
    tail = f", {_where(backend)}" if backend is not None else ""
    return f"{len(recipes):,} families: {counts}{tail}"


def _where(backend: str) -> str:
    """A backend's name as the recipe line says it ("cpu" as CPU; others as given)."""
    return {"cpu": "CPU", "gpu": "GPU"}.get(backend, backend)
