"""CUDA streams of the GPU runtime: independent launches spread over side
streams (`fanned_out`), so that one launch's last blocks do not leave the
card idle while the next launch waits.

(Tried and not kept, session 54: accurate mode's libraries built in waves on
a thread and a stream of their own while the wave before was aligned. On one
H100 BAliBASE took 12.7-13.0 s against 12.0-12.3 s without: the library's
long blocks held the SMs that the progressive stage's short launches wait
for, which went from 2.9 to 5.1 s.)"""

from __future__ import annotations

import contextlib
from functools import lru_cache

import cupy as cp


@lru_cache(maxsize=None)
def _streams(device: int, n: int) -> tuple:
    """``n`` non-blocking streams of a device, made once
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
    streams = _streams(cp.cuda.Device().id, n)
    start = main.record()
    for s in streams:
        s.wait_event(start)
    try:
        yield streams
    finally:
        for s in streams:
            main.wait_event(s.record())
