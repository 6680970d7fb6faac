"""Arrays between the host and a backend's device: `to_host` and `upload`."""

from __future__ import annotations

import numpy as np


def to_host(a) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def upload(host: dict, xp) -> dict:
    """Host arrays as ``xp`` arrays of the same dtypes and shapes, in one
    transfer: packed into one byte buffer (each part 8-byte aligned), copied
    once, and viewed (a tree level's dozen small arrays would otherwise take
    a dozen copies, each a few tens of microseconds). NumPy keeps them.

    >>> out = upload({"a": np.arange(3, dtype=np.int32), "b": np.ones((2, 2))}, np)
    >>> out["a"].tolist(), out["b"].shape
    ([0, 1, 2], (2, 2))
    """
    arrays = {key: np.ascontiguousarray(v) for key, v in host.items()}
    if xp is np:
        return arrays
    starts, size = {}, 0
    for key, a in arrays.items():
        starts[key] = size
        size += -(-a.nbytes // 8) * 8
    buf = np.zeros(max(size, 8), np.uint8)
    for key, a in arrays.items():
        buf[starts[key]: starts[key] + a.nbytes] = a.reshape(-1).view(np.uint8)
    dev = xp.asarray(buf)
    return {key: dev[starts[key]: starts[key] + a.nbytes].view(a.dtype).reshape(a.shape) for key, a in arrays.items()}
