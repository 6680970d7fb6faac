"""Accuracy grid for choosing defaults, in-process on many cores.

    python -m benchmarks.tune DIR "gap_open=11 gap_pair=0.6" "retree=2" ... [--workers 16]

Each argument is one configuration (AlignerConfig fields). Every family of
DIR (BAliBASE layout) is aligned with the CPU backend and scored; the table
gives the mean SP/TC over all families and over the even- and odd-numbered
halves, so a setting that only fits one half shows up.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import fields
from multiprocessing import Pool
from pathlib import Path

from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import read_aligned, read_core, read_sequences
from msa_gpu.accuracy import sp_tc

_TYPES = {f.name: f.type for f in fields(AlignerConfig)}


def parse_config(text: str) -> dict:
    """'gap_open=11 retree=2' -> {'gap_open': 11.0, 'retree': 2}: numbers
    and flags by their field's type, anything else (modes, methods, names)
    as written.

    >>> parse_config("gap_open=11 retree=2 mode=fast gap_scaling=false matrix=PFASUM43")
    {'gap_open': 11.0, 'retree': 2, 'mode': 'fast', 'gap_scaling': False, 'matrix': 'PFASUM43'}
    """
    out: dict = {}
    for item in text.split():
        key, value = item.split("=", 1)
        kind = str(_TYPES[key])
        out[key] = (value.lower() in ("1", "true", "yes") if kind == "bool" else int(value) if kind.startswith("int")
                    else float(value) if kind.startswith("float") else value)
    return out


def score_family(job: tuple[Path, dict]) -> tuple[str, str, float, float]:
    tfa, cfg = job
    seqs = read_sequences(tfa)
    res = Aligner(AlignerConfig(**{"backend": "cpu", "threads": 1, **cfg})).align(seqs)
    names, rows = read_aligned(tfa.with_suffix(".ref.fa"))
    s = sp_tc(list(seqs.names), res.rows(), names, rows, read_core(tfa.with_suffix(".core")))
    return tfa.parent.name, tfa.stem, s.sp, s.tc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("data", type=Path)
    ap.add_argument("configs", nargs="*", default=[""])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--every", type=int, default=1)
    args = ap.parse_intermixed_args()
    files = sorted(args.data.glob("RV*/*.tfa"))[:: args.every]
    print("| config | SP | TC | even SP/TC | odd SP/TC | " + " | ".join(sorted({f.parent.name for f in files})) + " | s |")
    with Pool(args.workers) as pool:
        for text in args.configs:
            cfg = parse_config(text)
            clock = time.time()
            rows = pool.map(score_family, [(f, cfg) for f in files], chunksize=1)
            sets = defaultdict(list)
            for i, (s, _, sp, tc) in enumerate(rows):
                sets[s].append((sp, tc))
                sets["even" if i % 2 == 0 else "odd"].append((sp, tc))

            def mean(v):
                return sum(x for x, _ in v) / len(v), sum(y for _, y in v) / len(v)

            sp, tc = mean([(r[2], r[3]) for r in rows])
            per = " | ".join("%.3f/%.3f" % mean(sets[k]) for k in sorted(sets) if k.startswith("RV"))
            print(f"| {text or 'defaults'} | {sp:.4f} | {tc:.4f} | %.3f/%.3f | %.3f/%.3f | {per} | {time.time() - clock:.0f} |"
                  % (*mean(sets["even"]), *mean(sets["odd"])), flush=True)


if __name__ == "__main__":
    main()
