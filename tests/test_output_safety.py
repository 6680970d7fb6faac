"""Outputs that cannot be written fail before the work, with one line naming
the output and no partial file, with the I/O code (4), not the bad-input
code (2), in every front door; a symbolic link is written through; a closed
pipe and a signal end a run as the README says, leaving no file behind."""

import errno
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app
from msa_gpu.errors import (EXIT_INPUT, EXIT_RESOURCE, BackendError, InputError, MsaGpuError, OutputError, PipeClosed,
                            ResourceError)

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


def front_door(program: str, argv: list) -> tuple[int, str]:
    """Run a front door here, as its console command would: its exit code
    and what it wrote on stderr (``capsys`` reads it)."""
    import typer

    from msa_gpu.frontends import clustalo as clustalo_cli, famsa as famsa_cli, mafft as mafft_cli

    argv = [str(a) for a in argv]
    mains = {"msagpu-famsa": famsa_cli.main, "msagpu-clustalo": clustalo_cli.main, "msagpu-mafft": mafft_cli.main,
             "msagpu": lambda a: typer.main.get_command(app).main(args=a, prog_name="msagpu")}
    try:
        mains[program](argv)
    except SystemExit as stop:
        return stop.code
    return 0


#: Every output of every front door: (program, its arguments given the input and the output).
OUTPUTS = {
    "align -o": ("msagpu", lambda src, out: ["align", src, "-o", out, "--backend", "cpu"]),
    "align --tree-out": ("msagpu", lambda src, out: ["align", src, "--tree-out", out, "--backend", "cpu"]),
    "align --distmat-out": ("msagpu", lambda src, out: ["align", src, "--distmat-out", out, "--backend", "cpu"]),
    "align --column-scores": ("msagpu", lambda src, out: ["align", src, "--column-scores", out, "--backend", "cpu"]),
    "align --add -o": ("msagpu", lambda src, out: ["align", "--add", src, "--existing", REFS / "BB11001.ref.fa",
                                                    "-o", out, "--backend", "cpu"]),
    "pairwise -o": ("msagpu", lambda src, out: ["pairwise", src, "-o", out, "--backend", "cpu"]),
    "distmat -o": ("msagpu", lambda src, out: ["distmat", src, "-o", out, "--backend", "cpu"]),
    "famsa": ("msagpu-famsa", lambda src, out: [src, out]),
    "famsa -gz": ("msagpu-famsa", lambda src, out: ["-gz", src, out]),
    "clustalo -o": ("msagpu-clustalo", lambda src, out: ["-i", src, "-o", out]),
    "clustalo --guidetree-out": ("msagpu-clustalo", lambda src, out: ["-i", src, "--guidetree-out", out]),
    "clustalo --distmat-out": ("msagpu-clustalo", lambda src, out: ["-i", src, "--distmat-out", out]),
    "mafft --treeout": ("msagpu-mafft", lambda src, out: ["--treeout", "--quiet", src]),  # writes INPUT.tree
}
REFS = Path(__file__).resolve().parent.parent / "references"


@pytest.fixture
def quiet_warnings(monkeypatch):
    """(The front doors' mains set warnings.showwarning; put it back after.)"""
    import warnings

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)


def _place(case: str, src: Path, folder: Path) -> tuple[Path, Path]:
    """The input and the output path of ``case`` for an output in ``folder``
    (msagpu-mafft's --treeout writes beside its input, so the input goes there)."""
    if case.startswith("mafft"):
        copy = folder / src.name
        copy.write_bytes(src.read_bytes())
        return copy, Path(f"{copy}.tree")
    return src, folder / "out.x"


@pytest.mark.parametrize("case", sorted(OUTPUTS))
def test_an_unwritable_output_folder_fails_before_aligning(refs, denied_folder, no_aligning, quiet_warnings, capsys,
                                                           case):
    """A folder that takes no new file: exit 4 before any work, one line
    naming the output (not a temporary file), nothing left in the folder."""
    program, argv = OUTPUTS[case]
    src, target = _place(case, refs / "BB11001.tfa", denied_folder)
    code = front_door(program, argv(src, target))
    assert (code, capsys.readouterr().err) == (
        EXIT_RESOURCE, f"{program}: error: {target}: cannot write into {denied_folder.resolve()} (Permission denied)\n")
    assert sorted(denied_folder.iterdir()) == ([src] if src.parent == denied_folder else [])


