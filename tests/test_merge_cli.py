"""Merging alignments at the front doors (issue 60): ``msagpu align --merge``,
``msagpu-mafft --merge TABLE`` (MAFFT's table, read as MAFFT reads it) and
``--seed``, ``msagpu-clustalo --profile1/--profile2`` and ``-i`` with
``--profile1``; each input's columns kept, bad tables and alignments of
unequal rows refused in one line with no output left."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from msa_gpu.frontends import clustalo, mafft
from msa_gpu.frontends.msagpu import app
from msa_gpu.io import read_aligned

REF = Path(__file__).resolve().parent.parent / "references"


def _squeeze(rows: list[bytes]) -> list[bytes]:
    """Rows without the columns they leave empty, upper-cased."""
    g = np.array([np.frombuffer(r.upper(), np.uint8) for r in rows])
    keep = ~((g == ord("-")) | (g == ord("."))).all(axis=0)
    return [bytes(r[keep]) for r in g]


def _write(path: Path, names, rows) -> Path:
    path.write_bytes(b"".join(b">" + n.encode() + b"\n" + r + b"\n" for n, r in zip(names, rows)))
    return path


@pytest.fixture()
def parts(tmp_path):
    """BB20001's reference (16 sequences) cut in three by its rows: 0-5, 6-10, 11-15."""
    names, rows = read_aligned(REF / "BB20001.ref.fa")
    cuts = [(0, 6), (6, 11), (11, 16)]
    out = []
    for k, (a, b) in enumerate(cuts):
        out.append((names[a:b], _squeeze(rows[a:b])))
        _write(tmp_path / f"p{k}.fa", *out[-1])
    return out


def _kept(out_names, out_rows, part_names, part_rows) -> bool:
    got = dict(zip(out_names, out_rows))
    return _squeeze([got[n] for n in part_names]) == part_rows


def test_msagpu_align_merge_keeps_every_input_column(parts, tmp_path):
    out = tmp_path / "merged.fa"
    r = CliRunner().invoke(app, ["align", "--merge", str(tmp_path / "p0.fa"), str(tmp_path / "p1.fa"),
                                 str(tmp_path / "p2.fa"), "-o", str(out), "--backend", "cpu"])
    assert r.exit_code == 0, r.output
    names, rows = read_aligned(out)
    assert names == [n for part in parts for n in part[0]]  # inputs in order
    assert all(_kept(names, rows, *part) for part in parts)


def test_msagpu_align_merge_needs_two_alignments(parts, tmp_path):
    r = CliRunner().invoke(app, ["align", "--merge", str(tmp_path / "p0.fa"), "--backend", "cpu"])
    assert r.exit_code == 2 and "at least two alignments" in r.output


def test_mafft_merge_reads_the_table_as_mafft(parts, tmp_path, capsysbinary):
    """A table with a comment, a blank line and sequences out of order; the
    third part's rows are not listed: MAFFT ungaps them and aligns each."""
    names = [n for part in parts for n in part[0]]
    rows = [r for part in parts for r in part[1]]
    _write(tmp_path / "in.fa", names, rows)
    (tmp_path / "table").write_text("6 5 4 3 2 1   # subMSA1, listed backwards\n\n7 8 9 10 11 # subMSA2\n")
    assert mafft.run(["--merge", str(tmp_path / "table"), str(tmp_path / "in.fa")]) == 0
    _write(tmp_path / "out.fa", *zip(*[(n, r) for n, r in _records(capsysbinary.readouterr().out)]))
    got_names, got_rows = read_aligned(tmp_path / "out.fa")
    assert got_names == names  # the input file's order
    assert _kept(got_names, got_rows, *parts[0]) and _kept(got_names, got_rows, *parts[1])
    assert len({len(r) for r in got_rows}) == 1
    assert [r.replace(b"-", b"").upper() for r in got_rows[11:]] == [r.replace(b"-", b"") for r in parts[2][1]]


