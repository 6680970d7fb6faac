"""The posterior library's GPU kernels against a baseline, on the same pairs:
``python -m benchmarks.library_speed --data balibase3.tar.gz [--baseline
benchmarks/baselines/posterior_0935b3f.cu] [--out DIR]`` (issue 43).

For every pair of every family (all families of the data, one group):

1. the pair-HMM posteriors of every cell (`pair_posteriors`), the baseline
   kernel's and today's, timed with device events (median of ``--repeat``
   after a warm-up), as G cells/s; their bits compared;
2. one consistency transformation of the cut posteriors (`consistency_pairs`),
   both kernels, timed; their entries compared (today's sums are fixed
   point, the baseline's double: a value may round to another float);
3. the whole library (`posterior_libraries`, the accurate mode's stage), by
   phase: posteriors with their extraction, expected identities, and each
   pass's ordered CSR and transformation.

Writes ``<out>/<tag>-library-speed.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import time
from pathlib import Path

import numpy as np

from benchmarks import datasets
from msa_gpu.backend import budget_chunks, offsets

BASELINE = Path(__file__).resolve().parent / "baselines" / "posterior_0935b3f.cu"


def _families(path: str, sets) -> list:
    from msa_gpu.io import read_sequences
    from msa_gpu.progressive import distinct

    with datasets.open_dataset(path, sets) as ds:
        fams = [read_sequences(f.input_path) for f in datasets.select(ds, sets)]
    # the distinct sequences, as accurate mode builds its library; one alphabet (the first family's)
    fams = [distinct(f)[0] for f in fams if len(f) >= 2]
    return [f for f in fams if len(f) >= 2 and f.seqtype == fams[0].seqtype]


def _timed(fn, repeat: int) -> tuple[float, object]:
    """Median device seconds of ``fn()`` after one warm-up, and its last result."""
    import cupy as cp

    out = fn()
    times = []
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        out = fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times)), out


def _baseline_posteriors(kernel, d_codes, offs, pairs, L1, L2, model, A):
    """The baseline kernel's launch: one block of 128 threads a pair, in one launch."""
    import cupy as cp

    ns = 5
    post_off, ring_off, scale_off = offsets(L1 * L2), offsets(3 * (L1 + 1) * ns), offsets(2 * (L1 + L2 + 1))
    post = cp.empty(max(int(post_off[-1]), 1), dtype=cp.float64)
    ring = cp.empty(max(int(ring_off[-1]), 1), dtype=cp.float64)
    scales = cp.empty(max(int(scale_off[-1]), 1), dtype=cp.int32)
    kernel((len(pairs),), (128,),
           (d_codes, cp.asarray(offs[pairs[:, 0]]), cp.asarray(offs[pairs[:, 1]]), cp.asarray(L1.astype(np.int32)),
            cp.asarray(L2.astype(np.int32)), *model, np.int32(A), post, cp.asarray(post_off[:-1].copy()), ring,
            cp.asarray(ring_off[:-1].copy()), scales, cp.asarray(scale_off[:-1].copy())))
    return post[: int(post_off[-1])], post_off


def _baseline_consistency(kernel, indptr, indices, data, base, lengths, nq, bq, lq, ps, pt, cutoff, block_bytes):
    """The baseline kernel's launch: one block of 128 threads a pair, a
    launch a chunk of pairs; the kept entries as flat (q, x, y, p)."""
    import cupy as cp

    from msa_gpu.backend.posterior_gpu import _concat, _kept

    ls, lt = lengths[lq + ps], lengths[lq + pt]
    parts = []
    for c in budget_chunks(8 * ls * lt, block_bytes):
        off = offsets(ls[c] * lt[c])
        dense = cp.empty(max(int(off[-1]), 1), dtype=cp.float64)
        per_pair = [cp.asarray(np.ascontiguousarray(a[c]).astype(dt)) for a, dt in
                    ((nq, np.int32), (bq, np.int64), (lq, np.int64), (ps, np.int32), (pt, np.int32))]
        kernel((len(c),), (128,), (indptr, indices, data, base, cp.asarray(lengths), *per_pair, dense,
                                   cp.asarray(off[:-1].copy()), np.float64(cutoff)))
        dense = dense[: int(off[-1])]
        parts.append(_kept(dense, off, lt[c], c))
    return _concat(parts)


def _compare(want, got) -> dict:
    """How two transformations' flat (q, x, y, p) differ: the same bits, the
    same entries, and where the entries are the same, how many values differ
    and by how much (the fixed-point sums against the baseline's double
    ones round to another float now and then)."""
    import cupy as cp

    out = {"same_bits": all(bool(cp.array_equal(a, b)) for a, b in zip(want, got)),
           "entries": [int(len(want[0])), int(len(got[0]))]}
    out["same_entries"] = len(want[0]) == len(got[0]) and all(bool(cp.array_equal(a, b)) for a, b in
                                                                zip(want[:3], got[:3]))
    if out["same_entries"]:
        a, b = want[3].astype(cp.float64), got[3].astype(cp.float64)
        out["values_differ"] = int(cp.count_nonzero(a != b))
        out["max_rel_diff"] = float(cp.max(cp.abs(a - b) / a)) if len(a) else 0.0
    return out


