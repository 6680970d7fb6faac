"""AlignerConfig: every knob of an alignment run, frozen and validated."""

from __future__ import annotations

import os
from dataclasses import dataclass

from msa_gpu.settings.choices import (AccurateTree, BackendChoice, DistanceMethod, FragmentPlace, GapModel, Library, Mode,
                             Objective, RefineSplits, SeqType, TreeMethod, Weights)


#: Largest gap cost or matrix offset accepted, in matrix units: keeps every
#: fixed-point product in the DP far inside int32 (100 x 1000 x 1024 < 2^31).
MAX_COST = 1000.0


@dataclass(frozen=True)
class AlignerConfig:
    """Settings of one alignment run. The rules that resolve each ``auto``
    for one family (its mode, distances, tree, library, gaps, rounds) live in
    `msa_gpu.recipe`, which turns these settings into the family's `Recipe`.

    ``gap_open``/``gap_extend``/``matrix`` left as ``None`` take the defaults
    of the detected sequence type (`DEFAULTS`). ``terminal_open`` and
    ``terminal_extend`` scale the gap costs at either end of a profile;
    ``gap_pair`` (matrix units) is charged for each weighted residue pair that
    faces an existing gap when two columns are matched (``gap_model`` flat);
    with ``gap_model`` counts each existing gap is charged by its own state
    instead (an opening gap the open and extension costs, a continuing one the
    extension, a terminal one the terminal costs) and each new gap column's
    extension by the state of every sequence it is inserted into (FAMSA and
    MUSCLE's count-based profile gaps), and ``gap_scaling`` multiplies the gap
    costs by 1 + log2(N / 45) / 7 for a family of N > 45 sequences (FAMSA 2).
    ``gap_model`` exact charges each new gap's open where its run starts and
    credits back the open of an existing gap the run continues, and rounds
    its fixed point to the nearest rather than down (the merge's objective is
    its sum of pairs). ``gap_model`` auto takes counts, exact
    where FAMSA's tree is taken outside accurate mode (from ``lcs_min_seqs``
    sequences, or where k-mers are blind; with ``profile_scale`` 1000 there,
    else 100), except for a family that gets
    refinement rounds (accurate mode, ``maxiterate``), which keeps flat: there
    counts measured no better, and refinement under counts need not reach a
    fixed point (a cut's gap states change with each realignment); see
    `msa_gpu.recipe`. ``retree`` rebuilds
    the guide tree from the alignment that many times (MAFFT's FFT-NS-2 is
    ``retree=1`` here); families of more than ``retree_max_seqs`` sequences
    are not rebuilt (identities over all pairs and columns cost O(n^2 L):
    about 140 s and 8 GB for 10,000 sequences on 2 CPU cores). The defaults were chosen on BAliBASE 3 (see
    benchmarks/results/). ``mode`` picks fast or accurate (a consistency
    library, ``library_mode``: the pair-HMM posteriors, or all-pairs
    alignments, weighted by ``consistency`` matrix units, and ``maxiterate``
    refinement rounds, default none with the posteriors and
    `ACCURATE_ITERATIONS` with alignments; cuts over ``refine_max_cells`` DP cells
    are not realigned: on BAliBASE they are 12% of the families and 71% of
    the cells). Accurate mode on a family of more than ``accurate_subtree_seqs``
    sequences aligns it in pieces (issue 58): its fast-mode guide tree is cut
    into subtrees of at most that many, each subtree is aligned in accurate
    mode with its own library, and their profiles are merged along the tree
    above the cut with the fast mode's scoring, so the library's memory and
    pairs grow about linearly with the family. ``mode`` large (auto: from ``large_min_seqs`` sequences)
    builds no N x N matrix: k-mer distances to ``large_pivots`` pivots
    (0: automatic) partition the family down to clusters of
    ``large_cluster`` (`msa_gpu.tree.partition`); sequence weights are equal and
    the matrix takes ``large_matrix_offset`` (unless ``matrix_offset`` is
    set), which keeps unrelated columns from splitting (without it a
    progressive alignment of 1M synthetic proteins of 300 residues grew past
    25,000 columns). Merges of more than ``anchor_cells`` DP cells are cut
    at exact k-mer matches of the two profiles' consensus sequences, chained
    (`msa_gpu.progressive.anchors`), and only the pieces between them go
    through the DP (0: never). Merges, or pieces, of more than
    ``long_cells`` DP cells use the checkpointed kernel, whose memory grows
    as (m + n)^1.5.

    With ``keep_distances`` False (the command line's batch mode), a family
    whose matrix serves only its guide tree (no rebuild, none given) gets its
    matrix and tree one after the other, and the matrix is dropped once the
    tree is built (its result's ``distances`` is None): the trees are built on
    host threads while the next matrices are computed, as many matrices in
    flight as ``tree_memory`` bytes hold (at least one), so a batch of large
    families never holds all its N x N matrices at once. The alignments are
    the same either way.

    On the CPU backend, a batch whose pair-HMM libraries would hold more than
    ``library_memory`` bytes at once (their memory plans added up,
    `msa_gpu.consistency.library_waves`) is aligned in waves of families that
    fit (a family over it alone), one after the other, and each wave's
    libraries are let go before the next is built: those results carry no
    ``library``. A family's alignment does not depend on its wave.
    """

    seqtype: SeqType = SeqType.auto
    backend: BackendChoice = BackendChoice.auto
    tree: TreeMethod = TreeMethod.auto
    upgma_min_seqs: int = 500
    distance: DistanceMethod = DistanceMethod.auto
    lcs_min_seqs: int = 500  # distance auto: FAMSA's LCS distances and single-linkage tree from here (and where k-mers are blind)
    lcs_max_length: int = 3000  # ... for families of at most this mean length; longer ones are long (Recipe.long)
    nj_max_seqs: int = 2000  # long families take NJ up to this many sequences (it is cubic), UPGMA above
    matrix: str | None = None
    gap_open: float | None = None
    gap_extend: float | None = None
    terminal_open: float = 0.0
    terminal_extend: float = 0.5
    matrix_offset: float | None = None
    retree: int = 1
    retree_max_seqs: int = 2000
    gap_pair: float = 0.6
    profile_scale: int | None = None  # fixed-point units per matrix unit in the profile DP (None: the recipe's)
    gap_model: GapModel = GapModel.auto  # auto: counts (exact with FAMSA's tree outside accurate mode), flat for long sequences
    # and where a family gets refinement rounds
    gap_scaling: bool = True  # with counts: gap costs x (1 + log2(N / 45) / 7) from 45 sequences (FAMSA 2)
    gap_scaling_n: int = 0  # the N of gap_scaling (0: the family's own)
    long_cells: int = 1 << 26
    anchor_cells: int = 1 << 24  # merges over this many DP cells are cut at k-mer anchors (0: never; issue 31)
    # backend auto: the CPU where its expected seconds for the work (backend/cost.py) are at most this, the GPU's
    # start-up beyond the CPU's (0.5 s on the H100 host); 0: the GPU whenever one is usable
    cpu_max_seconds: float = 0.5
    threads: int | None = None
    mode: Mode = Mode.auto
    maxiterate: int | None = None
    consistency: float = 40.0
    # auto: the pair-HMM posteriors (ProbCons' model for protein, ProbConsRNA's for nucleotides); posterior, local,
    # global, both
    library_mode: Library = Library.auto
    # sp: matrix, gaps and library; mea: the library alone, no gap costs (ProbCons); auto: mea for nucleotides'
    # pair-HMM libraries (ProbConsRNA's model), sp otherwise (msa_gpu.recipe)
    objective: Objective = Objective.auto
    library_weight: str = "identity"
    library_gap_open: float = 11.0
    library_gap_extend: float = 1.0
    refine_max_cells: int = 1500 * 1500
    refine_splits: RefineSplits = RefineSplits.tree  # refinement's cuts: the guide tree's bipartitions, or the columns' gap patterns ("columns")
    realign: int = 0  # rounds of every sequence realigned to its family's profile (msa_gpu.refine.realign)
    refine_cuts: int = 0  # cuts tried per family and round, drawn at random (seeded); 0: every cut
    weights: Weights = Weights.tree  # tree: ClustalW-style sequence weights; equal: every sequence 1
    fragments: FragmentPlace = FragmentPlace.tree  # tree: fragments merged where the guide tree puts them; last: after the rest (msa_gpu.recipe)
    accurate_tree: AccurateTree = AccurateTree.library  # library: from the library's alignments; kmer: as fast mode, with retree
    accurate_max_seqs: int = 200
    accurate_max_length: int = 2000
    # accurate mode over more sequences than this (--mode accurate on a large family): subtrees of at most this
    # many cut from the fast guide tree, each with its own library, merged along that tree with the fast scoring
    accurate_subtree_seqs: int = 200
    accurate_subtree_min: int = 1  # subtrees of fewer sequences stay in the fast merges (1: every subtree accurate)
    large_min_seqs: int = 20000
    large_pivots: int = 0  # 0: 4 sqrt(n) within 64..2048 (large_tree.pivot_count)
    large_cluster: int = 300
    large_matrix_offset: float = 3.0  # matrix units added to every entry on the large path
    dedupe: bool = True  # identical sequences aligned once and copied
    keep_distances: bool = True  # False: a matrix lives only until its tree is built (results carry None)
    tree_memory: int = 2 << 30  # bytes of distance matrices in flight while trees are built (keep_distances=False)
    library_memory: int = 1 << 30  # CPU: bytes of pair-HMM libraries a batch holds at once; over it, waves (above)

    def __post_init__(self) -> None:
        for name in _CHOICES:  # each choice as its enum (`msa_gpu.settings.choices`), from its value
            enum_type = type(getattr(AlignerConfig, name))
            try:
                object.__setattr__(self, name, enum_type(getattr(self, name)))
            except ValueError:
                allowed = ", ".join(repr(m.value) for m in enum_type)
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}") from None
        for name in ("gap_open", "gap_extend", "gap_pair", "matrix_offset", "large_matrix_offset"):
            value = getattr(self, name)
            low = -MAX_COST if name.endswith("matrix_offset") else 0.0
            if value is not None and not (low <= value <= MAX_COST):  # also rejects nan
                raise ValueError(f"{name} must lie in [{low:g}, {MAX_COST:g}] (matrix units), got {value}")
        for name in ("terminal_open", "terminal_extend"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1]")
        if self.retree < 0 or self.retree > 10:
            raise ValueError("retree must lie in 0..10")
        if self.threads is not None and self.threads < 1:
            raise ValueError("threads must be >= 1")
        if self.maxiterate is not None and not 0 <= self.maxiterate <= 100000:
            raise ValueError("maxiterate must lie in 0..100000")
        if self.anchor_cells < 0:
            raise ValueError("anchor_cells must be >= 0 (0: no anchors)")
        if self.refine_cuts < 0:
            raise ValueError("refine_cuts must be >= 0")
        if self.realign < 0:
            raise ValueError("realign must be >= 0")
        if self.gap_scaling_n < 0:
            raise ValueError("gap_scaling_n must be >= 0")
        if self.accurate_subtree_seqs < 1 or self.accurate_subtree_min < 1:
            raise ValueError("accurate_subtree_seqs and accurate_subtree_min must be >= 1")
        if self.lcs_min_seqs < 1:
            raise ValueError("lcs_min_seqs must be >= 1")
        if self.large_pivots < 0 or self.large_cluster < 2 or self.large_min_seqs < 1:
            raise ValueError("large_pivots must be >= 0, large_min_seqs >= 1, large_cluster >= 2")
        if self.tree_memory < 1:
            raise ValueError("tree_memory must be >= 1 byte")
        if self.library_memory < 1:
            raise ValueError("library_memory must be >= 1 byte")
        if self.profile_scale is not None and not 1 <= self.profile_scale <= 1000:
            raise ValueError("profile_scale must lie in 1..1000")
        costs = [c for c in (self.gap_open, self.gap_extend, self.gap_pair, self.matrix_offset) if c is not None]
        if max(map(abs, costs), default=0.0) * (self.profile_scale or 1000) > MAX_COST * 100:
            raise ValueError(f"gap costs and offsets times profile_scale must stay within {MAX_COST * 100:g} "
                             "(the DP's 32-bit products)")
        if not 0.0 <= self.consistency <= MAX_COST:
            raise ValueError(f"consistency must lie in [0, {MAX_COST:g}] (matrix units)")

    def tree_builders(self, matrix_bytes: int) -> int:
        """Host threads building guide trees beside the distance stream of a
        batch whose largest matrix takes ``matrix_bytes``: each holds a matrix
        and its working copy beside the one being computed, within
        ``tree_memory`` (at least one; at most ``threads``, the CPU count, 8)."""
        return max(1, min((self.tree_memory - matrix_bytes) // (2 * matrix_bytes),
                          self.threads or os.cpu_count() or 1, 8))


