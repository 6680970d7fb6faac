"""Synthetic protein families of any size with their true alignment.

Sequences evolve down a random binary tree from a random root: each branch
substitutes residues by BLOSUM62's conditional probabilities
(``P(b | a) ~ q_b 2^(S(a,b) / 2)``, S in half bits) and inserts or deletes
runs of residues (geometric lengths). Every residue carries the position of
the root column (or inserted column) it descends from, so the true alignment
of any subset of leaves is known: its columns are the distinct positions,
sorted. Positions of inserted residues lie between their neighbours'.

``write_family`` writes ``NAME.tfa`` (all sequences), ``NAME.ref.fa`` (the
true alignment of a random sample, as Balifam scores only its reference
sequences) and ``NAME.core`` (every column scored), in the layout of
``benchmarks.datasets``.

>>> fam = evolve_family(50, 120, seed=1)
>>> len(fam.names), fam.sequences[0][:3].isalpha()
(50, True)
>>> names, rows = fam.reference(10, seed=2)
>>> len({len(r) for r in rows}), [r.replace(b"-", b"") for r in rows] == [fam.sequences[fam.names.index(n)] for n in names]
(1, True)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

AMINO = b"ARNDCQEGHILKMFPSTWYV"
#: Background amino-acid frequencies (Robinson & Robinson 1991), order of AMINO.
BACKGROUND = np.array([0.0787, 0.0507, 0.0447, 0.0536, 0.0193, 0.0395, 0.0631, 0.0737, 0.0220, 0.0515,
                       0.0902, 0.0575, 0.0225, 0.0385, 0.0520, 0.0712, 0.0584, 0.0132, 0.0321, 0.0673])
BACKGROUND = BACKGROUND / BACKGROUND.sum()


def _transitions() -> np.ndarray:
    """Cumulative rows of P(b | a) from BLOSUM62 (Biopython's copy)."""
    from Bio.Align import substitution_matrices

    m = substitution_matrices.load("BLOSUM62")
    s = np.array([[m[chr(a)][chr(b)] for b in AMINO] for a in AMINO], dtype=np.float64)
    p = BACKGROUND[None, :] * np.power(2.0, s / 2.0)
    np.fill_diagonal(p, 0.0)  # a substitution changes the residue
    p /= p.sum(axis=1, keepdims=True)
    return np.cumsum(p, axis=1)


@dataclass(frozen=True)
class SyntheticFamily:
    names: list[str]
    sequences: list[bytes]
    positions: list[np.ndarray]  # per sequence, the true column position of each residue

    def reference(self, size: int, seed: int = 0) -> tuple[list[str], list[bytes]]:
        """The true alignment of ``size`` sequences drawn at random (input order)."""
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(len(self.names), size=min(size, len(self.names)), replace=False))
        return [self.names[i] for i in pick], self.true_rows(pick)[1]

    def true_rows(self, pick) -> tuple[np.ndarray, list[bytes]]:
        """The true alignment of the sequences ``pick``: its columns (positions) and gapped rows."""
        cols = np.unique(np.concatenate([self.positions[i] for i in pick]))
        rows = []
        for i in pick:
            row = np.full(len(cols), ord("-"), dtype=np.uint8)
            row[np.searchsorted(cols, self.positions[i])] = np.frombuffer(self.sequences[i], dtype=np.uint8)
            rows.append(row.tobytes())
        return cols, rows


