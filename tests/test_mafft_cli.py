"""msagpu-mafft: MAFFT's command line mapped onto msagpu."""

import io
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
from Bio import AlignIO, Phylo, SeqIO

from msa_gpu.settings.config import DEFAULTS
from msa_gpu.errors import InputError
from msa_gpu.io import read_aligned, read_sequences
from msa_gpu.frontends.mafft import MAPPING, UNSUPPORTED, parse, run

DNA = b">s1 first\nACGTACGTTTGACCAGT\n>s2\nACGTACGTGACCAGT\n>s3 third one\nACGTTCGTTTGACAGT\n>s4\nACGAACGTTTGACCAGTT\n"


def _run(*args, stdin=None):
    code = "from msa_gpu.frontends.mafft import main; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, input=stdin)


@pytest.mark.parametrize("argv, want", [
    (["in.fa"], dict(mode="fast", maxiterate=None, retree=1)),
    (["--auto", "in.fa"], dict(mode="auto")),
    (["--localpair", "--maxiterate", "1000", "in.fa"], dict(mode="accurate", maxiterate=1000, library_mode="auto")),
    (["--globalpair", "in.fa"], dict(mode="accurate", maxiterate=0, library_mode="auto")),
    (["--genafpair", "--maxiterate=16", "in.fa"], dict(mode="accurate", maxiterate=16)),
    (["--maxiterate", "2", "in.fa"], dict(mode="fast", maxiterate=2)),
    (["--retree", "1", "in.fa"], dict(retree=0)),
    (["--retree", "2", "--thread", "4", "in.fa"], dict(retree=1, threads=4)),
    (["--thread", "-1", "in.fa"], dict(threads=None)),
    (["--amino", "--op", "1.53", "--ep", "0", "in.fa"], dict(seqtype="protein", gap_open=13.0, gap_extend=0.8)),
    (["--amino", "--ep", "0.153", "in.fa"], dict(gap_extend=0.8 + 13 * 0.153 / 1.53 / 2)),
    (["--nuc", "--op", "3.06", "in.fa"], dict(seqtype="dna", gap_open=2 * DEFAULTS["nucleotide"][1])),
    (["--6merpair", "in.fa"], dict(mode="fast")),
    (["--parttree", "in.fa"], dict(mode="large")),
    (["--dpparttree", "in.fa"], dict(mode="large")),
    (["--large", "--memsave", "in.fa"], dict(mode="large")),
    (["--memsave", "in.fa"], dict(mode="fast")),
    (["--bl", "45", "in.fa"], dict(matrix="BLOSUM45")),
    # --lop/--lexp/--lep: MAFFT's local pairs' costs; the pair-HMM library has none: the config stays (issue 57)
    (["--localpair", "--lop", "-1.0", "--lexp", "-0.2", "in.fa"], dict(library_gap_open=11.0, library_gap_extend=1.0)),
    (["--localpair", "--lop", "-1.0", "--lep", "0.2", "in.fa"], dict(library_gap_open=11.0, library_gap_extend=1.0)),
])
def test_options_map_onto_msagpu(argv, want):
    from msa_gpu.alphabet import SeqType

    opts = parse(argv)
    cfg = opts.config_for(opts.config.seqtype if opts.config.seqtype is not SeqType.auto else SeqType.protein)
    for key, value in want.items():
        got = getattr(cfg, key)
        got = getattr(got, "value", got)
        assert got == pytest.approx(value) if isinstance(value, float) else got == value, key


@pytest.mark.parametrize("argv, message", [
    (["--addfull", "new.fa", "in.fa"], "--addfull is not supported"),
    (["--keeplength", "in.fa"], "--keeplength goes with --add"),
    (["--add", "a.fa", "--addfragments", "b.fa", "in.fa"], "exclude each other"),
    (["--frobnicate", "in.fa"], "--frobnicate is not supported"),
    (["--localpair", "--globalpair", "in.fa"], "exclude each other"),
    (["--maxiterate", "x", "in.fa"], "needs a number"),
    (["--maxiterate"], "needs a value"),
    (["a.fa", "b.fa"], "one input file"),
    (["--amino", "--nuc", "in.fa"], "exclude each other"),
    (["--namelength", "0", "in.fa"], "--namelength must be >= 1"),
    (["--add", "new.fa", "--reorder", "in.fa"], "--reorder does not apply with --add"),
    (["--add", "new.fa", "--treeout", "in.fa"], "--treeout does not apply with --add"),
    (["--bl", "30", "in.fa"], "BLOSUM45, 50, 62, 80 and 90"),
    (["--jtt", "200", "in.fa"], "no JTT matrix"),
    (["--lop", "2.0", "in.fa"], "--lop must be negative"),
    (["--lexp", "0.3", "in.fa"], "--lexp not positive"),
    (["--localpair", "--parttree", "in.fa"], "exclude each other"),
    (["--leavegappyregion", "in.fa"], "not left unaligned"),
])
def test_bad_command_lines_name_the_problem(argv, message):
    with pytest.raises(InputError, match=message):
        parse(argv)


