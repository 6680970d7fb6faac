"""Adding sequences to an existing alignment: msagpu against MAFFT's
``--add`` and ``--addfragments``, in one run.

``python -m benchmarks add --existing 1000 --new 10000 --fragment 100
--backend gpu`` evolves a synthetic family (`benchmarks.synthetic`), takes
the true alignment of its first ``--existing`` sequences as the existing
alignment, and cuts a fragment of ``--fragment`` residues (0: the whole
sequence) from each of ``--new`` other sequences. Every aligner adds them
with ``--keeplength``, so the columns are the existing ones, and is scored
by placement: the share of the new residues whose true column is an
existing column that land in that column.

Timing: MAFFT runs as a subprocess on the FASTA files (start-up and file I/O
included). msagpu is timed twice: the same way, ``msagpu align --add`` as a
subprocess on the same files (the row to compare), and in process on the
sequences in memory (`add_sequences`; no start-up, parsing or writing).
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import report
from .synthetic import evolve_family


def _fasta(path: Path, names, rows) -> None:
    with open(path, "wb") as fh:
        for n, r in zip(names, rows):
            fh.write(b">" + n.encode() + b"\n" + r + b"\n")


def placement(rows: list[bytes], truth: list[np.ndarray]) -> float:
    """Share of residues with a true existing column that sit in it."""
    hit = total = 0
    for row, cols in zip(rows, truth):
        got = np.flatnonzero(np.frombuffer(row, dtype=np.uint8) != ord("-"))
        scored = cols >= 0
        total += int(scored.sum())
        if len(got) == len(cols):
            hit += int((got[scored] == cols[scored]).sum())
    return hit / max(total, 1)


def cmd_add(args) -> int:
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.io import make_sequences, read_aligned
    from msa_gpu.progressive import add_sequences

    rng = np.random.default_rng(args.seed)
    fam = evolve_family(args.existing + args.new, args.length, seed=args.seed)
    cols, ex_rows = fam.true_rows(range(args.existing))
    names, raw, truth = [], [], []
    for i in range(args.existing, args.existing + args.new):
        s, p = fam.sequences[i], fam.positions[i]
        a = int(rng.integers(0, max(1, len(s) - args.fragment + 1))) if args.fragment else 0
        b = a + args.fragment if args.fragment else len(s)
        names.append(f"new{i}")
        raw.append(s[a:b])
        pos = p[a:b]
        idx = np.searchsorted(cols, pos).clip(0, len(cols) - 1)
        truth.append(np.where(cols[idx] == pos, idx, -1))
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    ex_path, new_path = work / "existing.fa", work / "new.fa"
    _fasta(ex_path, fam.names[: args.existing], ex_rows)
    _fasta(new_path, names, raw)
    entries = []
    new = make_sequences(names, raw, "protein")
    t0 = time.perf_counter()
    _, rows = add_sequences(fam.names[: args.existing], ex_rows, new, AlignerConfig(backend=args.backend),
                            keeplength=True)
    entries.append({"label": f"msagpu add_sequences ({args.backend}; in process, sequences in memory)",
                    "wall_s": time.perf_counter() - t0, "placement": placement(rows[args.existing:], truth)})
    print(entries[-1], file=sys.stderr, flush=True)
    out = work / "msagpu.fa"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "msa_gpu", "align", "--add", str(new_path), "--existing", str(ex_path),
                           "--keeplength", "-o", str(out), "--backend", args.backend, "-q"], stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        entries.append({"label": "msagpu align --add --keeplength (CLI)", "error": proc.stderr.decode()[-300:]})
    else:
        got = dict(zip(*read_aligned(out)))
        entries.append({"label": f"msagpu align --add --keeplength ({args.backend}; subprocess on the files, as MAFFT)",
                        "wall_s": wall, "placement": placement([got[n] for n in names], truth)})
    print(entries[-1], file=sys.stderr, flush=True)
    mafft = shutil.which("mafft", path=os.pathsep.join([args.peer_prefix + "/usr/bin", os.environ.get("PATH", "")])
                         if args.peer_prefix else None)
    for flag in args.mafft:
        if not mafft:
            entries.append({"label": f"mafft {flag} --keeplength", "error": "MAFFT not found"})
            continue
        out = work / f"mafft{flag}.fa"
        t0 = time.perf_counter()
        try:
            with open(out, "wb") as fh:
                proc = subprocess.run([mafft, "--quiet", "--thread", str(os.cpu_count()), flag, str(new_path),
                                       "--keeplength", str(ex_path)], stdout=fh, stderr=subprocess.PIPE,
                                      timeout=args.timeout)
        except subprocess.TimeoutExpired:
            entries.append({"label": f"mafft {flag} --keeplength", "error": f"not finished in {args.timeout:g} s"})
            print(entries[-1], file=sys.stderr, flush=True)
            continue
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            entries.append({"label": f"mafft {flag} --keeplength", "error": proc.stderr.decode()[-300:]})
            continue
        m_names, m_rows = read_aligned(out)
        got = dict(zip(m_names, m_rows))
        entries.append({"label": f"mafft {flag} --keeplength", "wall_s": wall,
                        "placement": placement([got[n].upper() for n in names], truth)})
        print(entries[-1], file=sys.stderr, flush=True)
    doc = {"benchmark": "add", "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": report.machine_info(), "existing": args.existing, "new": args.new, "fragment": args.fragment,
           "length": args.length, "seed": args.seed, "entries": entries,
           "command": "python -m benchmarks add " + " ".join(sys.argv[2:])}
    lines = [f"## Adding {args.new:,} {'fragments of ' + str(args.fragment) if args.fragment else 'sequences'} "
             f"to a {args.existing:,}-sequence alignment ({doc['created']})", "",
             f"Machine: {doc['machine']['cpu_model']}, {doc['machine']['cpu_count']} CPUs, GPUs: "
             f"{'; '.join(doc['machine']['gpus']) or 'none'}. Command: `{doc['command']}`.", "",
             "MAFFT and the msagpu CLI row run as subprocesses on the FASTA files (start-up and I/O included); "
             "the add_sequences row is msagpu in process on sequences in memory.", "",
             "| aligner | wall s | placement |", "|---|---|---|"]
    for e in entries:
        lines.append(f"| {e['label']} | {e['wall_s']:.2f} | {e['placement']:.4f} |" if "error" not in e
                     else f"| {e['label']} | failed: {e['error']} | |")
    report.write_result(args, "add", doc, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def register(sub) -> None:
    p = sub.add_parser("add", help="adding sequences to an existing alignment, msagpu against MAFFT")
    p.add_argument("--existing", type=int, default=1000)
    p.add_argument("--new", type=int, default=10000)
    p.add_argument("--fragment", type=int, default=100, help="fragment length (0: whole sequences)")
    p.add_argument("--length", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per MAFFT run")
    p.add_argument("--mafft", type=lambda v: [f for f in v.split(",") if f], default=["--add", "--addfragments"],
                   help="MAFFT modes to run, comma-separated (default --add,--addfragments; '' for none)")
    p.add_argument("--peer-prefix", default=None, help="where MAFFT's .deb was unpacked (PREFIX/usr/bin/mafft)")
    p.add_argument("--work", default="/tmp/msagpu-add")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    p.add_argument("--tag", default=None)
    p.set_defaults(func=cmd_add)
