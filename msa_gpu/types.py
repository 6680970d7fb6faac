"""The small frozen types that cross stage boundaries.

``Sequences -> DistanceMatrix -> GuideTree -> MergeSchedule -> Alignment``
(then `msa_gpu.result.AlignResult`, which carries them all to the user), and
the intermediate products `ConsistencyLibrary` and `KmerSets`.

Each checks its invariants when it is built, so a later stage can trust it.
This module imports nothing of the stages: rendering and writing live in
`msa_gpu.io`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from msa_gpu.alphabet import Alphabet, SeqType
from msa_gpu.settings.choices import Distance, GapModel, Library, Mode, Objective, RefineSplits, Tree, Weights


def _symmetric(v: np.ndarray, tile: int = 512) -> bool:
    """``v == v.T``, compared tile by tile: the whole transpose walks memory
    column-wise (0.5 s for 10,000 x 10,000, against under 0.1 s in tiles).

    >>> _symmetric(np.array([[0.0, 1.0], [1.0, 0.0]])), _symmetric(np.array([[0.0, 1.0], [2.0, 0.0]]))
    (True, False)
    """
    n = v.shape[0]
    for i in range(0, n, tile):
        for j in range(i, n, tile):
            if not np.array_equal(v[i:i + tile, j:j + tile], v[j:j + tile, i:i + tile].T):
                return False
    return True


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Sequences:
    """Unaligned input: names, the original residue bytes (gaps removed,
    case kept) and their integer codes."""

    names: tuple[str, ...]
    raw: tuple[bytes, ...]
    codes: tuple[np.ndarray, ...]
    seqtype: SeqType
    alphabet: Alphabet

    def __post_init__(self) -> None:
        if not (len(self.names) == len(self.raw) == len(self.codes)):
            raise ValueError("names, raw and codes differ in length")
        if self.seqtype is SeqType.auto:
            raise ValueError("Sequences needs a resolved sequence type")
        for name, r, c in zip(self.names, self.raw, self.codes):
            if len(r) != len(c):
                raise ValueError(f"sequence {name!r}: codes and residues differ in length")
            if len(r) == 0:
                raise ValueError(f"sequence {name!r} is empty")
        for c in self.codes:
            c.setflags(write=False)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(c) for c in self.codes], dtype=np.int64)

    @property
    def mean_length(self) -> float:
        """The mean sequence length (0 for no sequences): what the guide-tree
        rules take (`msa_gpu.recipe`)."""
        return float(self.lengths.mean()) if len(self) else 0.0


@dataclass(frozen=True)
class DistanceMatrix:
    """Symmetric pairwise distances with a zero diagonal, in input order."""

    values: np.ndarray
    method: str

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=np.float64)
        if v.ndim != 2 or v.shape[0] != v.shape[1]:
            raise ValueError("a distance matrix must be square")
        if v.size and not (v.min() >= 0.0 and v.max() < np.inf):  # NaN fails both
            raise ValueError("distances must be finite and non-negative")
        if not _symmetric(v) or np.diag(v).any():
            raise ValueError("distances must be symmetric with a zero diagonal")
        object.__setattr__(self, "values", _frozen(v))

    def __len__(self) -> int:
        return self.values.shape[0]


@dataclass(frozen=True)
class GuideTree:
    """A rooted binary tree as flat arrays.

    Leaves are ``0..n-1``; row ``k`` of ``children`` creates internal node
    ``n + k`` from two earlier nodes, with branch ``lengths[k]``. The root is
    ``2n - 2``.
    """

    n_leaves: int
    children: np.ndarray  # int64 (n-1, 2)
    lengths: np.ndarray  # float64 (n-1, 2)

    def __post_init__(self) -> None:
        n = self.n_leaves
        ch = np.asarray(self.children, dtype=np.int64).reshape(-1, 2)
        ln = np.asarray(self.lengths, dtype=np.float64).reshape(-1, 2)
        if n < 1 or ch.shape[0] != n - 1 or ln.shape != ch.shape:
            raise ValueError("a tree of n leaves needs n-1 merge rows")
        if ch.size:
            made = n + np.arange(n - 1)
            if (ch < 0).any() or (ch >= made[:, None]).any():
                raise ValueError("each merge must join two earlier nodes")
            if np.bincount(ch.ravel(), minlength=2 * n - 1)[: 2 * n - 2].max() != 1:
                raise ValueError("each node must be merged exactly once")
        object.__setattr__(self, "children", _frozen(ch))
        object.__setattr__(self, "lengths", _frozen(np.maximum(ln, 0.0)))

    def pruned(self, leaf: np.ndarray) -> GuideTree:
        """The tree cut down to the leaves ``i`` with ``leaf[i] >= 0``, which
        become leaves ``leaf[i]`` (0..u-1): a parent left with one child
        collapses into it, whose branch takes the parent's length too.

        >>> t = GuideTree(3, np.array([[0, 1], [3, 2]]), np.ones((2, 2)))
        >>> p = t.pruned(np.array([0, -1, 1]))
        >>> p.children.tolist(), p.lengths.tolist()
        ([[0, 1]], [[2.0, 1.0]])
        """
        n = self.n_leaves
        leaf = np.asarray(leaf, dtype=np.int64)
        u = int(leaf.max()) + 1 if leaf.size else 0
        node = np.concatenate([leaf, np.full(n - 1, -1, dtype=np.int64)])  # each old node's new one, -1: pruned
        extra = np.zeros(2 * n - 1)  # length a collapsed node adds to the branch above it
        children, lengths = [], []
        for k, (a, b) in enumerate(self.children):
            la, lb = self.lengths[k]
            if node[a] >= 0 and node[b] >= 0:
                children.append((node[a], node[b]))
                lengths.append((la + extra[a], lb + extra[b]))
                node[n + k] = u + len(children) - 1
            elif node[a] >= 0 or node[b] >= 0:
                keep, length = (a, la) if node[a] >= 0 else (b, lb)
                node[n + k], extra[n + k] = node[keep], extra[keep] + length
        return GuideTree(u, np.array(children, dtype=np.int64).reshape(-1, 2), np.array(lengths).reshape(-1, 2))


@dataclass(frozen=True)
class MergeSchedule:
    """Tree merges grouped into levels: every merge of a level has both of its
    children finished by earlier levels. ``levels[h]`` holds merge rows."""

    levels: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(_frozen(np.asarray(l, dtype=np.int64)) for l in self.levels))

    @property
    def n_merges(self) -> int:
        return sum(len(l) for l in self.levels)


@dataclass(frozen=True)
class Alignment:
    """An alignment as its residue mask: ``mask()[s, c]`` is True where
    sequence ``s`` has its next residue in column ``c``, held packed, one bit
    a cell (twelve families of 10,000 sequences and up to 10,000 columns took
    2.5 GB as int32 traces, 78 MB as bits). `trace` gives the integer form:
    ``trace[s, c]`` is the 0-based residue index of ``s`` in ``c``, or -1 for
    a gap. Build one with `from_mask` or `from_trace`."""

    packed: np.ndarray  # uint8 (n_seqs, ceil(n_cols / 8)): np.packbits of the mask along rows
    n_cols: int

    def __post_init__(self) -> None:
        p = np.asarray(self.packed, dtype=np.uint8)
        if p.ndim != 2 or p.shape[1] != (self.n_cols + 7) // 8:
            raise ValueError("packed mask and column count disagree")
        object.__setattr__(self, "packed", _frozen(p))

    @classmethod
    def from_mask(cls, mask: np.ndarray) -> "Alignment":
        """From a boolean (n_seqs, n_cols) residue mask."""
        m = np.asarray(mask, dtype=bool)
        if m.ndim != 2:
            raise ValueError("a mask must be two-dimensional")
        return cls(np.packbits(m, axis=1), m.shape[1])

    @classmethod
    def from_trace(cls, trace: np.ndarray) -> "Alignment":
        """From an integer trace, which must list each row's residues 0, 1, ... in order."""
        t = np.asarray(trace)
        if t.ndim != 2:
            raise ValueError("a trace must be two-dimensional")
        aln = cls.from_mask(t >= 0)
        if not np.array_equal(aln.trace, np.where(t >= 0, t, -1)):
            raise ValueError("a trace must list each row's residues in order")
        return aln

    def row_mask(self, s: int) -> np.ndarray:
        return np.unpackbits(self.packed[s], count=self.n_cols).view(bool)

    def mask(self) -> np.ndarray:
        """The boolean (n_seqs, n_cols) residue mask."""
        return np.unpackbits(self.packed, axis=1, count=self.n_cols).view(bool)

    @property
    def trace(self) -> np.ndarray:
        """The integer trace (int32; made on each call)."""
        m = self.mask()
        return np.where(m, np.cumsum(m, axis=1, dtype=np.int32) - 1, np.int32(-1))

    def check(self, seqs: Sequences) -> None:
        """Raise unless every row holds its sequence's residues and no column
        is all gaps."""
        if self.packed.shape[0] != len(seqs):
            raise ValueError("alignment and sequences differ in count")
        mask = self.mask()
        counts = mask.sum(axis=1)
        for s, length in enumerate(seqs.lengths):
            if counts[s] != length:
                raise ValueError(f"row {seqs.names[s]!r} does not hold its residues in order")
        if self.packed.shape[0] and not mask.any(axis=0).all():
            raise ValueError("alignment has an all-gap column")

    def rows(self, seqs: Sequences, gap: bytes = b"-") -> list[bytes]:
        """The gapped rows as bytes, original characters and case kept."""
        return list(self.iter_rows(seqs, gap))

    def iter_rows(self, seqs: Sequences, gap: bytes = b"-"):
        """The gapped rows one at a time (for streaming large alignments)."""
        for s, raw in enumerate(seqs.raw):
            m = self.row_mask(s)
            idx = np.full(self.n_cols, len(raw), dtype=np.int64)
            idx[m] = np.arange(int(m.sum()))
            yield np.frombuffer(raw + gap, dtype=np.uint8)[idx].tobytes()


