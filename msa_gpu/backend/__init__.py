"""The engines, and backend selection: ``auto`` (GPU if usable, else CPU with
a warning), ``cpu`` or ``gpu`` (an error with the reason when no GPU is usable).

Each kernel family of `msa_gpu.kernels` has its numba CPU twin and its GPU
runtime side by side here: ``profile_cpu``/``profile_gpu`` (stage 3's DP and
merges), ``consistency_cpu``/``consistency_gpu``, ``refine_cpu``/``refine_gpu``,
``pairwise_cpu``/``pairwise_gpu`` (behind ``pairwise``, the pairwise engine; the GPU side split into
``pairwise_launch``, ``pairwise_device`` and ``pairwise_host``),
``posterior_cpu``/``posterior_gpu`` and ``lcs_cpu``/``lcs_gpu``. Each family
has one interface (`msa_gpu.backend.interfaces`) that both sides meet; a
`Backend` gives its families (``backend.lcs``, ``backend.posterior``, ...;
`Backend.ops` is ``cpu`` or ``gpu``, the profile, consistency and refinement
kernels in one namespace), and `backend_of` the backend of an array module:
stages call the interfaces and never ask which backend they run on.
The engines import no stage: the stages hand them arrays, batched with the
helpers of ``arrays`` (prefix offsets, chunks within a memory budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msa_gpu.backend.arrays import DENSE_BATCH_BYTES, budget_chunks, offsets
from msa_gpu.backend.cost import cpu_seconds, usable_cores
from msa_gpu.backend.interfaces import (ConsistencyKernels, LcsKernels, PairwiseKernels, PosteriorKernels,
                                        ProfileKernels, RefineKernels, StageKernels)
from msa_gpu.backend.selection import (Backend, backend_named, backend_of, cpu_backend, gpu_backend, host_posteriors,
                                       probe_gpu, select_backend, set_threads, visible_devices)
from msa_gpu.backend.transfer import to_host, upload

if TYPE_CHECKING:
    from msa_gpu.backend.pairwise import (PairAlignments, PairMode, PairScoring, align_pairs, all_pair_indices,
                                          all_pairs, default_scoring)

#: The pairwise engine's API (`msa_gpu.backend.pairwise`), exported here and
#: imported when first asked for (it loads Biopython's substitution matrices).
_PAIRWISE = ("PairAlignments", "PairMode", "PairScoring", "align_pairs", "all_pair_indices", "all_pairs",
             "default_scoring")

__all__ = ["DENSE_BATCH_BYTES", "Backend", "ConsistencyKernels", "LcsKernels", "PairwiseKernels",
           "PosteriorKernels", "ProfileKernels", "RefineKernels", "StageKernels", "backend_named", "backend_of",
           "budget_chunks", "cpu_backend", "cpu_seconds", "gpu_backend", "host_posteriors", "offsets", "probe_gpu",
           "select_backend", "set_threads", "to_host", "upload", "usable_cores", "visible_devices", *_PAIRWISE]


def __getattr__(name: str):
    if name in _PAIRWISE:
        from msa_gpu.backend import pairwise

        return getattr(pairwise, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
