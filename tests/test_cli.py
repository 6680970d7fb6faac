import json
import subprocess
import sys

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from conftest import gpu_available
from msa_gpu.frontends.msagpu import app

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def test_align_to_stdout_is_fasta_in_input_order(refs):
    res = run("align", refs / "BB11001.tfa", "--backend", "cpu")
    assert res.exit_code == 0
    names = [l[1:] for l in res.stdout.splitlines() if l.startswith(">")]
    assert names == ["1aab_", "1j46_A", "1k99_A", "2lef_A"]


def test_align_writes_format_from_extension_and_tree(refs, tmp_path):
    out, tree = tmp_path / "o.aln", tmp_path / "t.nwk"
    res = run("align", refs / "BB11001.tfa", "-o", out, "--tree-out", tree, "--backend", "cpu", "--tree", "nj")
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("CLUSTAL")
    newick = tree.read_text().strip()
    assert newick.endswith(";") and all(n in newick for n in ["1aab_", "1j46_A", "1k99_A", "2lef_A"])


def test_outfmt_overrides_extension(refs, tmp_path):
    out = tmp_path / "o.aln"
    assert run("align", refs / "BB11001.tfa", "-o", out, "--outfmt", "stockholm", "--backend", "cpu").exit_code == 0
    assert out.read_text().startswith("# STOCKHOLM")


def test_stdin_input():
    res = run("align", "-", "--backend", "cpu", input=">a\nACGTACGT\n>b\nACGACGT\n")
    assert res.exit_code == 0 and res.stdout.count(">") == 2


def test_bad_input_one_line_error_and_no_output(tmp_path):
    bad = tmp_path / "bad.fa"
    bad.write_text(">ok\nMKV\n>broken\nMK#V\n")
    out = tmp_path / "out.fa"
    res = run("align", bad, "-o", out, "--backend", "cpu")
    assert res.exit_code == 2
    assert res.stderr.strip() == f"msagpu: error: {bad}: sequence 'broken': invalid protein character '#' at position 3"
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_missing_file_and_empty_input(tmp_path):
    res = run("align", tmp_path / "nope.fa")
    assert res.exit_code == 2 and "cannot read" in res.stderr
    empty = tmp_path / "e.fa"
    empty.write_text("")
    res = run("align", empty)
    assert res.exit_code == 2 and "no sequences" in res.stderr


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
def test_gpu_backend_fails_clearly_without_gpu(refs):
    res = run("align", refs / "BB11001.tfa", "--backend", "gpu")
    assert res.exit_code == 3 and "no GPU is usable" in res.stderr


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
def test_auto_backend_says_why_it_falls_back(refs):
    """The recipe line says where backend auto took the CPU by the expected
    time, and why; an input expected to take longer than the GPU's start-up
    says the fallback's own reason (no GPU here)."""
    res = run("align", refs / "BB11001.tfa")
    assert res.exit_code == 0 and ", CPU (expected 0.0" in res.stderr and "within the GPU's start-up" in res.stderr
    res = run("align", refs / "BB20001.tfa", "--mode", "fast", "--threads", "1")
    assert res.exit_code == 0
    if "CuPy" in res.stderr or "CUDA" in res.stderr:  # no usable GPU: the fallback says why
        assert "using the CPU backend" in res.stderr and "expected" not in res.stderr, res.stderr


def test_score_text_and_json(refs):
    ref = refs / "BB11001.ref.fa"
    res = run("score", ref, ref, "--core", refs / "BB11001.core")
    assert res.exit_code == 0 and res.stdout.split() == ["SP", "1.0000", "TC", "1.0000"]
    res = run("score", ref, ref, "--json")
    data = json.loads(res.stdout)
    assert data["sp"] == 1.0 and data["pairs"] > 0


def test_score_rejects_mismatched_sequences(refs, tmp_path):
    other = tmp_path / "o.fa"
    other.write_text(">1aab_\nAAAA\n")
    res = run("score", other, refs / "BB11001.ref.fa")
    assert res.exit_code == 2 and "msagpu: error:" in res.stderr


