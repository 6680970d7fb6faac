"""Memory plan of a large alignment, said on stderr before the work starts.

The estimates are upper-bound sketches, not measurements: the alignment is
taken to be ``GAP_FACTOR`` times as wide as the longest sequence.

>>> p = memory_plan(1_000_000, 350_000_000, 500)
>>> round(p.host_gb), round(p.device_gb)
(16, 9)
>>> p.line().startswith("memory plan")
True
"""

from __future__ import annotations

from dataclasses import dataclass

#: Expected alignment width over the longest sequence (synthetic 100k proteins: about 3).
GAP_FACTOR = 3.0


@dataclass(frozen=True)
class MemoryPlan:
    host_gb: float
    device_gb: float
    columns: int

    def line(self) -> str:
        return (f"memory plan: about {self.host_gb:.1f} GB host, {self.device_gb:.1f} GB device "
                f"(alignment of about {self.columns:,} columns)")


def memory_plan(n_seqs: int, residues: int, longest: int) -> MemoryPlan:
    """Host: the sequences and their k-mer sets (about 40 bytes a residue
    while they are built), the final residue mask (1 byte a cell while it is
    made, then 1 bit). Device: a level's profiles and their merged copies
    (2 bytes a cell of the widest alignment)."""
    cols = int(longest * GAP_FACTOR)
    cells = n_seqs * cols
    host = 40 * residues + cells + cells // 8
    device = 2 * cells + 16 * residues
    return MemoryPlan(host / 1e9, device / 1e9, cols)


@dataclass(frozen=True)
class StagePlan:
    """What each stage of a batch with N x N matrices will hold (GB)."""

    distance_gb: float  # host: the matrices alive at once
    alignments_gb: float  # host: every family's alignment, 1 bit a cell
    device_gb: float  # device: the widest family's profiles and merged copies
    output_gb: float  # host: the largest family's text (0 when streamed)

    def line(self) -> str:
        out = f"{self.output_gb:.2f} GB for the largest text" if self.output_gb else "rows streamed"
        return (f"memory plan: distances {self.distance_gb:.2f} GB host, alignments {self.alignments_gb:.2f} GB "
                f"host and {self.device_gb:.2f} GB device, output {out}")


def stage_plan(families: list[tuple[int, int]], matrices_at_once: int, streamed: bool,
               matrix_n: int | None = None) -> StagePlan:
    """The plan of a batch of families given as (sequences, longest length):
    ``matrices_at_once`` float64 N x N matrices of the largest family that
    makes one (``matrix_n`` sequences; default the largest) in the distance
    stage, every alignment as bits (`GAP_FACTOR` times the longest
    sequence wide), the widest family's 2 bytes a cell on the device, and the
    largest family's text unless the output is ``streamed``.

    >>> stage_plan([(10_000, 500)] * 12, 1, True).line()
    'memory plan: distances 0.80 GB host, alignments 0.02 GB host and 0.03 GB device, output rows streamed'
    """
    largest = max(n for n, _ in families) if matrix_n is None else matrix_n
    cells = [n * int(longest * GAP_FACTOR) for n, longest in families]
    return StagePlan(matrices_at_once * 8 * largest * largest / 1e9, sum(cells) / 8 / 1e9, 2 * max(cells) / 1e9,
                     0.0 if streamed else max(cells) * 1.1 / 1e9)
