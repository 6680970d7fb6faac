"""Device-to-host copy speed into fresh, touched, pinned and pre-faulted host
memory (``python -m benchmarks.d2h [MiB]``): why `pairwise_gpu._fresh` exists.
Prints the best of 3 runs of each variant."""

from __future__ import annotations

import sys
import time

import numpy as np


def main(mib: int = 272) -> None:
    import cupy as cp
    import cupyx

    from msa_gpu.backend.pairwise_host import _fresh

    n = mib * (1 << 20) // 4
    d = cp.arange(n, dtype=cp.uint32)
    cp.cuda.Device().synchronize()

    def best(name, fn):
        t = min(_timed(fn) for _ in range(3))
        print(f"{name:40s} {t * 1e3:7.1f} ms  {n * 4 / t / 1e9:5.1f} GB/s")

    touched = np.ones(n, np.uint32)
    pinned = cupyx.empty_pinned(n, np.uint32)
    best("get into a new np.empty", lambda: d.get(out=np.empty(n, np.uint32)))
    best("get into touched memory", lambda: d.get(out=touched))
    best("get into pinned memory (allocated once)", lambda: d.get(out=pinned))
    best("touch a new array (page faults only)", lambda: np.empty(n, np.uint32).fill(0))
    best("_fresh (8-thread pre-fault) + get", lambda: d.get(out=_fresh(n, np.uint32)))


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 272)
