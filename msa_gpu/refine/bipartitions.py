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

A cut's DP scores only its own two profiles (profile gap costs are not an
exact sum over pairs), so gains under different cuts need not add up: left
alone, accepted cuts drift, and BB11005's total went down in 101 of 200
rounds. A family's objective is therefore the sum, over all its cuts, of
the path its alignment has through each cut's DP (what every round computes
anyway): a round whose alignment does not raise it undoes the last accepted
cut and ends the family's refinement, as MAFFT keeps a realignment only when
the whole alignment's score rises. ``--maxiterate`` is then a cap, and the
cut accepted in a family's last round is checked the same way (its objective
from the cuts' paths, without their DPs) and undone unless it raised it: at
``--maxiterate 1`` that cut would otherwise never be checked (BB11001, fast:
the second of two rounds' cuts lowered the objective and was kept at
``--maxiterate 2``, undone from 3 on).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.backend import offsets
from msa_gpu.backend import to_host
from msa_gpu.progressive import (
    BYTES_PER_CELL,
    BYTES_PER_LIBRARY_CELL,
    BatchContext,
    FamilyJob,
    Profile,
    ProfileBlock,
    SideInfo,
    alignment_codes,
    batch_chunks,
    merge_batch,
    score_batch,
    side_info,
    stack_matrices,
)
from msa_gpu.types import Alignment, GuideTree


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


def column_splits(codes: np.ndarray, gap: int) -> np.ndarray:
    """One row per distinct gap pattern of the alignment's columns that
    parts the sequences in two: True where the sequence has a gap (FAMSA
    and MUSCLE refine along such splits as well as the tree's).

    >>> column_splits(np.array([[0, 1, 20], [0, 20, 20], [1, 2, 3]]), 20).astype(int).tolist()
    [[0, 1, 0], [1, 1, 0]]
    """
    gaps = np.asarray(codes) == gap
    useful = gaps.any(axis=0) & ~gaps.all(axis=0)
    if not useful.any():
        return np.zeros((0, gaps.shape[0]), dtype=bool)
    return np.unique(gaps[:, useful].T, axis=0)