#: The settings that are choices (`msa_gpu.settings.choices`): each held as its enum.
_CHOICES = ("seqtype", "backend", "tree", "distance", "mode", "gap_model", "library_mode", "objective",
            "refine_splits", "weights", "fragments", "accurate_tree")

#: From this many sequences single linkage runs through Prim's minimum
#: spanning tree (tree.single_linkage), below it by mixed linkage with no
#: average share: the same clusters, ties possibly in another order.
SPANNING_MIN_SEQS = 257

#: Refinement rounds of accurate mode with a library of alignments (``library_mode`` local, global or both)
#: unless ``maxiterate`` says otherwise; the pair-HMM posteriors take none.
ACCURATE_ITERATIONS = 10


#: Defaults per alphabet: (matrix, gap open, gap extend, matrix offset), in
#: the matrix's own units. Tuned on BAliBASE 3 (see benchmarks/results).
DEFAULTS = {
    "protein": ("BLOSUM62", 13.0, 0.8, 0.0),
    # Kalign 3's DNA scoring: +5/-4 (NUC.4.4's A/C/G/T block), gap open 8 and extension 6 (its
    # set_subm_gaps_DNA), taken as this DP's open and extension (issue 57: bralibase3_dev in fast mode,
    # 0.542 / 0.178 with 12 / 1, 0.765 / 0.250 with these)
    "nucleotide": ("NUC.4.4", 8.0, 6.0, 0.0),
}
