"""Accuracy against time: msagpu's modes and the peers in one run, with a
plot of mean TC against total wall time.

``python -m benchmarks tradeoff --data ARCHIVE --modes fast,accurate
--peers famsa,mafft-auto,mafft-linsi:3 --peer-jobs 16 --peer-threads 1``

Each msagpu mode is one batch-mode call over every selected family
(``msagpu align DIR --outdir OUT --backend B --mode M``, as the ``batch``
benchmark times it: start-up included). Each peer runs through the harness
(`peers.probe`, `runner.run_aligner`), ``--peer-jobs`` families at a time.
``mafft-auto``, ``mafft-linsi``, ``mafft-ginsi`` and ``mafft-fftns2`` are MAFFT in that mode
(`peers.MAFFT_MODES`); other peers go by their `peers.KNOWN` name.

A peer may run on a subset (``--peer-sets``, ``--peer-limit K`` or
``NAME:K``: at most K families a set; MAFFT L-INS-i needs about 465 s for
BAliBASE's 218 on 16 cores). Its time is then the measured time of that
subset, never extrapolated, and the report also gives msagpu's accuracy on
exactly the families the peer completed, so the comparison is like for like.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from msa_gpu.settings.config import Mode

from . import batch, datasets, peers, report
from .peers import AlignerInfo
from .runner import AlignerRun, progress_printer, run_aligner

MSAGPU_MEMORY = "ru_maxrss of the msagpu process (host memory; GPU memory not included)"


@dataclass(frozen=True)
class PeerSpec:
    """One ``--peers`` item: ``mafft-linsi:3`` is MAFFT L-INS-i on at most 3 families a set."""

    tool: str
    mafft_mode: str = "auto"
    limit: int | None = None

    @property
    def label(self) -> str:
        return f"mafft {self.mafft_mode}" if self.tool == "mafft" else self.tool


def parse_peer(text: str) -> PeerSpec:
    """``NAME[:K]`` as a `PeerSpec`.

    >>> parse_peer("mafft-linsi:3"), parse_peer("famsa")
    (PeerSpec(tool='mafft', mafft_mode='linsi', limit=3), PeerSpec(tool='famsa', mafft_mode='auto', limit=None))
    """
    name, _, k = text.strip().partition(":")
    tool, mode = name, "auto"
    if name.startswith("mafft-"):
        tool, mode = "mafft", name[len("mafft-"):]
        if mode not in peers.MAFFT_MODES:
            raise argparse.ArgumentTypeError(f"{name}: MAFFT modes are {', '.join(sorted(peers.MAFFT_MODES))}")
    if k and (not k.isdigit() or int(k) < 1):
        raise argparse.ArgumentTypeError(f"{text}: K in NAME:K must be a positive integer")
    return PeerSpec(tool, mode, int(k) if k else None)


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return int(text)


def _modes(text: str) -> list[str]:
    modes = list(dict.fromkeys(_csv(text)))
    bad = [m for m in modes if m not in {x.value for x in Mode}]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown mode(s) {', '.join(bad)} (auto, fast, accurate)")
    return modes


def _peers(text: str) -> list[PeerSpec]:
    return [parse_peer(t) for t in _csv(text)]


# --------------------------------------------------------------------------- accuracy of a set of rows

def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def accuracy(rows: list[dict], sets: list[str]) -> dict:
    """Means over the completed rows (``status`` ok), overall and per set, in
    the key names of `report.summarize`."""
    ok = [r for r in rows if r["status"] == "ok"]
    per_set = {}
    for s in sets:
        members = [r for r in rows if r["set"] == s]
        done = [r for r in members if r["status"] == "ok"]
        if members:
            per_set[s] = {"n": len(members), "n_ok": len(done), "sp": _mean([r["sp"] for r in done]),
                          "tc": _mean([r["tc"] for r in done])}
    return {"n_families": len(rows), "n_ok": len(ok), "mean_sp": _mean([r["sp"] for r in ok]),
            "mean_tc": _mean([r["tc"] for r in ok]), "per_set": per_set}


def like_for_like(peer_rows: list[dict], msagpu_rows: dict[str, list[dict]], sets: list[str]) -> dict | None:
    """msagpu's accuracy, per mode, on exactly the families the peer completed;
    None when those are all of msagpu's families."""
    done = {(r["set"], r["family"]) for r in peer_rows if r["status"] == "ok"}
    if all(done == {(r["set"], r["family"]) for r in rows} for rows in msagpu_rows.values()):
        return None
    return {mode: accuracy([r for r in rows if (r["set"], r["family"]) in done], sets)
            for mode, rows in msagpu_rows.items()}


