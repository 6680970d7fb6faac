"""msagpu's batch mode, timed as a user runs it: one ``msagpu align DIR
--outdir OUT`` call for every family of a benchmark (process start, imports,
kernel loading, I/O and all), then each output scored with msagpu's scorer.

Also times a single small family from the command line (``--single ID``),
repeated, to show the cold-start cost.
"""

from __future__ import annotations

import gzip
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from msa_gpu.io import read_aligned, read_core
from msa_gpu.accuracy import sp_tc

from . import datasets, report
from .peers import run_measured

STAGES = re.compile(r"(\w+) ([0-9.]+) s")
SUMMARY = re.compile(r"msagpu: aligned \d+ families on \w+ \((.*)\)")


def stage_times(log: str) -> dict[str, float]:
    """Stage seconds from the batch summary line of msagpu's stderr (other
    lines, such as the mode note, hold numbers followed by " s" too).

    >>> stage_times("msagpu: mode auto (large from 20000 sequences)\\n"
    ...             "msagpu: aligned 2 families on gpu (distance 1.50 s, tree 0.25 s, refine rounds 3)")
    {'distance': 1.5, 'tree': 0.25}
    """
    m = SUMMARY.search(log)
    return {k: float(v) for k, v in STAGES.findall(m.group(1))} if m else {}


def _write_upper(fam: datasets.Family, dest: Path) -> Path:
    """The family's input, upper-cased, as ``dest/<ID>.fa``."""
    raw = Path(fam.input_path).read_bytes()
    if fam.input_path.endswith(".gz"):
        raw = gzip.decompress(raw)
    lines = [line if line.startswith(b">") else line.upper() for line in raw.splitlines()]
    path = dest / f"{fam.family_id}.fa"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _msagpu(args: list[str], cwd: Path, timeout: float) -> tuple[float, int | None, str, int]:
    log = cwd / "stderr.txt"
    with open(os.devnull, "wb") as out, open(log, "wb") as err:
        res = run_measured([sys.executable, "-m", "msa_gpu", "align", *args], env=dict(os.environ), cwd=cwd,
                           stdout=out, stderr=err, timeout=timeout)
    return res.seconds, res.peak_rss_kb, log.read_text(errors="replace"), res.returncode


def run_batch(data: str, backend: str, sets: list[str] | None, limit: int | None, single: str | None,
              repeats: int, timeout: float, extra_args: list[str] | None = None) -> dict:
    """Run the batch benchmark; returns the report dictionary. ``extra_args``
    go to every ``msagpu align`` call (``--mode accurate``, say)."""
    extra = list(extra_args or [])
    with datasets.open_dataset(data, sets) as ds, tempfile.TemporaryDirectory(prefix="msagpu-batch-") as tmp:
        fams = datasets.select(ds, sets, limit)
        work = Path(tmp)
        inputs, outdir = work / "in", work / "out"
        inputs.mkdir()
        for fam in fams:
            _write_upper(fam, inputs)
        seconds, rss, log, rc = _msagpu([str(inputs), "--outdir", str(outdir), "--backend", backend, *extra], work,
                                        timeout)
        if rc != 0:
            raise RuntimeError(f"msagpu batch run failed (exit {rc}): {log.strip()[-300:]}")
        rows = []
        for fam in fams:
            names, test = read_aligned(outdir / f"{fam.family_id}.fa")
            rnames, ref = read_aligned(fam.ref_path)
            s = sp_tc(names, test, rnames, ref, read_core(fam.core_path))
            rows.append({"set": fam.set_name, "id": fam.family_id, "sp": s.sp, "tc": s.tc})
        single_times = []
        if single:
            fam = next(f for f in fams if f.family_id == single)
            path = _write_upper(fam, work)
            for _ in range(repeats):
                secs, _, log1, rc1 = _msagpu([str(path), "-o", str(work / "single.fa"), "--backend", backend, *extra],
                                             work, timeout)
                if rc1 != 0:
                    raise RuntimeError(f"single-family run failed: {log1.strip()[-300:]}")
                single_times.append(secs)
    per_set: dict[str, list[dict]] = {}
    for r in rows:
        per_set.setdefault(r["set"], []).append(r)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {
        "benchmark": "batch", "data": str(data), "backend": backend, "families": len(rows),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "wall_s": seconds, "peak_rss_mb": rss / 1024 if rss else None,
        "stages_s": stage_times(log),
        "mean_sp": mean([r["sp"] for r in rows]), "mean_tc": mean([r["tc"] for r in rows]),
        "per_set": {k: {"n": len(v), "sp": mean([r["sp"] for r in v]), "tc": mean([r["tc"] for r in v])}
                    for k, v in sorted(per_set.items())},
        "single": {"family": single, "wall_s": single_times,
                   "median_s": statistics.median(single_times) if single_times else None},
        "machine": report.machine_info(), "rows": rows,
        "command": f"msagpu align <{len(rows)} upper-cased inputs> --outdir OUT --backend {backend} {' '.join(extra)}".strip(),
        "extra_args": extra, "mode": extra[extra.index("--mode") + 1] if "--mode" in extra else None,
    }


