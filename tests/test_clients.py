"""Real downstream clients read msagpu's output: IQ-TREE and FastTree build
trees, trimAl (pytrimal) trims, the nf-core MAFFT_ALIGN, FAMSA_ALIGN and
CLUSTALO_ALIGN command lines run with msagpu's entry points in the tools'
places and their outputs feed all three, and a two-rule Snakemake workflow
(align, then FastTree) runs end to end. `make test` installs the Debian
tools where it can; a missing tool skips its test."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from Bio import Phylo
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app
from msa_gpu.io import read_aligned, read_sequences

BIN = str(Path(sys.executable).parent)
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
pytestmark = pytest.mark.slow


def _need(tool: str) -> str:
    path = shutil.which(tool, path=ENV["PATH"])
    if path is None:
        pytest.skip(f"{tool} is not installed")
    return path


def _align(src: Path, out: Path, fmt: str) -> None:
    r = CliRunner().invoke(app, ["align", str(src), "-o", str(out), "--outfmt", fmt, "--backend", "cpu", "-q"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("fmt", ["phylip", "phylip-strict", "fasta"])
def test_iqtree_builds_a_tree(refs, tmp_path, fmt):
    iqtree = shutil.which("iqtree2") or shutil.which("iqtree")
    if iqtree is None:
        pytest.skip("IQ-TREE is not installed")
    aln = tmp_path / "aln.x"
    _align(refs / "BB20001.tfa", aln, fmt)
    r = subprocess.run([iqtree, "-s", str(aln), "-m", "LG", "-nt", "1", "-fast", "-redo", "-quiet",
                        "--prefix", str(tmp_path / "iq")], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    tree = Phylo.read(tmp_path / "iq.treefile", "newick")
    assert len(tree.get_terminals()) == len(read_sequences(refs / "BB20001.tfa"))


def test_fasttree_builds_a_tree_from_fasta(refs, tmp_path):
    fasttree = _need("FastTree")
    aln = tmp_path / "aln.fa"
    _align(refs / "BB20001.tfa", aln, "fasta")
    r = subprocess.run([fasttree, "-quiet", str(aln)], capture_output=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith(b";")


def test_trimal_trims(refs, tmp_path):
    pytrimal = pytest.importorskip("pytrimal")
    aln = tmp_path / "aln.fa"
    _align(refs / "BB20001.tfa", aln, "fasta")
    loaded = pytrimal.Alignment.load(str(aln))
    trimmed = pytrimal.AutomaticTrimmer("strictplus").trim(loaded)
    assert len(trimmed.names) == len(loaded.names) and 0 < len(trimmed.sequences[0]) <= len(loaded.sequences[0])


def test_nf_core_mafft_align_command_line(refs, tmp_path):
    # nf-core/modules mafft/align: mafft --thread ${task.cpus} ${args} ${fasta} > ${prefix}.fas
    _need("msagpu-mafft")
    out = tmp_path / "test.fas"
    with open(out, "wb") as fh:
        r = subprocess.run(["msagpu-mafft", "--thread", "2", "--auto", str(refs / "BB11001.tfa")], stdout=fh,
                           stderr=subprocess.PIPE, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    names, rows = read_aligned(out)
    assert names == list(read_sequences(refs / "BB11001.tfa").names) and len({len(x) for x in rows}) == 1


def test_nf_core_clustalo_command_lines(refs, tmp_path):
    """nf-core/modules clustalo/guidetree and clustalo/align, msagpu align in clustalo's place:
    ``clustalo -i ${fasta} --guidetree-out ${prefix}.dnd --threads=${task.cpus}``, then
    ``clustalo -i ${fasta} --threads=${task.cpus} $args | pigz -p ${task.cpus} -c > ${prefix}.aln.gz``
    (gzip where pigz is missing), with the tree passed back as ``--guidetree-in``; FastTree reads it."""
    _need("msagpu")
    src = refs / "BB11001.tfa"
    tree = subprocess.run(f"msagpu align -i {src} --guidetree-out test.dnd --threads=2 > /dev/null", shell=True,
                          cwd=tmp_path, env=ENV, capture_output=True, timeout=300)
    assert tree.returncode == 0 and (tmp_path / "test.dnd").read_text().strip().endswith(";"), tree.stderr
    zipper = "pigz -p 2 -c" if shutil.which("pigz") else "gzip -c"
    r = subprocess.run(f"msagpu align -i {src} --threads=2 --guidetree-in test.dnd | {zipper} > test.aln.gz",
                       shell=True, cwd=tmp_path, env=ENV, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    names, rows = read_aligned(tmp_path / "test.aln.gz")
    assert names == list(read_sequences(src).names) and len({len(x) for x in rows}) == 1
    fasttree = shutil.which("FastTree", path=ENV["PATH"])
    if fasttree:
        (tmp_path / "aln.fa").write_bytes(b"".join(b">" + n.split()[0].encode() + b"\n" + x + b"\n"
                                                   for n, x in zip(names, rows)))
        t = subprocess.run([fasttree, "-quiet", str(tmp_path / "aln.fa")], capture_output=True, timeout=300)
        assert t.returncode == 0 and t.stdout.strip().endswith(b";")


#: nf-core/modules command lines with msagpu's entry points in the tools' places (shell, in a
#: folder holding in.fa): MAFFT_ALIGN, FAMSA_ALIGN and CLUSTALO_ALIGN; each writes out.fa.
NF_CORE = {
    "mafft/align": "msagpu-mafft --thread 2 --auto in.fa > out.fa",
    "famsa/align": "msagpu-famsa -t 2 in.fa out.fa",
    "clustalo/align": "msagpu align -i in.fa --threads=2 > out.fa",
}


@pytest.mark.parametrize("module", sorted(NF_CORE))
def test_nf_core_outputs_feed_fasttree_iqtree_and_trimal(refs, tmp_path, module):
    """Each nf-core alignment module's output, as the pipeline hands it on,
    read by FastTree, IQ-TREE and trimAl (pytrimal); tools not installed are
    skipped, and the test is skipped only if none is."""
    src = refs / "BB20001.tfa"
    (tmp_path / "in.fa").write_bytes(src.read_bytes())
    r = subprocess.run(NF_CORE[module], shell=True, cwd=tmp_path, env=ENV, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    aln = tmp_path / "out.fa"
    n = len(read_sequences(src))
    ran = []
    fasttree = shutil.which("FastTree", path=ENV["PATH"])
    if fasttree:
        t = subprocess.run([fasttree, "-quiet", str(aln)], capture_output=True, timeout=300)
        assert t.returncode == 0 and t.stdout.strip().endswith(b";"), t.stderr.decode()[-500:]
        ran.append("FastTree")
    iqtree = shutil.which("iqtree2") or shutil.which("iqtree")
    if iqtree:
        t = subprocess.run([iqtree, "-s", str(aln), "-m", "LG", "-nt", "1", "-fast", "-redo", "-quiet",
                            "--prefix", str(tmp_path / "iq")], capture_output=True, timeout=300)
        assert t.returncode == 0, t.stderr.decode()[-500:]
        assert len(Phylo.read(tmp_path / "iq.treefile", "newick").get_terminals()) == n
        ran.append("IQ-TREE")
    try:
        import pytrimal
    except ImportError:
        pytrimal = None
    if pytrimal is not None:
        loaded = pytrimal.Alignment.load(str(aln))
        trimmed = pytrimal.AutomaticTrimmer("strictplus").trim(loaded)
        assert len(loaded.names) == len(trimmed.names) == n
        ran.append("pytrimal")
    if not ran:
        pytest.skip("none of FastTree, IQ-TREE and pytrimal is installed")


SNAKEFILE = """
rule all:
    input: "tree.nwk"

