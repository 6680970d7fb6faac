"""Merging alignments: msagpu against MAFFT's ``--merge``, in one run (issue 60).

``python -m benchmarks merge --data balibase3.tar.gz --sets RV12`` splits each
family's reference alignment in two by its rows (the first half, the rest;
``--parts K``: K slices), drops the columns each part leaves empty, and has
every aligner merge the parts back, each part's columns kept. Each result is
scored against the whole reference (core columns, msagpu's SP/TC scorer).

Rows: ``msagpu align --merge`` as a subprocess on the part files (start-up
and I/O included), in fast mode and, with ``--accurate``, in accurate mode;
MAFFT ``--merge`` as a subprocess on the concatenated parts and MAFFT's
sub-MSA table (its default, and ``--localpair --maxiterate 1000`` with
``--accurate``). Wall times are sums over the families.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import report
from .datasets import open_dataset, select


def split_reference(names: list[str], rows: list[bytes], parts: int) -> list[tuple[list[str], list[bytes]]]:
    """The reference's rows in ``parts`` consecutive slices, each without the
    columns it leaves empty (upper-cased).

    >>> split_reference(["a", "b", "c"], [b"A-C", b"AG-", b"-GC"], 2)
    [(['a'], [b'AC']), (['b', 'c'], [b'AG-', b'-GC'])]
    """
    edges = np.linspace(0, len(names), parts + 1).round().astype(int)
    out = []
    for a, b in zip(edges, edges[1:]):
        g = np.array([np.frombuffer(r.upper(), np.uint8) for r in rows[a:b]])
        keep = ~((g == ord("-")) | (g == ord("."))).all(axis=0)
        out.append((list(names[a:b]), [bytes(r[keep]) for r in g]))
    return out


def _write(path: Path, names, rows) -> None:
    with open(path, "wb") as fh:
        for n, r in zip(names, rows):
            fh.write(b">" + n.encode() + b"\n" + r + b"\n")


def _run(cmd: list[str], out: Path, timeout: float) -> tuple[float, str]:
    t0 = time.perf_counter()
    try:
        with open(out, "wb") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, f"not finished in {timeout:g} s"
    return time.perf_counter() - t0, "" if proc.returncode == 0 else proc.stderr.decode(errors="replace")[-300:]


def cmd_merge(args) -> int:
    from msa_gpu.io import read_aligned, read_core
    from msa_gpu.accuracy import sp_tc

    mafft = shutil.which("mafft", path=os.pathsep.join([args.peer_prefix + "/usr/bin", os.environ.get("PATH", "")])
                         if args.peer_prefix else None)
    runs = [("msagpu align --merge (fast)", "msagpu", ["--mode", "fast"]),
            ("mafft --merge", "mafft", [])]
    if args.accurate:
        runs += [("msagpu align --merge --mode accurate", "msagpu", ["--mode", "accurate"]),
                 ("mafft --localpair --maxiterate 1000 --merge", "mafft", ["--localpair", "--maxiterate", "1000"])]
    scores: dict[str, list] = {label: [] for label, _, _ in runs}
    walls = {label: 0.0 for label, _, _ in runs}
    errors: dict[str, str] = {}
    n_fam = 0
    with open_dataset(args.data, args.sets) as ds, tempfile.TemporaryDirectory(prefix="msagpu-merge-") as tmp:
        work = Path(tmp)
        for fam in select(ds, args.sets, args.limit):
            names, rows = read_aligned(fam.ref_path)
            core = read_core(fam.core_path) if fam.core_path else None
            pieces = split_reference(names, rows, args.parts)
            paths = []
            for k, (n, r) in enumerate(pieces):
                paths.append(work / f"part{k}.fa")
                _write(paths[-1], n, r)
            _write(work / "all.fa", [x for n, _ in pieces for x in n], [x for _, r in pieces for x in r])
            edges = np.cumsum([0] + [len(n) for n, _ in pieces])
            (work / "table").write_text("".join(" ".join(str(i + 1) for i in range(a, b)) + "\n"
                                                for a, b in zip(edges, edges[1:])))
            n_fam += 1
            for label, tool, flags in runs:
                out = work / "out.fa"
                if tool == "msagpu":
                    cmd = [sys.executable, "-m", "msa_gpu", "align", "--merge", *map(str, paths), "-o", str(out),
                           "--backend", args.backend, "-q", *flags]
                    wall, err = _run(cmd, work / "stdout", args.timeout)
                elif not mafft:
                    wall, err = 0.0, "MAFFT not found"
                else:
                    wall, err = _run([mafft, "--quiet", *flags, "--merge", str(work / "table"), str(work / "all.fa")],
                                     out, args.timeout)
                walls[label] += wall
                if err:
                    errors.setdefault(label, f"{fam.family_id}: {err}")
                    continue
                got_names, got_rows = read_aligned(out)
                s = sp_tc(got_names, [r.upper() for r in got_rows], names, rows, core)
                scores[label].append((s.sp, s.tc))
            print(fam.family_id, {k: v[-1] for k, v in scores.items() if v}, file=sys.stderr, flush=True)
    entries = []
    for label, _, _ in runs:
        got = np.array(scores[label]).reshape(-1, 2)
        entries.append({"label": label, "n_ok": len(got), "n": n_fam, "wall_s": round(walls[label], 3),
                        "mean_sp": round(float(got[:, 0].mean()), 4) if len(got) else None,
                        "mean_tc": round(float(got[:, 1].mean()), 4) if len(got) else None,
                        "error": errors.get(label)})
    doc = {"benchmark": "merge", "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": report.machine_info(), "data": str(args.data), "sets": args.sets, "parts": args.parts,
           "families": n_fam, "entries": entries, "command": "python -m benchmarks merge " + " ".join(sys.argv[2:])}
    lines = [f"## Merging alignments: {n_fam} references cut in {args.parts} by their rows ({doc['created']})", "",
             f"Machine: {doc['machine']['cpu_model']}, {doc['machine']['cpu_count']} CPUs, GPUs: "
             f"{'; '.join(doc['machine']['gpus']) or 'none'}. Command: `{doc['command']}`.", "",
             "Every row runs as a subprocess on the part files (start-up and I/O included); wall: the sum over "
             "the families. Scored against the whole reference (core columns).", "",
             "| aligner | families | mean SP | mean TC | wall s |", "|---|---|---|---|---|"]
    for e in entries:
        lines.append(f"| {e['label']} | {e['n_ok']}/{e['n']} | {e['mean_sp']} | {e['mean_tc']} | {e['wall_s']:.2f} |"
                     + (f" failed: {e['error']}" if e["error"] else ""))
    report.write_result(args, "merge", doc, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def register(sub) -> None:
    p = sub.add_parser("merge", help="merging alignments, msagpu against MAFFT --merge")
    p.add_argument("--data", required=True, help="a BAliBASE-layout folder or .tar.gz")
    p.add_argument("--sets", type=lambda v: [s for s in v.split(",") if s], default=["RV12"])
    p.add_argument("--limit", type=int, default=None, help="at most K families per set")
    p.add_argument("--parts", type=int, default=2, help="slices each reference is cut into (default 2)")
    p.add_argument("--accurate", action="store_true", help="also accurate mode and MAFFT L-INS-i's merge")
    p.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--peer-prefix", default=None, help="where MAFFT's .deb was unpacked (PREFIX/usr/bin/mafft)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    p.add_argument("--tag", default=None)
    p.set_defaults(func=cmd_merge)
