"""Synthetic protein families of any size with their true alignment.

Sequences evolve down a random binary tree from a root drawn from LG's
residue frequencies, under a published model that msagpu does not score
with: substitutions by the LG rate matrix (Le SQ, Gascuel O (2008), Mol Biol
Evol 25:1307-1320; its exchangeabilities and frequencies as distributed with
PAML and PhyML), ``P(t) = exp(Q t)`` along a branch of ``t`` expected
substitutions per site; insertions and deletions with lengths from the power
law of Benner SA, Cohen MA, Gonnet GH (1993), J Mol Biol 229:1065-1082,
``P(k) ~ k^-1.7`` (truncated at 50 residues), inserted residues drawn from
LG's frequencies. (Until 2026-11-25 it substituted by BLOSUM62, msagpu's own
default matrix, with geometric indel lengths: figures before that date were
made on such families.) Every residue carries the position of
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
#: LG's exchangeabilities, lower triangle by rows in the order of AMINO (PAML's lg.dat).
LG_EXCHANGEABILITIES = """
0.425093
0.276818 0.751878
0.395144 0.123954 5.076149
2.489084 0.534551 0.528768 0.062556
0.969894 2.807908 1.695752 0.523386 0.084808
1.038545 0.363970 0.541712 5.243870 0.003499 4.128591
2.066040 0.390192 1.437645 0.844926 0.569265 0.267959 0.348847
0.358858 2.426601 4.509238 0.927114 0.640543 4.813505 0.423881 0.311484
0.149830 0.126991 0.191503 0.010690 0.320627 0.072854 0.044265 0.008705 0.108882
0.395337 0.301848 0.068427 0.015076 0.594007 0.582457 0.069673 0.044261 0.366317 4.145067
0.536518 6.326067 2.145078 0.282959 0.013266 3.234294 1.807177 0.296636 0.697264 0.159069 0.137500
1.124035 0.484133 0.371004 0.025548 0.893680 1.672569 0.173735 0.139538 0.442472 4.273607 6.312358 0.656604
0.253701 0.052722 0.089525 0.017416 1.105251 0.035855 0.018811 0.089586 0.682139 1.112727 2.592692 0.023918
 1.798853
1.177651 0.332533 0.161787 0.394456 0.075382 0.624294 0.419409 0.196961 0.508851 0.078281 0.249060 0.390322
 0.099849 0.094464
4.727182 0.858151 4.008358 1.240275 2.784478 1.223828 0.611973 1.739990 0.990012 0.064105 0.182287 0.748683
 0.346960 0.361819 1.338132
2.139501 0.578987 2.000679 0.425860 1.143480 1.080136 0.604545 0.129836 0.584262 1.033739 0.302936 1.136863
 2.020366 0.165001 0.571468 6.472279
0.180717 0.593607 0.045376 0.029890 0.670128 0.236199 0.077852 0.268491 0.597054 0.111660 0.619632 0.049906
 0.696175 2.457121 0.095131 0.248862 0.140825
0.218959 0.314440 0.612025 0.135107 1.165532 0.257336 0.120037 0.054679 5.306834 0.232523 0.299648 0.131932
 0.481306 7.803902 0.089613 0.400547 0.245841 3.151815
2.547870 0.170887 0.083688 0.037967 1.959291 0.210332 0.245034 0.076701 0.119013 10.649107 1.702745 0.185202
 1.898718 0.654683 0.296501 0.098369 2.188158 0.189510 0.249313
"""
#: LG's equilibrium residue frequencies, order of AMINO.
LG_FREQUENCIES = np.array([0.079066, 0.055941, 0.041977, 0.053052, 0.012937, 0.040767, 0.071586, 0.057337,
                           0.022355, 0.062157, 0.099081, 0.064600, 0.022951, 0.042302, 0.044040, 0.061197,
                           0.053287, 0.012066, 0.034155, 0.069147])
#: Indel lengths: P(k) ~ k^-INDEL_EXPONENT for k = 1..MAX_INDEL (Benner, Cohen and Gonnet 1993).
INDEL_EXPONENT = 1.7
MAX_INDEL = 50


def lg_rates() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LG's rate matrix as its eigensystem: ``Q = V diag(w) V^-1``, scaled to
    one expected substitution per unit of time (returns w, V, V^-1)."""
    values = np.array(LG_EXCHANGEABILITIES.split(), dtype=np.float64)
    assert len(values) == 190
    s = np.zeros((20, 20))
    s[np.tril_indices(20, -1)] = values
    s = s + s.T
    pi = LG_FREQUENCIES / LG_FREQUENCIES.sum()
    q = s * pi[None, :]
    np.fill_diagonal(q, -q.sum(axis=1))
    q /= -(pi * np.diag(q)).sum()
    # reversible: D^1/2 Q D^-1/2 is symmetric, so its eigensystem is real
    root = np.sqrt(pi)
    w, u = np.linalg.eigh(root[:, None] * q / root[None, :])
    return w, u / root[:, None], (u * root[:, None]).T


