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


def build_batch(pairs: list[tuple[Profile, Profile]], ctx) -> PairBatch:
    """Column scores and gap arrays of every pair, packed flat."""
    xp = ctx.xp
    S, rows, cols = [], [], []
    for a, b in pairs:
        sa = profile_stats(a, ctx.alphabet_size, xp)
        sb = profile_stats(b, ctx.alphabet_size, xp)
        S.append(column_scores(sa, sb, ctx.matrix, xp, ctx.gap_pair).ravel())
        r, c = gap_params(sa, sb, ctx.gaps, xp)
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


def progressive_align(seqs: Sequences, tree: GuideTree, schedule: MergeSchedule,
                      weights: np.ndarray, ctx) -> Alignment:
    """Align the sequences along the tree, level by level."""
    xp = ctx.xp
    n = len(seqs)
    nodes: dict[int, Profile] = {
        i: leaf_profile(seqs.codes[i], i, int(weights[i]), xp) for i in range(n)
    }
    for level in schedule.levels:
        pairs = [(nodes.pop(int(tree.children[k, 0])), nodes.pop(int(tree.children[k, 1]))) for k in level]
        batch = build_batch(pairs, ctx)
        path, path_len, _ = ctx.align_batch(batch)
        lens = ctx.to_host(path_len)
        offs = ctx.to_host(batch.path_off)
        for k, (a, b), off, ln in zip(level, pairs, offs, lens):
            forward = path[int(off): int(off) + int(ln)][::-1]
            nodes[n + int(k)] = merge_codes(a, b, forward, seqs.alphabet.gap, xp)
    root = nodes[2 * n - 2] if n > 1 else nodes[0]
    return codes_to_alignment(root, seqs.alphabet.gap, ctx)


def codes_to_alignment(root: Profile, gap: int, ctx) -> Alignment:
    """Reorder rows to input order and turn codes into a residue-index trace."""
    codes = ctx.to_host(root.codes)
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