@dataclass(frozen=True)
class ConsistencyLibrary:
    """One family's consistency library, built from its all-pairs alignments.

    For each pair of sequences ``s < t`` (triangular index ``k``), entries
    ``pair_off[k]:pair_off[k+1]`` of ``x``, ``y`` and ``w`` say that residue
    ``x`` of ``s`` and residue ``y`` of ``t`` are aligned with weight ``w``:
    the sum over every sequence ``u`` of ``W(s,u) W(u,t)`` where the pairwise
    alignments put both opposite one residue of ``u`` (``u = s`` and ``u = t``
    are the direct alignment, with ``W(s,s) = LIBRARY_ONE``). ``x``, ``y``,
    ``w`` and ``pair_off`` live with the backend (NumPy or CuPy arrays).
    ``identity`` (host) holds the pairwise alignments' identities, for the
    guide tree.
    """

    n_seqs: int
    lengths: np.ndarray  # host int64 (n,)
    pair_off: object  # int64 (n(n-1)/2 + 1,)
    x: object  # int32 (E,)
    y: object  # int32 (E,)
    w: object  # int32 (E,)
    identity: np.ndarray  # host float64 (n, n)

    def __post_init__(self) -> None:
        n = self.n_seqs
        if self.lengths.shape != (n,) or self.identity.shape != (n, n):
            raise ValueError("library arrays disagree on the family's size")
        if int(self.pair_off.shape[0]) != n * (n - 1) // 2 + 1:
            raise ValueError("a library needs one entry range per pair of sequences")
        if not (self.x.shape == self.y.shape == self.w.shape):
            raise ValueError("library entries differ in length")
        object.__setattr__(self, "lengths", _frozen(self.lengths))
        object.__setattr__(self, "identity", _frozen(self.identity))

    @property
    def n_entries(self) -> int:
        return int(self.x.shape[0])


