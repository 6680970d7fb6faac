"""Stage 3: progressive profile-profile alignment, one tree level per batch.

The driver knows nothing of the device: it builds each level's `PairBatch`
with ``xp`` and hands it to the backend's ``align_batch`` kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from msa_gpu.alphabet import SeqType
from msa_gpu.backend import offsets
from msa_gpu.errors import ResourceError
from msa_gpu.progressive.anchors import ANCHOR_CELLS, anchored_level
from msa_gpu.progressive.profile import LevelMeta, Profile, level_meta_arrays
from msa_gpu.progressive.costs import GAP_MODELS, Scoring
from msa_gpu.scoring import FRAC_ONE
from msa_gpu.types import LIBRARY_ONE, Alignment, GuideTree, MergeSchedule, Sequences

VEC = 24  # residue slots per column in the kernels


@dataclass(frozen=True)
class PairBatch:
    """The flat arrays of one level's merges, as the DP kernels take them."""

    S: object
    s_off: object
    rowp: object
    row_off: object
    colp: object
    col_off: object
    dims: object
    dir_off: object
    path_off: object
    n_dir: int  # host totals of dir_off and path_off, and the longest A side: launch sizes without device reads
    n_path: int
    max_m: int


@dataclass(frozen=True)
class FamilyJob:
    """One family's progressive run: its sequences, tree, schedule and weights."""

    seqs: Sequences
    tree: GuideTree
    schedule: MergeSchedule
    weights: np.ndarray
    scoring: Scoring
    library: int | None = None  # run-wide id of its first sequence in the `LibraryStack`, if any
    consistency: int = 0  # weight of the library's scores (fixed point)


def stack_matrices(jobs: list[FamilyJob], xp):
    """The distinct matrices, zero-padded to VEC x VEC, and each job's index."""
    distinct: dict[bytes, int] = {}
    index = []
    for job in jobs:
        key = job.scoring.matrix.tobytes() + bytes(job.scoring.matrix.shape)
        index.append(distinct.setdefault(key, len(distinct)))
    mats = np.zeros((len(distinct), VEC, VEC), dtype=np.int64)
    for job, i in zip(jobs, index):
        a = job.scoring.matrix.shape[0]
        mats[i, :a, :a] = job.scoring.matrix
    return xp.asarray(mats), index


def _leaves(job: FamilyJob, xp) -> dict[int, Profile]:
    """Leaf profiles: one upload per family, each leaf a view of it."""
    lengths = [len(c) for c in job.seqs.codes]
    flat = xp.asarray(np.concatenate(job.seqs.codes).astype(np.uint8))
    offs = offsets(lengths).tolist()
    members, weights = np.arange(len(lengths), dtype=np.int64), np.asarray(job.weights, dtype=np.int64)
    return {i: Profile(members[i: i + 1], flat[offs[i]: offs[i + 1]].reshape(1, -1), weights[i: i + 1])
            for i in range(len(lengths))}


#: Pairs with more DP cells than this align in checkpointed bands (memory
#: O((m + n)^1.5) instead of an m x n score matrix and direction array).
LONG_CELLS = 1 << 26


#: Device bytes per DP cell of a short pair: its column score and direction
#: bits, plus the library's 64-bit sums when the pair has a library.
BYTES_PER_CELL = 5
BYTES_PER_LIBRARY_CELL = 8


#: Most pairs one batch may hold (the column-score launch puts pairs on grid y).
MAX_BATCH_PAIRS = 65535


def batch_chunks(sizes: np.ndarray, long_mask: np.ndarray, budget: int, per_cell=BYTES_PER_CELL) -> list[np.ndarray]:
    """Split a level's pairs (in order) into batches whose score matrices and
    direction arrays fit in ``budget`` bytes and that hold at most
    `MAX_BATCH_PAIRS` pairs; a pair larger than the budget alone is a batch.

    >>> [c.tolist() for c in batch_chunks(np.array([4, 4, 4]), np.zeros(3, bool), 40)]
    [[0, 1], [2]]
    """
    cost = np.where(long_mask, 0, sizes) * per_cell
    out, start, used = [], 0, 0
    for p, c in enumerate(cost):
        if p > start and (used + c > budget or p - start == MAX_BATCH_PAIRS):
            out.append(np.arange(start, p))
            start, used = p, 0
        used += int(c)
    out.append(np.arange(start, len(cost)))
    return out


