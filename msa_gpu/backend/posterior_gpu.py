"""GPU runtime of kernels/posterior.cu (twin: posterior_cpu): pair-HMM
posteriors of many pairs, one block a pair, kept where at least a cutoff
(sparse, row-major like ``np.nonzero``) before they leave the device; and
the consistency transformation of many pairs, a block a tile of a pair's rows.

A batch's pairs go in launches of one size class each (threads by the
longest anti-diagonal, shared memory by the longest row of the class),
costliest pairs first, the classes side by side on a few streams; the
batches are as large as `block_bytes` allows (a quarter of the free device
memory, at most 8 GB: with 1 GB batches,
BAliBASE's library took 28.5 s instead of 12.1 s on an H200, the launches'
tails and the per-batch host work adding up over 230 batches).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from msa_gpu.backend.arrays import DENSE_BATCH_BYTES, budget_chunks, offsets
from msa_gpu.backend.streams_gpu import fanned_out
from msa_gpu.backend.transfer import upload
from msa_gpu.kernels import get_function, opt_in_shared

NS = 5
#: Threads a block: about this many cells of the longest anti-diagonal each,
#: 32 to 256 (kernels/posterior.cu: MAX_WARPS).
CELLS_PER_THREAD = 2
MAX_THREADS = 256
#: Pairs whose three anti-diagonals fit (rows L1 + 1 up to this, 120 bytes a
#: row: 123 KB) keep them in shared memory; longer ones in global scratch
#: (1.2x slower on 400-residue pairs, H200).
SHARED_ROWS = 1024
#: Streams a batch's size classes are spread over. A class's launch is a
#: block a pair, and while its last long pairs run most of the card is idle;
#: the next classes' blocks fill it from their own streams (1: one stream).
#: BAliBASE's posteriors, one H100: 4.24 s on one stream, 3.47 on 2, 3.23 on
#: 4, 3.15 on 8, the same bits (NOTES.md, session 54).
POST_STREAMS = 4
#: Compile-time settings of pair_posteriors (e.g. {"POST_MIN_BLOCKS": "2"}).
POST_DEFINES: dict = {}
#: The transformation (kernels/posterior.cu): warps a block (a warp an
#: output row at a time), rows a block, and the longest row summed in
#: shared memory (8 bytes a column a warp). H100, BAliBASE's pairs: 8 rows
#: a block 2.36 s a pass against 2.64 s at 32; 4 or 8 warps alike; a
#: pipeline of the u loop's four dependent loads gained nothing (2.44 s);
#: its launches on 4 streams gained nothing either (2.14 s a pass both ways:
#: its blocks are short, so a launch's tail is short).
CONS_WARPS = 4
CONS_TILE = 8
SHARED_COLS = 1536
#: Device bytes of the dense matrices of one launch's pairs: a quarter of
#: the free device memory, at most this (`block_bytes`).
BLOCK_BYTES = DENSE_BATCH_BYTES


def shared_limit() -> int:
    """Dynamic shared memory a block may take on this device: its opt-in
    maximum less the kernels' static use (227 KB on Hopper; 163 KB on an
    A100 and 99 KB on consumer cards cap `SHARED_ROWS` and `SHARED_COLS`)."""
    return int(cp.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"]) - 2048


def block_bytes() -> int:
    """Dense bytes a batch of pairs may take now (`BLOCK_BYTES`)."""
    free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    return int(max(1 << 28, min(BLOCK_BYTES, free // 4)))


def _bytes(L1: np.ndarray, L2: np.ndarray) -> np.ndarray:
    """Device bytes of each pair: posteriors, three anti-diagonals, scales."""
    return 8 * L1 * L2 + 8 * 3 * (L1 + 1) * NS + 4 * (L1 + L2 + 1)


def flat_posteriors(codes: list[np.ndarray], pairs: np.ndarray, init, trans, pair, single, cutoff: float,
                    batch_bytes: int | None = None, *, tick=None, room: bool = False, planned: int = 0):
    """For each pair q = (s, t) of ``pairs`` (P, 2), the posteriors of
    sequence s's residues (rows) against t's that are at least ``cutoff``,
    as flat device arrays (q, x, y, p) sorted by pair, then row-major. Pairs
    go in batches of about ``batch_bytes`` (`block_bytes`); ``tick(P)`` when
    done (``room`` and ``planned`` size the CPU twin's host arrays: unused here)."""
    lens = np.array([len(c) for c in codes], dtype=np.int64)
    offs = offsets(lens)[:-1]
    d_codes = cp.asarray(np.concatenate(codes).astype(np.uint8) if len(codes) else np.zeros(1, np.uint8))
    model = [cp.asarray(np.ascontiguousarray(a, dtype=np.float64)) for a in (init, trans, pair, single)]
    A = int(np.asarray(pair).shape[0])
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    L1, L2 = lens[pairs[:, 0]], lens[pairs[:, 1]]
    parts = [_batch(d_codes, offs, pairs[c], L1[c], L2[c], model, A, cutoff, c)
             for c in budget_chunks(_bytes(L1, L2), batch_bytes or block_bytes())]
    out = _concat(parts)
    if tick is not None:
        tick(len(pairs))
    return out


#: Cells a block of the cut's kernels takes (kernels/kept.cu: KEPT_CHUNK).
KEPT_CHUNK = 256 * 16


def _kept(values, off: np.ndarray, cols: np.ndarray, ids: np.ndarray, cutoff: float | None = None):
    """The kept cells of flat device matrices ``values`` (matrix i's
    ``off[i + 1] - off[i]`` cells, ``cols[i]`` to a row, pair id ``ids[i]``):
    those of at least ``cutoff`` (None: those not 0), as device (q, x, y,
    value), row-major, the values rounded to single precision as the CPU
    twin's `_at_least`. Two passes of kernels/kept.cu over the values (cupy's
    flatnonzero made a mask, scanned it as 64-bit integers and gathered)."""
    n = int(values.size)
    blocks = -(-n // KEPT_CHUNK)
    if blocks == 0:
        return _concat([])
    args = (values, np.int64(n), np.float64(cutoff or 0.0), np.int32(cutoff is None))
    counts = cp.empty(blocks, cp.int32)
    get_function("kept", "kept_count")((blocks,), (256,), (*args, counts))
    ends = cp.cumsum(counts, dtype=cp.int64)
    total = int(ends[-1])
    out = (cp.empty(total, cp.int64), cp.empty(total, cp.int64), cp.empty(total, cp.int64), cp.empty(total, cp.float32))
    mats = upload(dict(off=np.asarray(off, np.int64), cols=np.asarray(cols, np.int64), ids=np.asarray(ids, np.int64)), cp)
    get_function("kept", "kept_write")((blocks,), (256,), (*args, ends - counts, mats["off"], np.int32(len(off) - 1),
                                                           mats["cols"], mats["ids"], *out))
    return out


def _concat(parts: list):
    if not parts:
        return tuple(cp.zeros(0, dt) for dt in (cp.int64, cp.int64, cp.int64, cp.float32))
    return tuple(cp.concatenate([p[i] for p in parts]) for i in range(4))


def _batch(d_codes, offs, pairs, L1, L2, model, A, cutoff, ids):
    flat, post_off = dense_posteriors(d_codes, offs, pairs, L1, L2, model, A)
    return _kept(flat, post_off, L2, ids, cutoff)


def dense_posteriors(d_codes, offs, pairs, L1, L2, model, A):
    """Every cell's posterior of ``pairs`` (rows L1, columns L2) in one flat
    device array, pair after pair (row-major), and the pairs' offsets in it."""
    cells = L1 * L2
    rows = L1 + 1
    in_shared = rows <= min(SHARED_ROWS, shared_limit() // (8 * 3 * NS))
    post_off, scale_off = offsets(cells), offsets(L1 + L2 + 1)
    ring_off = offsets(np.where(in_shared, 0, 3 * rows * NS))
    post = cp.empty(max(int(post_off[-1]), 1), dtype=cp.float64)
    ring = cp.empty(max(int(ring_off[-1]), 1), dtype=cp.float64)
    scales = cp.empty(max(int(scale_off[-1]), 1), dtype=cp.int32)
    args = (d_codes, cp.asarray(offs[pairs[:, 0]]), cp.asarray(offs[pairs[:, 1]]), cp.asarray(L1.astype(np.int32)),
            cp.asarray(L2.astype(np.int32)), *model, np.int32(A), post, cp.asarray(post_off[:-1].copy()), ring,
            cp.asarray(ring_off[:-1].copy()), scales, cp.asarray(scale_off[:-1].copy()))
    threads = np.clip(_pow2_at_least(-(-(np.minimum(L1, L2) + 1) // CELLS_PER_THREAD)), 32, MAX_THREADS)
    bucket = np.where(in_shared, _pow2_at_least(rows), 0)  # shared rows a launch (0: global ring)
    classes = []
    for key in set(zip(threads.tolist(), bucket.tolist())):
        sel = np.flatnonzero((threads == key[0]) & (bucket == key[1]))
        sel = sel[np.argsort(-cells[sel], kind="stable")]  # costliest first
        classes.append((-int((L1[sel] + L2[sel]).max()), key, sel))  # the longest pairs' classes first
    with fanned_out(POST_STREAMS) as streams:
        for k, (_, key, sel) in enumerate(sorted(classes, key=lambda c: c[:2])):
            shared_rows = int(rows[sel].max()) if key[1] else 0
            kernel = get_function("posterior", "pair_posteriors" if shared_rows else "pair_posteriors_global",
                                  POST_DEFINES)
            with streams[k % len(streams)]:
                _launch(kernel, len(sel), key[0], 8 * 3 * NS * shared_rows, *args, cp.asarray(sel.astype(np.int32)),
                        np.int32(shared_rows))
    return post[: int(post_off[-1])], post_off


def _pow2_at_least(v: np.ndarray) -> np.ndarray:
    """The smallest power of two of at least each of ``v`` (at least 1)."""
    v = np.maximum(np.asarray(v, np.int64), 1)
    return (1 << np.ceil(np.log2(v)).astype(np.int64)).astype(np.int64)


def _launch(kernel, blocks: int, threads: int, shared: int, *args) -> None:
    """Launch with ``shared`` bytes of dynamic shared memory (`opt_in_shared`: BB50002 alone needed it)."""
    kernel((blocks,), (threads,), args, shared_mem=opt_in_shared(kernel, shared))


def consistency_pairs(indptr, indices, data, base, lengths, nq, bq, lq, ps, pt, cutoff: float,
                      batch_bytes: int | None = None, *, tick=None, room: bool = False, planned: int = 0):
    """Twin of posterior_cpu.consistency_pair for pairs s < t of one or more
    families (pair q: local indices ``ps[q] < pt[q]`` in a family of ``nq[q]``
    sequences whose lengths start at ``lengths[lq[q]]`` and whose ordered
    pairs' CSR rows start at ``base[bq[q] + a n + b]``; `probabilistic`
    builds it on the device; the per-pair arrays are host): the transformed
    entries as flat device arrays (q, x, y, p), by pair, then row-major.
    A block takes `CONS_TILE` rows of a pair; a launch takes the pairs of
    one class of row length, costliest first; ``tick(P)`` when done (``room``
    and ``planned`` size the CPU twin's host arrays: unused here)."""
    kernel = get_function("posterior", "consistency_pairs", {"CONS_WARPS": str(CONS_WARPS),
                                                             "CONS_TILE": str(CONS_TILE)})
    lengths = np.asarray(lengths, dtype=np.int64)
    d = [cp.asarray(a) for a in (indptr, indices, data, base, lengths)]
    ps, pt = np.asarray(ps, np.int64), np.asarray(pt, np.int64)
    lq = np.asarray(lq, np.int64)
    ls, lt = lengths[lq + ps], lengths[lq + pt]
    cells = ls * lt
    cap = min(SHARED_COLS, shared_limit() // (8 * CONS_WARPS))
    parts = []
    for c in budget_chunks(8 * cells, batch_bytes or block_bytes()):
        off = offsets(cells[c])
        dense = cp.empty(max(int(off[-1]), 1), dtype=cp.float64)
        per_pair = [cp.asarray(np.ascontiguousarray(a[c]).astype(dt)) for a, dt in
                    ((np.asarray(nq), np.int32), (np.asarray(bq), np.int64), (lq, np.int64), (ps, np.int32), (pt, np.int32))]
        d_off = cp.asarray(off[:-1].copy())
        bucket = np.where(lt[c] <= cap, _pow2_at_least(lt[c]), 0)  # shared columns a launch (0: none)
        for key in sorted(set(bucket.tolist())):
            sel = np.flatnonzero(bucket == key)
            sel = sel[np.argsort(-cells[c][sel], kind="stable")]  # costliest first
            cols = int(lt[c][sel].max()) if key else 0
            tiles = -(-ls[c][sel] // CONS_TILE)
            blk_q = np.repeat(sel, tiles)
            blk_x = (np.arange(len(blk_q)) - np.repeat(offsets(tiles)[:-1], tiles)) * CONS_TILE
            if not len(blk_q):  # pairs of no rows (an empty sequence from the Python API)
                continue
            _launch(kernel, len(blk_q), CONS_WARPS * 32, 8 * CONS_WARPS * cols, *d, *per_pair, dense, d_off,
                    np.float64(cutoff), *upload(dict(q=blk_q.astype(np.int32), x=blk_x.astype(np.int32)), cp).values(),
                    np.int32(cols))
        dense = dense[: int(off[-1])]
        parts.append(_kept(dense, off, lt[c], c))
        del dense  # (not held beside the concatenation below: 5.3 GB of a 200-sequence protein family's peak)
    out = _concat(parts)
    if tick is not None:
        tick(len(ps))
    return out


def ordered_csr(q, x, y, p, first: np.ndarray, n_pairs: int, longest: int) -> tuple:
    """Twin of posterior_cpu.ordered_csr: (indptr, indices, data) of every
    ordered pair's rows (`PosteriorKernels.ordered_csr`) by one sort of
    the entries keyed by row, then column (``longest``: at least every
    column index + 1; the keys are distinct, so any sort gives the same
    arrays)."""
    n_rows = int(first[-1])
    d_first = cp.asarray(first[:-1])
    g = cp.concatenate([d_first[:n_pairs][q] + x, d_first[n_pairs:][q] + y])
    del d_first
    col = cp.concatenate([y, x]).astype(cp.int32)
    order = cp.argsort(g * longest + col)
    # (each row's first entry in key order; CuPy's bincount took 2.3 GB of CUB histogram space for a
    # 100-sequence RNA family's 0.7 M rows)
    indptr = cp.searchsorted(g[order], cp.arange(n_rows + 1, dtype=g.dtype))
    del g
    col = col[order]
    val = cp.concatenate([p, p])[order]
    return indptr, col, val
