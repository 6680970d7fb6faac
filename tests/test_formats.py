"""Every output format is read back by Biopython; gzip output; strict
PHYLIP's name map; Newick names quoted where needed."""

import gzip
import io

import pytest
from Bio import AlignIO, Phylo
from typer.testing import CliRunner

from msa_gpu.cli import app

READERS = {"fasta": "fasta", "clustal": "clustal", "phylip": "phylip-relaxed", "phylip-strict": "phylip",
           "stockholm": "stockholm", "msf": "msf", "nexus": "nexus"}


@pytest.mark.parametrize("fmt", sorted(READERS))
@pytest.mark.parametrize("gz", [False, True])
def test_every_format_reads_back(refs, tmp_path, fmt, gz):
    out = tmp_path / ("out.x.gz" if gz else "out.x")
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--outfmt", fmt,
                                 "--backend", "cpu", "--mode", "fast", "-q"])
    assert r.exit_code == 0, r.output
    data = out.read_bytes()
    if gz:
        assert data[:2] == b"\x1f\x8b"
        data = gzip.decompress(data)
    aln = AlignIO.read(io.StringIO(data.decode()), READERS[fmt])
    assert len(aln) == 4 and len({len(r.seq) for r in aln}) == 1
    if fmt == "phylip-strict":
        pairs = [line.split("\t") for line in (tmp_path / f"{out.name}.names").read_text().splitlines()]
        assert [p[0] for p in pairs] == [r.id for r in aln] and all(len(p[0]) <= 10 for p in pairs)


def test_nexus_by_extension_and_dna_datatype(tmp_path):
    src = tmp_path / "in.fa"
    src.write_text(">a x\nACGTACGTTTGA\n>b\nACGTACGTGA\n>c\nACGTTCGTTTGA\n")
    out = tmp_path / "out.nex"
    assert CliRunner().invoke(app, ["align", str(src), "-o", str(out), "--backend", "cpu", "-q"]).exit_code == 0
    text = out.read_text()
    assert text.startswith("#NEXUS") and "datatype=dna" in text
    assert [r.id for r in AlignIO.read(out, "nexus")] == ["a", "b", "c"]


def test_newick_names_are_quoted_and_read_back(tmp_path):
    src = tmp_path / "in.fa"
    src.write_text(">sp|P1|A (human)\nMKVLAWTRESQ\n>b:2\nMKVLAWTRESA\n>c,3\nMKVLAWQRESA\n")
    tree = tmp_path / "t.nwk"
    r = CliRunner().invoke(app, ["align", str(src), "-o", str(tmp_path / "o.fa"), "--tree-out", str(tree),
                                 "--backend", "cpu", "-q"])
    assert r.exit_code == 0, r.output
    names = sorted(t.name for t in Phylo.read(tree, "newick").get_terminals())
    assert names == sorted(["sp|P1|A (human)", "b:2", "c,3"])


def test_clustal_omega_style_options(refs, tmp_path):
    from Bio.Phylo.TreeConstruction import DistanceMatrix  # noqa: F401 (Biopython reads it below)

    out, tree, dist = tmp_path / "o.fa", tmp_path / "g.dnd", tmp_path / "d.phy"
    out.write_text("old")
    r = CliRunner().invoke(app, ["align", "-i", str(refs / "BB11001.tfa"), "-o", str(out), "--outfmt", "fasta",
                                 "--guidetree-out", str(tree), "--distmat-out", str(dist), "--threads", "1",
                                 "--force", "--backend", "cpu", "--mode", "fast", "-q"])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith(">")
    assert len(Phylo.read(tree, "newick").get_terminals()) == 4
    lines = dist.read_text().splitlines()
    assert lines[0].strip() == "4" and len(lines) == 5 and len(lines[1].split()) == 5
    r = CliRunner().invoke(app, ["align", "--backend", "cpu"])
    assert r.exit_code == 2 and "no input" in r.output