def evolve_family(n: int, length: int = 300, seed: int = 0, depth_divergence: float = 0.8,
                  indel_ratio: float = 0.05, mean_indel: float = 3.0, width_factor: float = 3.0) -> SyntheticFamily:
    """``n`` sequences of about ``length`` residues. A leaf is on average
    ``depth_divergence`` substitutions per site from the root (so two leaves
    share roughly 25-45% identity at the default); indels happen at
    ``indel_ratio`` times the substitution rate, with geometric lengths of
    mean ``mean_indel``, but no more often than keeps the true alignment
    about ``width_factor`` times as wide as the root: every insertion is
    unique to its lineage, so at a fixed rate the true width grows with n
    (36,000 columns for 20,000 sequences of 300 at 0.05), and so would any
    aligner's output."""
    rng = np.random.default_rng(seed)
    cum = _transitions()
    bg_cum = np.cumsum(BACKGROUND)
    # random binary tree by uniform splits of leaf ranges; expected depth ~ 2 ln n
    branch = depth_divergence / max(1.0, 2.0 * np.log(max(n, 2)))
    # insertions (half the events) add about n * 2 * branch * rate * length * mean_indel / 2 columns
    indel_ratio = min(indel_ratio, (width_factor - 1.0) / (n * branch * mean_indel))
    root = np.searchsorted(bg_cum, rng.random(length)).astype(np.int8).clip(0, 19)
    root_pos = np.arange(length, dtype=np.float64)
    seqs: list = [None] * n
    pos: list = [None] * n
    stack = [(0, n, root, root_pos)]
    while stack:
        lo, hi, res, p = stack.pop()
        if hi - lo == 1:
            seqs[lo], pos[lo] = AMINO_ARRAY[res].tobytes(), p
            continue
        cut = lo + 1 + int(rng.integers(0, hi - lo - 1)) if hi - lo > 2 else lo + 1
        for a, b in ((lo, cut), (cut, hi)):
            t = rng.exponential(branch)
            r2, p2 = _mutate(res, p, t, rng, cum, bg_cum, indel_ratio, mean_indel)
            stack.append((a, b, r2, p2))
    names = [f"syn{i:07d}" for i in range(n)]
    return SyntheticFamily(names, seqs, pos)


AMINO_ARRAY = np.frombuffer(AMINO, dtype=np.uint8)


def _mutate(res, pos, t, rng, cum, bg_cum, indel_ratio, mean_indel):
    """One branch of length ``t`` (substitutions per site)."""
    res = res.copy()
    hit = rng.random(len(res)) < -np.expm1(-t)
    if hit.any():
        u = rng.random(int(hit.sum()))
        res[hit] = (u[:, None] > cum[res[hit]]).sum(axis=1).clip(0, 19)
    events = rng.poisson(indel_ratio * t * len(res))
    for _ in range(events):
        size = int(rng.geometric(1.0 / mean_indel))
        at = int(rng.integers(0, len(res) + 1))
        if rng.random() < 0.5 and len(res) > size + 20:  # deletion
            res = np.concatenate([res[:at], res[at + size:]])
            pos = np.concatenate([pos[:at], pos[at + size:]])
        else:  # insertion between pos[at-1] and pos[at]
            left = pos[at - 1] if at > 0 else pos[0] - 1.0 if len(pos) else 0.0
            right = pos[at] if at < len(pos) else left + 1.0
            new_pos = left + (right - left) * np.sort(rng.uniform(0.05, 0.95, size))
            new_res = np.searchsorted(bg_cum, rng.random(size)).astype(np.int8).clip(0, 19)
            res = np.concatenate([res[:at], new_res, res[at:]])
            pos = np.concatenate([pos[:at], new_pos, pos[at:]])
    return res, pos


def write_family(fam: SyntheticFamily, folder: Path, name: str, ref_size: int = 500, seed: int = 0) -> Path:
    """Write ``name.tfa``, ``name.ref.fa`` and ``name.core`` into ``folder``;
    returns the input's path."""
    folder.mkdir(parents=True, exist_ok=True)
    tfa = folder / f"{name}.tfa"
    with open(tfa, "wb") as fh:
        for nm, s in zip(fam.names, fam.sequences):
            fh.write(b">" + nm.encode() + b"\n" + s + b"\n")
    names, rows = fam.reference(ref_size, seed)
    with open(folder / f"{name}.ref.fa", "wb") as fh:
        for nm, r in zip(names, rows):
            fh.write(b">" + nm.encode() + b"\n" + r + b"\n")
    (folder / f"{name}.core").write_text("1" * len(rows[0]) + "\n")
    return tfa


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write a synthetic protein family with its true alignment.")
    ap.add_argument("n", type=int)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ref-size", type=int, default=500)
    args = ap.parse_args(argv)
    fam = evolve_family(args.n, args.length, args.seed)
    print(write_family(fam, args.folder, f"syn{args.n}", args.ref_size, args.seed))


if __name__ == "__main__":
    main()