def test_lep_is_mafft_offset_not_the_gap_extension():
    """MAFFT's ``--lep`` is its local pairs' score offset (``--lexp`` their
    gap extension): it was read as the extension, so ``--lep 0.5`` made the
    library's gaps 5x dearer. Now it changes nothing, and says so."""
    with pytest.warns(UserWarning, match="--lep 0.5: MAFFT's score offset"):
        opts = parse(["--localpair", "--lep", "0.5", "in.fa"])
    assert (opts.config.library_gap_open, opts.config.library_gap_extend) == (11.0, 1.0)
    with pytest.warns(UserWarning, match="--lexp -0.5: the pair-HMM library has no gap costs"):
        assert parse(["--localpair", "--lexp", "-0.5", "in.fa"]).config == parse(["--localpair", "in.fa"]).config


def test_every_documented_option_parses():
    for option in MAPPING:
        name, _, value = option.partition(" ")
        values = {"--bl": "62", "--kimura": "200", "--lop": "-2.0", "--lep": "0.1", "--lexp": "-0.1"}
        argv = [name] + ([values.get(name, "2")] if value else []) + ["in.fa"]
        if name in ("--localpair", "--genafpair", "--globalpair", "--auto"):
            argv = [name, "in.fa"]
        if name == "--keeplength":
            argv = ["--add", "new.fa", name, "in.fa"]
        parse(argv)
    assert not set(MAPPING) & set(UNSUPPORTED)


def test_unsupported_option_exits_2_with_one_line_and_no_output(tmp_path):
    src = tmp_path / "in.fa"
    src.write_bytes(DNA)
    r = _run("--addlong", "frags.fa", src)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().strip().splitlines() == [
        "msagpu-mafft: error: MAFFT option --addlong is not supported by msagpu-mafft: "
        "use --add (msagpu aligns every added sequence to the whole alignment)"]


def test_output_is_a_drop_in_for_mafft(tmp_path):
    src = tmp_path / "in.fa"
    src.write_bytes(DNA)
    r = _run("--auto", "--quiet", src)
    assert r.returncode == 0 and r.stderr == b""
    out = tmp_path / "out.fa"
    out.write_bytes(r.stdout)
    names, rows = read_aligned(out)
    seqs = read_sequences(src)
    assert names == list(seqs.names)  # same names (whole title lines), same order
    assert [row.replace(b"-", b"") for row in rows] == [s.lower() for s in seqs.raw]  # lower-case DNA, as MAFFT
    assert len({len(row) for row in rows}) == 1
    kept = _run("--preservecase", "--quiet", src).stdout
    assert b"ACGT" in kept and b"acgt" not in kept


def test_reorder_clustal_phylip_and_treeout(tmp_path):
    src = tmp_path / "in.fa"
    src.write_bytes(DNA)
    reordered = _run("--reorder", "--quiet", src).stdout.decode()
    titles = [line[1:] for line in reordered.splitlines() if line.startswith(">")]
    assert sorted(titles) == sorted(read_sequences(src).names)
    clustal = AlignIO.read(io.StringIO(_run("--clustalout", "--quiet", src).stdout.decode()), "clustal")
    assert [r.id for r in clustal] == ["s1", "s2", "s3", "s4"]
    phylip = AlignIO.read(io.StringIO(_run("--phylipout", "--namelength", "2", "--quiet", src).stdout.decode()),
                          "phylip-relaxed")
    assert [r.id for r in phylip] == ["s1", "s2", "s3", "s4"]
    assert _run("--treeout", "--quiet", src).returncode == 0
    tree = Phylo.read(str(src) + ".tree", "newick")
    assert sorted(t.name for t in tree.get_terminals()) == [f"{k + 1}_{name.replace(' ', '_')}" for k, name in
                                                           enumerate(read_sequences(src).names)]