#: Fixed-point one of a pairwise alignment's weight in a library.
LIBRARY_ONE = 64


@dataclass(frozen=True)
class KmerSets:
    """Large-family stage 1: every sequence's distinct k-mer ids, sorted,
    ``ids[offsets[i]:offsets[i+1]]`` for sequence i; ids lie in
    ``0..width-1``. Distances are taken from these on demand (to pivots,
    inside small clusters), never as an N x N matrix."""

    ids: np.ndarray  # int32 (total,)
    offsets: np.ndarray  # int64 (n + 1,)
    width: int
    k: int
    distinct: np.ndarray = field(init=False, repr=False)  # int64 (n,), derived from offsets

    def __post_init__(self) -> None:
        off = np.asarray(self.offsets, dtype=np.int64)
        ids = np.asarray(self.ids, dtype=np.int32)
        if off.ndim != 1 or len(off) < 2 or off[0] != 0 or off[-1] != len(ids) or (np.diff(off) < 0).any():
            raise ValueError("k-mer offsets must rise from 0 to the number of ids")
        if len(ids) and (ids.min() < 0 or ids.max() >= self.width):
            raise ValueError("k-mer ids must lie in 0..width-1")
        object.__setattr__(self, "ids", _frozen(ids))
        object.__setattr__(self, "offsets", _frozen(off))
        object.__setattr__(self, "distinct", _frozen(np.diff(off)))  # k-mers of each sequence

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def gather(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The k-mer ids of ``members``, one after another, and their counts:
        the column indices and row lengths of their presence matrix."""
        counts = self.distinct[members]
        starts = np.repeat(self.offsets[members] - np.cumsum(counts) + counts, counts)
        return self.ids[starts + np.arange(int(counts.sum()))], counts


#: The fields of a `Recipe` that are choices, each held as its enum (`msa_gpu.settings.choices`: the choice's
#: whole vocabulary); a recipe holds no ``auto``, and ``library`` is None outside accurate mode.
RECIPE_CHOICES = {"seqtype": SeqType, "mode": Mode, "distance": Distance, "tree": Tree, "library": Library,
                  "objective": Objective, "gap_model": GapModel, "weights": Weights, "refine_splits": RefineSplits}


@dataclass(frozen=True)
class Recipe:
    """Every choice made for one family, decided once before any stage runs
    (`msa_gpu.recipe.recipe_for`): each stage reads its part and asks nothing
    again. It depends on the family (its distinct sequences: repeats are
    aligned once) and the run's options, never on the backend, so a command
    gives the same bytes everywhere.

    ``n_seqs``, ``mean_length`` and ``max_length`` describe the sequences the
    recipe was made for; ``long`` says they are genomes (mean over
    ``lcs_max_length``). ``retree`` is the number of times the guide tree is
    rebuilt from the alignment, ``iterations`` the refinement rounds.
    ``divergence``: k-mer distances as divergences (long sequences).
    ``spanning``: single linkage on LCS distances through Prim's spanning tree,
    no N x N matrix. ``streamed``: the matrix lives only until its tree is
    built. ``gap_open`` and ``gap_extend`` are in matrix units before
    ``gap_factor``. ``dp_cells`` estimates the DP work (backend auto's rule).
    ``profile_scale`` is the profile DP's fixed point (units per matrix unit).
    ``n_input`` counts the family's sequences with their repeats;
    ``expands_distances`` says whether the result's distance matrix is
    expanded back to all of them (not for an input the large path's size).
    Sequences shorter than ``fragment_length`` residues (``fragments`` of
    them) are merged last, one at a time above the others' tree
    (`msa_gpu.tree.fragments_last`). Refinement cuts the alignment along
    ``refine_splits`` (`msa_gpu.refine`), ``refine_cuts`` of them a round
    (0: all). ``subtrees`` > 0: accurate mode in pieces (`msa_gpu.aligner`):
    the other fields are the fast recipe's (its distances, tree, gaps and
    scoring, for the merges above the cut), ``library`` the pieces' own.
    ``realign``: rounds of every sequence realigned to its family's profile
    after refinement; ``consistency``: the library's weight in the profile
    DP, in its fixed point. The choices are held as their enums
    (`RECIPE_CHOICES`), made from their values when built."""

    n_seqs: int
    mean_length: float
    max_length: int
    seqtype: SeqType
    mode: Mode
    distance: Distance
    tree: Tree
    retree: int
    library: Library | None
    objective: Objective
    iterations: int
    matrix: str
    matrix_offset: float
    gap_open: float
    gap_extend: float
    gap_model: GapModel
    gap_factor: float
    weights: Weights
    long: bool = False
    divergence: bool = False
    spanning: bool = False
    streamed: bool = False
    dp_cells: int = 0
    profile_scale: int = 1000  # fixed-point units per matrix unit in the profile DP
    n_input: int = 0  # the family's sequences, repeats included (0: n_seqs)
    expands_distances: bool = True  # the result's matrix covers every input sequence (not for huge inputs)
    fragments: int = 0  # sequences merged last (shorter than fragment_length)
    fragment_length: int = 0
    refine_splits: RefineSplits = RefineSplits.tree  # refinement's cuts: the guide tree's bipartitions, or the columns' gap patterns
    refine_cuts: int = 0  # cuts tried per round, drawn at random (seeded); 0: every cut
    subtrees: int = 0  # accurate mode in pieces: subtrees of at most this many sequences (0: the whole family)
    realign: int = 0  # rounds of every sequence realigned to its family's profile (fast mode, opt-in)
    consistency: int = 0  # the library's weight in the profile DP's fixed point (its units per library unit)

    def __post_init__(self) -> None:
        for name, choice in RECIPE_CHOICES.items():
            value = getattr(self, name)
            if value is None and name == "library":
                continue
            try:
                member = choice(value)
                if member.value == "auto":
                    raise ValueError
            except ValueError:
                allowed = tuple(m.value for m in choice if m.value != "auto")
                raise ValueError(f"recipe {name} must be one of {allowed}, got {value!r}") from None
            object.__setattr__(self, name, member)
        if not 1 <= self.profile_scale <= 1000:
            raise ValueError("profile_scale must lie in 1..1000")
        if 0 < self.n_input < self.n_seqs:
            raise ValueError("a family has at least as many sequences as distinct ones")
        if self.n_seqs < 1 or self.max_length < 0 or self.retree < 0 or self.iterations < 0 or self.dp_cells < 0 \
                or self.refine_cuts < 0 or self.realign < 0 or self.consistency < 0 \
                or not 0 <= self.fragments < self.n_seqs or self.fragment_length < 0:
            raise ValueError("a recipe's counts must be non-negative (and n_seqs at least 1)")
        if (self.fragments > 0) != (self.fragment_length > 0) or (
                self.fragments and (self.mode is Mode.large or self.distance is Distance.given)):
            raise ValueError("fragments need their length, and are not set aside on the large path or along a given tree")
        if self.subtrees < 0 or (self.subtrees and (self.mode is not Mode.accurate or self.n_seqs <= self.subtrees
                                                    or self.distance is Distance.library)):
            raise ValueError("subtrees are accurate mode's pieces of a family of more sequences than them, "
                             "along a tree of the fast recipe's distances (not the whole family's library)")
        if (self.library is None) == (self.mode is Mode.accurate):
            raise ValueError("a recipe has a library exactly when its mode is accurate")
        if self.gap_factor < 1.0 or (self.gap_model is GapModel.flat and self.gap_factor != 1.0):
            raise ValueError("gap_factor is at least 1, and 1 under flat gaps")
        if self.distance is Distance.library and self.library is None:
            raise ValueError("library distances need a library")
        if self.spanning and (self.distance is not Distance.lcs or self.tree is not Tree.single):
            raise ValueError("a spanning tree is single linkage on LCS distances")
