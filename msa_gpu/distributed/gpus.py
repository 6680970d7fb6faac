"""Several GPUs of one machine: a batch spread over them, one host thread a
device (`--gpus`).

The work is cut as for Dask (`msa_gpu.distributed.align_spread`): the
families go in one contiguous group a device, balanced by residues, and a
family on the large path has its pivot distances and subtrees spread, the
merges above the subtrees made on the first device. A family's alignment
does not depend on where it ran, so the output is the one GPU's, byte for
byte. The devices are CuPy's numbering of the visible ones, so
``CUDA_VISIBLE_DEVICES`` picks and orders them.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from msa_gpu.config import AlignerConfig
from msa_gpu.errors import BackendError, InputError
from msa_gpu.result import AlignResult
from msa_gpu.types import Sequences


def parse_gpus(text: str, visible: int) -> list[int]:
    """Device indices from ``--gpus``: ``all``, a count, or a comma list of indices.

    >>> parse_gpus("all", 4), parse_gpus("2", 4), parse_gpus("3,1", 4)
    ([0, 1, 2, 3], [0, 1], [3, 1])
    """
    text = text.strip().lower()
    if text == "all":
        ids = list(range(visible))
    elif "," in text:
        try:
            ids = [int(t) for t in text.split(",") if t.strip()]
        except ValueError:
            raise InputError(f"--gpus: expected all, a count or indices such as 0,1; got {text!r}") from None
        if len(set(ids)) != len(ids) or any(i < 0 or i >= visible for i in ids):
            raise BackendError(f"--gpus {text}: indices must be distinct and below the {visible} visible GPU(s)")
    else:
        try:
            count = int(text)
        except ValueError:
            raise InputError(f"--gpus: expected all, a count or indices such as 0,1; got {text!r}") from None
        if count < 1 or count > visible:
            raise BackendError(f"--gpus {count}: {visible} GPU(s) visible (CUDA_VISIBLE_DEVICES picks them)")
        ids = list(range(count))
    if not ids:
        raise BackendError("--gpus: no GPU visible")
    return ids


def visible_gpus() -> int:
    """How many GPUs CuPy sees; `BackendError` with the reason where none is usable."""
    from msa_gpu.backend import probe_gpu

    ok, why = probe_gpu()
    if not ok:
        raise BackendError(f"--gpus: {why}")
    from msa_gpu.backend.pairwise_gpu import visible_devices

    return len(visible_devices())


def _cupy_device(index: int):
    import cupy

    return cupy.cuda.Device(index)


class DeviceRunner:
    """One worker thread a device; ``submit`` deals tasks to them in turn and
    runs each inside its device's context (``enter(index)``, default CuPy's)."""

    def __init__(self, devices: list[int], enter=None):
        self.devices = list(devices)
        self.enter = enter or _cupy_device
        self.pools = [ThreadPoolExecutor(1, thread_name_prefix=f"msagpu-gpu{d}") for d in self.devices]
        self._turn = itertools.count()

    def submit(self, fn, *args):
        k = next(self._turn) % len(self.pools)
        return self.pools[k].submit(self._run, self.devices[k], fn, args)

    def _run(self, device: int, fn, args):
        with self.enter(device):
            return fn(*args)

    def close(self) -> None:
        for pool in self.pools:
            pool.shutdown(wait=True)


def align_many_gpus(families: list[Sequences], config: AlignerConfig, devices: list[int],
                    enter=None, recipes=None) -> list[AlignResult]:
    """`Aligner.align_many` spread over ``devices`` (see the module's doc)."""
    from msa_gpu.distributed.spread import align_spread

    runner = DeviceRunner(devices, enter)
    try:
        with runner.enter(devices[0]):  # the merges above a large family's subtrees
            return align_spread(families, config, len(devices), runner.submit, recipes=recipes)
    finally:
        runner.close()
