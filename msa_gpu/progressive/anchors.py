"""Anchors for long merges (issue 31): a merge of two long profiles is cut
at exact k-mer matches of their consensus sequences, chained, and only the
pieces between those anchors go through the DP, as MAFFT fixes homologous
segments found by FFT and aligns only between them.

For a pair whose DP would take more than ``anchor_cells`` cells:

1. each profile's consensus: per column, its most frequent code, with the
   columns whose consensus is a gap left out (`profile_anchors`: a member's
   insertions would otherwise break nearly every k-mer of a large profile);
2. the k-mers (`K_MER` letters) that occur exactly once in each consensus,
   matched between the two, merged into runs along their diagonals;
3. the heaviest chain of runs increasing in both profiles (longest total
   length; ties to the earlier run), each run trimmed to end before the next
   begins and `MARGIN` columns shorter at either end, runs shorter than
   `MIN_RUN` dropped; back on columns, each run is split where either side
   skips a left-out column (those columns go to the DP, or to gaps);
4. the pieces between consecutive anchors (and before the first and after
   the last) are ordinary merges of sub-profiles (column ranges), batched
   with the level's other merges on either backend; the anchor columns are
   stacked as they are. A piece with no column on one side is the other
   side over gaps.

Everything here is integer host work on the consensus, so both backends
cut a merge at the same places and give the same bytes. A merge with no
anchors is aligned whole, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.backend import to_host
from msa_gpu.progressive.profile import Profile

#: Merges with more DP cells than this look for anchors (about 4,000 x 4,000).
ANCHOR_CELLS = 1 << 24
#: k-mer length (nucleotide: True) of the first search, and the shortest
#: of the searches inside the pieces left between anchors.
K_MER = {True: 15, False: 8}
K_MIN = {True: 9, False: 5}
K_STEP = 2
#: Pieces of more DP cells than this are searched again with shorter k-mers.
PIECE_CELLS = 1 << 16
#: Runs shorter than this (after trimming) are not anchors.
MIN_RUN = 12
#: Columns given back to the DP at either end of each anchor: an exact match
#: next to an indel in a repeat can run past where the indel belongs.
MARGIN = 8


@dataclass(frozen=True)
class Anchor:
    """Columns ``a .. a + length`` of profile A matched to ``b .. b + length`` of B."""

    a: int
    b: int
    length: int


def consensus(codes, gap: int, xp=np) -> np.ndarray:
    """(L,) host int16: each column's most frequent code (the lowest on ties;
    ``gap`` where gaps are most frequent)."""
    counts = xp.stack([(codes == c).sum(axis=0) for c in range(gap + 1)])
    return to_host(counts.argmax(axis=0)).astype(np.int16)


def kmer_keys(seq: np.ndarray, k: int, gap: int) -> np.ndarray:
    """(L - k + 1,) int64 key of each k-mer of ``seq`` (codes below 32),
    -1 where the window holds ``gap``.

    >>> kmer_keys(np.array([1, 2, 3, 9, 1, 2]), 2, 9).tolist()
    [34, 67, -1, -1, 34]
    """
    n = len(seq) - k + 1
    if n <= 0:
        return np.zeros(0, np.int64)
    key = np.zeros(n, np.int64)
    for j in range(k):
        key = (key << 5) | seq[j: j + n].astype(np.int64)
    gaps = np.concatenate([[0], np.cumsum(seq == gap)])
    key[(gaps[k:] - gaps[:n]) > 0] = -1
    return key


def _unique_positions(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys that occur once (not -1), sorted, and where they occur."""
    ok = keys >= 0
    vals, first, count = np.unique(keys[ok], return_index=True, return_counts=True)
    pos = np.flatnonzero(ok)[first]
    once = count == 1
    return vals[once], pos[once]


