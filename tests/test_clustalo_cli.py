"""msagpu-clustalo: Clustal Omega's command line mapped onto msagpu."""

import subprocess
import sys

import numpy as np
import pytest
from Bio import AlignIO, Phylo

from msa_gpu.frontends.clustalo import _VALUED, MAPPING, UNSUPPORTED, main, parse, run
from msa_gpu.frontends.writer import percent_identities
from msa_gpu.errors import InputError, OutputError
from msa_gpu.io import OutFormat, read_aligned, read_sequences
from msa_gpu.io import clustal_consensus

FAMILY = ">a first\nMKVLAAGIVGLLLSTAQAHA\n>b\nMKVLSAGIVALLLSTAHA\n>c\nMRVLAAGLVGLLASTAQAHAKK\n>d\nMKILAAGIVGLLTSTAQ\n"


@pytest.fixture
def family(tmp_path):
    path = tmp_path / "in.fa"
    path.write_text(FAMILY)
    return path


def _run(*args, cwd=None):
    code = "from msa_gpu.frontends.clustalo import main; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, cwd=cwd)


@pytest.mark.parametrize("argv, want", [
    (["-i", "in.fa"], dict(fmt="fasta", output=None, tree_order=False, wrap=0)),
    (["--infile=in.fa", "--outfmt=clu", "--outfile=out.aln", "--force"], dict(fmt="clustal", output="out.aln",
                                                                             force=True)),
    (["--in", "in.fa", "--outfmt", "a2m", "--wrap=30"], dict(fmt="fasta", wrap=30)),
    (["-i", "in.fa", "--outfmt=vie", "--output-order=tree-order", "-v"], dict(fmt="vienna", tree_order=True,
                                                                              verbose=True)),
    (["-i", "in.fa", "--outfmt=st", "--dealign", "--full", "--full-iter", "--auto"], dict(fmt="stockholm")),
    (["-i", "in.fa", "--distmat-out=d.mat", "--percent-id", "--guidetree-out", "t.dnd"],
     dict(distmat_out="d.mat", percent_id=True, tree_out="t.dnd")),
])
def test_options_map_onto_msagpu(argv, want):
    opts = parse(argv)
    for key, value in want.items():
        got = getattr(opts, key)
        assert getattr(got, "value", got) == value, key


def test_numbers_and_sequence_types_reach_the_aligner():
    cfg = parse(["-i", "x.fa", "--threads=3", "--iter", "2", "--max-guidetree-iterations=1", "-t", "Protein"]).config
    assert (cfg.threads, cfg.maxiterate, cfg.retree, cfg.seqtype.value) == (3, 2, 1, "protein")
    assert parse(["-i", "x.fa", "--seqtype=DNA"]).config.seqtype.value == "dna"


@pytest.mark.parametrize("argv, message", [
    (["-i", "in.fa", "--use-kimura"], "not Kimura-corrected"),
    (["-i", "in.fa", "--profile1", "p.aln", "--profile2", "q.aln"], "not both"),
    (["--profile2", "q.aln"], "--profile2 needs --profile1"),
    (["--profile1", "p.aln"], "or --profile1 and --profile2"),
    (["--profile1", "p.aln", "--profile2", "q.aln", "--guidetree-out", "t.nwk"], "no guide tree"),
    (["-i", "in.fa", "--residuenumber"], "residue numbers"),
    (["-i", "in.fa", "--frobnicate"], "--frobnicate is not supported"),
    (["--outfmt=clu"], "needs an input"),
    (["-i", "in.fa", "--percent-id"], "needs --distmat-out"),
    (["-i", "in.fa", "--outfmt=nexus"], "Clustal Omega writes"),
    (["-i", "in.fa", "--output-order=alphabetic"], "input-order or tree-order"),
    (["-i", "in.fa", "--threads=none"], "whole number"),
    (["-i", "in.fa", "--wrap=0"], "at least 1"),
    (["-i", "in.fa", "-t", "Peptide"], "Protein, DNA and RNA"),
    (["-i"], "-i needs a value"),
])
def test_bad_command_lines_name_the_problem(argv, message):
    with pytest.raises(InputError, match=message):
        parse(argv)


