"""Adding sequences to an existing alignment: its columns never change."""

import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.synthetic import evolve_family
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.frontends.msagpu import app
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.errors import InputError
from msa_gpu.io import make_sequences, read_aligned
from msa_gpu.progressive import add_sequences

CPU = cpu_backend()
CFG = AlignerConfig(backend="cpu", mode="fast")


def _existing(n=12, seed=4):
    fam = evolve_family(n + 6, 80, seed=seed)
    seqs = make_sequences(fam.names[:n], fam.sequences[:n], "protein")
    res = Aligner(CFG, backend=CPU).align(seqs)
    new = make_sequences(fam.names[n:], fam.sequences[n:], "protein")
    return list(seqs.names), res.rows(), new


def _files(folder, names, rows, new):
    """The existing alignment and the new sequences as FASTA files."""
    aln, add = folder / "aln.fa", folder / "new.fa"
    for path, ns, rs in ((aln, names, rows), (add, new.names, new.raw)):
        path.write_bytes(b"".join(b">" + n.encode() + b"\n" + r + b"\n" for n, r in zip(ns, rs)))
    return aln, add


def _columns_kept(rows, out_rows):
    """The existing rows are the output's first rows with the new columns (gaps only there) removed."""
    grid = np.array([np.frombuffer(r, dtype=np.uint8) for r in out_rows[: len(rows)]])
    kept = ~(grid == ord("-")).all(axis=0)
    return [bytes(g[kept]) for g in grid] == rows


def test_existing_columns_never_change_and_new_rows_hold_their_residues():
    names, rows, new = _existing()
    out_names, out_rows = add_sequences(names, rows, new, CFG, CPU)
    assert out_names == names + list(new.names)
    assert len({len(r) for r in out_rows}) == 1
    assert _columns_kept(rows, out_rows)
    assert [r.replace(b"-", b"") for r in out_rows[len(rows):]] == list(new.raw)


def residue_columns(row: bytes) -> np.ndarray:
    """The columns holding a gapped row's residues, in order."""
    a = np.frombuffer(row, dtype=np.uint8)
    return np.flatnonzero((a != ord("-")) & (a != ord(".")))


def origin_share(out_rows: list[bytes], new_row: int, origin_row: int, start: int) -> float:
    """Share of an added row's residues in the column of the residue it was
    copied from (residues ``start...`` of the existing row ``origin_row``)."""
    new_cols = residue_columns(out_rows[new_row])
    origin_cols = residue_columns(out_rows[origin_row])[start:start + len(new_cols)]
    if len(new_cols) == 0 or len(origin_cols) != len(new_cols):
        return 0.0
    return float(np.mean(new_cols == origin_cols))


