"""Doctest collection: the GPU runtimes (``backend/gpu.py`` and
``backend/*_gpu.py``), which import CuPy at the top, are skipped where CuPy
is not installed."""

import importlib.util

collect_ignore = []
collect_ignore_glob = []
if importlib.util.find_spec("cupy") is None:
    collect_ignore += ["msa_gpu/backend/gpu.py"]
    collect_ignore_glob += ["msa_gpu/backend/*_gpu.py"]
