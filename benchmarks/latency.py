"""Start-up latency as a pipeline sees it (issue 32): one process per family.

``python -m benchmarks latency --data balibase3.tar.gz`` measures, for msagpu
and each peer found (MAFFT L-INS-i, Clustal Omega, FAMSA's command line),

- one small family (``--family``, default BB11001) from a fresh process,
  best of ``--repeat`` runs;
- a serial loop over the ``--count`` smallest families (by residues), one
  process each, as nf-core and Snakemake start the aligner: its total wall
  time and mean SP/TC on core columns;

and writes ``<tag>-latency-<dataset>.json`` and ``.md``. Every aligner writes
FASTA to a file; times run from process start to its exit.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from msa_gpu.io import read_aligned, read_core
from msa_gpu.accuracy import sp_tc

#: How each aligner is started: argv with {input} and {output}, and whether
#: the alignment comes on stdout.
#: (msagpu-cpu and msagpu-gpu: msagpu on that backend.)
MSAGPU = ([sys.executable, "-m", "msa_gpu", "align", "{input}", "-o", "{output}", "-q"], False)
#: msagpu through its console entry point with a warm server (`msagpu serve`,
#: started for the run on a socket in ``--workdir``).
SERVED = ([sys.executable, "-c", "from msa_gpu.frontends.entry import msagpu; msagpu()", "align", "{input}", "-o", "{output}",
           "-q"], False)
COMMANDS = {
    "msagpu": MSAGPU,
    "msagpu-served": SERVED,
    "msagpu-cpu": MSAGPU,
    "msagpu-gpu": MSAGPU,
    "mafft-linsi": (["mafft", "--localpair", "--maxiterate", "1000", "--quiet", "{input}"], True),
    "clustalo": (["clustalo", "-i", "{input}", "-o", "{output}", "--force"], False),
    "famsa": (["famsa", "{input}", "{output}"], False),
}


def _argv(name: str, inp: Path, out: Path, backend: str, prefix: Path | None) -> tuple[list[str], bool, dict] | None:
    """The argv, whether the alignment comes on stdout, and the environment
    additions (a peer unpacked under ``prefix``: its paths, MAFFT_BINARIES)."""
    from benchmarks.peers import ToolPath

    argv, to_stdout = COMMANDS[name]
    env: dict = {}
    if not name.startswith("msagpu"):
        tools = ToolPath(prefix)
        found = tools.find(argv[0])
        if found is None:
            return None
        argv, env = [found, *argv[1:]], tools.env_for(found)
    else:  # msagpu-cpu, msagpu-gpu: that backend whatever --backend says
        argv = [*argv, "--backend", name.split("-")[1] if name in ("msagpu-cpu", "msagpu-gpu") else backend]
        env = {"MSAGPU_SERVER": SOCKET[0] if name == "msagpu-served" else "off"}
    return [a.replace("{input}", str(inp)).replace("{output}", str(out)) for a in argv], to_stdout, env


#: The served entry's socket, set while its server runs.
SOCKET = ["off"]


def _loop(made: list, timeout: float, jobs: int) -> tuple[float, list[float]]:
    """Run the loop's processes ``jobs`` at a time: the wall time of all, and each one's."""
    from concurrent.futures import ThreadPoolExecutor

    start = time.perf_counter()
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        each = list(pool.map(lambda m: _run(*m, timeout), made))
    return time.perf_counter() - start, each


def _run(argv: list[str], to_stdout: bool, env: dict, out: Path, timeout: float) -> float:
    start = time.perf_counter()
    with open(out, "wb") if to_stdout else open("/dev/null", "wb") as sink:
        subprocess.run(argv, stdout=sink, stderr=subprocess.DEVNULL, timeout=timeout, check=True,
                       env={**os.environ, **env} if env else None)
    return time.perf_counter() - start


def _score(out: Path, fam) -> tuple[float, float]:
    names, rows = read_aligned(out)
    ref_names, ref_rows = read_aligned(fam.ref_path)
    s = sp_tc(names, rows, ref_names, ref_rows, read_core(fam.core_path))
    return s.sp, s.tc


def _spread(ordered: list, count: int) -> list:
    """``count`` families evenly spaced along ``ordered`` (smallest to largest)."""
    if count >= len(ordered):
        return list(ordered)
    step = (len(ordered) - 1) / max(1, count - 1)
    return [ordered[round(i * step)] for i in range(count)]


def _size(fam) -> dict:
    """A family's sequences, mean length and DP cells as msagpu's backend
    auto counts them (`Recipe.dp_cells` of the default recipe)."""
    from msa_gpu.aligner import Aligner
    from msa_gpu.io import read_sequences

    seqs = read_sequences(fam.input_path)
    lengths = seqs.lengths
    return {"n": len(lengths), "mean_length": round(float(lengths.mean()), 1),
            "dp_cells": Aligner().plan([seqs])[0].dp_cells}


def run(args, on_entry=None) -> dict:
    from benchmarks import datasets

    prefix = Path(args.peer_prefix).resolve() if args.peer_prefix else None
    doc: dict = {"benchmark": "latency", "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 "command": "python -m benchmarks " + " ".join(sys.argv[1:]), "entries": [], "not_run": {}}
    with datasets.open_dataset(args.data) as ds:
        families = datasets.select(ds)
        size = {f.key: Path(f.input_path).stat().st_size for f in families}
        ordered = sorted(families, key=lambda f: (size[f.key], f.key))
        loop = ordered[: args.count] if args.pick == "smallest" else _spread(ordered[: args.among], args.count)
        single = next(f for f in families if f.family_id == args.family)
        sizes = {fam.key: _size(fam) for fam in loop}
        doc.update(dataset=ds.name, family=args.family, count=len(loop), pick=args.pick)
        work = Path(args.workdir)
        work.mkdir(parents=True, exist_ok=True)
        for name in args.aligners:
            if name not in COMMANDS:
                raise SystemExit(f"unknown aligner {name!r} (known: {', '.join(COMMANDS)})")
            if name == "msagpu-served":
                _start_server(work, getattr(args, "server_workers", None))
            out = work / f"{name}.fa"
            made = _argv(name, Path(single.input_path), out, args.backend, prefix)
            if made is None:
                doc["not_run"][name] = "not installed"
                continue
            try:
                times = [_run(*made, out, args.timeout) for _ in range(args.repeat)]
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                doc["not_run"][name] = f"failed on {args.family}: {exc}"
                print(f"{name}: failed on {args.family}: {exc}", flush=True)
                continue
            one_sp, one_tc = _score(out, single)
            sps, tcs, rows = [], [], []
            outs = [work / f"{name}-{k}.fa" for k in range(len(loop))]
            total, each = _loop([(*_argv(name, Path(fam.input_path), o, args.backend, prefix), o)
                                 for fam, o in zip(loop, outs)], args.timeout, args.jobs)
            for fam, o, took in zip(loop, outs, each):
                sp, tc = _score(o, fam)
                sps.append(sp)
                tcs.append(tc)
                rows.append({"family": fam.family_id, "s": round(took, 3), "sp": sp, "tc": tc, **sizes[fam.key]})
            doc["entries"].append({"aligner": name, "argv": made[0], "single_best_s": min(times), "single_runs_s": times,
                                   "single_tc": one_tc, "loop_s": total, "loop_sp": sum(sps) / len(sps),
                                   "loop_tc": sum(tcs) / len(tcs), "single_sp": one_sp, "families": rows})
            print(f"{name}: {args.family} best of {args.repeat} {min(times):.2f} s; {len(loop)} families "
                  f"{total:.1f} s, SP {sum(sps) / len(sps):.4f} TC {sum(tcs) / len(tcs):.4f}", flush=True)
            if on_entry is not None:  # each aligner's entry kept as it ends (a long run may be cut off)
                on_entry(doc)
        _stop_server()
    doc["jobs"] = args.jobs
    return doc


def _start_server(work: Path, workers: int | None = None) -> None:
    """A warm server for the msagpu-served entry, on a socket in ``work``
    (``workers``: its worker processes; default the server's)."""
    from msa_gpu.serving import server

    folder = work / "server"
    folder.mkdir(mode=0o700, exist_ok=True)
    SOCKET[0] = str(folder / "s.sock")
    server.start_detached(SOCKET[0], 3600.0, workers=workers)


def _stop_server() -> None:
    if SOCKET[0] != "off":
        from msa_gpu.serving import server

        server.stop(SOCKET[0])
        SOCKET[0] = "off"


def markdown(doc: dict) -> str:
    lines = [f"## Start-up latency: {doc['dataset']}, one process per family ({doc['created']})", "",
             f"Command: `{doc['command']}`.", "",
             f"| aligner | {doc['family']}, best of runs (s) | {doc['count']} "
             f"{'families spread over sizes' if doc.get('pick') == 'spread' else 'smallest families'}, "
             f"{'serial' if doc.get('jobs', 1) == 1 else str(doc['jobs']) + ' at a time'} (s) | "
             "their mean SP | mean TC |", "|---|---|---|---|---|"]
    for e in doc["entries"]:
        lines.append(f"| {e['aligner']} | {e['single_best_s']:.2f} | {e['loop_s']:.1f} | {e['loop_sp']:.4f} | "
                     f"{e['loop_tc']:.4f} |")
    for name, why in doc["not_run"].items():
        lines.append(f"| {name} | {why} | | | |")
    if doc.get("pick") == "spread" and doc["entries"]:  # each family's time by aligner: where backends cross
        names = [e["aligner"] for e in doc["entries"]]
        lines += ["", "| family | sequences | mean length | DP cells | " + " | ".join(f"{n} (s)" for n in names) + " |",
                  "|---|---|---|---|" + "---|" * len(names)]
        for k, row in enumerate(doc["entries"][0]["families"]):
            times = " | ".join(f"{e['families'][k]['s']:.2f}" for e in doc["entries"])
            lines.append(f"| {row['family']} | {row['n']} | {row['mean_length']} | {row['dp_cells']:,} | {times} |")
    return "\n".join(lines) + "\n"


def register(sub) -> None:
    """Add the ``latency`` subcommand."""
    b = sub.add_parser("latency", help="one process per family: a small family's wall time and a serial loop")
    b.add_argument("--data", required=True, help="BAliBASE-layout folder or archive")
    b.add_argument("--family", default="BB11001")
    b.add_argument("--repeat", type=int, default=3)
    b.add_argument("--count", type=int, default=200, help="families of the serial loop")
    b.add_argument("--pick", choices=["smallest", "spread"], default="smallest",
                   help="the loop's families: the smallest, or spread evenly over sizes (where backends cross)")
    b.add_argument("--among", type=int, default=None, help="--pick spread: over the smallest K families (default: all)")
    b.add_argument("--aligners", type=lambda t: [x for x in t.split(",") if x],
                   default=["msagpu", "mafft-linsi", "famsa", "clustalo"])
    b.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto", help="msagpu's backend")
    b.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    b.add_argument("--jobs", type=int, default=1, help="the loop's processes at a time (a workflow's parallel jobs)")
    b.add_argument("--peer-prefix", default=None, help="folder of Debian packages unpacked with dpkg -x")
    b.add_argument("--workdir", default="/tmp/msagpu-latency")
    b.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    b.add_argument("--tag", default=None)
    b.add_argument("--server-workers", type=int, default=None,
                   help="msagpu-served: the server's worker processes (default one a core, at most 8)")
    b.set_defaults(func=cmd_latency)


def cmd_latency(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def write(doc: dict) -> None:
        stem = f"{args.tag or dt.date.today().isoformat()}-latency-{doc['dataset']}"
        (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / f"{stem}.md").write_text(markdown(doc))

    doc = run(args, on_entry=write)
    write(doc)
    print(markdown(doc))
    return 0
