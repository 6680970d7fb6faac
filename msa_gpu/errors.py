"""The error hierarchy. Each error subclasses the builtin a caller would catch."""

from __future__ import annotations


class MsaGpuError(Exception):
    """Base class of every msagpu error."""


class InputError(MsaGpuError, ValueError):
    """Bad input: unreadable file, bad character, empty sequence, unknown format."""


class BackendError(MsaGpuError, RuntimeError):
    """A requested backend cannot be used (for example ``gpu`` with no GPU)."""


class ResourceError(MsaGpuError, MemoryError):
    """A run needs more memory (host or device) than it can have."""


class OutputError(MsaGpuError):
    """An output could not be written (disk full, I/O error): exit 4
    (`EXIT_RESOURCE`), not 2, for the input was good."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt, so no partial file stays."""


#: Exit codes of the command-line tools.
EXIT_INTERNAL, EXIT_INPUT, EXIT_BACKEND, EXIT_RESOURCE, EXIT_INTERRUPT, EXIT_TERM = 1, 2, 3, 4, 130, 143


def exit_status(exc: BaseException) -> tuple[int, str]:
    """The exit code and one-line message of an error that ends a front
    door's run (bad input and unreadable files 2, no backend 3, out of memory
    or an output that cannot be written 4, any other msagpu error 1).

    >>> exit_status(InputError("no sequences found"))
    (2, 'no sequences found')
    """
    if isinstance(exc, OutputError):
        return EXIT_RESOURCE, str(exc)
    if isinstance(exc, (InputError, ValueError)):
        return EXIT_INPUT, str(exc)
    if isinstance(exc, OSError):
        return EXIT_INPUT, f"{exc.filename or ''}: {exc.strerror or exc}"
    if isinstance(exc, BackendError):
        return EXIT_BACKEND, str(exc)
    if isinstance(exc, ResourceError):
        return EXIT_RESOURCE, str(exc)
    return EXIT_INTERNAL, str(exc)


def exit_with(program: str, run, argv: list[str]):
    """End a front door (``msagpu-mafft``, ``msagpu-famsa``,
    ``msagpu-clustalo``): ``run(argv)``'s exit code, or an error's
    (`exit_status`) with its one-line message on stderr."""
    import sys

    try:
        code = run(argv)
    except (MsaGpuError, ValueError, OSError) as exc:
        code, message = exit_status(exc)
        print(f"{program}: error: {message}", file=sys.stderr)
    raise SystemExit(code)
