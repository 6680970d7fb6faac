"""Profiles and the per-position gap arrays of a profile-profile merge.

A profile is a code matrix (members x columns, gap = alphabet size) with one
integer weight per member. Everything here is written once against ``xp``
and uses integer arithmetic only, so both backends agree exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scoring import FRAC_ONE


@dataclass(frozen=True)
class Profile:
    """Members (leaf indices), their codes (xp uint8 matrix) and weights."""

    members: np.ndarray  # host int64
    codes: object  # xp uint8 (k, L)
    weights: object  # xp int64 (k,)

    @property
    def length(self) -> int:
        return int(self.codes.shape[1])


@dataclass(frozen=True)
class ProfileStats:
    """Weighted residue counts and gap fractions of one profile."""

    counts: object  # xp int64 (L, A): weighted counts of each residue
    total: int  # sum of weights
    resid: object  # xp int64 (L,): residue fraction, 0..FRAC_ONE
    both: object  # xp int64 (L+1,): fraction with residues on both sides of each boundary


def leaf_profile(codes: np.ndarray, leaf: int, weight: int, xp) -> Profile:
    return Profile(np.array([leaf]), xp.asarray(codes, dtype=xp.uint8)[None, :], xp.asarray([weight], dtype=xp.int64))


def profile_stats(p: Profile, alphabet_size: int, xp) -> ProfileStats:
    """Counts and gap fractions, in integers."""
    k, L = p.codes.shape
    w = p.weights
    total = int(w.sum())
    onehot = (p.codes[:, :, None] == xp.arange(alphabet_size, dtype=xp.uint8)[None, None, :])
    counts = (w[:, None] * onehot.reshape(k, -1).astype(xp.int64)).sum(axis=0).reshape(L, alphabet_size)
    isres = p.codes != alphabet_size
    wres = (w[:, None] * isres).sum(axis=0)
    resid = wres * FRAC_ONE // total
    inner = (w[:, None] * (isres[:, :-1] & isres[:, 1:])).sum(axis=0) * FRAC_ONE // total
    both = xp.concatenate([resid[:1], inner, resid[-1:]])
    return ProfileStats(counts, total, resid, both)


def column_scores(a: ProfileStats, b: ProfileStats, matrix, xp, gap_pair: int = 0):
    """S[i, j] = sum_xy countA[i,x] M[x,y] countB[j,y] / (WA * WB), floored,
    less ``gap_pair`` for each weighted pair of a residue facing an existing
    gap; int64 matrix products, exact on both backends."""
    num = (a.counts @ matrix) @ b.counts.T
    s = num // (a.total * b.total)
    if gap_pair:
        ga, gb = FRAC_ONE - a.resid, FRAC_ONE - b.resid
        s -= (ga[:, None] * b.resid[None, :] + a.resid[:, None] * gb[None, :]) * gap_pair // (FRAC_ONE * FRAC_ONE)
    return s.astype(xp.int32)


def gap_params(rows: ProfileStats, cols: ProfileStats, gaps: tuple[int, int, int, int], xp):
    """Per-position gap costs for one merge, A on the rows and B on the columns.

    rowp[i] = [openH(i), extV_inner(i), extV_term(i)] for i = 0..m and
    colp[j] = [openV(j), extH_inner(j), extH_term(j)] for j = 0..n:
    a gap run inserted at boundary b of a profile costs ``open`` scaled by the
    fraction of that profile's members with residues on both sides of b (a new
    gap next to an existing one opens nothing), and each column it faces costs
    ``extend`` scaled by that column's residue fraction. Terminal runs scale
    by the terminal factors.
    """
    go, ge, tgo, tge = gaps

    def side(stats: ProfileStats, other: ProfileStats):
        L = int(stats.resid.shape[0])
        out = xp.zeros((L + 1, 4), dtype=xp.int64)
        out[1:, 3] = stats.resid
        open_ = go * stats.both
        open_[0] = open_[0] * tgo // FRAC_ONE
        open_[L] = open_[L] * tgo // FRAC_ONE
        out[:, 0] = open_ // FRAC_ONE
        ext = ge * stats.resid
        out[1:, 1] = ext // FRAC_ONE
        out[1:, 2] = ext * tge // (FRAC_ONE * FRAC_ONE)
        return out

    # openH uses the rows' boundaries (the gap goes into A); extV the rows' residues
    ra = side(rows, cols)
    cb = side(cols, rows)
    return ra.astype(xp.int32), cb.astype(xp.int32)


def merge_codes(a: Profile, b: Profile, path: np.ndarray, gap: int, xp) -> Profile:
    """The merged profile from a forward path of moves (0 both, 1 A only, 2 B only)."""
    moves = xp.asarray(path)
    take_a = moves != 2
    take_b = moves != 1
    col_a = xp.where(take_a, xp.cumsum(take_a) - 1, a.length)
    col_b = xp.where(take_b, xp.cumsum(take_b) - 1, b.length)
    pad = xp.full((1,), gap, dtype=xp.uint8)
    ca = xp.concatenate([a.codes, xp.broadcast_to(pad, (a.codes.shape[0], 1))], axis=1)[:, col_a]
    cb = xp.concatenate([b.codes, xp.broadcast_to(pad, (b.codes.shape[0], 1))], axis=1)[:, col_b]
    return Profile(
        np.concatenate([a.members, b.members]),
        xp.concatenate([ca, cb], axis=0),
        xp.concatenate([a.weights, b.weights]),
    )
