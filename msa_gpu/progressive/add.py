"""Adding sequences to an existing alignment (MAFFT's ``--add``).

The existing alignment is one fixed profile; every new sequence is aligned
to it by stage 3's profile DP, a batch of such pairs at a time (on the GPU
when there is one). The existing columns never change: a new sequence's
residues opposite a column go into it, and its insertions between two
columns go into new columns there, left-aligned, as wide as the widest
insertion at that place (``keeplength``: insertions are dropped, as MAFFT's
``--keeplength`` does, so the alignment keeps its width). Existing rows get
gaps in the new columns. Output: the existing rows, then the new ones.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> new = make_sequences(["n"], [b"MKTAYIAKWWQRQ"], "protein")
>>> names, rows = add_sequences(["a", "b"], [b"MKTAYIAKQRQ", b"MKTAYI--QRQ"], new)
>>> [r.decode() for r in rows]
['MKTAYIAK--QRQ', 'MKTAYI----QRQ', 'MKTAYIAKWWQRQ']
>>> add_sequences(["a", "b"], [b"MKTAYIAKQRQ", b"MKTAYI--QRQ"], new, keeplength=True)[1][2].decode()
'MKTAYIAKQRQ'
"""

from __future__ import annotations

import numpy as np

from msa_gpu.alphabet import encode
from msa_gpu.backend import select_backend, set_threads
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.errors import InputError
from msa_gpu.progressive.driver import BatchContext, FamilyJob, SideInfo, merge_batch, stack_matrices
from msa_gpu.progressive.profile import Profile
from msa_gpu.progressive.costs import family_scoring
from msa_gpu.recipe import recipe_for
from msa_gpu.types import Sequences


def batch_size(k: int, width: int, longest: int, budget: int, n_new: int) -> int:
    """New sequences per batch: each pair holds a copy of the existing
    profile's codes (k x width bytes) and its DP cells (5 bytes each); a
    batch takes at most ``budget`` bytes and 65,535 pairs.

    >>> batch_size(1000, 1500, 120, 20 << 30, 10_000)  # 1,000 x 1,500 alignment, a quarter of an H100
    8729
    """
    per_pair = k * width + 5 * (width + 1) * (longest + 1) + 32 * (width + longest)
    return int(max(1, min(n_new, 65535, budget // max(per_pair, 1))))


def add_sequences(names: list[str], rows: list[bytes], new: Sequences, config: AlignerConfig | None = None,
                  backend=None, keeplength: bool = False, any_symbol: bool = False) -> tuple[list[str], list[bytes]]:
    """The existing alignment (``names``, gapped ``rows``) with ``new`` added;
    see the module's doc. ``new`` must be encoded for the alignment's
    sequence type (`read_new` detects it from both)."""
    if len({len(r) for r in rows}) != 1:
        raise InputError("the existing alignment's rows differ in length")
    grid = np.array([np.frombuffer(r, dtype=np.uint8) for r in rows])
    is_gap = (grid == ord("-")) | (grid == ord("."))
    empty = np.flatnonzero(is_gap.all(axis=0))
    if empty.size:
        raise InputError(f"the existing alignment has an all-gap column ({int(empty[0]) + 1}); remove it first")
    config = config or AlignerConfig()
    backend = backend or select_backend(config.backend)
    set_threads(config.threads)
    xp, gap = backend.xp, new.alphabet.gap
    residues = np.where(is_gap, ord("X") if new.alphabet.name == "protein" else ord("N"), grid)
    codes = np.stack(encode(names, [r.tobytes() for r in residues], new.alphabet, any_symbol))
    codes[is_gap] = gap
    k, width = codes.shape
    scoring = family_scoring(config, new, recipe_for(config, new, adding=True))  # (--add's rule: the recipe's)
    job = FamilyJob(new, None, None, np.ones(1, dtype=np.int64), scoring)  # type: ignore[arg-type]
    mats, mat_of = stack_matrices([job], xp)
    ctx = BatchContext(backend, mats, None)
    side = SideInfo(scoring, mat_of[0], None, 0, k + 1)
    profile_a = Profile(np.arange(k), xp.asarray(codes), np.ones(k, dtype=np.int64))
    placed: list[tuple[np.ndarray, list[list[int]]]] = []  # per new sequence: residue per column, insertions
    step = batch_size(k, width, int(new.lengths.max()), backend.ops.memory_budget(), len(new))
    for start in range(0, len(new), step):
        chunk = range(start, min(start + step, len(new)))
        pairs = [(profile_a, Profile(np.array([k]), xp.asarray(new.codes[i].reshape(1, -1)), np.ones(1, np.int64)))
                 for i in chunk]
        long_mask = np.array([(width + 1) * (len(new.codes[i]) + 1) > config.long_cells for i in chunk])
        merged = merge_batch(pairs, [side] * len(pairs), long_mask, ctx).profiles
        for prof in merged:
            m = backend.to_host(prof.codes)
            from_a = (m[:k] != gap).any(axis=0)
            b = m[k]
            slot = np.cumsum(from_a)  # an insertion after existing column slot - 1
            ins: list[list[int]] = [[] for _ in range(width + 1)]
            res_index = np.cumsum(b != gap) - 1
            for c in np.flatnonzero(~from_a):
                ins[int(slot[c])].append(int(res_index[c]))
            on_col = np.where(b[from_a] != gap, res_index[from_a], -1)
            placed.append((on_col, ins))
    widths = np.zeros(width + 1, dtype=np.int64)
    if not keeplength:
        for _, ins in placed:
            widths = np.maximum(widths, [len(x) for x in ins])
    out_rows = [_spread(r, widths, b"-") for r in rows]
    for (on_col, ins), raw in zip(placed, new.raw):
        src = np.frombuffer(raw + b"-", dtype=np.uint8)
        out_rows.append(_merge(bytes(src[np.where(on_col >= 0, on_col, len(raw))]), ins, widths, raw))
    return list(names) + list(new.names), out_rows


def _spread(row: bytes, widths: np.ndarray, gap: bytes) -> bytes:
    """An existing row with gap blocks of ``widths[s]`` before column s (and at the end)."""
    parts = []
    for s in range(len(row) + 1):
        parts.append(gap * int(widths[s]))
        if s < len(row):
            parts.append(row[s:s + 1])
    return b"".join(parts)


def _merge(on_cols: bytes, ins: list[list[int]], widths: np.ndarray, raw: bytes) -> bytes:
    """A new row: its inserted residues left-aligned in each block, then its column residues."""
    parts = []
    for s in range(len(on_cols) + 1):
        block = bytes(raw[i] for i in ins[s])[: int(widths[s])]
        parts.append(block + b"-" * (int(widths[s]) - len(block)))
        if s < len(on_cols):
            parts.append(on_cols[s:s + 1])
    return b"".join(parts)
