"""CPU twin of the pairwise kernels (numba): the test oracle.

Every rule here is mirrored by ``msa_gpu/kernels/pairwise.cu``, so both give
the same integers, the same end cells and the same moves, ties included.

Recurrences (Gotoh, fixed-point ints; a gap of length k costs go + (k-1)*ge):

    E[i][j] = max(H[i-1][j] - go, E[i-1][j] - ge)      vertical: A residue, gap in B
    F[i][j] = max(H[i][j-1] - go, F[i][j-1] - ge)      horizontal: B residue, gap in A
    H[i][j] = max(H[i-1][j-1] + S[a_i][b_j], E, F)     local: also 0

Ties: opening before extending; diagonal before E before F; local stops
(source 3) when H <= 0. Boundaries: global H[i][0] = -(go + (i-1)*ge) (0 at
i = 0), semiglobal and local 0; E[0][j] = F[i][0] = -inf.

End cell: global (m, n); semiglobal the best of the last column and the last
row; local the best of all cells (H >= 0, (0, 0) when nothing is positive).
Ties between end cells go to the smallest i, then the smallest j.

Direction nibble of cell (i, j), i, j >= 1: bits 0-1 the source of H (0 diag,
1 E, 2 F, 3 stop), bit 2 E opened, bit 3 F opened. Traceback reads the
continuation bit of the cell it leaves. Moves: 0 diagonal, 1 vertical (A
residue against a gap), 2 horizontal (B residue against a gap).

Alignments are returned as maximal runs of one move, ``length << 2 | move``
(a CIGAR in 32-bit words), each pair's runs written backwards so that they end
at the end of the pair's slot of ``m + n`` words; ``res[5]`` is the index of
the first run.

Traceback memory: when ``m * n`` exceeds ``limit_cells`` the forward pass keeps
only H/E checkpoint rows every K rows and each block of K rows is recomputed
(with its nibbles) as the traceback enters it, so memory is
O(n * (m / K + K)); the moves are identical to a full-matrix traceback.
"""

from __future__ import annotations

import numba
import numpy as np

from msa_gpu.backend.profile_cpu import pick_h
from msa_gpu.backend.threads import call

from msa_gpu.kernels.constants import MODE_GLOBAL as GLOBAL  # the kernels' own values
from msa_gpu.kernels.constants import MODE_LOCAL as LOCAL
from msa_gpu.kernels.constants import MODE_SEMIGLOBAL as SEMIGLOBAL
from msa_gpu.kernels.constants import PAIR_NEG as NEG
LIMIT_CELLS = 1 << 25  # full nibble matrix up to 16 MiB per pair


@numba.njit(cache=True, nogil=True)
def _init_row(H, E, go, ge, mode):
    n = H.shape[0] - 1
    H[0] = 0
    E[0] = NEG
    for j in range(1, n + 1):
        H[j] = -(go + (j - 1) * ge) if mode == GLOBAL else 0
        E[j] = NEG


@numba.njit(cache=True, nogil=True)
def _semi_track(H, i, m, n, best):
    """Offer row i's end-cell candidates: (i, n) for i < m, (m, j) for i == m."""
    if i < m:
        if H[n] > best[0]:
            best[0], best[1], best[2] = H[n], i, n
    else:
        for j in range(n + 1):
            if H[j] > best[0]:
                best[0], best[1], best[2] = H[j], i, j


@numba.njit(cache=True, nogil=True)
def _rows(a, b, S, go, ge, mode, r0, r1, H, E, D, store, track, best):
    """Advance H/E (holding row r0) to row r1; nibbles of rows r0+1..r1 go to D
    (zeroed) when ``store``; end-cell candidates are offered when ``track``."""
    m = a.shape[0]
    n = b.shape[0]
    for i in range(r0 + 1, r1 + 1):
        ai = a[i - 1]
        h0 = -(go + (i - 1) * ge) if mode == GLOBAL else 0
        hdiag = H[0]
        H[0] = h0
        hleft = h0
        f = NEG
        base = (i - r0 - 1) * n - 1
        for j in range(1, n + 1):
            hup = H[j]
            eo = hup - go
            ee = E[j] - ge
            if eo >= ee:
                e = eo
                bits = 4
            else:
                e = ee
                bits = 0
            fo = hleft - go
            fe = f - ge
            if fo >= fe:
                f = fo
                bits |= 8
            else:
                f = fe
            h, bits = pick_h(hdiag + S[ai, b[j - 1]], e, f, bits)
            if mode == LOCAL:
                if h <= 0:
                    h = 0
                    bits |= 3
                elif track and h > best[0]:
                    best[0], best[1], best[2] = h, i, j
            hdiag = hup
            H[j] = h
            E[j] = e
            hleft = h
            if store:
                idx = base + j
                D[idx >> 1] |= np.uint8(bits << ((idx & 1) * 4))
        if track and mode == SEMIGLOBAL:
            _semi_track(H, i, m, n, best)