# --------------------------------------------------------------------------- running

def _msagpu_device(backend: str, machine: dict) -> str:
    gpus = machine.get("gpus") or []
    if backend == "cpu":
        return "cpu"
    if backend == "gpu":
        return f"gpu ({gpus[0] if gpus else 'unknown GPU'})"
    return f"auto (GPU if usable; host GPUs: {'; '.join(gpus) or 'none'})"


def run_msagpu_mode(root: Path, args: argparse.Namespace, mode: str, machine: dict) -> tuple[dict, list[dict]]:
    """One batch-mode call over every selected family; returns the entry and its rows."""
    extra = ["--mode", mode] + (["--maxiterate", str(args.maxiterate)] if args.maxiterate is not None else [])
    print(f"msagpu {mode}: one batch call, backend {args.backend}", file=sys.stderr)
    rep = batch.run_batch(str(root), args.backend, args.sets, args.limit, None, 0, args.timeout, extra)
    rows = [{"set": r["set"], "family": r["id"], "status": "ok", "sp": r["sp"], "tc": r["tc"]} for r in rep["rows"]]
    entry = {"label": f"msagpu {mode}", "kind": "msagpu", "available": True, "mode": mode,
             **accuracy(rows, list(dict.fromkeys(r["set"] for r in rows))),
             "wall_s": round(rep["wall_s"], 3), "peak_rss_mb": rep["peak_rss_mb"], "memory_method": MSAGPU_MEMORY,
             "device": _msagpu_device(args.backend, machine), "command": rep["command"], "stages_s": rep["stages_s"]}
    return entry, rows


def probe_and_run(name: str, families: list[datasets.Family], opts: peers.RunOptions, jobs: int,
                  quiet: bool) -> tuple[AlignerInfo, AlignerRun | None]:
    """Probe one aligner and, if it is available, run it over ``families``
    (as ``python -m benchmarks balibase`` does, with the same messages)."""
    info = peers.probe(name, opts)
    if not info.available:
        print(f"{info.name}: {info.reason}", file=sys.stderr)
        return info, None
    print(f"{info.label or info.name} {info.version}: {info.how} ({len(families)} families)", file=sys.stderr)
    run = run_aligner(info, families, opts, jobs, None, None if quiet else progress_printer(len(families)))
    if run.setup_error:
        print(f"{info.name}: setup failed: {run.setup_error}", file=sys.stderr)
    return info, run


def peer_limit(args: argparse.Namespace, spec: PeerSpec) -> int | None:
    """Families a set for a peer: the smallest of ``--limit`` and ``NAME:K``
    (else ``--peer-limit``)."""
    limits = [k for k in (args.limit, spec.limit or args.peer_limit) if k]
    return min(limits) if limits else None


