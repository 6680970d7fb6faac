"""The pair-HMM library's memory plan against its measured peak (issue 58, capability 3).

    python -m benchmarks.library_peak FASTA... [--most 200] [--backend gpu|cpu] [--out FILE.json]

For each input family (each cut, as accurate mode cuts a family of more than ``--most`` sequences, into its
subtrees: the largest subtree is measured, and the whole family where it is no larger), the library is built
alone (`posterior_libraries`, one family at a time) and its peak memory is measured: on the GPU the CuPy pool's
bytes in use at every allocation (a counting allocator over the default pool: the high-water mark of the
arrays alive, not the pool's cache), on the CPU the process's peak RSS growth over the build (`ru_maxrss`, a
new high only). The plan is `library_memory` of the measured family or subtree alone (for a family cut into
subtrees the command line plans more: stand-ins for all its subtrees, built in groups, `subtrees.plan_pieces`). Prints
a row a family and writes the ratios (plan / peak: at least 1 where the plan holds, at most 2 for the issue's
bar) to JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.consistency import library_memory, posterior_libraries
from msa_gpu.io import read_sequences
from msa_gpu.pipeline.subtrees import cut_at_most, subset, subtrees


def _largest_piece(seqs, most: int, backend: str):
    """The largest subtree accurate mode cuts ``seqs`` into (itself where it is no larger than ``most``)."""
    if len(seqs) <= most:
        return seqs
    tree = Aligner(AlignerConfig(backend=backend, mode="fast")).align(seqs).guide_tree
    members = max((m for m, _ in subtrees(tree, cut_at_most(tree, most))), key=len)
    return subset(seqs, members)


def _gpu_peak(build) -> int:
    import cupy as cp

    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    base, peak = pool.used_bytes(), [0]

    def malloc(size):
        mem = pool.malloc(size)
        peak[0] = max(peak[0], pool.used_bytes() - base)
        return mem

    cp.cuda.set_allocator(malloc)
    try:
        build()
        cp.cuda.Device().synchronize()
    finally:
        cp.cuda.set_allocator(pool.malloc)
    return peak[0]


def _cpu_peak(build) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    build()
    return max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--most", type=int, default=AlignerConfig.accurate_subtree_seqs)
    ap.add_argument("--backend", choices=["cpu", "gpu"], default="gpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    gpu = args.backend == "gpu"
    if gpu:
        import cupy as xp
    else:
        xp = np
    rows = []
    first = read_sequences(args.inputs[0])  # compiles and loads the kernels before any measurement
    posterior_libraries([subset(first, np.arange(min(3, len(first))))], xp=xp)
    for path in args.inputs:
        seqs = _largest_piece(read_sequences(path), args.most, args.backend)
        if len(seqs) < 2:
            continue
        plan = library_memory([seqs], gpu)
        planned = plan.device_gb * 1e9 if gpu else plan.host_gb * 1e9
        clock = time.perf_counter()
        peak = (_gpu_peak if gpu else _cpu_peak)(lambda: posterior_libraries([seqs], xp=xp))
        row = {"family": Path(path).name, "n": len(seqs), "mean_length": round(seqs.mean_length, 1),
               "planned_gb": round(planned / 1e9, 4), "peak_gb": round(peak / 1e9, 4),
               "plan_over_peak": round(planned / peak, 3) if peak else None,
               "seconds": round(time.perf_counter() - clock, 3)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    ratios = [r["plan_over_peak"] for r in rows if r["plan_over_peak"]]
    if ratios:
        print(f"plan / peak over {len(ratios)} families: min {min(ratios):.2f}, median {np.median(ratios):.2f}, "
              f"max {max(ratios):.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"backend": args.backend, "most": args.most, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
