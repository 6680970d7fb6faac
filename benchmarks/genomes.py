"""Synthetic nucleotide genome families with their true alignment (issue 31).

A root genome of ``length`` bases drawn uniformly evolves down a random
binary tree (as `benchmarks.synthetic` does for proteins): substitutions by
Kimura's two-parameter model (Kimura M (1980), J Mol Evol 16:111-120;
transition/transversion rate ratio ``kappa`` 2), ``P(t) = exp(Q t)`` along a
branch of ``t`` expected substitutions per site; insertions and deletions
at ``indel_ratio`` times the substitution rate, with the power-law lengths of
`benchmarks.synthetic.indel_lengths` (Benner et al. 1993), inserted bases
drawn uniformly. Every base keeps the position of the column it descends
from, so the true alignment of any subset is known. With ``moves`` (the
expected number of rearrangements in the whole family), a branch may also
cut out a block of `MOVE_LENGTHS` bases and put it back elsewhere: a
collinear alignment cannot hold it both in its old place and its new one, so
the truth aligns the moved block among the genomes that inherit the move, in
new columns at its new place, and leaves its old columns as gaps in them.

``pair(length)`` gives two genomes at a chosen divergence (issue 31's
100 kb pair); ``family(n, length)`` a family. ``python -m benchmarks long``
writes the pair and families of the sizes asked as sets of a benchmark
folder and runs `benchmarks.tradeoff` on each set in turn (msagpu's mode
auto and the peers, MAFFT --auto and FAMSA by default), so each set's times
are its own: ``<tag>-<set>-tradeoff-genomes.{json,md}``.

>>> fam = family(4, 2000, seed=1)
>>> len(fam.names), {len(r) for r in fam.true_rows(range(4))[1]} == {len(fam.true_rows(range(4))[0])}
(4, True)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.synthetic import SyntheticFamily, evolve_down_tree, indel_lengths, write_family

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def k80(t: float, kappa: float = 2.0) -> np.ndarray:
    """Cumulative rows of Kimura's two-parameter P(t) over A, C, G, T, with
    ``t`` expected substitutions per site.

    >>> np.allclose(k80(0.1)[:, -1], 1.0), k80(0.0)[0].tolist()
    (True, [1.0, 1.0, 1.0, 1.0])
    """
    beta = 1.0 / (kappa + 2.0)  # rates: transitions kappa * beta, transversions beta each; total 1
    alpha = kappa * beta
    e1, e2 = np.exp(-4.0 * beta * t), np.exp(-2.0 * (alpha + beta) * t)
    same = 0.25 + 0.25 * e1 + 0.5 * e2
    ts = 0.25 + 0.25 * e1 - 0.5 * e2
    tv = 0.25 - 0.25 * e1
    transition = {0: 2, 1: 3, 2: 0, 3: 1}  # A<->G, C<->T
    p = np.full((4, 4), tv)
    for a in range(4):
        p[a, a], p[a, transition[a]] = same, ts
    return np.cumsum(p, axis=1)


#: Lengths of a moved block (bases, uniform).
MOVE_LENGTHS = (200, 2000)


def move_block(res: np.ndarray, pos: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """``res`` with one block of `MOVE_LENGTHS` bases cut out and put back at
    another place, in new columns between its new neighbours' (the truth
    cannot keep a moved block in its old columns).

    >>> rng = np.random.default_rng(0)
    >>> res, pos = move_block(np.arange(10000) % 4, np.arange(10000.0), rng)
    >>> sorted(res.tolist()) == sorted((np.arange(10000) % 4).tolist()), bool(np.all(np.diff(pos) > 0))
    (True, True)
    >>> int((pos != np.floor(pos)).sum()) in range(*MOVE_LENGTHS)  # the block's new columns
    True
    """
    k = int(rng.integers(MOVE_LENGTHS[0], MOVE_LENGTHS[1]))
    if len(res) < 3 * k:
        return res, pos
    a = int(rng.integers(0, len(res) - k + 1))
    block = res[a: a + k]
    rest_r, rest_p = np.concatenate([res[:a], res[a + k:]]), np.concatenate([pos[:a], pos[a + k:]])
    d = int(rng.integers(0, len(rest_r) + 1))
    left = rest_p[d - 1] if d > 0 else rest_p[0] - 1.0
    right = rest_p[d] if d < len(rest_p) else left + 1.0
    new_p = left + (right - left) * np.linspace(0.05, 0.95, k)
    return (np.concatenate([rest_r[:d], block, rest_r[d:]]).astype(res.dtype),
            np.concatenate([rest_p[:d], new_p, rest_p[d:]]))


def _branch(res: np.ndarray, pos: np.ndarray, t: float, rng, indel_ratio: float, len_cum: np.ndarray,
            move_rate: float = 0.0):
    """One branch of length ``t``: substitutions, indels (positions of
    inserted bases between their neighbours'), then moved blocks
    (``move_rate`` per base per unit of ``t``)."""
    cum = k80(t)
    res = (rng.random(len(res))[:, None] > cum[res]).sum(axis=1).clip(0, 3).astype(np.int8)
    res, pos = _indels(res, pos, t, rng, indel_ratio, len_cum)
    for _ in range(int(rng.poisson(move_rate * t * len(res))) if move_rate else 0):
        res, pos = move_block(res, pos, rng)
    return res, pos


def _indels(res: np.ndarray, pos: np.ndarray, t: float, rng, indel_ratio: float, len_cum: np.ndarray):
    events = int(rng.poisson(indel_ratio * t * len(res)))
    if not events:
        return res, pos
    at = np.sort(rng.integers(0, len(res), events))
    sizes = 1 + np.searchsorted(len_cum, rng.random(events))
    deletion = rng.random(events) < 0.5
    parts_r, parts_p, last = [], [], 0
    for a, k, d in zip(at.tolist(), sizes.tolist(), deletion.tolist()):
        if a < last:
            continue
        parts_r.append(res[last:a])
        parts_p.append(pos[last:a])
        if d:
            last = min(len(res), a + k)
        else:  # after whatever this branch already put before base a (an earlier insertion at a included)
            done = [q for q in parts_p if len(q)]
            left = done[-1][-1] if done else pos[0] - 1.0
            right = pos[a]
            parts_r.append(rng.integers(0, 4, k).astype(np.int8))
            parts_p.append(left + (right - left) * np.sort(rng.uniform(0.05, 0.95, k)))
            last = a
    parts_r.append(res[last:])
    parts_p.append(pos[last:])
    return np.concatenate(parts_r), np.concatenate(parts_p)


def family(n: int, length: int = 30000, seed: int = 0, divergence: float = 0.1,
           indel_ratio: float = 0.1, moves: float = 0.0, clades: list | None = None) -> SyntheticFamily:
    """``n`` genomes of about ``length`` bases, each about ``divergence``
    substitutions per site from the root (two leaves about twice that apart),
    with about ``moves`` moved blocks in the whole tree; ``clades`` receives
    the true tree's clades (`benchmarks.synthetic.evolve_down_tree`)."""
    rng = np.random.default_rng(seed)
    len_cum, _ = indel_lengths()
    branch = divergence / max(1.0, 2.0 * np.log(max(n, 2)))
    move_rate = moves / ((2 * max(n, 2) - 2) * branch * length)  # per base per unit of t, over the tree's length
    root = rng.integers(0, 4, length).astype(np.int8)
    seqs, pos = evolve_down_tree(n, root, branch, rng, BASES,
                                 lambda res, p, t: _branch(res, p, t, rng, indel_ratio, len_cum, move_rate),
                                 clades)
    return SyntheticFamily([f"g{i:06d}" for i in range(n)], seqs, pos)


def pair(length: int = 100000, seed: int = 0, divergence: float = 0.05, indel_ratio: float = 0.1) -> SyntheticFamily:
    """Two genomes of about ``length`` bases, each ``divergence`` substitutions
    per site from their common ancestor."""
    rng = np.random.default_rng(seed)
    len_cum, _ = indel_lengths()
    root = rng.integers(0, 4, length).astype(np.int8)
    p0 = np.arange(length, dtype=np.float64)
    out = [_branch(root, p0, divergence, rng, indel_ratio, len_cum) for _ in range(2)]
    return SyntheticFamily(["g0", "g1"], [BASES[r].tobytes() for r, _ in out], [p for _, p in out])


def write_sets(root: Path, sizes: list[int], length: int, pair_length: int, seed: int = 0,
               moves: float = 0.0) -> list[str]:
    """The benchmark folder's sets (one family each): ``pair<L>`` and
    ``genomes<n>`` (``genomes<n>m<moves>`` with moved blocks); returns the set names."""
    sets = []
    if pair_length:
        name = f"pair{pair_length}"
        write_family(pair(pair_length, seed), root / name, name, ref_size=2, seed=seed)
        sets.append(name)
    for n in sizes:
        name = f"genomes{n}" + (f"m{moves:g}" if moves else "")
        fam = family(n, length, seed, moves=moves)
        write_family(fam, root / name, name, ref_size=min(n, 500), seed=seed)
        sets.append(name)
    return sets


def register(sub) -> None:
    """Add the ``long`` subcommand."""
    b = sub.add_parser("long", help="long nucleotide genomes with their true alignment: msagpu against MAFFT and FAMSA")
    b.add_argument("--sizes", default="100,1000", help="family sizes (comma-separated; empty: none)")
    b.add_argument("--length", type=int, default=30000, help="genome length of the families")
    b.add_argument("--pair-length", type=int, default=100000, help="the pair's length (0: no pair)")
    b.add_argument("--moves", type=float, default=0.0, help="expected moved blocks in each family (rearrangements)")
    b.add_argument("--peers", default="famsa,mafft-auto")
    b.add_argument("--peer-jobs", default="1")
    b.add_argument("--peer-threads", default="1")
    b.add_argument("--backend", choices=["auto", "cpu", "gpu"], default="auto")
    b.add_argument("--timeout", default="1800")
    b.add_argument("--peer-prefix", default=None)
    b.add_argument("--data", default=None, help="write the sets here and keep them (default: a temporary folder)")
    b.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    b.add_argument("--tag", default=None)
    b.set_defaults(func=cmd_long)


def cmd_long(args) -> int:
    import datetime as dt
    import tempfile

    from benchmarks.__main__ import main as bench_main

    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    tag = args.tag or dt.date.today().isoformat()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.data) if args.data else Path(tmp) / "genomes"
        sets = write_sets(root, sizes, args.length, args.pair_length, moves=args.moves)
        for name in sets:
            argv = ["tradeoff", "--data", str(root), "--sets", name, "--modes", "auto", "--peers", args.peers,
                    "--peer-jobs", args.peer_jobs, "--peer-threads", args.peer_threads, "--backend", args.backend,
                    "--timeout", args.timeout, "--out", args.out, "--tag", f"{tag}-{name}", "--quiet"]
            if args.peer_prefix:
                argv += ["--peer-prefix", args.peer_prefix]
            rc = bench_main(argv)
            if rc:
                return rc
    return 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write a synthetic genome family (or the pair) with its true alignment.")
    ap.add_argument("n", type=int, help="genomes (2 with --pair)")
    ap.add_argument("folder", type=Path)
    ap.add_argument("--length", type=int, default=30000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pair", action="store_true", help="two genomes 0.05 substitutions per site from their ancestor")
    ap.add_argument("--moves", type=float, default=0.0, help="expected moved blocks in the family")
    args = ap.parse_args(argv)
    fam = pair(args.length, args.seed) if args.pair else family(args.n, args.length, args.seed, moves=args.moves)
    name = f"pair{args.length}" if args.pair else f"genomes{args.n}x{args.length}"
    print(write_family(fam, args.folder, name, ref_size=len(fam.names), seed=args.seed))


if __name__ == "__main__":
    main()
