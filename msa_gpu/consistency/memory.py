"""The memory plan of accurate mode's pair-HMM library (issue 43): how many
entries a phase may hold and what they take, said before the library is
built (`probabilistic.library_memory`) and checked as it is
(`probabilistic._Group.libraries`)."""

from __future__ import annotations

from dataclasses import dataclass

from msa_gpu.arrays import budget_chunks

#: Entries a residue row of a pair keeps in one phase of the posterior library
#: (posteriors, then each transformation), as planned: the most seen in any
#: phase over BAliBASE's 218 families, balifam100's 59 and a 300-sequence Pfam
#: family was 11.1, the mean 4.9 (H200, `.dev/exp/entries.py`, 2026-11-27).
#: The hard bound is 1 / cutoff = 100: a row's posteriors sum to at most 1.
ROW_ENTRIES = 12


def planned_entries(rows: int) -> int:
    """Entries a phase may hold over pairs whose residue rows, counted in
    both directions, are ``rows``: `ROW_ENTRIES` a row of an unordered pair."""
    return ROW_ENTRIES * rows // 2


@dataclass(frozen=True)
class LibraryPlan:
    """What accurate mode's pair-HMM library holds at most (the largest group
    of families built together): ``entries`` a phase, and its peak bytes on
    the CPU backend (host) or the GPU backend (device)."""

    entries: int
    host_gb: float
    device_gb: float

    def line(self, gpu: bool) -> str:
        where = f"{self.device_gb:.2f} GB device" if gpu else f"{self.host_gb:.2f} GB host"
        return f"memory plan: the pair-HMM library at most about {where} ({self.entries:,} entries a pass at most)"


def library_plan(groups: list[list[np.ndarray]], threads: int = 1) -> LibraryPlan:
    """The plan of the libraries of ``groups`` (each a list of families'
    lengths, built together), its largest group. A family of n sequences
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
    (64 bytes), besides the dense batches (`posterior_gpu.block_bytes`, a
    quarter of the free memory at most).

    >>> p = library_plan([[[407] * 142]], threads=2)  # BB30003's shape
    >>> p.entries, round(p.host_gb, 2), round(p.device_gb, 2)
    (48893724, 1.8, 4.56)
    """
    best = LibraryPlan(0, 0.0, 0.0)
    for group in groups:
        rows = sum((len(L) - 1) * int(sum(int(v) for v in L)) for L in group)
        entries = planned_entries(rows)
        longest = max((int(max(L)) for L in group if len(L)), default=0)
        index = 2 if longest < (1 << 15) else 4
        wide = 2 * entries > (1 << 31) - 1
        work = threads * (8 * (longest + 1) ** 2 + 120 * (longest + 1) + 8 * longest ** 2)
        host = entries * (2 * (index + 4) + 12 + 8 + 2 * index) + rows * (8 if wide else 4) + work
        device = entries * (28 + 64) + 8 * rows
        if host > best.host_gb * 1e9:
            best = LibraryPlan(entries, host / 1e9, device / 1e9)
    return best


def library_waves(lengths: list, budget: int, threads: int = 1, gpu: bool = False) -> list[list[int]]:
    """Families in waves whose pair-HMM libraries' plans (`library_plan`
    of each family alone; host bytes, or device bytes with ``gpu``) add up to at most ``budget`` bytes,
    in their order; ``lengths`` holds each family's sequence lengths, None
    for one that builds no posterior library (those go with the first
    wave). A family over the budget alone makes a wave of its own.

    >>> library_waves([[407] * 142, None, [100] * 10, [407] * 142], 2 * 10 ** 9, threads=2)
    [[0, 1, 2], [3]]
    >>> library_waves([[100] * 10, [100] * 10], 10 ** 9)
    [[0, 1]]
    >>> library_waves([[407] * 142, [407] * 142], 5 * 10 ** 9, gpu=True)  # 4.56 GB of device plan each
    [[0], [1]]
    """
    todo = [f for f, L in enumerate(lengths) if L is not None]
    plans = [library_plan([[lengths[f]]], threads) for f in todo]
    need = [(p.device_gb if gpu else p.host_gb) * 1e9 for p in plans]
    waves = [[todo[int(k)] for k in chunk] for chunk in budget_chunks(need, budget)] or [[]]
    waves[0] = sorted(waves[0] + [f for f, L in enumerate(lengths) if L is None])
    return [w for w in waves if w]
