"""GPU pairwise alignment: scheduling, batching and multi-GPU launch of
``kernels/pairwise.cu``.

Schedule first, then execute:

1. pairs are sorted by length (A in buckets of 16, then B) and cut into warps
   of 32, so the threads of a warp do similar work; a warp runs as one
   (Mw x Nw) problem;
2. warps are dealt to the visible GPUs longest first, each to the least
   loaded one (LPT);
3. each GPU runs its warps in batches sized from its free memory
   (``memGetInfo``) or ``batch_bytes``.

A pair's result does not depend on its warp, batch or GPU, so the output is
identical whatever the GPU count and batch size. With a traceback, warps whose
nibble matrix would not fit in one batch are aligned by the CPU twin instead
(its checkpointed traceback keeps memory at O(n sqrt m)); the result is the same.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..kernels import get_function
from . import pairwise_cpu

WARP = 32
STRIP = 8  # R in the kernel
BLOCK = 64
PAD = 31
MEMORY_FRACTION = 0.6


@dataclass(frozen=True)
class WarpPlan:
    """Pairs (in slot order, -1 padding) and padded dims of every warp."""

    slots: np.ndarray  # int64 (W, 32): pair index or -1
    dims: np.ndarray  # int64 (W, 2): Mw (multiple of STRIP), Nw (multiple of 4)

    def row_bytes(self) -> np.ndarray:
        return self.dims[:, 1] * WARP * 8

    def dir_bytes(self) -> np.ndarray:
        return self.dims[:, 0] * self.dims[:, 1] * WARP // 2

    def cost(self) -> np.ndarray:
        return self.dims[:, 0] * self.dims[:, 1]


def plan_warps(m: np.ndarray, n: np.ndarray) -> WarpPlan:
    """Sort pairs by length and cut them into warps."""
    order = np.lexsort((-n, -((m + 15) // 16)))
    P = len(order)
    W = (P + WARP - 1) // WARP
    slots = np.full(W * WARP, -1, np.int64)
    slots[:P] = order
    slots = slots.reshape(W, WARP)
    live = slots >= 0
    mw = np.where(live, m[np.maximum(slots, 0)], 0).max(axis=1)
    nw = np.where(live, n[np.maximum(slots, 0)], 0).max(axis=1)
    dims = np.stack([(mw + STRIP - 1) // STRIP * STRIP, (nw + 3) // 4 * 4], axis=1).astype(np.int64)
    return WarpPlan(slots, dims)


def deal_longest_first(cost: np.ndarray, k: int) -> list[np.ndarray]:
    """Warp indices per device: longest first, each to the least loaded device.

    >>> [a.tolist() for a in deal_longest_first(np.array([5, 9, 1, 4]), 2)]
    [[1, 2], [0, 3]]
    """
    load = np.zeros(k)
    out: list[list[int]] = [[] for _ in range(k)]
    for w in np.argsort(-cost, kind="stable"):
        d = int(np.argmin(load))
        out[d].append(int(w))
        load[d] += cost[w]
    return [np.array(o, np.int64) for o in out]


def _batches(warps: np.ndarray, need: np.ndarray, budget: int) -> list[np.ndarray]:
    """Consecutive runs of ``warps`` whose memory stays within ``budget``."""
    out, cur, used = [], [], 0
    for w in warps:
        if cur and used + need[w] > budget:
            out.append(np.array(cur, np.int64))
            cur, used = [], 0
        cur.append(int(w))
        used += int(need[w])
    if cur:
        out.append(np.array(cur, np.int64))
    return out


def _padded_sequences(seq: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence starting at a multiple of 4, PAD between and after."""
    lens = np.diff(off)
    room = (lens + 3) // 4 * 4
    new_off = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(room, out=new_off[1:])
    tail = int(lens.max()) + 8 if len(lens) else 8
    buf = np.full(int(new_off[-1]) + tail, PAD, np.uint8)
    idx = np.repeat(new_off[:-1] - off[:-1], lens) + np.arange(int(off[-1]))
    buf[idx] = seq
    return buf, new_off[:-1].copy()


def _kernel(mode: int, traceback: bool):
    import cupy

    for dpx in ("1", "0"):
        try:
            return get_function("pairwise", "pairwise_dp",
                                {"MODE": str(mode), "TRACEBACK": str(int(traceback)), "DPX": dpx})
        except cupy.cuda.compiler.CompileException:
            if dpx == "0":
                raise
    raise AssertionError("unreachable")


