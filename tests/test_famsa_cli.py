"""msagpu-famsa: FAMSA's command line mapped onto msagpu."""

import gzip
import subprocess
import sys

import pytest

from msa_gpu.errors import InputError
from msa_gpu.frontends.famsa import MAPPING, UNSUPPORTED, parse, run
from msa_gpu.io import read_aligned, read_sequences


def _run(*args, cwd=None):
    code = "from msa_gpu.frontends.famsa import main; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, cwd=cwd)


@pytest.mark.parametrize("argv, want", [
    (["in.fa", "out.aln"], dict(tree="auto", mode="auto", threads=None)),
    (["-t", "4", "-gt", "upgma", "in.fa", "out.aln"], dict(tree="upgma", threads=4)),
    (["-gt", "nj", "in.fa", "out.aln"], dict(tree="nj")),
    (["-gt", "sl", "-t", "0", "in.fa", "out.aln"], dict(tree="single", threads=None)),
    (["-medoidtree", "-keep-duplicates", "in.fa", "out.aln"], dict(mode="large")),
])
def test_options_map_onto_msagpu(argv, want):
    cfg = parse(argv).config
    for key, value in want.items():
        got = getattr(cfg, key)
        assert getattr(got, "value", got) == value, key


@pytest.mark.parametrize("argv, message", [
    (["-go", "14", "in.fa", "out.aln"], "scoring and refinement parameters"),
    (["-gt", "magic", "in.fa", "out.aln"], "sl, upgma, nj or import"),
    (["-frobnicate", "in.fa", "out.aln"], "-frobnicate is not supported"),
    (["in.fa"], "an input and an output"),
    (["-t", "x", "in.fa", "out.aln"], "needs a number"),
])
def test_bad_command_lines_name_the_problem(argv, message):
    with pytest.raises(InputError, match=message):
        parse(argv)


def test_nf_core_famsa_align_command_line(refs, tmp_path):
    """nf-core/modules famsa/align: ``famsa ${options_tree} -t ${task.cpus} ${fasta} ${prefix}.aln``
    (options_tree: ``-gt import ${tree}`` where a tree is given), with msagpu-famsa in famsa's place;
    a tree from --tree-out gives the same alignment back; -gz compresses; STDOUT writes to stdout."""
    src = refs / "BB11001.tfa"
    r = _run("-t", "2", src, "test.aln", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    names, rows = read_aligned(tmp_path / "test.aln")
    assert names == list(read_sequences(src).names) and len({len(x) for x in rows}) == 1
    tree = subprocess.run([sys.executable, "-m", "msa_gpu", "align", str(src), "-o", str(tmp_path / "own.fa"),
                           "--tree-out", str(tmp_path / "tree.dnd"), "-q"], capture_output=True)
    assert tree.returncode == 0, tree.stderr
    assert _run("-gt", "import", "tree.dnd", "-t", "2", src, "imported.aln", cwd=tmp_path).returncode == 0
    assert (tmp_path / "imported.aln").read_bytes() == (tmp_path / "own.fa").read_bytes()
    assert _run("-gz", src, "test.aln.gz", cwd=tmp_path).returncode == 0
    assert gzip.decompress((tmp_path / "test.aln.gz").read_bytes()) == (tmp_path / "test.aln").read_bytes()
    out = _run(src, "STDOUT", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == (tmp_path / "test.aln").read_bytes()


def test_every_mapped_option_is_documented_and_none_twice():
    assert not {k.split()[0] for k in MAPPING} & set(UNSUPPORTED)
    r = _run("-help")
    assert r.returncode == 0 and all(k in r.stdout.decode() for k in MAPPING)


def test_a_malformed_tree_is_refused_in_one_line(refs, tmp_path):
    (tmp_path / "bad.nwk").write_text("((a,b);\n")
    r = _run("-gt", "import", "bad.nwk", refs / "BB11001.tfa", "out.aln", cwd=tmp_path)
    assert r.returncode == 2 and b"not a guide tree for this input" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "out.aln").exists()


def align_recipe(src, tmp_path) -> str:
    """The recipe msagpu align says for ``src`` (without mode auto's rule)."""
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    r = CliRunner().invoke(app, ["align", str(src), "-o", str(tmp_path / "align.fa")])
    assert r.exit_code == 0, r.output
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("msagpu: recipe: ")]
    return line.removeprefix("msagpu: recipe: ").split(" (mode auto:")[0]


def test_v_says_the_recipe_line_as_msagpu_align_does(refs, tmp_path, capsys):
    """Quiet without -v, as FAMSA; with -v the recipe line msagpu align says."""
    src = refs / "BB11001.tfa"
    want = align_recipe(src, tmp_path)
    capsys.readouterr()
    assert run([str(src), str(tmp_path / "quiet.fa")]) == 0
    assert capsys.readouterr().err == ""
    assert run(["-v", str(src), str(tmp_path / "verbose.fa")]) == 0
    said = [x for x in capsys.readouterr().err.splitlines() if "recipe" in x]
    assert said == [f"msagpu-famsa: recipe: {want}"] and want.startswith("4 sequences, mean length ")
