"""Merging alignments (MAFFT's ``--merge`` and ``--seed``, Clustal Omega's
``--profile1``/``--profile2``): two or more existing alignments aligned to
each other, each one's columns kept.

Each input is one profile. A guide tree over the inputs (UPGMA of their mean
k-mer distances, over at most `SAMPLE` rows of each) orders the merges, and
each merge is stage 3's profile-profile DP, which only ever inserts gap
columns into a profile: every column of every input stays one column of the
output, its residues together (columns with no residue are dropped first).
Inside an input its own UPGMA tree only weights its rows. A single unaligned
sequence joins as an alignment of one row. In accurate mode, where all the
inputs together hold at most `ACCURATE_MOST` sequences, the merges also
score the pair-HMM posterior library between the inputs' sequences (the
consistency of accurate mode); above, fast mode's profile-profile scores.

Examples
--------
>>> out = merge_alignments([(["a", "b"], [b"MKTAYIAKQRQ", b"MKTAYI--QRQ"]), (["c"], [b"MKTAYIAKWWQRQ"])],
...                        AlignerConfig(backend="cpu"))
>>> [r.decode() for r in out.rows]
['MKTAYIAK--QRQ', 'MKTAYI----QRQ', 'MKTAYIAKWWQRQ']
>>> out.names
['a', 'b', 'c']
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from msa_gpu.alphabet import GAP_CHARS, SeqType, alphabet_for, detect, encode
from msa_gpu.backend import select_backend, set_threads
from msa_gpu.settings.choices import Library, Mode, Weights
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.consistency import on_backend, posterior_libraries, stack_libraries
from msa_gpu.distances import kmer_distance
from msa_gpu.errors import InputError
from msa_gpu.progressive import FamilyJob, Profile, alignment_codes, family_scoring, progressive_align
from msa_gpu.recipe import recipe_for
from msa_gpu.pipeline.subtrees import subset, top_schedule
from msa_gpu.tree import sequence_weights, upgma
from msa_gpu.types import Alignment, DistanceMatrix, GuideTree, Sequences

#: Rows of each input that its distance to the others is measured on.
SAMPLE = 64

#: Inputs of more rows get a balanced tree inside (their k-mer matrix would be large; it only weights rows).
WITHIN_MOST = 2000

#: Accurate mode's library spans the merge where the inputs hold at most this many sequences in all.
ACCURATE_MOST = 200


@dataclass(frozen=True)
class Merged:
    """The merged alignment: every input's rows, inputs in order (``names``,
    gapped ``rows``), each input's rows' indices (``groups``), the guide tree
    over all rows (each input a clade), how the merges were scored and the
    sequence type they were read as."""

    names: list[str]
    rows: list[bytes]
    groups: tuple[np.ndarray, ...]
    tree: GuideTree
    scoring: str
    seqtype: SeqType


def merge_alignments(inputs: list[tuple[list[str], list[bytes]]], config: AlignerConfig | None = None,
                     backend=None, seqtype: SeqType | str = SeqType.auto, any_symbol: bool = False) -> Merged:
    """``inputs``: each alignment's names and gapped rows ('-' or '.' a gap;
    a row of one unaligned sequence is an alignment of one). Returns the
    `Merged` alignment; see the module's doc."""
    if len(inputs) < 2:
        raise InputError("a merge takes at least two alignments (or sequences)")
    grids, filled, names = [], [], []  # each input's rows and residue mask, its empty columns dropped
    for g, (rows_names, rows) in enumerate(inputs, 1):
        if not rows:
            raise InputError(f"alignment {g} of the merge is empty")
        if len({len(r) for r in rows}) != 1:
            raise InputError(f"alignment {g} of the merge has rows of unequal length "
                             f"({rows_names[0]}: {len(rows[0])}; "
                             f"{next(n for n, r in zip(rows_names, rows) if len(r) != len(rows[0]))}: "
                             f"{next(len(r) for r in rows if len(r) != len(rows[0]))})")
        grid = np.array([np.frombuffer(r, dtype=np.uint8) for r in rows]).reshape(len(rows), -1)
        is_gap = (grid == ord("-")) | (grid == ord("."))
        for name, gaps in zip(rows_names, is_gap):
            if gaps.all():
                raise InputError(f"sequence {name} (alignment {g} of the merge) has no residue")
        kept = ~is_gap.all(axis=0)  # (columns with no residue hold nothing to keep)
        grids.append(grid[:, kept])
        filled.append(~is_gap[:, kept])
        names.extend(rows_names)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"sequence name {dup} appears twice in the merge's alignments")
    raw = [r.tobytes().translate(None, GAP_CHARS) for grid in grids for r in grid]
    seqtype = detect(raw) if SeqType(seqtype) is SeqType.auto else SeqType(seqtype)
    alphabet = alphabet_for(seqtype)
    seqs = Sequences(tuple(names), tuple(raw), tuple(encode(names, raw, alphabet, any_symbol)), seqtype, alphabet)
    config = config or AlignerConfig()
    backend = backend or select_backend(config.backend)
    set_threads(config.threads)
    starts = np.cumsum([0] + [len(g) for g in grids])
    groups = tuple(np.arange(starts[g], starts[g + 1]) for g in range(len(grids)))
    tree, roots = merge_tree(seqs, groups, backend.xp)
    accurate = config.mode is Mode.accurate and len(seqs) <= ACCURATE_MOST
    recipe = recipe_for(config if accurate else replace(config, mode=Mode.fast), seqs)
    accurate = accurate and recipe.library is Library.posterior
    weights = np.ones(len(seqs), dtype=np.int64) if recipe.weights is Weights.equal else sequence_weights(tree)
    job = FamilyJob(seqs, tree, top_schedule(tree, roots), weights, family_scoring(config, seqs, recipe))
    stack = None
    if accurate:  # the library between every pair of the inputs' sequences, as accurate mode builds it
        library = on_backend(posterior_libraries([seqs], xp=backend.xp)[0], backend.xp)
        stack = stack_libraries([library], backend.xp)
        job = replace(job, library=0, consistency=recipe.consistency)
    initial = {root: Profile(members, backend.xp.asarray(_codes(seqs, members, m)), weights[members])
               for root, members, m in zip(roots, groups, filled) if len(members) > 1}  # (a leaf: the merges make it)
    aln = progressive_align([job], backend, config.long_cells, stack=stack, initial=[initial],
                            anchor_cells=0 if stack is not None else config.anchor_cells)[0]
    mask = aln.mask()
    rows_out = []
    for members, grid in zip(groups, grids):
        cols = np.flatnonzero(mask[members].any(axis=0))
        if len(cols) != grid.shape[1]:  # the DP never splits or joins a profile's columns
            raise AssertionError("a merge changed an input's columns")
        for r in grid:
            out = np.full(mask.shape[1], ord("-"), dtype=np.uint8)
            out[cols] = r
            rows_out.append(out.tobytes())
    said = ("accurate: the pair-HMM posterior library across the inputs' sequences" if stack is not None
            else "fast: profile-profile scores")
    return Merged(names, rows_out, groups, tree, said, seqtype)