def refine(jobs: list[FamilyJob], alignments: list[Alignment], rounds: list[int], backend, stack=None,
           long_cells: int = 1 << 26, memory_budget: int | None = None, sample: int | list[int] = 0,
           on_progress=None, splits: str | list[str] = "tree") -> RefineResult:
    """Refine each family's alignment for at most ``rounds[f]`` rounds.

    With ``sample`` > 0 a round tries at most that many of a family's cuts,
    drawn without replacement from a generator seeded by the round and the
    family's cut count (so a family gets the same cuts in any batch, on any
    backend or device), and a round without a gaining cut does not end the
    family's refinement. A family whose accepted cut brings back an
    alignment it had before stops there: the cuts' scores (each a
    profile-profile DP under that cut's own profiles, not one objective for
    the whole alignment) can go round in a circle, and rounds would then run
    to the cap. ``on_progress(done, total)`` is called after each round with
    the rounds run so far (of at most ``max(rounds)``). ``splits``:
    "tree", the guide tree's bipartitions; "columns", each round the
    distinct gap patterns of the alignment's columns (`column_splits`).
    ``sample`` and ``splits`` may also be given per family."""
    xp = backend.xp
    samples = list(sample) if isinstance(sample, (list, tuple)) else [sample] * len(jobs)
    split_of = list(splits) if isinstance(splits, (list, tuple)) else [splits] * len(jobs)
    mats, mat_of = stack_matrices(jobs, xp)
    ctx = BatchContext(backend, mats, stack)
    budget = memory_budget if memory_budget is not None else backend.ops.memory_budget()
    # only families with rounds get codes and cuts (a large family's cuts alone are 2n x n)
    codes = {f: xp.asarray(alignment_codes(jobs[f].seqs, alignments[f])) for f in range(len(jobs)) if rounds[f] > 0}
    sides = {f: _Sides.of(tree_splits(jobs[f].tree) if split_of[f] == "tree" else
                          column_splits(backend.to_host(codes[f]), jobs[f].scoring.gap_code)) for f in codes}
    done = {f: sides[f].n_cuts == 0 for f in codes}
    # every alignment a family has had: coming back to one is a cycle, not a gain
    seen = {f: {_digest(backend.to_host(codes[f]))} for f in codes}
    objective: dict[int, int] = {}  # each family's objective before its last accepted cut
    before: dict = {}  # and its codes then
    unchecked: set[int] = set()  # families whose last accepted cut no round has checked yet
    ran, accepted = [0] * len(jobs), [0] * len(jobs)
    for r in range(max(rounds, default=0)):
        active = [f for f in codes if not done[f] and r < rounds[f]]
        if not active:
            break
        for f in active:
            if split_of[f] == "columns" and r > 0:  # the columns' gap patterns of this round's alignment
                sides[f] = _Sides.of(column_splits(backend.to_host(codes[f]), jobs[f].scoring.gap_code))
        round_sides = [sides[f] if samples[f] <= 0 else sides[f].sample(samples[f], r) for f in active]
        cuts = _cuts([codes[f] for f in active], round_sides, [jobs[f] for f in active], backend)
        sided = [side_info(jobs[f], mat_of[f]) for f in active]
        best, totals = _best_cuts(cuts, sided, ctx, long_cells, budget)
        for i, f in enumerate(active):
            ran[f] += 1
            done[f] = best[i] is None and samples[f] <= 0
            if samples[f] > 0:
                continue
            unchecked.discard(f)
            if f in before and totals[i] <= objective[f]:  # the last cut lowered the objective: undo it
                codes[f] = before[f]
                accepted[f] -= 1
                done[f], best[i] = True, None
            objective[f] = totals[i]
            before[f] = codes[f]
        chosen = [i for i, e in enumerate(best) if e is not None]
        if on_progress is not None:
            on_progress(r + 1, max(rounds))
        if not chosen:
            continue
        pairs = [cuts.pair(i, best[i]) for i in chosen]
        merged = merge_batch(pairs, [sided[i] for i in chosen], np.zeros(len(chosen), bool), ctx).profiles
        for i, prof in zip(chosen, merged):
            f = active[i]
            order = np.argsort(prof.members, kind="stable")
            codes[f] = prof.codes[xp.asarray(order)]
            accepted[f] += 1
            if samples[f] <= 0:
                unchecked.add(f)
            digest = _digest(backend.to_host(codes[f]))
            if digest in seen[f]:  # back to an earlier alignment: the cut scores went round in a circle
                done[f] = True
            seen[f].add(digest)
    # a family stopped by its cap right after accepting a cut: checked as its next round would check it
    # (the objective by the cuts' paths alone, no DP), and undone unless it raised the objective
    last = [f for f in sorted(unchecked) if not done[f]]
    if last:
        for f in last:
            if split_of[f] == "columns":
                sides[f] = _Sides.of(column_splits(backend.to_host(codes[f]), jobs[f].scoring.gap_code))
        cuts = _cuts([codes[f] for f in last], [sides[f] for f in last], [jobs[f] for f in last], backend)
        _, totals = _best_cuts(cuts, [side_info(jobs[f], mat_of[f]) for f in last], ctx, long_cells, budget,
                               False)  # (realign: no DP)
        for f, total in zip(last, totals):
            if total <= objective[f]:
                codes[f] = before[f]
                accepted[f] -= 1
    out = [_alignment(backend.to_host(codes[f]), job.scoring.gap_code) if f in codes else alignments[f]
           for f, job in enumerate(jobs)]
    return RefineResult(out, ran, accepted)


def _digest(codes: np.ndarray) -> bytes:
    """A family's alignment (its code matrix) as a short key."""
    import hashlib

    codes = np.ascontiguousarray(codes)
    return hashlib.blake2b(codes.tobytes() + np.asarray(codes.shape, np.int64).tobytes(), digest_size=16).digest()