def _run_device(dev, warps, plan, pa, pb, seqbuf, seqoff, lens, S, go, ge, mode, traceback,
                batch_bytes, res, ops, ops_off, stats):
    """Align the pairs of ``warps`` on device ``dev``, writing into the host arrays."""
    import cupy as cp

    with cp.cuda.Device(dev):
        kern = _kernel(mode, traceback)
        d_seq = cp.asarray(seqbuf)
        d_off = cp.asarray(seqoff)
        d_len = cp.asarray(lens.astype(np.int32))
        d_S = cp.asarray(S.astype(np.int32))
        need = plan.row_bytes() + (plan.dir_bytes() if traceback else 0)
        if batch_bytes is None:
            free, _ = cp.cuda.runtime.memGetInfo()
            batch_bytes = int(free * MEMORY_FRACTION)
        for batch in _batches(warps, need, batch_bytes):
            slots = plan.slots[batch].ravel()
            live = slots >= 0
            sp = np.maximum(slots, 0)
            s_pa = np.where(live, pa[sp], -1).astype(np.int32)
            s_pb = np.where(live, pb[sp], -1).astype(np.int32)
            dims = plan.dims[batch]
            row_off = np.zeros(len(batch), np.int64)
            row_off[1:] = np.cumsum(dims[:-1, 1] * WARP)
            dir_off = np.zeros(len(batch), np.int64)
            if traceback:
                dir_off[1:] = np.cumsum(dims[:-1, 0] // STRIP * dims[:-1, 1] * WARP)
            n_dir = int((dims[:, 0] // STRIP * dims[:, 1] * WARP).sum()) if traceback else 1
            lens_slot = np.where(live, lens[np.maximum(s_pa, 0)] + lens[np.maximum(s_pb, 0)], 0)
            s_ops_off = np.zeros(len(slots) + 1, np.int64)
            np.cumsum(lens_slot, out=s_ops_off[1:])
            d_rows = cp.empty(int((dims[:, 1] * WARP).sum()) * 2, cp.int32)
            d_dirs = cp.empty(max(n_dir, 1), cp.uint32)
            d_ops = cp.empty(max(int(s_ops_off[-1]), 1) if traceback else 1, cp.uint8)
            d_res = cp.zeros((len(slots), 8), cp.int64)
            nslots = len(slots)
            t0, t1 = cp.cuda.Event(), cp.cuda.Event()
            t0.record()
            kern(((nslots + BLOCK - 1) // BLOCK,), (BLOCK,),
                 (d_seq, d_off, d_len, cp.asarray(s_pa), cp.asarray(s_pb),
                  cp.asarray(dims.astype(np.int32)), cp.asarray(row_off), d_rows, cp.asarray(dir_off),
                  d_dirs, d_S, np.int32(S.shape[0]), np.int32(go), np.int32(ge), np.int32(nslots),
                  d_res, d_ops, cp.asarray(s_ops_off[:-1].copy())))
            t1.record()
            h_res = d_res.get()
            stats.setdefault(f"kernel_s_gpu{dev}", 0.0)
            stats[f"kernel_s_gpu{dev}"] += cp.cuda.get_elapsed_time(t0, t1) / 1e3
            res[slots[live]] = h_res[live]
            if traceback:
                h_ops = d_ops.get()
                # copy each live slot's region into the pair's slot of the host ops buffer
                src = s_ops_off[:-1][live]
                dst = ops_off[slots[live]]
                ln = lens_slot[live]
                idx_src = np.repeat(src, ln) + _ramp(ln)
                idx_dst = np.repeat(dst, ln) + _ramp(ln)
                ops[idx_dst] = h_ops[idx_src]
            del d_rows, d_dirs, d_ops, d_res


def _ramp(lengths: np.ndarray) -> np.ndarray:
    """0..l-1 for each l, concatenated."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - starts


def visible_devices() -> list[int]:
    import cupy

    return list(range(cupy.cuda.runtime.getDeviceCount()))


def align_batch(seq, off, pa, pb, S, go, ge, mode, traceback, devices=None, batch_bytes=None, stats=None):
    """GPU counterpart of `pairwise_cpu.align_batch` (same outputs, bit for bit).
    ``stats`` (a dict), if given, receives the summed kernel seconds per GPU."""
    stats = {} if stats is None else stats
    pa = np.asarray(pa, np.int64)
    pb = np.asarray(pb, np.int64)
    lens = np.diff(off).astype(np.int64)
    m, n = lens[pa], lens[pb]
    devices = visible_devices() if devices is None else list(devices)
    plan = plan_warps(m, n)
    P = len(pa)
    res = np.zeros((P, 8), np.int64)
    ops_off = np.zeros(P + 1, np.int64)
    if traceback:
        np.cumsum(m + n, out=ops_off[1:])
    ops = np.empty(int(ops_off[-1]), np.uint8)
    warps = np.arange(len(plan.dims))
    cpu_pairs = np.empty(0, np.int64)
    if traceback:
        limit = batch_bytes if batch_bytes is not None else _smallest_free(devices)
        big = plan.dir_bytes() + plan.row_bytes() > limit
        cpu_pairs = plan.slots[big].ravel()
        cpu_pairs = cpu_pairs[cpu_pairs >= 0]
        warps = warps[~big]
    seqbuf, seqoff = _padded_sequences(seq, off)
    shares = deal_longest_first(plan.cost()[warps], max(1, len(devices)))
    errors: list[BaseException] = []

    def work(dev, share):
        try:
            _run_device(dev, warps[share], plan, pa, pb, seqbuf, seqoff, lens, S, go, ge, mode, traceback,
                        batch_bytes, res, ops, ops_off, stats)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d, s)) for d, s in zip(devices, shares) if len(s)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    if cpu_pairs.size:
        r, o, oo = pairwise_cpu.align_batch(seq, off, pa[cpu_pairs], pb[cpu_pairs], S, go, ge, mode, True)
        res[cpu_pairs] = r
        # the twin returns compacted moves: put them at the end of each pair's slot
        for k, p in enumerate(cpu_pairs):
            seg = o[oo[k]: oo[k + 1]]
            ops[ops_off[p + 1] - len(seg): ops_off[p + 1]] = seg
            res[p, 5] = ops_off[p + 1] - ops_off[p] - len(seg)
    return res, *pairwise_cpu.gather_ops(ops, ops_off, res[:, 5], traceback)


def _smallest_free(devices) -> int:
    import cupy

    free = []
    for d in devices:
        with cupy.cuda.Device(d):
            free.append(cupy.cuda.runtime.memGetInfo()[0])
    return int(min(free) * MEMORY_FRACTION)
