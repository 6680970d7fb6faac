"""MRLE: the modified run-length encoding of CUDA-LINSi (Zhu et al., section 3.6),
kept here beside its benchmark (``python -m benchmarks mrle``), out of the
package: measured against msagpu's packed 4-bit tracebacks it is 4.7-7.3x
larger (``benchmarks/results/2026-11-25-*-mrle-*.md``), so no run uses it.

A 2-D integer matrix is compressed row by row into two vectors, as in
compressed row storage: ``Av`` holds the entries and ``Ar`` the row pointers
(row ``i`` is ``Av[Ar[i]:Ar[i + 1]]``). It suits MAFFT-style traceback
matrices, whose cells are mostly ``0``, the characteristic stop value
``localstop``, or gap counts that fall by one along a row.

Rules (``L`` is ``localstop``; both backends follow them to the integer):

* Each row is cut greedily from the left into runs. A run that starts on a
  value ``v`` in ``{0, L}`` is the longest stretch of cells equal to ``v``
  (an *identical* run); a run that starts on any other ``v`` is the longest
  stretch ``v, v - 1, v - 2, ...`` (a *decreasing* run; it may pass through
  0 or ``L``). Runs of any other repeated value are not merged (``5 5`` is
  two runs of one cell).
* A run of one cell is written as ``v``; a run of ``k >= 2`` cells as the two
  entries ``v, k + 2 L``.
* Decoding: an entry ``a <= 2 L`` is a value (one cell); an entry ``a > 2 L``
  is a count, and the run of the value before it covers ``a - 2 L`` cells in
  all: the same value again if that value is 0 or ``L``, else falling by one.

Supported range (`encode` raises ValueError outside it): ``L >= 0``,
``2 L + n <= 2**31 - 1`` for ``n`` columns, and every cell in
``[-2**31, 2 L]``. Values never exceed ``2 L`` and counts are at least
``2 L + 2``, so every entry decodes one way only, and ``Av`` is int32 and
``Ar`` int64. The paper's worked example (``L = 21``) is reproduced exactly
(``tests/test_mrle.py``). Unlike the paper's Algorithm 3, which takes entries
``<= L`` as values, values up to ``2 L`` are admitted, as its prose says
("those whose values are greater than 2 localstop are the times"). In
MAFFT's traceback matrices ``L = m + n + 1`` exceeds every gap count.

Encoding is two passes, on the host (numba, ``cpu.py``) or on
the device (``mrle.cu``, one warp per row; ``gpu.py``): the entries each row
needs, an exclusive scan (``xp.cumsum``) giving ``Ar``, then the entries.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from msa_gpu.backend import to_host

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def _array_module(a):
    if isinstance(a, np.ndarray):
        return np
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _check_localstop(localstop, ncols: int) -> int:
    try:
        ls = operator.index(localstop)
    except TypeError as exc:
        raise ValueError(f"localstop must be an integer, not {localstop!r}") from exc
    if ls < 0:
        raise ValueError(f"localstop must be >= 0, got {ls}")
    if 2 * ls + ncols > INT32_MAX:
        raise ValueError(f"2 * localstop + columns = {2 * ls + ncols} does not fit in int32")
    return ls


@dataclass(frozen=True, eq=False)
class MRLEMatrix:
    """An MRLE-compressed matrix (NumPy or CuPy arrays).

    Attributes
    ----------
    shape : tuple of int
        ``(rows, columns)`` of the matrix.
    localstop : int
        The characteristic value ``L``.
    Ar : ndarray of int64, shape (rows + 1,)
        Row pointers into ``Av``: ``Ar[0] == 0``, non-decreasing, ``Ar[-1] == len(Av)``.
    Av : ndarray of int32
        Values (``<= 2 L``) and counts (``k + 2 L``, ``k >= 2``), row after row;
        each row decodes to exactly ``columns`` cells, starts with a value and
        has no two counts in a row.
    """

    shape: tuple[int, int]
    localstop: int
    Ar: Any
    Av: Any

    def __post_init__(self) -> None:
        shape = tuple(operator.index(s) for s in self.shape)
        if len(shape) != 2 or min(shape) < 0:
            raise ValueError(f"shape must be two non-negative ints, got {self.shape!r}")
        ls = _check_localstop(self.localstop, shape[1])
        xp = _array_module(self.Ar)
        Ar, Av = xp.asarray(self.Ar), xp.asarray(self.Av)
        if Ar.dtype.kind not in "iu" or Av.dtype.kind not in "iu" or Ar.ndim != 1 or Av.ndim != 1:
            raise ValueError("Ar and Av must be 1-D integer arrays")
        if Av.size and (int(Av.min()) < INT32_MIN or int(Av.max()) > INT32_MAX):
            raise ValueError("Av does not fit in int32")
        Ar = xp.ascontiguousarray(Ar, dtype=xp.int64)
        Av = xp.ascontiguousarray(Av, dtype=xp.int32)
        if Ar.shape[0] != shape[0] + 1 or int(Ar[0]) != 0 or int(Ar[-1]) != Av.shape[0]:
            raise ValueError("Ar must have rows + 1 entries, from 0 to len(Av)")
        if bool((Ar[1:] < Ar[:-1]).any()):
            raise ValueError("Ar must be non-decreasing")
        _check_rows(Ar, Av, shape[1], ls, xp)
        for name, value in (("shape", shape), ("localstop", ls), ("Ar", Ar), ("Av", Av)):
            object.__setattr__(self, name, value)

    @property
    def nbytes(self) -> int:
        """Bytes of ``Av`` and ``Ar``."""
        return int(self.Av.nbytes + self.Ar.nbytes)


def _check_rows(Ar, Av, ncols: int, ls: int, xp) -> None:
    """Every row of ``Av`` decodes to ``ncols`` cells of int32 (vectorised)."""
    two = 2 * ls
    wide = Av.astype(xp.int64)
    code = wide > two
    width = xp.where(code, wide - two - 1, 1)
    csum = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(width)])
    if bool((csum[Ar[1:]] - csum[Ar[:-1]] != ncols).any()):
        raise ValueError(f"a row of Av does not decode to {ncols} cells")
    if bool(code[Ar[:-1][Ar[1:] > Ar[:-1]]].any()) or bool((code[1:] & code[:-1]).any()):
        raise ValueError("a count in Av does not follow a value")
    idx = xp.nonzero(code)[0]
    prev = wide[idx - 1]
    if bool(((prev != 0) & (prev != ls) & (prev - width[idx] < INT32_MIN)).any()):
        raise ValueError("a decreasing run in Av falls below int32")


def _as_matrix(matrix, localstop, xp):
    """``matrix`` as a C-contiguous int32 ``xp`` array, after the range checks."""
    M = to_host(matrix) if xp is np else xp.asarray(matrix)
    if M.ndim != 2:
        raise ValueError(f"MRLE needs a 2-D matrix, got {M.ndim} dimension(s)")
    if M.dtype.kind not in "iub":
        raise ValueError(f"MRLE needs an integer matrix, got dtype {M.dtype}")
    ls = _check_localstop(localstop, M.shape[1])
    if M.size:
        if M.dtype.kind == "i":
            wide = M.astype(xp.int64)
            bad = (wide > 2 * ls) | (wide < INT32_MIN)
        else:  # unsigned or bool: no lower bound
            bad = M.astype(xp.uint64) > xp.uint64(2 * ls)
        if bool(bad.any()):
            i, j = (int(x) for x in xp.unravel_index(int(xp.argmax(bad)), M.shape))
            raise ValueError(f"cell ({i}, {j}) = {int(M[i, j])} is outside [-2**31, 2 * localstop = {2 * ls}]")
    return xp.ascontiguousarray(M, dtype=xp.int32), ls


def encode(matrix, localstop: int, xp=np) -> MRLEMatrix:
    """Compress ``matrix`` with MRLE.

    Parameters
    ----------
    matrix : array_like of int, shape (m, n)
        Every cell in ``[-2**31, 2 * localstop]``.
    localstop : int
        The characteristic value ``L >= 0``, with ``2 L + n < 2**31``.
    xp : module, optional
        ``numpy`` (numba on the host, the default) or ``cupy`` (CUDA kernels).

    Returns
    -------
    MRLEMatrix
        With ``Ar`` and ``Av`` on ``xp``'s device.

    Raises
    ------
    ValueError
        If the matrix is not 2-D integer, or a cell or ``localstop`` is out of range.

    Examples
    --------
    The first two rows of the paper's matrix (6):

    >>> rows = [[21] * 10, [21, 21, 0, 21, 21, 0, 21, 21, 0, 21]]
    >>> m = encode(rows, localstop=21)
    >>> m.Ar.tolist()
    [0, 2, 12]
    >>> m.Av.tolist()
    [21, 52, 21, 44, 0, 21, 44, 0, 21, 44, 0, 21]
    >>> decode(m).tolist() == rows
    True
    >>> encode([[7, 6, 5, 0, 0, 5, 5]], 4).Av.tolist()  # falling run, zeros, then 5 twice
    [7, 11, 0, 10, 5, 5]
    """
    M, ls = _as_matrix(matrix, localstop, xp)
    Ar, Av = encode_arrays(M, ls, xp)
    return MRLEMatrix(M.shape, ls, Ar, Av)


def decode(m: MRLEMatrix, xp=np):
    """The int32 matrix that ``m`` encodes, as an ``xp`` array.

    Examples
    --------
    >>> decode(encode([[0, 0, 0], [3, 2, 1]], 2)).tolist()
    [[0, 0, 0], [3, 2, 1]]
    """
    if not isinstance(m, MRLEMatrix):
        raise TypeError(f"decode needs an MRLEMatrix, got {type(m).__name__}")
    move = to_host if xp is np else xp.asarray
    return decode_arrays(move(m.Ar), move(m.Av), m.shape, m.localstop, xp)


def encode_arrays(M, ls: int, xp=np):
    """``(Ar, Av)`` of a C-contiguous int32 ``M`` already checked (no validation)."""
    ops = _ops(xp)
    count = xp.empty(M.shape[0], dtype=xp.int64)
    ops.row_lengths(M, ls, count)
    Ar = xp.zeros(M.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(count, out=Ar[1:])
    Av = xp.empty(int(Ar[-1]), dtype=xp.int32)
    ops.write_rows(M, ls, Ar, Av)
    return Ar, Av


def decode_arrays(Ar, Av, shape: tuple[int, int], ls: int, xp=np):
    """The int32 matrix of valid ``Ar``/``Av`` (no validation)."""
    M = xp.empty(shape, dtype=xp.int32)
    _ops(xp).decode_rows(Ar, Av, ls, M)
    return M


def _ops(xp):
    """The two encoding passes and the decoder for ``xp``."""
    if xp is np:
        from benchmarks.mrle_codec import cpu

        return cpu
    from benchmarks.mrle_codec import gpu

    return gpu


def packed4_bytes(shape: tuple[int, int]) -> int:
    """Bytes of a matrix of 4-bit cells packed two to a byte.

    Examples
    --------
    >>> packed4_bytes((101, 51))
    2576
    """
    rows, cols = (int(s) for s in shape)
    return (rows * cols + 1) // 2


def compare(matrix, localstop: int) -> dict:
    """Memory of ``matrix`` as raw int32, as 4-bit cells and as MRLE (host).

    Returns
    -------
    dict
        ``shape``, ``cells``, ``raw_int32_bytes``, ``packed4_bytes``,
        ``mrle_bytes`` (``Av`` + ``Ar``), ``mrle_entries`` (``len(Av)``),
        ``mrle_over_raw`` and ``mrle_over_packed4`` (ratios of bytes).

    Examples
    --------
    >>> c = compare(np.zeros((10, 10), np.int32), 21)
    >>> c["raw_int32_bytes"], c["packed4_bytes"], c["mrle_bytes"]
    (400, 50, 168)
    """
    m = encode(matrix, localstop)
    raw = 4 * m.shape[0] * m.shape[1]
    p4 = packed4_bytes(m.shape)
    return {"shape": list(m.shape), "cells": m.shape[0] * m.shape[1], "raw_int32_bytes": raw,
            "packed4_bytes": p4, "mrle_bytes": m.nbytes, "mrle_entries": int(m.Av.shape[0]),
            "mrle_over_raw": m.nbytes / raw if raw else 0.0,
            "mrle_over_packed4": m.nbytes / p4 if p4 else 0.0}
