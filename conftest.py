"""Doctest collection: the GPU runtimes, which import CuPy at the top, are
skipped where CuPy is not installed."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("cupy") is None:
    collect_ignore += ["msa_gpu/backend/gpu.py", "msa_gpu/backend/profile_gpu.py",
                       "msa_gpu/backend/consistency_gpu.py", "msa_gpu/backend/refine_gpu.py",
                       "msa_gpu/backend/pairwise_gpu.py", "msa_gpu/backend/lcs_gpu.py"]
