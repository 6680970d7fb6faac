"""Accuracy against time: msagpu's modes (each one batch-mode call over every
family) and the peers (the harness, ``--jobs`` families at a time), in one
run, with a plot of mean TC against total wall time.

``python -m benchmarks tradeoff --data ARCHIVE --modes fast,accurate
--peers famsa,kalign,mafft-auto,mafft-linsi:3 --jobs 16 --threads 1``

A peer written ``NAME:K`` runs on the first K families of each set only
(MAFFT L-INS-i needs about 465 s for BAliBASE's 218 on 16 cores); the report
then also gives msagpu's accuracy on exactly those families, like for like.
``mafft-auto``, ``mafft-linsi`` and ``mafft-fftns2`` are MAFFT in that mode.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from . import batch, datasets, peers, report
from .runner import run_aligner


def _peer_spec(text: str) -> tuple[str, str, int | None]:
    """``mafft-linsi:3`` -> (``mafft``, ``linsi``, 3).

    >>> _peer_spec("mafft-linsi:3"), _peer_spec("famsa")
    (('mafft', 'linsi', 3), ('famsa', 'auto', None))
    """
    name, _, limit = text.partition(":")
    tool, _, mode = name.partition("-")
    return tool, mode or "auto", int(limit) if limit else None


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _summary(label: str, rows: list[dict], wall: float, subset: int | None, extra: dict) -> dict:
    """Means overall and per set over the rows that finished."""
    ok = [r for r in rows if r.get("sp") is not None]
    sets = sorted({r["set"] for r in rows})
    return {"label": label, "families": len(rows), "n_ok": len(ok), "subset_per_set": subset,
            "mean_sp": _mean([r["sp"] for r in ok]), "mean_tc": _mean([r["tc"] for r in ok]), "wall_s": round(wall, 2),
            "per_set": {s: {"sp": _mean([r["sp"] for r in ok if r["set"] == s]),
                            "tc": _mean([r["tc"] for r in ok if r["set"] == s])} for s in sets}, **extra}


def run(args) -> dict:
    """Run every msagpu mode and peer; returns the report."""
    sets = args.sets.split(",") if args.sets else None
    entries, msagpu_rows = [], {}
    with datasets.open_dataset(args.data, sets) as ds:
        fams = datasets.select(ds, sets, args.limit)
        name = ds.name
        for mode in args.modes.split(","):
            extra = ["--mode", mode] + (["--maxiterate", str(args.maxiterate)] if args.maxiterate is not None else [])
            rep = batch.run_batch(args.data, args.backend, sets, args.limit, None, 0, args.timeout, extra)
            rows = [{"set": r["set"], "family": r["id"], "sp": r["sp"], "tc": r["tc"]} for r in rep["rows"]]
            msagpu_rows[mode] = rows
            entries.append(_summary(f"msagpu {mode}", rows, rep["wall_s"], None,
                                    {"kind": "msagpu", "command": rep["command"], "stages_s": rep["stages_s"],
                                     "peak_rss_mb": rep["peak_rss_mb"]}))
        for spec in args.peers.split(",") if args.peers else []:
            tool, mode, limit = _peer_spec(spec)
            opts = peers.RunOptions(threads=args.threads, backend=args.backend, mafft_mode=mode,
                                    timeout=args.timeout, peer_prefix=args.peer_prefix)
            info = peers.probe(tool, opts)
            label = f"{tool} {mode}" if tool == "mafft" else tool
            if not info.available:
                entries.append({"label": label, "kind": "peer", "available": False, "reason": info.reason})
                continue
            subset = datasets.select(ds, sets, min(limit, args.limit or limit) if limit else args.limit)
            t0 = time.perf_counter()
            result = run_aligner(info, subset, opts, args.jobs)
            wall = result.wall_s or (time.perf_counter() - t0)
            rows = [{"set": r["set"], "family": r["family"], "sp": r.get("sp"), "tc": r.get("tc")}
                    for r in result.rows]
            entry = _summary(label, rows, wall, limit, {"kind": "peer", "available": True, "version": info.version,
                                                         "how": info.how, "jobs": args.jobs, "threads": args.threads})
            if limit:  # msagpu on exactly those families
                ids = {r["family"] for r in rows}
                entry["msagpu_on_subset"] = {m: _summary(f"msagpu {m}", [r for r in rs if r["family"] in ids], 0.0,
                                                         limit, {}) for m, rs in msagpu_rows.items()}
            entries.append(entry)
    return {"benchmark": "tradeoff", "dataset": name, "data": str(args.data), "families": len(fams),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "backend": args.backend, "jobs": args.jobs,
            "threads": args.threads, "machine": report.machine_info(), "entries": entries,
            "command": " ".join(args.argv) if hasattr(args, "argv") else ""}


def markdown(rep: dict) -> str:
    lines = [f"## Accuracy against time: {rep['dataset']}, {rep['families']} families ({rep['created']})", "",
             f"Machine: {rep['machine'].get('cpu_model', '?')}, {rep['machine'].get('cpu_count', '?')} CPUs, GPU: "
             f"{', '.join(rep['machine'].get('gpus', []) or ['none'])}. Peers {rep['jobs']} families at a time, "
             f"{rep['threads']} thread(s) each. Command: `{rep['command']}`.", "",
             "| aligner | families | mean SP | mean TC | wall s | per set TC |", "|---|---|---|---|---|---|"]
    for e in rep["entries"]:
        if not e.get("available", True):
            lines.append(f"| {e['label']} | - | - | - | - | not available: {e['reason']} |")
            continue
        sets = ", ".join(f"{k} {v['tc']:.3f}" for k, v in e["per_set"].items() if v["tc"] is not None)
        sub = f" (first {e['subset_per_set']} a set)" if e.get("subset_per_set") else ""
        lines.append(f"| {e['label']}{sub} | {e['n_ok']}/{e['families']} | {e['mean_sp']} | {e['mean_tc']} | "
                     f"{e['wall_s']} | {sets} |")
    for e in rep["entries"]:
        for m, s in e.get("msagpu_on_subset", {}).items():
            lines.append(f"| ↳ {s['label']} on {e['label']}'s {s['families']} families | {s['n_ok']} | "
                         f"{s['mean_sp']} | {s['mean_tc']} | - | like for like |")
    if rep.get("plot"):
        lines += ["", f"Plot: `{rep['plot']}`."]
    return "\n".join(lines) + "\n"


def plot(rep: dict, path: Path) -> str | None:
    """Mean TC against wall time (log scale), one point per mode and peer."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for e in rep["entries"]:
        if not e.get("available", True) or e["mean_tc"] is None:
            continue
        msagpu = e["kind"] == "msagpu"
        ax.scatter(e["wall_s"], e["mean_tc"], marker="o" if msagpu else "s", color="C3" if msagpu else "C0")
        sub = f" (subset: {e['families']} families)" if e.get("subset_per_set") else ""
        ax.annotate(e["label"] + sub, (e["wall_s"], e["mean_tc"]), textcoords="offset points", xytext=(5, 4),
                    fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("total wall time, s (log scale)")
    ax.set_ylabel("mean TC")
    ax.set_title(f"{rep['dataset']}: accuracy against time")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def register(sub) -> None:
    """Add the ``tradeoff`` subcommand."""
    b = sub.add_parser("tradeoff", help="msagpu's modes and the peers: accuracy against time, with a plot",
                       description=__doc__.split("\n\n")[0])
    b.add_argument("--data", required=True, help="benchmark folder or .tar.gz archive")
    b.add_argument("--modes", default="fast,accurate", help="msagpu modes, one batch call each")
    b.add_argument("--maxiterate", type=int, default=None, help="msagpu --maxiterate for every mode")
    b.add_argument("--peers", default="famsa,kalign,mafft-auto", help="NAME or NAME:K (K families a set)")
    b.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    b.add_argument("--jobs", type=int, default=1, help="peer families at a time")
    b.add_argument("--threads", type=int, default=1, help="threads per peer family")
    b.add_argument("--sets", default=None)
    b.add_argument("--limit", type=int, default=None, help="at most K families per set, for everyone")
    b.add_argument("--timeout", type=float, default=1800.0)
    b.add_argument("--peer-prefix", default=None, help="folder of Debian packages unpacked with dpkg -x")
    b.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    b.add_argument("--tag", default=None)
    b.set_defaults(func=cmd_tradeoff)


def cmd_tradeoff(args) -> int:
    rep = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.tag or time.strftime('%Y-%m-%d')}-tradeoff-{rep['dataset']}"
    rep["plot"] = plot(rep, out / f"{stem}-tc-vs-time.png")
    (out / f"{stem}.json").write_text(json.dumps(rep, indent=1))
    text = markdown(rep)
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 0