def progressive_align(jobs: list[FamilyJob], backend, long_cells: int = LONG_CELLS,
                      memory_budget: int | None = None, stack=None, initial: list | None = None,
                      on_progress=None, anchor_cells: int = ANCHOR_CELLS) -> list[Alignment]:
    """Align every family along its tree. Level h of every family is one
    batch (or a few, when ``memory_budget`` bytes bound it; default: the
    backend's): one launch each for profile statistics, column scores, the DP
    and the merge, whatever the number of pairs (plus one per long pair).
    Families with a library (``job.library``, rows of ``stack``) add its
    consistency scores to their column scores. ``initial[f]`` may give
    profiles of family f's subtrees made elsewhere (node id -> `Profile`);
    its schedule then holds only the merges above them. ``on_progress(done,
    total)`` is called after each level with the merges made so far. Merges
    of more than ``anchor_cells`` DP cells are cut at their anchors
    (`msa_gpu.progressive.anchors`; 0: never), their pieces batched with the
    level's other merges."""
    xp = backend.xp
    budget = memory_budget if memory_budget is not None else backend.ops.memory_budget()
    mats, mat_of = stack_matrices(jobs, xp)
    ctx = BatchContext(backend, mats, stack)
    nodes = [_leaves(job, xp) for job in jobs]
    for f, made in enumerate(initial or []):  # profiles of subtrees aligned elsewhere (node id -> Profile)
        nodes[f].update(made or {})
    depth = max(len(job.schedule.levels) for job in jobs)
    total, made = sum(job.schedule.n_merges for job in jobs), 0
    # per family, read once (host lists: a level's Python work is per merge, 140 k merges on exthomfam_dev)
    kids = [job.tree.children.tolist() for job in jobs]
    gap_of = [job.scoring.gap_code for job in jobs]
    nucleotide_of = [job.seqs.seqtype is not SeqType.protein for job in jobs]
    cuttable = [job.library is None for job in jobs]
    outer = [side_info(job, mat_of[f]) for f, job in enumerate(jobs)]
    n_of = [len(job.seqs) for job in jobs]
    cell_bytes = _cell_bytes(jobs)
    for h in range(depth):
        # this level's merges, across every family that still has one
        owners = [(f, k) for f, job in enumerate(jobs) if h < len(job.schedule.levels)
                  for k in job.schedule.levels[h].tolist()]
        pairs = [(nodes[f].pop(kids[f][k][0]), nodes[f].pop(kids[f][k][1])) for f, k in owners]
        level = anchored_level(pairs, [gap_of[f] for f, _ in owners], [nucleotide_of[f] for f, _ in owners],
                               anchor_cells, xp, [cuttable[f] for f, _ in owners])
        units = level.units
        sizes = np.fromiter([(a.length + 1) * (b.length + 1) for a, b in units], dtype=np.int64, count=len(units))
        long_mask = sizes > long_cells
        merged_units: list = [None] * len(units)
        for chunk in batch_chunks(sizes, long_mask, budget, cell_bytes):
            who = [owners[level.owner[u]][0] for u in chunk.tolist()]
            sides = [side_info(jobs[f], mat_of[f], True) if level.inner[u] else outer[f]
                     for f, u in zip(who, chunk.tolist())]
            for u, profile in zip(chunk, merge_resilient([units[u] for u in chunk], sides, long_mask[chunk], ctx)):
                merged_units[u] = profile
        for (f, k), profile in zip(owners, level.stitch(merged_units, xp)):
            nodes[f][n_of[f] + k] = profile
        made += len(owners)
        if on_progress is not None:
            on_progress(made, total)
    return [codes_to_alignment(nodes[f][2 * len(job.seqs) - 2], job.scoring.gap_code, backend)
            for f, job in enumerate(jobs)]


def merge_resilient(pairs, sides, long_mask, ctx) -> list:
    """`merge_batch`'s profiles; a batch that runs out of device memory is
    halved and retried (the pool's cached blocks freed first), and a single
    pair that still does not fit is retried through the checkpointed kernel,
    whose memory grows as (m + n)^1.5. Each pair's alignment does not depend
    on its batch, so the result is the same."""
    try:
        return merge_batch(pairs, sides, long_mask, ctx).profiles
    except MemoryError:
        free = getattr(ctx.backend.ops, "free_cached", None)
        if free is not None:
            free()
        if len(pairs) > 1:
            h = len(pairs) // 2
            return (merge_resilient(pairs[:h], sides[:h], long_mask[:h], ctx)
                    + merge_resilient(pairs[h:], sides[h:], long_mask[h:], ctx))
        if not long_mask[0]:
            return merge_resilient(pairs, sides, np.ones(1, dtype=bool), ctx)
        a, b = pairs[0]
        raise ResourceError(f"one merge of profiles of {a.size} x {a.length} and {b.size} x {b.length} "
                            "does not fit in device memory even in checkpointed bands") from None


