"""The CPU backend's kernels (`Backend.ops`): the numba twins of every kernel
family. Each twin is the test oracle of its CUDA kernels: the GPU must give
the same integers, ties included.

=================  =======================  ===========================
kernel family      CPU twin                 GPU runtime (`backend.gpu`)
=================  =======================  ===========================
profile DP         ``profile_cpu``          ``profile_gpu``
consistency        ``consistency_cpu``      ``consistency_gpu``
refinement         ``refine_cpu``           ``refine_gpu``
pairwise           ``pairwise_cpu``         ``pairwise_gpu``
posterior          ``posterior_cpu``        ``posterior_gpu``
LCS                ``lcs_cpu``              ``lcs_gpu``
=================  =======================  ===========================

The profile, consistency and refinement kernels are here by name (the
progressive and refinement stages call them so); every family is here as a
namespace that meets its interface (`msa_gpu.backend.interfaces`), the
pairwise, posterior and LCS ones imported when first asked for. Every
parallel loop of the twins runs on as many threads as its work and the free
cores warrant, never more than ``--threads`` (`msa_gpu.backend.threads`).
"""

from msa_gpu.backend import consistency_cpu as consistency
from msa_gpu.backend import profile_cpu as profile
from msa_gpu.backend import refine_cpu as refine
from msa_gpu.backend.consistency_cpu import consistency_scores, library_extend
from msa_gpu.backend.profile_cpu import (
                                         align_batch,
                                         align_long,
                                         column_scores,
                                         free_cached,
                                         memory_budget,
                                         merge_profiles,
                                         profile_stats,
)
from msa_gpu.backend.refine_cpu import gather_profiles, path_score

__all__ = ["align_batch", "align_long", "column_scores", "consistency", "consistency_scores", "free_cached",
           "gather_profiles", "library_extend", "memory_budget", "merge_profiles", "path_score", "profile",
           "profile_stats", "refine"]


def __getattr__(name: str):
    """The pairwise, posterior and LCS families, imported when first asked for."""
    if name == "pairwise":
        from msa_gpu.backend import pairwise_cpu as family
    elif name == "posterior":
        from msa_gpu.backend import posterior_cpu as family
    elif name == "lcs":
        from msa_gpu.backend import lcs_cpu as family
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return family