@pytest.mark.parametrize("case", sorted(c for c in OUTPUTS if not c.startswith("mafft")))
def test_an_output_in_a_missing_folder_fails_before_aligning(refs, tmp_path, no_aligning, quiet_warnings, capsys,
                                                              case):
    program, argv = OUTPUTS[case]
    target = tmp_path / "gone" / "out.x"
    code = front_door(program, argv(refs / "BB11001.tfa", target))
    assert (code, capsys.readouterr().err) == (EXIT_RESOURCE, f"{program}: error: {target}: no such folder to write into\n")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_in_the_place_of_maffts_tree_fails_before_aligning(refs, tmp_path, no_aligning, quiet_warnings, capsys):
    src = tmp_path / "in.fa"
    src.write_bytes((refs / "BB11001.tfa").read_bytes())
    Path(f"{src}.tree").mkdir()
    code = front_door("msagpu-mafft", ["--treeout", src])
    assert (code, capsys.readouterr().err) == (EXIT_RESOURCE, f"msagpu-mafft: error: {src}.tree: is a folder, not a file to write\n")


def test_an_unwritable_outdir_fails_before_aligning(refs, denied_folder, no_aligning):
    res = run("align", refs / "BB11001.tfa", "--outdir", denied_folder / "new" / "out", "--backend", "cpu")
    assert res.exit_code == EXIT_RESOURCE and res.stderr.count("\n") == 1
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
    assert res.exit_code == EXIT_RESOURCE and res.stderr.count("\n") == 1 and "cannot write into" in res.stderr


@pytest.mark.skipif(not LINUX, reason="/proc takes no new files on Linux")
def test_a_folder_that_takes_no_files_fails_before_aligning(refs, no_aligning):
    res = run("align", refs / "BB11001.tfa", "-o", "/proc/msagpu-out.fa", "--backend", "cpu")
    assert res.exit_code == EXIT_RESOURCE and res.stderr.count("\n") == 1
    assert res.stderr.startswith("msagpu: error: /proc/msagpu-out.fa: cannot write into /proc (")


def test_a_folder_as_output_fails_before_aligning(refs, tmp_path, no_aligning):
    res = run("align", refs / "BB11001.tfa", "-o", tmp_path, "--backend", "cpu")
    assert res.exit_code == EXIT_RESOURCE and res.stderr == f"msagpu: error: {tmp_path}: is a folder, not a file to write\n"


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
    assert res.exit_code == EXIT_RESOURCE and res.stderr.strip().endswith("no such folder to write into")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["fasta", "clustal"])
def test_a_full_disk_exits_with_the_io_code(refs, fmt):
    res = run("align", refs / "BB11001.tfa", "-o", "/dev/full", "--outfmt", fmt, "--backend", "cpu", "--mode", "fast",
              "-q")
    assert res.exit_code == EXIT_RESOURCE != EXIT_INPUT
    assert res.stderr == "msagpu: error: cannot write /dev/full: No space left on device\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("program", ["msagpu-mafft", "msagpu-famsa", "msagpu-clustalo"])
def test_a_full_standard_output_exits_with_the_io_code_in_every_front_door(refs, program):
    """Every front door writes standard output through the one writer: a full
    disk behind it is exit 4 naming standard output (msagpu-mafft wrote it
    through another writer and exited 2, "No space left on device")."""
    src = str(refs / "BB11001.tfa")
    argv = {"msagpu-mafft": ["--quiet", src], "msagpu-famsa": [src, "STDOUT"], "msagpu-clustalo": ["-i", src]}[program]
    entry = program.replace("-", "_")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", f"from msa_gpu.frontends.entry import {entry}; {entry}()", *argv],
                              stdout=full, stderr=subprocess.PIPE, text=True, env={**os.environ, "MSAGPU_SERVER": "off"})
    assert proc.returncode == EXIT_RESOURCE, proc.stderr
    assert proc.stderr == f"{program}: error: cannot write standard output: No space left on device\n"


def test_a_write_that_fails_midway_leaves_no_file(refs, tmp_path, monkeypatch):
    import msa_gpu.frontends.writer as cli_outputs

    def half_then_full(handle, names, rows, width=0):
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


