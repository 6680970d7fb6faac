"""One served request run as a `Job` for its client (`run_request`): the
client's command line parsed by its front door, and the job run by the one
runner (`msa_gpu.frontends.runner`) for a `Caller` that holds the client's
own standard input, output and error, folder, environment and umask. No
process-wide state is swapped for it: the server's standard streams,
arguments, folder, environment and umask stay as they are, and relative
paths are found in the client's folder (`msa_gpu.frontends.job.placed`).
Only the warnings, which Python keeps per process, are scoped to the
request (`warnings.catch_warnings`), so that each is said on the request's
own stderr as a fresh process says it.

The front doors stand above the server (`pyproject.toml`'s layers), so
they are found by name (`protocol.JOBS`, ``msa_gpu.frontends.*``), as the
server always found them.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import io
import os
import warnings

from msa_gpu.serving.protocol import ENV_PREFIXES, JOBS, decode, encode

#: The warning filters as the stack left them once loaded (`server._worker`),
#: given back to every request.
FILTERS: list = []


def _frontends(name: str):
    return importlib.import_module(f"msa_gpu.frontends.{name}")


def _text(buffer) -> io.TextIOWrapper:
    """A standard stream over ``buffer``, as a served request's always were."""
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="surrogateescape", write_through=True)


def environment(request: dict) -> dict:
    """The environment a request runs with: the server's, less the settings
    a client carries (`ENV_PREFIXES`: the client's, not the server's), plus
    the client's, less ``MSAGPU_SERVER``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env.update(request.get("env") or {})
    env.pop("MSAGPU_SERVER", None)
    return env


def quiet(program: str, argv: list[str]) -> bool:
    """Whether ``program``'s front door keeps warnings to itself for
    ``argv``, as its console entry point decides (`protocol.JOBS`)."""
    _, quiet_flags, loud_flags = JOBS[program]
    return any(a in quiet_flags for a in argv) or (bool(loud_flags) and not any(a in loud_flags for a in argv))


def run_request(request: dict, batch=None) -> dict:
    """One request run as a fresh process would run it: its exit code and
    what it wrote to standard output and error (``batch``: its aligners'
    batch hook, `msa_gpu.serving.gather`)."""
    import numba

    job = _frontends("job")
    _enterable(request["cwd"])
    out, err = io.BytesIO(), io.BytesIO()
    stdin = decode(request["stdin"]) if request.get("stdin") is not None else b""
    caller = job.Caller(_text(out), _text(err), io.BytesIO(stdin), request["cwd"], environment(request),
                        int(request.get("umask", 0o022)), batch)
    threads = numba.get_num_threads()
    code = 0
    try:
        with warnings.catch_warnings():  # (Python's warnings are the process's: scoped to this request)
            warnings.filters[:] = FILTERS or warnings.filters  # as a fresh process has them
            try:
                code = _run(request["program"], list(request["argv"]), caller)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, (int, type(None))):
                    print(exc.code, file=caller.stderr)
            except Exception as exc:  # noqa: BLE001 - a request's failure is that call's alone
                print(f"{request['program']}: error: {exc}", file=caller.stderr)
                code = 1
        caller.stdout.flush()
        caller.stderr.flush()
    finally:
        for stream in (caller.stdout, caller.stderr):  # the buffers outlive their text layers
            with contextlib.suppress(ValueError):
                stream.flush()
            with contextlib.suppress(ValueError):
                stream.detach()
        numba.set_num_threads(threads)  # one request's --threads is not the next one's
    return {"rc": code, "stdout": encode(out.getvalue()), "stderr": encode(err.getvalue())}


def _enterable(folder: str) -> None:
    """The error that entering ``folder`` (chdir) would raise, where it would: a request
    whose folder is gone (or not one, or closed to this user) fails as it
    did when the server entered it (a server error)."""
    os.stat(folder)  # (FileNotFoundError, as chdir's)
    for test, code in ((os.path.isdir, errno.ENOTDIR), (lambda f: os.access(f, os.X_OK), errno.EACCES)):
        if not test(folder):
            raise OSError(code, os.strerror(code), folder)


def _run(program: str, argv: list[str], caller) -> int:
    """``program argv`` run for ``caller``: a front door with a ``job_of``
    has its command line turned into a `Job` here and run by the runner
    (`runner.main`); ``msagpu``'s typer commands build and run theirs
    themselves (`_command`)."""
    if program not in JOBS:
        return _command(argv, caller)
    module, _, _ = JOBS[program]
    runner = _frontends("runner")
    runner.say_warnings(program, quiet(program, argv), caller.stderr)
    runner.main(program, importlib.import_module(module).job_of, argv, caller)
    return 0  # (runner.main ends in SystemExit)


def _command(argv: list[str], caller) -> int:
    """``msagpu ARGV`` (``align``, ``mafft``) by its typer command, which
    builds its `Job` and runs it for ``caller``, handed to it as the caller
    of this context (`msa_gpu.frontends.job.calling`); click's usage errors
    said on the caller's stderr, as click says them."""
    import click
    import typer

    command = typer.main.get_command(_frontends("msagpu").app)
    with _frontends("job").calling(caller):
        try:
            return command.main(args=argv, prog_name="msagpu", standalone_mode=False) or 0
        except click.ClickException as exc:
            exc.show(file=caller.stderr)
            return exc.exit_code
        except click.Abort:
            click.echo("Aborted!", file=caller.stderr)
            return 1


def process_folder(request: dict) -> bool:
    """Whether a request names inputs that ``msagpu align`` expands before
    its job is built (a folder, a list of paths): found in the process's own
    folder, so such a request is answered ``alone`` (its client aligns it,
    the same bytes) rather than run here."""
    argv = list(request.get("argv") or [])
    if request.get("program") != "msagpu" or not argv or argv[0] != "align":
        return False
    import typer

    align = typer.main.get_command(_frontends("msagpu").app).commands["align"]
    try:
        ctx = align.make_context("align", argv[1:], resilient_parsing=True)
    except Exception:  # noqa: BLE001 - an unparsable call is the front door's to refuse, here
        return False
    inputs = [*(ctx.params.get("inputs") or []), *(ctx.params.get("infile") or [])]
    for item in map(str, inputs):
        if item == "-":
            continue
        found = os.path.join(request.get("cwd") or "/", item)
        if os.path.isdir(found) or os.path.splitext(item)[1].lower() in (".txt", ".list"):
            return True
    return False
