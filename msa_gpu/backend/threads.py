"""How many threads each numba ``prange`` loop of the CPU twins gets.

A ``prange`` loop cuts its iterations into one equal share per thread and
returns when the last share is done. A core that another process keeps busy
makes that slower than one thread: the share that lands there waits for the
scheduler's next turn, milliseconds, and the whole loop with it (on a shared
2-core VM, loops of 35 us and 330 us on one thread took 12-16 ms on two, and
the default run of a 905-sequence family was 2-3x slower than ``--threads 1``;
session 55). On idle cores two threads won even on loops of 10 us (the pool's
threads spin between back-to-back loops), but a loop that small gains
microseconds and can lose milliseconds to a neighbour that wakes up.

So every parallel loop of the twins goes through `call`, which runs it on
`threads_for` threads:

    k = min(numba's count for this thread (``--threads``, else every core),
            the loop's iterations,
            work // WORK_PER_THREAD_NS,
            free_cores())

and one thread (no pool woken at all) where the loop's estimated serial time
``work`` (nanoseconds, each twin's estimate from its sizes) is under
``2 * WORK_PER_THREAD_NS``. `free_cores` is the cores this process may run on
(affinity, CPU quota) less those that other processes kept busy over the last
quarter second (from /proc/stat, this process's own CPU time taken out; their
load is rounded up to whole cores from a quarter of one: 0.3 busy cores cost
a core). The thread count changes no result: each iteration writes its own
outputs.
"""

from __future__ import annotations

import math
import os
import threading
import time

import numba

#: A thread is worth waking for this much serial work (nanoseconds); loops of
#: less than twice this run on the calling thread.
WORK_PER_THREAD_NS = 50_000
#: Other processes' load is measured over windows of at least this long (s).
WINDOW_S = 0.25
#: A core counts as free while other processes keep less than this share of one busy.
BUSY_SLACK = 0.25
#: When set to a list, `call` appends ``(name, work, items, threads, seconds)`` (calibration, tests).
trace: list | None = None

try:
    _HZ = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _HZ = 100


def _quota() -> float:
    """The cgroup's CPU quota in cores (inf where none)."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:  # cgroup v2: "max 100000" or "200000 100000"
            quota, period = fh.read().split()[:2]
        return math.inf if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as fq, open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as fp:
            quota, period = int(fq.read()), int(fp.read())
        return math.inf if quota <= 0 else quota / period
    except (OSError, ValueError):
        return math.inf


def _allowed() -> set[int]:
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def _busy_seconds(cpus: set[int]) -> float | None:
    """Seconds the processors ``cpus`` spent busy since boot (/proc/stat;
    steal counts as busy), or None where it cannot be read."""
    try:
        with open("/proc/stat") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    total = 0
    for line in lines:
        if not (line.startswith("cpu") and line[3:4].isdigit()):
            continue
        f = line.split()
        if int(f[0][3:]) in cpus:  # user nice system idle iowait irq softirq steal ...
            total += sum(int(x) for x in f[1:9]) - int(f[4]) - int(f[5])
    return total / _HZ


def _runnable_others() -> float:
    """Runnable tasks other than the caller, at this instant (/proc/loadavg's
    fourth field), for the first call of a process, before a window has passed."""
    try:
        with open("/proc/loadavg") as fh:
            return max(0.0, float(fh.read().split()[3].split("/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        return 0.0


class _Load:
    """Cores busy with other processes, measured over windows of `WINDOW_S`."""

    def __init__(self):
        self.quota = _quota()
        self.reset()

    def reset(self):  # (also in a forked child: its own lock, its own CPU time)
        self.lock = threading.Lock()
        self.sample = None  # (cpus, wall, busy seconds of cpus, own CPU seconds)
        self.others = None  # cores busy elsewhere over the last window
        self.take()

    def take(self):
        cpus = frozenset(_allowed())
        busy = _busy_seconds(cpus)
        self.sample = None if busy is None else (cpus, time.monotonic(), busy, time.process_time())

    def others_busy(self) -> float:
        with self.lock:
            if self.sample is None:  # no /proc/stat: nothing known of the others
                return 0.0
            cpus, wall, busy, own = self.sample
            dt = time.monotonic() - wall
            if cpus != frozenset(_allowed()):  # moved to other processors: start again
                self.take()
                self.others = None
            elif dt >= WINDOW_S:
                now_busy, now_own = _busy_seconds(cpus), time.process_time()
                if now_busy is not None:
                    self.others = max(0.0, (now_busy - busy) - (now_own - own)) / dt
                self.take()
            return self.others if self.others is not None else _runnable_others()


_load = _Load()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _load.reset())


def free_cores() -> int:
    """Cores this process may use that other processes leave free (at least 1):
    its affinity and CPU quota, less the cores others kept busy lately."""
    n = len(_allowed())
    free = math.floor(n - _load.others_busy() + BUSY_SLACK)
    quota = n if math.isinf(_load.quota) else math.floor(_load.quota + BUSY_SLACK)
    return max(1, min(n, free, quota))


def threads_for(work: float, items: int, cap: int | None = None) -> int:
    """Threads for a loop of ``items`` iterations and about ``work``
    nanoseconds on one thread: never more than ``cap`` (default: numba's count
    for the calling thread, which ``--threads`` sets), the iterations, one per
    `WORK_PER_THREAD_NS` of work or the free cores; 1 below twice
    `WORK_PER_THREAD_NS` (the free cores are then not looked at)."""
    cap = numba.get_num_threads() if cap is None else cap
    if cap <= 1 or items <= 1 or work < 2 * WORK_PER_THREAD_NS:
        return 1
    return max(1, min(cap, int(items), int(work // WORK_PER_THREAD_NS), free_cores()))


def call(fn, *args, work: float, items: int):
    """``fn(*args)`` (a numba ``parallel=True`` function) on `threads_for`
    threads; numba's count for the calling thread is given back after."""
    prev = numba.get_num_threads()
    k = threads_for(work, items, prev)
    t0 = time.perf_counter() if trace is not None else 0.0
    if k == prev:
        out = fn(*args)
    else:
        numba.set_num_threads(k)
        try:
            out = fn(*args)
        finally:
            numba.set_num_threads(prev)
    if trace is not None:
        trace.append((getattr(fn, "__name__", str(fn)), float(work), int(items), k, time.perf_counter() - t0))
    return out


def threaded(fn, items: list, work, tick=None, sink=None) -> list:
    """``fn(item, space)`` of each item on host threads (numba kernels that
    release the GIL; as many as numba may use, which ``threads`` caps, and
    no more than the cores other processes leave free: `threads.free_cores`),
    results in order; ``space`` is the thread's own ``work()``, made once and
    reused between its items; ``tick(k)`` after each hundredth of the items
    (at least 16 a step); with ``sink``, each step's results go to
    ``sink(results, first)`` as it ends instead (none returned), so that only
    a step's are held at once."""
    local = threading.local()

    def run(item):
        space = getattr(local, "space", None)
        if space is None:
            space = local.space = work()
        return fn(item, space)

    step = max(16, -(-len(items) // 100))
    workers = min(len(items), numba.get_num_threads(), free_cores())
    out: list = []
    pool = None
    if workers >= 2:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(workers)
    try:
        for start in range(0, len(items), step):
            part = items[start: start + step]
            done = list(pool.map(run, part)) if pool is not None else [run(i) for i in part]
            if sink is not None:
                sink(done, start)
            else:
                out += done
            del done
            if tick is not None:
                tick(len(part))
    finally:
        if pool is not None:
            pool.shutdown()
    return out
