"""Profiles and the per-level metadata the profile kernels take.

A profile is a code matrix (members x columns, gap = alphabet size) that
lives on the device, plus its member indices and integer weights on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from msa_gpu.backend import offsets
from msa_gpu.backend import upload


@dataclass(frozen=True)
class Profile:
    """Members (leaf indices, host), codes (xp uint8 (k, L)) and weights
    (host int64); ``size`` (k) and ``length`` (L) are read once, here: the
    progressive stage asks them of every profile several times a level, and
    a device array's shape is a Python call each time (issue 58: 1.4 M
    calls, 1 s of exthomfam_dev's run)."""

    members: np.ndarray
    codes: object
    weights: np.ndarray
    size: int = field(init=False, repr=False, compare=False)
    length: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        k, L = self.codes.shape
        object.__setattr__(self, "size", int(k))
        object.__setattr__(self, "length", int(L))


@dataclass(frozen=True)
class LevelMeta:
    """Per-profile and per-pair metadata of one level, as the kernels take it.
    Profile ``2p`` is pair ``p``'s A side and ``2p + 1`` its B side."""

    code_off: object  # int64 (2P,)
    k: object  # int32 (2P,)
    L: object  # int32 (2P,)
    w_off: object  # int64 (2P,)
    W: object  # int64 (2P,)
    gap: object  # int32 (2P,)
    gaps: object  # int32 (2P, 4): go, ge, tgo, tge
    gap_model: object  # int32 (2P,): 0 flat, 1 counts, 2 exact (its fixed point rounds to the nearest)
    mat: object  # int32 (2P,)
    col_off: object  # int64 (2P,)
    bnd_off: object  # int64 (2P,)
    gap_pair: object  # int32 (P,)
    s_off: object  # int64 (P+1,)
    n_cols: int
    n_bnd: int
    n_cells: int
    max_cells: int
    host_L: np.ndarray  # L on the host, for launch sizes without a device read


def level_meta(profiles: list[Profile], scorings: list, mat_index: list[int], long_mask: np.ndarray,
               xp) -> LevelMeta:
    """Metadata of a level's profiles (A, B, A, B, ...); ``scorings``,
    ``mat_index`` and ``long_mask`` are per pair (long pairs get no score matrix)."""
    k = np.array([p.size for p in profiles], dtype=np.int32)
    L = np.array([p.length for p in profiles], dtype=np.int32)
    W = np.array([int(p.weights.sum()) for p in profiles], dtype=np.int64)
    return level_meta_arrays(k, L, W, scorings, mat_index, long_mask, xp)


def level_meta_arrays(k: np.ndarray, L: np.ndarray, W: np.ndarray, scorings: list, mat_index: list[int],
                      long_mask: np.ndarray, xp, extra: dict | None = None):
    """`level_meta` from the profiles' rows ``k``, columns ``L`` and total
    weights ``W`` (host arrays, A, B, A, B, ...). With ``extra`` (name ->
    host array), returns ``(LevelMeta, extra on the device)``, both in one
    transfer (a level of a deep tree is a few hundred microseconds of host
    work; each upload is tens of them)."""
    k = np.asarray(k, dtype=np.int32)
    L = np.asarray(L, dtype=np.int32)
    two = lambda v: np.repeat(np.asarray(v), 2, axis=0)  # noqa: E731 (per pair -> per profile)
    cells = L[0::2].astype(np.int64) * L[1::2] * ~np.asarray(long_mask, dtype=bool)
    host = dict(
        code_off=offsets(k.astype(np.int64) * L)[:-1], k=k, L=L,
        w_off=offsets(k)[:-1], W=np.asarray(W, dtype=np.int64),
        gap=two([sc.gap_code for sc in scorings]).astype(np.int32),
        gaps=two([sc.gaps for sc in scorings]).astype(np.int32).reshape(-1, 4),
        gap_model=two([sc.gap_model for sc in scorings]).astype(np.int32),
        mat=two(mat_index).astype(np.int32),
        col_off=offsets(L)[:-1], bnd_off=offsets(L.astype(np.int64) + 1)[:-1],
        gap_pair=np.array([sc.gap_pair for sc in scorings], dtype=np.int32),
        s_off=offsets(cells),
    )
    dev = upload({**host, **{f"extra_{key}": v for key, v in (extra or {}).items()}}, xp)
    lv = LevelMeta(**{key: dev[key] for key in host}, n_cols=int(L.sum()), n_bnd=int(L.sum()) + len(k),
                   n_cells=int(cells.sum()), max_cells=int(cells.max(initial=0)), host_L=L)
    if extra is None:
        return lv
    return lv, {key: dev[f"extra_{key}"] for key in extra}