def test_help_lists_every_mapping_and_refusal():
    out = _run("--help")
    assert out.returncode == 0
    text = out.stdout.decode()
    assert all(k in text for k in MAPPING) and all(k in text for k in UNSUPPORTED)


def test_fasta_to_stdout_is_msagpus_alignment(family, tmp_path):
    """``clustalo -i in.fa`` writes aligned FASTA to stdout, quietly: the
    rows msagpu align writes for the same input (nf-core's CLUSTALO_ALIGN
    pipes it on)."""
    out = _run("-i", family, "--threads=2")
    assert out.returncode == 0 and out.stderr == b""
    (tmp_path / "got.fa").write_bytes(out.stdout)
    from msa_gpu import align

    names, rows = read_aligned(tmp_path / "got.fa")
    assert names == ["a first", "b", "c", "d"] and rows == align(str(family)).rows()


def test_formats_order_and_wrap(family, tmp_path):
    """Clustal with its conservation line (Biopython reads it), the guide
    tree's order, FASTA wrapped at --wrap, and Vienna's one line a row."""
    run(["-i", str(family), "--outfmt=clu", "-o", str(tmp_path / "o.aln")])
    aln = AlignIO.read(tmp_path / "o.aln", "clustal")
    rows = [str(r.seq).encode() for r in aln]
    assert aln.column_annotations["clustal_consensus"] == clustal_consensus(rows)
    assert "*" in aln.column_annotations["clustal_consensus"]

    run(["-i", str(family), "--output-order=tree-order", "--guidetree-out", str(tmp_path / "t.dnd"),
         "-o", str(tmp_path / "tree.fa")])
    leaves = [c.name for c in Phylo.read(tmp_path / "t.dnd", "newick").get_terminals()]
    names, _ = read_aligned(tmp_path / "tree.fa")
    assert names == leaves and sorted(leaves) == ["a first", "b", "c", "d"]

    run(["-i", str(family), "--wrap=7", "-o", str(tmp_path / "w.fa")])
    body = [line for line in (tmp_path / "w.fa").read_text().splitlines() if not line.startswith(">")]
    assert max(map(len, body)) == 7 and len(body) > 4

    run(["-i", str(family), "--outfmt=vienna", "-o", str(tmp_path / "o.vie")])
    lines = (tmp_path / "o.vie").read_text().splitlines()
    assert len(lines) == 8 and len({len(x) for x in lines[1::2]}) == 1 and len(lines[1]) > 20


def _offered_formats() -> list[str]:
    """Every output format msagpu-clustalo takes (those its --outfmt accepts)."""
    offered = []
    for fmt in OutFormat:
        try:
            parse(["-i", "in.fa", f"--outfmt={fmt.value}"])
        except InputError:
            continue
        offered.append(fmt.value)
    return offered


@pytest.mark.parametrize("fmt", _offered_formats())
def test_each_row_is_its_names_sequence_in_every_order(refs, tmp_path, fmt):
    """In input order and in the guide tree's, in every format msagpu-clustalo
    writes: each row, its gaps removed, is the input sequence of the name it
    is written under; tree order is the tree's leaves (BB11001's differs
    from its input order, so rows that kept the input order would show)."""
    src = refs / "BB11001.tfa"
    seqs = read_sequences(src)
    by_name = {name.split()[0]: raw.upper() for name, raw in zip(seqs.names, seqs.raw)}
    orders = {}
    for order in ("input-order", "tree-order"):
        out, tree = tmp_path / f"{order}.out", tmp_path / f"{order}.dnd"
        assert run(["-i", str(src), f"--outfmt={fmt}", f"--output-order={order}", "-o", str(out),
                    "--guidetree-out", str(tree)]) == 0
        names, rows = read_aligned(out)
        names = [n.split()[0] for n in names]
        assert sorted(names) == sorted(by_name) and len({len(r) for r in rows}) == 1
        for name, row in zip(names, rows):
            assert row.replace(b"-", b"").upper() == by_name[name], (order, name)
        orders[order] = names
        leaves = [c.name for c in Phylo.read(tree, "newick").get_terminals()]
    assert orders["input-order"] == [n.split()[0] for n in seqs.names]
    assert orders["tree-order"] == leaves != orders["input-order"]


