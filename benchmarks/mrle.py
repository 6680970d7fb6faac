"""Memory of DP traceback matrices as raw int32, packed 4-bit cells and MRLE
(``python -m benchmarks mrle``).

For pairs of real proteins (drawn from references/*.tfa, or from a
BAliBASE-layout benchmark given by ``--data``), a Gotoh DP of this file
(BLOSUM62 in msagpu's fixed point, gap open 11, extend 1, a gap of k costing
open + (k - 1) extend; ties diagonal, then vertical, then horizontal, and
opening before extending) fills, for every cell of the full (m + 1) x (n + 1)
matrix, in global and in local mode:

* ``dirs``: msagpu's direction nibble (bits 0-1 the source of H: 0 diagonal,
  1 vertical, 2 horizontal, 3 local start; bit 2 vertical gap opened; bit 3
  horizontal gap opened), the matrix the accurate mode's traceback keeps.
  MRLE runs on the nibbles relabelled by frequency (the commonest becomes 0,
  the next ``localstop = 15``, the rest 1..14; the 16-byte table is counted).
* ``gaps``: MAFFT's traceback matrix as CUDA-LINSi compresses it: 0 where H
  comes from the diagonal, +k where it ends a vertical gap of k cells (from
  (i - k, j)), -k where it ends a horizontal gap of k cells (from (i, j - k)),
  and ``localstop = m + n + 1`` (MAFFT's value) where a local alignment starts
  (H <= 0, and the borders in local mode). Global borders hold +i and -j.
  The same DP's nibble matrix holds the same traceback in 4 bits a cell.

Each kind reports bytes (raw int32, packed 4-bit, MRLE = Av int32 + Ar int64,
and MRLE with int16 entries and int32 row pointers where they fit, as the
paper stores them), and the median over ``--repeat`` timed runs (after one
warm-up run) of encoding and decoding all matrices with MRLE and with 4-bit
packing, on ``--backend``. Every round trip is checked; on the GPU the
vectors are also compared with the numba twin's. Writes
``<out>/<tag or date>-mrle-<backend>.json`` and ``.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

from msa_gpu.alphabet import PROTEIN, SeqType
from msa_gpu.backend import to_host
from msa_gpu.io import read_sequences
from msa_gpu.scoring import SCALE, matrix_fixed

from . import datasets, mrle_codec as mrle, report

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
REFERENCES = Path(__file__).resolve().parent.parent / "references"
KINDS = ("dirs-global", "gaps-global", "dirs-local", "gaps-local")
DIRS_LOCALSTOP = 15
INT16_MAX = (1 << 15) - 1


def register(sub) -> None:
    p = sub.add_parser("mrle", help="traceback matrices: raw int32 vs packed 4-bit vs MRLE",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="BAliBASE-layout folder or .tar.gz (default: references/*.tfa)")
    p.add_argument("--sets", default=None, help="comma-separated sets, e.g. RV11,RV12")
    p.add_argument("--limit", type=int, default=None, help="at most K families per set")
    p.add_argument("--pairs", type=int, default=100, help="sequence pairs (default 100)")
    p.add_argument("--max-len", type=int, default=1000, help="skip longer sequences (default 1000)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs, the median is kept (default 5)")
    p.add_argument("--backend", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--tag", default=None)
    p.set_defaults(func=cmd_mrle)


@numba.njit(cache=True)
def gotoh_tables(a, b, S, go, ge, local, ls, dirs, gaps):
    """Fill ``dirs`` (uint8 nibbles) and ``gaps`` (int32, MAFFT-style) of size (m + 1, n + 1)."""
    m, n = a.shape[0], b.shape[0]
    neg = -(1 << 40)
    H = np.empty(n + 1, np.int64)
    E = np.full(n + 1, neg, np.int64)
    elen = np.zeros(n + 1, np.int64)
    H[0] = 0
    dirs[0, 0] = 3 if local else 0
    gaps[0, 0] = ls if local else 0
    for j in range(1, n + 1):
        H[j] = 0 if local else -(go + (j - 1) * ge)
        dirs[0, j] = 3 if local else (10 if j == 1 else 2)
        gaps[0, j] = ls if local else -j
    for i in range(1, m + 1):
        diag = H[0]
        H[0] = 0 if local else -(go + (i - 1) * ge)
        dirs[i, 0] = 3 if local else (5 if i == 1 else 1)
        gaps[i, 0] = ls if local else i
        f, flen = neg, 0
        for j in range(1, n + 1):
            bits = 0
            if H[j] - go >= E[j] - ge:
                E[j], elen[j], bits = H[j] - go, 1, bits | 4
            else:
                E[j], elen[j] = E[j] - ge, elen[j] + 1
            if H[j - 1] - go >= f - ge:
                f, flen, bits = H[j - 1] - go, 1, bits | 8
            else:
                f, flen = f - ge, flen + 1
            h, src = diag + S[a[i - 1], b[j - 1]], 0
            if E[j] > h:
                h, src = E[j], 1
            if f > h:
                h, src = f, 2
            if local and h <= 0:
                h, src = 0, 3
            diag, H[j] = H[j], h
            dirs[i, j] = bits | src
            gaps[i, j] = 0 if src == 0 else (elen[j] if src == 1 else (-flen if src == 2 else ls))


def _pools(args) -> tuple[list[tuple[str, list[np.ndarray]]], str]:
    """(family, codes of its sequences up to --max-len) for every family, and the source's name."""
    def load(name, path):
        seqs = read_sequences(path, SeqType.protein)
        return name, [c for c in seqs.codes if len(c) <= args.max_len]

    if args.data is None:
        return [load(p.stem, p) for p in sorted(REFERENCES.glob("*.tfa"))], "references"
    sets = [s for s in args.sets.split(",") if s] if args.sets else None
    with datasets.open_dataset(args.data, sets) as ds:
        fams = datasets.select(ds, sets, args.limit)
        return [load(f.key, f.input_path) for f in fams], ds.name