def test_every_output_of_align_is_replaced_as_its_main_output_is(refs, tmp_path):
    """msagpu align's rule for an existing file (the README's): replaced,
    atomically, once the run succeeds, --force or not; the same for each of
    its outputs."""
    outputs = {"-o": "o.fa", "--tree-out": "t.nwk", "--distmat-out": "d.phy", "--column-scores": "c.txt"}
    for name in outputs.values():
        (tmp_path / name).write_text("old\n")
    args = [a for option, name in outputs.items() for a in (option, tmp_path / name)]
    res = run("align", refs / "BB11001.tfa", *args, "--backend", "cpu", "--mode", "fast", "-q")
    assert res.exit_code == 0, res.output
    assert [(tmp_path / name).read_text() != "old\n" for name in outputs.values()] == [True] * len(outputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(outputs.values())


#: Every front door that writes to standard output.
TO_STDOUT = {
    "align": ("msagpu", ["align", REFS / "BB11001.tfa", "--backend", "cpu", "-q"]),
    "score": ("msagpu", ["score", REFS / "BB11001.ref.fa", REFS / "BB11001.ref.fa"]),
    "pairwise": ("msagpu", ["pairwise", REFS / "BB11001.tfa", "--backend", "cpu", "-q"]),
    "mafft": ("msagpu-mafft", ["--quiet", REFS / "BB11001.tfa"]),
    "famsa": ("msagpu-famsa", [REFS / "BB11001.tfa", "STDOUT"]),
    "clustalo": ("msagpu-clustalo", ["-i", REFS / "BB11001.tfa"]),
}


@pytest.fixture
def closed_pipe(monkeypatch):
    """``install()``: standard output becomes a pipe whose reader has gone
    (closed before the run, so every write meets it closed); its file
    descriptor. (Called in the test: ``capsys`` sets its own standard output
    once the fixtures are made.)"""
    import io

    read, write = os.pipe()
    os.close(read)
    stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(write, "wb", closefd=False)), encoding="utf-8")

    def install() -> int:
        monkeypatch.setattr(sys, "stdout", stdout)
        return write

    yield install
    try:
        stdout.close()
    except OSError:  # (what it held met the closed pipe)
        pass
    os.close(write)


@pytest.mark.parametrize("case", sorted(TO_STDOUT))
def test_a_closed_pipe_on_stdout_ends_every_front_door_quietly_with_141(closed_pipe, quiet_warnings, capsys, case):
    """The README's rule: when standard output's reader has gone (``| head``),
    exit 141 (128 + SIGPIPE, as ``yes | head`` ends), say nothing, and point
    standard output at /dev/null, so that the interpreter's last flush says
    nothing either."""
    program, argv = TO_STDOUT[case]
    pipe = closed_pipe()
    code = front_door(program, argv)
    assert (code, capsys.readouterr().err) == (141, "")
    assert os.path.samestat(os.fstat(pipe), os.stat(os.devnull))


def test_a_closed_pipe_ends_a_whole_process_quietly_with_141(refs):
    """The same in a process of its own, as a shell pipeline runs it: nothing
    on stderr at the interpreter's exit either (msagpu-famsa once said ': Broken pipe')."""
    read, write = os.pipe()
    os.close(read)
    code = "import sys\nsys.argv[0] = 'msagpu-famsa'\nfrom msa_gpu.frontends.entry import msagpu_famsa\nmsagpu_famsa()"
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(refs / "BB11001.tfa"), "STDOUT"], stdout=write,
                              stderr=subprocess.PIPE, env={**os.environ, "MSAGPU_SERVER": "off"}, timeout=120)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr.decode()) == (141, "")


def test_a_closed_pipe_under_a_served_answer_exits_141_too(monkeypatch, capsys):
    """A served call writes the server's answer here (`msa_gpu.serving.protocol.served`): a closed
    pipe there ends the call as it ends a call run alone."""
    import msa_gpu.frontends.entry as entry
    import msa_gpu.errors as errors

    quieted = []

    def closed(program, argv):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr(entry, "served", closed)
    monkeypatch.setattr(errors, "quiet_stdout", lambda: quieted.append(True))
    monkeypatch.setattr(sys, "argv", ["msagpu-mafft", "in.fa"])
    with pytest.raises(SystemExit) as stop:
        entry.msagpu_mafft()
    assert (stop.value.code, quieted, capsys.readouterr().err) == (141, [True], "")


class Unhandled(Exception):
    """A signal that no handler of the front door's met (the test's own, put there first)."""


@pytest.fixture
def signal_while_writing(monkeypatch):
    """``arm(sig)``: the first write into a file (not standard output) is
    flushed, the folder's files noted, and ``sig`` sent to this process, a
    real signal, while the output is being written. Handlers of the test's
    own stand beneath the front door's, so that a front door without any
    fails the test instead of ending pytest."""
    import io
    import time
    import types

    import msa_gpu.io.writers as writers

    seen: dict = {}

    def unhandled(signum, frame):
        raise Unhandled(signum)

    previous = {sig: signal.signal(sig, unhandled) for sig in (signal.SIGINT, signal.SIGTERM)}

    class Slow(io.TextIOWrapper):
        def write(self, text):
            n = super().write(text)
            if self.buffer is not sys.stdout.buffer and "folder" in seen and "files" not in seen:
                self.flush()
                seen["files"] = sorted((p.name, p.stat().st_size) for p in seen["folder"].iterdir())
                os.kill(os.getpid(), seen["sig"])
                time.sleep(5)  # the handler raises here
            return n

    slow = types.ModuleType("io")
    slow.__dict__.update(io.__dict__)
    slow.TextIOWrapper = Slow
    monkeypatch.setattr(writers, "_io", slow)

    def arm(sig, folder):
        seen.update(sig=sig, folder=folder)
        return seen

    yield arm
    for sig, handler in previous.items():
        signal.signal(sig, handler)


