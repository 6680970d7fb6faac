"""Memory plan of a large alignment, said on stderr before the work starts.

The estimates are upper-bound sketches, not measurements: the alignment is
taken to be ``GAP_FACTOR`` times as wide as the longest sequence.

>>> p = memory_plan(1_000_000, 350_000_000, 500)
>>> round(p.host_gb), round(p.device_gb)
(22, 9)
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
    while they are built), the final code matrix (1 byte a cell) and its
    residue trace (4 bytes a cell). Device: a level's profiles and their
    merged copies (2 bytes a cell of the widest alignment)."""
    cols = int(longest * GAP_FACTOR)
    cells = n_seqs * cols
    host = 40 * residues + 5 * cells
    device = 2 * cells + 16 * residues
    return MemoryPlan(host / 1e9, device / 1e9, cols)