def transition(rates, t: float) -> np.ndarray:
    """Cumulative rows of P(t) = exp(Q t)."""
    w, v, v_inv = rates
    p = np.clip((v * np.exp(w * t)[None, :]) @ v_inv, 0.0, None)
    p /= p.sum(axis=1, keepdims=True)
    return np.cumsum(p, axis=1)


def indel_lengths() -> tuple[np.ndarray, float]:
    """Cumulative probabilities of indel lengths 1..MAX_INDEL, and their mean."""
    k = np.arange(1, MAX_INDEL + 1, dtype=np.float64)
    p = k ** -INDEL_EXPONENT
    p /= p.sum()
    return np.cumsum(p), float((k * p).sum())


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
                  indel_ratio: float = 0.05, width_factor: float = 3.0) -> SyntheticFamily:
    """``n`` sequences of about ``length`` residues. A leaf is on average
    ``depth_divergence`` substitutions per site from the root (so two leaves
    share roughly 25-45% identity at the default); indels happen at
    ``indel_ratio`` times the substitution rate, with power-law lengths
    (`indel_lengths`), but no more often than keeps the true alignment
    about ``width_factor`` times as wide as the root: every insertion is
    unique to its lineage, so at a fixed rate the true width grows with n
    (36,000 columns for 20,000 sequences of 300 at 0.05), and so would any
    aligner's output."""
    rng = np.random.default_rng(seed)
    rates = lg_rates()
    bg_cum = np.cumsum(LG_FREQUENCIES / LG_FREQUENCIES.sum())
    len_cum, mean_indel = indel_lengths()
    # random binary tree by uniform splits of leaf ranges; expected depth ~ 2 ln n
    branch = depth_divergence / max(1.0, 2.0 * np.log(max(n, 2)))
    # insertions (half the events) add about n * 2 * branch * rate * length * mean_indel / 2 columns
    indel_ratio = min(indel_ratio, (width_factor - 1.0) / (n * branch * mean_indel))
    root = np.searchsorted(bg_cum, rng.random(length)).astype(np.int8).clip(0, 19)
    seqs, pos = evolve_down_tree(n, root, branch, rng, AMINO_ARRAY,
                                 lambda res, p, t: _mutate(res, p, t, rng, transition(rates, t), bg_cum, indel_ratio,
                                                           len_cum))
    names = [f"syn{i:07d}" for i in range(n)]
    return SyntheticFamily(names, seqs, pos)


def evolve_down_tree(n: int, root: np.ndarray, branch: float, rng, letters: np.ndarray, mutate,
                     clades: list | None = None):
    """``n`` leaves' sequences (bytes over ``letters``) and positions, from
    ``root`` down a random binary tree by uniform splits of leaf ranges, each
    branch ``rng.exponential(branch)`` long and evolved by ``mutate(res,
    positions, t)``. ``clades``, if given, receives the true tree's clades of
    more than one leaf as leaf ranges ``(lo, hi)``."""
    seqs: list = [None] * n
    pos: list = [None] * n
    stack = [(0, n, root, np.arange(len(root), dtype=np.float64))]
    while stack:
        lo, hi, res, p = stack.pop()
        if hi - lo == 1:
            seqs[lo], pos[lo] = letters[res].tobytes(), p
            continue
        cut = lo + 1 + int(rng.integers(0, hi - lo - 1)) if hi - lo > 2 else lo + 1
        if clades is not None:
            clades.append((lo, hi))
        for a, b in ((lo, cut), (cut, hi)):
            r2, p2 = mutate(res, p, rng.exponential(branch))
            stack.append((a, b, r2, p2))
    return seqs, pos


AMINO_ARRAY = np.frombuffer(AMINO, dtype=np.uint8)


def _mutate(res, pos, t, rng, cum, bg_cum, indel_ratio, len_cum):
    """One branch of length ``t`` (expected substitutions per site); ``cum``:
    the cumulative rows of its P(t)."""
    u = rng.random(len(res))
    res = (u[:, None] > cum[res]).sum(axis=1).clip(0, 19).astype(np.int8)
    events = rng.poisson(indel_ratio * t * len(res))
    for _ in range(events):
        size = 1 + int(np.searchsorted(len_cum, rng.random()))
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
