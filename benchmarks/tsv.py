"""Speed of the pairwise TSV writer (``python -m benchmarks.tsv [--pairs N]
[--old-pairs M,...]``): `write_pairs_tsv` against the per-pair writer it
replaced, on a synthetic result (random runs and scores, no alignment run).

The old writer reads ``result.scores`` (a fresh array) once per row, so it
is quadratic; it is timed on the smaller ``--old-pairs`` sizes, as is the
same loop with that array read once ("old, scores hoisted"). At each old
size the new writer's bytes are checked against the old one's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from msa_gpu.backend.pairwise import PairAlignments, PairMode, all_pair_indices
from msa_gpu.io import make_sequences, write_pairs_tsv, write_text


def synthetic(pairs: int, seed: int = 0):
    """(PairAlignments, Sequences): all pairs of enough sequences, first
    ``pairs`` of them, 1 to 12 runs of 1 to 300 columns per pair."""
    rng = np.random.default_rng(seed)
    n = int(np.ceil((1 + np.sqrt(1 + 8 * pairs)) / 2))
    seqs = make_sequences([f"seq{k} synthetic sequence {k % 97}" for k in range(n)], [b"A"] * n, "protein")
    p = all_pair_indices(n)[:pairs]
    off = np.concatenate([[0], np.cumsum(rng.integers(1, 13, pairs))])
    runs = rng.integers(1, 301, off[-1]).astype(np.uint32) << 2 | rng.integers(0, 3, off[-1]).astype(np.uint32)
    start = rng.integers(0, 400, (pairs, 2))
    aligned = rng.integers(0, 600, pairs)
    end = start + rng.integers(0, 600, (pairs, 2))
    result = PairAlignments(p, PairMode.local, rng.integers(-2000, 200000, pairs), end, start, runs, off,
                            rng.integers(0, aligned + 1), aligned, rng.integers(0, 1200, pairs))
    return result, seqs


def old_write_pairs_tsv(result, seqs, path, cigar=False, hoist=False):
    """The per-pair writer that `write_pairs_tsv` replaced; ``hoist`` reads
    ``result.scores`` once instead of once per row."""
    head = ["name_a", "name_b", "score", "identity", "aligned_length", "a_begin", "a_end", "b_begin", "b_end"]
    ident, length = result.identity, result.aligned_length
    scores = result.scores if hoist else None

    def emit(h) -> None:
        h.write("\t".join(head + (["cigar"] if cigar else [])) + "\n")
        for k, (i, j) in enumerate(result.pairs):
            score = scores[k] if hoist else result.scores[k]
            row = [seqs.names[i], seqs.names[j], f"{score:g}", f"{ident[k]:.4f}", str(length[k]),
                   str(result.start[k, 0]), str(result.end[k, 0]), str(result.start[k, 1]), str(result.end[k, 1])]
            if cigar:
                row.append(result.cigar(k))
            h.write("\t".join(row) + "\n")

    write_text(path, emit)


def _timed(writer, *args, **kwargs) -> float:
    t = time.perf_counter()
    writer(*args, **kwargs)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tsv", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000, help="pairs for the new writer (default 1,000,000)")
    parser.add_argument("--old-pairs", default="10000,20000",
                        help="comma-separated pair counts for the old writer (default 10000,20000)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        new, old = Path(tmp) / "new.tsv", Path(tmp) / "old.tsv"
        sizes = [(int(x), True) for x in args.old_pairs.split(",") if x] + [(args.pairs, False)]
        for P, with_old in sizes:
            result, seqs = synthetic(P)
            for cigar in (False, True):
                t = _timed(write_pairs_tsv, result, seqs, new, cigar=cigar)
                line = f"{P:>9,} pairs  cigar={cigar!s:5}  new {t:7.3f} s ({new.stat().st_size / 2**20:6.1f} MiB)"
                if with_old:
                    th = _timed(old_write_pairs_tsv, result, seqs, old, cigar=cigar, hoist=True)
                    to = _timed(old_write_pairs_tsv, result, seqs, old, cigar=cigar)
                    same = "same bytes" if new.read_bytes() == old.read_bytes() else "BYTES DIFFER"
                    line += f"  old, scores hoisted {th:7.3f} s  old {to:7.3f} s  {same}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
