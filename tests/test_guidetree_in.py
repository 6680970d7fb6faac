"""`--guidetree-in`: a tree written by `--tree-out` gives the run's own alignment back."""

import pytest
from conftest import BALIBASE12
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app


def _align(*args):
    r = CliRunner().invoke(app, ["align", *map(str, args), "--backend", "cpu", "-q"])
    assert r.exit_code == 0, r.output
    return r


@pytest.mark.parametrize("family", ["BB11001", "BB20001", "BB50013"] + [f for f in BALIBASE12[4:8]])
@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_the_tree_written_gives_the_same_alignment(refs, tmp_path, family, mode):
    src = refs / f"{family}.tfa" if (refs / f"{family}.tfa").exists() else refs / "balibase12" / f"{family}.tfa"
    first, second, tree = tmp_path / "a.fa", tmp_path / "b.fa", tmp_path / "t.nwk"
    _align(src, "-o", first, "--tree-out", tree, "--mode", mode)
    _align(src, "-o", second, "--guidetree-in", tree, "--mode", mode)
    assert second.read_bytes() == first.read_bytes()


def test_an_injected_tree_keeps_repeats_aligned_once(refs):
    """(BB50013 above has a repeat.) Copies of sequences with a tree over all
    of them: the same rows as the run that built its own tree."""
    from msa_gpu.aligner import Aligner
    from msa_gpu.backend import cpu_backend
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.io import make_sequences, read_sequences

    seqs = read_sequences(refs / "BB11001.tfa")
    more = make_sequences(list(seqs.names) + ["c0", "c2"], list(seqs.raw) + [seqs.raw[0], seqs.raw[2]], "protein")
    aligner = Aligner(AlignerConfig(backend="cpu", mode="accurate"), backend=cpu_backend())
    own = aligner.align(more)
    again = aligner.align(more, guide_tree=own.guide_tree)
    assert again.rows() == own.rows() and again.rows()[4] == again.rows()[0]


def test_a_tree_of_other_sequences_is_refused_in_one_line(refs, tmp_path):
    tree = tmp_path / "t.nwk"
    tree.write_text("((a:1,b:1):1,c:1);\n")
    out = tmp_path / "out.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--guidetree-in", str(tree),
                                 "--backend", "cpu"])
    assert r.exit_code == 2 and "not a guide tree for this input" in r.output and not out.exists()
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "--outdir", str(tmp_path / "o"),
                                 "--guidetree-in", str(tree), "--backend", "cpu"])
    assert r.exit_code == 2 and "--guidetree-in" in r.output
