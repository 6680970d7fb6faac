"""cProfile of one in-process align_many over a Balifam set on the GPU, and
each family's guide-tree depth and alignment width:

    python -m benchmarks.profile_set balifam10000 distance=lcs tree=single

(the matrices dropped once their trees are built, as the CLI runs)

(run from the repository root, with the archive at .ck/balifam.tar.gz)."""
import cProfile, pstats, sys, time, io
import numpy as np
from benchmarks import datasets
from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences, read_sequences
from msa_gpu.tree import single_linkage
from msa_gpu.distances import lcs_distance
import cupy
kw = dict(a.split("=") for a in sys.argv[2:])
with datasets.open_dataset(".ck/balifam.tar.gz", [sys.argv[1]]) as ds:
    fams = datasets.select(ds, [sys.argv[1]], None)
    seqs = []
    for fam in fams:
        s = read_sequences(fam.input_path, "protein")
        seqs.append(make_sequences(list(s.names), [r.upper() for r in s.raw], "protein"))
al = Aligner(AlignerConfig(backend="gpu", keep_distances=False, **kw))  # as the CLI runs
al.align_many(seqs[:1])  # warm
pr = cProfile.Profile()
t = time.perf_counter()
pr.enable()
res = al.align_many(seqs)
pr.disable()
print("wall", round(time.perf_counter() - t, 1), {k: round(v, 2) for k, v in res[0].timings.items()})
for r in res:
    tr = r.guide_tree; n = tr.n_leaves
    depth = np.zeros(2 * n - 1, int)
    for k, (a, b) in enumerate(tr.children):
        depth[n + k] = max(depth[a], depth[b]) + 1
    print("n", n, "depth", depth.max(), "columns", r.alignment.trace.shape[1])
for key in ("cumulative", "tottime"):
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats(key).print_stats(28); print(s.getvalue()[-6000:])
