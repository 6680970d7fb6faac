"""Ensembles (issue 46): their cost against one alignment, the accuracy of
the replicate they choose against the default's, and whether their column
confidence predicts correct columns better than the pair-HMM column scores.

    python -m benchmarks.ensemble --data balibase3.tar.gz [--replicates 16] [--backend gpu]

One process: all families aligned once in accurate mode (one batch, timed),
then all their ensembles (`msa_gpu.workflows.ensemble.align_ensembles`, timed). For
the chosen replicate of each family, every column's residue pairs among the
reference's sequences in core columns are counted correct (the reference
aligns them) or not. Reported: mean SP/TC of the default (replicate 0) and
of the chosen replicate; the pairs' accuracy by confidence bin; and the area
under the ROC curve of each column score for telling correct pairs from
wrong ones (ties count a half), for the ensemble's confidence and for the
pair-HMM column scores of the same alignment.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import time
from pathlib import Path

import numpy as np

from benchmarks import datasets


def column_pairs(test_names, test_aln, seqs, ref_names, ref_rows, core) -> tuple[np.ndarray, np.ndarray]:
    """(correct, total) residue pairs of each test column, among the
    reference's sequences and its core columns (all columns without a mask)."""
    from msa_gpu.workflows.ensemble import residue_columns
    from msa_gpu.types import Alignment

    tcols_all = residue_columns(test_aln)
    starts = np.concatenate([[0], np.cumsum(seqs.lengths)])
    index = {n: i for i, n in enumerate(test_names)}
    ref_mask = np.frombuffer(b"".join(ref_rows), np.uint8).reshape(len(ref_rows), -1) != ord("-")
    rcols_all = residue_columns(Alignment.from_mask(ref_mask))
    rstarts = np.concatenate([[0], np.cumsum(ref_mask.sum(axis=1))])
    keep_col = (np.frombuffer(core.encode(), np.uint8) == ord("1")) if core else np.ones(ref_mask.shape[1], bool)
    t, r = [], []
    for k, name in enumerate(ref_names):
        i = index[name]
        tc = tcols_all[starts[i]: starts[i + 1]]
        rc = rcols_all[rstarts[k]: rstarts[k + 1]]
        ok = keep_col[rc]
        t.append(tc[ok])
        r.append(rc[ok])
    t, r = np.concatenate(t), np.concatenate(r)
    w = test_aln.n_cols
    total = np.bincount(t, minlength=w)
    total = total * (total - 1) // 2
    width = ref_mask.shape[1] + 1
    keys, counts = np.unique(t * width + r, return_counts=True)
    correct = np.bincount(keys // width, weights=counts * (counts - 1) // 2, minlength=w).astype(np.int64)
    return correct, total


def roc_auc(score: np.ndarray, correct: np.ndarray, total: np.ndarray) -> float:
    """The chance that a correct pair's column scores above a wrong pair's
    (ties: a half), columns weighted by their pairs."""
    wrong = total - correct
    order = np.argsort(score, kind="stable")
    s, c, w = score[order], correct[order].astype(np.float64), wrong[order].astype(np.float64)
    uniq, start = np.unique(s, return_index=True)
    c_sum = np.add.reduceat(c, start) if len(s) else c
    w_sum = np.add.reduceat(w, start) if len(s) else w
    wrong_below = np.concatenate([[0.0], np.cumsum(w_sum)[:-1]])
    pairs = c_sum.sum() * w_sum.sum()
    return float(((c_sum * wrong_below).sum() + 0.5 * (c_sum * w_sum).sum()) / pairs) if pairs else float("nan")


def read_efa(path: Path) -> list[tuple[str, list[str], list[bytes]]]:
    """An Ensemble FASTA file: (label, names, rows) a replicate."""
    out, label, names, rows = [], None, [], []
    for line in Path(path).read_text().splitlines():
        if line.startswith("<"):
            if label is not None:
                out.append((label, names, [bytes(r) for r in rows]))
            label, names, rows = line[1:].strip(), [], []
        elif line.startswith(">"):
            names.append(line[1:].strip())
            rows.append(bytearray())
        elif line.strip():
            rows[-1] += line.strip().encode()
    if label is not None:
        out.append((label, names, [bytes(r) for r in rows]))
    return out


def muscle_confidence(names: list[str], rows: list[bytes]) -> tuple[list[str], list[bytes], np.ndarray]:
    """MUSCLE 5's ``-addconfseq`` replicate: its sequences, and each column's
    confidence from the two digit rows (``73``: 0.73, ``++``: 1.0)."""
    conf = dict(zip(names, rows))
    tens, ones = conf["_conf_"], conf["_conf_2"]
    cc = np.array([1.0 if a == ord("+") else ((a - 48) * 10 + (b - 48)) / 100 for a, b in zip(tens, ones)])
    keep = [i for i, n in enumerate(names) if n not in ("_conf_", "_conf_2")]
    return [names[i] for i in keep], [rows[i] for i in keep], cc


def run_muscle(muscle: str, fasta: str, work: Path, threads: int) -> tuple[list[str], list[bytes], np.ndarray, float]:
    """MUSCLE 5 ``-stratified`` (16 replicates), its ``-maxcc`` replicate and
    that replicate's column confidences; the seconds the three calls took."""
    import subprocess

    work.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    for argv in (["-align", fasta, "-stratified", "-output", "ens.efa", "-threads", str(threads)],
                 ["-maxcc", "ens.efa", "-output", "best.afa"], ["-addconfseq", "ens.efa", "-output", "cc.efa"]):
        r = subprocess.run([muscle, *argv], cwd=work, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"muscle {' '.join(argv)}: exit {r.returncode}: {r.stderr[-300:]}")
    seconds = time.perf_counter() - clock
    best = read_efa_fasta(work / "best.afa")
    for _, names, rows in read_efa(work / "cc.efa"):
        n, r, cc = muscle_confidence(names, rows)
        if dict(zip(n, r)) == best:
            return n, r, cc, seconds
    raise RuntimeError(f"{fasta}: MUSCLE's -maxcc replicate is not among its -addconfseq replicates")


def read_efa_fasta(path: Path) -> dict:
    from msa_gpu.io import read_aligned

    names, rows = read_aligned(path)
    return dict(zip(names, rows))


def _smallest(picked: list, fams: list, k: int) -> tuple[list, list]:
    """Each set's ``k`` families of the fewest residue pairs (ties: by ID), in the data's order."""
    def cells(seqs) -> int:
        lengths = seqs.lengths.astype(np.int64)
        return int((lengths.sum() ** 2 - (lengths ** 2).sum()) // 2)

    keep = set()
    for name in dict.fromkeys(f.set_name for f in picked):
        mine = sorted((cells(s), f.family_id, i) for i, (f, s) in enumerate(zip(picked, fams)) if f.set_name == name)
        keep.update(i for _, _, i in mine[:k])
    return [f for i, f in enumerate(picked) if i in keep], [s for i, s in enumerate(fams) if i in keep]


def run(args) -> dict:
    from msa_gpu.aligner import Aligner
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.workflows.ensemble import align_ensembles
    from msa_gpu.io import read_aligned, read_core, read_sequences
    from msa_gpu.accuracy import sp_tc

    with datasets.open_dataset(args.data, args.sets) as ds:
        picked = datasets.select(ds, args.sets, args.limit)
        fams = [read_sequences(f.input_path) for f in picked]
        if args.smallest:  # each set's K families of the fewest residue pairs (MUSCLE 5 takes hours on all)
            picked, fams = _smallest(picked, fams, args.smallest)
        refs = [read_aligned(f.ref_path) for f in picked]
        cores = [read_core(f.core_path) if f.core_path else None for f in picked]
    config = AlignerConfig(backend=args.backend, mode="accurate")
    Aligner(config).align_many(fams[:2])  # kernels loaded before either clock
    clock = time.perf_counter()
    Aligner(config).align_many(fams)
    one = time.perf_counter() - clock
    clock = time.perf_counter()
    ens = align_ensembles(fams, config, args.replicates, tuple(args.perturb.split(",")), seed=args.seed)
    many = time.perf_counter() - clock
    per_family = []
    conf, pp, corr, tot = [], [], [], []
    for seqs, e, (rn, rr), core in zip(fams, ens, refs, cores):
        base, chosen = e.replicates[0], e.result
        s0 = sp_tc(list(seqs.names), base.rows(), rn, rr, core)
        s1 = sp_tc(list(seqs.names), chosen.rows(), rn, rr, core)
        c, t = column_pairs(list(seqs.names), chosen.alignment, seqs, rn, rr, core)
        conf.append(e.confidence)
        pp.append(np.asarray(chosen.column_scores()))
        corr.append(c)
        tot.append(t)
        agreed = int(np.argmax(e.support.mean))  # MUSCLE 5's -maxcc rule, for comparison with the pick
        s2 = sp_tc(list(seqs.names), e.replicates[agreed].rows(), rn, rr, core)
        # two other rules, measured beside it: the replicate whose aligned residue pairs the others align
        # most often (the pair-weighted mean confidence), and the medoid under pair agreement both ways
        pair = e.support.pair
        off = ~np.eye(len(pair), dtype=bool)
        held = (pair * off).sum(1) / max(len(pair) - 1, 1)
        medoid = ((pair + pair.T) * off).sum(1)
        s3 = sp_tc(list(seqs.names), e.replicates[int(np.argmax(held))].rows(), rn, rr, core)
        s4 = sp_tc(list(seqs.names), e.replicates[int(np.argmax(medoid))].rows(), rn, rr, core)
        per_family.append({"sp0": s0.sp, "tc0": s0.tc, "sp": s1.sp, "tc": s1.tc, "chosen": e.chosen,
                           "sp_maxcc": s2.sp, "tc_maxcc": s2.tc, "sp_pairs": s3.sp, "tc_pairs": s3.tc,
                           "sp_medoid": s4.sp, "tc_medoid": s4.tc, "dispersion": e.dispersion})
    muscle = None
    if args.muscle:  # MUSCLE 5 -stratified on the same families: its -maxcc pick and its column confidence
        from msa_gpu.io import make_sequences
        from msa_gpu.types import Alignment

        m_conf, m_corr, m_tot, m_sp, m_tc, m_sec = [], [], [], [], [], 0.0
        work = Path(args.workdir)
        for f, seqs, (rn, rr), core in zip(picked, fams, refs, cores):
            (work / f.family_id).mkdir(parents=True, exist_ok=True)
            src = work / f.family_id / "input.fa"
            src.write_bytes(b"".join(b">" + n.encode() + b"\n" + r + b"\n" for n, r in zip(seqs.names, seqs.raw)))
            names, rows, cc, sec = run_muscle(args.muscle, str(src), work / f.family_id, args.threads)
            m_sec += sec
            sc = sp_tc(names, rows, rn, rr, core)
            m_sp.append(sc.sp)
            m_tc.append(sc.tc)
            mseqs = make_sequences(names, [r.replace(b"-", b"") for r in rows], seqs.seqtype.value)
            mask = np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), -1) != ord("-")
            c, t = column_pairs(names, Alignment.from_mask(mask), mseqs, rn, rr, core)
            m_conf.append(cc)
            m_corr.append(c)
            m_tot.append(t)
        mc, mr, mt = (np.concatenate(x) for x in (m_conf, m_corr, m_tot))
        muscle = {"seconds": round(m_sec, 2), "sp": float(np.mean(m_sp)), "tc": float(np.mean(m_tc)),
                  "auc": roc_auc(mc, mr, mt)}
    conf, pp, corr, tot = (np.concatenate(x) for x in (conf, pp, corr, tot))
    edges = np.linspace(0, 1, 11)
    bins = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (conf >= lo) & ((conf < hi) if hi < 1 else (conf <= hi))
        n = int(tot[sel].sum())
        bins.append({"from": round(lo, 1), "to": round(hi, 1), "pairs": n,
                     "accuracy": float(corr[sel].sum() / n) if n else None})
    mean = {k: float(np.mean([r[k] for r in per_family]))
            for k in ("sp0", "tc0", "sp", "tc", "sp_maxcc", "tc_maxcc", "sp_pairs", "tc_pairs", "sp_medoid", "tc_medoid",
                      "dispersion")}
    return {"date": _dt.date.today().isoformat(), "data": str(args.data), "families": len(fams),
            "replicates": args.replicates, "seed": args.seed, "perturb": args.perturb, "backend": args.backend,
            "seconds": {"one_accurate_batch": round(one, 2), "ensembles": round(many, 2),
                        "ratio": round(many / one, 2)},
            "mean": mean, "chosen_not_default": int(sum(r["chosen"] != 0 for r in per_family)),
            "auc": {"ensemble_confidence": roc_auc(conf, corr, tot), "pair_hmm_column_scores": roc_auc(pp, corr, tot)},
            "accuracy_by_confidence": bins, "muscle5_stratified": muscle, "per_family": per_family}