def _codes(seqs: Sequences, members: np.ndarray, filled: np.ndarray) -> np.ndarray:
    """An input's code matrix: its rows (``members`` of ``seqs``) where
    ``filled`` marks their residues."""
    return alignment_codes(subset(seqs, members), Alignment.from_mask(filled))


def merge_tree(seqs: Sequences, groups: tuple[np.ndarray, ...], xp=np) -> tuple[GuideTree, list[int]]:
    """A guide tree over every sequence in which each group is a clade (UPGMA
    of its k-mer distances inside, a balanced tree past `WITHIN_MOST` rows),
    the groups joined by UPGMA of their mean distances over at most `SAMPLE`
    rows each; returns it and each group's root node.

    >>> from msa_gpu.io import make_sequences
    >>> s = make_sequences(list("abcd"), [b"MKTAYIAKQR", b"MKTAYIAKQK", b"WWPPLLGG", b"WWPPLLGA"])
    >>> tree, roots = merge_tree(s, (np.array([0, 2]), np.array([1]), np.array([3])))
    >>> tree.children.tolist(), roots  # {a, c} with b first: they share MKTAYIAK
    ([[0, 2], [4, 1], [3, 5]], [4, 1, 3])
    """
    n = len(seqs)
    children: list[list[int]] = []
    lengths: list[list[float]] = []
    roots = []
    for members in groups:
        if len(members) == 1:
            roots.append(int(members[0]))
            continue
        inner = (upgma(kmer_distance(subset(seqs, members), xp)) if len(members) <= WITHIN_MOST
                 else _balanced(len(members)))
        roots.append(_graft(inner, members, n, children, lengths))
    if len(groups) > 1:
        picks = [members[np.unique(np.linspace(0, len(members) - 1, min(SAMPLE, len(members))).astype(np.int64))]
                 for members in groups]
        d = kmer_distance(subset(seqs, np.concatenate(picks)), xp).values
        edges = np.cumsum([0] + [len(p) for p in picks])
        g = len(groups)
        mean = np.array([[d[edges[a]:edges[a + 1], edges[b]:edges[b + 1]].mean() if a != b else 0.0
                          for b in range(g)] for a in range(g)])
        _graft(upgma(DistanceMatrix((mean + mean.T) / 2, "kmer")), np.array(roots), n, children, lengths)
    return GuideTree(n, np.array(children, dtype=np.int64).reshape(-1, 2),
                     np.array(lengths, dtype=np.float64).reshape(-1, 2)), roots


def _graft(tree: GuideTree, leaves: np.ndarray, n: int, children: list, lengths: list) -> int:
    """Append ``tree``'s merges to ``children``/``lengths`` (its leaf j
    standing for node ``leaves[j]``, its internal nodes numbered after those
    already there, in a tree of ``n`` leaves); returns its root's node id."""
    m = tree.n_leaves
    node = np.concatenate([np.asarray(leaves, dtype=np.int64), n + len(children) + np.arange(m - 1)])
    for (a, b), ln in zip(tree.children, tree.lengths):
        children.append([int(node[a]), int(node[b])])
        lengths.append([float(ln[0]), float(ln[1])])
    return int(node[2 * m - 2])


def _balanced(m: int) -> GuideTree:
    """A balanced tree of ``m`` leaves in order, unit branches."""
    level, rows, nxt = list(range(m)), [], m
    while len(level) > 1:
        up = []
        for i in range(0, len(level) - 1, 2):
            rows.append([level[i], level[i + 1]])
            up.append(nxt)
            nxt += 1
        if len(level) % 2:
            up.append(level[-1])
        level = up
    return GuideTree(m, np.array(rows, dtype=np.int64).reshape(-1, 2), np.ones((m - 1, 2)))
