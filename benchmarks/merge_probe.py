"""One merge, the same two profiles: FAMSA 2's profile-profile alignment against msagpu's.

    python -m benchmarks.merge_probe FAMILY [CONFIG ...] [--all]

FAMILY is a benchmark family's path without its suffix (``exthomfam_dev/ehf_dev/Bcl-2``: its
``.tfa`` or ``.tfa.gz``, ``.ref.fa`` and ``.core``). FAMSA 2's guide tree (pyfamsa) is cut at the
top node where the reference sequences meet (``--all``: every such node); each side is aligned by
FAMSA, and the two profiles are merged by FAMSA (``align_profiles``) and by msagpu's
`progressive_align` (one merge, the sides given as ``initial`` profiles, equal weights) under each
CONFIG (`AlignerConfig` fields as `benchmarks.tune` reads them; the default first), each with the
whole family's gap model and fixed point unless the CONFIG names them. For each merge
the report gives the width and SP/TC against the reference sequences present, and both paths' scores
under msagpu's objective (`path_score`) and as exact sums of pairs between the two sides (each
sequence's own gap states in the merged rows: FAMSA's count model), split into substitutions,
internal and terminal gaps. Needs pyfamsa (``pip install 'msagpu[bench]'``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.tune import parse_config
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.pipeline.subtrees import profile_of, subtrees, top_schedule
from msa_gpu.io import make_sequences, read_aligned, read_core, read_guide_tree, read_sequences
from msa_gpu.progressive import FamilyJob, progressive_align
from msa_gpu.progressive.driver import BatchContext, score_batch, side_info, stack_matrices
from msa_gpu.refine import bipartitions as rb
from msa_gpu.accuracy import sp_tc
from msa_gpu.scoring import SCALE, matrix_fixed


def _input(stem: str) -> Path:
    for suffix in (".tfa", ".tfa.gz"):
        if Path(stem + suffix).is_file():
            return Path(stem + suffix)
    raise SystemExit(f"{stem}: no .tfa or .tfa.gz")


def _famsa_tree(pyfamsa, raw: list[bytes], ids: list[str]):
    tree = pyfamsa.Aligner(threads=0, refine=False).build_tree(
        [pyfamsa.Sequence(i.encode(), r) for i, r in zip(ids, raw)])
    with tempfile.NamedTemporaryFile("wb", suffix=".nwk") as h:
        h.write(tree.dumps())
        h.flush()
        return read_guide_tree(h.name, ids)


def _leaves(tree):
    n = tree.n_leaves
    below = [{v} for v in range(n)]
    for a, b in tree.children:
        below.append(below[a] | below[b])
    return below


def _encode(rows: list[bytes], alphabet) -> np.ndarray:
    table = np.asarray(alphabet.table)
    codes = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), -1)
    return np.where(codes == ord("-"), alphabet.gap, table[codes]).astype(np.uint8)


def sum_of_pairs(codes: np.ndarray, side_a: np.ndarray, gap: int, M: np.ndarray,
                 costs: tuple[float, float, float, float]) -> tuple[float, float, float]:
    """The merged alignment's sum of pairs between the two sides, unweighted:
    (substitutions, internal gap costs, terminal gap costs). ``costs``: a
    gap's first column, each further column, and the same for terminal gaps
    (a row's gaps before its first or after its last residue)."""
    isres = codes != gap
    k, width = codes.shape
    cost = np.zeros((k, width))
    terminal = np.zeros((k, width), bool)
    for r in range(k):
        res = np.flatnonzero(isres[r])
        opening = np.concatenate([[True], isres[r, :-1]])
        term = (np.arange(width) < res[0]) | (np.arange(width) > res[-1])
        cost[r] = np.where(term, np.where(opening, costs[2], costs[3]), np.where(opening, costs[0], costs[1]))
        cost[r][isres[r]] = 0.0
        terminal[r] = term & ~isres[r]
    subs = internal = term_total = 0.0
    a, b = side_a, ~side_a
    for c in range(width):
        ha = np.bincount(codes[a, c][isres[a, c]], minlength=M.shape[0])[:M.shape[0]]
        hb = np.bincount(codes[b, c][isres[b, c]], minlength=M.shape[0])[:M.shape[0]]
        subs += float(ha @ M @ hb)
        for gapped, facing in ((a, b), (b, a)):
            g = ~isres[gapped, c]
            n_res = int(isres[facing, c].sum())
            internal += float(cost[gapped, c][g & ~terminal[gapped, c]].sum()) * n_res
            term_total += float(cost[gapped, c][g & terminal[gapped, c]].sum()) * n_res
    return subs, internal, term_total


def probe(stem: str, configs: list[str], every: bool = False, out=print) -> list[dict]:
    import pyfamsa

    path = _input(stem)
    seqs0 = read_sequences(path)
    ref_names, ref_rows = read_aligned(stem + ".ref.fa")
    core = read_core(stem + ".core")
    names, raw = list(seqs0.names), [r.upper() for r in seqs0.raw]
    ids = [f"s{i}" for i in range(len(names))]
    tree = _famsa_tree(pyfamsa, raw, ids)
    n = tree.n_leaves
    refs = {names.index(x) for x in ref_names}
    below = _leaves(tree)
    meets = [n + k for k, (x, y) in enumerate(tree.children) if below[x] & refs and below[y] & refs]
    famsa = pyfamsa.Aligner(threads=0, refine=False)
    # the whole family's gap model and fixed point (a sub-merge's own recipe would be a smaller family's)
    whole = Aligner(AlignerConfig(backend="cpu", mode="fast"), backend=cpu_backend("probe")).plan(
        [make_sequences(names, raw, "protein")])[0]
    report = []
    for node in (meets if every else meets[-1:]):
        (members, sub), = subtrees(tree, [node])
        here = {names[i] for i in members}
        rn = [x for x in ref_names if x in here]
        rr = [r for x, r in zip(ref_names, ref_rows) if x in here]
        seqs = make_sequences([names[i] for i in members], [raw[i] for i in members], "protein")
        sids = [ids[i] for i in members]
        roots = [int(x) for x in sub.children[-1]]
        pieces = subtrees(sub, roots)
        profiles, initial = [], {}
        for root, (mem, _) in zip(roots, pieces):
            if len(mem) == 1:
                rows = [seqs.raw[mem[0]]]
            else:
                got = {x.id.decode(): x.sequence for x in
                       famsa.align([pyfamsa.Sequence(sids[i].encode(), seqs.raw[i]) for i in mem])}
                rows = [got[sids[i]] for i in mem]
            profiles.append(pyfamsa.Alignment([pyfamsa.GappedSequence(sids[i].encode(), r)
                                               for i, r in zip(mem, rows)]))
            initial[root] = profile_of(mem, _encode(rows, seqs.alphabet), np)
        side_a = np.isin(np.arange(len(members)), pieces[0][0])
        got = {x.id.decode(): x.sequence for x in famsa.align_profiles(profiles[0], profiles[1])}
        famsa_codes = _encode([got[i] for i in sids], seqs.alphabet)
        entry = {"node": node, "sides": [len(p[0]) for p in pieces], "merges": {}}
        out(f"merge of {entry['sides'][0]} + {entry['sides'][1]} sequences (node {node}; {len(rn)} references)")
        for label in ["default"] + configs:
            cfg = AlignerConfig(**{"backend": "cpu", "mode": "fast", "gap_scaling_n": n,
                                   "gap_model": whole.gap_model, "profile_scale": whole.profile_scale,
                                   **(parse_config(label) if label != "default" else {})})
            aligner = Aligner(cfg, backend=cpu_backend("probe"))
            recipe = aligner.plan([seqs], [sub])[0]
            job = FamilyJob(seqs, sub, top_schedule(sub, roots), np.ones(len(members), dtype=np.int64),
                            aligner.scoring(seqs, recipe))
            aln = progressive_align([job], aligner.backend, cfg.long_cells, initial=[initial], anchor_cells=0)[0]
            ours = np.full((len(members), aln.n_cols), seqs.alphabet.gap, dtype=np.uint8)
            for s, c in enumerate(seqs.codes):
                ours[s, aln.row_mask(s)] = c
            split = rb.tree_splits(sub)
            cut = next(e for e in range(len(split)) if (split[e] == side_a).all() or (split[e] == ~side_a).all())
            mats, mat_of = stack_matrices([job], np)
            ctx = BatchContext(aligner.backend, mats, None)
            M = matrix_fixed(recipe.matrix, seqs.alphabet.letters, recipe.matrix_offset) / SCALE
            go, ge = recipe.gap_open * recipe.gap_factor, recipe.gap_extend * recipe.gap_factor
            tgo, tge = cfg.terminal_open, cfg.terminal_extend
            costs = (go + ge, ge, tgo * go + tge * ge, tge * ge)
            for who, codes in (("FAMSA", famsa_codes), ("msagpu", ours)):
                cuts = rb._cuts([codes], [rb._Sides.of(split[[cut]])], [job], aligner.backend)
                sb = score_batch(cuts.block, [side_info(job, mat_of[0])], np.zeros(1, bool), ctx)
                _, _, best = aligner.backend.ops.align_batch(sb.batch)
                own = aligner.backend.ops.path_score(sb.batch, cuts.moves, cuts.move_base[cuts.family],
                                                     cuts.width[cuts.family])
                score = sp_tc(list(seqs.names), _rows(codes, seqs.alphabet), rn, rr, core)
                subs, internal, term = sum_of_pairs(codes, side_a, seqs.alphabet.gap, M, costs)
                pairs = int(side_a.sum()) * int((~side_a).sum())
                item = {"width": int(codes.shape[1]), "sp": score.sp, "tc": score.tc,
                        "objective": int(own[0]) / recipe.profile_scale, "optimum": int(best[0]) / recipe.profile_scale,
                        "sum_of_pairs": (subs - internal - term) / pairs,
                        "substitutions": subs / pairs, "internal_gaps": internal / pairs, "terminal_gaps": term / pairs}
                entry["merges"][f"{label}: {who}'s path"] = item
                out(f"  [{label}] {who}'s path: {item['width']} columns, SP/TC {score.sp:.3f}/{score.tc:.3f}; "
                    f"msagpu's objective {item['objective']:.2f} (optimum {item['optimum']:.2f}); sum of pairs "
                    f"{item['sum_of_pairs']:.2f} = {item['substitutions']:.2f} - {item['internal_gaps']:.2f} internal "
                    f"- {item['terminal_gaps']:.2f} terminal, a pair")
        report.append(entry)
    return report


def _rows(codes: np.ndarray, alphabet) -> list[bytes]:
    letters = np.frombuffer((alphabet.letters + "-" * 256)[:256].encode("ascii"), dtype=np.uint8)
    lut = np.full(256, ord("-"), dtype=np.uint8)
    lut[:len(alphabet.letters)] = letters[:len(alphabet.letters)]
    return [lut[row].tobytes() for row in codes]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", help="path of the family without its suffix")
    ap.add_argument("configs", nargs="*", default=[])
    ap.add_argument("--all", action="store_true", help="every node where the references meet, not only the top one")
    args = ap.parse_intermixed_args(argv)
    probe(args.family, args.configs, args.all)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
