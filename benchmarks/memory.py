"""Where a run's host memory goes: one ``msagpu`` command in a child process,
its resident set size sampled every ``--every`` seconds (``/proc/PID/status``,
the child and its children), and its stderr lines timed as they arrive, so
that each window between two progress lines gets its own peak.

    python -m benchmarks memory --tag T -- align FAMILY.fa -o out.fa --backend gpu

The stage that ends with a line "msagpu: distance (...) done in 3.2 s" owns
the window before that line. Writes ``<tag>-memory.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import report


def _rss_kb(pid: int) -> int:
    """Resident kB of ``pid`` and its descendants (0 once gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for t in Path(f"/proc/{p}/task").iterdir():
                kids = Path(f"/proc/{p}/task/{t.name}/children").read_text().split()
                todo += [int(k) for k in kids]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def profile(argv: list[str], every: float = 0.02) -> dict:
    """Run ``python -m msa_gpu ARGV`` and sample it (see the module)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "msa_gpu", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    samples: list[tuple[float, int]] = []
    while proc.poll() is None:
        samples.append((time.perf_counter() - t0, _rss_kb(proc.pid)))
        time.sleep(every)
    reader.join()
    wall = time.perf_counter() - t0
    windows, start = [], 0.0
    for t, line in lines + [(wall, "(end)")]:
        peak = max((kb for s, kb in samples if start <= s <= t), default=0)
        windows.append({"until_s": round(t, 2), "line": line, "peak_mb": round(peak / 1024, 1)})
        start = t
    return {"argv": argv, "rc": proc.returncode, "wall_s": round(wall, 2),
            "peak_mb": round(max((kb for _, kb in samples), default=0) / 1024, 1),
            "windows": windows, "samples": len(samples)}


def cmd_memory(args) -> int:
    argv = [a for a in args.msagpu_argv if a != "--"]
    res = profile(argv, args.every)
    doc = {"benchmark": "memory", "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": report.machine_info(), "command": "python -m msa_gpu " + " ".join(argv), **res}
    lines = [f"## Host memory of one run ({doc['created']})", "",
             f"Command: `{doc['command']}`; exit {res['rc']}, {res['wall_s']} s, peak RSS {res['peak_mb']:,} MB "
             f"({res['samples']} samples, every {args.every} s).", "",
             "| until s | peak RSS MB in the window before | stderr line |", "|---|---|---|"]
    lines += [f"| {w['until_s']} | {w['peak_mb']:,} | {w['line'][:120]} |" for w in res["windows"]]
    report.write_result(args, "memory", doc, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if res["rc"] == 0 else 1


def register(sub) -> None:
    p = sub.add_parser("memory", help="host memory of one msagpu command, window by window of its stderr")
    p.add_argument("--every", type=float, default=0.02, help="seconds between samples")
    p.add_argument("--tag", default=None)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    p.add_argument("msagpu_argv", nargs=argparse.REMAINDER, help="msagpu's arguments, after --")
    p.set_defaults(func=cmd_memory)