def test_outputs_are_not_overwritten_without_force(family, tmp_path):
    out = tmp_path / "out.fa"
    out.write_text("keep me\n")
    with pytest.raises(OutputError, match="--force"):
        run(["-i", str(family), "-o", str(out)])
    assert out.read_text() == "keep me\n"
    cli = _run("-i", family, "-o", out)
    assert cli.returncode == 4 and b"--force" in cli.stderr
    run(["-i", str(family), "-o", str(out), "--force"])
    assert read_aligned(out)[0] == ["a first", "b", "c", "d"]


#: Each output msagpu-clustalo writes, by its first spelling: -o, and every option named ...-out (so a
#: new one is tested too).
OUTPUT_OPTIONS = list({dest: option for option, dest in reversed(_VALUED.items())
                       if dest == "output" or option.endswith("-out")}.values())


def test_the_output_options_are_all_found():
    assert sorted(OUTPUT_OPTIONS) == ["--distmat-out", "--guidetree-out", "-o"]


@pytest.mark.parametrize("option", OUTPUT_OPTIONS)
def test_no_existing_output_is_replaced_without_force(family, tmp_path, monkeypatch, capsys, option):
    """Every output follows the main output's rule (Clustal Omega's): an
    existing file is refused before the work, exit 4, kept as it was; with
    --force it is replaced."""
    from msa_gpu.aligner import Aligner

    existing, other = tmp_path / "existing", tmp_path / "out.fa"
    existing.write_text("keep me\n")
    argv = ["-i", str(family), option, str(existing), *([] if option == "-o" else ["-o", str(other)])]
    with monkeypatch.context() as m:
        for method in ("align", "align_many"):
            m.setattr(Aligner, method, lambda *a, **k: pytest.fail("the alignment ran"))
        with pytest.raises(SystemExit) as stop:
            main(argv)
    assert stop.value.code == 4
    assert capsys.readouterr().err == f"msagpu-clustalo: error: {existing} exists: Clustal Omega's --force overwrites it\n"
    assert existing.read_text() == "keep me\n" and sorted(p.name for p in tmp_path.iterdir()) == ["existing", "in.fa"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--force"])
    assert stop.value.code == 0 and existing.read_text() != "keep me\n"
    assert read_aligned(existing if option == "-o" else other)[0] == ["a first", "b", "c", "d"]


def test_percent_identity_matrix(family, tmp_path):
    """--distmat-out with --percent-id: the final alignment's identities in
    percent, labelled, symmetric, 100 on the diagonal."""
    run(["-i", str(family), "--distmat-out", str(tmp_path / "pid.mat"), "--percent-id", "-o", str(tmp_path / "a.fa")])
    lines = (tmp_path / "pid.mat").read_text().splitlines()
    assert lines[0].strip() == "4"
    labels = [x.split()[0] for x in lines[1:]]
    values = np.array([[float(v) for v in x.split()[1:]] for x in lines[1:]])
    assert labels == ["a", "b", "c", "d"]
    assert np.allclose(values, values.T) and np.allclose(np.diag(values), 100.0)
    _, rows = read_aligned(tmp_path / "a.fa")
    assert np.allclose(values, percent_identities(rows), atol=1e-6)


def test_percent_identities_count_only_columns_both_rows_fill():
    pid = percent_identities([b"MKV-A", b"MRVLA", b"--VLA"])
    assert pid[0, 1] == pytest.approx(75.0)  # M, V, A of M K V A
    assert pid[0, 2] == pytest.approx(100.0)  # V and A
    assert pid[1, 2] == pytest.approx(100.0)  # V, L, A


def test_input_gaps_are_removed_quietly(tmp_path):
    (tmp_path / "gapped.fa").write_text(">a\nMKV--LAAG\n>b\nMK-VLAAG\n>c\nMRVLSAG\n")
    out = _run("-i", tmp_path / "gapped.fa", "--dealign", "-o", tmp_path / "o.fa")
    assert out.returncode == 0 and out.stderr == b""
    assert [s.replace(b"-", b"") for s in read_aligned(tmp_path / "o.fa")[1]] == \
        list(read_sequences(tmp_path / "gapped.fa").raw)


def test_v_says_the_recipe_line_as_msagpu_align_does(refs, tmp_path, capsys):
    """Quiet without -v, as Clustal Omega; with -v the recipe line msagpu align says."""
    from test_famsa_cli import align_recipe

    src = refs / "BB11001.tfa"
    want = align_recipe(src, tmp_path)
    capsys.readouterr()
    assert run(["-i", str(src), "-o", str(tmp_path / "quiet.fa")]) == 0
    assert capsys.readouterr().err == ""
    assert run(["-i", str(src), "-o", str(tmp_path / "verbose.fa"), "-v"]) == 0
    said = [x for x in capsys.readouterr().err.splitlines() if "recipe" in x]
    assert said == [f"msagpu-clustalo: recipe: {want}"] and want.startswith("4 sequences, mean length ")


@pytest.mark.parametrize("verbose", [False, True])
def test_backend_fallback_is_quiet_without_v_and_one_line_with_it(refs, tmp_path, monkeypatch, capsys, verbose):
    """Clustal Omega is quiet without -v: backend auto's CPU fallback (no GPU)
    printed a RuntimeWarning with a source line; with -v it is one line."""
    import sys
    import warnings

    import msa_gpu.aligner as aligner_mod
    from msa_gpu.backend import probe_gpu
    from msa_gpu.frontends.clustalo import main

    if probe_gpu()[0]:
        pytest.skip("a GPU is here: no fallback to say")
    monkeypatch.setattr(aligner_mod, "cpu_seconds", lambda recipe, cores: 1e9)  # auto asks for the GPU
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main sets it; given back after
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        # Python's own printing, as a console run has it (pytest records warnings instead)
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(m, c, f, n, line))
        with pytest.raises(SystemExit) as end:
            main(["-i", str(refs / "BB11001.tfa"), "-o", str(tmp_path / "o.aln")] + (["-v"] if verbose else []))
        warnings.showwarning("a later warning", UserWarning, "somewhere.py", 7)  # the printer main installed
    err = capsys.readouterr().err
    assert ("msagpu-clustalo: a later warning" in err) == verbose and "somewhere.py" not in err, err
    assert end.value.code == 0 and "RuntimeWarning" not in err and "aligner.py" not in err, err
    said = [line for line in err.splitlines() if "using the CPU backend" in line]
    assert said == (["msagpu-clustalo: using the CPU backend: CuPy is not installed (pip install 'msagpu[gpu]')"]
                    if verbose else []) or (verbose and len(said) == 1 and said[0].startswith("msagpu-clustalo: ")), err


def test_distmat_along_a_given_tree_is_refused_before_aligning(refs, tmp_path):
    """--distmat-out (without --percent-id) along --guidetree-in has no matrix
    to write: said before the alignment, so the main output is not written
    (it was, and then the run failed)."""
    from msa_gpu.frontends.clustalo import run

    tree, out = tmp_path / "t.dnd", tmp_path / "o.aln"
    assert run(["-i", str(refs / "BB11001.tfa"), "-o", str(tmp_path / "first.aln"), "--guidetree-out", str(tree)]) == 0
    with pytest.raises(InputError, match="--distmat-out: a run along --guidetree-in makes no distance matrix"):
        run(["-i", str(refs / "BB11001.tfa"), "-o", str(out), "--guidetree-in", str(tree),
             "--distmat-out", str(tmp_path / "d.mat")])
    assert not out.exists() and not (tmp_path / "d.mat").exists()
