"""The GPU backend's ops: CuPy launches of every kernel family in
`msa_gpu.kernels`, in one namespace (`Backend.ops`); the twins are in
`msa_gpu.backend.cpu`. Each function takes device arrays (`LevelMeta` fields
already on the device) and launches one kernel for a whole tree level.
"""

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

__all__ = ["align_batch", "align_long", "column_scores", "consistency_scores", "free_cached",
           "gather_profiles", "library_extend", "memory_budget", "merge_profiles", "path_score", "profile_stats"]