def run_peer(families: list[datasets.Family], args: argparse.Namespace, spec: PeerSpec,
             msagpu_rows: dict[str, list[dict]], sets: list[str], n_all: int, machine: dict) -> dict:
    """One peer's entry: `report.summarize`'s summary, how it was restricted,
    and msagpu on the families the peer completed when they are not all of
    msagpu's ``n_all``."""
    opts = peers.RunOptions(threads=args.peer_threads, backend=args.backend, mafft_mode=spec.mafft_mode,
                            timeout=args.timeout, peer_prefix=args.peer_prefix)
    info, run = probe_and_run(spec.tool, families, opts, args.peer_jobs, args.quiet)
    peer_sets = list(dict.fromkeys(f.set_name for f in families))
    entry = {**report.summarize(info, run, peer_sets, machine.get("gpus", [])), "label": spec.label,
             "kind": "peer", "command": info.how, "jobs": args.peer_jobs,
             "per_set_limit": peer_limit(args, spec), "peer_sets": args.peer_sets,
             "ran_on_subset": len(families) < n_all}
    subset = like_for_like(run.rows, msagpu_rows, sets) if run is not None else None
    if subset is not None:
        entry["msagpu_on_subset"] = subset
        entry["subset_note"] = (f"ran on {len(families)} of {n_all} families and completed {entry['n_ok']}; "
                                "msagpu_on_subset is msagpu on exactly the completed ones; wall_s is the "
                                f"measured time of the {len(families)}, not extrapolated")
    return entry


def run(args: argparse.Namespace) -> dict:
    """Every msagpu mode, then every peer; returns the report."""
    t0 = time.perf_counter()
    created = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    machine = report.machine_info()
    entries, msagpu_rows = [], {}
    with datasets.open_dataset(args.data, args.sets) as ds:
        families = datasets.select(ds, args.sets, args.limit)
        if not families:
            raise datasets.DatasetError(f"no families found in {args.data}")
        sets = list(dict.fromkeys(f.set_name for f in families))
        plans = [(spec, datasets.select(ds, args.peer_sets or args.sets, peer_limit(args, spec)))
                 for spec in args.peers]  # a bad --peer-sets fails here, before any run
        print(f"{ds.name}: {len(families)} families in {len(sets)} set(s)", file=sys.stderr)
        for mode in args.modes:
            entry, msagpu_rows[mode] = run_msagpu_mode(ds.root, args, mode, machine)
            entries.append(entry)
        for spec, chosen in plans:
            entries.append(run_peer(chosen, args, spec, msagpu_rows, sets, len(families), machine))
    options = {k: v for k, v in vars(args).items() if k not in ("func", "argv", "peers")}
    options["peers"] = [vars(p) for p in args.peers]
    return {"benchmark": "tradeoff", "dataset": ds.name, "data": ds.source, "created": created,
            "command": " ".join(getattr(args, "argv", [])), "options": options, "modes": args.modes,
            "sets": sets, "families": len(families), "machine": machine,
            "total_wall_s": round(time.perf_counter() - t0, 3),
            "timing": "msagpu: the whole batch-mode call (process start, imports, kernel load, I/O); peers: "
                      "first family handed out to last result, worker start-up excluded",
            "scoring": "msa_gpu.accuracy.sp_tc on core columns, same for every aligner; inputs upper-cased; "
                       "means over completed families",
            "entries": entries}


# --------------------------------------------------------------------------- writing

def _num(x: float | None, fmt: str = ".4f") -> str:
    return "-" if x is None else format(x, fmt)


def _pair(sp: float | None, tc: float | None) -> str:
    return "-" if sp is None else f"{sp:.3f}/{tc:.3f}"


def _cell(p: dict | None) -> str:
    """A per-set cell: SP/TC, and ``(k/n)`` when some families did not complete."""
    if not p:
        return "-"
    return _pair(p["sp"], p["tc"]) + (f" ({p['n_ok']}/{p['n']})" if p["n_ok"] != p["n"] else "")


def _subset_label(e: dict) -> str:
    return f" (subset of {e['n_families']} families)" if e.get("ran_on_subset") else ""


