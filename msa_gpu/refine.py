"""Stage 4: iterative refinement over guide-tree bipartitions.

Each round cuts every family's alignment at every edge of its guide tree
(2n - 3 bipartitions), drops the columns that become all gaps on either
side, and realigns the two halves with stage 3's scoring (weighted
sum-of-pairs and, in accurate mode, the consistency library). All cuts of
all families are one batch of merges. A cut's gain is the DP's best score
less the score of the path the alignment already has through the same DP
(`path_score`, kernels/refine.cu); each family takes its best cut when the
gain is positive (the first such cut on ties), and stops when no cut gains
or after its rounds. Integer scores make it deterministic on both backends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .profile import Profile, offsets
from .progressive import (
    BatchContext, FamilyJob, _cell_bytes, _chunks, _side_info, _stack_matrices, alignment_codes, merge_batch,
)
from .types import Alignment, GuideTree


@dataclass(frozen=True)
class RefineResult:
    """Refined alignments, with each family's rounds run and cuts accepted."""

    alignments: list[Alignment]
    rounds: list[int]
    accepted: list[int]


def tree_splits(tree: GuideTree) -> np.ndarray:
    """One row per distinct bipartition: the leaves below an edge (bool
    (E, n)). The root's two edges cut the same bipartition: only the first
    is kept.

    >>> t = GuideTree(3, np.array([[0, 1], [3, 2]]), np.ones((2, 2)))
    >>> tree_splits(t).astype(int).tolist()
    [[1, 0, 0], [0, 1, 0], [1, 1, 0]]
    """
    n = tree.n_leaves
    below = np.zeros((2 * n - 1, n), dtype=bool)
    below[np.arange(n), np.arange(n)] = True
    for k, (a, b) in enumerate(tree.children):
        below[n + k] = below[a] | below[b]
    if n < 2:
        return below[:0]
    root_second = int(tree.children[-1, 1])
    keep = [v for v in range(2 * n - 2) if v != root_second]
    return below[keep]


def refine(jobs: list[FamilyJob], alignments: list[Alignment], rounds: list[int], backend, stack=None,
           long_cells: int = 1 << 26, memory_budget: int | None = None) -> RefineResult:
    """Refine each family's alignment for at most ``rounds[f]`` rounds."""
    xp = backend.xp
    mats, mat_of = _stack_matrices(jobs, xp)
    ctx = BatchContext(backend, mats, stack)
    budget = memory_budget if memory_budget is not None else backend.ops.memory_budget()
    codes = [xp.asarray(alignment_codes(job.seqs, aln)) for job, aln in zip(jobs, alignments)]
    splits = [tree_splits(job.tree) for job in jobs]
    done = [len(s) == 0 for s in splits]
    ran, accepted = [0] * len(jobs), [0] * len(jobs)
    for r in range(max(rounds, default=0)):
        active = [f for f in range(len(jobs)) if not done[f] and r < rounds[f]]
        if not active:
            break
        cuts = [_cuts(codes[f], splits[f], jobs[f], xp) for f in active]
        best = _best_cuts(active, cuts, jobs, mat_of, ctx, long_cells, budget)
        for f, cut in zip(active, cuts):
            ran[f] += 1
            if best[f] is None:
                done[f] = True
                continue
            merged = best[f]
            order = np.argsort(merged.members, kind="stable")
            codes[f] = merged.codes[xp.asarray(order)]
            accepted[f] += 1
    out = [_alignment(backend.to_host(c), job.scoring.gap_code) for c, job in zip(codes, jobs)]
    return RefineResult(out, ran, accepted)


@dataclass(frozen=True)
class _Cuts:
    """One family's bipartitions of one round: the two sides of each cut as
    profiles, and the path the alignment has through each cut's DP."""

    pairs: list[tuple[Profile, Profile]]
    moves: object  # xp uint8 (E, C): 0 both sides, 1 first only, 2 second only
    n_cols: int