@dataclass(frozen=True)
class _Sides:
    """A family's cuts as row lists: profile 2e is the leaves below edge e,
    2e + 1 the others (each in input order)."""

    split: np.ndarray  # float32 (E, n): 1 below the edge
    rows: np.ndarray  # int64: every profile's rows, one after another
    sizes: np.ndarray  # int64 (2E,)

    @property
    def n_cuts(self) -> int:
        return len(self.split)

    def sample(self, k: int, round_: int) -> "_Sides":
        """At most ``k`` of these cuts, the same for the same round and cut count."""
        if self.n_cuts <= k:
            return self
        rng = np.random.default_rng([round_, self.n_cuts])
        pick = np.sort(rng.choice(self.n_cuts, size=k, replace=False))
        return _Sides.of(self.split[pick] > 0.5)

    @staticmethod
    def of(split: np.ndarray) -> "_Sides":
        rows = [np.flatnonzero(m) for e in range(len(split)) for m in (split[e], ~split[e])]
        flat = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        return _Sides(split.astype(np.float32), flat.astype(np.int64), np.array([len(r) for r in rows], np.int64))


@dataclass(frozen=True)
class _Cuts:
    """The cuts of one round, every active family's, as one `ProfileBlock`
    (family after family, cut after cut, side a then side b) and the path
    each cut already has (``moves``, family i's at ``move_base[i]``, one row
    of its alignment's width per cut)."""

    block: ProfileBlock
    family: np.ndarray  # int64 (P,): index into the active families
    cut: np.ndarray  # int64 (P,)
    first: np.ndarray  # int64 (F + 1,): each family's first pair
    moves: object
    move_base: np.ndarray
    width: np.ndarray  # int64 (F,): alignment columns

    def pair(self, i: int, e: int) -> tuple[Profile, Profile]:
        """Family i's cut e as two profiles (views into the block)."""
        p = int(self.first[i]) + e
        b = self.block
        code_off, row_off = offsets(b.k * b.L), offsets(b.k)
        out = []
        for q in (2 * p, 2 * p + 1):
            codes = b.codes[code_off[q]: code_off[q + 1]].reshape(int(b.k[q]), int(b.L[q]))
            out.append(Profile(b.members[row_off[q]: row_off[q + 1]], codes, b.weights[row_off[q]: row_off[q + 1]]))
        return out[0], out[1]


def _cuts(codes: list, sides: list[_Sides], jobs: list[FamilyJob], backend) -> _Cuts:
    """Both sides of every cut of every family's alignment (``codes``, n x C
    in input order), without their all-gap columns."""
    xp, ops = backend.xp, backend.ops
    has_parts, move_parts = [], []
    for c, sd, job in zip(codes, sides, jobs):
        isres = (c != job.scoring.gap_code).astype(xp.float32)
        count_a = xp.asarray(sd.split) @ isres  # each cut's first side's residues, per column (exact)
        has_a = count_a > 0
        has_b = (isres.sum(axis=0)[None, :] - count_a) > 0
        move_parts.append(xp.where(has_a & has_b, 0, xp.where(has_a, 1, 2)).astype(xp.uint8).ravel())
        has_parts.append(xp.stack([has_a, has_b], axis=1).ravel())
    width = np.array([int(c.shape[1]) for c in codes], dtype=np.int64)
    n_prof = np.array([2 * s.n_cuts for s in sides], dtype=np.int64)
    # columns kept by each profile: one nonzero over every family's (2E x C) mask
    has = xp.concatenate(has_parts)
    where = xp.flatnonzero(has)
    prof_first = offsets(n_prof)
    mask_base = offsets(n_prof * width)
    fam_of_prof = np.repeat(np.arange(len(codes)), n_prof)
    prof_mask_off = mask_base[fam_of_prof] + (np.arange(int(prof_first[-1])) - prof_first[fam_of_prof]) * width[fam_of_prof]
    q = xp.searchsorted(xp.asarray(prof_mask_off[1:]), where, side="right")
    cols = where - xp.asarray(prof_mask_off)[q]
    L = to_host(xp.bincount(q, minlength=int(prof_first[-1]))).astype(np.int64)
    # rows: fixed per family
    k = np.concatenate([s.sizes for s in sides])
    rows = np.concatenate([s.rows for s in sides])
    weights = np.concatenate([job.weights[s.rows] for s, job in zip(sides, jobs)]).astype(np.int64)
    # the codes: one gather over every family's alignment
    code_base = offsets([int(c.size) for c in codes])
    flat = xp.concatenate([c.ravel() for c in codes])
    block_codes = ops.gather_profiles(flat, rows, offsets(k), cols, offsets(L), L, code_base[:-1][fam_of_prof],
                                      width[fam_of_prof], offsets(k * L))
    n_cuts = n_prof // 2
    family = np.repeat(np.arange(len(codes)), n_cuts)
    cut = np.arange(int(n_cuts.sum())) - np.repeat(offsets(n_cuts)[:-1], n_cuts)
    moves = xp.concatenate(move_parts)
    return _Cuts(ProfileBlock(block_codes, k, L, rows, weights), family, cut, offsets(n_cuts), moves,
                 offsets(n_cuts * width)[:-1], width)


