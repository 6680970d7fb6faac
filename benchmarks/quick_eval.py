"""Quick in-process accuracy check on a BAliBASE folder (for tuning).

python -m benchmarks.quick_eval DIR [--every K] [key=value ...]
"""
from __future__ import annotations

import sys
import time
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

from msa_gpu.aligner import Aligner
from msa_gpu.config import AlignerConfig
from msa_gpu.io import read_aligned, read_core, read_sequences
from msa_gpu.score import sp_tc

CFG = {}


def one(tfa: Path):
    seqs = read_sequences(tfa)
    res = Aligner(AlignerConfig(**{"backend": "cpu", "threads": 1, **CFG})).align(seqs)
    ref = tfa.with_suffix(".ref.fa")
    rn, rr = read_aligned(ref)
    sc = sp_tc(list(seqs.names), res.rows(), rn, rr, read_core(tfa.with_suffix(".core")))
    return tfa.parent.name, tfa.stem, sc.sp, sc.tc


def main(argv):
    root = Path(argv[0])
    every, workers = 1, 2
    for a in argv[1:]:
        k, v = a.split("=")
        if k == "every":
            every = int(v)
        elif k == "workers":
            workers = int(v)
        elif k == "backend":
            CFG[k] = v
        else:
            CFG[k] = type(getattr(AlignerConfig(), k) if getattr(AlignerConfig(), k) is not None else 1.0)(v) if k not in ("tree",) else v
    files = sorted(root.glob("RV*/*.tfa"))[::every]
    t = time.time()
    with Pool(workers, initializer=CFG.update, initargs=(dict(CFG),)) as pool:
        rows = pool.map(one, files, chunksize=1)
    per = defaultdict(list)
    for s, _, sp, tc in rows:
        per[s].append((sp, tc))
    for s in sorted(per):
        v = per[s]
        print(f"{s} n={len(v)} SP={sum(x for x, _ in v)/len(v):.3f} TC={sum(y for _, y in v)/len(v):.3f}")
    print(f"ALL n={len(rows)} SP={sum(r[2] for r in rows)/len(rows):.4f} TC={sum(r[3] for r in rows)/len(rows):.4f} "
          f"time={time.time()-t:.1f}s cfg={CFG}")


if __name__ == "__main__":
    main(sys.argv[1:])