def _cuts(codes, split: np.ndarray, job: FamilyJob, xp) -> _Cuts:
    """Profiles of both sides of every cut of an alignment (``codes``, n x C
    in input order), without their all-gap columns."""
    E, n = split.shape
    C = int(codes.shape[1])
    isres = (codes != job.scoring.gap_code).astype(xp.float32)
    count_a = xp.asarray(split.astype(np.float32)) @ isres  # residues of each cut's first side, per column
    has_a = count_a > 0
    has_b = (isres.sum(axis=0)[None, :] - count_a) > 0
    moves = xp.where(has_a & has_b, 0, xp.where(has_a, 1, 2)).astype(xp.uint8)
    has = xp.stack([has_a, has_b], axis=1).reshape(2 * E, C)  # profile 2e: side a of cut e, 2e + 1: side b
    widths = backend_host(has.sum(axis=1)).astype(np.int64)
    cols = xp.nonzero(has)[1].astype(xp.int64)
    rows_host = [np.flatnonzero(m) for e in range(E) for m in (split[e], ~split[e])]
    sizes = np.array([len(r) for r in rows_host], dtype=np.int64)
    rows = xp.asarray(np.concatenate(rows_host))
    block = _gather(codes, rows, offsets(sizes), cols, offsets(widths), sizes, widths, xp)
    code_off = offsets(sizes * widths)
    profiles = [Profile(rows_host[q], block[code_off[q]: code_off[q + 1]].reshape(int(sizes[q]), int(widths[q])),
                        job.weights[rows_host[q]]) for q in range(2 * E)]
    return _Cuts([(profiles[2 * e], profiles[2 * e + 1]) for e in range(E)], moves, C)


def backend_host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _gather(codes, rows, row_off: np.ndarray, cols, col_off: np.ndarray, sizes: np.ndarray, widths: np.ndarray, xp):
    """Every profile's codes, one after another: profile q is rows
    ``rows[row_off[q]:]`` (``sizes[q]``) by columns ``cols[col_off[q]:]``
    (``widths[q]``) of ``codes``."""
    code_off = offsets(sizes * widths)
    e = xp.arange(int(code_off[-1]), dtype=xp.int64)
    q = xp.searchsorted(xp.asarray(code_off[1:]), e, side="right")
    local = e - xp.asarray(code_off)[q]
    w = xp.asarray(widths)[q]
    r = rows[xp.asarray(row_off)[q] + local // w]
    c = cols[xp.asarray(col_off)[q] + local % w]
    return codes[r, c]


def _best_cuts(active: list[int], cuts: list[_Cuts], jobs: list[FamilyJob], mat_of: list[int], ctx: BatchContext,
               long_cells: int, budget: int) -> dict[int, Profile | None]:
    """Realign every cut of the active families; per family, the merged
    profile of its best gaining cut, or None."""
    backend = ctx.backend
    owners = [(i, e) for i, c in enumerate(cuts) for e in range(len(c.pairs))]
    pairs = [cuts[i].pairs[e] for i, e in owners]
    sizes = np.array([(a.length + 1) * (b.length + 1) for a, b in pairs], dtype=np.int64)
    long_mask = sizes > long_cells
    gains = np.full(len(pairs), -1, dtype=np.int64)
    merged: dict[int, Profile] = {}
    fam_jobs = [jobs[f] for f in active]
    flat_moves, move_base = _flat_moves(cuts, ctx.backend.xp)
    for chunk in _chunks(sizes, long_mask, budget, _cell_bytes(fam_jobs)):
        chunk = chunk[~long_mask[chunk]]  # long cuts are not realigned
        if not len(chunk):
            continue
        sides = [_side_info(jobs[active[owners[p][0]]], mat_of[active[owners[p][0]]]) for p in chunk]
        out = merge_batch([pairs[p] for p in chunk], sides, np.zeros(len(chunk), bool), ctx)
        move_off = np.array([move_base[owners[p][0]] + owners[p][1] * cuts[owners[p][0]].n_cols for p in chunk])
        move_len = np.array([cuts[owners[p][0]].n_cols for p in chunk])
        old = backend.ops.path_score(out.scored.batch, flat_moves, move_off, move_len)
        gains[chunk] = out.score - old
        for p, prof in zip(chunk, out.profiles):
            merged[int(p)] = prof
    best: dict[int, Profile | None] = {}
    start = 0
    for i, f in enumerate(active):
        stop = start + len(cuts[i].pairs)
        g = gains[start:stop]
        k = int(np.argmax(g)) if len(g) else 0
        best[f] = merged[start + k] if len(g) and g[k] > 0 else None
        start = stop
    return best


def _flat_moves(cuts: list[_Cuts], xp):
    """Every family's move matrix in one flat array, and where each starts."""
    mats = [c.moves.ravel() for c in cuts]
    base = offsets([int(m.shape[0]) for m in mats])[:-1]
    return xp.concatenate(mats) if mats else xp.zeros(1, xp.uint8), base


def _alignment(codes: np.ndarray, gap: int) -> Alignment:
    isres = codes != gap
    return Alignment(np.where(isres, np.cumsum(isres, axis=1) - 1, -1))