@dataclass(frozen=True)
class BatchContext:
    """What every batch of a run shares: the backend, the stacked matrices and
    the libraries (`msa_gpu.consistency.LibraryStack`, or None)."""

    backend: object
    mats: object
    stack: object = None


@dataclass(frozen=True)
class SideInfo:
    """A pair's scoring: its family's `Scoring`, matrix index, library base
    (or None), library weight and family size."""

    scoring: Scoring
    mat: int
    library: int | None
    consistency: int
    n_seqs: int


def side_info(job: FamilyJob, mat: int, inner: bool = False) -> SideInfo:
    """A pair's scoring; ``inner``: a piece between anchors, whose end gaps
    cost what inner gaps do (not the family's terminal factors)."""
    scoring = job.scoring
    if inner:
        go, ge, _, _ = scoring.gaps
        scoring = replace(scoring, gaps=(go, ge, FRAC_ONE, FRAC_ONE))
    return SideInfo(scoring, mat, job.library, job.consistency, len(job.seqs))


def _cell_bytes(jobs: list[FamilyJob]) -> int:
    return BYTES_PER_CELL + BYTES_PER_LIBRARY_CELL * any(j.library is not None for j in jobs)


@dataclass(frozen=True)
class ScoredBatch:
    """A batch's column scores and gap rows, ready for the DP."""

    lv: LevelMeta
    codes: object
    vec: object
    resid: object
    batch: PairBatch


@dataclass(frozen=True)
class MergeOutcome:
    """Merged profiles, and what refinement needs: the scores and DP scores."""

    profiles: list
    scored: ScoredBatch
    score: object  # xp int32 (P,): the DP's best score


@dataclass(frozen=True)
class ProfileBlock:
    """A batch's profiles as flat arrays, A, B, A, B, ...: profile q has
    ``k[q]`` rows of ``L[q]`` codes at ``offsets(k * L)[q]`` in ``codes``
    (xp), its rows' members (leaf indices) and weights at ``offsets(k)[q]``."""

    codes: object
    k: np.ndarray
    L: np.ndarray
    members: np.ndarray
    weights: np.ndarray

    @staticmethod
    def of(pairs, xp) -> "ProfileBlock":
        profiles = [p for pair in pairs for p in pair]
        return ProfileBlock(xp.concatenate([p.codes.reshape(-1) for p in profiles]),
                            np.fromiter([p.size for p in profiles], dtype=np.int64, count=len(profiles)),
                            np.fromiter([p.length for p in profiles], dtype=np.int64, count=len(profiles)),
                            np.concatenate([p.members for p in profiles]),
                            np.concatenate([p.weights for p in profiles]).astype(np.int64, copy=False))


def score_batch(block: ProfileBlock, sides: list[SideInfo], long_mask, ctx: BatchContext) -> ScoredBatch:
    """Profile statistics, column scores (plus the libraries' consistency
    scores) and gap rows of a batch of pairs (the level's metadata, the
    rows' weights and the DP's offsets go up in one transfer)."""
    backend, xp = ctx.backend, ctx.backend.xp
    w_off = offsets(block.k)
    W = np.add.reduceat(block.weights, w_off[:-1]) if len(block.weights) else np.zeros(len(block.k), np.int64)
    rnd = np.array([s.scoring.gap_model == GAP_MODELS["exact"] for s in sides], dtype=np.int64)
    dims = np.stack([block.L[0::2], block.L[1::2], rnd], axis=1)
    dp_host, totals = _pair_batch_host(dims, long_mask)
    lv, dev = level_meta_arrays(block.k, block.L, W, [s.scoring for s in sides], [s.mat for s in sides], long_mask,
                                xp, extra=dict(weights=block.weights.astype(np.int64, copy=False), **dp_host))
    weights = dev.pop("weights")
    vec, resid, rowp = backend.ops.profile_stats(lv, block.codes, weights, ctx.mats)
    S = backend.ops.column_scores(lv, vec, resid)
    lp = np.array([p for p, s in enumerate(sides) if s.library is not None and not long_mask[p]
                   and s.consistency > 0], dtype=np.int64)
    if len(lp):
        base = np.array([s.library or 0 for s in sides], dtype=np.int64)
        members = block.members + np.repeat(np.repeat(base, 2), block.k)
        lp_n = np.array([sides[p].n_seqs for p in lp], dtype=np.int32)
        lam = {sides[p].consistency for p in lp}
        if len(lam) != 1:
            raise ValueError("one batch takes one library weight")
        backend.ops.consistency_scores(lv, block.codes, weights, xp.asarray(members.astype(np.int32)), lp, lp_n,
                                       ctx.stack, S, lam.pop(), LIBRARY_ONE)
    batch = PairBatch(S=S, s_off=lv.s_off, rowp=rowp, colp=rowp, **dev, **totals)
    return ScoredBatch(lv, block.codes, vec, resid, batch)


