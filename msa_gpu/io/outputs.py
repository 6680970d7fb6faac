"""Outputs that fail early and never half-way: every output's folder is
tried before the work (`check_outputs`), and an output that cannot be
written, then or later, is an `OutputError` (exit 4: the input was good)
naming the output (`writing`, `write_output`); a reader that closes its pipe
is `PipeClosed`; `write_text` writes through a symbolic link.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from msa_gpu.errors import OutputError, PipeClosed
from msa_gpu.io.writers import strict_names, write_text


@contextmanager
def writing(target):
    """Writes to ``target`` (None or '-': standard output): an `OSError` they
    raise becomes an `OutputError` naming ``target``, a broken pipe
    `PipeClosed`."""
    where = "standard output" if target is None or str(target) == "-" else target
    try:
        yield
    except BrokenPipeError:
        raise PipeClosed(f"{where}: the reader closed the pipe") from None
    except OSError as exc:
        raise OutputError(f"cannot write {where}: {exc.strerror or exc}") from None


def write_output(target, emit, compress: bool = False, stdout=None, umask: int | None = None) -> None:
    """`write_text` to ``target`` (None or '-': ``stdout``, default this
    process's; new files' permissions by ``umask``, default this process's);
    a failed write is an `OutputError`."""
    with writing(target):
        write_text(target, emit, compress, stdout=stdout, umask=umask)


def write_names_map(target, names: list[str], umask: int | None = None) -> None:
    """Beside a strict PHYLIP file ``target``, ``TARGET.names``: each short
    name (`strict_names`) and its whole name, tab-separated, a line each.
    Nothing for standard output."""
    if target is None or str(target) == "-":
        return
    pairs = "".join(f"{a}\t{b}\n" for a, b in zip(strict_names(list(names)), names))
    beside = target.beside(".names") if hasattr(target, "beside") else f"{target}.names"  # (a caller's `Placed`)
    write_output(beside, lambda h: h.write(pairs), umask=umask)


def make_folder(path, umask: int | None = None) -> None:
    """``path`` and the folders above it made where missing (``mkdir -p``),
    each with the permissions ``umask`` leaves (default: this process's own,
    as ``mkdir`` gives them)."""
    folder = Path(os.fspath(path))
    if umask is None:
        folder.mkdir(parents=True, exist_ok=True)
        return
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            made.mkdir()
        except FileExistsError:
            if not made.is_dir():
                raise
            continue
        os.chmod(made, os.stat(made).st_mode & 0o7000 | 0o777 & ~umask)  # (a set-group-ID bit inherited kept)


def check_outputs(*targets, outdir: Path | None = None, force: bool = True, refusal: str = "") -> None:
    """Fail before the work, not after it, with an `OutputError` naming the
    output: each output file's folder (a link's target's) must exist and
    take a new file (tried with a nameless temporary file: permissions, a
    read-only mount), and the output must not be a folder; a device or a
    pipe (/dev/null, /dev/stdout) is written in place. ``outdir`` must be
    such a folder, or one that can be made in one. Without ``force`` an
    existing file is refused (``refusal`` says how to replace it)."""
    def takes_files(target, folder: Path) -> None:
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as exc:
            raise OutputError(f"{target}: cannot write into {folder} ({exc.strerror or exc})") from None

    for target in targets:
        if target is None or str(target) == "-":
            continue
        try:
            mode = os.stat(target).st_mode
        except OSError:
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            raise OutputError(f"{target}: is a folder, not a file to write")
        if mode is not None and not stat.S_ISREG(mode):
            continue
        if mode is not None and not force:
            raise OutputError(f"{target} exists{': ' + refusal if refusal else ''}")
        folder = Path(os.path.realpath(target)).parent
        if not folder.is_dir():
            raise OutputError(f"{target}: no such folder to write into")
        takes_files(target, folder)
    if outdir is not None:
        existing = Path(os.path.realpath(outdir))
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise OutputError(f"{outdir}: not a folder to write into ({existing} is a file)")
        takes_files(outdir, existing)
