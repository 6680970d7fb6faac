"""GPU runtime of MRLE: the launches of kernels/mrle.cu, with the same three
functions as its twin `mrle_cpu` (the rules: `msa_gpu.backend.mrle`)."""

from __future__ import annotations

THREADS = 256  # 8 warps: 8 rows per block


def _launch(kernel: str, m: int, args) -> None:
    from msa_gpu.kernels import get_function

    if m:
        get_function("mrle", kernel)(((32 * m + THREADS - 1) // THREADS,), (THREADS,), args)


def row_lengths(M, ls, out):
    import cupy as cp

    _launch("mrle_count", M.shape[0], (M, cp.int64(M.shape[0]), cp.int32(M.shape[1]), cp.int32(ls), out))


def write_rows(M, ls, Ar, Av):
    import cupy as cp

    _launch("mrle_write", M.shape[0], (M, cp.int64(M.shape[0]), cp.int32(M.shape[1]), cp.int32(ls), Ar, Av))


def decode_rows(Ar, Av, ls, M):
    import cupy as cp

    _launch("mrle_decode", M.shape[0], (Ar, Av, cp.int64(M.shape[0]), cp.int32(M.shape[1]), cp.int32(ls), M))