def _pick_pairs(pools, count: int, seed: int):
    rng = np.random.default_rng(seed)
    usable = [p for p in pools if len(p[1]) >= 2]
    if not usable:
        raise datasets.DatasetError("no family has two sequences within --max-len")
    out = []
    for _ in range(count):
        name, codes = usable[int(rng.integers(len(usable)))]
        i, j = (int(x) for x in rng.choice(len(codes), 2, replace=False))
        out.append((name, i, j, codes[i], codes[j]))
    return out


def _relabel(nibbles: np.ndarray) -> np.ndarray:
    """Nibbles renamed by frequency: commonest 0, next DIRS_LOCALSTOP, then 1..14."""
    order = np.argsort(-np.bincount(nibbles.ravel(), minlength=16), kind="stable")
    table = np.empty(16, np.int32)
    table[order] = [0, DIRS_LOCALSTOP] + list(range(1, 15))
    return table[nibbles]


def _matrices(pairs, S, go, ge):
    """{kind: [(matrix int32, localstop, nibbles uint8)]} for every pair."""
    out = {k: [] for k in KINDS}
    for _, _, _, a, b in pairs:
        shape, ls = (len(a) + 1, len(b) + 1), len(a) + len(b) + 1
        for mode, local in (("global", False), ("local", True)):
            dirs, gaps = np.empty(shape, np.uint8), np.empty(shape, np.int32)
            gotoh_tables(a, b, S, go, ge, local, ls, dirs, gaps)
            out[f"dirs-{mode}"].append((_relabel(dirs), DIRS_LOCALSTOP, dirs))
            out[f"gaps-{mode}"].append((gaps, ls, dirs))
    return out


def _pack4(xp, flat):
    even = flat if flat.shape[0] % 2 == 0 else xp.concatenate([flat, xp.zeros(1, flat.dtype)])
    return (even[0::2] | (even[1::2] << 4)).astype(xp.uint8)


def _unpack4(xp, packed, cells):
    out = xp.empty(2 * packed.shape[0], xp.uint8)
    out[0::2] = packed & 15
    out[1::2] = packed >> 4
    return out[:cells]