def _summary_table(doc: dict) -> list[str]:
    lines = ["| aligner | families | mean SP | mean TC | wall (s) | peak RSS (MB) | device |",
             "|---|---|---|---|---|---|---|"]
    for e in doc["entries"]:
        if not e["available"]:
            lines.append(f"| {e['label']} | - | - | - | - | - | {e['reason']} |")
            continue
        lines.append(f"| {e['label']}{_subset_label(e)} | {e['n_ok']}/{e['n_families']} | {_num(e['mean_sp'])} | "
                     f"{_num(e['mean_tc'])} | {_num(e['wall_s'], '.2f')} | {_num(e['peak_rss_mb'], '.0f')} | "
                     f"{e['device']} |")
    return lines


def _set_table(doc: dict, ran: list[dict]) -> list[str]:
    lines = ["Per reference set, SP/TC (`(k/n)`: k of n families completed):", "",
             "| aligner | " + " | ".join(doc["sets"]) + " |", "|---" * (len(doc["sets"]) + 1) + "|"]
    for e in ran:
        cells = " | ".join(_cell(e["per_set"].get(s)) for s in doc["sets"])
        lines.append(f"| {e['label']}{_subset_label(e)} | {cells} |")
    return lines


def _subset_table(doc: dict, subsets: list[dict]) -> list[str]:
    lines = ["Like for like: each peer that ran on a subset (or did not complete every family) against "
             "msagpu on exactly the families the peer completed, SP/TC. The peer's time is the measured "
             "time of its subset, not extrapolated.", "",
             "| peer | families | peer | " + " | ".join(f"msagpu {k}" for k in doc["modes"]) + " |",
             "|---" * (len(doc["modes"]) + 3) + "|"]
    for e in subsets:
        ours = " | ".join(_pair(s["mean_sp"], s["mean_tc"]) for s in e["msagpu_on_subset"].values())
        lines.append(f"| {e['label']} | {e['n_ok']} | {_pair(e['mean_sp'], e['mean_tc'])} | {ours} |")
    return lines


def markdown(doc: dict) -> str:
    """Summary, per-set and like-for-like tables, the exact commands, the plot."""
    m, ran = doc["machine"], [e for e in doc["entries"] if e["available"]]
    subsets = [e for e in ran if e.get("msagpu_on_subset")]
    lines = [f"## Accuracy against time: {doc['dataset']}, {doc['families']} families ({doc['created']})", "",
             f"Machine: {m.get('hostname', '?')}, {m.get('cpu_count', '?')} CPUs ({m.get('cpu_model', '?')}), "
             f"GPU: {'; '.join(m.get('gpus') or []) or 'none'}. Command: `{doc['command']}`.", ""]
    lines += _summary_table(doc) + [""] + _set_table(doc, ran) + ([""] + _subset_table(doc, subsets) if subsets else [])
    lines += ["", "Commands:", ""]
    lines += [f"- {e['label']}: `{e['command']}`" + (f" ({e['jobs']} at a time)" if e["kind"] == "peer" else "")
              for e in ran]
    lines += ["", f"Timing: {doc['timing']}. Scoring: {doc['scoring']}.",
              f"Plot: `{doc['plot']}`." if doc.get("plot") else f"Plot skipped: {doc.get('plot_skipped')}."]
    return "\n".join(lines) + "\n"


def _point_label(e: dict) -> str:
    """The aligner; for a peer on a subset, the subset's size and msagpu's TC on it."""
    label = e["label"] + (f"\nsubset of {e['n_families']} families" if e.get("ran_on_subset") else "")
    if e.get("msagpu_on_subset"):
        there = ", ".join(f"{m} {s['mean_tc']:.3f}" for m, s in e["msagpu_on_subset"].items()
                          if s["mean_tc"] is not None)
        label += f"\nmsagpu there: {there}"
    return label


def _label_sides(points: list[tuple[float, float]]) -> list[str]:
    """``left`` for a point whose right-hand neighbour (in time) is close, so
    their labels do not overlap; else ``right``."""
    order = sorted(range(len(points)), key=lambda i: points[i])
    sides = ["right"] * len(points)
    for a, b in zip(order, order[1:]):
        (ta, ya), (tb, yb) = points[a], points[b]
        if tb < 2 * ta and abs(yb - ya) < 0.03:
            sides[a] = "left"
    return sides


