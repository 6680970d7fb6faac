"""Planning of the GPU pairwise engine: pairs sorted by length and cut into warp groups, their
kernel (16 or 32 bits, split, wide) and batches; pure NumPy, no device."""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

WARP = 32


STRIP = 8  # R in the 32-bit kernel


STRIP16 = {0: 16, 1: 12, 2: 8}  # S16 of the 16-bit kernel, per mode (registers: no spills at 2 blocks)


BLOCK = 256  # 32-bit kernels: 3 blocks per SM (<= 80 registers a thread, PW_MINBLOCKS) and 3 tables


BLOCK16 = 192  # 16-bit kernel: 149 registers a thread


PAD = 31


LIMIT16 = 30_000  # |values| the 16-bit kernel may meet (NEG16 = -32000)


WARPS_PER_SM = BLOCK // WARP * 3  # resident warps of the 32-bit kernels (PW_MINBLOCKS blocks of BLOCK)


WARPS_PER_SM16 = BLOCK16 // WARP * 2  # resident warps of the 16-bit kernel (2 blocks of BLOCK16)


# per mode: 16-bit groups longer than this share of their pass run split (`wide_groups`); none
# where absent. 2 x H200, kernel ms, off / 0.5 / 0.3: local 43.40 / 40.42 / 40.37 (300k pairs, 1 GPU),
# 69.46 / 70.10 / 66.66 (1M, 2 GPUs); global 32.58 / 33.43 / 33.55 and 52.28 / 53.48 / 53.06;
# semiglobal 36.52 / 36.23 / 36.95 and 58.39 / 59.43 / 58.09
SPLIT_SHARE = {2: 0.3}


WIDE_SHARE = 1.0  # traceback groups longer than this share of their pass run a warp per pair (`wide_groups`)


WIDE_ROWS = 32 * STRIP  # rows of a band in pairwise_wide


@dataclass(frozen=True)
class WarpPlan:
    """Pairs (in slot order, -1 padding) and padded dims of every group.

    ``width`` pairs run on one warp (64 in the packed 16-bit kernel, else 32).
    """

    slots: np.ndarray  # int64 (W, width): pair index or -1
    dims: np.ndarray  # int64 (W, 2): Mw (multiple of the strip), Nw (multiple of 4)
    width: int = WARP
    ddims: object = None  # plans built on a device: the dims there too (contiguous int64)
    words: np.ndarray | None = None  # int64 (W,): sum of the true m + n of each group's pairs (run slots)
    drow: object = None  # device plans: each group's row buffer offset (W + 1, exclusive sums)
    hrow: np.ndarray | None = None  # the same on the host

    def part(self, sel, dsel=None) -> WarpPlan:
        """The groups ``sel`` (a slice, or a host bool mask with ``dsel`` its device copy)."""
        d = sel if dsel is None else dsel
        dims = self.dims[sel]
        ddims = drow = hrow = None
        if self.ddims is not None:
            import cupy as cp

            ddims = cp.ascontiguousarray(self.ddims[d])
            drow = _exclusive(ddims[:, 1] * WARP)
            hrow = _exclusive(dims[:, 1] * WARP)
        return WarpPlan(self.slots[d], dims, self.width, ddims,
                        None if self.words is None else self.words[sel], drow, hrow)

    def row_bytes(self) -> np.ndarray:
        return self.dims[:, 1] * WARP * 8

    def dir_bytes(self) -> np.ndarray:
        return _dir_words(self.dims) * 4

    def wide_dir_words(self) -> np.ndarray:
        return _wide_words(self.dims)

    def cost(self) -> np.ndarray:
        """Cell updates per lane, i.e. work per warp."""
        return self.dims[:, 0] * self.dims[:, 1]


def _dir_words(dims):
    """Nibble words of each group (dims: a NumPy or CuPy (W, 2) array) in
    ``pairwise_dp``: a word per strip of 8 rows, column and lane."""
    return dims[:, 0] // STRIP * dims[:, 1] * WARP