@numba.njit(cache=True, nogil=True)
def _trace_block(a, b, D, r0, i, j, st, out, pos, cnt):
    """Follow the nibbles of the block above row r0 from (i, j) in state st
    (0 H, 1 E, 2 F); moves are written backwards ending at out[pos]."""
    n = b.shape[0]
    while i > r0 and j > 0:
        idx = (i - r0 - 1) * n + j - 1
        bits = (D[idx >> 1] >> ((idx & 1) * 4)) & 15
        if st == 0:
            st = bits & 3
            if st == 3:
                break
        pos -= 1
        if st == 0:
            out[pos] = 0
            cnt[1] += 1
            if a[i - 1] == b[j - 1]:
                cnt[0] += 1
            i -= 1
            j -= 1
        elif st == 1:
            out[pos] = 1
            if bits & 4:
                st = 0
            i -= 1
        else:
            out[pos] = 2
            if bits & 8:
                st = 0
            j -= 1
    return i, j, st, pos


@numba.njit(cache=True, nogil=True)
def _emit(out, pos, move, count):
    for _ in range(count):
        pos -= 1
        out[pos] = move
    return pos


@numba.njit(cache=True, nogil=True)
def runs_backwards(mv, first, runs):
    """Write the moves ``mv[first:]`` as maximal runs ending at the end of
    ``runs``; returns the index of the first run."""
    pos = runs.shape[0]
    k = mv.shape[0]
    while k > first:
        op = mv[k - 1]
        length = 0
        while k > first and mv[k - 1] == op:
            k -= 1
            length += 1
        pos -= 1
        runs[pos] = np.uint32((length << 2) | op)
    return pos


