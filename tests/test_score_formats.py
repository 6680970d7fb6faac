"""`msagpu score` reads every format `msagpu align` writes, test and reference alike."""

import pytest
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app
from msa_gpu.io import OutFormat, read_aligned, render_alignment

FAMILY = "BB11001"


def _score(test, reference, core):
    r = CliRunner().invoke(app, ["score", str(test), str(reference), "--core", str(core), "--json"])
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("fmt", [f for f in OutFormat if f is not OutFormat.fasta])
def test_score_reads_every_output_format(refs, tmp_path, fmt):
    src, ref, core = refs / f"{FAMILY}.tfa", refs / f"{FAMILY}.ref.fa", refs / f"{FAMILY}.core"
    fasta, other = tmp_path / "out.fa", tmp_path / "out.aln"
    for path, f in ((fasta, "fasta"), (other, fmt.value)):
        r = CliRunner().invoke(app, ["align", str(src), "-o", str(path), "--outfmt", f, "--backend", "cpu", "-q"])
        assert r.exit_code == 0, r.output
    want = _score(fasta, ref, core)
    assert _score(other, ref, core) == want  # (the test in this format)
    names, rows = read_aligned(other)
    assert [r.replace(b"-", b"") for r in rows] == [r.replace(b"-", b"") for r in read_aligned(fasta)[1]]
    ref_other = tmp_path / "ref.aln"  # the reference itself in this format, by msagpu's writer
    ref_other.write_text(render_alignment(*read_aligned(ref), fmt))
    assert _score(fasta, ref_other, core) == want  # (the reference in this format)


def test_score_refuses_what_is_no_alignment(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\n")
    r = CliRunner().invoke(app, ["score", str(bad), str(bad)])
    assert r.exit_code == 2 and "not an alignment" in r.output
