"""Device runtime of the GPU pairwise engine: the kernels of kernels/pairwise.cu and their
launches, one host thread and stream per device, each device's range of pairs and its batches."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import numba
import numpy as np

from msa_gpu.backend.pairwise_host import _LOCK, CAST_THREADS, _cast_columns, _span_costs, _staging
from msa_gpu.backend.pairwise_launch import (
    BLOCK,
    BLOCK16,
    PAD,
    STRIP16,
    WARP,
    WARPS_PER_SM,
    WARPS_PER_SM16,
    WarpPlan,
    _dir_words,
    _exclusive,
    _narrow_keys,
    _padded_offsets,
    _wide_words,
    cost_unit,
)
from msa_gpu.kernels import get_function, opt_in_shared

MEMORY_FRACTION = 0.6


SPLIT_SAMPLE = 1 << 14  # pairs whose cost sets the devices' ranges (see _Run.split)


SPLIT_SPANS = 1024


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
    return opt_in_shared(kern, table_bytes(ksize))


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
