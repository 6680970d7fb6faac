"""LCS engine timing on one family: `python -m benchmarks.lcs_timing FAMILY.fa` (GPU).

The LCS of every pair, the distance matrix and the single-linkage tree, each
timed twice after one warm-up (the figures in NOTES, issue 28)."""
import sys, time, numpy as np, cupy
from msa_gpu.io import read_sequences
from msa_gpu.distances import lcs_distance
from msa_gpu.distances.lcs import lcs_upper
from msa_gpu.tree import single_linkage
s = read_sequences(sys.argv[1], "protein")
lcs_upper(s, cupy); cupy.cuda.Device().synchronize()
for k in range(2):
    t = time.perf_counter(); u = lcs_upper(s, cupy); t1 = time.perf_counter() - t
    t = time.perf_counter(); dm = lcs_distance(s, cupy); t2 = time.perf_counter() - t
    t = time.perf_counter(); tr = single_linkage(dm); t3 = time.perf_counter() - t
    n = len(s); L = s.lengths.astype(float); cells = (np.outer(L, L).sum() - (L * L).sum()) / 2
    print(f"n={n} lcs_upper {t1:.2f} s ({cells / t1 / 1e9:.1f} G cells/s), lcs_distance {t2:.2f} s, single_linkage {t3:.2f} s")