def plot(doc: dict, path: Path) -> dict:
    """Mean TC against measured wall time (log x), one labelled point per
    msagpu mode and peer. Returns ``{"plot": name}``, or ``{"plot": None,
    "plot_skipped": why}`` when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter
    except ImportError:
        print("warning: matplotlib is not installed; no plot", file=sys.stderr)
        return {"plot": None, "plot_skipped": "matplotlib not installed"}
    shown = [e for e in doc["entries"] if e["available"] and e["mean_tc"] is not None and e["wall_s"]]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for e, side in zip(shown, _label_sides([(e["wall_s"], e["mean_tc"]) for e in shown])):
        colour = "C3" if e["kind"] == "msagpu" else "C0"
        ax.scatter(e["wall_s"], e["mean_tc"], marker="o" if e["kind"] == "msagpu" else "s", edgecolors=colour,
                   facecolors="none" if e.get("ran_on_subset") else colour)
        ax.annotate(_point_label(e), (e["wall_s"], e["mean_tc"]), textcoords="offset points", fontsize=7,
                    xytext=(6 if side == "right" else -6, 0), ha="left" if side == "right" else "right", va="center")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.margins(x=0.3, y=0.12)
    ax.set_xlabel("total wall time, s (log scale; hollow: measured on a subset of the families)")
    ax.set_ylabel("mean TC")
    ax.set_title(f"{doc['dataset']}: accuracy against time")
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return {"plot": path.name}


def register(sub) -> None:
    """Add the ``tradeoff`` subcommand."""
    b = sub.add_parser("tradeoff", help="msagpu's modes and the peers: accuracy against time, with a plot",
                       description=__doc__.split("\n\n")[0])
    b.add_argument("--data", required=True, help="benchmark folder or .tar.gz archive")
    b.add_argument("--modes", type=_modes, default=["fast", "accurate"], help="msagpu modes, one batch call each")
    b.add_argument("--maxiterate", type=int, default=None, help="msagpu --maxiterate for every mode")
    b.add_argument("--peers", type=_peers, default=_peers("famsa,mafft-auto"),
                   help="NAME or NAME:K (at most K families a set); mafft-auto, mafft-linsi, mafft-ginsi, mafft-fftns2")
    b.add_argument("--peer-jobs", "--jobs", dest="peer_jobs", type=_positive, default=1, help="peer families at a time")
    b.add_argument("--peer-threads", "--threads", dest="peer_threads", type=_positive, default=1,
                   help="threads per peer family")
    b.add_argument("--peer-sets", type=_csv, default=None, help="peers run on these sets only")
    b.add_argument("--peer-limit", type=_positive, default=None,
                   help="peers: at most K families a set (NAME:K overrides)")
    b.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto", help="msagpu backend")
    b.add_argument("--sets", type=_csv, default=None, help="comma-separated sets, for everyone")
    b.add_argument("--limit", type=_positive, default=None, help="at most K families a set, for everyone")
    b.add_argument("--timeout", type=float, default=1800.0, help="seconds per peer family, and per msagpu call")
    b.add_argument("--peer-prefix", default=None, help="folder of Debian packages unpacked with dpkg -x")
    b.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    b.add_argument("--tag", default=None, help="file name prefix (default: today's date)")
    b.add_argument("--quiet", action="store_true", help="no per-family progress lines")
    b.set_defaults(func=cmd_tradeoff)


def cmd_tradeoff(args: argparse.Namespace) -> int:
    """Run, plot, write ``<tag>-tradeoff-<dataset>.json`` and ``.md``."""
    doc = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.tag or _dt.date.today().isoformat()}-tradeoff-{doc['dataset']}"
    doc.update(plot(doc, out / f"{stem}-tc-vs-time.png"))
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    text = markdown(doc)
    (out / f"{stem}.md").write_text(text)
    print(text)
    print(f"wrote {out / stem}.json and .md", file=sys.stderr)
    return 0