def find_anchors(ca: np.ndarray, cb: np.ndarray, k: int, gap: int, min_run: int = MIN_RUN,
                 k_min: int | None = None, piece_cells: int = PIECE_CELLS) -> list[Anchor]:
    """The chained anchors of two consensus sequences (see the module); with
    ``k_min``, each piece left between them of more than ``piece_cells`` DP
    cells is searched again with k-mers `K_STEP` shorter (unique within the
    piece), down to ``k_min``.

    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 4, 400)
    >>> b = np.concatenate([a[:150], rng.integers(0, 4, 7), a[150:]])
    >>> [(x.a, x.b, x.length) for x in find_anchors(a, b, 10, 15)]
    [(8, 8, 134), (158, 165, 234)]
    """
    ka, pa = _unique_positions(kmer_keys(ca, k, gap))
    kb, pb = _unique_positions(kmer_keys(cb, k, gap))
    common, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    if not len(common):
        if k_min is None or k - K_STEP < k_min or (len(ca) + 1) * (len(cb) + 1) <= piece_cells:
            return []
        return find_anchors(ca, cb, k - K_STEP, gap, min_run, k_min, piece_cells)
    i, j = pa[ia], pb[ib]
    order = np.lexsort((i, i - j))  # by diagonal, then along it
    i, j = i[order], j[order]
    diag = i - j
    new_run = np.ones(len(i), bool)
    new_run[1:] = (diag[1:] != diag[:-1]) | (i[1:] != i[:-1] + 1)
    starts = np.flatnonzero(new_run)
    ends = np.concatenate([starts[1:], [len(i)]]) - 1
    runs = sorted(zip(i[starts].tolist(), j[starts].tolist(), (i[ends] - i[starts] + k).tolist()))
    top = _trimmed(_heaviest_chain(runs), min_run)
    if k_min is None or k - K_STEP < k_min:
        return top
    out: list[Anchor] = []
    ia = ib = 0
    for x in [*top, Anchor(len(ca), len(cb), 0)]:
        if (x.a - ia + 1) * (x.b - ib + 1) > piece_cells:
            inner = find_anchors(ca[ia:x.a], cb[ib:x.b], k - K_STEP, gap, min_run, k_min, piece_cells)
            out.extend(Anchor(y.a + ia, y.b + ib, y.length) for y in inner)
        if x.length:
            out.append(x)
        ia, ib = x.a + x.length, x.b + x.length
    return out


