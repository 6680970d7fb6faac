"""Backend selection (``auto``: the GPU if usable, else the CPU with a
warning; ``cpu``; ``gpu``: an error with the reason when no GPU is usable),
the `Backend` that gives a backend's kernel families by their interfaces,
and `backend_of`, the one place that tells an array module's backend."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from msa_gpu.backend.interfaces import (ConsistencyKernels, LcsKernels, PairwiseKernels, PosteriorKernels,
                                        ProfileKernels, RefineKernels, StageKernels)
from msa_gpu.backend.transfer import to_host, upload
from msa_gpu.settings.config import BackendChoice
from msa_gpu.errors import BackendError


@dataclass(frozen=True)
class Backend:
    """An array module and the kernels that go with it. ``ops`` is
    backend/cpu.py or backend/gpu.py: the profile, consistency and
    refinement kernels in one namespace (`StageKernels`), and each kernel
    family by name; the properties give the families by their interfaces
    (`msa_gpu.backend.interfaces`)."""

    name: str
    xp: object
    ops: StageKernels | ModuleType
    reason: str = ""

    @property
    def on_device(self) -> bool:
        """Whether its arrays live on a GPU (memory plans count the device's
        memory then, the host's otherwise)."""
        return self.name != "cpu"

    def to_host(self, a) -> np.ndarray:
        return to_host(a)

    def upload(self, host: dict) -> dict:
        """`upload` to this backend's device."""
        return upload(host, self.xp)

    @property
    def pairwise(self) -> PairwiseKernels:
        return self.ops.pairwise

    @property
    def posterior(self) -> PosteriorKernels:
        return self.ops.posterior

    @property
    def consistency(self) -> ConsistencyKernels:
        return self.ops.consistency

    @property
    def lcs(self) -> LcsKernels:
        return self.ops.lcs

    @property
    def profile(self) -> ProfileKernels:
        return self.ops.profile

    @property
    def refine(self) -> RefineKernels:
        return self.ops.refine

    @property
    def sparse(self):
        """The sparse matrices' module of ``xp`` (SciPy's, or CuPy's)."""
        if self.xp is np:
            from scipy import sparse
        else:
            from cupyx.scipy import sparse
        return sparse


def host_posteriors(x: np.ndarray, y: np.ndarray, init, trans, pair, single) -> np.ndarray:
    """(len x, len y) float64: one pair's pair-HMM posteriors, dense, on the
    host (`posterior_cpu.posteriors`; numba imported when first called)."""
    from msa_gpu.backend.posterior_cpu import posteriors

    return posteriors(x, y, init, trans, pair, single)


def visible_devices() -> list[int]:
    """The CUDA devices this process may use (`pairwise_device.visible_devices`)."""
    from msa_gpu.backend.pairwise_gpu import visible_devices as devices

    return devices()


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


def backend_of(xp) -> Backend:
    """The backend whose arrays ``xp`` makes (NumPy: the CPU's, else the
    GPU's): the one place that tells them apart, for a stage handed only an
    array module."""
    return cpu_backend() if xp is np else gpu_backend()


def backend_named(name: str) -> Backend:
    """The backend a result names (``cpu`` or ``gpu``), without probing the device."""
    if name == "cpu":
        return cpu_backend()
    if name == "gpu":
        return gpu_backend()
    raise ValueError(f"no backend named {name!r}")


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