def markdown(doc: dict) -> str:
    m, s, a = doc["mean"], doc["seconds"], doc["auc"]
    lines = [f"# Ensembles of {doc['replicates']} on {doc['data']} ({doc['families']} families, backend "
             f"{doc['backend']}, perturbed: {doc.get('perturb', 'tree,gaps')}, seed {doc['seed']})", "",
             f"- one accurate batch {s['one_accurate_batch']} s; every ensemble {s['ensembles']} s ({s['ratio']}x)",
             f"- default (replicate 0): SP {m['sp0']:.4f}, TC {m['tc0']:.4f}; chosen: SP {m['sp']:.4f}, TC "
             f"{m['tc']:.4f} ({doc['chosen_not_default']} families chose another replicate); the highest mean "
             f"column confidence (-maxcc) would give SP {m.get('sp_maxcc', float('nan')):.4f}, TC "
             f"{m.get('tc_maxcc', float('nan')):.4f}; the pair-weighted rule SP {m.get('sp_pairs', float('nan')):.4f}, "
             f"TC {m.get('tc_pairs', float('nan')):.4f}; the pair-agreement medoid SP "
             f"{m.get('sp_medoid', float('nan')):.4f}, TC {m.get('tc_medoid', float('nan')):.4f}; mean dispersion "
             f"{m['dispersion']:.4f}",
             f"- ROC AUC for correct residue pairs: ensemble confidence {a['ensemble_confidence']:.4f}, pair-HMM "
             f"column scores {a['pair_hmm_column_scores']:.4f}",
             *([f"- MUSCLE 5 -stratified (16 replicates, -maxcc): {doc['muscle5_stratified']['seconds']} s, SP "
                f"{doc['muscle5_stratified']['sp']:.4f}, TC {doc['muscle5_stratified']['tc']:.4f}, ROC AUC of its "
                f"column confidence {doc['muscle5_stratified']['auc']:.4f}"] if doc.get("muscle5_stratified") else []),
             "", "| confidence | pairs | accuracy |", "|---|---|---|"]
    for b in doc["accuracy_by_confidence"]:
        acc = "" if b["accuracy"] is None else f"{b['accuracy']:.4f}"
        lines.append(f"| {b['from']:.1f}-{b['to']:.1f} | {b['pairs']:,} | {acc} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--sets", type=lambda t: [x for x in t.split(",") if x], default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--smallest", type=int, default=None,
                    help="each set's K families of the fewest residue pairs (after --limit)")
    ap.add_argument("--replicates", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--perturb", default="tree,gaps", help="what replicates vary (msagpu align --perturb)")
    ap.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--muscle", default=None, help="MUSCLE 5's binary: run -stratified on the same families too")
    ap.add_argument("--threads", type=int, default=1, help="MUSCLE's threads")
    ap.add_argument("--workdir", default="/tmp/msagpu-ensemble-muscle")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--tag", default=None)
    args = ap.parse_args(argv)
    doc = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.tag or doc['date']}-ensemble-{Path(str(args.data)).name.split('.')[0]}"
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
