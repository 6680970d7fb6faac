"""The constants that the CUDA kernels (``kernels/*.cu``) share with their
numba twins (``backend/*_cpu.py``) and GPU runtimes (``backend/*_gpu.py``,
``backend/pairwise_launch.py``): fixed-point ones, vector widths, gap-model
and mode codes, sentinels, state counts, block shapes. One place: the loader
(`msa_gpu.kernels.get_function`) hands each ``.cu`` file its constants as a
``#define`` preamble (`DEFINES`, `preamble`), the ``.cu`` files define none of
them, and ``tests/test_constants.py`` fails where a twin's or a runtime's own
copy drifts from this module (or a ``.cu`` file defines one again).

>>> preamble("refine")
'#define FRAC 1024\\n'
"""

from __future__ import annotations

from msa_gpu.scoring import FRAC_ONE

# ---- profile DP, statistics, merges, refinement (profile.cu, refine.cu; profile_cpu, refine_cpu, profile_gpu)
FRAC = FRAC_ONE  # fixed-point one for fractions (gap and residue frequencies): 1024
NEG_INF = -1_000_000_000  # profile DP: a state that cannot be reached
VEC = 24  # residue slots per profile column (alphabet size <= 23)
GAP_FLAT, GAP_COUNTS, GAP_EXACT = 0, 1, 2  # gap models (progressive.scoring.GAP_MODELS; flat: neither)
DIAG_INTS = 11  # profile_dp's wavefront state per DP row: H on two anti-diagonals, D, E and F on three
CKPT_INTS = 7  # band_dp's state saved per row at a long pair's band boundary
STAT_COLS, STAT_LANES = 32, 8  # profile_stats: boundary columns per block and row lanes per column
MERGE_CHUNK = 8192  # merged codes per merge_profiles block

# ---- pairwise alignment (pairwise.cu; pairwise_cpu, pairwise, pairwise_launch)
PAIR_NEG = -(1 << 29)  # pairwise DP: minus infinity (pairwise_cpu.NEG)
MODE_GLOBAL, MODE_SEMIGLOBAL, MODE_LOCAL = 0, 1, 2  # the MODE define (pairwise.MODE_CODE)
STRIP = 8  # rows of a strip of the 32-bit kernels (R in pairwise.cu)
PAD = 31  # residue code padding each sequence to a multiple of 4
NEG16 = -32000  # minus infinity of the 16-bit kernel (pairwise_launch.LIMIT16 stays below its size)
PW_MINBLOCKS = 3  # blocks per SM the 32-bit kernels are compiled for (pairwise_launch.WARPS_PER_SM)

# ---- pair-HMM posteriors and their cut (posterior.cu, kept.cu; posterior_cpu, posterior_gpu)
N_STATES = 5  # pair-HMM states (NS in posterior.cu)
MATCH = 0  # the match state
MAX_WARPS = 8  # warps of a posterior block at most (posterior_gpu.MAX_THREADS / 32)
KEPT_THREADS, KEPT_PER_THREAD = 256, 16  # the cut's blocks: threads, cells a thread (posterior_gpu.KEPT_CHUNK)

# ---- consistency (consistency.cu; consistency_cpu)
CONS_STEPS = 16  # steps per unit kept of a library cell's mean over the pair weights (S += mean * lam / one^2)

#: Each ``.cu`` file's constants: its name for each, and the value.
DEFINES: dict[str, dict[str, int]] = {
    "profile": {"NEG_INF": NEG_INF, "VEC": VEC, "FRAC": FRAC, "GAP_COUNTS": GAP_COUNTS, "GAP_EXACT": GAP_EXACT,
                "DIAG_INTS": DIAG_INTS, "CKPT_INTS": CKPT_INTS, "STAT_COLS": STAT_COLS, "STAT_LANES": STAT_LANES,
                "MERGE_CHUNK": MERGE_CHUNK},
    "refine": {"FRAC": FRAC},
    "pairwise": {"NEG": PAIR_NEG, "MODE_GLOBAL": MODE_GLOBAL, "MODE_SEMIGLOBAL": MODE_SEMIGLOBAL,
                 "MODE_LOCAL": MODE_LOCAL, "R": STRIP, "PAD": PAD, "NEG16": NEG16, "PW_MINBLOCKS": PW_MINBLOCKS},
    "posterior": {"NS": N_STATES, "MATCH": MATCH, "MAX_WARPS": MAX_WARPS},
    "kept": {"KEPT_THREADS": KEPT_THREADS, "KEPT_PER_THREAD": KEPT_PER_THREAD},
    "consistency": {"CONS_STEPS": CONS_STEPS},
    "lcs": {},
}


def preamble(name: str, given=()) -> str:
    """The ``#define`` lines of ``<name>.cu``'s constants, less those in
    ``given`` (the names a caller defines itself)."""
    return "".join(f"#define {k} {v if v >= 0 else f'({v})'}\n" for k, v in DEFINES[name].items() if k not in given)
