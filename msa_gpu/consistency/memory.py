"""The memory plan of accurate mode's pair-HMM library (issue 43): how many
entries a phase may hold and what they take, said before the library is
built (`probabilistic.library_memory`) and checked as it is
(`probabilistic._Group.libraries`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.backend import DENSE_BATCH_BYTES, budget_chunks

#: Entries a residue row of a pair keeps in one phase of the posterior library
#: (posteriors, then each transformation), as planned: the most seen in any
#: phase over BAliBASE's 218 families, balifam100's 59 and a 300-sequence Pfam
#: family was 11.1, the mean 4.9 (H200, `.dev/exp/entries.py`, 2026-11-27).
#: The hard bound is 1 / cutoff = 100: a row's posteriors sum to at most 1.
ROW_ENTRIES = 12
#: ... for nucleotides (ProbConsRNA's pair-HMM, issue 58): their posteriors
#: spread over more cells. The most in any phase over bralibase3_dev's 45
#: families was 10.9 (median 7.3), over 55 random related DNA and RNA
#: families 16.2; unrelated random RNA reaches 25 (and warns). Compositionally
#: biased random protein reaches 22 the same way (2-core VM, session 57).
NUCLEOTIDE_ROW_ENTRIES = 16


def planned_entries(rows: int, nucleotide: bool = False) -> int:
    """Entries a phase may hold over pairs whose residue rows, counted in
    both directions, are ``rows``: `ROW_ENTRIES` a row of an unordered pair
    (`NUCLEOTIDE_ROW_ENTRIES` for nucleotides)."""
    return (NUCLEOTIDE_ROW_ENTRIES if nucleotide else ROW_ENTRIES) * rows // 2


@dataclass(frozen=True)
class LibraryPlan:
    """What accurate mode's pair-HMM library holds at most (each field the
    most of any group of families built together): ``entries`` a phase,
    and its peak bytes on the CPU backend (host) or the GPU backend
    (device); of the device's, ``dense_gb`` is the batch of dense pair
    matrices, made and let go within each phase (not held while other
    families' libraries are built)."""

    entries: int
    host_gb: float
    device_gb: float
    dense_gb: float = 0.0

    def line(self, gpu: bool) -> str:
        where = f"{self.device_gb:.2f} GB device" if gpu else f"{self.host_gb:.2f} GB host"
        return f"memory plan: the pair-HMM library at most about {where} ({self.entries:,} entries a pass at most)"


def library_plan(groups: list[list[np.ndarray]], threads: int = 1, nucleotide=False) -> LibraryPlan:
    """The plan of the libraries of ``groups`` (each a list of families'
    lengths, built together, one after another; ``nucleotide``: a flag for
    all groups or one a group): each field the most of any group (the
    group with the most host bytes need not hold the most device bytes or
    entries). A family of n sequences
    has (n - 1) * sum(L) rows over its ordered pairs and at most
    `ROW_ENTRIES` entries a row of an unordered pair. On the CPU a phase
    holds its input as CSR (both directions: 2 x (index + 4 bytes value)),
    its flat output (pair 4, two indices, value 4 bytes), the per-pair
    pieces of the step being written (12 bytes an entry; counted as if
    whole, which keeps the plan above the peak), the row pointers (4 bytes
    a row; 8 past 2^31 entries) and each thread's work space (the posteriors:
    a matrix of doubles and three anti-diagonals; the transformation: a
    matrix of 64-bit sums); on the GPU the flat arrays
    (28 bytes an entry) and the device sort's keys, order, columns and values
    (64 bytes), and a batch of the pairs' dense matrices (8 bytes a cell of
    every pair s < t, at most `DENSE_BATCH_BYTES`: the posteriors and each
    transformation write their pairs' cells in such batches).

    >>> p = library_plan([[[407] * 142]], threads=2)  # BB30003's shape
    >>> p.entries, round(p.host_gb, 2), round(p.device_gb, 2), round(p.dense_gb, 2)
    (48893724, 1.8, 13.15, 8.59)
    >>> library_plan([[[100] * 10]], nucleotide=True).entries, library_plan([[[100] * 10]]).entries
    (72000, 54000)
    >>> p = library_plan([[[1000, 1000]], [[200] * 10]])  # a long pair's work space, many short pairs' entries
    >>> p.entries, round(p.host_gb, 4), round(p.device_gb, 4)
    (108000, 0.0166, 0.0245)
    """
    flags = np.asarray(nucleotide, dtype=bool)
    if flags.ndim and flags.shape != (len(groups),):
        raise ValueError(f"library_plan: {flags.size} nucleotide flags for {len(groups)} groups")
    flags = np.broadcast_to(flags, (len(groups),))
    best = LibraryPlan(0, 0.0, 0.0)
    for group, nuc in zip(groups, flags):
        rows = sum((len(L) - 1) * int(sum(int(v) for v in L)) for L in group)
        entries = planned_entries(rows, nuc)
        longest = max((int(max(L)) for L in group if len(L)), default=0)
        index = 2 if longest < (1 << 15) else 4
        wide = 2 * entries > (1 << 31) - 1
        work = threads * (8 * (longest + 1) ** 2 + 120 * (longest + 1) + 8 * longest ** 2)
        host = entries * (2 * (index + 4) + 12 + 8 + 2 * index) + rows * (8 if wide else 4) + work
        cells = sum((int(sum(int(v) for v in L)) ** 2 - sum(int(v) ** 2 for v in L)) // 2 for L in group)
        dense = min(8 * cells, DENSE_BATCH_BYTES)
        device = entries * (28 + 64) + 8 * rows + dense
        best = LibraryPlan(max(best.entries, entries), max(best.host_gb, host / 1e9), max(best.device_gb, device / 1e9),
                           max(best.dense_gb, dense / 1e9))
    return best


def library_waves(lengths: list, budget: int, threads: int = 1, gpu: bool = False,
                  nucleotide: list | None = None) -> list[list[int]]:
    """Families in waves whose pair-HMM libraries' plans (`library_plan`
    of each family alone; host bytes, or with ``gpu`` device bytes, the
    dense batch counted once, the wave's largest) add up to at most ``budget`` bytes,
    in their order; ``lengths`` holds each family's sequence lengths, None
    for one that builds no posterior library (those go with the first
    wave), ``nucleotide`` which are nucleotides. A family over the budget alone makes a wave of its own.

    >>> library_waves([[407] * 142, None, [100] * 10, [407] * 142], 2 * 10 ** 9, threads=2)
    [[0, 1, 2], [3]]
    >>> library_waves([[100] * 10, [100] * 10], 10 ** 9)
    [[0, 1]]
    >>> library_waves([[407] * 142, [407] * 142], 14 * 10 ** 9, gpu=True)  # 4.56 GB held, 8.59 GB dense each
    [[0], [1]]
    >>> library_waves([[407] * 142, [407] * 142], 18 * 10 ** 9, gpu=True)  # 2 x 4.56 + 8.59
    [[0, 1]]
    """
    todo = [f for f, L in enumerate(lengths) if L is not None]
    nuc = nucleotide or [False] * len(lengths)
    plans = [library_plan([[lengths[f]]], threads, nuc[f]) for f in todo]
    dense = max((p.dense_gb for p in plans), default=0.0) * 1e9 if gpu else 0.0
    need = [((p.device_gb - p.dense_gb) if gpu else p.host_gb) * 1e9 for p in plans]
    budget = max(1, int(budget - dense))
    waves = [[todo[int(k)] for k in chunk] for chunk in budget_chunks(need, budget)] or [[]]
    waves[0] = sorted(waves[0] + [f for f, L in enumerate(lengths) if L is None])
    return [w for w in waves if w]