@pytest.mark.skipif(shutil.which("mafft") is None, reason="MAFFT is not installed")
def test_treeout_is_written_as_mafft_writes_it(tmp_path):
    """INPUT.tree as MAFFT's --treeout writes it: numbered leaves with their
    titles' spaces and Newick's special characters as '_', one a line, and
    five-decimal branch lengths on the next line; the same lines as MAFFT's
    file but for the lengths and the order of the branches."""
    src = tmp_path / "in.fa"
    src.write_text(">s1 first (x,y):z\nACGTACGTTAGCAT\n>s2\nACGTTCGTTAGCAT\n>s3;semi\nACGAACGTAAGCAT\n"
                   ">s4 four\nTCGTACGATAGCTT\n")
    assert _run("--treeout", "--quiet", src).returncode == 0
    ours = (tmp_path / "in.fa.tree").read_text()
    theirs_dir = tmp_path / "mafft"
    theirs_dir.mkdir()
    (theirs_dir / "in.fa").write_text(src.read_text())
    subprocess.run(["mafft", "--treeout", "--quiet", "in.fa"], cwd=theirs_dir, capture_output=True, check=True)
    theirs = (theirs_dir / "in.fa.tree").read_text()

    def leaves(text):
        return sorted(line for line in text.splitlines() if line and line[0].isdigit())

    def shape_holds(text):  # '(((' first, then ':0.12345,' or ':0.12345):0.23456,' ... ');' lines
        import re
        lines = [line for line in text.splitlines() if not line[:1].isdigit()]
        return bool(re.fullmatch(r"\(+", lines[0])) and all(
            re.fullmatch(r":\d+\.\d{5}(\):\d+\.\d{5})*(,|\);)", line) for line in lines[1:])

    assert leaves(ours) == leaves(theirs) == ["1_s1_first__x_y__z", "2_s2", "3_s3_semi", "4_s4_four"]
    assert shape_holds(theirs) and shape_holds(ours)
    assert ours.endswith(";\n") and theirs.endswith(";\n")


def test_phylipout_is_strict_phylip_as_mafft_writes_it(tmp_path):
    """--phylipout writes MAFFT's strict PHYLIP (10-character names, blocks
    of 50 columns): Biopython's strict reader gets every row and column;
    names the cut makes equal stay distinct."""
    src = tmp_path / "in.fa"
    tail = "KEETGKTEEAKPAEEKKEEAAPAEAKPAEEAKPAEEKKEEAAPAEAKPAEE"
    src.write_text(f">seq_longname_alpha one\nMKVLAAGIVGLLLAAGCSSS{tail}\n>seq_longname_beta\nMKVLAGIVGLLLAAGCSSS{tail}\n"
                   f">short\nMKVLAAGIVGLLAAGCSSS{tail}K\n>seq_longname_gamma\nMKVLAAGIVGLLLAAGCSS{tail}\n")
    fasta = tmp_path / "out.fa"
    fasta.write_bytes(_run("--quiet", src).stdout)
    names, rows = read_aligned(fasta)
    r = _run("--phylipout", "--quiet", src)
    assert r.returncode == 0 and r.stderr == b""
    text = r.stdout.decode()
    assert text.splitlines()[0] == f" 4 {len(rows[0])}" and len(rows[0]) > 50
    aln = AlignIO.read(io.StringIO(text), "phylip")  # strict: names are the first 10 characters
    assert len(aln) == len(rows) == 4 and aln.get_alignment_length() == len(rows[0])
    assert [rec.id for rec in aln] == ["seq_longna", "seq_longn1", "short", "seq_longn2"]
    assert [str(rec.seq).encode() for rec in aln] == rows
    assert all(line[:10].rstrip() == rec.id for line, rec in zip(text.splitlines()[1:], aln))


@pytest.mark.skipif(shutil.which("mafft") is None, reason="MAFFT is not installed")
def test_phylipout_has_maffts_bytes(tmp_path):
    """Where the alignment is the same (sequences of one length, no gaps to
    place), --phylipout gives the real ``mafft --phylipout``'s bytes."""
    rng = np.random.default_rng(5)
    base = rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 120)
    src = tmp_path / "in.fa"
    src.write_text("".join(f">{name} desc\n" + "".join(np.where(rng.random(120) < 0.05, "W", base)) + "\n"
                           for name in ("alpha", "a_rather_long_name", "b(1)", "c|x")))
    for extra in ([], ["--namelength", "4"]):
        theirs = subprocess.run(["mafft", "--quiet", "--phylipout", *extra, str(src)], capture_output=True).stdout
        assert _run("--quiet", "--phylipout", "--amino", *extra, src).stdout == theirs