rule align:
    input: "{SRC}"
    output: "aln.fa"
    shell: "msagpu-mafft --auto --quiet {input} > {output}"

rule tree:
    input: "aln.fa"
    output: "tree.nwk"
    shell: "FastTree -quiet {input} > {output}"
"""


def test_snakemake_workflow_end_to_end(refs, tmp_path):
    _need("FastTree")
    snakemake = _need("snakemake")
    (tmp_path / "Snakefile").write_text(SNAKEFILE.replace("{SRC}", str(refs / "BB20001.tfa")))
    r = subprocess.run([snakemake, "--cores", "1", "--quiet", "all"], cwd=tmp_path, env=ENV, capture_output=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr.decode()[-800:]
    tree = Phylo.read(tmp_path / "tree.nwk", "newick")
    assert len(tree.get_terminals()) == len(read_sequences(refs / "BB20001.tfa"))


def test_the_phylogenetics_example_of_the_docs_runs(refs, tmp_path):
    """docs/pipelines.md's ensemble-then-tree block, line by line, on BB20001
    (the tools that are not installed are left out; FastTree is needed)."""
    import re

    _need("FastTree")
    doc = (Path(__file__).resolve().parent.parent / "docs" / "pipelines.md").read_text()
    block = doc.split("## Phylogenetics with confidence")[1]
    lines = re.search(r"```sh\n(.*?)```", block, re.S).group(1).strip().splitlines()
    shutil.copy(refs / "BB20001.tfa", tmp_path / "family.fa")
    ran = []
    for line in lines:
        tool = line.split()[0]
        if shutil.which(tool, path=ENV["PATH"]) is None:
            continue
        r = subprocess.run(line, shell=True, cwd=tmp_path, env=ENV, capture_output=True, timeout=600)
        assert r.returncode == 0, (line, r.stderr.decode()[-500:])
        ran.append(tool)
    assert ran[0] == "msagpu" and "FastTree" in ran
    names, rows = read_aligned(tmp_path / "aligned.fa")
    kept = (tmp_path / "kept.txt").read_text().split()
    assert len(rows[0]) == len(kept) and len(names) == len(read_sequences(refs / "BB20001.tfa"))
    assert (tmp_path / "replicates.efa").read_text().count("\n<") == 7  # eight replicates
    assert len(Phylo.read(tmp_path / "tree.nwk", "newick").get_terminals()) == len(names)
