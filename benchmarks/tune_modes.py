"""Accuracy grid of msagpu settings in one process (one batch call per
setting), scored per reference set: ``python -m benchmarks.tune_modes DIR
[--every K] [--backend gpu] "mode=accurate consistency=40" ...``.

DIR is an unpacked BAliBASE-layout folder; ``--every K`` takes every K-th
family (even/odd halves with ``--offset``). Prints one line per setting:
mean SP/TC, per-set TC, and the wall time of its batch call.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import read_aligned, read_core, read_sequences
from msa_gpu.accuracy import sp_tc


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def parse_setting(text: str) -> dict:
    """``"a=1 b=x"`` -> ``{"a": 1, "b": "x"}``.

    >>> parse_setting("mode=accurate consistency=40")
    {'mode': 'accurate', 'consistency': 40}
    """
    return {k: _value(v) for k, v in (item.split("=", 1) for item in text.split())}


def families(root: Path, every: int, offset: int) -> list[Path]:
    paths = sorted(root.glob("RV*/*.tfa"))
    return paths[offset::every]


LIBRARY_KEYS = ("mode", "library_mode", "library_weight", "library_gap_open", "library_gap_extend")
_LIBRARIES: dict = {}


def evaluate(paths: list[Path], setting: dict, backend: str, reuse: bool = False) -> dict:
    """Align and score; with ``reuse``, libraries of an earlier setting with
    the same library keys are injected (its time is then not counted)."""
    fams = [read_sequences(p) for p in paths]
    key = tuple(setting.get(k) for k in LIBRARY_KEYS)
    t0 = time.perf_counter()
    results = Aligner(AlignerConfig(backend=backend, **setting)).align_many(
        fams, libraries=_LIBRARIES.get(key) if reuse else None)
    wall = time.perf_counter() - t0
    if reuse:
        _LIBRARIES[key] = [r.library for r in results]
    per_set: dict[str, list] = {}
    for p, seqs, res in zip(paths, fams, results):
        names, ref = read_aligned(p.with_suffix(".ref.fa"))
        s = sp_tc(list(seqs.names), [r.upper() for r in res.rows()], names, ref, read_core(p.with_suffix(".core")))
        per_set.setdefault(p.parent.name, []).append((s.sp, s.tc))
    allv = np.array([v for vs in per_set.values() for v in vs])
    return {"sp": allv[:, 0].mean(), "tc": allv[:, 1].mean(), "wall": wall, "timings": results[0].timings,
            "sets": {k: float(np.mean([v[1] for v in vs])) for k, vs in sorted(per_set.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("settings", nargs="+")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--reuse-libraries", action="store_true", help="build each library setting once")
    ap.add_argument("--profile", action="store_true", help="cProfile the first setting, top 35 by cumulative time")
    args = ap.parse_args()
    paths = families(Path(args.root), args.every, args.offset)
    if args.profile:
        import cProfile
        import pstats

        evaluate(paths, parse_setting(args.settings[0]), args.backend)  # warm-up: kernels compiled and cached
        cProfile.runctx("evaluate(paths, parse_setting(args.settings[0]), args.backend)", globals(),
                        {"paths": paths, "args": args}, "/tmp/tune.prof")
        pstats.Stats("/tmp/tune.prof").sort_stats("cumulative").print_stats(45)
        pstats.Stats("/tmp/tune.prof").sort_stats("tottime").print_stats(25)
        return
    for text in args.settings:
        r = evaluate(paths, parse_setting(text), args.backend, args.reuse_libraries)
        sets = " ".join(f"{k}:{v:.3f}" for k, v in r["sets"].items())
        stages = " ".join(f"{k}:{v:.1f}" for k, v in r["timings"].items())
        print(f"{text:60s} SP {r['sp']:.4f} TC {r['tc']:.4f} {r['wall']:6.1f}s | {sets} | {stages}", flush=True)


if __name__ == "__main__":
    main()
