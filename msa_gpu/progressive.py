"""Stage 3: progressive profile-profile alignment, one tree level per batch.

The driver knows nothing of the device: it builds each level's `PairBatch`
with ``xp`` and hands it to the backend's ``align_batch`` kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .profile import Profile, column_scores, gap_params, leaf_profile, merge_codes, profile_stats
from .types import Alignment, GuideTree, MergeSchedule, Sequences


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


def _offsets(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@dataclass(frozen=True)
class Scoring:
    """One family's scoring in fixed point, with its matrix on the device."""

    alphabet_size: int
    gap_code: int
    matrix: object  # xp int64 (A, A)
    gaps: tuple[int, int, int, int]
    gap_pair: int


@dataclass(frozen=True)
class FamilyJob:
    """One family's progressive run: its sequences, tree, schedule and weights."""

    seqs: Sequences
    tree: GuideTree
    schedule: MergeSchedule
    weights: np.ndarray
    scoring: Scoring


def build_batch(pairs: list[tuple[Profile, Profile]], scorings: list[Scoring], xp) -> PairBatch:
    """Column scores and gap arrays of every pair, packed flat."""
    S, rows, cols = [], [], []
    for (a, b), sc in zip(pairs, scorings):
        sa = profile_stats(a, sc.alphabet_size, xp)
        sb = profile_stats(b, sc.alphabet_size, xp)
        S.append(column_scores(sa, sb, sc.matrix, xp, sc.gap_pair).ravel())
        r, c = gap_params(sa, sb, sc.gaps, xp)
        rows.append(r)
        cols.append(c)
    dims = np.array([[a.length, b.length] for a, b in pairs], dtype=np.int32)
    m, n = dims[:, 0].astype(np.int64), dims[:, 1].astype(np.int64)
    host = dict(
        s_off=_offsets(m * n), row_off=_offsets(m + 1), col_off=_offsets(n + 1),
        dir_off=_offsets((m + 1) * (n + 1)), path_off=_offsets(m + n),
    )
    return PairBatch(
        S=xp.concatenate(S), rowp=xp.concatenate(rows), colp=xp.concatenate(cols),
        dims=xp.asarray(dims), **{k: xp.asarray(v) for k, v in host.items()},
    )


def progressive_align(jobs: list[FamilyJob], backend) -> list[Alignment]:
    """Align every family along its tree. Level h of every family goes to
    the backend as one batch, so small families share launches."""
    xp = backend.xp
    nodes = [
        {i: leaf_profile(job.seqs.codes[i], i, int(job.weights[i]), xp) for i in range(len(job.seqs))}
        for job in jobs
    ]
    depth = max(len(job.schedule.levels) for job in jobs)
    for h in range(depth):
        # this level's merges, across every family that still has one
        owners = [(f, int(k)) for f, job in enumerate(jobs) if h < len(job.schedule.levels)
                  for k in job.schedule.levels[h]]
        pairs = [(nodes[f].pop(int(jobs[f].tree.children[k, 0])), nodes[f].pop(int(jobs[f].tree.children[k, 1])))
                 for f, k in owners]
        batch = build_batch(pairs, [jobs[f].scoring for f, _ in owners], xp)
        path, path_len, _ = backend.align_batch(batch)
        lens, offs = backend.to_host(path_len), backend.to_host(batch.path_off)
        for (f, k), (a, b), off, ln in zip(owners, pairs, offs, lens):
            forward = path[int(off): int(off) + int(ln)][::-1]
            nodes[f][len(jobs[f].seqs) + k] = merge_codes(a, b, forward, jobs[f].scoring.gap_code, xp)
    return [codes_to_alignment(nodes[f][2 * len(job.seqs) - 2], job.scoring.gap_code, backend)
            for f, job in enumerate(jobs)]


def codes_to_alignment(root: Profile, gap: int, backend) -> Alignment:
    """Reorder rows to input order and turn codes into a residue-index trace."""
    codes = backend.to_host(root.codes)
    order = np.argsort(root.members)
    codes = codes[order]
    isres = codes != gap
    trace = np.where(isres, np.cumsum(isres, axis=1) - 1, -1)
    return Alignment(trace)


def alignment_codes(seqs: Sequences, aln: Alignment) -> np.ndarray:
    """The code matrix of an alignment (gap = alphabet size)."""
    gap = seqs.alphabet.gap
    out = np.full(aln.trace.shape, gap, dtype=np.uint8)
    for s, c in enumerate(seqs.codes):
        row = aln.trace[s]
        out[s, row >= 0] = c
    return out