def test_msagpu_mafft_subcommand(tmp_path):
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    src = tmp_path / "in.fa"
    src.write_bytes(DNA)
    r = CliRunner().invoke(app, ["mafft", "--quiet", "--nosuchoption", str(src)])
    assert r.exit_code == 2 and "--nosuchoption is not supported" in r.output


def _fasta(data: bytes) -> tuple[list[str], list[bytes]]:
    recs = list(SeqIO.parse(io.StringIO(data.decode()), "fasta"))
    return [r.description for r in recs], [str(r.seq).encode() for r in recs]


def _ours(path, capsysbinary) -> tuple[list[str], list[bytes]]:
    """``msagpu-mafft --auto`` in this process (its output is captured)."""
    capsysbinary.readouterr()
    assert run(["--auto", "--quiet", str(path)]) == 0
    return _fasta(capsysbinary.readouterr().out)


def check_close_to_mafft(ours: dict[str, float], theirs: dict[str, float], mean_margin: float = 0.03,
                         family_margin: float = 0.10) -> None:
    """msagpu-mafft's mean SP against the references is within ``mean_margin``
    of real MAFFT's, and no family more than ``family_margin`` below MAFFT's
    (measured 2026-11-25 on references/balibase12, MAFFT 7.505 --auto:
    0.833 against 0.847; the widest family gap 0.065, BB20030)."""
    assert np.mean(list(ours.values())) >= np.mean(list(theirs.values())) - mean_margin, (ours, theirs)
    far = {f: (ours[f], theirs[f]) for f in ours if ours[f] < theirs[f] - family_margin}
    assert not far, far


@pytest.mark.skipif(shutil.which("mafft") is None, reason="MAFFT is not installed")
def test_scores_close_to_real_mafft_on_twelve_families(refs, capsysbinary):
    """Same names, residues and order as the real ``mafft --auto``, and SP
    against the BAliBASE references within a stated margin of its."""
    from conftest import BALIBASE12, reference_score

    ours, theirs = {}, {}
    for fam in BALIBASE12:
        src = refs / "balibase12" / f"{fam}.tfa"
        n1, r1 = _ours(src, capsysbinary)
        n2, r2 = _fasta(subprocess.run(["mafft", "--auto", "--quiet", "--thread", "1", str(src)],
                                       capture_output=True, check=True).stdout)
        assert n1 == n2 and [r.replace(b"-", b"").upper() for r in r1] == [r.replace(b"-", b"").upper() for r in r2]
        ours[fam], theirs[fam] = reference_score(refs, fam, n1, r1).sp, reference_score(refs, fam, n2, r2).sp
    check_close_to_mafft(ours, theirs)


def test_the_mafft_margin_rejects_an_aligner_that_echoes_its_input(refs, capsysbinary):
    """(The margin can fail: rows that only echo the input, gaps padded at the
    end, are refused against msagpu-mafft's own scores.)"""
    from conftest import BALIBASE12, reference_score

    echo, ours = {}, {}
    for fam in BALIBASE12[:6]:
        names, rows = _ours(refs / "balibase12" / f"{fam}.tfa", capsysbinary)
        raw = [r.replace(b"-", b"") for r in rows]
        width = max(len(r) for r in raw)
        echo[fam] = reference_score(refs, fam, names, [r.ljust(width, b"-") for r in raw]).sp
        ours[fam] = reference_score(refs, fam, names, rows).sp
    with pytest.raises(AssertionError):
        check_close_to_mafft(echo, ours)


def test_op_and_ep_scale_with_the_detected_type(tmp_path):
    """MAFFT's own defaults, given explicitly, leave the alignment as it is, DNA detected or declared."""
    import random

    rng = random.Random(3)
    base = "".join(rng.choice("ACGT") for _ in range(120))
    src = tmp_path / "dna.fa"
    src.write_text("".join(f">d{i}\n" + "".join(c if rng.random() > 0.15 else rng.choice("ACGT") for c in base)
                           + "\n" for i in range(6)))
    plain = _run("--quiet", src).stdout
    assert _run("--quiet", "--op", "1.53", "--ep", "0", src).stdout == plain  # MAFFT 7's --ep default: 0
    assert _run("--quiet", "--nuc", "--op", "1.53", "--ep", "0", src).stdout == plain


def test_the_pipelines_page_lists_every_option_as_the_code_maps_it():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "pipelines.md").read_text()
    for option, meaning in {**MAPPING, **UNSUPPORTED}.items():
        assert f"| `{option}` | {meaning} |" in page, option