def _copies_and_fragments(rows, seed):
    """Every existing row's residues as a new sequence, and a fragment of each
    (a third of it, from a random start), with their origins."""
    raw = [r.replace(b"-", b"") for r in rows]
    rng = np.random.default_rng(seed)
    starts = [int(rng.integers(0, len(r) // 2)) for r in raw]
    frags = [r[a:a + max(10, len(r) // 3)] for r, a in zip(raw, starts)]
    copies = make_sequences([f"copy{i}" for i in range(len(raw))], raw, "protein")
    fragments = make_sequences([f"frag{i}" for i in range(len(raw))], frags, "protein")
    return copies, fragments, starts


def check_copies_land_on_their_rows(rows, out_rows):
    """A new sequence that copies an existing row lands in that row's columns
    (98-99% of residues on synthetic families; gappy stretches may shift) and
    needs no new column."""
    k = len(rows)
    shares = [origin_share(out_rows, k + i, i, 0) for i in range(k)]
    assert len(out_rows[0]) == len(rows[0]), "a copy of a row opened new columns"
    assert np.mean(shares) >= 0.95 and min(shares) >= 0.8, shares


def check_fragments_land_on_their_origin(rows, out_rows, starts):
    """A fragment cut from a row lands on the columns it was cut from (a
    fragment next to a long gap of its row may slide: 0.62 the least seen)."""
    k = len(rows)
    shares = [origin_share(out_rows, k + i, i, a) for i, a in enumerate(starts)]
    assert np.mean(shares) >= 0.9 and min(shares) >= 0.5, shares


@pytest.mark.parametrize("seed", [4, 11])
@pytest.mark.parametrize("keeplength", [False, True])
def test_copies_and_fragments_of_rows_land_on_their_origin_columns(seed, keeplength):
    names, rows, _ = _existing(seed=seed)
    copies, fragments, starts = _copies_and_fragments(rows, seed)
    check_copies_land_on_their_rows(rows, add_sequences(names, rows, copies, CFG, CPU, keeplength=keeplength)[1])
    check_fragments_land_on_their_origin(rows, add_sequences(names, rows, fragments, CFG, CPU,
                                                             keeplength=keeplength)[1], starts)


def _own_columns(rows, new):
    """A broken adder: every new residue in a column of its own."""
    width, extra = len(rows[0]), sum(len(r) for r in new.raw)
    out, at = [r + b"-" * extra for r in rows], width
    for r in new.raw:
        out.append(b"-" * at + r + b"-" * (width + extra - at - len(r)))
        at += len(r)
    return out


def _dropped(rows, new):
    """A broken keep-length adder: the new residues dropped."""
    return list(rows) + [b"-" * len(rows[0]) for _ in new.raw]


def _shifted(rows, new):
    """A broken adder: each new residue one column right of its origin's."""
    out = list(rows)
    for i, r in enumerate(new.raw):
        row = bytearray(b"-" * len(rows[0]))
        for res, col in zip(r, residue_columns(rows[i % len(rows)])[1:]):
            row[col] = res
        out.append(bytes(row))
    return out


@pytest.mark.parametrize("broken", [_own_columns, _dropped, _shifted])
def test_the_origin_checks_reject_broken_adders(broken):
    """(The placement checks above can fail: three broken adders fail them.)"""
    names, rows, _ = _existing(seed=4)
    copies, fragments, starts = _copies_and_fragments(rows, 4)
    with pytest.raises(AssertionError):
        check_copies_land_on_their_rows(rows, broken(rows, copies))
    with pytest.raises(AssertionError):
        check_fragments_land_on_their_origin(rows, broken(rows, fragments), starts)


def test_keeplength_keeps_the_width():
    names, rows, new = _existing(seed=9)
    _, out_rows = add_sequences(names, rows, new, CFG, CPU, keeplength=True)
    assert {len(r) for r in out_rows} == {len(rows[0])} and out_rows[: len(rows)] == rows


@settings(max_examples=15, deadline=None)
@given(st.lists(st.text("ACDEFGHIKLMNPQRSTVWY", min_size=1, max_size=30), min_size=1, max_size=4))
def test_any_new_sequences_keep_the_columns(texts):
    names, rows = ["a", "b"], [b"MKTAYIAKQRQ-ISF", b"MKTA--AKQRQAISF"]
    new = make_sequences([f"n{i}" for i in range(len(texts))], [t.encode() for t in texts], "protein")
    out_names, out_rows = add_sequences(names, rows, new, CFG, CPU)
    assert _columns_kept(rows, out_rows)
    assert [r.replace(b"-", b"") for r in out_rows[2:]] == [t.encode() for t in texts]


def test_bad_existing_alignments_are_refused():
    new = make_sequences(["n"], [b"MKV"], "protein")
    with pytest.raises(InputError, match="differ in length"):
        add_sequences(["a", "b"], [b"MKV", b"MK"], new, CFG, CPU)
    with pytest.raises(InputError, match="all-gap column"):
        add_sequences(["a", "b"], [b"M-KV", b"M-KV"], new, CFG, CPU)


def test_cli_add_and_mafft_add(tmp_path):
    names, rows, new = _existing()
    aln, add = _files(tmp_path, names, rows, new)
    out = tmp_path / "out.fa"
    r = CliRunner().invoke(app, ["align", "--add", str(add), "--existing", str(aln), "-o", str(out),
                                 "--backend", "cpu", "-q"])
    assert r.exit_code == 0, r.output
    out_names, out_rows = read_aligned(out)
    assert out_names == names + list(new.names) and _columns_kept(rows, out_rows)
    code = "from msa_gpu.frontends.mafft import main; main()"
    m = subprocess.run([sys.executable, "-c", code, "--add", str(add), "--keeplength", "--quiet", str(aln)],
                       capture_output=True)
    assert m.returncode == 0, m.stderr
    kept = [line for line in m.stdout.decode().splitlines() if not line.startswith(">")]
    assert kept  # FASTA came out
    r = CliRunner().invoke(app, ["align", "--add", str(add), "--backend", "cpu"])
    assert r.exit_code == 2 and "--existing" in r.output


@pytest.mark.skipif(shutil.which("mafft") is None, reason="MAFFT is not installed")
def test_same_shape_as_mafft_keeplength(tmp_path):
    names, rows, new = _existing()
    aln, add = _files(tmp_path, names, rows, new)
    theirs = tmp_path / "theirs.fa"
    theirs.write_bytes(subprocess.run(["mafft", "--quiet", "--add", str(add), "--keeplength", str(aln)],
                                      capture_output=True).stdout)
    t_names, t_rows = read_aligned(theirs)
    o_names, o_rows = add_sequences(names, rows, new, CFG, CPU, keeplength=True)
    assert t_names == o_names and {len(r) for r in t_rows} == {len(r) for r in o_rows} == {len(rows[0])}


def test_add_benchmark_scores_placement(tmp_path):
    import json

    from benchmarks.__main__ import main

    assert main(["add", "--existing", "8", "--new", "12", "--fragment", "30", "--length", "60", "--backend", "cpu",
                 "--out", str(tmp_path), "--work", str(tmp_path / "w"), "--tag", "t"]) == 0
    doc = json.loads((tmp_path / "t-add.json").read_text())
    ours = doc["entries"][0]
    assert ours["label"].startswith("msagpu") and 0.3 < ours["placement"] <= 1.0


def test_the_type_comes_from_the_alignment_and_the_new_sequences_together(tmp_path):
    from msa_gpu.io import read_new

    prot = [b"MKTAYIAKQRQ", b"MKTAYI--QRQ"]
    frag = tmp_path / "frag.fa"
    frag.write_text(">frag\nGATTACA\n")  # letters of DNA, but added to a protein alignment
    new = read_new(frag, prot)
    assert new.seqtype.value == "protein"
    m = subprocess.run([sys.executable, "-c", "from msa_gpu.frontends.mafft import main; main()", "--quiet", "--add",
                        str(frag), str(_write(tmp_path / "p.fa", ["p1", "p2"], prot))], capture_output=True)
    assert m.returncode == 0 and b"MKTAYIAKQRQ" in m.stdout  # protein stays upper case
    dna = [b"ACGTACGTAC" * 6, b"ACG--CGTAC" * 6]  # MAFFT's rule: over 75% A/C/G/T/U/N over both
    iupac = tmp_path / "iupac.fa"
    iupac.write_text(">f\nACRYKMSWNNAC\n")
    assert read_new(iupac, dna).seqtype.value == "dna"


def test_anysymbol_applies_to_the_existing_alignment(tmp_path):
    aln = _write(tmp_path / "a.fa", ["a", "b"], [b"MKT?YIAKQRQ", b"MKTAYI--QRQ"])
    new = _write(tmp_path / "n.fa", ["n"], [b"MKTAYIAKWQRQ"])
    code = "from msa_gpu.frontends.mafft import main; main()"
    bad = subprocess.run([sys.executable, "-c", code, "--quiet", "--add", str(new), str(aln)], capture_output=True)
    assert bad.returncode == 2 and b"'?'" in bad.stderr
    ok = subprocess.run([sys.executable, "-c", code, "--quiet", "--anysymbol", "--add", str(new), str(aln)],
                        capture_output=True)
    assert ok.returncode == 0 and b"MKT?YIAK" in ok.stdout


def _write(path, names, rows):
    path.write_bytes(b"".join(b">" + n.encode() + b"\n" + r + b"\n" for n, r in zip(names, rows)))
    return path


@pytest.mark.gpu
def test_gpu_adds_exactly_as_the_cpu():
    from msa_gpu.backend import gpu_backend

    names, rows, new = _existing(n=40, seed=11)
    for keep in (False, True):
        want = add_sequences(names, rows, new, CFG, CPU, keeplength=keep)
        got = add_sequences(names, rows, new, AlignerConfig(backend="gpu", mode="fast"), gpu_backend(), keeplength=keep)
        assert got == want
