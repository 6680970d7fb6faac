"""Benchmark reports: per-aligner summaries, the JSON file and the markdown table."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

from .peers import AlignerInfo
from .runner import AlignerRun

MEMORY_IN_PROCESS = ("peak RSS of the worker process while aligning (VmHWM after resetting it via "
                     "/proc/self/clear_refs); includes the Python interpreter, libraries and input, "
                     "whose share is base_rss_mb (RSS just before aligning); GPU memory not included")
MEMORY_IN_PROCESS_FALLBACK = ("process-wide RSS high-water mark of the worker (could not reset it "
                              "per family; includes the interpreter and earlier families)")
MEMORY_SUBPROCESS = ("ru_maxrss from os.wait4 on the peer, started by a small fork-exec launcher: "
                     "largest RSS of the peer and of the descendants it waited for; about 6 MB is "
                     "the launcher's, inherited at fork")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def gpu_names() -> list[str]:
    """``nvidia-smi -L`` lines (empty when it is missing or fails)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def machine_info() -> dict:
    """Host facts for the report: name, CPUs, memory, GPUs, Python."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": _cpu_model(),
        "memory_gib": _mem_total_gib(),
        "gpus": gpu_names(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def summarize(info: AlignerInfo, run: AlignerRun | None, sets: list[str], gpus: list[str]) -> dict:
    """One aligner's summary: per-set and overall means, time, memory, failures.

    Means are over the families the aligner completed; ``n_ok`` out of
    ``n_families`` says how many that is.
    """
    out = info.as_dict()
    if run is None:
        return out
    rows = run.rows
    ok = [r for r in rows if r["status"] == "ok"]
    out["n_families"] = len(rows)
    out["n_ok"] = len(ok)
    out["per_set"] = {}
    for s in sets:
        members = [r for r in rows if r["set"] == s]
        done = [r for r in members if r["status"] == "ok"]
        out["per_set"][s] = {"n": len(members), "n_ok": len(done),
                             "sp": _r(_mean([r["sp"] for r in done])),
                             "tc": _r(_mean([r["tc"] for r in done]))}
    out["mean_sp"] = _r(_mean([r["sp"] for r in ok]))
    out["mean_tc"] = _r(_mean([r["tc"] for r in ok]))
    out["wall_s"] = round(run.wall_s, 3)
    out["align_sum_s"] = round(sum(r.get("align_s", 0.0) for r in rows), 3)
    out["startup_s"] = round(run.startup_s, 3)
    peaks = [r["peak_rss_mb"] for r in rows if r.get("peak_rss_mb") is not None]
    out["peak_rss_mb"] = max(peaks) if peaks else None
    bases = sorted(r["base_rss_mb"] for r in rows if r.get("base_rss_mb") is not None)
    if bases:
        out["base_rss_mb"] = bases[len(bases) // 2]
    if info.in_process:
        reset = all(s.get("memory_reset", True) for s in run.setup)
        out["memory_method"] = MEMORY_IN_PROCESS if reset else MEMORY_IN_PROCESS_FALLBACK
    else:
        out["memory_method"] = MEMORY_SUBPROCESS
    out["failures"] = [{k: r.get(k) for k in ("set", "family", "status", "error")}
                       for r in rows if r["status"] != "ok"]
    out["n_failed"] = len(out["failures"])
    out["worker_setup"] = run.setup
    if run.setup_error:
        out["setup_error"] = run.setup_error
    stages: dict[str, float] = {}
    for r in ok:
        for k, v in r.get("timings", {}).items():
            stages[k] = stages.get(k, 0.0) + v
    if stages:
        out["stage_timings_s"] = {k: round(v, 3) for k, v in stages.items()}
    if info.name == "msagpu":
        used = sorted({r["backend"] for r in rows if r.get("backend")} |
                      {s["backend"] for s in run.setup if s.get("backend")})
        out["backend_used"] = ",".join(used) or "unknown"
        gpu = next((s["gpu"] for s in run.setup if s.get("gpu")), None)
        if "gpu" in used:
            out["device"] = f"gpu ({gpu or (gpus[0] if gpus else 'unknown GPU')}), {info.threads} CPU thr"
        else:
            out["device"] = f"cpu, {info.threads} thr"
    else:
        out["device"] = f"cpu, {info.threads} thr"
    return out


def build_report(*, benchmark: str, dataset: str, source: str, sets: list[str], options: dict,
                 infos: list[AlignerInfo], runs: dict[str, AlignerRun], machine: dict,
                 total_wall_s: float, command: list[str], created: str) -> dict:
    """The whole JSON document of one benchmark run."""
    aligners = {i.name: summarize(i, runs.get(i.name), sets, machine.get("gpus", [])) for i in infos}
    families = [row for i in infos if i.name in runs for row in runs[i.name].rows]
    msagpu = aligners.get("msagpu", {})
    machine = dict(machine)
    if msagpu.get("backend_used"):
        machine["msagpu_backend"] = msagpu["backend_used"]
    return {
        "benchmark": benchmark,
        "dataset": dataset,
        "data": source,
        "created": created,
        "command": command,
        "options": options,
        "sets": sets,
        "n_families": len({(r["set"], r["family"]) for r in families}),
        "machine": machine,
        "total_wall_s": round(total_wall_s, 3),
        "scoring": "msa_gpu.accuracy.sp_tc on core columns (qscore semantics), same for every aligner; "
                   "inputs upper-cased; means over completed families",
        "aligners": aligners,
        "families": families,
    }


def _label(a: dict) -> str:
    name = a.get("label") or a["name"]
    return f"{name} {a['version']}" if a.get("version") else name


def _cell(sp: float | None, tc: float | None, n_ok: int = 0, n: int = 0) -> str:
    if sp is None:
        return f"- (0/{n})" if n else "-"
    text = f"{sp:.3f}/{tc:.3f}"
    return text + (f" ({n_ok}/{n})" if n_ok != n else "")


def _memory(a: dict) -> str:
    if a.get("peak_rss_mb") is None:
        return "-"
    text = f"{a['peak_rss_mb']:.0f}"
    return text + (f" ({a['base_rss_mb']:.0f} base)" if a.get("base_rss_mb") is not None else "")


def _failures(a: dict) -> str:
    fails = a.get("failures", [])
    if not fails:
        return "0"
    timeouts = sum(1 for f in fails if f["status"] == "timeout")
    return f"{len(fails)} ({timeouts} timeout)" if timeouts else str(len(fails))


def markdown(report: dict) -> str:
    """A markdown table, one row per aligner, plus notes on how each ran."""
    sets = report["sets"]
    short = [s.rsplit("/", 1)[-1] for s in sets]
    head = ["aligner", *[f"{s} SP/TC" for s in short], "mean SP", "mean TC", "wall (s)",
            "peak RSS (MB)", "failures", "device"]
    lines = [f"## {report['benchmark']}: {report['dataset']} ({report['n_families']} families; "
             f"{report['created']})", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in report["aligners"].values():
        if not a["available"]:
            lines.append("| " + " | ".join([a["name"], *["-"] * (len(head) - 3), "not available", "-"]) + " |")
            continue
        cells = [_label(a)]
        for s in sets:
            p = a["per_set"].get(s, {})
            cells.append(_cell(p.get("sp"), p.get("tc"), p.get("n_ok", 0), p.get("n", 0)))
        cells += [f"{a['mean_sp']:.3f}" if a["mean_sp"] is not None else "-",
                  f"{a['mean_tc']:.3f}" if a["mean_tc"] is not None else "-",
                  f"{a['wall_s']:.1f}",
                  _memory(a),
                  _failures(a), a.get("device", "")]
        lines.append("| " + " | ".join(cells) + " |")
    opts = report["options"]
    m = report["machine"]
    lines += ["", f"- Machine: {m['hostname']}, {m['cpu_count']} CPUs ({m.get('cpu_model', '')}), "
                  f"GPU: {'; '.join(m['gpus']) or 'none'}.",
              f"- {opts['jobs']} famil{'y' if opts['jobs'] == 1 else 'ies'} at a time; per-family timeout "
              f"{opts['timeout']:g} s; total wall time {report['total_wall_s']:.1f} s.",
              "- SP/TC: one scorer for all (msa_gpu.accuracy.sp_tc, core columns); means over completed "
              "families, `(k/n)` when some failed. Wall = elapsed time for the aligner's families "
              "(start-up excluded).",
              "- Peak RSS: max over families. In-process aligners: the worker's peak while aligning, "
              "interpreter and libraries included (their median share shown as base). Subprocess peers: "
              "the child's ru_maxrss from os.wait4 (about 6 MB of it is the fork-exec launcher's)."]
    for a in report["aligners"].values():
        if a["available"]:
            extra = f" Backend used: {a['backend_used']}." if a.get("backend_used") else ""
            lines.append(f"- {a['name']}: {a['how']}.{extra}")
        else:
            lines.append(f"- {a['name']}: {a['reason']}.")
    return "\n".join(lines) + "\n"


def write_result(args, kind: str, doc: dict, md: str) -> None:
    """Write ``<tag or today>-<kind>.json`` (``doc``) and ``.md`` (``md``)
    into ``args.out``: the results files of the benchmarks without a report
    of their own (``large``, ``add``, ``memory``)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.tag or _dt.date.today().isoformat()}-{kind}"
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{stem}.md").write_text(md)


def write_reports(report: dict, out_dir: str | Path, stem: str) -> tuple[Path, Path]:
    """Write ``<stem>.json`` and ``<stem>.md`` into ``out_dir``; return both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    jpath.write_text(json.dumps(report, indent=1) + "\n")
    mpath.write_text(markdown(report))
    return jpath, mpath