@pytest.mark.parametrize("option", ["--localpair", "--genafpair", "--globalpair"])
def test_the_pair_options_help_says_the_library_and_rounds_each_type_gets(option):
    """MAPPING (the --help and docs/pipelines.md) names each type's library
    as the recipe line does, and no refinement without --maxiterate; protein
    takes the pair-HMM posteriors whichever *pair option is given."""
    import re

    from msa_gpu.alphabet import SeqType
    from msa_gpu.recipe import recipe_from

    text = MAPPING[option]
    if text.startswith("the same as --localpair"):
        assert parse([option, "in.fa"]).config == parse(["--localpair", "in.fa"]).config
        text = MAPPING["--localpair"]
    claims = {kind: f"{lib} library" for lib, kind in
              re.findall(r"the (\S+(?: \S+)?) library for (protein|nucleotides)", text)}
    assert set(claims) == {"protein", "nucleotides"}, text
    assert "no refinement unless --maxiterate N" in text
    for kind, seqtype in (("protein", SeqType.protein), ("nucleotides", SeqType.dna)):
        recipe = recipe_from(parse([option, "in.fa"]).config_for(seqtype), 4, 100.0, 120, seqtype)
        assert recipe.library.description == claims[kind], (option, kind)
        assert recipe.iterations == 0
        with_rounds = recipe_from(parse([option, "--maxiterate", "5", "in.fa"]).config_for(seqtype), 4, 100.0, 120,
                                  seqtype)
        assert with_rounds.iterations == 5

CODON = dict(A="GCT", R="CGT", N="AAC", D="GAC", C="TGC", Q="CAG", E="GAA", G="GGT", H="CAC", I="ATC", L="CTG",
             K="AAA", M="ATG", F="TTC", P="CCG", S="TCT", T="ACC", W="TGG", Y="TAC", V="GTT")


def _turned_family(refs, folder):
    """50 BB20006 sequences as DNA, 20 of them reverse-complemented; returns the file and those indices."""
    from msa_gpu.distances import reverse_complement

    seqs = read_sequences(refs / "adjustdirection" / "BB20006.tfa")
    turned = [i for i in range(50) if i % 5 in (1, 3)]
    lines = []
    for i, (name, raw) in enumerate(zip(seqs.names[:50], seqs.raw[:50])):
        dna = "".join(CODON.get(c, "NNN") for c in raw.decode().upper()).encode()
        lines.append(b">" + name.encode() + b"\n" + (reverse_complement(dna) if i in turned else dna) + b"\n")
    path = folder / "dna50.fa"
    path.write_bytes(b"".join(lines))
    return path, turned


def test_adjustdirection_turns_the_reverse_complemented(refs, tmp_path):
    path, turned = _turned_family(refs, tmp_path)
    r = _run("--adjustdirection", "--quiet", path)
    assert r.returncode == 0, r.stderr
    names, rows = _fasta(r.stdout)
    assert [i for i, n in enumerate(names) if n.startswith("_R_")] == turned
    assert len({len(x) for x in rows}) == 1
    r2 = _run("--adjustdirectionaccurately", "--quiet", path)
    assert _fasta(r2.stdout)[0] == names


@pytest.mark.skipif(shutil.which("mafft") is None, reason="MAFFT is not installed")
def test_adjustdirection_turns_what_mafft_turns(refs, tmp_path):
    path, _ = _turned_family(refs, tmp_path)
    theirs = _fasta(subprocess.run(["mafft", "--quiet", "--adjustdirection", str(path)], capture_output=True,
                                   check=True).stdout)[0]
    assert _fasta(_run("--adjustdirection", "--quiet", path).stdout)[0] == theirs


def test_adjustdirection_leaves_protein_alone(refs):
    r = _run("--adjustdirection", "--quiet", refs / "BB11001.tfa")
    assert r.returncode == 0 and not any(n.startswith("_R_") for n in _fasta(r.stdout)[0])


def test_repeated_names_and_empty_input_as_mafft(tmp_path):
    """MAFFT aligns inputs whose names repeat (keeping them) and answers an
    empty input with an empty output and exit 0; msagpu-mafft does the same."""
    dup, empty = tmp_path / "dup.fa", tmp_path / "empty.fa"
    dup.write_bytes(b">a\nMKVLA\n>a\nMKVA\n>b\nMKLA\n")
    empty.write_bytes(b"")
    r = _run("--quiet", dup)
    assert r.returncode == 0 and _fasta(r.stdout)[0] == ["a", "a", "b"]
    assert b"more than once" in _run(dup).stderr
    r = _run(empty)
    assert r.returncode == 0 and r.stdout == b"" and b"no sequences" in r.stderr
    if shutil.which("mafft"):
        theirs = subprocess.run(["mafft", "--quiet", str(dup)], capture_output=True, check=True).stdout
        assert _fasta(theirs)[0] == ["a", "a", "b"]