def _best_cuts(cuts: _Cuts, sides: list[SideInfo], ctx: BatchContext, long_cells: int,
               budget: int, realign: bool = True) -> tuple[list, list[int]]:
    """Realign every cut (the DP only, no merge), in runs of consecutive cuts
    that fit the memory budget; per family, its best gaining cut (or None)
    and its objective (the sum of its alignment's path scores over the cuts
    realigned). Cuts over ``long_cells`` cells are not realigned. With
    ``realign`` False, the objectives alone (no DP: no cut gains)."""
    backend = ctx.backend
    b = cuts.block
    sizes = (b.L[0::2] + 1) * (b.L[1::2] + 1)
    long_mask = sizes > long_cells
    gains = np.full(len(cuts.family), -1, dtype=np.int64)
    paths = np.zeros(len(cuts.family), dtype=np.int64)
    code_off, row_off = offsets(b.k * b.L), offsets(b.k)
    per_cell = BYTES_PER_CELL + BYTES_PER_LIBRARY_CELL * any(s.library is not None for s in sides)
    for chunk in batch_chunks(sizes, long_mask, budget, per_cell):
        lo, hi = int(chunk[0]), int(chunk[-1]) + 1  # chunks are runs of consecutive pairs
        q0, q1 = 2 * lo, 2 * hi
        sub = ProfileBlock(b.codes[code_off[q0]: code_off[q1]], b.k[q0:q1], b.L[q0:q1],
                           b.members[row_off[q0]: row_off[q1]], b.weights[row_off[q0]: row_off[q1]])
        fam = cuts.family[lo:hi]
        sb = score_batch(sub, [sides[i] for i in fam], long_mask[lo:hi], ctx)
        move_off = cuts.move_base[fam] + cuts.cut[lo:hi] * cuts.width[fam]
        old = backend.ops.path_score(sb.batch, cuts.moves, move_off, cuts.width[fam])
        if realign:
            _, _, score = backend.ops.align_batch(sb.batch)
            gains[lo:hi] = np.where(long_mask[lo:hi], -1, backend.to_host(score).astype(np.int64) - old)
        paths[lo:hi] = np.where(long_mask[lo:hi], 0, old)
    best, totals = [], []
    for i in range(len(cuts.first) - 1):
        g = gains[cuts.first[i]: cuts.first[i + 1]]
        e = int(np.argmax(g)) if len(g) else 0
        best.append(e if len(g) and g[e] > 0 else None)
        totals.append(int(paths[cuts.first[i]: cuts.first[i + 1]].sum()))
    return best, totals


def _alignment(codes: np.ndarray, gap: int) -> Alignment:
    isres = codes != gap
    return Alignment.from_mask(isres)