def _median_time(fn, sync, repeat: int) -> float:
    fn()  # warm-up: compilation, memory pools
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _measure(kind, items, xp, sync, repeat):
    """Bytes, the round-trip checks and the median times of one kind."""
    dev = [(xp.asarray(M), ls, xp.asarray(nib).ravel()) for M, ls, nib in items]
    encs = [mrle.encode_arrays(M, ls, xp) for M, ls, _ in dev]
    host = [mrle.encode(M, ls) for M, ls, _ in items]
    ok = all(np.array_equal(mrle.decode(h), M) for h, (M, _, _) in zip(host, items))
    ok = ok and all(np.array_equal(to_host(mrle.decode_arrays(Ar, Av, M.shape, ls, xp)), Mh)
                    for (Ar, Av), (M, ls, _), (Mh, _, _) in zip(encs, dev, items))
    same = all(np.array_equal(to_host(Ar), h.Ar) and np.array_equal(to_host(Av), h.Av)
               for (Ar, Av), h in zip(encs, host))
    cells = sum(M.size for M, _, _ in items)
    rows = sum(M.shape[0] for M, _, _ in items)
    entries = sum(int(h.Av.shape[0]) for h in host)
    table = 16 if kind.startswith("dirs") else 0
    fits16 = all(int(h.Av.min(initial=0)) >= -INT16_MAX - 1 and int(h.Av.max(initial=0)) <= INT16_MAX for h in host)
    packed = [_pack4(xp, nib) for _, _, nib in dev]
    t_enc = _median_time(lambda: [mrle.encode_arrays(M, ls, xp) for M, ls, _ in dev], sync, repeat)
    t_dec = _median_time(lambda: [mrle.decode_arrays(Ar, Av, M.shape, ls, xp)
                                  for (Ar, Av), (M, ls, _) in zip(encs, dev)], sync, repeat)
    t_pack = _median_time(lambda: [_pack4(xp, nib) for _, _, nib in dev], sync, repeat)
    t_unpack = _median_time(lambda: [_unpack4(xp, p, nib.shape[0]) for p, (_, _, nib) in zip(packed, dev)],
                            sync, repeat)
    res = {"kind": kind, "matrices": len(items), "cells": cells,
           "raw_int32_bytes": 4 * cells, "packed4_bytes": sum(mrle.packed4_bytes(M.shape) for M, _, _ in items),
           "mrle_bytes": 4 * entries + 8 * (rows + len(items)) + table * len(items),
           "mrle16_bytes": 2 * entries + 4 * (rows + len(items)) + table * len(items) if fits16 else None,
           "mrle_entries_per_cell": entries / cells,
           "mrle_encode_s": t_enc, "mrle_decode_s": t_dec, "pack4_s": t_pack, "unpack4_s": t_unpack,
           "mrle_encode_mcells_s": cells / t_enc / 1e6, "mrle_decode_mcells_s": cells / t_dec / 1e6,
           "round_trip_ok": bool(ok), "equals_cpu_twin": bool(same)}
    sizes = {"raw int32": res["raw_int32_bytes"], "packed 4-bit": res["packed4_bytes"], "MRLE": res["mrle_bytes"]}
    if res["mrle16_bytes"] is not None:
        sizes["MRLE int16"] = res["mrle16_bytes"]
    res["smallest"] = min(sizes, key=sizes.get)
    res["mrle_over_packed4"] = res["mrle_bytes"] / res["packed4_bytes"]
    res["mrle_over_raw"] = res["mrle_bytes"] / res["raw_int32_bytes"]
    return res