#: Every front door's run that writes a file (msagpu-mafft: its --treeout file, INPUT.tree).
TO_FILES = {
    "align": ("msagpu", lambda src, out: ["align", src, "-o", out, "--backend", "cpu", "-q"], "out.fa"),
    "famsa": ("msagpu-famsa", lambda src, out: [src, out], "out.fa"),
    "clustalo": ("msagpu-clustalo", lambda src, out: ["-i", src, "-o", out], "out.fa"),
    "mafft --treeout": ("msagpu-mafft", lambda src, out: ["--treeout", "--quiet", src], "in.fa.tree"),
}


@pytest.mark.parametrize("sig, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
@pytest.mark.parametrize("case", sorted(TO_FILES))
def test_a_signal_while_an_output_is_written_leaves_no_file(tmp_path, signal_while_writing, quiet_warnings, capsys,
                                                            case, sig, code, said):
    """SIGINT or SIGTERM arriving while a file is half written (its temporary
    file there, part of it on disk): the signal's exit code, one line, and
    neither the temporary file nor the output remains."""
    program, argv, name = TO_FILES[case]
    src = tmp_path / "in.fa"
    src.write_bytes((REFS / "BB11001.tfa").read_bytes())
    seen = signal_while_writing(sig, tmp_path)
    got = front_door(program, argv(src, tmp_path / "out.fa"))
    (partial,) = [(n, size) for n, size in seen["files"] if n != "in.fa"]
    assert partial[0].startswith(f".{name}.") and partial[0].endswith(".tmp") and partial[1] > 0
    assert (got, capsys.readouterr().err) == (code, f"{program}: error: {said}; no output written\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


#: An error of each kind that may end a run, and the exit code the README gives it.
ENDINGS = {
    "bad input": (InputError("sequence 'x': invalid protein character '#' at position 3"), EXIT_INPUT),
    "unreadable file": (FileNotFoundError(errno.ENOENT, "No such file or directory", "gone.fa"), EXIT_INPUT),
    "no backend": (BackendError("no usable GPU"), 3),
    "out of memory": (MemoryError("cannot allocate 12 GB"), EXIT_RESOURCE),
    "a merge too large": (ResourceError("one merge of profiles of 4 x 9 and 5 x 9 needs 80 GB"), EXIT_RESOURCE),
    "unwritable output": (OutputError("cannot write out.fa: No space left on device"), EXIT_RESOURCE),
    "closed pipe": (PipeClosed("standard output: the reader closed the pipe"), 141),
    "msagpu error": (MsaGpuError("a family of no sequences"), 1),
    "internal error": (RuntimeError("kaboom"), 1),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_every_front_door_ends_an_error_with_the_same_code_and_line(refs, tmp_path, monkeypatch, quiet_warnings,
                                                                    capsys, ending):
    """One exit-code map for every front door: the same error, raised inside
    the alignment, gives each the same code and the same one-line message
    (msagpu align adds its memory plan to an out-of-memory one)."""
    from msa_gpu.aligner import Aligner

    exc, code = ENDINGS[ending]

    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(Aligner, "align_many", fail)
    monkeypatch.delenv("MSAGPU_DEBUG", raising=False)
    src = refs / "BB11001.tfa"
    runs = {"msagpu": ["align", src, "-o", tmp_path / "a.fa", "--backend", "cpu", "-q"],
            "msagpu-mafft": ["--quiet", src], "msagpu-famsa": [src, tmp_path / "f.fa"],
            "msagpu-clustalo": ["-i", src, "-o", tmp_path / "c.fa"]}
    ends = {}
    for program, argv in runs.items():
        got = front_door(program, argv)
        err = capsys.readouterr().err
        assert err == "" or (err.count("\n") == 1 and err.startswith(f"{program}: error: ")), (program, err)
        ends[program] = (got, err.removeprefix(f"{program}: error: ").rstrip("\n").split("; memory plan: ")[0])
    assert set(ends.values()) == {ends["msagpu"]} and ends["msagpu"][0] == code, ends
    assert (ends["msagpu"][1] == "") == (code == 141) and list(tmp_path.iterdir()) == []
