"""Stage 4, second kind: every sequence realigned to its family's profile.

The progressive alignment's columns become a profile (stage 3's weighted
column statistics and gap model, as a profile HMM's match states with
position-specific gap costs), and each sequence is aligned to it anew by
stage 3's profile DP, all of a family's sequences (and every family's) in
batches of independent pairs. With ``leave_one_out`` the sequence's own row
weighs nothing in the profile it is aligned to, so its old place does not
hold it. The columns keep their order: a residue opposite a column goes
into it, and residues between two columns (an insertion) go into new
columns there, as wide as the widest insertion at that place, left-aligned
(right-aligned before the first column, next to it); columns left without a
residue are dropped. hmmalign builds an alignment from a profile HMM the same
way.
"""

from __future__ import annotations

import numpy as np

from msa_gpu.backend import to_host
from msa_gpu.progressive import (
    BYTES_PER_CELL,
    BatchContext,
    FamilyJob,
    Profile,
    ProfileBlock,
    SideInfo,
    align_paths,
    alignment_codes,
    batch_chunks,
    score_batch,
    stack_matrices,
)
from msa_gpu.recipe import REALIGN_MAX_SEQS  # (the rule is the recipe's: each pair holds a copy of the profile)
from msa_gpu.types import Alignment


def placements(moves: np.ndarray, n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a path (moves in order: 0 both, 1 profile column alone, 2
    residue alone) puts the sequence's residues: per residue its column
    (or, inserted, the place: before column ``place``), whether it is
    inserted, and its rank within its insertion.

    >>> col, ins, rank = placements(np.array([2, 0, 1, 2, 2, 0]), 3)
    >>> col.tolist(), ins.astype(int).tolist(), rank.tolist()
    ([0, 0, 2, 2, 2], [1, 0, 1, 1, 0], [0, 0, 0, 1, 0])
    """
    moves = np.asarray(moves)
    done = np.cumsum(moves != 2)  # profile columns passed after each move
    res = moves != 1
    kind, at = moves[res], done[res]
    ins = kind == 2
    col = np.where(ins, at, at - 1)
    # rank within a run of insertions at one place
    idx = np.arange(len(kind))
    start = np.where(ins & np.r_[True, (col[1:] != col[:-1]) | ~ins[:-1]], idx, 0)
    rank = np.where(ins, idx - np.maximum.accumulate(start), 0)
    return col, ins, rank


def assemble(places: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n_cols: int) -> Alignment:
    """The alignment of `placements` (one per sequence, in order) over a
    profile of ``n_cols`` columns; empty columns dropped."""
    widths = np.zeros(n_cols + 1, dtype=np.int64)
    for col, ins, rank in places:
        if ins.any():
            np.maximum.at(widths, col[ins], rank[ins] + 1)
    before = np.concatenate([[0], np.cumsum(widths)])  # inserted columns before place s
    total = n_cols + int(widths.sum())
    mask = np.zeros((len(places), total), dtype=bool)
    for s, (col, ins, rank) in enumerate(places):
        pos = np.where(ins, col + before[col] + rank, col + before[col + 1])
        if ins.any():  # right-align the insertion before the first column
            first = ins & (col == 0)
            run = int(first.sum())
            pos[first] += int(widths[0]) - run
        mask[s, pos] = True
    return Alignment.from_mask(mask[:, mask.any(axis=0)])


def realign(job: FamilyJob, aln: Alignment, backend, leave_one_out: bool = True,
            long_cells: int = 1 << 26, memory_budget: int | None = None) -> tuple[Alignment, int]:
    """``aln`` with every sequence of ``job`` aligned anew to its profile
    (the module's doc), the weights and scoring the family's (no library),
    and ``aln``'s objective: the sum over its sequences of the score of the
    path each already has through its DP (`path_score`)."""
    return _realign(job, aln, backend, leave_one_out, long_cells, memory_budget, True)


def objective(job: FamilyJob, aln: Alignment, backend, leave_one_out: bool = True,
              long_cells: int = 1 << 26, memory_budget: int | None = None) -> int:
    """`realign`'s objective of ``aln`` alone (no DP)."""
    return _realign(job, aln, backend, leave_one_out, long_cells, memory_budget, False)[1]


def _realign(job, aln, backend, leave_one_out, long_cells, memory_budget, align):
    seqs = job.seqs
    n = len(seqs)
    if n < 3:
        return aln, 0
    xp = backend.xp
    codes = alignment_codes(seqs, aln)
    width = codes.shape[1]
    mats, mat_of = stack_matrices([job], xp)
    ctx = BatchContext(backend, mats, None)
    side = SideInfo(job.scoring, mat_of[0], None, 0, n)
    grid = xp.asarray(codes)
    members = np.arange(n)
    budget = memory_budget if memory_budget is not None else backend.ops.memory_budget()
    sizes = (width + 1) * (seqs.lengths.astype(np.int64) + 1)
    long_mask = sizes > long_cells
    # each pair also holds a copy of the profile's codes
    cost = sizes + (n * width) // BYTES_PER_CELL
    # the path each sequence has now: its residues on their columns, gaps elsewhere
    moves = xp.asarray(np.where(codes != seqs.alphabet.gap, 0, 1).astype(np.uint8).ravel())
    places: list = [None] * n
    total = 0
    for chunk in batch_chunks(cost, long_mask, budget, BYTES_PER_CELL):
        pairs = []
        for i in chunk:
            w = job.weights.astype(np.int64).copy()
            if leave_one_out:
                w[i] = 0
            pairs.append((Profile(members, grid, w),
                          Profile(np.array([i]), xp.asarray(seqs.codes[i].reshape(1, -1)), np.ones(1, np.int64))))
        short = ~long_mask[chunk]
        if align:
            sb, path, path_len, _ = align_paths(pairs, [side] * len(pairs), long_mask[chunk], ctx)
        else:
            sb = score_batch(ProfileBlock.of(pairs, xp), [side] * len(pairs), long_mask[chunk], ctx)
        old = backend.ops.path_score(sb.batch, moves, chunk.astype(np.int64) * width, np.full(len(chunk), width))
        total += int(np.asarray(old)[short].sum())
        if align:
            path, lens = to_host(path), to_host(path_len).astype(np.int64)
            off = to_host(sb.batch.path_off).astype(np.int64)
            for p, i in enumerate(chunk):
                places[int(i)] = placements(path[off[p]: off[p] + lens[p]][::-1], width)
    return (assemble(places, width) if align else aln), total


def realign_rounds(job: FamilyJob, aln: Alignment, backend, rounds: int, **kw) -> Alignment:
    """`realign` up to ``rounds`` times: a round is kept only where it
    raises the objective (`objective`), as MAFFT keeps a realignment only
    when the whole alignment's score rises."""
    for _ in range(rounds):
        new, before = realign(job, aln, backend, **kw)
        if objective(job, new, backend, **kw) <= before:
            break
        aln = new
    return aln


__all__ = ["REALIGN_MAX_SEQS", "assemble", "objective", "placements", "realign", "realign_rounds"]
