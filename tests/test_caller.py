"""A job's caller (`msa_gpu.frontends.job.Caller`): its relative paths found
in its folder (`Placed`, `placed`), its umask given to new files and
folders, its standard input read and its standard output written, with no
process state changed."""

import dataclasses
import io
import os
import stat
import sys
from pathlib import Path

from msa_gpu.frontends import job as jobs
from msa_gpu.frontends.job import Caller, Placed, placed
from msa_gpu.io import make_folder, read_sequences, write_names_map, write_output


def _parts(job):
    """Every field of a job's parts, by (part, field) name."""
    out = {}
    for part in (job.inputs, job.inputs.merge, job.requests.ensemble, job.outputs):
        for f in dataclasses.fields(part):
            out[(type(part).__name__, f.name)] = getattr(part, f.name)
    return out


def test_every_path_a_job_names_is_placed():
    """Each field of a `Job` that names a file, and only those, is found in the
    caller's folder; '-' and absolute paths stay as they are."""
    merge = jobs.MergeInputs(("a.fa", "/abs/b.fa"), "table.txt", "seqs.fa")
    ens = jobs.EnsembleOptions(3, ensemble_out=Path("e.efa"), kept_columns=Path("k.txt"), residue_scores=Path("r.fa"))
    given = jobs.Job("p", jobs.Inputs(("x.fa", "-"), guide_tree="t.nwk", existing="old.fa", merge=merge),
                     jobs.Requests(ensemble=ens),
                     jobs.Outputs("out.fa", outdir=Path("dir"), tree="o.tree", distances="o.dist",
                                  column_scores="o.cs"))
    job = placed(given, "/client")
    before, after = _parts(given), _parts(job)
    changed = {k for k in before if before[k] != after[k]}  # (Inputs.merge: the part holding its own)
    assert changed - {("Inputs", "merge")} == {("Inputs", "paths"), ("Inputs", "guide_tree"), ("Inputs", "existing"),
                       ("MergeInputs", "alignments"), ("MergeInputs", "table"), ("MergeInputs", "sequences"),
                       ("EnsembleOptions", "ensemble_out"), ("EnsembleOptions", "kept_columns"),
                       ("EnsembleOptions", "residue_scores"), ("Outputs", "alignment"), ("Outputs", "outdir"),
                       ("Outputs", "tree"), ("Outputs", "distances"), ("Outputs", "column_scores")}
    assert job.inputs.paths[1] == "-" and job.inputs.merge.alignments[1] == "/abs/b.fa"
    assert os.fspath(job.inputs.paths[0]) == "/client/x.fa" and str(job.inputs.paths[0]) == "x.fa"
    assert os.fspath(job.outputs.outdir / "y.aln") == "/client/dir/y.aln" and f"{job.outputs.tree}" == "o.tree"
    assert placed(given, None) is given


def test_placed_paths_are_read_and_written_in_their_folder(refs, tmp_path):
    """Reads and writes go to the caller's folder; messages name the path as given."""
    (tmp_path / "in.fa").write_bytes((refs / "BB11001.tfa").read_bytes())
    seqs = read_sequences(Placed("in.fa", str(tmp_path)))
    assert len(seqs) > 1
    write_output(Placed("out.txt", str(tmp_path)), lambda h: h.write("x\n"))
    write_names_map(Placed("out.txt", str(tmp_path)), ["a b"])
    assert (tmp_path / "out.txt").read_text() == "x\n" and (tmp_path / "out.txt.names").exists()
    assert not Path("out.txt").exists() and not Path("out.txt.names").exists()
    try:
        read_sequences(Placed("none.fa", str(tmp_path)))
    except ValueError as exc:
        assert str(exc).startswith("cannot read none.fa:")
    else:
        raise AssertionError("no error")


def test_the_callers_umask_and_streams(tmp_path):
    """New files and folders take the caller's umask, whatever the process's;
    '-' reads the caller's standard input and writes its standard output."""
    old = os.umask(0o022)
    try:
        write_output(tmp_path / "f.txt", lambda h: h.write("x"), umask=0o077)
        make_folder(tmp_path / "a" / "b", umask=0o027)
        os.umask(0o077)
        write_output(tmp_path / "g.txt", lambda h: h.write("x"), umask=0o002)
        umask = os.umask(0o077)
    finally:
        os.umask(old)
    assert umask == 0o077  # (the process's own, untouched)
    mode = lambda p: stat.S_IMODE(os.stat(tmp_path / p).st_mode)  # noqa: E731
    assert (mode("f.txt"), mode("g.txt"), mode("a"), mode("a/b")) == (0o600, 0o664, 0o750, 0o750)
    out = io.BytesIO()
    write_output("-", lambda h: h.write("row\n"), stdout=out)
    assert out.getvalue() == b"row\n"
    assert len(read_sequences("-", stdin=io.BytesIO(b">a\nMKV\n>b\nMKL\n"))) == 2
    here = Caller.here()
    assert here.cwd is None and here.umask is None and here.stdout is sys.stdout