def test_adjustdirection_says_the_input_warnings_once(tmp_path):
    from msa_gpu.distances import reverse_complement

    src = tmp_path / "w.fa"
    src.write_bytes(b">a\nACGTTGCAAGGCTTACXGT\n>b\n" + reverse_complement(b"ACGTTGCAAGGCTTACGT") + b"\n")
    r = _run("--adjustdirection", src)
    assert r.returncode == 0 and r.stderr.count(b"scored as N") == 1, r.stderr
    assert _fasta(r.stdout)[0] == ["a", "_R_b"]


def test_treein_aligns_along_a_mafft_format_tree(refs, tmp_path, capsysbinary):
    """--treein takes MAFFT's merge list: the alignment is the one msagpu
    align gives along the same tree in Newick, and differs from its own
    tree's where the trees differ; the real MAFFT reads the same file."""
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    src = refs / "BB11001.tfa"
    names = list(read_sequences(src).names)
    (tmp_path / "t.mafft").write_text("    1    3   0.1   0.1\n    2    4   0.1   0.1\n    1    2   0.2   0.2\n")
    (tmp_path / "t.nwk").write_text(f"(({names[0]},{names[2]}),({names[1]},{names[3]}));\n")
    capsysbinary.readouterr()
    assert run(["--quiet", "--treein", str(tmp_path / "t.mafft"), str(src)]) == 0
    ours = _fasta(capsysbinary.readouterr().out)
    assert run(["--quiet", str(src)]) == 0
    own_tree = _fasta(capsysbinary.readouterr().out)
    out = tmp_path / "nwk.fa"
    r = CliRunner().invoke(app, ["align", str(src), "-o", str(out), "--outfmt", "fasta", "--mode", "fast",
                                 "--backend", "cpu", "-q", "--guidetree-in", str(tmp_path / "t.nwk")])
    assert r.exit_code == 0, r.output
    assert ours == _fasta(out.read_bytes())
    assert ours != own_tree  # the given tree is not the one msagpu builds here
    if shutil.which("mafft"):
        theirs = subprocess.run(["mafft", "--quiet", "--treein", str(tmp_path / "t.mafft"), str(src)],
                                capture_output=True, check=True).stdout
        assert _fasta(theirs)[0] == ours[0]


@pytest.mark.parametrize("text, said", [("1 2\n3 4\n", "2 merges for 4 sequences"),
                                        ("1 2\n1 2\n1 3\n", "line 2: 1 and 2 are not two clusters"),
                                        ("1 x\n2 3\n1 4\n", "line 1: want 'i j")])
def test_treein_refuses_a_malformed_tree(refs, tmp_path, text, said):
    bad = tmp_path / "bad.tree"
    bad.write_text(text)
    r = _run("--treein", bad, refs / "BB11001.tfa")
    err = r.stderr.decode().strip()
    assert r.returncode == 2 and str(bad) in err and said in err and len(err.splitlines()) == 1, err


# ---- issue 56: library gaps whose extension exceeds the opening

def _dna8(path):
    """Issue 56's dna8.fa: 8 random 120-nt sequences, python random.seed(1)."""
    import random

    random.seed(1)
    path.write_text("".join(f">s{k}\n" + "".join(random.choice("ACGT") for _ in range(120)) + "\n"
                            for k in range(8)))
    return path


@pytest.mark.parametrize("extra", [["--lop", "-0.3", "--lep", "0.5"], ["--lop", "-0.1"]])
def test_localpair_with_an_extension_above_the_opening_aligns(tmp_path, capsysbinary, extra):
    """``--localpair --lop -0.3 --lep 0.5`` (library gaps 1.65 / 5.0) and
    ``--lop -0.1`` alone (0.55 / 1.0) exited 1 with a traceback: the library's
    pairwise DP and its traceback disagreed (issue 56)."""
    src = _dna8(tmp_path / "dna8.fa")
    assert run(["--quiet", "--localpair", *extra, str(src)]) == 0
    names, rows = _fasta(capsysbinary.readouterr().out)
    assert names == [f"s{k}" for k in range(8)] and len({len(r) for r in rows}) == 1
    assert [r.replace(b"-", b"").upper() for r in rows] == [s.upper() for s in _fasta(src.read_bytes())[1]]


# ---- issue 57: the nucleotide options --nuc, --kimura, --op/--ep, and the protein ones on nucleotides