def _heaviest_chain(runs: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The chain of runs (sorted by a, then b) strictly increasing in a and
    b with the largest total length (a Fenwick tree of the best chain ending
    below each b; ties keep the earlier run)."""
    if not runs:
        return []
    bs = sorted({b for _, b, _ in runs})
    rank = {b: r + 1 for r, b in enumerate(bs)}
    size = len(bs)
    tree_val, tree_idx = [0] * (size + 1), [-1] * (size + 1)
    best, prev = [0] * len(runs), [-1] * len(runs)
    done = 0
    for r, (a, b, length) in enumerate(runs):
        # runs with a smaller a enter the tree before run r is scored (strictly increasing a)
        while done < r and runs[done][0] < a:
            x = rank[runs[done][1]]
            while x <= size:
                if best[done] > tree_val[x]:
                    tree_val[x], tree_idx[x] = best[done], done
                x += x & -x
            done += 1
        x, top, arg = rank[b] - 1, 0, -1
        while x > 0:
            if tree_val[x] > top:
                top, arg = tree_val[x], tree_idx[x]
            x -= x & -x
        best[r], prev[r] = top + length, arg
    r = max(range(len(runs)), key=lambda q: (best[q], -q))
    chain = []
    while r >= 0:
        chain.append(runs[r])
        r = prev[r]
    return chain[::-1]


def _trimmed(chain: list[tuple[int, int, int]], min_run: int, margin: int = MARGIN) -> list[Anchor]:
    """Each run cut to end before the next begins and ``margin`` columns
    shorter at either end; short ones dropped."""
    out: list[Anchor] = []
    for q, (a, b, length) in enumerate(chain):
        if q + 1 < len(chain):
            na, nb, _ = chain[q + 1]
            length = min(length, na - a, nb - b)
        if out:
            last = out[-1]
            cut = max(last.a + last.length - a, last.b + last.length - b, 0)
            a, b, length = a + cut, b + cut, length - cut
        if length - 2 * margin >= min_run:
            out.append(Anchor(a + margin, b + margin, length - 2 * margin))
    return out


def profile_anchors(a: Profile, b: Profile, gap: int, nucleotide: bool, xp=np) -> list[Anchor]:
    """The anchors of two profiles, in columns. They are searched on the
    consensus without its gap columns (insertions in a few members would
    break nearly every k-mer of a large profile); a run is then split where
    either side skips a gap column, and the skipped columns are left to the
    DP (or to gaps, where only one side has any)."""
    ca, cb = consensus(a.codes, gap, xp), consensus(b.codes, gap, xp)
    ka, kb = np.flatnonzero(ca != gap), np.flatnonzero(cb != gap)
    found = find_anchors(ca[ka], cb[kb], K_MER[nucleotide], gap, k_min=K_MIN[nucleotide])
    return _in_columns(found, ka, kb)


def _in_columns(found: list[Anchor], ka: np.ndarray, kb: np.ndarray) -> list[Anchor]:
    """Anchors on gap-free consensus positions as anchors on columns
    (``ka``, ``kb``: each position's column), split where either side's
    columns are not contiguous.

    >>> [(x.a, x.b, x.length) for x in _in_columns([Anchor(0, 1, 4)], np.array([0, 1, 3, 4]), np.arange(5))]
    [(0, 1, 2), (3, 3, 2)]
    """
    out: list[Anchor] = []
    for x in found:
        ca, cb = ka[x.a: x.a + x.length], kb[x.b: x.b + x.length]
        cuts = np.flatnonzero((np.diff(ca) != 1) | (np.diff(cb) != 1)) + 1
        starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [x.length]])
        out.extend(Anchor(int(ca[s]), int(cb[s]), int(e - s)) for s, e in zip(starts.tolist(), ends.tolist()))
    return out


@dataclass
class AnchoredLevel:
    """One level's merges as units for the DP: whole pairs, or the pieces of
    anchored ones (``owner[u]``: the pair unit u belongs to); `stitch` puts
    each pair's merged profile back together."""

    pairs: list
    gaps: list  # each pair's gap code
    units: list
    owner: list
    inner: list  # unit u is a piece inside its pair: its end gaps are not the alignment's ends
    layouts: dict  # pair index -> [("dp", unit) | ("a", a0, a1) | ("b", b0, b1) | ("anchor", Anchor)]

    def stitch(self, merged: list, xp) -> list[Profile]:
        """Each pair's merged profile (``merged[u]``: unit u's)."""
        out, whole = [], {p: u for u, p in enumerate(self.owner) if p not in self.layouts}
        for p, ((a, b), gap) in enumerate(zip(self.pairs, self.gaps)):
            layout = self.layouts.get(p)
            if layout is None:
                out.append(merged[whole[p]])
                continue
            parts = []
            for part in layout:
                if part[0] == "dp":
                    parts.append(merged[part[1]].codes)
                elif part[0] == "a":
                    cols = a.codes[:, part[1]: part[2]]
                    parts.append(xp.concatenate([cols, xp.full((b.size, cols.shape[1]), gap, dtype=cols.dtype)]))
                elif part[0] == "b":
                    cols = b.codes[:, part[1]: part[2]]
                    parts.append(xp.concatenate([xp.full((a.size, cols.shape[1]), gap, dtype=cols.dtype), cols]))
                else:
                    x = part[1]
                    parts.append(xp.concatenate([a.codes[:, x.a: x.a + x.length], b.codes[:, x.b: x.b + x.length]]))
            out.append(Profile(np.concatenate([a.members, b.members]), xp.ascontiguousarray(xp.concatenate(parts, axis=1)),
                               np.concatenate([a.weights, b.weights])))
        return out


def anchored_level(pairs: list, gaps: list[int], nucleotide: list[bool], anchor_cells: int, xp=np,
                   may_cut: list[bool] | None = None) -> AnchoredLevel:
    """A level's merges (``pairs`` of `Profile`), those over ``anchor_cells``
    DP cells cut at their anchors (0: none cut); ``gaps[p]`` and
    ``nucleotide[p]``: pair p's gap code and alphabet; ``may_cut[p]`` False
    keeps pair p whole (a family with a consistency library: its entries
    name residues by their place in the whole sequence). A piece that
    touches neither end of its pair is marked ``inner``: its end gaps are
    inside the alignment, so the caller scores them as inner gaps."""
    units, owner, inner, layouts = [], [], [], {}
    for p, (a, b) in enumerate(pairs):
        anchors = []
        if (anchor_cells > 0 and (may_cut is None or may_cut[p])
                and (a.length + 1) * (b.length + 1) > anchor_cells):
            anchors = profile_anchors(a, b, gaps[p], nucleotide[p], xp)
        if not anchors:
            units.append((a, b))
            owner.append(p)
            inner.append(False)
            continue
        layout, ia, ib = [], 0, 0
        for x in [*anchors, Anchor(a.length, b.length, 0)]:
            if x.a > ia and x.b > ib:
                layout.append(("dp", len(units)))
                units.append((_columns(a, ia, x.a), _columns(b, ib, x.b)))
                owner.append(p)
                inner.append(ia + ib > 0 and x.length > 0)
            elif x.a > ia:
                layout.append(("a", ia, x.a))
            elif x.b > ib:
                layout.append(("b", ib, x.b))
            if x.length:
                layout.append(("anchor", x))
            ia, ib = x.a + x.length, x.b + x.length
        layouts[p] = layout
    return AnchoredLevel(pairs, list(gaps), units, owner, inner, layouts)


def _columns(p: Profile, lo: int, hi: int) -> Profile:
    return Profile(p.members, p.codes[:, lo:hi], p.weights)
