"""Clustal Omega's (and MAFFT's) spellings on `msagpu align` mean what they mean there."""

import pytest
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app


def _run(refs, *args):
    return CliRunner().invoke(app, ["align", "-i", str(refs / "BB11001.tfa"), "--backend", "cpu", *args])


@pytest.mark.parametrize("spelling, first", [
    ("--outfmt=clu", "CLUSTAL"), ("--outfmt=fa", ">"), ("--outfmt=FASTA", ">"), ("--outfmt=st", "# STOCKHOLM"),
    ("--outfmt=phy", " 4 "), ("--outfmt=msf", "!!AA_MULTIPLE_ALIGNMENT"),
])
def test_outfmt_spellings(refs, spelling, first):
    r = _run(refs, spelling, "-q")
    assert r.exit_code == 0 and r.stdout.startswith(first), r.output[:200]


def test_seqtype_iter_threads_verbose_and_auto(refs):
    r = _run(refs, "--seqtype=Protein", "--iter", "2", "--thread", "1", "-v", "--auto", "--mode", "accurate")
    assert r.exit_code == 0, r.output
    assert "refinement up to 2 rounds" in r.stderr  # --iter is --maxiterate
    assert _run(refs, "--seqtype=PROTEIN", "-q").exit_code == 0


def test_a_format_msagpu_does_not_write_is_refused(refs):
    r = _run(refs, "--outfmt=selex")
    assert r.exit_code == 2 and "not one msagpu writes" in r.output
