"""The error hierarchy, and the one map from an error (or a signal) to a
front door's exit code and message (`exit_status`, `exits`). Each error
subclasses the builtin a caller would catch."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


class MsaGpuError(Exception):
    """Base class of every msagpu error."""


class InputError(MsaGpuError, ValueError):
    """Bad input: unreadable file, bad character, empty sequence, unknown format."""


class BackendError(MsaGpuError, RuntimeError):
    """A requested backend cannot be used (for example ``gpu`` with no GPU)."""


class ResourceError(MsaGpuError, MemoryError):
    """A run needs more memory (host or device) than it can have."""


class OutputError(MsaGpuError):
    """An output could not be written (disk full, I/O error, a folder that
    takes no file, an existing file that may not be replaced): exit 4
    (`EXIT_RESOURCE`), not 2, for the input was good."""


class PipeClosed(OutputError):
    """The reader of standard output (or of an output pipe) went away, as
    ``head`` does once it has what it wants: a quiet exit with `EXIT_PIPE`,
    as a tool that SIGPIPE ends."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt, so no partial file stays."""


#: Exit codes of the command-line tools (141 = 128 + SIGPIPE, what a shell reports for `yes | head`).
EXIT_INTERNAL, EXIT_INPUT, EXIT_BACKEND, EXIT_RESOURCE, EXIT_INTERRUPT, EXIT_TERM = 1, 2, 3, 4, 130, 143
EXIT_PIPE = 141


def exit_status(exc: BaseException, plan=None, env=None) -> tuple[int, str | None]:
    """The exit code and one-line message (None: say nothing) of what ended
    a front door's run; every front door maps through this one function.
    SIGTERM 143 and SIGINT 130; a closed output pipe 141, quietly; an output
    that cannot be written 4; bad input and unreadable files 2; no backend
    3; out of memory 4 (with ``plan()``, the run's memory plan, where
    given); any other error 1 (an internal error's type said, and
    re-raised where ``MSAGPU_DEBUG=1`` in ``env``, default this process's
    environment, asks for its traceback).

    >>> exit_status(InputError("no sequences found"))
    (2, 'no sequences found')
    >>> exit_status(BrokenPipeError(32, "Broken pipe"))
    (141, None)
    >>> exit_status(MemoryError("cannot allocate 2 GB"), lambda: "memory plan: about 3 GB")
    (4, 'out of memory (cannot allocate 2 GB); memory plan: about 3 GB')
    """
    if isinstance(exc, Terminated):
        return EXIT_TERM, "terminated; no output written"
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPT, "interrupted; no output written"
    if isinstance(exc, (PipeClosed, BrokenPipeError)):
        return EXIT_PIPE, None
    if isinstance(exc, OutputError):
        return EXIT_RESOURCE, str(exc)
    if isinstance(exc, (InputError, ValueError)):
        return EXIT_INPUT, str(exc)
    if isinstance(exc, OSError):
        return EXIT_INPUT, f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
    if isinstance(exc, BackendError):
        return EXIT_BACKEND, str(exc)
    if isinstance(exc, MemoryError):
        need = plan() if plan is not None else ""
        return EXIT_RESOURCE, f"out of memory ({exc or type(exc).__name__})" + (f"; {need}" if need else "")
    if isinstance(exc, MsaGpuError):
        return EXIT_INTERNAL, str(exc)
    if not isinstance(exc, Exception) or (os.environ if env is None else env).get("MSAGPU_DEBUG") == "1":
        raise exc
    return EXIT_INTERNAL, (f"internal error: {type(exc).__name__}: {exc} (please report it; MSAGPU_DEBUG=1 shows "
                           "where)")


def quiet_stdout(stdout=None) -> None:
    """Standard output (``stdout``, default this process's) pointed at
    /dev/null once its reader has gone, so that the interpreter's last flush
    says nothing either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, (sys.stdout if stdout is None else stdout).fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture, a server's buffer)
        pass


@contextmanager
def exits(program: str, plan=None, keep: tuple = (), caller=None):
    """Run a front door's work: an error (or a signal) that ends it becomes
    `exit_status`'s code and one line ``PROGRAM: error: MESSAGE`` on stderr,
    as ``SystemExit``. ``caller``: whose standard output, standard error and
    environment (``stdout``, ``stderr``, ``env``: a served request's) the
    exit speaks to and reads; default this process's. SIGTERM unwinds like SIGINT, so temporary outputs are
    removed. A signal is remembered when it arrives: where a library turns
    the interruption into an error of its own (numba compiling a kernel gets
    KeyboardInterrupt inside a ctypes callback and fails later with another
    exception), the exit still says the signal. ``keep``: exceptions passed
    on as they are (a command-line library's own exits)."""
    import signal

    received: list[int] = []

    def _term(signum, frame):
        received.append(signum)
        raise Terminated()

    def _int(signum, frame):
        received.append(signum)
        raise KeyboardInterrupt()

    try:
        previous = {sig: signal.signal(sig, handler) for sig, handler in
                    ((signal.SIGTERM, _term), (signal.SIGINT, _int))}
    except ValueError:  # not the main thread
        previous = {}
    try:
        yield
    except SystemExit:
        raise
    except BaseException as exc:
        if keep and isinstance(exc, keep):
            raise
        if received and not isinstance(exc, (Terminated, KeyboardInterrupt)):
            exc = Terminated() if received[0] == signal.SIGTERM else KeyboardInterrupt()
        code, message = exit_status(exc, plan, None if caller is None else caller.env)
        if code == EXIT_PIPE:
            quiet_stdout(None if caller is None else caller.stdout)
        if message is not None:
            print(f"{program}: error: {message}", file=sys.stderr if caller is None else caller.stderr)
        raise SystemExit(code) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