def _markdown(doc) -> str:
    head = ("| kind | matrices | Mcells | raw int32 MB | packed 4-bit MB | MRLE MB | MRLE int16 MB | "
            "MRLE/raw | MRLE/4-bit | smallest | MRLE enc ms | MRLE dec ms | 4-bit pack ms | 4-bit unpack ms |")
    lines = [head, "|---" * 14 + "|"]
    mb = lambda x: "n/a" if x is None else f"{x / 1e6:.3f}"  # noqa: E731
    for r in doc["results"]:
        lines.append(f"| {r['kind']} | {r['matrices']} | {r['cells'] / 1e6:.2f} | {mb(r['raw_int32_bytes'])} | "
                     f"{mb(r['packed4_bytes'])} | {mb(r['mrle_bytes'])} | {mb(r['mrle16_bytes'])} | "
                     f"{r['mrle_over_raw']:.3f} | {r['mrle_over_packed4']:.2f} | {r['smallest']} | "
                     f"{1e3 * r['mrle_encode_s']:.2f} | {1e3 * r['mrle_decode_s']:.2f} | "
                     f"{1e3 * r['pack4_s']:.2f} | {1e3 * r['unpack4_s']:.2f} |")
    w = doc["workload"]
    text = [f"# MRLE vs packed 4-bit vs raw int32 ({doc['backend']})", "",
            f"{w['pairs']} pairs from {w['source']} (median lengths {w['median_m']} x {w['median_n']}), "
            f"BLOSUM62, gap open {w['gap_open']} extend {w['gap_extend']}; median of {w['repeat']} runs; "
            f"machine: {doc['machine'].get('cpu_model')}, {doc['machine'].get('cpus_usable')} CPUs, "
            f"GPUs: {doc['machine'].get('gpus') or 'none'}", "", *lines, ""]
    for r in doc["results"]:
        verdict = "MRLE is smaller than" if r["mrle_over_packed4"] < 1 else "MRLE is larger than"
        text.append(f"- {r['kind']}: smallest {r['smallest']}; {verdict} packed 4-bit "
                    f"({r['mrle_over_packed4']:.2f}x) and {r['mrle_over_raw']:.3f}x raw int32; MRLE encode+decode "
                    f"{1e3 * (r['mrle_encode_s'] + r['mrle_decode_s']):.1f} ms vs 4-bit pack+unpack "
                    f"{1e3 * (r['pack4_s'] + r['unpack4_s']):.1f} ms; round trip "
                    f"{'ok' if r['round_trip_ok'] else 'FAILED'}, same as CPU twin: {r['equals_cpu_twin']}")
    return "\n".join(text) + "\n"


def cmd_mrle(args) -> int:
    """Run the ``mrle`` benchmark; returns the exit status."""
    if args.backend == "gpu":
        from msa_gpu.backend import probe_gpu

        ok, why = probe_gpu()
        if not ok:
            print(f"error: --backend gpu: {why}", file=sys.stderr)
            return 3
        import cupy as xp

        sync = xp.cuda.Device().synchronize
    else:
        xp, sync = np, (lambda: None)
    pools, source = _pools(args)
    pairs = _pick_pairs(pools, args.pairs, args.seed)
    S = matrix_fixed("BLOSUM62", PROTEIN.letters).astype(np.int64)
    go, ge = 11 * SCALE, 1 * SCALE
    t0 = time.perf_counter()
    mats = _matrices(pairs, S, go, ge)
    print(f"{len(pairs)} pairs from {source}: DP tables in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    results = []
    for kind in KINDS:
        results.append(_measure(kind, mats[kind], xp, sync, args.repeat))
        print(json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in results[-1].items()}),
              file=sys.stderr)
    doc = {"benchmark": "mrle", "backend": args.backend,
           "created": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
           "command": getattr(args, "argv", None), "machine": report.machine_info(),
           "workload": {"source": source, "pairs": len(pairs), "seed": args.seed, "max_len": args.max_len,
                        "repeat": args.repeat, "matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1,
                        "median_m": int(np.median([len(p[3]) for p in pairs])),
                        "median_n": int(np.median([len(p[4]) for p in pairs])),
                        "numba_threads": numba.get_num_threads(),
                        "pair_list": [[p[0], p[1], p[2], len(p[3]), len(p[4])] for p in pairs]},
           "results": results}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.tag or _dt.date.today().isoformat()}-mrle-{args.backend}"
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    md = _markdown(doc)
    (out / f"{stem}.md").write_text(md)
    print(md)
    print(f"wrote {out / stem}.json and .md", file=sys.stderr)
    return 0 if all(r["round_trip_ok"] and r["equals_cpu_twin"] for r in results) else 1
