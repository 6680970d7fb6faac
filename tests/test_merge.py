"""Merging alignments (issue 60): each input's columns kept, a guide tree over
the inputs, accurate mode across the merge up to its threshold, bad input
refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import msa_gpu.workflows.merging as merge_mod
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distances import kmer_distance
from msa_gpu.errors import InputError
from msa_gpu.io import read_aligned, read_core
from msa_gpu.workflows.merging import merge_alignments, merge_tree
from msa_gpu.accuracy import sp_tc
from msa_gpu.tree import leaf_order

REF = Path(__file__).resolve().parent.parent / "references"
CPU = AlignerConfig(backend="cpu")


def _without_empty_columns(rows: list[bytes]) -> list[bytes]:
    g = np.array([np.frombuffer(r, np.uint8) for r in rows])
    keep = ~((g == ord("-")) | (g == ord("."))).all(axis=0)
    return [bytes(r[keep]) for r in g]


def _parts(family: str, cuts: list[int]):
    names, rows = read_aligned(REF / f"{family}.ref.fa")
    edges = [0, *cuts, len(names)]
    return names, rows, [(names[a:b], _without_empty_columns(rows[a:b])) for a, b in zip(edges, edges[1:])]


@pytest.mark.parametrize("family, cuts", [("BB20001", [8]), ("BB20001", [3, 11]), ("BB12006", [1, 2, 3])])
def test_each_input_keeps_its_columns(family, cuts):
    _, _, parts = _parts(family, cuts)
    out = merge_alignments(parts, CPU)
    assert out.names == [n for names, _ in parts for n in names]
    assert len({len(r) for r in out.rows}) == 1
    for (_, rows), members in zip(parts, out.groups):
        mine = [out.rows[i] for i in members]
        assert _without_empty_columns(mine) == rows  # column by column, residues and gaps, in order


def test_halves_of_a_reference_merge_to_its_columns():
    """The two halves of BB20001's reference (16 sequences; fast mode alone
    gets TC 0 on it) merged: their columns are the reference's, so what is
    left is where the halves meet (measured 2026-12-06 on the CPU: SP 1.000,
    TC 1.000; fast mode on the unaligned sequences: 0.595 / 0.000)."""
    names, rows, halves = _parts("BB20001", [8])
    core = read_core(REF / "BB20001.core")
    out = merge_alignments(halves, CPU)
    merged = sp_tc(out.names, out.rows, names, rows, core)
    assert merged.sp > 0.99 and merged.tc > 0.95
    # a merge that let go of the inputs' columns (realigned from scratch) scores far less
    from msa_gpu.api import align
    whole = align([(n, r.replace(b"-", b"")) for n, r in zip(names, rows)], backend="cpu")
    plain = sp_tc(list(whole.sequences.names), whole.rows(), names, rows, core)
    assert merged.sp > plain.sp + 0.2


def test_the_tree_keeps_each_input_a_clade_and_joins_the_closest_first():
    names, rows, parts = _parts("BB12006", [2])
    from msa_gpu.io import make_sequences
    raw = [r.replace(b"-", b"") for r in rows]
    seqs = make_sequences(names, raw)
    groups = (np.array([0, 1]), np.array([2]), np.array([3]))
    tree, roots = merge_tree(seqs, groups)
    _, start, stop = leaf_order(tree)
    assert roots[1:] == [2, 3]
    assert stop[roots[0]] - start[roots[0]] == 2  # the first input's two leaves under its root alone
    d = kmer_distance(seqs).values
    mean = {(0, 1): d[[0, 1], 2].mean(), (0, 2): d[[0, 1], 3].mean(), (1, 2): d[2, 3]}
    a, b = min(mean, key=mean.get)
    assert sorted(tree.children[1].tolist()) == sorted([roots[a], roots[b]])  # the closest inputs first


def test_accurate_mode_across_the_merge_up_to_its_threshold(monkeypatch):
    _, _, parts = _parts("BB12006", [2])
    accurate = AlignerConfig(backend="cpu", mode="accurate")
    monkeypatch.setattr(merge_mod, "ACCURATE_MOST", 4)  # 4 sequences: on the threshold
    assert merge_alignments(parts, accurate).scoring.startswith("accurate")
    monkeypatch.setattr(merge_mod, "ACCURATE_MOST", 3)
    assert merge_alignments(parts, accurate).scoring.startswith("fast")
    assert merge_alignments(parts, CPU).scoring.startswith("fast")


def test_a_single_sequence_joins_as_an_alignment_of_one():
    out = merge_alignments([(["a", "b"], [b"MKTAYIAKQRQ", b"MKTAYI--QRQ"]), (["c"], [b"MKTAYIAKWWQRQ"])], CPU)
    assert [r.decode() for r in out.rows] == ["MKTAYIAK--QRQ", "MKTAYI----QRQ", "MKTAYIAKWWQRQ"]


@pytest.mark.parametrize("inputs, message", [
    ([(["a"], [b"MKT"])], "at least two"),
    ([(["a", "b"], [b"MKT", b"MK"]), (["c"], [b"MKT"])], "alignment 1 of the merge has rows of unequal length (a: 3; b: 2)"),
    ([(["a"], [b"MKT"]), (["a"], [b"MKV"])], "sequence name a appears twice"),
    ([(["a", "b"], [b"MKT", b"---"]), (["c"], [b"MKT"])], "sequence b (alignment 1 of the merge) has no residue"),
    ([(["a"], [b"MKT"]), ([], [])], "alignment 2 of the merge is empty"),
])
def test_bad_inputs_are_refused_in_one_line(inputs, message):
    with pytest.raises(InputError) as err:
        merge_alignments(inputs, CPU)
    assert message in str(err.value) and "\n" not in str(err.value)