def run(args) -> dict:
    import cupy as cp

    from msa_gpu.backend import posterior_gpu as pg
    from msa_gpu.consistency import probabilistic as pr
    from msa_gpu.consistency.pairhmm import model_for

    fams = _families(args.data, args.sets)
    model = model_for(fams[0].alphabet)  # ProbCons' for protein, ProbConsRNA's for nucleotides
    group = pr._Group(fams)
    codes = [c for f in fams for c in f.codes]
    lens = np.array([len(c) for c in codes], np.int64)
    offs = offsets(lens)[:-1]
    d_codes = cp.asarray(np.concatenate(codes).astype(np.uint8))
    dmodel = [cp.asarray(np.ascontiguousarray(a, dtype=np.float64)) for a in (model.init, model.trans, model.pair,
                                                                              model.single)]
    A = int(model.pair.shape[0])
    pairs = group.glob
    L1, L2 = lens[pairs[:, 0]], lens[pairs[:, 1]]
    cells = int((L1 * L2).sum())
    batch = args.batch_bytes or pg.block_bytes()
    chunks = budget_chunks(8 * L1 * L2, batch)
    report: dict = {"data": str(args.data), "families": len(fams), "pairs": int(len(pairs)), "cells": cells,
                    "batch_bytes": batch,
                    "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}

    variants = {"today": lambda c: pg.dense_posteriors(d_codes, offs, pairs[c], L1[c], L2[c], dmodel, A)}
    base_mod = cp.RawModule(code=Path(args.baseline).read_text(), options=("-std=c++17",)) if args.baseline else None
    if base_mod is not None:
        old = base_mod.get_function("pair_posteriors")
        variants["baseline"] = lambda c: _baseline_posteriors(old, d_codes, offs, pairs[c], L1[c], L2[c], dmodel, A)
    post = {}
    for name, fn in variants.items():
        secs, digests = 0.0, []
        for c in chunks:
            t, (flat, _) = _timed(lambda: fn(c), args.repeat)
            secs += t
            digests.append(flat.view(cp.int64).sum(dtype=cp.uint64).item())  # a checksum of the bits
        post[name] = {"seconds": secs, "gcells_per_s": cells / secs / 1e9, "digest": digests}
    if "baseline" in post:  # bit for bit, chunk by chunk
        same = True
        for c in chunks:
            same &= bool(cp.array_equal(variants["today"](c)[0].view(cp.int64), variants["baseline"](c)[0].view(cp.int64)))
        post["same_bits"] = same
        post["speedup"] = post["baseline"]["seconds"] / post["today"]["seconds"]
    report["posteriors"] = post

    flat = pr.flat_posteriors_of(codes, pairs, model, pr.CUTOFF, cp)
    csr = group.ordered_csr(flat, cp)
    nq, bq, lq = group.n[group.fam], group.ord0[group.fam], group.seq0[group.fam]
    ps, pt = group.local[:, 0], group.local[:, 1]
    cons = {}
    t, got = _timed(lambda: pg.consistency_pairs(*csr, group.lengths, nq, bq, lq, ps, pt, pr.CUTOFF, batch),
                    args.repeat)
    cons["today"] = {"seconds": t, "entries_in": int(len(flat[0])), "entries_out": int(len(got[0]))}
    if base_mod is not None:
        oldc = base_mod.get_function("consistency_pairs")
        d_csr = [cp.asarray(a) for a in csr]
        d_csr[2] = d_csr[2].astype(cp.float64)  # the baseline reads doubles: the stored floats, widened
        t, want = _timed(lambda: _baseline_consistency(oldc, *d_csr, group.lengths, nq, bq, lq, ps, pt, pr.CUTOFF,
                                                       batch), min(args.repeat, 1))
        cons["baseline"] = {"seconds": t}
        cons.update(_compare(want, got))
        cons["speedup"] = t / cons["today"]["seconds"]
    report["transformation"] = cons
    del flat, csr, got

    report["library"] = _phases(fams, pr, cp)
    return report


def _phases(fams, pr, cp) -> dict:
    """posterior_libraries' wall seconds by phase (device synchronised after
    each), the second of two runs."""
    phases: dict = {}
    originals = {k: getattr(pr._Group, k) for k in ("posteriors", "expected_identity", "ordered_csr", "transformed")}

    def wrap(name):
        def timed(self, *a, **k):
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            out = originals[name](self, *a, **k)
            cp.cuda.Device().synchronize()
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - t
            return out
        return timed

    for k in originals:
        setattr(pr._Group, k, wrap(k))
    try:
        for _ in range(2):
            phases.clear()
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            pr.posterior_libraries(fams, xp=cp)
            cp.cuda.Device().synchronize()
            phases["total"] = time.perf_counter() - t
    finally:
        for k, v in originals.items():
            setattr(pr._Group, k, v)
    return phases


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--sets", nargs="*")
    ap.add_argument("--baseline", default=str(BASELINE), help="a posterior.cu to compare with ('' for none)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch-bytes", type=int, help="dense bytes a launch (default: posterior_gpu.block_bytes())")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--tag", default=_dt.date.today().isoformat())
    args = ap.parse_args(argv)
    report = run(args)
    out = Path(args.out) / f"{args.tag}-library-speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    post, cons = report["posteriors"], report["transformation"]
    print(f"{report['device']}: {report['families']} families, {report['pairs']:,} pairs, {report['cells'] / 1e9:.2f} G cells")
    for name in ("baseline", "today"):
        if name in post:
            print(f"posteriors {name:8s} {post[name]['seconds']:8.3f} s  {post[name]['gcells_per_s']:7.2f} G cells/s")
    if "speedup" in post:
        print(f"posteriors: {post['speedup']:.2f}x, same bits: {post['same_bits']}")
    for name in ("baseline", "today"):
        if name in cons:
            print(f"transformation {name:8s} {cons[name]['seconds']:8.3f} s")
    if "speedup" in cons:
        print(f"transformation: {cons['speedup']:.2f}x, same bits: {cons['same_bits']}, same entries: "
              f"{cons['same_entries']}, values differing: {cons.get('values_differ')} of {cons['entries']}, "
              f"largest relative difference {cons.get('max_rel_diff')}")
    print("library phases (s):", {k: round(v, 3) for k, v in report["library"].items()})
    print("wrote", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