def test_score_refuses_an_unaligned_file(refs):
    """Rows of different lengths are not an alignment: a one-line error and
    exit 2, never SP 0 and exit 0."""
    tfa, ref = refs / "BB11001.tfa", refs / "BB11001.ref.fa"
    for test, reference in ((tfa, ref), (ref, tfa)):
        res = run("score", test, reference)
        assert res.exit_code == 2 and res.stdout == ""
        assert res.stderr == (f"msagpu: error: {tfa}: not an alignment: its rows differ in length (83 to 91 columns); "
                              "align it first\n")


def test_score_api_refuses_ragged_test_rows():
    from msa_gpu.errors import InputError
    from msa_gpu.accuracy import sp_tc

    with pytest.raises(InputError, match="not an alignment: the test rows differ in length"):
        sp_tc(["a", "b"], [b"ACGT", b"AC"], ["a", "b"], [b"ACGT", b"AC--"])


def test_console_script_entry_point(refs):
    proc = subprocess.run([sys.executable, "-m", "msa_gpu", "align", str(refs / "BB11001.tfa"), "--backend", "cpu",
                           "--outfmt", "msf"], capture_output=True, text=True)
    assert proc.returncode == 0 and "MSF:" in proc.stdout


def test_batch_mode_matches_single_runs(refs, tmp_path):
    lst = tmp_path / "families.txt"
    lst.write_text("".join(f"{refs / f}.tfa\n" for f in ("BB11001", "BB12006")))
    out = tmp_path / "out"
    res = run("align", lst, refs / "BB20001.tfa", "--outdir", out, "--backend", "cpu", "--outfmt", "fasta")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["BB11001.fa", "BB12006.fa", "BB20001.fa"]
    for fam in ("BB11001", "BB12006", "BB20001"):
        single = run("align", refs / f"{fam}.tfa", "--backend", "cpu")
        assert (out / f"{fam}.fa").read_text() == single.stdout


