"""``make fuzz``: malformed inputs through the parser and the CLI.

Each case mutates a valid FASTA text (bytes flipped, inserted, deleted or
truncated; headers broken; NULs, CRLF, gaps, gzip bodies cut short) and runs
``msagpu align`` in process. Acceptance: no traceback, exit code 0 or 2,
and no output or temporary file after a failure; after a success, a valid
alignment of the input: rows of one length whose residues, gaps removed, are
the input's sequences as msagpu reads them, under the same names, in input
order (`alignment_problem`). Failing inputs are written to ``--keep`` for
regression tests; the counts go to ``--counts`` (JSON).
``python tests/fuzz_cli.py --cases 10000 --seed 0 --counts benchmarks/results/fuzz.json``
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app
from msa_gpu.io import read_aligned, read_sequences

LETTERS = b"ACDEFGHIKLMNPQRSTVWYXBZUOJ*acgtu"


def valid(rng: random.Random) -> bytes:
    out = []
    for i in range(rng.randint(1, 6)):
        seq = bytes(rng.choice(LETTERS[:20]) for _ in range(rng.randint(1, 40)))
        out.append(b">s%d desc\n" % i + seq + b"\n")
    return b"".join(out)


def mutate(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(10)
    b = bytearray(data)
    if kind == 0 and b:  # flip bytes
        for _ in range(rng.randint(1, 5)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1:  # insert junk
        for _ in range(rng.randint(1, 5)):
            b[rng.randint(0, len(b)):rng.randint(0, len(b))] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    elif kind == 2 and b:  # delete a slice
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, 10)]
    elif kind == 3:  # truncate
        b = b[: rng.randint(0, len(b))]
    elif kind == 4:  # break or duplicate headers
        b = b.replace(b">s1 desc", rng.choice([b">", b">s0 desc", b"s1", b">>s1", b"> "]))
    elif kind == 5:  # NULs and control characters
        b[rng.randint(0, len(b)):rng.randint(0, len(b))] = rng.choice([b"\x00", b"\x1b[0m", b"\x7f", b"\t"])
    elif kind == 6:  # line ends
        b = b.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n", b" \n"]))
    elif kind == 7:  # gaps
        b = b.replace(b"A", rng.choice([b"-", b".", b"A-", b"--"]))
    elif kind == 8:  # gzip, maybe cut short
        z = gzip.compress(bytes(b))
        b = bytearray(z[: rng.randint(0, len(z))] if rng.random() < 0.5 else z)
    return bytes(b)


def alignment_problem(src: Path, out: Path) -> str | None:
    """Why ``out`` is not a valid alignment of ``src`` (None when it is): rows
    of one length, and, gaps removed, the input's sequences (as msagpu reads
    them) under the same names in the same order."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (gaps removed from the input: said on stderr by the CLI)
        seqs = read_sequences(src)
    try:
        _, rows = read_aligned(out)
        # titles byte for byte, as msagpu reads them (Biopython's parser strips trailing blanks)
        text = out.read_bytes().decode("utf-8", errors="surrogateescape")  # (no newline translation)
        names = [line[1:].rstrip("\r") for line in text.split("\n") if line.startswith(">")]
    except Exception as exc:
        return f"output unreadable: {exc}"
    if len({len(r) for r in rows}) != 1:
        return "rows differ in length"
    if names != list(seqs.names):
        return "names differ from the input's"
    if [r.replace(b"-", b"") for r in rows] != list(seqs.raw):
        return "residues differ from the input's"
    return None


def run(cases: int, seed: int, keep: Path | None) -> dict:
    rng = random.Random(seed)
    runner = CliRunner()
    counts = {"cases": 0, "ok": 0, "rejected": 0, "tracebacks": 0, "partial_files": 0, "bad_exit": 0,
              "invalid_output": 0}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for k in range(cases):
            data = mutate(valid(rng), rng) if rng.random() < 0.9 else mutate(mutate(valid(rng), rng), rng)
            src = work / f"case{k}.fa"
            src.write_bytes(data)
            out = work / f"out{k}.fa"
            r = runner.invoke(app, ["align", str(src), "-o", str(out), "--backend", "cpu", "-q"])
            counts["cases"] += 1
            problem = None
            if "Traceback" in r.output or (r.exception is not None and not isinstance(r.exception, SystemExit)):
                counts["tracebacks"] += 1
                problem = "traceback"
            elif r.exit_code == 0:
                counts["ok"] += 1
                why = alignment_problem(src, out)
                if why is not None:
                    counts["invalid_output"] += 1
                    problem = f"invalid output: {why}"
            elif r.exit_code == 2:
                counts["rejected"] += 1
            else:
                counts["bad_exit"] += 1
                problem = f"exit {r.exit_code}"
            leftovers = [p for p in work.iterdir() if p.name.startswith(".")]
            if (r.exit_code != 0 and out.exists()) or leftovers:
                counts["partial_files"] += 1
                problem = problem or "partial file"
                for p in leftovers:
                    p.unlink()
            if problem and keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / f"case{seed}-{k}.fa").write_bytes(data)
                print(f"case {k}: {problem}: {r.output.strip()[-300:]}", file=sys.stderr)
            src.unlink()
            if out.exists():
                out.unlink()
    counts["seconds"] = round(time.perf_counter() - t0, 1)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=Path("tests/fuzz-failures"))
    ap.add_argument("--counts", type=Path, default=None, help="write the counts here (JSON)")
    args = ap.parse_args()
    counts = run(args.cases, args.seed, args.keep)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    if args.counts is not None:
        doc = {"command": f"python tests/fuzz_cli.py --cases {args.cases} --seed {args.seed}",
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.machine()})",
               "seed": args.seed, "counts": counts}
        args.counts.parent.mkdir(parents=True, exist_ok=True)
        args.counts.write_text(json.dumps(doc, indent=1) + "\n")
    bad = counts["tracebacks"] + counts["partial_files"] + counts["bad_exit"] + counts["invalid_output"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
