"""Model variants side by side in one process, on any benchmark layout.

    python -m benchmarks.variants DATA "" "weights=equal" "lcs_min_seqs=201" ... \\
        [--sets ehf_dev,balifam1000] [--backend gpu] [--famsa] [--out FILE.json]

Each argument after DATA is one configuration (`AlignerConfig` fields, as
`benchmarks.tune` takes them; "" is the default). Every family of the chosen
sets is aligned, one batch a set and configuration (`Aligner.align_many`, the
GPU's level batches where there is one), and scored with `msa_gpu.accuracy.sp_tc`
on the core columns, inputs upper-cased as the other benchmarks do. With
``--famsa``, FAMSA 2 (pyfamsa, its defaults) aligns the same inputs in the same
run, with and without its refinement. The table gives each set's mean SP / TC and seconds; the JSON keeps every
family's figures and how many families each variant wins and loses against the
first configuration (family by family, TC).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from benchmarks import datasets
from benchmarks.tune import parse_config
from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences, read_aligned, read_core, read_sequences
from msa_gpu.accuracy import sp_tc


def _upper(seqs):
    """The family with its residues upper-cased (Balifam marks unscored ones in lower case)."""
    return make_sequences(list(seqs.names), [r.upper() for r in seqs.raw], seqs.seqtype)


def _score(fam: datasets.Family, names, rows) -> tuple[float, float]:
    ref_names, ref_rows = read_aligned(fam.ref_path)
    s = sp_tc(list(names), rows, ref_names, ref_rows, read_core(fam.core_path))
    return s.sp, s.tc


def _famsa(families, inputs, threads: int, refine: bool | None = None) -> tuple[dict, float]:
    import pyfamsa

    aligner = pyfamsa.Aligner(threads=threads, refine=refine)
    out, clock = {}, time.perf_counter()
    for fam, seqs in zip(families, inputs):
        msa = aligner.align([pyfamsa.Sequence(n.encode(), r) for n, r in zip(seqs.names, seqs.raw)])
        got = {s.id.decode(): s.sequence for s in msa}
        out[fam.key] = _score(fam, seqs.names, [got[n] for n in seqs.names])
    return out, time.perf_counter() - clock


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="benchmark folder or .tar.gz archive")
    ap.add_argument("configs", nargs="*", default=[""])
    ap.add_argument("--sets", default=None, help="comma-separated sets")
    ap.add_argument("--limit", type=int, default=None, help="at most K families a set")
    ap.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--famsa", action="store_true", help="FAMSA 2 (pyfamsa) in the same run")
    ap.add_argument("--famsa-tree", action="store_true",
                    help="msagpu aligns along FAMSA 2's guide tree (pyfamsa's build_tree), to part the tree from the rest")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="FAMSA's threads")
    ap.add_argument("--out", default=None, help="JSON file of every family's figures")
    args = ap.parse_intermixed_args(argv)
    sets = [s for s in (args.sets or "").split(",") if s]
    doc: dict = {"command": "python -m benchmarks.variants " + " ".join(sys.argv[1:] if argv is None else argv),
                 "rows": []}
    with datasets.open_dataset(args.data, sets or None) as ds:
        chosen = datasets.select(ds, sets or None, args.limit)
        by_set: dict[str, list] = {}
        for fam in chosen:
            by_set.setdefault(fam.set_name, []).append(fam)
        inputs = {name: [_upper(read_sequences(f.input_path)) for f in fams] for name, fams in by_set.items()}
        trees = ({name: [_famsa_tree(s, args.threads) for s in inputs[name]] for name in by_set}
                 if args.famsa_tree else {name: None for name in by_set})
        runs = [((text or "default") + (" (FAMSA's tree)" if args.famsa_tree else ""),
                 lambda fams, seqs, cfg=parse_config(text): _msagpu(fams, seqs, cfg, args.backend,
                                                                   trees[fams[0].set_name]))
                for text in args.configs]
        if args.famsa:
            runs.append(("FAMSA 2 (pyfamsa)", lambda fams, seqs: _famsa(fams, seqs, args.threads)))
            runs.append(("FAMSA 2, refinement off", lambda fams, seqs: _famsa(fams, seqs, args.threads, False)))
        print("| variant | " + " | ".join(f"{s} SP / TC (s)" for s in by_set) + " |", flush=True)
        print("|---|" + "---|" * len(by_set), flush=True)
        for label, run in runs:
            row: dict = {"variant": label, "sets": {}, "families": {}}
            for name, fams in by_set.items():
                scores, seconds = run(fams, inputs[name])
                row["families"].update(scores)
                sp = sum(v[0] for v in scores.values()) / len(scores)
                tc = sum(v[1] for v in scores.values()) / len(scores)
                row["sets"][name] = {"sp": round(sp, 4), "tc": round(tc, 4), "seconds": round(seconds, 2),
                                     "families": len(scores)}
            base = doc["rows"][0]["families"] if doc["rows"] else row["families"]
            row["tc_wins_losses_vs_first"] = [sum(row["families"][k][1] > base[k][1] + 1e-9 for k in base),
                                              sum(row["families"][k][1] < base[k][1] - 1e-9 for k in base)]
            doc["rows"].append(row)
            cells = " | ".join(f"{v['sp']:.4f} / {v['tc']:.4f} ({v['seconds']:.1f})" for v in row["sets"].values())
            print(f"| {label} | {cells} |  wins/losses {row['tc_wins_losses_vs_first']}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1))
    return 0


def _famsa_tree(seqs, threads: int):
    """FAMSA 2's guide tree of a family (pyfamsa, its defaults), as msagpu's `GuideTree`."""
    import tempfile

    import pyfamsa

    from msa_gpu.io import read_guide_tree

    ids = [f"s{i}" for i in range(len(seqs))]  # (names may hold Newick's own characters)
    tree = pyfamsa.Aligner(threads=threads).build_tree(
        [pyfamsa.Sequence(i.encode(), r) for i, r in zip(ids, seqs.raw)])
    with tempfile.NamedTemporaryFile("wb", suffix=".nwk") as h:
        h.write(tree.dumps())
        h.flush()
        return read_guide_tree(h.name, ids)


def _msagpu(families, inputs, config: dict, backend: str, trees=None) -> tuple[dict, float]:
    clock = time.perf_counter()
    results = Aligner(AlignerConfig(**{"backend": backend, "keep_distances": False, **config})).align_many(
        inputs, guide_trees=trees)
    seconds = time.perf_counter() - clock
    return {fam.key: _score(fam, seqs.names, res.rows()) for fam, seqs, res in zip(families, inputs, results)}, seconds


if __name__ == "__main__":
    raise SystemExit(main())