def _dna_family(path, n=6, seed=3):
    rng = random.Random(seed)
    base = "".join(rng.choice("ACGT") for _ in range(120))
    path.write_text("".join(f">d{i}\n" + "".join("" if rng.random() < 0.05 else c if rng.random() > 0.15 else
                                                  rng.choice("ACGT") for c in base) + "\n" for i in range(n)))
    return path


def _one_line_error(r, *words):
    err = r.stderr.decode().strip()
    assert r.returncode == 2 and r.stdout == b"" and len(err.splitlines()) == 1, err
    assert all(w in err for w in words), err


def test_kimura_200_is_maffts_default_and_other_values_are_refused(tmp_path):
    """--kimura 200 is MAFFT's default nucleotide matrix: the same output as
    without it. msagpu's nucleotide scoring is fixed, so any other N is
    refused by name; so is --kimura on protein, where MAFFT reads it as JTT."""
    src = _dna_family(tmp_path / "dna.fa")
    plain = _run("--quiet", src)
    assert plain.returncode == 0
    assert _run("--quiet", "--kimura", "200", src).stdout == plain.stdout
    assert _run("--quiet", "--kimura=200", "--nuc", src).stdout == plain.stdout
    for n in ("1", "100"):
        _one_line_error(_run("--kimura", n, src), f"--kimura {n}", "--kimura 200")
    _one_line_error(_run("--kimura", "x", src), "--kimura needs a number")
    prot = tmp_path / "prot.fa"
    prot.write_text(">p1\nMKVLAAGIVGLLLAQEWRST\n>p2\nMKVLAGIVGLLAQEWRSTY\n>p3\nMKILAAGIVGLLIAQEFRST\n")
    _one_line_error(_run("--kimura", "200", prot), "--kimura 200", "JTT", "--bl N")
    _one_line_error(_run("--amino", "--kimura", "200", src), "--kimura 200", "JTT")


def test_bl_leaves_nucleotides_as_mafft_does(tmp_path):
    """MAFFT's --bl N picks a protein matrix; nucleotides keep theirs. msagpu
    scored DNA with BLOSUM62 (its letters read as amino acids)."""
    src = _dna_family(tmp_path / "dna.fa")
    plain = _run("--quiet", src).stdout
    r = _run("--bl", "62", src)
    assert r.returncode == 0 and b"--bl 62: a protein matrix; nucleotides keep their scoring" in r.stderr, r.stderr
    assert r.stdout == plain
    assert _run("--quiet", "--bl", "45", "--localpair", src).stdout == _run("--quiet", "--localpair", src).stdout


@pytest.mark.parametrize("argv, word", [(["--jtt", "200"], "--jtt"), (["--tm", "200"], "--tm"),
                                        (["--aamatrix", "m.txt"], "--aamatrix")])
def test_protein_matrices_on_nucleotides_are_refused_by_name(tmp_path, argv, word):
    """MAFFT reads --jtt N on nucleotides as --kimura N and ignores --tm and
    --aamatrix there; msagpu refuses them by name, saying what to do instead."""
    r = _run(*argv, _dna_family(tmp_path / "dna.fa"))
    _one_line_error(r, f"MAFFT option {word} is not supported", "nucleotides")


def test_ep_is_maffts_offset_whose_default_is_zero(tmp_path):
    """MAFFT 7's --ep defaults to 0 (an offset that works like a gap
    extension): --ep 0 changes nothing, a positive one raises msagpu's gap
    extension by half an offset a residue on --op's scale, for protein and
    nucleotides; one that would make it negative is refused by name."""
    from msa_gpu.alphabet import SeqType

    src = _dna_family(tmp_path / "dna.fa")
    plain = _run("--quiet", src).stdout
    assert _run("--quiet", "--op", "1.53", "--ep", "0", src).stdout == plain
    assert _run("--quiet", "--nuc", "--localpair", "--ep", "0.0", src).stdout == \
        _run("--quiet", "--localpair", src).stdout
    opts = parse(["--ep", "0.153", "--op", "3.06", "in.fa"])
    _, go, ge, _ = DEFAULTS["nucleotide"]
    assert opts.config_for(SeqType.dna).gap_extend == pytest.approx(ge + go * 0.153 / 1.53 / 2)
    assert opts.config_for(SeqType.rna).gap_open == pytest.approx(2 * go)
    assert opts.config_for(SeqType.protein).gap_extend == pytest.approx(0.8 + 13 * 0.153 / 1.53 / 2)
    assert parse(["--ep", "0", "in.fa"]).config_for(SeqType.protein).gap_extend == pytest.approx(0.8)
    _one_line_error(_run("--ep", "-5", src), "--ep -5", "negative")


