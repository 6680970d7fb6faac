"""GPU pairwise alignment: scheduling, batching and multi-GPU launch of
``kernels/pairwise.cu``.

Schedule first, then execute:

1. pairs are sorted by length (A in buckets of 16, then B) and cut into
   groups of similar work: 64 pairs per warp for the packed 16-bit
   score-only kernel (two pairs per thread), 32 for the 32-bit kernels;
   a group runs as one (Mw x Nw) problem;
2. score-only groups whose scores provably fit 16 bits (after dividing every
   cost by their gcd) take the 16-bit kernel, the others the 32-bit one; in
   local mode the costliest 16-bit groups, whose one warp would outlast
   SPLIT_SHARE of the pass, run split (two warps of 32 pairs each, a pair per
   lane in two skewed strips), so the pass does not end waiting for them;
3. each device takes a contiguous range of pairs holding an equal share of
   the work (cells, from a sample of the pairs; twice for pairs too long for
   16 bits), so its scores and alignments land in place with no gather on
   the host, and runs its groups longest first;
4. the host stages the sequences, tables and pairs in one kept page-locked
   buffer (the pairs cast to int32 by numba's threads, without the GIL),
   before the device threads start, and one host thread per device
   (kept across calls) copies them and its range's pairs from there
   (asynchronous copies), plans its groups there (keys and groups by small
   kernels around radix sorts, the costliest groups first) and queues its
   batches on its own stream (kept across calls, so CuPy's pooled memory is
   reused), sized from
   its free memory (``memGetInfo`` plus CuPy's pooled free bytes) or
   ``batch_bytes``; the kernels read the pairs of each slot themselves, so
   a launch is a handful of calls and nothing it queues waits for the host;
   the host result array (page-locked up to PINNED_RESULT_BYTES) is
   allocated while the kernels run; tracebacks of very many pairs run in
   chunks of pairs whose run slots fit the devices' memory;
5. with a traceback the kernel writes each pair's CIGAR runs into a slot of
   m + n words; a kernel queued behind them places the device's runs in pair
   order, and its thread copies them into its part of the host array once
   every device knows its run count (the threads meet once). Local and
   semiglobal tracebacks first run the score-only kernels to find each end
   cell, then align only the box before it (the nibbles there do not depend
   on anything after it). Traceback groups whose one warp would outlast the
   whole pass (`wide_groups`) run first, a warp per pair (``pairwise_wide``:
   lanes hand rows down), so the pass is not left waiting for a few long
   pairs on single threads; the others run beside them on a second stream.
   That whole plan (which groups go wide, the nibble, row and run offsets)
   is queued on the device behind the score pass, so the host launches the
   two kernels after one small copy (`tb_direct`; passes too big for the
   memory go in batches instead); each device sums its pairs' runs itself,
   so the host gathers nothing per pair.

A pair's result does not depend on its group, batch, kernel or device, so the
output is identical whatever the GPU count and batch size. With a traceback,
groups whose nibble matrix would not fit in one batch are aligned by the CPU
twin instead (its checkpointed traceback keeps memory at O(n sqrt m)); the
result is the same.
"""

from __future__ import annotations

import itertools
import mmap
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from math import gcd

import numba
import numpy as np

from ..kernels import get_function
from . import pairwise_cpu

WARP = 32
STRIP = 8  # R in the 32-bit kernel
STRIP16 = {0: 16, 1: 12, 2: 8}  # S16 of the 16-bit kernel, per mode (registers: no spills at 2 blocks)
BLOCK = 256  # 32-bit kernels: 3 blocks per SM (<= 80 registers a thread, PW_MINBLOCKS) and 3 tables
BLOCK16 = 192  # 16-bit kernel: 149 registers a thread
PAD = 31
MEMORY_FRACTION = 0.6
LIMIT16 = 30_000  # |values| the 16-bit kernel may meet (NEG16 = -32000)
SPLIT_SAMPLE = 1 << 14  # pairs whose cost sets the devices' ranges (see _Run.split)
SPLIT_SPANS = 1024
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


def _kernel(name: str, mode: int, traceback: bool, split: bool = False):
    """A kernel of ``pairwise.cu`` for this mode (the DPX intrinsics need CUDA 12 or
    later; before Hopper the CUDA headers emulate them); ``split``: the 16-bit
    kernel's variant for the costliest groups (SPLIT in pairwise.cu)."""
    return get_function("pairwise", name, {"MODE": str(mode), "TRACEBACK": str(int(traceback)), "DPX": "1",
                                           "S16": str(STRIP16[mode]), "SPLIT": str(int(split)),
                                           "KNOWN_END": str(int(traceback and mode != 0))})


def table_bytes(ksize: int) -> int:
    """Shared memory of the lane-replicated substitution table (see fill_table)."""
    return (ksize + 1) ** 2 * WARP * 4


def _with_table(kern, ksize: int) -> int:
    smem = table_bytes(ksize)
    if smem > 48 * 1024 and kern.max_dynamic_shared_size_bytes < smem:
        kern.max_dynamic_shared_size_bytes = smem
    return smem


@dataclass
class _Job:
    """One batch of groups of one kind on one device."""

    kind: str  # "s16", "s32" or "tb"
    plan: WarpPlan
    warps: np.ndarray
    events: tuple = ()
    tb: tuple = ()  # traceback: (slot runs, slot offsets, slot pair ids) on the device
    cut: tuple = ()  # (a device count n, first): its groups are warps[:n] if first else warps[n:]


_STREAMS: dict = {}


def _stream(dev: int, k: int):
    """The non-blocking stream of the k-th entry of a call's devices (on device
    ``dev``, current), kept for later calls: CuPy pools freed memory per stream,
    so a fresh stream would allocate afresh on every call."""
    import cupy as cp

    if (dev, k) not in _STREAMS:
        _STREAMS[dev, k] = cp.cuda.Stream(non_blocking=True)
    return _STREAMS[dev, k]


_STAGING: dict = {}
PINNED_RESULT_BYTES = 1 << 29  # results up to this size land in page-locked host memory
PINNED_FREE_BLOCKS = 8  # more unused blocks in CuPy's pinned pool than this: released
_LOCKS: dict = {}  # per device entry (its stream) and per device set (its staging buffer): a call's until it syncs
_LOCK = threading.Lock()


def _pinned(nbytes: int):
    """Page-locked host memory of its own (not CuPy's pinned pool, which keeps
    every freed block pinned for good): released when the last array on it is
    gone; portable, so every device copies to and from it directly."""
    import cupy as cp

    flags = getattr(cp.cuda.runtime, "hostAllocPortable", 1)
    return cp.cuda.PinnedMemoryPointer(cp.cuda.PinnedMemory(max(nbytes, 1), flags), 0)


def _entry_lock(key) -> threading.Lock:
    with _LOCK:
        return _LOCKS.setdefault(key, threading.Lock())


def _staging(key, nbytes: int):
    """A page-locked host buffer of at least ``nbytes``, kept per key (a call's
    device set) across calls, grown by half again when too small; the key's
    lock (`_entry_lock`) is held from its first write until every stream that
    copies from it has synced, so no copy is pending when it is written again."""
    mem = _STAGING.get(key)
    if mem is None or mem[1] < nbytes:
        size = max(nbytes, 0 if mem is None else mem[1] * 3 // 2)
        mem = _STAGING[key] = (_pinned(size), size)
    return mem[0]


CAST_CHUNK = 1 << 16  # pairs per task of `_cast_columns`
CAST_THREADS = 8  # its threads (they spin a while after it, keeping their cores from the device threads)
HOST_THREADS = 16  # page faults of `_fault_tasks` (NumPy releases the GIL while it fills)
_POOL: list = []


def _host_pool() -> ThreadPoolExecutor:
    """The threads of `_fault_tasks` (made once; their tasks never wait for each other)."""
    with _LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(min(HOST_THREADS, os.cpu_count() or 1)))
    return _POOL[0]


