"""Several GPUs of one machine: a batch spread over them (`--gpus`), one
worker process a device (`DevicePool`), or one host thread a device
(`DeviceRunner`, where no pool was started).

The work is cut as for Dask (`msa_gpu.distributed.align_spread`): the
families go in one group a device, balanced by their DP cells. With host
threads a family on the large path has its pivot distances and subtrees
spread, the merges above the subtrees made on the first device; with worker
processes it is aligned whole on one of them. A family's alignment
does not depend on where it ran, so the output is the one GPU's, byte for
byte. The devices are CuPy's numbering of the visible ones, so
``CUDA_VISIBLE_DEVICES`` picks and orders them.

Why processes: each device's host work (a level's schedule, staging and
launches) holds the GIL, so threads of one process take turns, and two GPUs
ran no faster than one outside the library (issue 43). A pool is forked
before this process touches CUDA or numba's OpenMP threads (neither survives
a fork), which is what the command line does right after reading ``--gpus``;
`visible_gpus` counts the devices in a forked child for the same reason.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import warnings
from concurrent.futures import Future, ThreadPoolExecutor

from msa_gpu.runtime.children import die_with_parent
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.errors import BackendError, InputError
from msa_gpu.result import AlignResult
from msa_gpu.types import Sequences


def parse_gpus(text: str, visible: int) -> list[int]:
    """Device indices from ``--gpus``: ``all``, a count, or a comma list of indices.

    >>> parse_gpus("all", 4), parse_gpus("2", 4), parse_gpus("3,1", 4)
    ([0, 1, 2, 3], [0, 1], [3, 1])
    """
    text = text.strip().lower()
    if text == "all":
        ids = list(range(visible))
    elif "," in text:
        try:
            ids = [int(t) for t in text.split(",") if t.strip()]
        except ValueError:
            raise InputError(f"--gpus: expected all, a count or indices such as 0,1; got {text!r}") from None
        if len(set(ids)) != len(ids) or any(i < 0 or i >= visible for i in ids):
            raise BackendError(f"--gpus {text}: indices must be distinct and below the {visible} visible GPU(s)")
    else:
        try:
            count = int(text)
        except ValueError:
            raise InputError(f"--gpus: expected all, a count or indices such as 0,1; got {text!r}") from None
        if count < 1 or count > visible:
            raise BackendError(f"--gpus {count}: {visible} GPU(s) visible (CUDA_VISIBLE_DEVICES picks them)")
        ids = list(range(count))
    if not ids:
        raise BackendError("--gpus: no GPU visible")
    return ids


def _count_gpus() -> tuple[bool, str, int]:
    from msa_gpu.backend import probe_gpu

    ok, why = probe_gpu()
    if not ok:
        return False, why, 0
    from msa_gpu.backend import visible_devices

    return True, why, len(visible_devices())


def visible_gpus() -> int:
    """How many GPUs CuPy sees; `BackendError` with the reason where none is
    usable. Counted in a forked child where this process has not started
    CUDA yet, so that a `DevicePool` can still be forked after it."""
    ok, why, count = _in_child(_count_gpus) if _can_fork() else _count_gpus()
    if not ok:
        raise BackendError(f"--gpus: {why}")
    return count


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _in_child(fn):
    """``fn()`` run in a forked child, its (picklable) value returned."""
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe(duplex=False)

    def run():
        try:
            theirs.send(fn())
        finally:
            os._exit(0)

    child = ctx.Process(target=run, daemon=True)
    child.start()
    theirs.close()
    try:
        return mine.recv()
    except EOFError:
        raise BackendError("--gpus: the process that counts the GPUs ended without an answer") from None
    finally:
        child.join()


def _cupy_device(index: int):
    import cupy

    return cupy.cuda.Device(index)


class DeviceRunner:
    """One worker thread a device; ``submit`` deals tasks to them in turn and
    runs each inside its device's context (``enter(index)``, default CuPy's)."""

    def __init__(self, devices: list[int], enter=None):
        self.devices = list(devices)
        self.enter = enter or _cupy_device
        self.pools = [ThreadPoolExecutor(1, thread_name_prefix=f"msagpu-gpu{d}") for d in self.devices]
        self._turn = itertools.count()

    def submit(self, fn, *args):
        k = next(self._turn) % len(self.pools)
        return self.pools[k].submit(self._run, self.devices[k], fn, args)

    def _run(self, device: int, fn, args):
        with self.enter(device):
            return fn(*args)

    def close(self) -> None:
        for pool in self.pools:
            pool.shutdown(wait=True)


def _use_cupy_device(index: int):
    """A worker's start: its device made current and proved by `probe_gpu`'s kernel."""
    import cupy

    from msa_gpu.backend import probe_gpu

    device = cupy.cuda.Device(index)
    device.use()
    ok, why = probe_gpu()
    if not ok:
        raise BackendError(f"GPU {index}: {why}")
    return device


def _worker(conn, device: int, start, threads: int, inherited: list, parent: int) -> None:
    """A pool's worker process: the parent's pipe ends it inherited closed
    (so that a worker's end closes its pipe), its share of the CPU threads
    for numba (``threads``), ``start(device)`` (a context entered around each
    task), then tasks ``(fn, args)`` until None or the pipe closes; each
    answer is ``("ok", value)`` or ``("error", exception)``, an exception
    that would not pickle sent as a `BackendError` with its text."""
    code = 0
    try:
        for other in inherited:
            other.close()
        die_with_parent(parent)
        try:
            from msa_gpu.backend import set_threads

            set_threads(threads)
            context = start(device)
        except BaseException as exc:
            code = 1
            conn.send(("failed", f"{type(exc).__name__}: {exc}"))
            return
        conn.send(("ready", ""))
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return
            if task is None:
                return
            fn, args = task
            try:
                with context:
                    answer = ("ok", fn(*args))
            except BaseException as exc:
                answer = ("error", _sendable(exc, device))
            try:
                conn.send(answer)
            except Exception as exc:  # an answer that cannot be pickled
                conn.send(("error", BackendError(f"GPU {device}: the result could not be sent back: {exc}")))
    finally:
        os._exit(code)  # not the parent's atexit handlers


def _sendable(exc: BaseException, device: int) -> BaseException:
    """``exc`` where it survives pickling, else a `BackendError` with its type, text and traceback."""
    import pickle
    import traceback

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        where = "".join(traceback.format_exception(exc)).strip()
        return BackendError(f"GPU {device}: {type(exc).__name__}: {exc}\n{where}")


class DevicePool:
    """One worker process a device, forked now: before this process touches
    CUDA or numba's threads. ``submit(fn, *args)`` deals tasks to the
    workers in turn (as `DeviceRunner`); ``fn`` and its arguments and value
    are pickled. ``start(device)`` runs in each worker first and gives the
    context its tasks run in (default: the CuPy device, made current). Each
    worker's numba kernels use ``threads`` CPU threads (default: this
    machine's cores shared out; a run's own ``--threads`` still sets its
    count): four workers of 64 threads each took three times as long over
    their guide trees as one (issue 43)."""

    def __init__(self, devices: list[int], start=None, threads: int | None = None):
        ctx = multiprocessing.get_context("fork")
        self.devices = list(devices)
        self._conns, self._procs = [], []
        threads = threads or max(1, (os.cpu_count() or 1) // len(self.devices))
        for d in self.devices:
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(theirs, d, start or _use_cupy_device, threads,
                                                     [*self._conns, mine], os.getpid()),
                               daemon=True, name=f"msagpu-gpu{d}")
            proc.start()
            theirs.close()
            self._conns.append(mine)
            self._procs.append(proc)
        self._why: str | None = None
        self._checked = False
        self._closed = False
        self._threads: list[ThreadPoolExecutor] = []
        self._turn = itertools.count()

    def failure(self) -> str | None:
        """None once every worker has started its device, else why one could not."""
        if not self._checked:
            self._checked = True
            for d, conn in zip(self.devices, self._conns):
                try:
                    kind, why = conn.recv()
                except (EOFError, OSError):
                    kind, why = "failed", "its process ended"
                if kind != "ready" and self._why is None:
                    self._why = f"GPU {d}: {why}"
            if self._why is None:
                self._threads = [ThreadPoolExecutor(1, thread_name_prefix=f"msagpu-gpu{d}") for d in self.devices]
        return self._why

    def submit(self, fn, *args) -> Future:
        if self.failure() is not None:
            raise BackendError(f"--gpus: a worker could not start: {self._why}")
        k = next(self._turn) % len(self.devices)
        return self._threads[k].submit(self._call, k, fn, args)

    def _call(self, k: int, fn, args):
        conn = self._conns[k]
        try:
            conn.send((fn, args))
            kind, value = conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._procs[k].exitcode
            raise BackendError(f"--gpus: the worker of GPU {self.devices[k]} ended (exit code {code})") from None
        if kind == "error":
            raise value
        return value

    def close(self, abort: bool = False) -> None:
        """End the workers: each after its task, or with ``abort`` at once
        (killed first, so that an error or a signal does not wait on the
        other devices' work). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if abort:
            for proc in self._procs:
                proc.kill()
        for pool in self._threads:
            pool.shutdown(wait=True, cancel_futures=abort)
        for conn in self._conns:
            try:
                conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            conn.close()
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(abort=exc_type is not None)


def align_many_gpus(families: list[Sequences], config: AlignerConfig, devices: list[int],
                    enter=None, recipes=None, pool: DevicePool | None = None) -> list[AlignResult]:
    """`Aligner.align_many` spread over ``devices`` (see the module's doc):
    on ``pool``'s worker processes where it is given and its workers
    started, else on one host thread a device (``enter(index)``: the
    device's context, default CuPy's)."""
    from msa_gpu.distributed.spread import align_spread

    if pool is not None:
        why = pool.failure()
        if why is None:
            # a large family whole on one worker: spread over four (pivot rows and subtrees
            # pickled to and fro), one of 100,000 sequences took 38.5 s against 34.3 s on one GPU
            return align_spread(families, config, len(devices), pool.submit, recipes=recipes, spread_large=False)
        warnings.warn(f"--gpus: one host thread a GPU instead of worker processes ({why})", RuntimeWarning,
                      stacklevel=2)
        pool.close(abort=True)  # the workers that did start let go of their devices
    runner = DeviceRunner(devices, enter)
    try:
        with runner.enter(devices[0]):  # the merges above a large family's subtrees
            return align_spread(families, config, len(devices), runner.submit, recipes=recipes)
    finally:
        runner.close()
