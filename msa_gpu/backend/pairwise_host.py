"""Host side of the GPU pairwise engine: the kept page-locked staging buffer, the casts of the
pairs by numba's threads, and the result arrays the devices land in (page-locked, or faulted in
ahead while the kernels run)."""

from __future__ import annotations

import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from msa_gpu.backend.pairwise_launch import LIMIT16

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