@numba.njit(nogil=True, parallel=True, cache=True)
def _cast_columns(pa, pb, out):  # pragma: no cover - compiled
    """``out[:P] = pa`` and ``out[P:] = pb`` (int64 to int32: pair ids are
    below 2**31) in chunks on numba's threads, without the GIL: NumPy copies
    on a pool of Python threads took the 16 MB of a million pairs 1.4-2.5 ms
    on the H200 hosts, each task waiting for the GIL to start and end."""
    P = pa.shape[0]
    for c in numba.prange((P + CAST_CHUNK - 1) // CAST_CHUNK):
        for i in range(c * CAST_CHUNK, min((c + 1) * CAST_CHUNK, P)):
            out[i] = pa[i]
            out[P + i] = pb[i]


@numba.njit(nogil=True, cache=True)
def _span_costs(pa, pb, lens, starts, take, smax):  # pragma: no cover - compiled
    """Estimated cells of each span ``starts[s] .. starts[s + 1] - 1`` of the
    pairs: the mean of its first ``take`` pairs times its width; with ``smax``
    (the largest score in cost units, else 0) pairs too long for the 16-bit
    kernel count twice (`_Run.split`)."""
    out = np.empty(starts.size - 1)
    for s in range(starts.size - 1):
        tot = 0.0
        for i in range(starts[s], starts[s] + take):
            m, n = lens[pa[i]], lens[pb[i]]
            c = float(m * n)
            if smax > 0 and min(m, n) * smax >= LIMIT16:
                c *= 2.0
            tot += c
        out[s] = tot / take * (starts[s + 1] - starts[s])
    return out


def _result_array(P: int, offsets: bool = False) -> tuple[np.ndarray, np.ndarray | None, bool]:
    """The host (P, 8) int64 result array, with ``offsets`` the (P + 1,) int64
    run sums beside it (else None), and whether they are page-locked: they
    are when small enough (device copies go straight to them at full speed,
    and nothing needs faulting in), else they are pre-faulted pageable memory."""
    import cupy as cp

    size = P * 8 + (P + 1 if offsets else 0)
    if 0 < P and 8 * size <= PINNED_RESULT_BYTES:
        # CuPy's pinned pool: a block of the same size comes back at once (a fresh
        # cudaHostAlloc, or freeing one, costs milliseconds inside the call), but
        # freed blocks stay pinned, so the pool is emptied when they pile up
        pool = cp.get_default_pinned_memory_pool()
        if pool.n_free_blocks() > PINNED_FREE_BLOCKS:
            pool.free_all_blocks()
        flat = np.frombuffer(cp.cuda.alloc_pinned_memory(8 * size), np.int64, size)
        return flat[:P * 8].reshape(P, 8), flat[P * 8:] if offsets else None, True
    return _fresh((P, 8), np.int64), _fresh(P + 1, np.int64) if offsets else None, False


@cache
def _sm_count(dev: int) -> int:
    """Multiprocessors of device ``dev`` (``Device.attributes`` asks the driver for every attribute)."""
    import cupy as cp

    return int(cp.cuda.Device(dev).attributes["MultiProcessorCount"])


class _Device:
    """One device's share of a call: pairs ``lo .. hi - 1`` (ids local to the
    range), its uploads, its results and the stream its work runs on."""

    def __init__(self, dev, k: int, run):
        self.id, self.k = dev, k
        self.mode, self.traceback = run.mode, run.traceback
        self.lo = self.hi = 0
        self.stream = _stream(dev, k)
        self.resident = _sm_count(dev) * WARPS_PER_SM
        self.resident16 = _sm_count(dev) * WARPS_PER_SM16
        self.lmax = run.lmax
        self.words = 0  # run words of the range's traceback slots (a bound of its runs)
        self.placed = None  # its runs in pair order (`_Run.place`)

    def load(self, run) -> None:
        """Upload the sequences and tables (`_Run.stage`: one asynchronous copy)
        and lay the sequences out padded."""
        import cupy as cp

        spans = run.spans
        with self.stream:
            blob = cp.empty(int(spans[-1]), cp.uint8)
            cp.cuda.runtime.memcpyAsync(blob.data.ptr, run.mem.ptr, int(spans[-1]), cp.cuda.runtime.memcpyHostToDevice,
                                        self.stream.ptr)
            seq, off, self.off, self.len, self.S, self.S16 = (
                blob[a:a + x.nbytes].view(x.dtype).reshape(x.shape) for x, a in zip(run.parts, spans[:-1]))
            nseq = len(run.doff)
            if not nseq:
                self.seq = cp.full(run.padded_size, PAD, cp.uint8)
                return
            self.seq = cp.empty(run.padded_size, cp.uint8)
            pad = _kernel("pad_sequences", run.mode, run.traceback)
            pad(((nseq + 127) // 128,), (128,), (seq, off, self.off, np.int32(nseq), np.int64(run.padded_size),
                                                 self.seq))

    def take(self, lo: int, hi: int) -> None:
        """Make room for the pairs ``lo .. hi - 1`` and their results."""
        import cupy as cp

        self.lo, self.hi = lo, hi
        n = hi - lo
        with self.stream:
            self.ids = cp.empty(2 * n, cp.int32)
            self.zero = cp.zeros(1, cp.int64)
            self.pa, self.pb = self.ids[:n], self.ids[n:]
            self.res = cp.empty((n, 8), cp.int64)  # every row is written by a kernel (or the twin)

    def upload(self, run) -> None:
        """The range's pairs (two int32 columns staged by `_Run.stage`)
        to the device, on the current stream."""
        import cupy as cp

        n, lo = self.hi - self.lo, self.lo
        if not n:
            return
        stream = cp.cuda.get_current_stream().ptr
        at, P = run.mem.ptr + int(run.spans[-1]), len(run.pa)
        for dst, src in ((self.ids.data.ptr, at + 4 * lo), (self.ids.data.ptr + 4 * n, at + 4 * (P + lo))):
            cp.cuda.runtime.memcpyAsync(dst, src, 4 * n, cp.cuda.runtime.memcpyHostToDevice, stream)

    def count_runs(self) -> None:
        """Queue the exclusive sums of the runs of the range's pairs (slot words
        m + n less the first run's index, res[:, 5]) into ``self.dst``: where
        they land in the range's part of the output, if the GPU aligned them all."""
        self.dst = _exclusive(self.len[self.pa] + self.len[self.pb] - self.res[:, 5])

    def slot_words(self, d_slots):
        """Run words of each slot (m + n of its pair, 0 for padding) on the device."""
        import cupy as cp

        sp = cp.maximum(d_slots, 0)
        return cp.where(d_slots >= 0, self.len[self.pa[sp]] + self.len[self.pb[sp]], 0)

    def fetch(self, out: np.ndarray, pinned: bool, dst: np.ndarray | None = None) -> None:
        """``res`` into ``out`` (host, C-contiguous, page-locked if ``pinned``),
        and with ``dst`` (host, contiguous, page-locked if ``pinned``) the run
        sums of `count_runs` into it first: they are there on return. A copy
        into page-locked ``out`` is only queued: the stream must be
        synchronised before ``out`` is read."""
        import cupy as cp

        def down(host, dev):  # (queued only into page-locked memory)
            if pinned:
                cp.cuda.runtime.memcpyAsync(host.ctypes.data, dev.data.ptr, host.nbytes,
                                            cp.cuda.runtime.memcpyDeviceToHost, self.stream.ptr)
            else:
                dev.get(out=host)

        sums = None
        with self.stream:
            if dst is not None and len(dst):
                down(dst, self.dst[1:])
                sums = self.stream.record() if pinned else None
            if out.size:
                down(out, self.res)
        if sums is not None:
            sums.synchronize()  # (the results may still be copying)

    def copy_runs(self, chunks: list) -> None:
        """The placed runs (`_Run.place`) into their part of the host array,
        chunk by chunk (`_fault_chunks`: each copied once its pages are faulted
        in, while the host threads fault in the next ones); returns once they
        are all there."""
        with self.stream:
            at = 0
            for part, tasks in chunks:
                for t in tasks:
                    t.result()
                self.placed[at:at + part.size].get(out=part)
                at += part.size
        self.stream.synchronize()
        self.placed = None

    def plan(self, ids, width: int, strip: int, box: bool = False, runs: bool = False) -> WarpPlan:
        """`plan_warps` of the pairs ``ids`` (a device int64 array) computed here:
        keys by a kernel, a radix sort, then one thread per group (``plan_keys``
        and ``plan_groups`` in pairwise.cu); the group slots and dims stay on
        the device, the dims (and with ``runs`` the run-slot words) come back in
        one copy. With ``box`` a pair's lengths are its end cell (from ``res``)."""
        import cupy as cp

        if not ids.size:
            return WarpPlan(cp.full((0, width), -1, cp.int64), np.zeros((0, 2), np.int64), width,
                            cp.zeros((0, 2), cp.int64), np.zeros(0, np.int64), cp.zeros(1, cp.int64),
                            np.zeros(1, np.int64))
        return self.finish(*self.groups(ids, width, strip, box), width, runs)

    def finish(self, slots, out, width: int, runs: bool) -> WarpPlan:
        """The WarpPlan of `groups`' output: one copy of the dims (and with
        ``runs`` the run-slot words) to the host, which waits for the stream."""

        W = len(out) // 4
        drow = _exclusive(out[3 * W:])
        host = out[:3 * W].get()  # one copy (waits for the stream)
        dims = host[:2 * W].reshape(W, 2)
        return WarpPlan(slots.reshape(W, width), dims, width, out[:2 * W].reshape(W, 2),
                        host[2 * W:].copy() if runs else None, drow, _exclusive(dims[:, 1] * WARP))

    def groups(self, ids, width: int, strip: int, box: bool):
        """Queue the planning kernels of `plan` (nothing waits): the slots
        (W * width pair ids, -1 padding) and ``out`` (4 W: the dims (W, 2), each
        group's run-slot words, its row-buffer words) on the device."""
        import cupy as cp

        P = int(ids.size)
        W = (P + width - 1) // width
        narrow = _narrow_keys(self.lmax)
        key = cp.empty(P, cp.int32 if narrow else cp.int64)
        keys = _kernel("plan_keys", self.mode, self.traceback)
        keys(((P + 255) // 256,), (256,), (ids, np.int64(P), self.pa, self.pb, self.len, self.res, np.int32(box),
                                           np.int64(self.lmax), np.int32(narrow), key, key))
        perm = cp.argsort(key)
        slots = cp.empty(W * width, cp.int64)
        out = cp.empty(4 * W, cp.int64)
        gkey = cp.empty(W, cp.int64)
        groups = _kernel("plan_groups", self.mode, self.traceback)
        groups(((W + 127) // 128,), (128,), (perm, ids, np.int64(P), np.int32(width), np.int64(W), self.pa, self.pb,
                                            self.len, self.res, np.int32(box), np.int32(strip), slots, out, gkey))
        order = cp.argsort(gkey)  # (stable: the costliest groups first, as `plan_warps`)
        slots_o, out_o = cp.empty_like(slots), cp.empty_like(out)
        _kernel("plan_order", self.mode, self.traceback)(
            ((W + 127) // 128,), (128,), (order, np.int32(width), np.int64(W), slots, out, slots_o, out_o))
        return slots_o, out_o


class _DeviceDims:
    """The dims of a plan that stays on the device (``dims``: their host copy,
    made by `_prefetch`; only the statistics read them); made on the stream
    that plans them, right after the planning."""

    def __init__(self, ddims, width: int):
        import cupy as cp

        self._d, self.width, self.dims = ddims, width, None
        self.ready = cp.cuda.get_current_stream().record()


class _Run:
    """One call: the schedule's inputs on the host, shared by the devices."""

    def __init__(self, seq, off, pa, pb, S, go, ge, mode, traceback, stats):
        seq, off = np.ascontiguousarray(seq, np.uint8), np.ascontiguousarray(off, np.int64)
        self.seq, self.off = seq, off
        self.pa, self.pb = pa, pb
        self.lens = np.diff(off).astype(np.int64)
        self.lens32 = self.lens.astype(np.int32)
        self.doff, self.padded_size = _padded_offsets(off)
        self.S, self.go, self.ge, self.mode, self.traceback = S, go, ge, mode, traceback
        self.unit = cost_unit(S, go, ge)
        self.lmax = int(self.lens.max()) if len(self.lens) else 0  # bounds every length and end cell
        self.stats = stats

    def stage(self, key) -> None:
        """Every device's host inputs in one kept page-locked buffer (`_staging`
        of ``key``; its lock is held until every device has copied from it):
        the sequences, offsets, lengths and tables (``parts`` at ``spans``),
        then the pairs as two int32 columns (`_cast_columns`)."""
        self.parts = (self.seq, self.off, self.doff, self.lens32, self.S.astype(np.int32),
                      (self.S // self.unit).astype(np.int32))
        self.spans = np.cumsum([0] + [(x.nbytes + 15) // 16 * 16 for x in self.parts])
        at = int(self.spans[-1])
        size = at + 8 * len(self.pa)
        self.mem = _staging(key, size)
        host = np.frombuffer(self.mem, np.uint8, size)
        for x, a in zip(self.parts, self.spans[:-1]):
            host[a:a + x.nbytes] = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
        threads = numba.get_num_threads()  # (this thread's setting: a few threads read memory as fast as all)
        numba.set_num_threads(min(threads, CAST_THREADS))
        try:
            _cast_columns(self.pa, self.pb, host[at:].view(np.int32))
        finally:
            numba.set_num_threads(threads)

    def split(self, k: int, slow_factor: bool) -> np.ndarray:
        """Boundaries of k contiguous ranges of pairs with about equal cells;
        with ``slow_factor`` pairs too long for the 16-bit kernel count twice.
        The pairs are cut into SPLIT_SPANS spans whose cost is estimated from
        their first few pairs (contiguous reads: a strided sample of a million
        pairs costs milliseconds in cache misses), and each boundary is
        interpolated inside its span."""
        P = len(self.pa)
        if k == 1 or P == 0:
            return np.array([0] + [P] * k, np.int64)
        spans = min(P, SPLIT_SPANS)
        starts = np.arange(spans + 1, dtype=np.int64) * P // spans
        width = np.diff(starts)
        take = int(min(max(1, SPLIT_SAMPLE // spans), width.min()))
        smax = max(int(self.S.max()) // self.unit, 1) if slow_factor else 0
        span_cost = _span_costs(self.pa, self.pb, self.lens, starts, take, smax)
        c = np.concatenate(([0.0], np.cumsum(span_cost)))
        target = c[-1] * np.arange(1, k) / k
        j = np.clip(np.searchsorted(c, target, side="right") - 1, 0, spans - 1)
        frac = (target - c[j]) / np.maximum(span_cost[j], 1e-300)
        inner = np.rint(starts[j] + np.clip(frac, 0, 1) * width[j]).astype(np.int64)
        return np.concatenate(([0], np.maximum.accumulate(np.clip(inner, 0, P)), [P])).astype(np.int64)

    # ---- launch (asynchronous, on the device's stream)
    def launch(self, dv: _Device, job: _Job) -> None:
        """Queue one job on the current stream. Everything it needs is built on
        the device from the plan (no host-to-device copy, which would wait for
        the stream), so the host never blocks here."""
        import cupy as cp

        plan, warps = job.plan, job.warps
        g0, g1 = int(warps[0]), int(warps[-1]) + 1  # batches are consecutive groups
        dims = plan.dims[g0:g1]
        ddims = plan.ddims[g0:g1]

        d_slots = plan.slots[g0:g1].ravel()
        row_off, row_base = plan.drow[g0:g1], int(plan.hrow[g0])
        d_rows = cp.empty(int(plan.hrow[g1] - plan.hrow[g0]) * 2, cp.int32)
        if job.kind == "s16":
            self.launch_score16(dv, job, (d_slots, ddims, row_off, row_base, d_rows), len(warps))
            return
        nslots = int(d_slots.size)
        if job.kind == "s32":
            dir_off, d_dirs = cp.zeros(len(warps), cp.int64), cp.empty(1, cp.uint32)
            d_slot_off, d_runs = cp.zeros(nslots + 1, cp.int64), cp.empty(1, cp.uint32)
        else:
            words = _wide_words if job.kind == "tbw" else _dir_words  # (wide: a warp per pair)
            dir_off, d_dirs = _exclusive(words(ddims))[:-1], cp.empty(max(int(words(dims).sum()), 1), cp.uint32)
            d_slot_off = _exclusive(dv.slot_words(d_slots))
            d_runs = cp.empty(max(int(plan.words[g0:g1].sum()), 1), cp.uint32)
        self.launch_dp(dv, job, (d_slots, ddims, row_off, row_base, d_rows, dir_off, d_dirs, d_runs, d_slot_off),
                       nslots)

    def launch_score16(self, dv: _Device, job: _Job, args: tuple, ngroups: int, nsplit=None,
                       bound: int = 0) -> None:
        """Queue the packed 16-bit score kernel over ``ngroups`` groups on the
        current stream (``args``: slots, dims, row offsets, their base, rows),
        less the first ``nsplit`` (a device count; None: 0); with ``bound``
        (a bound of ``nsplit``), the split kernel over those first groups instead."""
        import cupy as cp

        d_slots, ddims, row_off, row_base, d_rows = args
        u = self.unit
        kern = _kernel("pairwise_score16", self.mode, False, bool(bound))
        smem = _with_table(kern, self.S.shape[0])
        threads = (2 * bound if bound else ngroups) * WARP
        if nsplit is None:
            nsplit = dv.zero
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record()
        kern(((threads + BLOCK16 - 1) // BLOCK16,), (BLOCK16,),
             (dv.seq, dv.off, dv.len, dv.pa, dv.pb, d_slots, ddims, row_off, np.int64(row_base), d_rows,
              dv.S16, np.int32(self.S.shape[0]), np.int32(self.go // u), np.int32(self.ge // u),
              np.int32(u), np.int32(ngroups), nsplit, dv.res), shared_mem=smem)
        t1.record()
        job.events = (t0, t1)

    def launch_dp(self, dv: _Device, job: _Job, args: tuple, nslots: int) -> None:
        """Queue one 32-bit kernel over ``nslots`` slots on the current stream:
        ``job.kind`` "s32" (scores), "tb" (tracebacks) or "tbw" (tracebacks, a
        warp per pair). ``args``: slots, dims, row offsets and their base, rows,
        nibble offsets, nibbles, runs, run-slot offsets."""
        import cupy as cp

        d_slots, ddims, row_off, row_base, d_rows, dir_off, d_dirs, d_runs, d_slot_off = args
        wide = job.kind == "tbw"
        kern = _kernel("pairwise_wide" if wide else "pairwise_dp", self.mode, job.kind != "s32")
        smem = _with_table(kern, self.S.shape[0])
        threads = nslots * (WARP if wide else 1)
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record()
        kern(((threads + BLOCK - 1) // BLOCK,), (BLOCK,),
             (dv.seq, dv.off, dv.len, dv.pa, dv.pb, d_slots, ddims, row_off, np.int64(row_base), d_rows,
              dir_off, d_dirs, dv.S, np.int32(self.S.shape[0]), np.int32(self.go),
              np.int32(self.ge), np.int32(nslots), dv.res, d_runs, d_slot_off), shared_mem=smem)
        t1.record()
        job.events = (t0, t1)
        if job.kind != "s32":  # kept until the runs are placed in pair order (`place`)
            job.tb = (d_runs, d_slot_off, d_slots)

    def place(self, dv: _Device, jobs: list[_Job], d_dst, words: int) -> None:
        """Queue the placing of the device's runs in pair order into a device
        buffer (``dv.placed``, ``words`` long: a bound of their count) on its
        stream, behind its kernels: ``d_dst`` (a device array, one more than its
        pairs) gives each pair's offset there. The host waits for nothing, so
        this goes before the one synchronisation (`_Device.copy_runs` copies them out)."""
        import cupy as cp

        with dv.stream:
            dv.placed = cp.empty(max(words, 1), cp.uint32)
            kern = _kernel("place_runs", self.mode, True)
            for job in jobs:
                if not job.tb:  # the score pass of a local or semiglobal traceback
                    continue
                d_runs, d_slot_off, d_slots = job.tb
                nslots = len(d_slots)
                kern(((nslots * WARP + 255) // 256,), (256,),
                     (d_runs, d_slot_off, d_slots, dv.res, d_dst, np.int32(0), np.int32(nslots), dv.placed))
        for job in jobs:  # (freed now: later allocations on the stream run after the kernels)
            job.tb = ()


def _prefetch(dev: int, jobs: list[_Job]) -> None:
    """The device plans' dims, and the counts that cut jobs, to the host on a
    stream of their own once their planning is done: while the kernels run,
    so that `_job_cells` copies nothing after them (the device ``dev`` is current;
    a job cut by a device count learns its groups here)."""
    stream = _stream(dev, -1 << 20)  # (not the null stream, which would not wait for the planning)
    for job in jobs:
        plan = job.plan
        if isinstance(plan, _DeviceDims) and plan.dims is None:
            stream.wait_event(plan.ready)
            plan.dims = plan._d.get(stream=stream)  # (the count of a cut job is ready too: planned before)
        if job.cut:
            n = int(job.cut[0].get(stream=stream).reshape(-1)[0])
            job.warps, job.cut = (job.warps[:n] if job.cut[1] else job.warps[n:]), ()


def _job_cells(jobs: list[_Job]) -> list[int]:
    """Padded cells of each job (after `_prefetch`)."""
    return [int((job.plan.dims[job.warps, 0] * job.plan.dims[job.warps, 1]).sum()) * job.plan.width
            for job in jobs]


def _job_seconds(k: int, dv: _Device, jobs: list[_Job], cells: list[int], stats: dict) -> None:
    """Kernel time of device k (its jobs must be done): ``kernel_s_dev*`` from
    the first kernel's start to the last one's end (streams may overlap),
    ``kernel_busy_s_dev*`` the sum of the kernels' own times, ``jobs_dev*``
    one line per kernel (times from the first launched one's start; ``cells``
    from `_job_cells`)."""
    import cupy as cp

    if not jobs:
        return
    ref = jobs[0].events[0]
    first, last, busy, lines = 0.0, 0.0, 0.0, []
    for job, c in zip(jobs, cells):
        a = cp.cuda.get_elapsed_time(ref, job.events[0]) / 1e3
        b = cp.cuda.get_elapsed_time(ref, job.events[1]) / 1e3
        first, last, busy = min(first, a), max(last, b), busy + b - a
        lines.append(f"{job.kind} groups={len(job.warps)} padded_cells={c:.3e} "
                     f"start={a * 1e3:.2f}ms end={b * 1e3:.2f}ms")
    for key, v in ((f"kernel_s_dev{k}_gpu{dv.id}", last - first), (f"kernel_busy_s_dev{k}_gpu{dv.id}", busy)):
        stats[key] = stats.get(key, 0.0) + v
    stats.setdefault(f"jobs_dev{k}", []).extend(lines)


_THREADS: dict = {}  # thread count -> [its kept pool, in use by a call]


@contextmanager
def _device_threads(n: int):
    """A pool of n threads for one call's device threads: kept across calls
    (starting threads costs a call ~0.5 ms), or a fresh one while another
    call holds it (its tasks would queue behind that call's)."""
    with _LOCK:
        entry = _THREADS.setdefault(n, [None, False])
        mine = not entry[1]
        if mine:
            entry[1] = True
            entry[0] = entry[0] or ThreadPoolExecutor(n)
    pool = entry[0] if mine else ThreadPoolExecutor(n)
    try:
        yield pool
    finally:
        if mine:
            with _LOCK:
                entry[1] = False
        else:
            pool.shutdown()


def _on_device(dev: int, fn, k: int):
    """``fn(k)`` with device ``dev`` current."""
    import cupy as cp

    with cp.cuda.Device(dev):
        return fn(k)


def _each_device(ids: list[int], fn) -> None:
    """``fn(k)`` for every k, with device ``ids[k]`` current, in one thread each
    (copies and synchronisations release the GIL)."""
    if len(ids) == 1:
        _on_device(ids[0], fn, 0)
        return
    with ThreadPoolExecutor(len(ids)) as pool:
        for f in [pool.submit(_on_device, ids[k], fn, k) for k in range(len(ids))]:
            f.result()


def _free_bytes(devices) -> list[int]:
    """Usable bytes per entry of ``devices``: MEMORY_FRACTION of what the device
    has free (counting what CuPy's pool holds unused), shared among repeated ids."""
    import cupy as cp

    out = []
    for d in devices:
        with cp.cuda.Device(d):
            pool = cp.get_default_memory_pool().free_bytes()
            free = cp.cuda.runtime.memGetInfo()[0] + pool
        out.append(int(free * MEMORY_FRACTION) // devices.count(d))
    return out


def visible_devices() -> list[int]:
    import cupy

    return list(range(cupy.cuda.runtime.getDeviceCount()))


RUNS_SHARE = 0.25  # of the devices' free memory for the run slots of one traceback chunk


def align_batch(seq, off, pa, pb, S, go, ge, mode, traceback, devices=None, batch_bytes=None, stats=None,
                use16=True, chunk_words=None, wide=None, runs=True):
    """GPU counterpart of `pairwise_cpu.align_batch` (same outputs, bit for bit;
    with ``runs=False`` a traceback's runs stay on the devices: only ``res``,
    with its start cells, identities and aligned pairs, comes back).

    Tracebacks whose run slots (4 bytes per residue of each pair, kept on the
    device until placed, then, with ``runs``, once more for the placed copy)
    would not fit RUNS_SHARE of the devices' free memory are aligned in chunks
    of pairs (``chunk_words``, if given, sets the chunk size in run words instead).
    ``wide`` chooses the traceback groups that run a warp per pair: None as
    `wide_groups` says, True all of them, False none (the output is the same)."""
    pa = np.asarray(pa, np.int64)
    pb = np.asarray(pb, np.int64)
    devices = visible_devices() if devices is None else list(devices)
    stats = {} if stats is None else stats
    if traceback and len(pa) > 1:
        lens = np.diff(off)
        limit = chunk_words or max(1, int(RUNS_SHARE * sum(_free_bytes(devices))) // (8 if runs else 4))
        # (a bound first: the exact count gathers the lengths of every pair)
        words = np.cumsum(lens[pa] + lens[pb]) if 2 * int(lens.max()) * len(pa) > limit else [0]
        if words[-1] > limit:
            cuts = np.unique(np.concatenate(([0], np.searchsorted(words, np.arange(limit, words[-1], limit),
                                                                  side="right"), [len(pa)])))
            parts = [_align_batch(seq, off, pa[a:b], pb[a:b], S, go, ge, mode, True, devices, batch_bytes, stats,
                                  use16, wide, runs) for a, b in itertools.pairwise(cuts) if b > a]
            stats["traceback_chunks"] = len(parts)
            res = np.concatenate([p[0] for p in parts])
            if not runs:
                return res, np.empty(0, np.uint32), pairwise_cpu.no_offsets(len(pa))
            offs = [p[2] for p in parts]
            shift = np.cumsum([0] + [int(o[-1]) for o in offs[:-1]])
            runs_off = np.concatenate([[0]] + [o[1:] + s for o, s in zip(offs, shift)]).astype(np.int64)
            return res, np.concatenate([p[1] for p in parts]), runs_off
    return _align_batch(seq, off, pa, pb, S, go, ge, mode, traceback, devices, batch_bytes, stats, use16, wide, runs)


def _align_batch(seq, off, pa, pb, S, go, ge, mode, traceback, devices, batch_bytes, stats, use16, use_wide,
                 keep_runs=True):
    """`align_batch` of one chunk (``keep_runs``: its ``runs``).

    ``stats`` (a dict), if given, receives per-phase host times, the kernel
    seconds per device and the number of pairs each kernel took;
    ``use16=False`` keeps every score-only pair on the 32-bit kernel (for
    benchmarks; the end-cell pass of local and semiglobal tracebacks still
    uses 16 bits where it fits).
    """
    import cupy as cp

    clock = time.perf_counter()

    def lap(name):
        nonlocal clock
        now = time.perf_counter()
        stats[name] = stats.get(name, 0.0) + now - clock
        clock = now

    P = len(pa)
    if P >= 1 << 31:
        raise ValueError("at most 2**31 - 1 pairs per call (pair indices are int32 on the device)")
    run = _Run(seq, off, pa, pb, S, go, ge, mode, traceback, stats)
    unit = run.unit
    devs: list = [None] * len(devices)
    done: list[list[_Job]] = [[] for _ in devices]
    cpu_parts: list[np.ndarray] = [np.empty(0, np.int64) for _ in devices]
    counts: list[dict] = [{} for _ in devices]
    box = traceback and mode != 0  # tracebacks find their end cells in a score pass first
    landed = traceback and keep_runs  # (else only res comes back: the runs stay in the devices' slots)
    t_start = time.perf_counter()

    def mark(k, what):  # when each device thread got where (seconds since the threads started)
        stats[f"t_dev{k}_{what}_s"] = round(time.perf_counter() - t_start, 4)

    def run_jobs(k, dv, kind, p, need, budget):
        for b in _batches(np.arange(len(p.dims)), need, budget):
            job = _Job(kind, p, b)
            run.launch(dv, job)  # buffers freed on return are reused in stream order only
            done[k].append(job)

    def score_plans(k, dv, ids, sixteen):
        """(kind, plan) of the score-only groups of ``ids``: 16 bits where it fits."""
        out = []
        rest = ids
        if sixteen:
            p16 = dv.plan(ids, 2 * WARP, STRIP16[mode])
            ok = fits16(p16.dims, S // unit, go // unit, ge // unit)
            if ok.all():  # (the usual case: no masking, no synchronisation)
                rest = ids[:0]
                out.append(("s16", p16))
            else:
                d_ok = cp.asarray(ok)
                rest = p16.slots[~d_ok].ravel()
                rest = rest[rest >= 0]
                out.append(("s16", p16.part(ok, d_ok)))
        out.append(("s32", dv.plan(rest, WARP, STRIP)))
        counts[k]["s16"] = counts[k].get("s16", 0) + int(ids.size) - int(rest.size)
        counts[k]["s32"] = counts[k].get("s32", 0) + int(rest.size)
        return out

    def score_direct(k, dv, ids, budget) -> bool:
        """The 16-bit score pass queued without waiting for its plan: when every
        group fits 16 bits at the longest lengths and row buffers sized for them
        fit ``budget``, the kernels go right behind the planning kernels (the
        dims stay on the device): the split kernel over the groups that
        `wide_groups` picks (they lead: the costliest come first), the other
        one beside it on a second stream. False (nothing queued) otherwise."""
        P = int(ids.size)
        W = (P + 2 * WARP - 1) // (2 * WARP)
        strip = STRIP16[mode]
        share = SPLIT_SHARE.get(mode) if use_wide is None else None
        rows_step = 2 * strip if use_wide or share else strip  # (a split strip is 2 strips high)
        longest = np.array([[(dv.lmax + rows_step - 1) // rows_step * rows_step, (dv.lmax + 3) // 4 * 4]], np.int64)
        rows = W * int(longest[0, 1]) * WARP  # (uint2 words: a bound of the plan's)
        if not P or 8 * rows > budget or not fits16(longest, S // unit, go // unit, ge // unit).all():
            return False
        slots, out = dv.groups(ids, 2 * WARP, strip, False)
        row_off = _exclusive(out[3 * W:])
        ddims = out[:2 * W].reshape(W, 2)
        nsplit, bound = None, 0  # (split groups, a device count, and its bound)
        if use_wide:
            nsplit, bound = cp.full(1, W, cp.int64), W
        elif share:
            resident16 = dv.resident16 // devices.count(devices[k])
            nsplit = wide_groups(ddims, resident16, share).sum().reshape(1).astype(cp.int64)
            bound = min(W, int(resident16 / share) + 1)  # (cost over share of the sum: at most this many)
        dims = _DeviceDims(ddims, 2 * WARP)
        args = (slots, ddims, row_off[:W], 0, cp.empty(2 * rows, cp.int32))
        main = cp.cuda.get_current_stream()
        side = _stream(dv.id, -1 - dv.k)
        if bound:
            side.wait_event(main.record())  # (the plan: not the split kernel, which runs beside)
            job = _Job("s16split", dims, np.arange(bound), cut=(nsplit, True))
            run.launch_score16(dv, job, args, W, nsplit, bound)
            done[k].append(job)
        with side if bound else main:
            job = _Job("s16", dims, np.arange(W), cut=(nsplit, False) if bound else ())
            run.launch_score16(dv, job, args, W, nsplit)
            done[k].append(job)
        if bound:
            main.wait_event(side.record())
        counts[k]["s16"] = counts[k].get("s16", 0) + P
        counts[k]["s32"] = counts[k].get("s32", 0)
        return True

    def resident(k, dv):  # warps of the 32-bit kernels (entries sharing a device share its warps)
        return dv.resident // devices.count(devices[k])

    def tb_jobs(k, dv, ids, free, p=None):
        """Plan (unless ``p`` is the plan) and launch the traceback groups of ``ids``
        on the current stream in batches that fit the memory (box: each pair's
        DP stops at its end cell, read from res on the device)."""
        p = dv.plan(ids, WARP, STRIP, box=box, runs=True) if p is None else p
        mark(k, "traceback_planned")
        words = int(p.words.sum())
        dv.words += words
        kept = 4 * words  # slot runs stay until placed (all of the range: an upper bound)
        budget = batch_bytes if batch_bytes is not None else max(free - kept, free // 4)
        need_w = p.wide_dir_words() * 4 + p.row_bytes()
        need = p.dir_bytes() + p.row_bytes()
        wide = wide_groups(p.dims, resident(k, dv)) if use_wide is None else np.full(len(need), bool(use_wide))
        wide &= need_w <= budget  # (else the narrower layout, or the CPU twin when that does not fit either)
        need = np.where(wide, need_w, need)
        big = need > budget
        if big.any():
            cpu = p.slots[cp.asarray(big)].ravel()
            cpu_parts[k] = np.concatenate([cpu_parts[k], cpu[cpu >= 0].get() + dv.lo])
        live = (p.slots >= 0).sum(axis=1).get()  # pairs per group (the slots are on the device)
        # the longest groups (a warp per pair) first, then the others; each part keeps its order
        for kind, sel in (("tbw", wide & ~big), ("tb", ~wide & ~big)):
            counts[k][kind] = counts[k].get(kind, 0) + int(live[sel].sum())
            if not sel.any():
                continue
            g = np.flatnonzero(sel)
            if len(g) == len(p.dims):
                part = p
            elif g[-1] - g[0] + 1 == len(g):  # (consecutive groups: views, nothing copied to the device)
                part = p.part(slice(int(g[0]), int(g[-1]) + 1))
            else:
                part = p.part(g, cp.asarray(g))
            run_jobs(k, dv, kind, part, need[g], budget)

    def tb_direct(k, dv, ids, free) -> None:
        """The traceback pass planned on the device: everything that
        `tb_jobs` decides from the dims on the host (which groups run a warp
        per pair, the nibble, row and run offsets) is queued before the one
        wait, so the host works while the score pass runs and launches two
        kernels once the end cells are known. When the pass does not fit the
        memory in one go, `tb_jobs` batches it (from the same plan)."""
        P = int(ids.size)
        if not P:
            return tb_jobs(k, dv, ids, free)
        W = (P + WARP - 1) // WARP
        slots, out = dv.groups(ids, WARP, STRIP, box)
        gdims = out[:2 * W].reshape(W, 2)
        # (the groups come costliest first and `wide_groups` is a bound on the cost: the wide ones lead)
        wide = wide_groups(gdims, resident(k, dv)) if use_wide is None else cp.full(W, bool(use_wide))
        n_wide = wide.sum()
        dir_off = _exclusive(cp.where(wide, _wide_words(gdims), _dir_words(gdims)))
        row_off = _exclusive(out[3 * W:])
        slot_off = _exclusive(dv.slot_words(slots))
        wide_pairs = ((slots.reshape(W, WARP) >= 0) & wide[:, None]).sum()
        sizes = cp.stack([n_wide, dir_off[-1], row_off[-1], slot_off[-1], wide_pairs]).get()  # (the wait)
        n_wide, n_dir, n_rows, n_runs, wide_pairs = (int(x) for x in sizes)
        budget = batch_bytes if batch_bytes is not None else max(free - 4 * n_runs, free // 4)
        if 4 * n_dir + 8 * n_rows > budget:
            return tb_jobs(k, dv, ids, free, dv.finish(slots, out, WARP, True))
        dv.words += n_runs
        mark(k, "traceback_planned")
        counts[k]["tbw"] = counts[k].get("tbw", 0) + wide_pairs
        counts[k]["tb"] = counts[k].get("tb", 0) + P - wide_pairs
        d_dirs = cp.empty(max(n_dir, 1), cp.uint32)
        d_rows = cp.empty(max(2 * n_rows, 1), cp.int32)
        d_runs = cp.empty(max(n_runs, 1), cp.uint32)
        dims = _DeviceDims(gdims, WARP)
        main = cp.cuda.get_current_stream()
        side = None
        if 0 < n_wide < W:  # (the others on a second stream: they fill the SMs the wide groups' last wave leaves)
            side = _stream(dv.id, -1 - dv.k)
            side.wait_event(main.record())
        for kind, g0, g1 in (("tbw", 0, n_wide), ("tb", n_wide, W)):
            if g1 == g0:
                continue
            job = _Job(kind, dims, np.arange(g0, g1))
            with side if kind == "tb" and side is not None else main:
                run.launch_dp(dv, job, (slots[g0 * WARP:g1 * WARP], gdims[g0:g1], row_off[g0:g1], 0, d_rows,
                                        dir_off[g0:g1], d_dirs, d_runs, slot_off[g0 * WARP:g1 * WARP + 1]),
                              (g1 - g0) * WARP)
            done[k].append(job)
        if side is not None:
            main.wait_event(side.record())

    launched = [threading.Event() for _ in devices]
    scored = [threading.Event() for _ in devices]  # each device's score pass queued (or its thread failed)
    res_ready = threading.Event()
    res_box: list = []

    # tracebacks with runs: once every device has its run sums, one thread allocates the
    # output and each device places its runs there itself (unless some pairs
    # went to the CPU twin: then the host places them all after the join)
    totals = [0] * len(devices)
    placed: dict = {}

    def alloc_runs():  # the barrier's action (in the last thread to arrive)
        guess = placed.pop("guess", None)
        if not any(len(c) for c in cpu_parts):
            base = np.concatenate(([0], np.cumsum(totals))).tolist()
            placed["base"] = base
            out = None if guess is None else guess.take(base[-1])
            if out is not None:  # (each device's part in one copy where its pages are in, in chunks past that)
                placed["kept"] = guess
                ends = [min(b, guess.size) for b in base]
                tails = _fault_chunks([out[max(a, e):b] for a, b, e in zip(base, base[1:], ends[1:])])
                placed["chunks"] = [([(out[a:e], [])] if e > a else []) + t for a, e, t in zip(base, ends[1:], tails)]
            else:
                out = np.empty(base[-1], np.uint32)
                placed["chunks"] = _fault_chunks([out[a:b] for a, b in itertools.pairwise(base)])
            placed["out"] = out
        elif guess is not None:
            guess.drop()

    barrier = threading.Barrier(len(devices), action=alloc_runs) if landed else None

    def work(k):  # one thread per device: upload, plan, launch, wait, fetch (and place) its results
        try:
            dv = devs[k] = _Device(devices[k], k, run)
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            dv.take(lo, hi)
            dv.load(run)
            free = _free_bytes([devices[k]])[0] // devices.count(devices[k])
            with dv.stream:
                dv.upload(run)
                mark(k, "uploaded")
                ids = cp.arange(hi - lo, dtype=cp.int64)
                if not traceback or box:  # scores (local and semiglobal tracebacks: their end cells first)
                    budget = batch_bytes if batch_bytes is not None else free
                    if not ((use16 or box) and score_direct(k, dv, ids, budget)):
                        for kind, p in score_plans(k, dv, ids, use16 or box):
                            run_jobs(k, dv, kind, p, p.row_bytes(), budget)
                    mark(k, "scores_launched")
                if traceback:
                    scored[k].set()
                    for e in scored:  # (its planning's CuPy calls would hold up the others' launches)
                        e.wait()
                    tb_direct(k, dv, ids, free)
                    if landed:
                        dv.count_runs()
                        if not len(cpu_parts[k]):  # (else the host places them around the twin's)
                            run.place(dv, done[k], dv.dst, dv.words)
                    else:  # (nothing reads the slot runs: freed now, reused in stream order)
                        for job in done[k]:
                            job.tb = ()
            mark(k, "launched")
        finally:
            launched[k].set()
            scored[k].set()
        _prefetch(dv.id, done[k])
        cells = _job_cells(done[k])  # (while the kernels run)
        dv.stream.synchronize()
        mark(k, "kernels_done")
        res_ready.wait()
        if not res_box:
            return  # (the host failed to make the result array: it raises that)
        res, dst, pinned = res_box
        dv.fetch(res[lo:hi], pinned, dst[lo + 1:hi + 1] if landed else None)
        if landed:  # (the results copy meanwhile, if page-locked)
            totals[k] = int(dst[hi]) if hi > lo else 0  # (the sums start from 0 at lo)
            barrier.wait()
            if "out" in placed:
                base = placed["base"][k]
                part = dst[lo + 1:hi + 1]  # (its offsets shifted by a host thread while the runs copy)
                shift = _host_pool().submit(np.add, part, base, out=part) if base else None
                dv.copy_runs(placed["chunks"][k])
                if shift is not None:
                    shift.result()
                mark(k, "placed")
        _job_seconds(k, dv, done[k], cells, stats)
        dv.stream.synchronize()
        mark(k, "fetched")

    def guarded(k):  # the entry's lock until its stream has synced; `launched` set whatever happens
        try:
            with _entry_lock((devices[k], k)):
                return _on_device(devices[k], work, k)
        except BaseException:
            if barrier is not None:
                barrier.abort()  # (the other devices' threads stop waiting for this one)
            raise
        finally:
            launched[k].set()
            scored[k].set()  # (also when the device could not be made current: the others wait for it)

    key = ("inputs", *devices)
    with _entry_lock(key), _device_threads(len(devices)) as pool:  # (the lock: until every device has copied)
        futures = []
        try:
            # each device a contiguous range of pairs with an equal share of the work (cells,
            # twice for pairs too long for 16 bits), so its results and alignments land in
            # place; inside a range, groups run longest first
            bounds = run.split(len(devices), use16 and not traceback)
            lap("host_split_s")
            # (all before the device threads start: while they run CuPy calls, any thread that
            # gives up the GIL, numba's included, waits for it up to the switch interval)
            run.stage(key)
            lap("host_stage_s")
            futures += [pool.submit(guarded, k) for k in range(len(devices))]
            for e in launched:
                e.wait()
            with cp.cuda.Device(devices[0]):  # (no context made on another device for it)
                # allocated (or faulted in) while the kernels run; tracebacks with runs: each device's run sums too
                res_box.extend(_result_array(P, landed))
            words = sum(dv.words for dv in devs if dv is not None)
            if landed and RUNS_GUESS and 4 * words * RUNS_GUESS >= RUNS_GUESS_MIN:
                try:
                    placed["guess"] = _Guess(words)  # (faulted in meanwhile too)
                except (OSError, AttributeError):  # (no mapping to spare, or no private ones: as without a guess)
                    pass
        finally:
            res_ready.set()  # (threads that see no results stop)
            errors = [f.exception() for f in futures]  # (waits for every thread)
    errors = [e for e in errors if e is not None]
    if errors:  # (a thread's own error before the broken barrier it left the others)
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    stats["t_joined_s"] = round(time.perf_counter() - t_start, 4)
    res, dst, _ = res_box
    cpu_pairs = np.sort(np.concatenate(cpu_parts))
    for c in counts:
        for kind, v in c.items():
            stats[f"pairs_{kind}"] = stats.get(f"pairs_{kind}", 0) + v
    stats["pairs_cpu_twin"] = len(cpu_pairs)
    lap("host_devices_s")
    stats["t_end_s"] = round(time.perf_counter() - t_start, 4)
    if not landed:
        if len(cpu_pairs):  # (their rows on the devices were not aligned there)
            res[cpu_pairs] = pairwise_cpu.align_batch(seq, off, pa[cpu_pairs], pb[cpu_pairs], S, go, ge, mode, True,
                                                      runs=False)[0]
            lap("host_place_s")
        return res, np.empty(0, np.uint32), pairwise_cpu.no_offsets(P)
    dst[0] = 0
    if "out" in placed:  # (the devices placed every run)
        if "kept" in placed:
            placed["kept"].release()
        return res, placed["out"], dst
    # some pairs went to the CPU twin (their rows on the devices were not aligned
    # there): the sums again, on the host, and each device places around them
    r, cpu_runs, cpu_off = pairwise_cpu.align_batch(seq, off, pa[cpu_pairs], pb[cpu_pairs], S, go, ge, mode, True)
    res[cpu_pairs] = r
    np.cumsum(run.lens[pa] + run.lens[pb] - res[:, 5], out=dst[1:])
    out = np.empty(int(dst[-1]), np.uint32)

    def place(k):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        dv = devs[k]
        if dv.placed is None:  # (its range has pairs of the twin)
            with dv.stream:  # (the copy is asynchronous: on the stream that reads it)
                d_dst = cp.asarray(dst[lo:hi + 1] - dst[lo])
            run.place(dv, done[k], d_dst, int(dst[hi] - dst[lo]))
        dv.copy_runs(chunks[k])

    chunks = _fault_chunks([out[int(dst[a]):int(dst[b])] for a, b in itertools.pairwise(bounds)])
    _each_device(devices, place)
    for k, p in enumerate(cpu_pairs.tolist()):
        out[dst[p]:dst[p + 1]] = cpu_runs[cpu_off[k]:cpu_off[k + 1]]
    lap("host_place_s")
    return res, out, dst


PREFAULT_CHUNK = 2 << 20  # bytes
RUNS_CHUNK = 4 << 20  # bytes: the least chunk of `_fault_chunks`


def _fault_chunks(regions: list[np.ndarray]) -> list[list]:
    """Each region (fresh pageable memory) cut into chunks of at least
    RUNS_CHUNK bytes (about 8 a region at most), with the host threads' tasks that
    fault in their pages, queued chunk by chunk across the regions (the pool
    takes them in order, so every device's first chunks are ready first):
    per region a list of (chunk, its tasks)."""
    cut = []
    for r in regions:
        step = max(RUNS_CHUNK, -(-r.nbytes // 8)) // max(r.itemsize, 1)
        cut.append([r[a:a + step] for a in range(0, r.size, step)])
    out: list[list] = [[] for _ in regions]
    for i in range(max((len(c) for c in cut), default=0)):
        for k, c in enumerate(cut):
            if i < len(c):
                out[k].append((c[i], _fault_tasks(c[i]) if regions[k].nbytes > PREFAULT_CHUNK else []))
    return out


RUNS_GUESS = 1 / 24  # share of the run words' bound (m + n a pair) faulted in while the kernels run
RUNS_GUESS_MIN = 4 << 20  # bytes: a smaller guess is not made


class _Guess:
    """Fresh memory for a guessed share (RUNS_GUESS) of a traceback's run
    words, its pages faulted in by the host threads while the kernels run
    (landing the runs in untouched pages costs as much as copying them): an
    anonymous private mapping, so that it can grow when the runs outnumber
    the guess (``mremap``: the pages in move with it, only the rest is
    faulted in as the runs copy), and the pages a shorter output leaves can
    be given back (``MADV_DONTNEED``) without moving what is kept."""

    def __init__(self, words: int):
        self.size = int(words * RUNS_GUESS)
        self.mem = mmap.mmap(-1, max(4 * self.size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):  # (fewer, larger faults where the kernel allows it: 3 ms less on
            self.mem.madvise(mmap.MADV_HUGEPAGE)  # 1M pairs, semiglobal, 2 x H200, where numpy's arrays have it)
        self.array = np.frombuffer(self.mem, np.uint32, self.size)
        self.tasks = _fault_tasks(self.array)

    def take(self, n: int) -> np.ndarray | None:
        """Its first ``n`` words, faulted in up to its guessed size (None if
        the mapping cannot grow to ``n``: the guess is dropped); `release`
        gives back the pages past them."""
        for t in self.tasks:
            t.result()
        self.tasks = []
        self.kept = n
        if n <= self.size:
            return self.array[:n]
        self.array = None  # (no view left on it: the mapping may move as it grows, its pages with it)
        try:
            self.mem.resize(4 * n)
        except (OSError, ValueError, BufferError, SystemError):  # (SystemError: no mremap)
            self.drop()
            return None
        self.array = np.frombuffer(self.mem, np.uint32, n)  # (mremap keeps the mapping's huge-page advice)
        return self.array

    def release(self):
        """The pages past the words `take` kept go back, in a host thread
        (after the copies into them: giving pages back interrupts every
        thread); its task, or None."""
        mem, self.array, self.mem = self.mem, None, None
        cut = -(-4 * self.kept // mmap.PAGESIZE) * mmap.PAGESIZE
        return _host_pool().submit(mem.madvise, mmap.MADV_DONTNEED, cut, len(mem) - cut) if cut < len(mem) else None

    def drop(self) -> None:
        """Unmapped in a host thread (behind its faults), not in the call."""
        held = [self.array, self.mem]
        self.array = self.mem = None
        _host_pool().submit(held.clear)


def _fault_tasks(a: np.ndarray) -> list:
    """Tasks of the host threads that write zeros over ``a`` (contiguous), a
    chunk of PREFAULT_CHUNK bytes each, so that its pages are faulted in."""
    flat = a.reshape(-1).view(np.uint8)
    return [_host_pool().submit(_zero, [flat[x:x + PREFAULT_CHUNK]]) for x in range(0, flat.size, PREFAULT_CHUNK)]


def _zero(held: list) -> None:
    """Zeros over the one array in ``held``, which it lets go of: once its
    result is set, the task holds no view of that memory (`_Guess.take`
    resizes the mapping under such views)."""
    held.pop().fill(0)


def _fresh(shape, dtype) -> np.ndarray:
    """An empty NumPy array whose pages are touched by several threads at once.

    A device-to-host copy into never-touched memory runs at the speed of the
    page faults (about 4 GB/s on an H200 host against 18 GB/s into touched
    pages, `python -m benchmarks.d2h`); faulting the pages in parallel first is cheaper."""
    out = np.empty(shape, dtype)
    if out.nbytes > PREFAULT_CHUNK:  # (zeros written by the host threads, a chunk a task)
        for t in _fault_tasks(out):
            t.result()
    return out
