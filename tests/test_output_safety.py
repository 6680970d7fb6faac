"""Outputs that cannot be written fail before the work, with one line and no
partial file; a symbolic link is written through; a failed write exits with
the I/O code (4), not the bad-input code (2)."""

import errno
import os
import sys
import tempfile

import pytest
from typer.testing import CliRunner

from msa_gpu.cli import app
from msa_gpu.errors import EXIT_INPUT, EXIT_RESOURCE

LINUX = sys.platform.startswith("linux")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def no_aligning(monkeypatch):
    """Any alignment started fails the test (the error must come before it)."""
    from msa_gpu.aligner import Aligner

    def refuse(*args, **kwargs):
        raise AssertionError("the alignment ran")

    monkeypatch.setattr(Aligner, "align_many", refuse)


@pytest.fixture
def denied_folder(tmp_path, monkeypatch):
    """A folder that refuses new files (as a folder without write permission
    does, even where the tests run as root)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    real = tempfile.TemporaryFile

    def temporary_file(*args, dir=None, **kwargs):
        if dir is not None and os.path.realpath(dir) == str(folder.resolve()):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", temporary_file)
    return folder


@pytest.mark.parametrize("option", ["-o", "--tree-out", "--column-scores"])
def test_an_unwritable_output_folder_fails_before_aligning(refs, denied_folder, no_aligning, option):
    target = denied_folder / "out.x"
    res = run("align", refs / "BB11001.tfa", option, target, "--backend", "cpu")
    assert res.exit_code == EXIT_INPUT
    assert res.stderr == f"msagpu: error: {target}: cannot write into {denied_folder.resolve()} (Permission denied)\n"
    assert list(denied_folder.iterdir()) == []


def test_an_unwritable_outdir_fails_before_aligning(refs, denied_folder, no_aligning):
    res = run("align", refs / "BB11001.tfa", "--outdir", denied_folder / "new" / "out", "--backend", "cpu")
    assert res.exit_code == EXIT_INPUT and res.stderr.count("\n") == 1
    assert "cannot write into" in res.stderr and list(denied_folder.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into any folder")
def test_a_folder_without_write_permission_fails_before_aligning(refs, tmp_path, no_aligning):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        res = run("align", refs / "BB11001.tfa", "-o", folder / "out.fa", "--backend", "cpu")
    finally:
        folder.chmod(0o700)
    assert res.exit_code == EXIT_INPUT and res.stderr.count("\n") == 1 and "cannot write into" in res.stderr


@pytest.mark.skipif(not LINUX, reason="/proc takes no new files on Linux")
def test_a_folder_that_takes_no_files_fails_before_aligning(refs, no_aligning):
    res = run("align", refs / "BB11001.tfa", "-o", "/proc/msagpu-out.fa", "--backend", "cpu")
    assert res.exit_code == EXIT_INPUT and res.stderr.count("\n") == 1
    assert res.stderr.startswith("msagpu: error: /proc/msagpu-out.fa: cannot write into /proc (")


def test_a_folder_as_output_fails_before_aligning(refs, tmp_path, no_aligning):
    res = run("align", refs / "BB11001.tfa", "-o", tmp_path, "--backend", "cpu")
    assert res.exit_code == EXIT_INPUT and res.stderr == f"msagpu: error: {tmp_path}: is a folder, not a file to write\n"


@pytest.mark.parametrize("name", ["link.fa", "link.aln"])
def test_output_onto_a_symbolic_link_writes_through_it(refs, tmp_path, name):
    data = tmp_path / "data"
    data.mkdir()
    real = data / f"real{os.path.splitext(name)[1]}"
    real.write_text("old\n")
    link = tmp_path / name
    link.symlink_to(os.path.relpath(real, tmp_path))
    res = run("align", refs / "BB11001.tfa", "-o", link, "--backend", "cpu", "--mode", "fast", "-q")
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_text() != "old\n" and real.read_text() == link.read_text()
    assert real.read_text().startswith(">1aab_" if name.endswith(".fa") else "CLUSTAL")
    assert sorted(p.name for p in data.iterdir()) == [real.name]  # no temporary file left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", name]


def test_a_dangling_link_has_its_target_made(refs, tmp_path):
    link = tmp_path / "link.nwk"
    link.symlink_to(tmp_path / "tree.nwk")
    res = run("align", refs / "BB11001.tfa", "--tree-out", link, "--backend", "cpu", "--mode", "fast", "-q")
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and (tmp_path / "tree.nwk").read_text().rstrip().endswith(";")


def test_a_link_into_a_missing_folder_fails_before_aligning(refs, tmp_path, no_aligning):
    link = tmp_path / "link.fa"
    link.symlink_to(tmp_path / "gone" / "real.fa")
    res = run("align", refs / "BB11001.tfa", "-o", link, "--backend", "cpu")
    assert res.exit_code == EXIT_INPUT and res.stderr.strip().endswith("no such folder to write into")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["fasta", "clustal"])
def test_a_full_disk_exits_with_the_io_code(refs, fmt):
    res = run("align", refs / "BB11001.tfa", "-o", "/dev/full", "--outfmt", fmt, "--backend", "cpu", "--mode", "fast",
              "-q")
    assert res.exit_code == EXIT_RESOURCE != EXIT_INPUT
    assert res.stderr == "msagpu: error: cannot write /dev/full: No space left on device\n"


def test_a_write_that_fails_midway_leaves_no_file(refs, tmp_path, monkeypatch):
    import msa_gpu.cli_outputs as cli_outputs

    def half_then_full(handle, names, rows):
        handle.write(">" + names[0] + "\n")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cli_outputs, "stream_fasta", half_then_full)
    out = tmp_path / "out.fa"
    res = run("align", refs / "BB11001.tfa", "-o", out, "--backend", "cpu", "--mode", "fast", "-q")
    assert res.exit_code == EXIT_RESOURCE
    assert res.stderr == f"msagpu: error: cannot write {out}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_devices_are_still_written_in_place(refs):
    res = run("align", refs / "BB11001.tfa", "-o", os.devnull, "--backend", "cpu", "--mode", "fast", "-q")
    assert res.exit_code == 0 and os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
