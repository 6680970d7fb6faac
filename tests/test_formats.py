"""Every output format is read back by Biopython, and written into an output
folder; gzip output; strict PHYLIP's name map; Newick names quoted where
needed."""

import gzip
import io

import pytest
from Bio import AlignIO, Phylo
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app
from msa_gpu.io import OutFormat, format_for, output_name, read_aligned, read_sequences

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


@pytest.mark.parametrize("fmt", [f.value for f in OutFormat])  # every format msagpu has: none can be forgotten
def test_every_outfmt_writes_into_an_outdir(refs, tmp_path, fmt):
    """Batch mode names each family's file by its format's extension; that
    extension says the format again (strict PHYLIP's says PHYLIP), and the
    file holds the input's sequences under their names."""
    src = refs / "BB11001.tfa"
    r = CliRunner().invoke(app, ["align", str(src), "--outdir", str(tmp_path / "out"), "--outfmt", fmt,
                                 "--backend", "cpu", "-q"])
    assert r.exit_code == 0, r.output
    written = tmp_path / "out" / output_name(str(src), OutFormat(fmt))
    extra = [f"{written.name}.names"] if fmt == "phylip-strict" else []
    assert sorted(p.name for p in written.parent.iterdir()) == sorted([written.name, *extra])
    said = format_for(written, None)
    assert said is OutFormat(fmt) or (fmt, said) == ("phylip-strict", OutFormat.phylip)
    seqs = read_sequences(src)
    names, rows = read_aligned(written)
    if fmt == "phylip-strict":  # the short names' map gives the names back
        short = dict(line.split("\t") for line in (written.parent / extra[0]).read_text().splitlines())
        names = [short[n] for n in names]
    assert [n.split()[0] for n in names] == [n.split()[0] for n in seqs.names]
    assert [row.replace(b"-", b"").upper() for row in rows] == [raw.upper() for raw in seqs.raw]
