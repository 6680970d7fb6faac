"""The GPU backend's kernels (`Backend.ops`): CuPy launches of every kernel
family in `msa_gpu.kernels`; the twins are in `msa_gpu.backend.cpu`. Each
function takes device arrays (`LevelMeta` fields already on the device) and
launches one kernel for a whole tree level. As on the CPU, the profile,
consistency and refinement kernels are here by name and every family as a
namespace that meets its interface (`msa_gpu.backend.interfaces`), the
pairwise, posterior and LCS ones imported when first asked for.
"""

from msa_gpu.backend import consistency_gpu as consistency
from msa_gpu.backend import profile_gpu as profile
from msa_gpu.backend import refine_gpu as refine
from msa_gpu.backend.consistency_gpu import consistency_scores, library_extend
from msa_gpu.backend.profile_gpu import (
                                         align_batch,
                                         align_long,
                                         column_scores,
                                         free_cached,
                                         memory_budget,
                                         merge_profiles,
                                         profile_stats,
)
from msa_gpu.backend.refine_gpu import gather_profiles, path_score

__all__ = ["align_batch", "align_long", "column_scores", "consistency", "consistency_scores", "free_cached",
           "gather_profiles", "library_extend", "memory_budget", "merge_profiles", "path_score", "profile",
           "profile_stats", "refine"]


def __getattr__(name: str):
    """The pairwise, posterior and LCS families, imported when first asked for."""
    if name == "pairwise":
        from msa_gpu.backend import pairwise_gpu as family
    elif name == "posterior":
        from msa_gpu.backend import posterior_gpu as family
    elif name == "lcs":
        from msa_gpu.backend import lcs_gpu as family
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return family
