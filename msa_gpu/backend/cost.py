"""Backend auto's rule: a family's expected seconds on the CPU, from its recipe,
against the GPU's start-up.

CPU and GPU give the same bytes, so ``--backend auto`` may take whichever is
expected to finish first. The GPU costs a start-up the CPU does not (CuPy's
import, a CUDA context, the kernels loaded from their cache: about 0.5 s more
than a CPU run of the same tiny family, fresh process, on the H100 host), and
then aligns small and middle-sized families in a time that barely grows. The
CPU's time grows with the DP work. So the CPU is taken where its expected
time for the work is at most that start-up (``AlignerConfig.cpu_max_seconds``,
0.5 s: the H100 host's 0.3-0.7 s).

The rates are seconds a DP cell (`Recipe.dp_cells`) beyond a fresh process's
start-up, measured on the H100 host's 16 cores (session 55: 35 families of
BAliBASE 3 and bralibase3_dev, 4-200 sequences, each aligned by a fresh
process with ``--backend cpu`` and ``--backend gpu``; benchmarks/results/NOTES.md,
"Backend auto by expected time"). They scale with the cores this process may use.
"""

from __future__ import annotations

import os

from msa_gpu.types import Recipe

#: Cores of the machine the rates were measured on (the H100 host).
MEASURED_CORES = 16

#: Nanoseconds a DP cell, 16 cores: accurate mode by its library (posterior:
#: a pair-HMM library, no refinement; the alignment libraries come with 10
#: refinement rounds), and progressive-only modes (fast, large: their cells
#: are the merges' ``n L^2``, each a profile-profile cell, counted here at
#: the longest sequence's length against the mean's, as the late merges'
#: profiles are: BB40047, 54 sequences of mean 582 and longest 4,548
#: residues, took 5.8 s beyond start-up).
NS_PER_CELL = {"posterior": 25.0, "local": 60.0, "global": 60.0, "both": 90.0, None: 20.0}


def usable_cores(threads: int | None = None) -> int:
    """The cores this process may run on (its affinity), at most ``threads``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, threads) if threads else cores)


def cpu_seconds(recipe: Recipe, cores: int) -> float:
    """The expected seconds of aligning a family of ``recipe`` on ``cores``
    CPU cores, beyond the process's start-up.

    >>> from msa_gpu.types import Recipe
    >>> r = Recipe(50, 74.0, 80, "rna", "accurate", "library", "mixed", 0, "local", "sp", 10, "NUC.4.4",
    ...            0.0, 12.0, 1.0, "flat", 1.0, "tree", dp_cells=6_750_000)
    >>> round(cpu_seconds(r, 16), 3), round(cpu_seconds(r, 2), 3)
    (0.405, 3.24)
    """
    if recipe.n_seqs < 2:
        return 0.0
    rate = NS_PER_CELL.get(recipe.library, NS_PER_CELL[None]) * 1e-9
    cells = recipe.dp_cells * (1.0 if recipe.library else recipe.max_length / max(1.0, recipe.mean_length))
    return cells * rate * MEASURED_CORES / max(1, min(cores, MEASURED_CORES))
