"""The engines, and backend selection: ``auto`` (GPU if usable, else CPU with
a warning), ``cpu`` or ``gpu`` (an error with the reason when no GPU is usable).

Each kernel family of `msa_gpu.kernels` has its numba CPU twin and its GPU
runtime side by side here: ``profile_cpu``/``profile_gpu`` (stage 3's DP and
merges), ``consistency_cpu``/``consistency_gpu``, ``refine_cpu``/``refine_gpu``,
``mrle_cpu``/``mrle_gpu`` (behind ``mrle``) and ``pairwise_cpu``/``pairwise_gpu``
(behind ``pairwise``, the pairwise engine; the GPU side split into
``pairwise_plan``, ``pairwise_device`` and ``pairwise_host``). `Backend.ops`
is ``cpu`` or ``gpu``, one namespace of a backend's stage kernels.
The engines import no stage: the stages hand them arrays.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from msa_gpu.config import BackendChoice
from msa_gpu.errors import BackendError


def to_host(a) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


@dataclass(frozen=True)
class Backend:
    """An array module and the kernels that go with it: ``ops`` is a module
    with ``profile_stats``, ``column_scores``, ``align_batch`` and
    ``merge_profiles`` (backend/cpu.py or backend/gpu.py)."""

    name: str
    xp: object
    ops: ModuleType
    reason: str = ""

    def to_host(self, a) -> np.ndarray:
        return to_host(a)


def probe_gpu() -> tuple[bool, str]:
    """Whether CuPy can run kernels here, and why not."""
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install 'msagpu[gpu]')"
    except Exception as exc:  # a broken CUDA install raises many kinds
        return False, f"CuPy failed to import: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no usable CUDA device: {exc}"
    if count < 1:
        return False, "no CUDA device visible"
    try:  # a device that is listed but cannot run a kernel counts as broken
        if int(cupy.arange(4, dtype=cupy.int32).sum()) != 6:
            return False, "the CUDA device computed a wrong sum"
    except Exception as exc:
        return False, f"the CUDA device is broken: {type(exc).__name__}: {exc}"
    return True, f"{count} CUDA device(s)"


def cpu_backend(reason: str = "") -> Backend:
    from msa_gpu.backend import cpu

    return Backend("cpu", np, cpu, reason)


def gpu_backend(reason: str = "") -> Backend:
    import cupy

    from msa_gpu.backend import gpu

    return Backend("gpu", cupy, gpu, reason)


def select_backend(choice: BackendChoice | str = BackendChoice.auto) -> Backend:
    """The backend for ``choice``; ``auto`` warns when it falls back to the CPU."""
    choice = BackendChoice(choice)
    if choice is BackendChoice.cpu:
        return cpu_backend("requested")
    ok, reason = probe_gpu()
    if ok:
        return gpu_backend(reason)
    if choice is BackendChoice.gpu:
        raise BackendError(f"--backend gpu requested but no GPU is usable: {reason}")
    warnings.warn(f"using the CPU backend: {reason}", RuntimeWarning, stacklevel=2)
    return cpu_backend(reason)


def set_threads(threads: int | None) -> None:
    """Cap the CPU threads numba uses (for the calling thread; None leaves its
    count as it is, by default every core). Each parallel loop of the CPU twins then takes at
    most that many, fewer where its work is small or other processes keep
    cores busy (`msa_gpu.backend.threads`)."""
    if threads is None:
        return
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
