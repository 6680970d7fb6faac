"""Fragments (issue 42): short pieces of a family's sequences, as large
families are full of, must not pull the full-length sequences' columns apart,
and their own residues should sit in their parents' columns. The family is a
BAliBASE reference (references/BB12006: four sequences of 220-242 residues
with a known alignment) and forty fragments of 25-45 residues cut from it,
each residue's true column known. The broken stand-in charges the
fragments' end gaps as inner gaps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences, read_aligned, read_core
from msa_gpu.accuracy import sp_tc
from msa_gpu.types import GuideTree

REF = Path(__file__).resolve().parent.parent / "references"
LETTERS = b"ACDEFGHIKLMNPQRSTVWY"


def _mutated(seq: bytes, rng, rate: float) -> bytes:
    piece = bytearray(seq)
    for i in np.flatnonzero(rng.random(len(piece)) < rate):
        piece[i] = LETTERS[int(rng.integers(20))]
    return bytes(piece)


def _family(n_full: int, n_frag: int, seed: int = 5):
    """The reference's four sequences, ``n_full`` full-length copies of
    them and ``n_frag`` fragments of 25-45 residues cut from them, one
    residue in ten substituted in both; returns (names, raw sequences, each
    sequence's reference columns, reference names, rows)."""
    names, rows = read_aligned(REF / "BB12006.ref.fa")
    rng = np.random.default_rng(seed)
    cols = [np.flatnonzero(np.frombuffer(r, np.uint8) != ord("-")) for r in rows]
    raw = [bytes(r).replace(b"-", b"").upper() for r in rows]
    out_names, out_raw, out_cols = list(names), list(raw), list(cols)
    for f in range(n_full):
        p = f % len(raw)
        out_names.append(f"full{f}")
        out_raw.append(_mutated(raw[p], rng, 0.1))
        out_cols.append(cols[p])
    for f in range(n_frag):
        p = int(rng.integers(len(raw)))
        length = int(rng.integers(25, 46))
        start = int(rng.integers(0, len(raw[p]) - length))
        out_names.append(f"frag{f}")
        out_raw.append(_mutated(raw[p][start:start + length], rng, 0.1))
        out_cols.append(cols[p][start:start + length])
    return out_names, out_raw, out_cols, names, rows


def _placed(aln_rows: list[bytes], true_cols: list[np.ndarray], n_full: int) -> float:
    """The fraction of fragment residue pairs (a fragment's residue and a
    full-length sequence's) that share a column in the alignment exactly
    where they share one in the reference."""
    col_of = []
    for row in aln_rows:
        col_of.append(np.flatnonzero(np.frombuffer(row, np.uint8) != ord("-")))
    right = total = 0
    for f in range(n_full, len(aln_rows)):
        for s in range(n_full):
            ref_pos = {int(c): i for i, c in enumerate(true_cols[s])}
            here = {int(c): i for i, c in enumerate(col_of[s])}
            for r, c in enumerate(true_cols[f]):
                if int(c) in ref_pos:
                    total += 1
                    right += here.get(int(col_of[f][r]), -1) == ref_pos[int(c)]
    return right / total


def _shuffled_caterpillar(n: int, seed: int = 1) -> GuideTree:
    """The stand-in tree that ignores the distances: sequences joined one at
    a time in a random order."""
    order = np.random.default_rng(seed).permutation(n)
    children, top = [], int(order[0])
    for k, leaf in enumerate(order[1:].tolist()):
        children.append((top, leaf))
        top = n + k
    return GuideTree(n, np.array(children), np.ones((n - 1, 2)))


def _run(mode: str, tree: GuideTree | None = None, **options):
    names, raw, cols, ref_names, ref_rows = _family(0, 40)
    seqs = make_sequences(names, raw, "protein")
    aligner = Aligner(AlignerConfig(backend="cpu", mode=mode, **options), backend=cpu_backend("test"))
    rows = aligner.align(seqs, guide_tree=tree).rows()
    full = sp_tc(names[:4], rows[:4], ref_names, ref_rows, read_core(REF / "BB12006.core"))
    return full.sp, full.tc, _placed(rows, cols, 4)


INNER_ENDS = {"terminal_open": 1.0, "terminal_extend": 1.0}  # the stand-in: end gaps cost what inner gaps do


def test_fragments_keep_the_full_length_alignment_and_their_columns():
    """Accurate mode (44 sequences): the four full-length sequences keep
    most of their alignment (0.97 / 0.95 without fragments) and most
    fragment residues sit in their parents' columns; with end gaps priced as
    inner gaps the fragments tear it apart (TC 0.02)."""
    sp, tc, placed = _run("accurate")
    assert sp >= 0.75 and tc >= 0.7 and placed >= 0.75, (sp, tc, placed)
    bad = _run("accurate", **INNER_ENDS)
    assert not (bad[0] >= 0.75 and bad[1] >= 0.7 and bad[2] >= 0.75), bad


def test_fast_mode_keeps_the_full_length_alignment_among_fragments():
    """Fast mode keeps the full-length alignment (0.94 / 0.90), but places
    fewer than half of the fragments' residues in their parents' columns:
    fragments from different regions are stacked on each other before they
    meet a full-length sequence (FAMSA 2 places 0.29 of them; benchmarks/
    results/NOTES.md, issue 42). A tree that ignores the distances (the
    sequences joined one at a time in a random order) loses the
    full-length alignment (0.75 / 0.68)."""
    sp, tc, placed = _run("fast")
    assert sp >= 0.88 and tc >= 0.85 and placed >= 0.3, (sp, tc, placed)
    bad = _run("fast", _shuffled_caterpillar(44))
    assert not (bad[0] >= 0.88 and bad[1] >= 0.85 and bad[2] >= 0.3), bad


def test_fragments_last_places_them_against_the_full_length_sequences():
    """``fragments`` last (``--fragments last``): the forty fragments join
    one at a time after the four full-length sequences, and sit in their
    parents' columns (0.92; where the tree puts them: 0.45 in fast mode,
    0.82 in accurate mode, which also loses the full-length alignment)."""
    for mode in ("fast", "accurate"):
        sp, tc, placed = _run(mode, fragments="last")
        assert sp >= 0.88 and tc >= 0.85 and placed >= 0.88, (mode, sp, tc, placed)
        bad = _run(mode, fragments="tree")
        assert not (bad[0] >= 0.88 and bad[1] >= 0.85 and bad[2] >= 0.88), (mode, bad)


def test_fragments_last_tree_keeps_the_rest_and_adds_them_in_order():
    from msa_gpu.tree import fragments_last, upgma
    from msa_gpu.types import DistanceMatrix

    rng = np.random.default_rng(3)
    d = rng.random((9, 9))
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    tree = upgma(DistanceMatrix(d, "test"))
    frag = np.array([False, True, False, False, True, False, True, False, False])
    out = fragments_last(tree, frag)
    assert out.n_leaves == 9 and out.children[-3:, 1].tolist() == [1, 4, 6]
    assert out.children[-3, 0] == 9 + len(out.children) - 4  # the rest's root, then each join
    kept = out.children[:-3]
    assert set(kept[kept < 9].tolist()) == {0, 2, 3, 5, 7, 8}
    assert fragments_last(tree, np.zeros(9, bool)) is tree


def test_the_command_line_takes_fragments_last(tmp_path):
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    names, raw, _, _, _ = _family(0, 40)
    src = tmp_path / "in.fa"
    src.write_text("".join(f">{n}\n{r.decode()}\n" for n, r in zip(names, raw)))
    r = CliRunner().invoke(app, ["align", str(src), "-o", str(tmp_path / "out.fa"), "--mode", "fast",
                                 "--backend", "cpu", "--fragments", "last"])
    assert r.exit_code == 0, r.output
    assert "40 fragments last" in r.output
    bad = CliRunner().invoke(app, ["align", str(src), "-o", str(tmp_path / "x.fa"), "--fragments", "first"])
    assert bad.exit_code == 2 and not (tmp_path / "x.fa").exists()


def _lengths_family(lengths: list[int], seed: int = 2):
    """Sequences of these lengths, each a mutated prefix of one random
    protein (so the full-length ones are related and the short ones are
    pieces of them)."""
    rng = np.random.default_rng(seed)
    base = bytes(LETTERS[i] for i in rng.integers(0, 20, max(lengths)))
    raw = [_mutated(base[:n], rng, 0.1) for n in lengths]
    return make_sequences([f"s{k}" for k in range(len(raw))], raw, "protein")


def _joined_last(tree: GuideTree) -> list[int]:
    """The leaves joined one at a time at the top, (((rest), f1), f2): first to last."""
    out, top = [], tree.n_leaves + len(tree.children) - 1
    while top >= tree.n_leaves:
        a, b = (int(x) for x in tree.children[top - tree.n_leaves])
        if b >= tree.n_leaves:
            break
        out.append(b)
        top = a
    return out[::-1]


@pytest.mark.parametrize("full, shorts, fragment", [
    (100, [49, 50, 51], [49]),   # half of 100 is 50: 50 is not under it, 49 is
    (101, [50, 51, 52], [50]),   # half of 101 is 50.5: 50 is under it, 51 is not
])
def test_fragments_last_at_its_length_threshold(full, shorts, fragment):
    """``--fragments last`` takes a sequence as a fragment when it is under
    half of the family's 95th length percentile (README): with 18
    full-length sequences that percentile is the full length, and of three
    sequences beside the half, only the one under it joins last, in the
    recipe and in the guide tree the aligner builds (its rest the tree it
    builds without fragments last)."""
    from msa_gpu.recipe import recipe_for
    from msa_gpu.tree import fragments_last

    lengths = [full] * 18 + shorts
    seqs = _lengths_family(lengths)
    p95 = float(np.percentile(lengths, 95))
    assert p95 == full
    expected = [k for k, n in enumerate(lengths) if 2 * n < p95]  # "under half", in whole numbers
    assert [lengths[k] for k in expected] == fragment
    recipe = recipe_for(AlignerConfig(fragments="last"), seqs)
    assert recipe.fragments == len(expected)
    config = dict(backend="cpu", mode="fast", retree=0)
    last = Aligner(AlignerConfig(fragments="last", **config)).align(seqs)
    plain = Aligner(AlignerConfig(**config)).align(seqs)
    mask = np.zeros(len(lengths), bool)
    mask[expected] = True
    assert _joined_last(last.guide_tree)[-len(expected):] == expected
    assert np.array_equal(last.guide_tree.children, fragments_last(plain.guide_tree, mask).children)


@pytest.mark.parametrize("lengths, fragments", [
    ([100, 100, 10, 10], 2),      # two full-length sequences remain: fragments last
    ([100, 10, 10, 10], 0),       # one would remain: where the tree puts them
    ([100, 100, 10], 1),          # three sequences, one fragment: two remain
])
def test_fragments_last_needs_two_full_length_sequences_to_remain(lengths, fragments):
    """(README: not "where fewer than two sequences would remain".)"""
    from msa_gpu.recipe import recipe_for

    p95 = float(np.percentile(lengths, 95))
    assert sum(2 * n < p95 for n in lengths) == (len(lengths) - 1 if fragments == 0 else fragments)
    assert recipe_for(AlignerConfig(fragments="last"), _lengths_family(lengths)).fragments == fragments