def test_nuc_on_protein_like_input_aligns_as_nucleotides_and_says_so(tmp_path):
    """--nuc on letters that read as protein: MAFFT stops ('Illegal character');
    msagpu aligns them as nucleotides as asked, each letter outside the
    alphabet named on stderr as scored N, rows in lower case as MAFFT writes
    nucleotides. An input thick with IUPAC codes (77% A/C/G/T/N) is DNA
    without --nuc, as MAFFT detects it."""
    prot = tmp_path / "prot.fa"
    prot.write_text(">p1\nMKVLAAGIVGLLLAQEWRST\n>p2\nMKVLAGIVGLLAQEWRSTY\n>p3\nMKILAAGIVGLLIAQEFRST\n")
    r = _run("--nuc", prot)
    assert r.returncode == 0
    for letter in "EFILQ":
        assert f"'{letter}' (".encode() in r.stderr and b"scored as N" in r.stderr, r.stderr
    assert all(row == row.lower() for row in _fasta(r.stdout)[1])
    amb = tmp_path / "amb.fa"
    amb.write_text(">a1\nACGTRYACGTNNNNACGTKMSWACGT\n>a2\nACGTRYACGTNNNNACGTKMSWACGA\n>a3\nACGTACGTNNNNACGTKMSWACGT\n")
    ours = _run("--quiet", amb)
    assert ours.returncode == 0 and ours.stdout == _run("--quiet", "--nuc", amb).stdout
    assert all(row == row.lower() for row in _fasta(ours.stdout)[1])
    if shutil.which("mafft"):
        theirs = subprocess.run(["mafft", "--quiet", str(amb)], capture_output=True, check=True).stdout
        assert all(row == row.lower() for row in _fasta(theirs)[1])


def test_globalpair_on_nucleotides_is_the_posterior_run_and_lop_lexp_say_they_change_nothing(tmp_path):
    """Issue 57: MAFFT's G-INS-i spelling takes ProbConsRNA's posteriors for
    nucleotides, the same bytes as --localpair (the library of global
    alignments it took scored 0.720 / 0.219 on bralibase3_dev); --lop and
    --lexp, gap costs of alignment libraries, say on stderr that they change
    nothing, and do not."""
    src = _dna_family(tmp_path / "dna.fa")
    local = _run("--quiet", "--localpair", src)
    glob = _run("--quiet", "--globalpair", "--maxiterate", "0", src)
    assert local.returncode == glob.returncode == 0 and glob.stdout == local.stdout
    for option, value in (("--lop", "-6"), ("--lexp", "-0.5")):
        r = _run("--globalpair", option, value, src)
        assert r.returncode == 0 and r.stdout == local.stdout, option
        assert f"{option} {float(value)}: the pair-HMM library has no gap costs of its own: ignored".encode() in r.stderr


def test_stop_marks_are_deleted_as_mafft_deletes_them(tmp_path):
    """MAFFT 7.505 deletes every '*' (silently; --anysymbol keeps them as
    residues): msagpu-mafft's rows are the input less its '*', said on
    stderr; a sequence of '*' alone is a one-line error naming it."""
    src = tmp_path / "star.fa"
    src.write_bytes(b">a\nMKV*LAWQKLLE*\n>b\nMKVLAWQKLLE\n>c\nMKLAW*QKLE\n")
    r = _run(src)
    assert r.returncode == 0, r.stderr
    got = [line for line in r.stdout.decode().split("\n") if line and not line.startswith(">")]
    assert [g.replace("-", "") for g in got] == ["MKVLAWQKLLE", "MKVLAWQKLLE", "MKLAWQKLE"]
    assert b"'*' deleted from 2 sequences, as MAFFT deletes it" in r.stderr
    if shutil.which("mafft"):
        want = subprocess.run(["mafft", "--quiet", str(src)], capture_output=True).stdout.decode()
        assert [w.replace("-", "") for w in want.split("\n") if w and not w.startswith(">")] == \
            [g.replace("-", "") for g in got]
    kept = _run("--quiet", "--anysymbol", src)
    assert kept.returncode == 0 and kept.stderr == b""
    assert [k.replace("-", "") for k in kept.stdout.decode().split("\n") if k and not k.startswith(">")][0] == \
        "MKV*LAWQKLLE*"
    only = tmp_path / "only.fa"
    only.write_bytes(b">a\nMKV\n>b\n***\n")
    _one_line_error(_run("--quiet", only), "sequence 'b' has no residues besides '*'")
