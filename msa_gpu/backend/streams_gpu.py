"""CUDA streams the GPU runtime shares: independent launches spread over
side streams (`fanned_out`), and one stream for work that overlaps the main
thread's (`overlap_stream`: accurate mode's next wave of libraries while
the aligner aligns the wave before; `msa_gpu.aligner`). The CPU twins are in
`msa_gpu.backend.cpu`: one thread, nothing to overlap."""

from __future__ import annotations

import contextlib
from functools import lru_cache

import cupy as cp

#: Device memory from which a run overlaps two stages' work: the posterior
#: batches (up to 8 GB, `posterior_gpu.BLOCK_BYTES`) and a level's DP then
#: share the card, so a card of less keeps its stages one after the other.
OVERLAP_MIN_BYTES = 40 << 30


@lru_cache(maxsize=None)
def _streams(device: int, n: int, use: str) -> tuple:
    """``n`` non-blocking streams of a device for one ``use``, made once
    (CuPy's memory pool keeps freed blocks by stream: a stream made anew
    for each call would leave its blocks stranded)."""
    return tuple(cp.cuda.Stream(non_blocking=True) for _ in range(n))


@contextlib.contextmanager
def fanned_out(n: int):
    """Streams (``n`` of them; the current one where ``n`` is 1) that start
    after the current stream's work so far and that the current stream
    waits for when the block ends: launches independent of each other may
    run side by side, and what follows sees all of them done."""
    main = cp.cuda.get_current_stream()
    if n <= 1:
        yield (main,)
        return
    streams = _streams(cp.cuda.Device().id, n, "fan")
    start = main.record()
    for s in streams:
        s.wait_event(start)
    try:
        yield streams
    finally:
        for s in streams:
            main.wait_event(s.record())


def can_overlap() -> bool:
    """Whether this device has the memory for `overlap_stream`'s work beside the main thread's."""
    return int(cp.cuda.Device().mem_info[1]) >= OVERLAP_MIN_BYTES


@contextlib.contextmanager
def overlap_stream():
    """This thread's launches go to a stream of their own that does not wait
    for the main thread's (nor it for them); the block ends with that
    stream's work done, so its results are ready for any stream."""
    stream = _streams(cp.cuda.Device().id, 1, "overlap")[0]
    try:
        with stream:
            yield
    finally:
        stream.synchronize()
