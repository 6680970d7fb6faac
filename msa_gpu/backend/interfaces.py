"""The kernel families' interfaces: one `typing.Protocol` a family, each met
by a CPU module (the numba twins, the test oracle) and a GPU module (CuPy
launches of `msa_gpu.kernels`), which give the same integers, ties included.

=============  ======================  ======================  =========================
family         interface               CPU                     GPU
=============  ======================  ======================  =========================
pairwise       `PairwiseKernels`       ``pairwise_cpu``        ``pairwise_gpu``
posterior      `PosteriorKernels`      ``posterior_cpu``       ``posterior_gpu``
consistency    `ConsistencyKernels`    ``consistency_cpu``     ``consistency_gpu``
LCS            `LcsKernels`            ``lcs_cpu``             ``lcs_gpu``
profile        `ProfileKernels`        ``profile_cpu``         ``profile_gpu``
refinement     `RefineKernels`         ``refine_cpu``          ``refine_gpu``
=============  ======================  ======================  =========================

A stage reaches a family through its `msa_gpu.backend.Backend` (``backend.lcs``,
``backend.posterior``, ...; `backend_of` gives the backend of an array
module), never by importing a ``*_cpu`` or ``*_gpu`` module, and never asks
which backend it runs on. ``Backend.ops``, the profile, consistency and
refinement kernels in one namespace (`StageKernels`), is what the
progressive and refinement stages call. tests/test_backend_interfaces.py
checks that every implementation takes each method's parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from msa_gpu.types import Sequences

#: A tick of progress: ``tick(k)`` when k more pair steps are done.
Tick = Callable[[int], None] | None


class PairwiseKernels(Protocol):
    """Batched Gotoh alignment of pairs of sequences (`msa_gpu.backend.pairwise`)."""

    def align_batch(self, seq, off, pa, pb, S, go, ge, mode, traceback, *, runs: bool = True,
                    devices: list[int] | None = None, batch_bytes: int | None = None) -> tuple:
        """(res int64 (P, 8), runs uint32, runs offsets) of pairs (pa[p], pb[p])
        of ``seq[off[k]:off[k + 1]]``; ``devices`` and ``batch_bytes`` steer the
        GPU's scheduler (the CPU has none; results never depend on them)."""
        ...


class PosteriorKernels(Protocol):
    """Pair-HMM posteriors and ProbCons' consistency transformation, as flat
    arrays (q, x, y, p) by pair q, then row-major, on the backend's device
    (`msa_gpu.consistency.posterior_libraries`). ``tick`` counts pairs done;
    ``room`` and ``planned`` size the CPU's flat arrays (`posterior_cpu.FlatWriter`)."""

    def flat_posteriors(self, codes: list[np.ndarray], pairs: np.ndarray, init, trans, pair, single,
                        cutoff: float, *, tick: Tick = None, room: bool = False, planned: int = 0) -> tuple:
        ...

    def ordered_csr(self, q, x, y, p, first: np.ndarray, n_pairs: int, longest: int) -> tuple:
        """(indptr, indices, data): the entries of pairs s < t (rows from
        ``first[:n_pairs]``) and their transposes (rows from ``first[n_pairs:-1]``)
        as CSR rows, each row's entries by column."""
        ...

    def consistency_pairs(self, indptr, indices, data, base, lengths, nq, bq, lq, ps, pt, cutoff: float, *,
                          tick: Tick = None, room: bool = False, planned: int = 0) -> tuple:
        ...


class ConsistencyKernels(Protocol):
    """The consistency library's extension through third sequences, and its
    scores added to a level's column scores."""

    def library_extend(self, pairs, dense_off, pair_map, weights, length, res_off, n: int, total: int): ...

    def consistency_scores(self, lv, codes, weights, members, lp, lp_n, stack, S, lam: int, one: int) -> None: ...


class LcsKernels(Protocol):
    """Bit-parallel LCS lengths and Prim's spanning tree over LCS distances
    (`msa_gpu.distances.lcs`). The encoded arrays are
    ``(masks, mask_off, codes, code_off, lens)``."""

    def lcs_row_blocks(self, masks, mask_off, codes, code_off, lens) -> Iterator[tuple[int, int, object]]:
        """``(r0, r1, block)``: ``block[i - r0, j]`` the LCS of i and j, on the device."""
        ...

    def spanning_edges_many(self, families: list[Sequences], encode: Callable[[Sequences], tuple],
                            powers: Callable[[int], np.ndarray], no_common: float) -> list[tuple]:
        """Each family's Prim edges (ends, lengths) on the host; ``encode``
        gives a family's arrays, ``powers(max_indel)`` the distances' table."""
        ...


class ProfileKernels(Protocol):
    """Stage 3's profile DP and merges, a tree level at a time."""

    def profile_stats(self, lv, codes, weights, mats) -> tuple: ...

    def column_scores(self, lv, vec, resid): ...

    def align_batch(self, batch) -> tuple: ...

    def align_long(self, batch, lv, vec, resid, long_idx, path, path_len): ...

    def merge_profiles(self, lv, codes, path, path_off, path_len, out_off, n_out): ...

    def memory_budget(self) -> int: ...

    def free_cached(self) -> None:
        """Give cached device memory back (the CPU has none to give)."""
        ...


class RefineKernels(Protocol):
    """Stage 4: a given path's score, and profiles cut from alignments."""

    def path_score(self, batch, moves, move_off, move_len): ...

    def gather_profiles(self, flat, rows, row_off, cols, col_off, L, base, width, code_off): ...


class StageKernels(ProfileKernels, ConsistencyKernels, RefineKernels, Protocol):
    """``Backend.ops``: the profile, consistency and refinement kernels in one
    namespace (`msa_gpu.backend.cpu`, `msa_gpu.backend.gpu`)."""


#: Each family's interface and the modules that implement it, CPU then GPU.
FAMILIES: dict[str, tuple[type, str, str]] = {
    "pairwise": (PairwiseKernels, "pairwise_cpu", "pairwise_gpu"),
    "posterior": (PosteriorKernels, "posterior_cpu", "posterior_gpu"),
    "consistency": (ConsistencyKernels, "consistency_cpu", "consistency_gpu"),
    "lcs": (LcsKernels, "lcs_cpu", "lcs_gpu"),
    "profile": (ProfileKernels, "profile_cpu", "profile_gpu"),
    "refine": (RefineKernels, "refine_cpu", "refine_gpu"),
}
