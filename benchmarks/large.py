"""Large families: synthetic scale runs and the guide-tree ablation.

``python -m benchmarks large synthetic --sizes 10000,100000 --backend gpu``
generates synthetic protein families (`benchmarks.synthetic`, cached in
``--work``), aligns each with ``msagpu align --mode large`` in a child
process (wall time, the child's peak host memory from ``wait4``, the CuPy
pool's bytes at exit as the device figure) and with FAMSA (pyfamsa, all
cores, in a child process) up to ``--famsa-max`` sequences, and scores both
against the true alignment of a 500-sequence sample.

``python -m benchmarks large ablation --data balifam.tar.gz --sets
balifam1000 --backend gpu`` measures where the accuracy gap to FAMSA lies:
msagpu with its own tree, msagpu with FAMSA's guide tree injected
(pyfamsa's ``build_tree``), msagpu's large path, and FAMSA itself, each
family scored the same way. The fourth combination, FAMSA with msagpu's
tree, cannot be run: pyfamsa aligns only with a tree it builds itself.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import datasets, report
from .synthetic import evolve_family, write_family

CHILD_MSAGPU = """
import json, os, sys, time
if os.environ.get("MSAGPU_STACKS"):  # every thread's stack once a minute (benchmarks/stacks.py)
    from benchmarks.stacks import watch
    watch(os.environ["MSAGPU_STACKS"])
t0 = time.perf_counter()
from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import read_sequences, stream_fasta, write_text
from msa_gpu.runtime.progress import StageReporter
src, out, backend, mode = sys.argv[1:5]
seqs = read_sequences(src)
t1 = time.perf_counter()
res = Aligner(AlignerConfig(backend=backend, mode=mode), reporter=StageReporter(live=False)).align(seqs)
t2 = time.perf_counter()
write_text(out, lambda h: stream_fasta(h, seqs.names, res.alignment.iter_rows(seqs)))
t3 = time.perf_counter()
pool = 0
if res.backend == "gpu":
    import cupy
    pool = cupy.get_default_memory_pool().total_bytes()
import resource
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "read_s": t1 - t0, "align_s": t2 - t1, "write_s": t3 - t2, "stages_s": res.timings,
                  "columns": res.alignment.n_cols, "device_pool_bytes": pool, "backend": res.backend}))
"""

CHILD_FAMSA = """
import json, sys, time
import pyfamsa
src, out, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
names, seqs, cur = [], [], []
for line in open(src, "rb"):
    line = line.strip()
    if line.startswith(b">"):
        if cur: seqs.append(b"".join(cur)); cur = []
        names.append(line[1:])
    elif line: cur.append(line.upper())
seqs.append(b"".join(cur))
t0 = time.perf_counter()
aln = pyfamsa.Aligner(threads=threads).align([pyfamsa.Sequence(n, s) for n, s in zip(names, seqs)])
t1 = time.perf_counter()
with open(out, "wb") as fh:
    for g in aln:
        fh.write(b">" + g.id + b"\\n" + g.sequence + b"\\n")
