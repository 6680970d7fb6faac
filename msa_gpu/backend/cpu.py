"""The CPU backend's ops: the numba twins of every kernel family, in one
namespace (`Backend.ops`). Each twin is the test oracle of its CUDA kernels:
the GPU must give the same integers, ties included.

=================  =======================  ===========================
kernel family      CPU twin                 GPU runtime (`backend.gpu`)
=================  =======================  ===========================
profile DP         ``profile_cpu``          ``profile_gpu``
consistency        ``consistency_cpu``      ``consistency_gpu``
refinement         ``refine_cpu``           ``refine_gpu``
=================  =======================  ===========================

(The pairwise and MRLE engines are called directly: `msa_gpu.backend.pairwise`,
`msa_gpu.backend.mrle`.) Every parallel loop of the twins runs on as many
threads as its work and the free cores warrant, never more than ``--threads``
(`msa_gpu.backend.threads`).
"""

from msa_gpu.backend.consistency_cpu import consistency_scores, library_extend
from msa_gpu.backend.profile_cpu import (
                                         align_batch,
                                         align_long,
                                         column_scores,
                                         memory_budget,
                                         merge_profiles,
                                         profile_stats,
)
from msa_gpu.backend.refine_cpu import gather_profiles, path_score

__all__ = ["align_batch", "align_long", "column_scores", "consistency_scores", "gather_profiles", "library_extend",
           "memory_budget", "merge_profiles", "path_score", "profile_stats"]