def align_paths(pairs, sides: list[SideInfo], long_mask, ctx: BatchContext):
    """Score and align one batch of pairs: its `ScoredBatch`, the paths
    (xp uint8, pair p's moves at ``batch.path_off[p]``, last move first:
    0 both columns, 1 A's column alone, 2 B's alone), their lengths (xp) and
    the DP's best scores (xp int32; left on the device: a read is a wait for
    the level's DP, once a level of a deep tree)."""
    backend, xp = ctx.backend, ctx.backend.xp
    sb = score_batch(ProfileBlock.of(pairs, xp), sides, long_mask, ctx)
    path, path_len, score = backend.ops.align_batch(sb.batch)
    if long_mask.any():
        idx = np.flatnonzero(long_mask)
        score[xp.asarray(idx)] = backend.ops.align_long(sb.batch, sb.lv, sb.vec, sb.resid, idx.tolist(), path,
                                                        path_len)
    return sb, path, path_len, score


def merge_batch(pairs, sides: list[SideInfo], long_mask, ctx: BatchContext) -> MergeOutcome:
    """Align and merge one batch of pairs."""
    backend, xp = ctx.backend, ctx.backend.xp
    sb, path, path_len, score = align_paths(pairs, sides, long_mask, ctx)
    # merged profiles from the paths
    lens = backend.to_host(path_len).astype(np.int64)
    rows = np.array([a.size + b.size for a, b in pairs], dtype=np.int64)
    out_off = offsets(rows * lens)
    out = backend.ops.merge_profiles(sb.lv, sb.codes, path, sb.batch.path_off, path_len, out_off, int(out_off[-1]))
    ends, shapes = out_off.tolist(), list(zip(rows.tolist(), lens.tolist()))
    merged = [Profile(np.concatenate((a.members, b.members)), out[ends[p]: ends[p + 1]].reshape(shapes[p]),
                      np.concatenate((a.weights, b.weights))) for p, (a, b) in enumerate(pairs)]
    return MergeOutcome(merged, sb, score)


def _pair_batch_host(dims, long_mask) -> tuple[dict, dict]:
    """The DP kernel's view of a level, on the host (``dims``: (P, 3) A and
    B columns, and 1 where the pair's fixed point rounds to the nearest: the
    exact gap model; rows from the A profiles' gap rows, columns from the B
    profiles'): the arrays `PairBatch` takes and its host totals."""
    dims = np.asarray(dims, dtype=np.int32).reshape(-1, 3)
    m, n = dims[:, 0].astype(np.int64), dims[:, 1].astype(np.int64)
    bnd = offsets(np.stack([m + 1, n + 1], axis=1).ravel())[:-1]
    dir_off, path_off = offsets((m + 1) * (n + 1) * ~np.asarray(long_mask, dtype=bool)), offsets(m + n)
    return (dict(row_off=bnd[0::2], col_off=bnd[1::2], dims=dims, dir_off=dir_off, path_off=path_off),
            dict(n_dir=int(dir_off[-1]), n_path=int(path_off[-1]), max_m=int(m.max(initial=0))))


def codes_to_alignment(root: Profile, gap: int, backend) -> Alignment:
    """The root profile's rows in input order, as an `Alignment` (the residue
    mask is made where the codes are; only it comes to the host)."""
    order = backend.xp.asarray(np.argsort(root.members))
    return Alignment.from_mask(backend.to_host(root.codes[order] != gap))


def alignment_codes(seqs: Sequences, aln: Alignment) -> np.ndarray:
    """The code matrix of an alignment (gap = alphabet size)."""
    gap = seqs.alphabet.gap
    out = np.full((len(seqs), aln.n_cols), gap, dtype=np.uint8)
    for s, c in enumerate(seqs.codes):
        out[s, aln.row_mask(s)] = c
    return out