def test_batch_mode_folder_and_errors(refs, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for tfa in refs.glob("*.tfa"):
        (folder / tfa.name).write_bytes(tfa.read_bytes())
    (folder / "notes.md").write_text("not an input")
    res = run("align", folder, "--outdir", tmp_path / "o", "--backend", "cpu")
    assert res.exit_code == 0 and len(list((tmp_path / "o").iterdir())) == 3
    res = run("align", refs / "BB11001.tfa", refs / "BB12006.tfa", "--backend", "cpu")
    assert res.exit_code == 2 and "--outdir" in res.stderr
    bad = tmp_path / "bad.fa"
    bad.write_text(">x\nMK?\n")
    res = run("align", refs / "BB11001.tfa", bad, "--outdir", tmp_path / "o2", "--backend", "cpu")
    # the bad family is reported, the good one still written, and the exit code says one failed
    assert res.exit_code == 2 and "'?' at position 3" in res.stderr and "1 of 2 families failed" in res.stderr
    assert [f.name for f in (tmp_path / "o2").iterdir()] == ["BB11001.fa"]


def test_alignment_distances_option(refs, tmp_path):
    tree = tmp_path / "t.nwk"
    res = run("align", refs / "BB11001.tfa", "--distance", "align", "--retree", "0", "--mode", "fast", "--tree-out", tree,
              "--backend", "cpu")
    assert res.exit_code == 0, res.output
    from msa_gpu.aligner import Aligner
    from msa_gpu.backend import cpu_backend
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.distances import pairwise_distance
    from msa_gpu.io import read_sequences

    seqs = read_sequences(refs / "BB11001.tfa")
    result = Aligner(AlignerConfig(distance="align", retree=0, mode="fast"), backend=cpu_backend()).align(seqs)
    assert np.array_equal(result.distances.values, pairwise_distance(seqs, backend="cpu").values)
    out = tmp_path / "cli.fa"
    out.write_text(res.stdout)
    from msa_gpu.io import read_aligned

    assert read_aligned(out) == (list(seqs.names), result.rows())


def test_output_is_readable_like_any_new_file(refs, tmp_path):
    import os

    out = tmp_path / "o.fa"
    old = os.umask(0o022)
    try:
        assert run("align", refs / "BB11001.tfa", "-o", out, "--backend", "cpu").exit_code == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644


def test_txt_fasta_is_read_as_fasta_and_names_keep_trailing_spaces(tmp_path):
    src = tmp_path / "seqs.txt"
    src.write_text(">a  \nMKVLAAGIVG\n>b\tx\nMKVLAGIVG\n")
    res = run("align", src, "--backend", "cpu")
    assert res.exit_code == 0, res.output
    assert [l for l in res.stdout.splitlines() if l.startswith(">")] == [">a  ", ">b\tx"]


def test_gzip_output_is_compressed_and_deterministic(refs, tmp_path):
    import gzip

    a, b = tmp_path / "a.fa.gz", tmp_path / "b.fa.gz"
    for out in (a, b):
        assert run("align", refs / "BB11001.tfa", "-o", out, "--backend", "cpu").exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    assert gzip.decompress(a.read_bytes()).startswith(b">1aab_")


@pytest.mark.parametrize("args, message", [
    (["--gap-open", "3e7"], "gap_open must lie in [0, 1000]"),
    (["--gap-open", "inf"], "gap_open must lie in [0, 1000]"),
    (["--matrix", "NUC.4.4"], "matrix 'NUC.4.4' has no 'Q'"),
])
def test_bad_scoring_options_are_one_line_errors(refs, args, message):
    res = run("align", refs / "BB11001.tfa", "--backend", "cpu", *args)
    assert res.exit_code == 2 and message in res.stderr and "Traceback" not in res.output


def test_missing_output_folder_fails_before_aligning(refs, tmp_path):
    res = run("align", refs / "BB11001.tfa", "-o", tmp_path / "nope" / "x.fa", "--backend", "cpu")
    assert res.exit_code == 4 and res.stderr.strip().endswith("no such folder to write into")


def test_formats_reject_names_they_would_merge(tmp_path):
    src = tmp_path / "d.fa"
    src.write_text(">seq one\nMKVLAAGIVG\n>seq two\nMKVLAGIVG\n")
    res = run("align", src, "--outfmt", "stockholm", "--backend", "cpu")
    assert res.exit_code == 2 and "'seq'" in res.stderr and res.stdout == ""
    long = tmp_path / "l.fa"
    long.write_text(">sp|P12345|LONGPROTEINNAME_HUMAN_isoform1\nMKVLAAG\n>sp|P12345|LONGPROTEINNAME_HUMAN_isoform2\nMKVLAG\n")
    assert run("align", long, "--outfmt", "clustal", "--backend", "cpu").exit_code == 2
    assert run("align", long, "--outfmt", "phylip", "--backend", "cpu").exit_code == 0


def test_batch_folder_skips_reference_alignments(refs, tmp_path):
    """A BAliBASE-style folder (X.tfa beside X.ref.fa and X.core): only the
    inputs are aligned, and the skipped references are counted on stderr."""
    folder = tmp_path / "RV11"
    folder.mkdir()
    for family in ("BB11001", "BB12006"):
        for suffix in (".tfa", ".ref.fa", ".core"):
            (folder / f"{family}{suffix}").write_bytes((refs / f"{family}{suffix}").read_bytes())
    out = tmp_path / "out"
    res = run("align", folder, "--outdir", out, "--backend", "cpu", "--mode", "fast")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["BB11001.fa", "BB12006.fa"]
    assert f"msagpu: {folder}: skipped 2 reference alignments (*.ref.fa)" in res.stderr
    assert "ref.fa: gaps" not in res.stderr  # no reference was read as an input
    only = tmp_path / "only"
    only.mkdir()
    (only / "BB11001.ref.fa").write_bytes((refs / "BB11001.ref.fa").read_bytes())
    res = run("align", only, "--outdir", tmp_path / "o2", "--backend", "cpu")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "only reference alignments" in res.stderr
    # named one by one, a reference is still an input
    res = run("align", only / "BB11001.ref.fa", "--backend", "cpu", "--mode", "fast", "-q")
    assert res.exit_code == 0 and res.stdout.count(">") == 4


def test_batch_mode_writes_the_others_when_one_output_fails(refs, tmp_path):
    dup = tmp_path / "dup.fa"
    dup.write_text(">x 1\nMKVLAAG\n>x 2\nMKVLAG\n")
    out = tmp_path / "out"
    res = run("align", refs / "BB11001.tfa", dup, "--outdir", out, "--outfmt", "phylip", "--backend", "cpu")
    assert res.exit_code == 2 and "keeps 'x' for both" in res.stderr
    assert [f.name for f in out.iterdir()] == ["BB11001.phy"]


def test_stdin_only_once():
    res = run("align", "-", "-", "--outdir", "x", input=">a\nACGT\n")
    assert res.exit_code == 2 and "only once" in res.stderr


def test_same_bytes_across_processes_and_thread_counts(refs, tmp_path):
    outs = []
    for threads in ("1", "2", "1"):
        out = tmp_path / f"o{len(outs)}.fa"
        subprocess.run([sys.executable, "-m", "msa_gpu", "align", str(refs / "BB20001.tfa"), "-o", str(out),
                        "--backend", "cpu", "--threads", threads, "-q"], check=True)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_version():
    from msa_gpu import __version__

    res = run("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"msagpu {__version__}"


def test_help_fits_a_terminal_with_every_name_whole():
    """At 80 columns no option name is cut and flags show as flags (no '<bool>')."""
    import click

    for command in ([], ["align"], ["score"], ["pairwise"], ["distmat"]):
        r = CliRunner().invoke(app, [*command, "--help"], terminal_width=80, env={"COLUMNS": "80"})
        assert r.exit_code == 0, r.output
        assert "…" not in r.stdout and "<bool>" not in r.stdout, r.stdout
        assert max(len(line) for line in r.stdout.splitlines()) <= 80
    align = typer.main.get_command(app).commands["align"]
    r = CliRunner().invoke(app, ["align", "--help"], terminal_width=80)
    for param in align.params:
        if isinstance(param, click.Option):
            for name in param.opts:
                assert name in r.stdout, name


def test_a_cold_kernel_cache_is_said_once(refs, tmp_path, monkeypatch):
    """With numba's cache empty the CLI says it compiles kernels; with index
    files there it says nothing (--quiet: never)."""
    import msa_gpu.frontends.plans as cli

    assert cli.kernels_cold(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "profile_cpu._row-76.py311.nbi").write_bytes(b"")
    assert not cli.kernels_cold(tmp_path)
    src = str(refs / "BB11001.tfa")
    for cold in (True, False):
        monkeypatch.setattr(cli, "kernels_cold", lambda folder=None, cold=cold: cold)
        r = CliRunner().invoke(app, ["align", src, "--backend", "cpu"])
        assert r.exit_code == 0 and ("compiling kernels" in r.stderr) == cold, r.stderr
    r = CliRunner().invoke(app, ["align", src, "--backend", "cpu", "-q"])
    assert "compiling" not in r.stderr


def test_a_cold_cuda_kernel_cache_is_said_where_the_gpu_may_run(refs, tmp_path, monkeypatch):
    """CuPy's kernel cache empty: said unless the CPU backend is asked for."""
    import msa_gpu.frontends.plans as cli

    assert cli.cuda_kernels_cold(tmp_path)
    (tmp_path / "0123abcd.cubin").write_bytes(b"")
    assert not cli.cuda_kernels_cold(tmp_path)
    monkeypatch.setattr(cli, "kernels_cold", lambda folder=None: False)
    monkeypatch.setattr(cli, "cuda_kernels_cold", lambda folder=None: True)
    src = str(refs / "BB11001.tfa")
    r = CliRunner().invoke(app, ["align", src, "--backend", "auto"])
    assert r.exit_code == 0 and "compiling kernels" in r.stderr, r.stderr
    r = CliRunner().invoke(app, ["align", src, "--backend", "cpu"])
    assert r.exit_code == 0 and "compiling kernels" not in r.stderr, r.stderr


def test_memory_plan_of_a_batch_says_each_stage(tmp_path, refs, monkeypatch):
    """Batch mode says what the distance stage, the alignments and the output
    will hold, once the plan is large enough to matter (threshold lowered here)."""
    from msa_gpu.frontends import plans as cli
    from msa_gpu.aligner import Aligner
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.io import OutFormat, make_sequences, read_sequences

    fams = [read_sequences(refs / "BB11001.tfa"), read_sequences(refs / "BB20001.tfa")]
    n = max(len(s) for s in fams)
    def planned(config, families):
        return list(zip(families, Aligner(config).plan(families)))

    plan = cli.stage_plan_of(AlignerConfig(keep_distances=False), planned(AlignerConfig(), fams), OutFormat.fasta)
    assert plan is None  # small families: nothing said
    monkeypatch.setattr(cli, "PLAN_MIN_GB", 0.0)
    kept_cfg = AlignerConfig(keep_distances=True)
    kept = cli.stage_plan_of(kept_cfg, planned(kept_cfg, fams), OutFormat.fasta)
    assert kept.distance_gb == pytest.approx(2 * 8 * n * n / 1e9) and kept.output_gb == 0.0
    single_cfg = AlignerConfig(keep_distances=False, tree="single")
    single = cli.stage_plan_of(single_cfg, planned(single_cfg, fams), OutFormat.clustal)
    assert single.distance_gb == pytest.approx(8 * n * n / 1e9) and single.output_gb > 0
    # FAMSA's tree on LCS distances from 257 sequences needs no matrix: a family that takes it adds none
    big = make_sequences([f"s{i}" for i in range(300)], [b"MKV" + bytes([65 + i % 20]) * 5 for i in range(300)], "protein")
    spans = AlignerConfig(keep_distances=False, distance="lcs", tree="single", dedupe=False)
    assert [r.spanning for r in Aligner(spans).plan([big] + fams)] == [True, False, False]
    mixed = cli.stage_plan_of(spans, planned(spans, fams + [big]), OutFormat.fasta)
    assert mixed.distance_gb == pytest.approx(8 * n * n / 1e9) and mixed.alignments_gb > single.alignments_gb
    assert cli.stage_plan_of(spans, planned(spans, [big]), OutFormat.fasta).distance_gb == 0.0
    res = run("align", str(refs / "BB11001.tfa"), str(refs / "BB20001.tfa"), "--outdir", str(tmp_path), "--backend", "cpu")
    assert res.exit_code == 0
    assert "memory plan: distances" in res.stderr and "output rows streamed" in res.stderr


def test_the_compiling_line_says_it_happens_once_and_where_the_cache_is(refs, tmp_path, monkeypatch):
    """A cold cache is said with what a new user needs to know: the wait
    comes once per installation, and the kernels are kept (numba's folder, CuPy's)."""
    import msa_gpu.frontends.plans as cli

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy"))
    both = cli.compiling_line(True, True)
    assert "once per installation" in both and str(tmp_path / "numba") in both and str(tmp_path / "cupy") in both
    assert str(tmp_path / "cupy") not in cli.compiling_line(True, False)
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    here = cli.compiling_line(True, False)
    assert "__pycache__" in here or ".cache/numba" in here, here
    monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", "1")
    assert "once per installation" not in cli.compiling_line(False, True)
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY")
    monkeypatch.setattr(cli, "kernels_cold", lambda folder=None: True)
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "--backend", "cpu"])
    assert r.exit_code == 0, r.output
    assert "msagpu: compiling kernels, once per installation (a new virtual environment compiles again): they are cached in " in r.stderr, r.stderr
