"""The choices the options name and a recipe holds, as light enums (no
numpy): the command line builds its help from them without importing the
engines, and `msa_gpu.settings.config`, `msa_gpu.recipe`, `msa_gpu.types`,
`msa_gpu.alphabet` and `msa_gpu.backend.pairwise` take them from here.

Each choice of a family's recipe is one enum (`Choice`), whose members are
its whole vocabulary: a member's value is what the recipe holds, its
``description`` what the recipe line says (`msa_gpu.recipe.describe`), and
``asked`` whether an option may name it (the rest are outcomes only: a
partition tree, given distances). The builder of each built member is in
one table beside the step that builds it (`msa_gpu.pipeline.builders`: the
rules and the types stand below the stages). An option's enum, where it
may not name every member (``--tree``, ``--distance``), is made from its
choice's (`Choice.options`).

>>> Tree.single.description, Tree.partition.asked, [m.value for m in TreeMethod]
('FAMSA single-linkage tree', False, ['auto', 'upgma', 'nj', 'mixed', 'single'])
>>> Tree("nj") is Tree.nj, TreeMethod.nj == Tree.nj, f"{Tree.nj}"
(True, True, 'nj')
"""

from __future__ import annotations

import enum


class Choice(enum.StrEnum):
    """One choice's vocabulary: each member is its value (a ``str``, so it is
    written and compared as one), with a ``description`` and whether an
    option may ask for it (``asked``)."""

    description: str
    asked: bool

    def __new__(cls, value: str, description: str = "", asked: bool = True):
        member = str.__new__(cls, value)
        member._value_ = value
        member.description = description
        member.asked = asked
        return member

    @classmethod
    def options(cls, name: str, auto: bool = True) -> type[enum.Enum]:
        """The enum an option takes: ``auto`` (the recipe's rule decides),
        then the members it may ask for, in this enum's order."""
        members = ([("auto", "auto")] if auto else []) + [(m.name, m.value) for m in cls if m.asked]
        return enum.Enum(name, members, type=str, module=__name__, qualname=name)  # type: ignore[return-value]


class SeqType(str, enum.Enum):
    """Kind of sequence; ``auto`` means detect from the residues."""

    auto = "auto"
    protein = "protein"
    dna = "dna"
    rna = "rna"


class Mode(Choice):
    """The family's mode (``auto``: by size, `msa_gpu.recipe`; a recipe holds one of the others)."""

    auto = "auto", "accurate for small families, fast otherwise (as MAFFT's --auto)"
    fast = "fast", "progressive alignment on profile scores (MAFFT FFT-NS-2 class)"
    accurate = "accurate", "pair-HMM posterior consistency library (MAFFT L-INS-i class)"
    large = "large", "k-mer pivots and partition tree, no N x N matrix (auto from large_min_seqs)"


class Distance(Choice):
    """The first guide tree's distances: computed (the options' ``--distance``;
    auto: lcs from lcs_min_seqs sequences, kmer below), the consistency
    library's, k-mer pivots (the large path: no N x N matrix), none (a tree
    given) or the API caller's (supplied)."""

    kmer = "kmer", "k-mer distances"  # shared k-mers: fast
    align = "align", "alignment distances"  # 1 - identity of all-pairs global alignments: slower
    lcs = "lcs", "LCS distances"  # FAMSA 2's indel^0.75 / LCS of all pairs (bit-parallel LCS)
    library = "library", "distances from the library", False
    pivots = "pivots", "k-mer distances to pivots", False
    given = "given", "a given guide tree", False
    supplied = "supplied", "given distances", False


class Tree(Choice):
    """The guide tree (the options' ``--tree``; auto: single linkage on LCS
    distances, NJ for long sequences, else mixed below upgma_min_seqs and
    UPGMA from there), or the large path's partition tree, or a given one."""

    upgma = "upgma", "UPGMA tree"
    nj = "nj", "midpoint-rooted NJ tree"
    mixed = "mixed", "mixed-linkage tree"  # MAFFT-style: 0.1 average + 0.9 minimum linkage
    single = "single", "FAMSA single-linkage tree"  # minimum linkage (FAMSA's default tree, on LCS similarities)
    partition = "partition", "partition tree", False
    given = "given", "a given guide tree", False


#: The options' enums of ``--tree`` and ``--distance``: auto and the members they may ask for.
TreeMethod = Tree.options("TreeMethod")
DistanceMethod = Distance.options("DistanceMethod")


class Library(Choice):
    """Accurate mode's consistency library (auto: the pair-HMM posteriors)."""

    auto = "auto", "the pair-HMM posteriors"
    posterior = "posterior", "pair-HMM posterior library"
    local = "local", "local-alignment library"
    global_ = "global", "global-alignment library"
    both = "both", "local and global library"


class Objective(Choice):
    """The merges' objective (auto: mea for nucleotides' pair-HMM libraries, sp otherwise)."""

    auto = "auto", "mea for nucleotides' pair-HMM libraries, sp otherwise"
    sp = "sp", "sum of pairs: matrix, gaps and library"
    mea = "mea", "MEA objective"  # the library alone, no gap costs (ProbCons' maximum expected accuracy)


class GapModel(Choice):
    """The profile DP's gap model (auto: `msa_gpu.recipe`'s rule; the kernels' codes:
    `msa_gpu.progressive.costs.GAP_MODELS`)."""

    auto = "auto", "counts, exact with FAMSA's tree outside accurate mode, flat for long sequences or refinement"
    flat = "flat", "flat gaps"
    counts = "counts", "count-based gaps"
    exact = "exact", "exact count-based gaps"


class Weights(Choice):
    """Sequence weights: ClustalW-style from the tree, or every sequence 1."""

    tree = "tree", "tree weights"
    equal = "equal", "equal weights"


class RefineSplits(Choice):
    """Refinement's cuts: the guide tree's bipartitions, or the columns' gap patterns."""

    tree = "tree", "the guide tree's bipartitions"
    columns = "columns", "the columns' gap patterns"


class AccurateTree(Choice):
    """Accurate mode's guide tree: from the library's alignments, or as fast mode (k-mers, with retree)."""

    library = "library", "from the library's alignments"
    kmer = "kmer", "as fast mode"


class FragmentPlace(str, enum.Enum):
    """Where fragments join (`msa_gpu.recipe`): where the guide tree puts them, or last."""

    tree = "tree"
    last = "last"


class BackendChoice(str, enum.Enum):
    auto = "auto"
    cpu = "cpu"
    gpu = "gpu"


class PairMode(str, enum.Enum):
    """Pairwise alignment mode."""

    global_ = "global"
    semiglobal = "semiglobal"
    local = "local"
