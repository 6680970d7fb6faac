"""Benchmark harness for msagpu and its peers.

Usage::

    python -m benchmarks balibase --data PATH [--aligners msagpu,famsa,...] [options]

``balibase`` aligns every family of a BAliBASE-layout benchmark (a folder or
a ``.tar.gz``: balibase3, balibase3_bbs, balifam) with each aligner, scores
all of them with msagpu's own SP/TC scorer and writes
``<out>/<tag or date>-balibase-<dataset>.json`` plus a markdown table beside
it. Further subcommands (e.g. ``pairwise``) go into `build_parser`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import time
from pathlib import Path

from . import add, batch, datasets, genomes, large, latency, memory, merge, mrle, pairwise, peers, report, tradeoff
from .runner import AlignerRun, progress_printer, run_aligner

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser, one subparser per benchmark."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("balibase", help="accuracy and speed on a BAliBASE-layout benchmark",
                       description="Align and score every family of a BAliBASE-layout benchmark "
                                   "(folder or .tar.gz) with each aligner.")
    b.add_argument("--data", required=True, help="benchmark folder or .tar.gz archive")
    b.add_argument("--aligners", type=_csv, default=list(peers.KNOWN),
                   help=f"comma-separated list (default: {','.join(peers.KNOWN)})")
    b.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto", help="msagpu backend")
    b.add_argument("--jobs", type=_positive, default=1, help="families at a time, per aligner (default 1)")
    b.add_argument("--threads", type=_positive, default=None,
                   help="threads per family (default: CPUs // jobs)")
    b.add_argument("--limit", type=_positive, default=None, help="at most K families per set")
    b.add_argument("--sets", type=_csv, default=None, help="comma-separated sets, e.g. RV11,RV12")
    b.add_argument("--mafft-mode", choices=sorted(peers.MAFFT_MODES), default="auto")
    b.add_argument("--timeout", type=float, default=600.0, help="seconds per family (default 600)")
    b.add_argument("--peer-prefix", default=None,
                   help="folder with Debian packages unpacked by 'dpkg -x' (binaries in DIR/usr/bin)")
    b.add_argument("--out", default=str(DEFAULT_OUT), help="results folder (default benchmarks/results)")
    b.add_argument("--tag", default=None, help="file name prefix (default: today's date)")
    b.add_argument("--save-alignments", action="store_true",
                   help="also write every alignment to <out>/<stem>-alignments/<aligner>/<set>/<ID>.fa")
    b.add_argument("--quiet", action="store_true", help="no per-family progress lines")
    b.set_defaults(func=cmd_balibase)
    batch.register(sub)
    pairwise.register(sub)
    mrle.register(sub)
    tradeoff.register(sub)
    large.register(sub)
    add.register(sub)
    merge.register(sub)
    memory.register(sub)
    genomes.register(sub)
    latency.register(sub)
    return parser


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cmd_balibase(args: argparse.Namespace) -> int:
    """Run the ``balibase`` benchmark; returns the exit status."""
    t0 = time.perf_counter()
    created = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    threads = args.threads or max(1, _cpus() // args.jobs)
    opts = peers.RunOptions(threads=threads, backend=args.backend, mafft_mode=args.mafft_mode,
                            timeout=args.timeout, peer_prefix=args.peer_prefix)
    names = list(dict.fromkeys(args.aligners))
    with datasets.open_dataset(args.data, args.sets) as ds:
        families = datasets.select(ds, args.sets, args.limit)
        if not families:
            print(f"error: no families found in {args.data}", file=sys.stderr)
            return 2
        sets = list(dict.fromkeys(f.set_name for f in families))
        stem = f"{args.tag or _dt.date.today().isoformat()}-balibase-{ds.name}"
        save_dir = str(Path(args.out) / f"{stem}-alignments") if args.save_alignments else None
        print(f"{ds.name}: {len(families)} families in {len(sets)} set(s); {args.jobs} at a time, "
              f"{threads} thread(s) each", file=sys.stderr)
        infos = [peers.probe(n, opts) for n in names]
        runs: dict[str, AlignerRun] = {}
        for info in infos:
            if not info.available:
                print(f"{info.name}: {info.reason}", file=sys.stderr)
                continue
            print(f"{info.name} {info.version}: {info.how}", file=sys.stderr)
            progress = None if args.quiet else progress_printer(len(families))
            runs[info.name] = run_aligner(info, families, opts, args.jobs, save_dir, progress)
            if runs[info.name].setup_error:
                print(f"{info.name}: setup failed: {runs[info.name].setup_error}", file=sys.stderr)
        options = {"aligners": names, "backend": args.backend, "jobs": args.jobs, "threads": threads,
                   "limit": args.limit, "sets": args.sets, "mafft_mode": args.mafft_mode,
                   "timeout": args.timeout, "peer_prefix": args.peer_prefix}
        doc = report.build_report(benchmark="balibase", dataset=ds.name, source=ds.source, sets=sets,
                                  options=options, infos=infos, runs=runs, machine=report.machine_info(),
                                  total_wall_s=time.perf_counter() - t0, command=args.argv, created=created)
    jpath, mpath = report.write_reports(doc, args.out, stem)
    print(report.markdown(doc))
    print(f"wrote {jpath} and {mpath}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = ["python", "-m", "benchmarks", *argv]
    try:
        return args.func(args)
    except datasets.DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
