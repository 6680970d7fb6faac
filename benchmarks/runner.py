"""Running one aligner over many families with a pool of worker processes.

Each worker is a fresh (``spawn``) process that builds the aligner's runner
once and then takes families one at a time over a pipe. The parent keeps at
most ``jobs`` workers busy, kills a worker whose family runs past the time
limit (recording a timeout) or replaces one that dies (recording a failure),
so no single family can stop the benchmark.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

from .datasets import Family
from .peers import AlignerFailure, AlignerInfo, AlignerTimeout, RunOptions, make_runner


@dataclass
class AlignerRun:
    """Everything one aligner produced over the selected families.

    Attributes
    ----------
    rows : list of dict
        One record per family, in the order of the families.
    wall_s : float
        Elapsed time from the first family handed out to the last result.
    startup_s : float
        Time until the first worker was ready (spawn, imports, warm-up).
    setup : list of dict
        What each worker's `Runner.setup` reported.
    setup_error : str
        Set when no worker could start; every family then failed.
    """

    rows: list[dict]
    wall_s: float
    startup_s: float
    setup: list[dict] = field(default_factory=list)
    setup_error: str = ""


def _base_row(info: AlignerInfo, fam: Family) -> dict:
    return {"aligner": info.name, "set": fam.set_name, "family": fam.family_id, "status": "failed"}


def align_and_score(runner, info: AlignerInfo, opts: RunOptions, fam: Family, workdir: Path,
                    save_dir: str | None) -> dict:
    """Align one family with ``runner`` and score it against its reference.

    Inputs are upper-cased before aligning (Balifam marks unscored residues in
    lower case). Failures and timeouts become the row's ``status`` and
    ``error`` rather than exceptions.

    Returns
    -------
    dict
        ``status`` (ok/failed/timeout), ``sp``, ``tc``, ``align_s``,
        ``peak_rss_mb``, ``n_seqs`` and, for msagpu, ``timings`` and ``backend``.
    """
    from msa_gpu.io import OutFormat, read_aligned, read_core, read_sequences, write_alignment
    from msa_gpu.accuracy import sp_tc

    row = _base_row(info, fam)
    try:
        seqs = read_sequences(fam.input_path)
        names = list(seqs.names)
        upper = [r.upper() for r in seqs.raw]
        row["n_seqs"] = len(names)
        outcome = runner.align(names, upper, workdir)
        row["align_s"] = round(outcome.seconds, 4)
        if outcome.peak_rss_kb is not None:
            row["peak_rss_mb"] = round(outcome.peak_rss_kb / 1024, 1)
        if outcome.base_rss_kb is not None:
            row["base_rss_mb"] = round(outcome.base_rss_kb / 1024, 1)
        if outcome.timings:
            row["timings"] = {k: round(v, 4) for k, v in outcome.timings.items()}
        if info.name == "msagpu":
            row["backend"] = outcome.backend
        if outcome.seconds > opts.timeout:
            raise AlignerTimeout(f"took {outcome.seconds:.1f} s, over the {opts.timeout:g} s limit")
        ref_names, ref_rows = read_aligned(fam.ref_path)
        score = sp_tc(names, outcome.rows, ref_names, ref_rows, read_core(fam.core_path))
        row.update(score.as_dict())
        row["status"] = "ok"
        if save_dir:
            dest = Path(save_dir) / info.name / fam.set_name / f"{fam.family_id}.fa"
            dest.parent.mkdir(parents=True, exist_ok=True)
            write_alignment(names, outcome.rows, dest, OutFormat.fasta)
    except AlignerTimeout as exc:
        row.update(status="timeout", error=str(exc))
    except AlignerFailure as exc:
        row.update(status="failed", error=str(exc))
    except Exception as exc:  # any aligner or scorer error is a failed family
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {Path(last[0].filename).name}:{last[0].lineno}" if last else ""
        row.update(status="failed", error=f"{type(exc).__name__}: {exc}{where}")
    return row


def worker_main(conn: Connection, info: AlignerInfo, opts: RunOptions, save_dir: str | None) -> None:
    """Worker process: set the runner up once, then align families until told to stop."""
    try:
        runner = make_runner(info, opts)
        setup = runner.setup()
    except BaseException as exc:  # report, do not crash silently
        conn.send(("setup_error", f"{type(exc).__name__}: {exc}"))
        conn.close()
        return
    setup["pid"] = os.getpid()
    conn.send(("ready", setup))
    tmp = Path(tempfile.mkdtemp(prefix=f"msagpu-bench-{info.name}-"))
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg is None:
                break
            index, fam = msg
            workdir = tmp / str(index)
            workdir.mkdir()
            try:
                row = align_and_score(runner, info, opts, fam, workdir, save_dir)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            conn.send(("result", index, row))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class _Worker:
    proc: mp.process.BaseProcess
    conn: Connection
    started: float
    state: str = "starting"  # starting | idle | busy
    task: int | None = None
    deadline: float = 0.0


def _exit_reason(proc) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        return f"worker process killed by signal {-code}"
    return f"worker process exited with status {code}"


def run_aligner(info: AlignerInfo, families: list[Family], opts: RunOptions, jobs: int = 1,
                save_dir: str | None = None, progress=None) -> AlignerRun:
    """Run one available aligner over ``families``, ``jobs`` at a time.

    Parameters
    ----------
    info : AlignerInfo
        From `peers.probe`; must be available.
    families : list of Family
    opts : RunOptions
    jobs : int
        Families at a time (worker processes).
    save_dir : str, optional
        Write each alignment to ``save_dir/<aligner>/<set>/<ID>.fa``.
    progress : callable, optional
        Called with each finished row.

    Returns
    -------
    AlignerRun
    """
    ctx = mp.get_context("spawn")
    results: dict[int, dict] = {}
    pending = deque(range(len(families)))
    workers: list[_Worker] = []
    setups: list[dict] = []
    setup_error = ""
    t_launch = time.perf_counter()
    t_first = None

    def launch() -> _Worker:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker_main, args=(child, info, opts, save_dir),
                           name=f"bench-{info.name}", daemon=True)
        proc.start()
        child.close()
        return _Worker(proc, parent, time.perf_counter())

    def finish(index: int, row: dict) -> None:
        results[index] = row
        if progress is not None:
            progress(row)

    def fail_task(w: _Worker, status: str, error: str) -> None:
        if w.task is not None:
            row = _base_row(info, families[w.task])
            row.update(status=status, error=error)
            finish(w.task, row)
            w.task = None

    def stop(w: _Worker) -> None:
        if w.proc.is_alive():
            w.proc.kill()
        w.proc.join(5)
        w.conn.close()

    try:
        workers = [launch() for _ in range(max(1, min(jobs, len(families))))]
        while len(results) < len(families):
            now = time.perf_counter()
            for w in workers:
                if w.state == "idle" and pending:
                    w.task = pending.popleft()
                    w.conn.send((w.task, families[w.task]))
                    w.state = "busy"
                    w.deadline = time.perf_counter() + opts.timeout + info.grace
                    if t_first is None:
                        t_first = time.perf_counter()
            busy = [w.deadline - now for w in workers if w.state == "busy"]
            ready = wait([w.conn for w in workers] + [w.proc.sentinel for w in workers],
                         timeout=max(0.0, min(busy)) if busy else None)
            replace: list[_Worker] = []
            for w in workers:
                if w.conn not in ready and w.proc.sentinel not in ready:
                    continue
                msg = None
                try:
                    if w.conn.poll():
                        msg = w.conn.recv()
                except (EOFError, OSError):
                    msg = None
                if msg is None:
                    if w.proc.sentinel in ready or not w.proc.is_alive():
                        w.proc.join(1)
                        if w.state == "starting":
                            setup_error = f"{info.name} worker died while starting: {_exit_reason(w.proc)}"
                        else:
                            fail_task(w, "failed", _exit_reason(w.proc))
                        replace.append(w)
                    continue
                kind = msg[0]
                if kind == "ready":
                    setups.append(msg[1])
                    w.state = "idle"
                elif kind == "setup_error":
                    setup_error = msg[1]
                    replace.append(w)
                elif kind == "result":
                    _, index, row = msg
                    finish(index, row)
                    w.state, w.task = "idle", None
            now = time.perf_counter()
            for w in workers:
                if w.state == "busy" and now > w.deadline and w not in replace:
                    fail_task(w, "timeout", f"killed after {opts.timeout:g} s (+{info.grace:g} s grace)")
                    replace.append(w)
            if setup_error:
                break
            for w in replace:
                stop(w)
                workers[workers.index(w)] = launch()
    finally:
        for w in workers:  # idle workers stop by themselves; the others are killed
            if w.state == "idle" and w.proc.is_alive():
                try:
                    w.conn.send(None)
                except OSError:
                    pass
        for w in workers:
            if w.state == "idle":
                w.proc.join(10)
            stop(w)

    if setup_error:
        for i in range(len(families)):
            if i not in results:
                row = _base_row(info, families[i])
                row.update(status="failed", error=f"setup failed: {setup_error}")
                finish(i, row)
    t_end = time.perf_counter()
    startup = (t_first - t_launch) if t_first is not None else t_end - t_launch
    wall = (t_end - t_first) if t_first is not None else 0.0
    return AlignerRun([results[i] for i in range(len(families))], wall, startup, setups, setup_error)


def progress_printer(total: int, stream=sys.stderr):
    """A ``progress`` callback printing one line per finished family."""
    count = {"n": 0}

    def show(row: dict) -> None:
        count["n"] += 1
        head = f"[{row['aligner']} {count['n']}/{total}] {row['set']}/{row['family']}"
        if row["status"] == "ok":
            print(f"{head} SP={row['sp']:.3f} TC={row['tc']:.3f} {row['align_s']:.2f}s", file=stream, flush=True)
        else:
            print(f"{head} {row['status'].upper()}: {row.get('error', '')}", file=stream, flush=True)

    return show
