"""GPU pairwise alignment: scheduling, batching and multi-GPU launch of
``kernels/pairwise.cu`` (twin: `pairwise_cpu`). This module is the driver
(`align_batch`); it takes its plan from `pairwise_launch` (pure NumPy: groups,
kernels, batches), its devices from `pairwise_device` (kernels, streams,
one host thread a device, each device's range) and its host memory from
`pairwise_host` (staging, casts, result arrays, page faults ahead of time).

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
import threading
import time

import numpy as np

from msa_gpu.backend import pairwise_cpu
from msa_gpu.backend import pairwise_host as host
from msa_gpu.backend.pairwise_device import (
    _Device,
    _device_threads,
    _DeviceDims,
    _each_device,
    _free_bytes,
    _Job,
    _job_cells,
    _job_seconds,
    _on_device,
    _prefetch,
    _Run,
    _stream,
    visible_devices,
)
from msa_gpu.backend.pairwise_host import _entry_lock, _fault_chunks, _Guess, _host_pool, _result_array
from msa_gpu.backend.pairwise_launch import (
    SPLIT_SHARE,
    STRIP,
    STRIP16,
    WARP,
    _batches,
    _dir_words,
    _exclusive,
    _wide_words,
    fits16,
    wide_groups,
)

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
            if landed and host.RUNS_GUESS and 4 * words * host.RUNS_GUESS >= host.RUNS_GUESS_MIN:
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