@numba.njit(cache=True, nogil=True)
def align_one(a, b, S, go, ge, mode, traceback, limit_cells, out, res):
    """Align one pair. ``res`` (int64[8]) receives score, end i, end j, start i,
    start j, first move index in ``out`` (length m + n), identities and
    aligned residue pairs."""
    m = a.shape[0]
    n = b.shape[0]
    H = np.empty(n + 1, np.int32)
    E = np.empty(n + 1, np.int32)
    best = np.zeros(3, np.int64)
    if mode == SEMIGLOBAL:
        best[0] = NEG
    _init_row(H, E, go, ge, mode)
    if mode == SEMIGLOBAL:
        _semi_track(H, 0, m, n, best)
    K = m
    if traceback and m * n > limit_cells:
        K = max(int(np.sqrt(m)) + 1, limit_cells // max(n, 1))
    nblocks = (m + K - 1) // K if m > 0 else 0
    single = traceback and nblocks <= 1
    D = np.zeros(((K * n + 1) >> 1) if traceback else 1, np.uint8)
    CH = np.empty((nblocks if (traceback and not single) else 0, n + 1), np.int32)
    CE = np.empty_like(CH)
    for blk in range(nblocks):
        r0 = blk * K
        if CH.shape[0]:
            CH[blk] = H
            CE[blk] = E
        _rows(a, b, S, go, ge, mode, r0, min(m, r0 + K), H, E, D, single, True, best)
    if mode == GLOBAL:
        best[0], best[1], best[2] = H[n], m, n
    res[0], res[1], res[2] = best[0], best[1], best[2]
    res[3], res[4], res[5], res[6], res[7] = best[1], best[2], m + n, 0, 0
    if not traceback:
        return
    i, j = best[1], best[2]
    pos = m + n
    if mode == SEMIGLOBAL:
        if i == m:
            pos = _emit(out, pos, 2, n - j)
        else:
            pos = _emit(out, pos, 1, m - i)
    cnt = np.zeros(2, np.int64)
    st = 0
    while i > 0 and j > 0 and st != 3:
        blk = (i - 1) // K
        r0 = blk * K
        if not single:
            H[:] = CH[blk]
            E[:] = CE[blk]
            D[:] = 0
            _rows(a, b, S, go, ge, mode, r0, i, H, E, D, True, False, best)
        i, j, st, pos = _trace_block(a, b, D, r0, i, j, st, out, pos, cnt)
    if mode != LOCAL:
        pos = _emit(out, pos, 1, i)
        pos = _emit(out, pos, 2, j)
        i = 0
        j = 0
    res[3], res[4], res[5], res[6], res[7] = i, j, pos, cnt[0], cnt[1]


@numba.njit(cache=True, parallel=True)
def _batch(seq, off, pa, pb, S, go, ge, mode, traceback, limit_cells, runs, runs_off, res):
    for p in numba.prange(pa.shape[0]):
        a = seq[off[pa[p]]: off[pa[p] + 1]]
        b = seq[off[pb[p]]: off[pb[p] + 1]]
        mv = np.empty(a.shape[0] + b.shape[0] if traceback else 0, np.uint8)
        align_one(a, b, S, go, ge, mode, traceback, limit_cells, mv, res[p])
        if traceback:
            res[p, 5] = runs_backwards(mv, res[p, 5], runs[runs_off[p]: runs_off[p + 1]])


@numba.njit(cache=True, parallel=True)
def move_segments(src, src_off, dst_off, dst):
    """``dst[dst_off[p] : dst_off[p+1]] = src[src_off[p] : ...]`` for every p."""
    for p in numba.prange(dst_off.shape[0] - 1):
        a = src_off[p]
        d = dst_off[p]
        for k in range(dst_off[p + 1] - d):
            dst[d + k] = src[a + k]


CHUNK_WORDS = 1 << 24  # run slots per chunk of the twin (64 MiB)

#: Nanoseconds of a DP cell (without and with traceback), of a residue rescored
#: and of a word moved on one thread, for sizing the parallel loops
#: (`msa_gpu.backend.threads`).
NS_PER_UNIT = {"cell": 4.5, "traced": 25.0, "rescore": 5.0, "move": 1.0}


def _cells(lens, pa, pb) -> float:
    return float(lens[pa].astype(np.float64) @ lens[pb].astype(np.float64))


def no_offsets(P: int) -> np.ndarray:
    """The run offsets of P pairs without runs: P + 1 zeros, read-only, in no
    memory of their own (zeroing 8 bytes a pair cost the GPU engine about a
    millisecond a million pairs, after its last kernel)."""
    return np.broadcast_to(np.zeros(1, np.int64), (P + 1,))


def align_batch(seq, off, pa, pb, S, go, ge, mode, traceback, limit_cells=LIMIT_CELLS, runs=True, devices=None,
                batch_bytes=None):
    """Align pairs (pa[p], pb[p]) of the sequences ``seq[off[k]:off[k+1]]``
    (``devices`` and ``batch_bytes`` steer the GPU's scheduler: unused here).

    Returns ``res`` (int64 (P, 8), see `align_one`; ``res[:, 5]`` the first
    run's index in the pair's slot) and, with traceback (and ``runs``), the
    runs concatenated in pair order with their offsets (else an empty array
    and read-only zero offsets, `no_offsets`: ``runs=False`` keeps only what
    the walk counts in ``res``).
    """
    pa = np.asarray(pa, np.int64)
    pb = np.asarray(pb, np.int64)
    lens = np.diff(off)
    P = len(pa)
    res = np.zeros((P, 8), np.int64)
    if not traceback:
        call(_batch, seq, off, pa, pb, S, go, ge, mode, False, limit_cells, np.empty(0, np.uint32),
             np.zeros(P + 1, np.int64), res, work=_cells(lens, pa, pb) * NS_PER_UNIT["cell"], items=P)
        return res, np.empty(0, np.uint32), no_offsets(P)
    cap = lens[pa] + lens[pb]
    total = np.concatenate(([0], np.cumsum(cap)))
    parts, p0 = [], 0
    while p0 < P:  # chunks of pairs whose slots stay within CHUNK_WORDS (one pair at least)
        p1 = max(p0 + 1, int(np.searchsorted(total, total[p0] + CHUNK_WORDS, side="right")) - 1)
        slot_off = np.zeros(p1 - p0 + 1, np.int64)
        np.cumsum(cap[p0:p1], out=slot_off[1:])
        slots = np.empty(int(slot_off[-1]), np.uint32)
        call(_batch, seq, off, pa[p0:p1], pb[p0:p1], S, go, ge, mode, True, limit_cells, slots, slot_off, res[p0:p1],
             work=_cells(lens, pa[p0:p1], pb[p0:p1]) * NS_PER_UNIT["traced"], items=p1 - p0)
        if runs:
            parts.append(gather_runs(slots, slot_off, res[p0:p1, 5]))
        p0 = p1
    if not runs:
        return res, np.empty(0, np.uint32), no_offsets(P)
    counts = np.concatenate([np.diff(o) for _, o in parts]) if parts else np.zeros(0, np.int64)
    out_off = np.zeros(P + 1, np.int64)
    np.cumsum(counts, out=out_off[1:])
    out = np.concatenate([r for r, _ in parts]) if parts else np.empty(0, np.uint32)
    return res, out, out_off


def gather_runs(runs, slot_off, first):
    """Concatenate each slot's runs (``runs[slot_off[p] + first[p] : slot_off[p+1]]``)."""
    first = np.asarray(first, np.int64)
    length = slot_off[1:] - slot_off[:-1] - first
    out_off = np.zeros(len(first) + 1, np.int64)
    np.cumsum(length, out=out_off[1:])
    out = np.empty(int(out_off[-1]), np.uint32)
    call(move_segments, runs, slot_off[:-1] + first, out_off, out, work=out.shape[0] * NS_PER_UNIT["move"],
         items=len(first))
    return out, out_off


@numba.njit(cache=True, nogil=True)
def rescore_one(a, b, S, go, ge, mode, runs, si, sj):
    """Score of a list of runs (``length << 2 | move``) starting at (si, sj)
    under the same rules (semiglobal: gaps before or after all of a sequence's
    residues are free); -2**62 if the runs leave either sequence."""
    m = a.shape[0]
    n = b.shape[0]
    i, j, prev, total = si, sj, -1, 0
    for w in runs:
        op = w & 3
        k = w >> 2
        if op == 0:
            if i + k > m or j + k > n:
                return -(1 << 62)
            for _ in range(k):
                total += S[a[i], b[j]]
                i += 1
                j += 1
        elif op == 1:
            if i + k > m:
                return -(1 << 62)
            if not (mode == SEMIGLOBAL and (j == 0 or j == n)):
                total -= (ge if prev == 1 else go) + (k - 1) * ge
            i += k
        else:
            if j + k > n or op != 2:
                return -(1 << 62)
            if not (mode == SEMIGLOBAL and (i == 0 or i == m)):
                total -= (ge if prev == 2 else go) + (k - 1) * ge
            j += k
        prev = op
    return total


def rescore_batch(seq, off, pa, pb, S, go, ge, mode, runs, runs_off, start, out):
    """``out[p]``: `rescore_one` of pair p's runs ``runs[runs_off[p]:runs_off[p + 1]]`` from ``start[p]``."""
    pa, pb = np.asarray(pa, np.int64), np.asarray(pb, np.int64)
    lens = np.diff(off)
    call(_rescore_batch, seq, off, pa, pb, S, go, ge, mode, runs, runs_off, start, out,
         work=float(lens[pa].sum() + lens[pb].sum()) * NS_PER_UNIT["rescore"], items=pa.shape[0])


@numba.njit(cache=True, parallel=True)
def _rescore_batch(seq, off, pa, pb, S, go, ge, mode, runs, runs_off, start, out):
    for p in numba.prange(pa.shape[0]):
        a = seq[off[pa[p]]: off[pa[p] + 1]]
        b = seq[off[pb[p]]: off[pb[p] + 1]]
        out[p] = rescore_one(a, b, S, go, ge, mode, runs[runs_off[p]: runs_off[p + 1]], start[p, 0], start[p, 1])
