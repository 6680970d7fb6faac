"""GPU runtime of MRLE: the launches of ``mrle.cu`` (beside this file), with
the same three functions as its twin `cpu` (the rules: `benchmarks.mrle_codec`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

THREADS = 256  # 8 warps: 8 rows per block


@lru_cache(maxsize=None)
def _module(device_id: int):
    import cupy

    with cupy.cuda.Device(device_id):
        return cupy.RawModule(code=(Path(__file__).parent / "mrle.cu").read_text(), options=("-std=c++17",))


def _launch(kernel: str, m: int, args) -> None:
    import cupy

    if m:
        function = _module(cupy.cuda.Device().id).get_function(kernel)
        function(((32 * m + THREADS - 1) // THREADS,), (THREADS,), args)


def row_lengths(M, ls, out):
    import cupy as cp

    _launch("mrle_count", M.shape[0], (M, cp.int64(M.shape[0]), cp.int32(M.shape[1]), cp.int32(ls), out))


def write_rows(M, ls, Ar, Av):
    import cupy as cp

    _launch("mrle_write", M.shape[0], (M, cp.int64(M.shape[0]), cp.int32(M.shape[1]), cp.int32(ls), Ar, Av))


def decode_rows(Ar, Av, ls, M):
    import cupy as cp

    _launch("mrle_decode", M.shape[0], (Ar, Av, cp.int64(M.shape[0]), cp.int32(M.shape[1]), cp.int32(ls), M))