def markdown(rep: dict) -> str:
    sets = " | ".join(f"{k} {v['sp']:.3f}/{v['tc']:.3f}" for k, v in rep["per_set"].items())
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in rep["stages_s"].items())
    single = rep["single"]
    lines = [
        f"## msagpu batch mode: {rep['families']} families, backend {rep['backend']} ({rep['created']})", "",
        f"- Command: `{rep['command']}` (one process; start-up, imports, kernel load and I/O included).",
        f"- Wall time {rep['wall_s']:.2f} s; peak RSS {rep['peak_rss_mb'] or 0:.0f} MB; stages: {stages}.",
        f"- Mean SP {rep['mean_sp']:.4f}, mean TC {rep['mean_tc']:.4f}; per set: {sets}.",
        f"- Machine: {rep['machine'].get('cpu_model', '?')}, {rep['machine'].get('cpu_count', '?')} CPUs, "
        f"GPU: {', '.join(rep['machine'].get('gpus', []) or ['none'])}.",
    ]
    if single["family"]:
        times = ", ".join(f"{t:.2f}" for t in single["wall_s"])
        lines.append(f"- Single family {single['family']} from the command line: {times} s "
                     f"(median {single['median_s']:.2f} s; the first run includes cold caches).")
    return "\n".join(lines) + "\n"


def register(sub) -> None:
    """Add the ``batch`` subcommand to the harness's parser."""
    b = sub.add_parser("batch", help="msagpu batch mode: every family in one command-line call",
                       description=__doc__.split("\n\n")[0])
    b.add_argument("--data", required=True, help="benchmark folder or .tar.gz archive")
    b.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    b.add_argument("--sets", default=None, help="comma-separated sets, e.g. RV11,RV12")
    b.add_argument("--limit", type=int, default=None, help="at most K families per set")
    b.add_argument("--single", default=None, help="also time this family alone from the command line")
    b.add_argument("--repeats", type=int, default=3, help="runs of the single family (default 3)")
    b.add_argument("--timeout", type=float, default=1800.0)
    b.add_argument("--mode", default=None, help="msagpu --mode (auto, fast, accurate)")
    b.add_argument("--maxiterate", type=int, default=None, help="msagpu --maxiterate")
    b.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    b.add_argument("--tag", default=None, help="file name prefix (default: today's date)")
    b.set_defaults(func=cmd_batch)


def cmd_batch(args) -> int:
    import json

    sets = [s for s in args.sets.split(",") if s] if args.sets else None
    extra = (["--mode", args.mode] if args.mode else []) + \
        (["--maxiterate", str(args.maxiterate)] if args.maxiterate is not None else [])
    rep = run_batch(args.data, args.backend, sets, args.limit, args.single, args.repeats, args.timeout, extra)
    stem = f"{args.tag or time.strftime('%Y-%m-%d')}-batch-{rep['backend']}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(rep, indent=1))
    text = markdown(rep)
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 0
