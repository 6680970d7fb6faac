"""Issue 58's candidate (a), a probe: accurate subtrees, on the CPU.

``python -m benchmarks.accurate_subtrees DATA K NMAX [OUT.json [TREE]]``: for each family of the unpacked benchmark
folder DATA (an ``index.tsv`` and ``<subset>/<id>.tfa[.gz]``, ``.ref.fa``, ``.core``) of at most NMAX
sequences (``NMIN:NMAX``: at least NMIN too), the default run's guide tree is cut into clades of at most K sequences (`subtrees.cut`, the
largest split first); each clade is aligned in accurate mode (its own pair-HMM library and tree, one
`align_many` call for all); the clades' profiles are merged along the tree above the cut with the family's
default scoring. TREE (``upgma``, ``nj``, ...) cuts and merges along that tree on k-mer distances
instead of the default run's. Prints and writes each family's SP/TC beside the default run's (same process, CPU
backend, no dedupe). A probe, not the product: it reads two private pieces (`spread._subset`,
`Aligner.scoring`)."""
import gzip, json, sys, time
from pathlib import Path
import numpy as np
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.pipeline.subtrees import subset as _subset
from msa_gpu.pipeline.subtrees import cut, subtrees, top_schedule
from msa_gpu.io import make_sequences, parse_fasta, read_aligned, read_core
from msa_gpu.progressive import FamilyJob, Profile, alignment_codes, progressive_align
from msa_gpu.accuracy import sp_tc
from msa_gpu.tree import leaf_order, sequence_weights

root, K = Path(sys.argv[1]), int(sys.argv[2])
NMIN, NMAX = (int(v) for v in sys.argv[3].split(":")) if ":" in sys.argv[3] else (0, int(sys.argv[3]))
index = [l.split("\t") for l in (root / "index.tsv").read_text().splitlines()[1:]]
fams = sorted((int(r[2]), r[0], r[1]) for r in index if NMIN <= int(r[2]) <= NMAX)
backend = cpu_backend()
out = {}
for n, fid, subset in fams:
    folder = root / subset
    tfa = folder / f"{fid}.tfa"
    text = gzip.decompress((folder / f"{fid}.tfa.gz").read_bytes()).decode() if not tfa.exists() else tfa.read_text()
    names, raw = parse_fasta(text, fid)
    seqs = make_sequences(names, [r.upper() for r in raw])
    rn, rr = read_aligned(folder / f"{fid}.ref.fa")
    core = read_core(folder / f"{fid}.core")

    def score(aln_rows):
        s = sp_tc(list(seqs.names), [r.upper() for r in aln_rows], rn, rr, core)
        return s.sp, s.tc

    cfg = AlignerConfig(dedupe=False)
    t0 = time.perf_counter()
    aligner = Aligner(cfg, backend=backend)
    base = aligner.align(seqs)
    t_base = time.perf_counter() - t0
    tree, recipe = base.guide_tree, base.recipe
    if len(sys.argv) > 5:  # cut and merge along another tree (k-mer distances)
        other = Aligner(AlignerConfig(dedupe=False, tree=sys.argv[5], distance="kmer"), backend=backend)
        tree = other.align(seqs).guide_tree
    _, start, stop = leaf_order(tree)
    parts = 1
    while True:
        roots = cut(tree, parts)
        if max(int(stop[r] - start[r]) for r in roots) <= K or parts > n:
            break
        parts += 1
    pieces = subtrees(tree, roots)
    clades = [_subset(seqs, members) for members, _ in pieces]
    t1 = time.perf_counter()
    acc = Aligner(AlignerConfig(mode="accurate", dedupe=False), backend=backend).align_many(clades)
    weights = (np.ones(n, dtype=np.int64) if recipe.weights == "equal" else sequence_weights(tree))
    initial = {r: Profile(np.asarray(m, dtype=np.int64), alignment_codes(c, a.alignment), weights[m])
               for r, (m, _), c, a in zip(roots, pieces, clades, acc)}
    job = FamilyJob(seqs, tree, top_schedule(tree, roots), weights, aligner.scoring(seqs, recipe))
    aln = progressive_align([job], backend, cfg.long_cells, initial=[initial])[0]
    t_acc = time.perf_counter() - t1
    from msa_gpu.result import AlignResult
    rows = AlignResult(seqs, aln, None, tree, None, "cpu", {}, None, recipe).rows()
    b, a = score(base.rows()), score(rows)
    out[fid] = {"n": n, "clades": len(roots), "largest": max(len(m) for m, _ in pieces), "default": b,
                "subtrees": a, "seconds_default": t_base, "seconds_subtrees": t_acc}
    print(f"{fid:14s} n={n:5d} clades={len(roots):3d} default {b[0]:.3f}/{b[1]:.3f} {t_base:6.1f}s  "
          f"subtrees {a[0]:.3f}/{a[1]:.3f} {t_acc:6.1f}s", flush=True)
    if len(sys.argv) > 4:
        json.dump(out, open(sys.argv[4], "w"), indent=1)
d = np.array([v["default"] for v in out.values()]); s = np.array([v["subtrees"] for v in out.values()])
print(f"mean over {len(out)}: default {d[:, 0].mean():.4f}/{d[:, 1].mean():.4f}  subtrees {s[:, 0].mean():.4f}/{s[:, 1].mean():.4f}")
