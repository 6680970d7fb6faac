"""CPU twin of ``mrle.cu`` (numba): the test oracle of MRLE.

The rules are those of `benchmarks.mrle_codec` (read its module docstring first); both
backends give the same ``Ar`` and ``Av`` integers. Each row is parsed greedily
from the left: a run that starts on ``0`` or ``localstop`` is a run of that
value, any other run is a run of values falling by one. A run of ``k`` cells
is written as its first value, followed by ``k + 2 * localstop`` when k >= 2.

Encoding is two passes, as on the GPU: `row_lengths` (entries of ``Av`` per
row), an exclusive scan done by the caller (``Ar``), then `write_rows`.
Rows are independent: matrices of `PARALLEL_CELLS` cells or more run their
row loops in parallel (``prange``, on as many threads as
`msa_gpu.backend.threads.threads_for` gives), smaller ones on one thread
(waking numba's pool cost up to 8 ms a call on a shared 2-core host); the
results do not depend on the thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from msa_gpu.backend.threads import call

PARALLEL_CELLS = 1 << 22
#: Nanoseconds of a cell on one thread, for sizing the parallel loops.
NS_PER_CELL = 2.0


@numba.njit(cache=True, inline="always")
def run_length(row, j, ls):
    """Cells of the run that starts at ``row[j]`` (1 if none follows)."""
    n = row.shape[0]
    v = np.int64(row[j])
    k = 1
    if v == 0 or v == ls:
        while j + k < n and row[j + k] == v:
            k += 1
    else:
        while j + k < n and np.int64(row[j + k]) == v - k:
            k += 1
    return k


@numba.njit(cache=True, inline="always")
def _count_row(row, ls):
    n = row.shape[0]
    j = 0
    c = 0
    while j < n:
        k = run_length(row, j, ls)
        c += 1 if k == 1 else 2
        j += k
    return c


@numba.njit(cache=True, inline="always")
def _write_row(row, ls, Av, o):
    n = row.shape[0]
    two = 2 * np.int64(ls)
    j = 0
    while j < n:
        k = run_length(row, j, ls)
        Av[o] = row[j]
        o += 1
        if k > 1:
            Av[o] = k + two
            o += 1
        j += k


@numba.njit(cache=True, inline="always")
def _decode_row(Av, lo, hi, ls, out):
    two = 2 * np.int64(ls)
    j = 0
    prev = np.int64(0)
    for k in range(lo, hi):
        a = np.int64(Av[k])
        if a <= two:  # a value: one cell
            out[j] = a
            prev = a
            j += 1
        else:  # a count: the run of ``prev`` goes on for a - 2 ls - 1 cells
            w = a - two - 1
            same = prev == 0 or prev == ls
            for t in range(w):
                out[j + t] = prev if same else prev - 1 - t
            j += w


@numba.njit(cache=True, nogil=True)
def _lengths_seq(M, ls, out):
    for i in range(M.shape[0]):
        out[i] = _count_row(M[i], ls)


@numba.njit(cache=True, parallel=True)
def _lengths_par(M, ls, out):
    for i in numba.prange(M.shape[0]):
        out[i] = _count_row(M[i], ls)


@numba.njit(cache=True, nogil=True)
def _write_seq(M, ls, Ar, Av):
    for i in range(M.shape[0]):
        _write_row(M[i], ls, Av, Ar[i])


@numba.njit(cache=True, parallel=True)
def _write_par(M, ls, Ar, Av):
    for i in numba.prange(M.shape[0]):
        _write_row(M[i], ls, Av, Ar[i])


@numba.njit(cache=True, nogil=True)
def _decode_seq(Ar, Av, ls, M):
    for i in range(M.shape[0]):
        _decode_row(Av, Ar[i], Ar[i + 1], ls, M[i])


@numba.njit(cache=True, parallel=True)
def _decode_par(Ar, Av, ls, M):
    for i in numba.prange(M.shape[0]):
        _decode_row(Av, Ar[i], Ar[i + 1], ls, M[i])


def _rows(seq, par, M, *args) -> None:
    if M.size < PARALLEL_CELLS:
        seq(*args)
    else:
        call(par, *args, work=M.size * NS_PER_CELL, items=M.shape[0])


def row_lengths(M, ls: int, out) -> None:
    """Pass 1: ``out[i]`` = entries of ``Av`` that row ``i`` of ``M`` needs."""
    _rows(_lengths_seq, _lengths_par, M, M, ls, out)


def write_rows(M, ls: int, Ar, Av) -> None:
    """Pass 2: the entries of row ``i`` into ``Av[Ar[i]:Ar[i + 1]]``."""
    _rows(_write_seq, _write_par, M, M, ls, Ar, Av)


def decode_rows(Ar, Av, ls: int, M) -> None:
    """Rebuild ``M`` (shape ``(len(Ar) - 1, n)``, written in full) from ``Ar``/``Av``."""
    _rows(_decode_seq, _decode_par, M, Ar, Av, ls, M)