import resource
print(json.dumps({"align_s": t1 - t0, "version": pyfamsa.__version__,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, args: list[str], timeout: float) -> tuple[dict | None, float, str]:
    """Run a Python child that prints one JSON line last; (that JSON, wall s, error)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        said = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-3:]
        return None, time.perf_counter() - t0, f"timed out after {timeout:.0f} s" + "".join(f"; {s}" for s in said)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()
        return None, wall, f"exit {proc.returncode}" + (f": {tail[-1]}" if tail else "")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1]), wall, ""


def _score(out: Path, ref: Path, core: Path) -> tuple[float, float]:
    from msa_gpu.io import read_aligned, read_core
    from msa_gpu.accuracy import sp_tc

    tn, tr = read_aligned(out)
    rn, rr = read_aligned(ref)
    s = sp_tc(tn, [r.upper() for r in tr], rn, rr, read_core(core))
    return s.sp, s.tc


def cmd_synthetic(args) -> int:
    work = Path(args.work)
    rows = []
    for n in args.sizes:
        folder = work / f"syn{n}"
        tfa = folder / f"syn{n}.tfa"
        if not tfa.exists():
            t0 = time.perf_counter()
            write_family(evolve_family(n, args.length, seed=args.seed), folder, f"syn{n}", 500, args.seed)
            print(f"generated {n} sequences in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        ref, core = folder / f"syn{n}.ref.fa", folder / f"syn{n}.core"
        runs = [("msagpu large", CHILD_MSAGPU, [str(tfa), str(folder / "msagpu.fa"), args.backend, "large"])]
        if n <= args.famsa_max:
            runs.append(("famsa", CHILD_FAMSA, [str(tfa), str(folder / "famsa.fa"), str(os.cpu_count())]))
        for label, code, cargs in runs:
            info, wall, err = _child(code, cargs, args.timeout)
            row = {"n": n, "aligner": label, "wall_s": round(wall, 2), "ok": info is not None, "error": err}
            if info is not None:
                row.update(info)
                row["sp"], row["tc"] = _score(Path(cargs[1]), ref, core)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            _write_synthetic(args, rows)  # after every run, so a later timeout keeps what was measured
    return 0


def _write_synthetic(args, rows: list[dict]) -> None:
    doc = {"benchmark": "large-synthetic", "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": report.machine_info(), "backend": args.backend, "length": args.length, "seed": args.seed,
           "command": "python -m benchmarks large synthetic " + " ".join(sys.argv[3:]), "rows": rows,
           "memory_method": "host: the child's own ru_maxrss; device: CuPy pool bytes held at exit (the pool "
                            "keeps freed blocks, so this is close to its peak)"}
    lines = [f"## Synthetic large families ({doc['created']})", "",
             f"Machine: {doc['machine']['cpu_model']}, {doc['machine']['cpu_count']} CPUs, GPUs: "
             f"{'; '.join(doc['machine']['gpus']) or 'none'}. Command: `{doc['command']}`.", "",
             "| N | aligner | wall s | SP | TC | columns | peak host MB | device pool MB |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["ok"]:
            lines.append(f"| {r['n']:,} | {r['aligner']} | {r['wall_s']} | {r['sp']:.4f} | {r['tc']:.4f} | "
                         f"{r.get('columns', '-')} | {r['peak_rss_mb']:.0f} | "
                         f"{r.get('device_pool_bytes', 0) / 1e6:.0f} |")
        else:
            lines.append(f"| {r['n']:,} | {r['aligner']} | {r['wall_s']} | failed: {r['error']} | | | | |")
    report.write_result(args, "large-synthetic", doc, "\n".join(lines) + "\n")


def cmd_ablation(args) -> int:
    from msa_gpu.aligner import Aligner
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.io import make_sequences, read_aligned, read_core, read_sequences
    from msa_gpu.accuracy import sp_tc

    with datasets.open_dataset(args.data, args.sets) as ds:
        fams = datasets.select(ds, args.sets, args.limit)
        seqs = []
        for fam in fams:
            s = read_sequences(fam.input_path, "protein")
            seqs.append(make_sequences(list(s.names), [r.upper() for r in s.raw], "protein"))
        refs = [(read_aligned(f.ref_path), read_core(f.core_path)) for f in fams]

    def score(rows_of) -> tuple[float, float, list]:
        per = []
        for s, rows, ((rn, rr), core) in zip(seqs, rows_of, refs):
            r = sp_tc(list(s.names), rows, rn, rr, core)
            per.append((r.sp, r.tc))
        a = np.array(per)
        return float(a[:, 0].mean()), float(a[:, 1].mean()), per

    threads = os.cpu_count() or 1
    entries = []
    from .tune_modes import parse_setting

    runs = [(f"msagpu {v}", parse_setting(v), None, "") for v in args.variants]
    if args.no_peers:
        if not args.no_default:
            runs.insert(0, ("msagpu (own tree)", {}, None, ""))
    else:
        runs = _peer_runs(seqs, score, entries, threads) + runs
    for label, kw, trees, note in runs:
        al = Aligner(AlignerConfig(backend=args.backend, **kw))
        t0 = time.perf_counter()
        res = al.align_many(seqs, guide_trees=trees)
        wall = time.perf_counter() - t0
        sp, tc, per = score([r.rows() for r in res])
        entries.append({"label": label, "sp": sp, "tc": tc, "wall_s": wall, "per_family": per,
                        "how": f"one align_many call, backend {res[0].backend}, mode {kw.get('mode', 'auto')}{note}",
                        "stages_s": {k: round(v, 2) for k, v in res[0].timings.items()}})
        print(json.dumps({k: v for k, v in entries[-1].items() if k != "per_family"}), file=sys.stderr, flush=True)
    doc = {"benchmark": "large-ablation", "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": report.machine_info(), "data": str(args.data), "sets": args.sets, "families": len(seqs),
           "command": "python -m benchmarks large ablation " + " ".join(sys.argv[3:]), "entries": entries,
           "not_run": "FAMSA (--no-peers)" if args.no_peers
           else "FAMSA with msagpu's tree: pyfamsa has no way to align along a given tree"}
    lines = [f"## Guide-tree ablation: {', '.join(args.sets or ['all'])}, {len(seqs)} families ({doc['created']})", "",
             f"Machine: {doc['machine']['cpu_model']}, {doc['machine']['cpu_count']} CPUs, GPUs: "
             f"{'; '.join(doc['machine']['gpus']) or 'none'}. Command: `{doc['command']}`.", "",
             "| run | mean SP | mean TC | wall s | how |", "|---|---|---|---|---|"]
    lines += [f"| {e['label']} | {e['sp']:.4f} | {e['tc']:.4f} | {e['wall_s']:.1f} | {e['how']} |" for e in entries]
    lines += ["", f"Not run: {doc['not_run']}."]
    report.write_result(args, "large-ablation", doc, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _peer_runs(seqs, score, entries, threads) -> list:
    """FAMSA with its own tree (an entry in ``entries``), and the msagpu runs
    beside it: its own tree, FAMSA's trees injected, and the large path."""
    import pyfamsa

    from msa_gpu.io import from_newick

    t0 = time.perf_counter()
    famsa_rows, famsa_trees = [], []
    aligner = pyfamsa.Aligner(threads=threads)
    for s in seqs:
        aln = aligner.align([pyfamsa.Sequence(n.encode(), r) for n, r in zip(s.names, s.raw)])
        got = {g.id.decode(): g.sequence for g in aln}
        famsa_rows.append([got[n] for n in s.names])
    famsa_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s in seqs:
        tree = aligner.build_tree([pyfamsa.Sequence(n.encode(), r) for n, r in zip(s.names, s.raw)])
        famsa_trees.append(from_newick(tree.dumps().decode(), list(s.names)))
    tree_wall = time.perf_counter() - t0
    sp, tc, per = score(famsa_rows)
    entries.append({"label": "FAMSA (own tree)", "sp": sp, "tc": tc, "wall_s": famsa_wall, "per_family": per,
                    "how": f"pyfamsa {pyfamsa.__version__}, one family at a time, {threads} threads"})
    return [("msagpu (own tree)", {}, None, ""),
            ("msagpu + FAMSA's tree", {}, famsa_trees, f" (FAMSA's trees built in {tree_wall:.1f} s, not counted)"),
            ("msagpu large path", {"mode": "large"}, None, "")]


def register(sub) -> None:
    p = sub.add_parser("large", help="large families: synthetic scale runs, guide-tree ablation")
    sp = p.add_subparsers(dest="large_command", required=True)
    s = sp.add_parser("synthetic", help="synthetic families of given sizes, msagpu large path and FAMSA")
    s.add_argument("--sizes", type=lambda t: [int(x) for x in t.split(",")], default=[10000, 100000])
    s.add_argument("--length", type=int, default=300)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--famsa-max", type=int, default=100000, help="largest N FAMSA runs on")
    s.add_argument("--timeout", type=float, default=600.0)
    s.add_argument("--work", default="/tmp/msagpu-synthetic", help="where families are generated and cached")
    s.set_defaults(func=cmd_synthetic)
    a = sp.add_parser("ablation", help="msagpu and FAMSA with each other's guide trees")
    a.add_argument("--data", required=True)
    a.add_argument("--sets", type=lambda t: [x for x in t.split(",") if x], default=None)
    a.add_argument("--limit", type=int, default=None)
    a.add_argument("--variants", nargs="*", default=[], help='more msagpu settings, e.g. "distance=align tree=upgma"')
    a.add_argument("--no-peers", action="store_true",
                   help="msagpu's default and the variants only: no FAMSA, FAMSA-tree or large-path runs")
    a.add_argument("--no-default", action="store_true", help="with --no-peers: the variants only")
    a.set_defaults(func=cmd_ablation)
    for q in (s, a):
        q.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
        q.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
        q.add_argument("--tag", default=None)