def _records(text: bytes):
    for block in text.split(b">")[1:]:
        head, *lines = block.split(b"\n")
        yield head.decode(), b"".join(lines)


@pytest.mark.parametrize("table, message", [
    ("1 2\n2 3\n", "sequence 2 appears in two sub-alignments (lines 1 and 2)"),
    ("1 99\n", "line 1: '99' is not a sequence number of the input (1 to 16)"),
    ("1 x\n", "line 1: 'x' is not a sequence number"),
    ("# nothing\n", "lists no sub-alignment"),
])
def test_mafft_merge_refuses_bad_tables_in_one_line(parts, tmp_path, table, message):
    import subprocess
    import sys

    _write(tmp_path / "in.fa", [n for p in parts for n in p[0]], [r for p in parts for r in p[1]])
    (tmp_path / "table").write_text(table)
    code = "from msa_gpu.frontends.mafft import main; main()"
    r = subprocess.run([sys.executable, "-c", code, "--quiet", "--merge", str(tmp_path / "table"),
                        str(tmp_path / "in.fa")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_sub_alignment_of_unequal_rows_is_refused(tmp_path):
    _write(tmp_path / "a.fa", ["a", "b"], [b"MKTAYIAKQRQ", b"MKTAYI-QRQ"])
    _write(tmp_path / "b.fa", ["c"], [b"MKTAYIAKWWQRQ"])
    out = tmp_path / "out.fa"
    r = CliRunner().invoke(app, ["align", "--merge", str(tmp_path / "a.fa"), str(tmp_path / "b.fa"), "-o", str(out),
                                 "--backend", "cpu"])
    assert r.exit_code == 2 and "rows of unequal length (a: 11; b: 10)" in r.output and not out.exists()


def test_mafft_seed_names_the_seed_rows_and_writes_them_first(parts, tmp_path, capsysbinary):
    _write(tmp_path / "new.fa", parts[2][0], [r.replace(b"-", b"") for r in parts[2][1]])
    assert mafft.run(["--seed", str(tmp_path / "p0.fa"), "--seed", str(tmp_path / "p1.fa"),
                      str(tmp_path / "new.fa")]) == 0
    got = list(_records(capsysbinary.readouterr().out))
    names = [n for n, _ in got]
    assert names == ["_seed_" + n for n in parts[0][0] + parts[1][0]] + parts[2][0]
    rows = [r for _, r in got]
    assert _squeeze(rows[:6]) == parts[0][1] and _squeeze(rows[6:11]) == parts[1][1]


def test_mafft_merge_and_seed_exclude_other_modes():
    from msa_gpu.errors import InputError

    for argv, message in ((["--merge", "t", "--add", "n.fa", "in.fa"], "exclude each other"),
                          (["--seed", "s.fa", "--reorder", "in.fa"], "--reorder does not apply with --seed")):
        with pytest.raises(InputError, match=message):
            mafft.parse(argv)


def test_clustalo_profiles(parts, tmp_path, capsysbinary):
    assert clustalo.run(["--profile1", str(tmp_path / "p0.fa"), "--profile2", str(tmp_path / "p1.fa")]) == 0
    got = list(_records(capsysbinary.readouterr().out))
    names, rows = [n for n, _ in got], [r for _, r in got]
    assert names == parts[0][0] + parts[1][0]
    assert _squeeze(rows[:6]) == parts[0][1] and _squeeze(rows[6:]) == parts[1][1]
    # -i with --profile1: the sequences aligned to the profile, written first (as Clustal Omega writes them)
    _write(tmp_path / "new.fa", parts[2][0], [r.replace(b"-", b"") for r in parts[2][1]])
    assert clustalo.run(["-i", str(tmp_path / "new.fa"), "--profile1", str(tmp_path / "p0.fa")]) == 0
    got = list(_records(capsysbinary.readouterr().out))
    assert [n for n, _ in got] == parts[2][0] + parts[0][0]
    assert _squeeze([r for _, r in got][5:]) == parts[0][1]