def _wide_words(dims):
    """Nibble words of each group (dims: a NumPy or CuPy (W, 2) array) in
    ``pairwise_wide``: per pair, 32 strips per band of 256 rows, each of
    Nw + 31 steps rounded up to 8 (``wide_steps`` there)."""
    bands = (dims[:, 0] + WIDE_ROWS - 1) // WIDE_ROWS
    return WARP * bands * WARP * ((dims[:, 1] + 31 + 7) // 8 * 8)


def _exclusive(x):
    """Exclusive prefix sums of ``x`` (a NumPy or CuPy array), one more than
    its length: int64 on the array's own side."""
    if isinstance(x, np.ndarray):
        xp = np
    else:
        import cupy as xp
    out = xp.zeros(len(x) + 1, xp.int64)
    if len(x):
        xp.cumsum(x, out=out[1:])
    return out


def _narrow_keys(lmax: int) -> bool:
    """Whether `_sort_key` fits 32 bits for lengths up to ``lmax``."""
    return ((lmax + 15) // 16 + 1) * (lmax + 1) < 1 << 31


def _sort_key(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Ascending key of the pair order: A length in buckets of 16 descending,
    then B length descending (``plan_keys`` in pairwise.cu is its device twin);
    32-bit keys where they fit."""
    lmax = max(int(m.max()), int(n.max()))
    top = (lmax + 15) // 16
    key = (top - (m + 15) // 16) * (lmax + 1) + (lmax - n)
    return key.astype("int32") if _narrow_keys(lmax) else key


def sort_pairs(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Pair order: A length in buckets of 16 descending, then B length descending."""
    if not len(m):
        return np.zeros(0, np.int64)
    key = _sort_key(m, n)
    if int(key.max()) < 1 << 16:  # radix sort
        return np.argsort(key.astype(np.uint16), kind="stable")
    return np.argsort(key, kind="stable")


def plan_warps(m: np.ndarray, n: np.ndarray, width: int = WARP, strip: int = STRIP,
               order: np.ndarray | None = None) -> WarpPlan:
    """Sort pairs by length (unless ``order`` is given), cut them into groups
    of ``width`` and put the groups in run order: the costliest (Mw x Nw)
    first, so that a pass does not end waiting for long groups launched last
    (NumPy; `_Device.plan` does the same on a device)."""
    order = sort_pairs(m, n) if order is None else order
    P = len(order)
    W = (P + width - 1) // width
    slots = np.full(W * width, -1, np.int64)
    slots[:P] = order
    slots = slots.reshape(W, width)
    dims = _dims(slots, m, n, strip)
    run = np.argsort(-(dims[:, 0] * dims[:, 1]), kind="stable")
    return WarpPlan(slots[run], dims[run], width)


def _dims(slots, m, n, strip):
    """Group dims (W, 2): the largest m up to a multiple of the strip, the largest n of 4
    (``plan_groups`` in pairwise.cu is the device twin)."""
    live = slots >= 0
    sp = np.maximum(slots, 0)
    mw = np.where(live, m[sp], 0).max(axis=1) if slots.size else np.zeros(0, np.int64)
    nw = np.where(live, n[sp], 0).max(axis=1) if slots.size else np.zeros(0, np.int64)
    return np.stack([(mw + strip - 1) // strip * strip, (nw + 3) // 4 * 4], axis=1).astype(np.int64)


def wide_groups(dims: np.ndarray, resident_warps: int, share: float | None = None) -> np.ndarray:
    """Groups whose one warp would take longer than ``share`` (WIDE_SHARE if
    None) of the whole pass: traceback groups then run a warp per pair
    (``pairwise_wide``), 16-bit score groups split (SPLIT in pairwise.cu). A
    warp runs its group's Mw x Nw cells per lane at about the rate of every
    other resident warp, so alone it takes Mw * Nw against the pass's
    sum(Mw * Nw) / resident_warps: a pass of few groups, or with a few much
    longer ones, would wait for them with most of the GPU idle."""
    cost = dims[:, 0] * dims[:, 1]  # (NumPy, or CuPy: `tb_direct` decides on the device)
    return cost * resident_warps > (WIDE_SHARE if share is None else share) * cost.sum().clip(1)


def cost_unit(S: np.ndarray, go: int, ge: int) -> int:
    """gcd of every cost: dividing by it keeps all comparisons (and ties)."""
    g = 0
    for v in np.unique(np.abs(S)).tolist() + [go, ge]:
        g = gcd(g, int(v))
    return g or 1


def fits16(dims: np.ndarray, S: np.ndarray, go: int, ge: int) -> np.ndarray:
    """Groups whose every DP value (in units of `cost_unit`) stays in
    (-LIMIT16, LIMIT16): H <= max(S) * min(i, j) and H >= -(2 go + (i + j) ge),
    with one more open, extension and mismatch below that for E, F and diag;
    and ge < 700, so that NEG16 - ge cannot wrap."""
    smax, smin = max(int(S.max()), 0), min(int(S.min()), 0)
    hi = smax * (np.minimum(dims[:, 0], dims[:, 1]) + 1)
    lo = 3 * go + (dims[:, 0] + dims[:, 1] + 2) * ge - smin
    return (hi < LIMIT16) & (lo < LIMIT16) & (ge < 700)


def _batches(warps: np.ndarray, need: np.ndarray, budget: int) -> list[np.ndarray]:
    """Consecutive runs of ``warps`` whose memory stays within ``budget``."""
    if not len(warps):
        return []
    c = np.cumsum(need[warps])
    if c[-1] <= budget:
        return [warps]
    out, start, base = [], 0, 0
    while start < len(warps):
        stop = max(start + 1, int(np.searchsorted(c, base + budget, side="right")))
        out.append(warps[start:stop])
        base = int(c[stop - 1])
        start = stop
    return out


def _padded_offsets(off: np.ndarray) -> tuple[np.ndarray, int]:
    """Start of each sequence in the padded layout (multiples of 4) and its size
    (PAD between sequences and after the last, so 4-residue reads never leave it)."""
    lens = np.diff(off)
    new_off = _exclusive((lens + 3) // 4 * 4)
    tail = int(lens.max()) + 8 if len(lens) else 8
    return new_off[:-1].copy(), int(new_off[-1]) + tail
