"""Batch runs beyond one machine: a batch's families spread over Dask workers.

The families are cut into one contiguous group per worker, balanced by their
residues, and each group is one `Aligner.align_many` call on a worker (so a
worker with a GPU batches its group's merges as one machine does). A
family's alignment does not depend on which families share its batch, so
the output is byte-identical to a run on one machine. ``address`` is a
scheduler's address, or ``local`` for a cluster of worker processes on this
machine (dask-cuda's, one worker a GPU, where it is installed and GPUs are
visible).

Needs ``dask[distributed]`` (``pip install 'msagpu[dask]'``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .config import AlignerConfig
from .errors import BackendError
from .types import AlignResult, Sequences


def groups(weights: list[int], parts: int) -> list[list[int]]:
    """Contiguous groups of indices with about equal total weight (none empty).

    >>> groups([5, 1, 1, 1, 5, 1], 2)
    [[0, 1, 2], [3, 4, 5]]
    >>> groups([1, 1], 5)
    [[0], [1]]
    """
    parts = max(1, min(parts, len(weights)))
    cum = np.cumsum(weights, dtype=np.float64)
    cuts = [int(np.searchsorted(cum, cum[-1] * k / parts, side="left")) + 1 for k in range(1, parts)]
    bounds = sorted(set([0] + [min(max(c, 1), len(weights) - 1) for c in cuts] + [len(weights)]))
    return [list(range(a, b)) for a, b in zip(bounds, bounds[1:]) if b > a]


def _align_group(families: list[Sequences], config: AlignerConfig) -> list[AlignResult]:
    from .aligner import Aligner

    return [replace(r, library=None) for r in Aligner(config).align_many(families)]


def _client(address: str, workers: int | None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise BackendError("--dask needs dask.distributed (pip install 'msagpu[dask]')") from exc
    if address != "local":
        return Client(address), None
    try:
        from dask_cuda import LocalCUDACluster  # one worker a visible GPU

        cluster = LocalCUDACluster()
    except Exception:  # not installed, or no GPU: CPU worker processes
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def align_many_dask(families: list[Sequences], config: AlignerConfig, address: str = "local",
                    workers: int | None = None) -> list[AlignResult]:
    """`Aligner.align_many` with the families spread over Dask workers."""
    client, cluster = _client(address, workers)
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or (workers or 1))
        parts = groups([int(s.lengths.sum()) for s in families], n_workers)
        futures = [client.submit(_align_group, [families[i] for i in g], config, pure=False) for g in parts]
        out: list[AlignResult | None] = [None] * len(families)
        for g, results in zip(parts, client.gather(futures)):
            for i, r in zip(g, results):
                out[i] = r
        return out  # type: ignore[return-value]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
