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
server always found them. ``msagpu align``'s ``job_of`` takes the caller
too: a folder or a list of inputs is expanded in the caller's folder.
"""

from __future__ import annotations

import contextlib
import errno
import functools
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
    door = JOBS[program]
    if door.quiet is None:  # the door's own parse says
        return importlib.import_module(door.module).quiet(argv)
    return any(a in door.quiet for a in argv) or (bool(door.loud) and not any(a in door.loud for a in argv))


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
    """``program argv`` run for ``caller``: its front door's ``job_of``
    turns the command line into a `Job` (``msagpu mafft ARGS`` is
    ``msagpu-mafft ARGS``), which the runner runs (`runner.main`); a command
    line that ``msagpu``'s typer commands refuse said on the caller's stderr,
    as typer says it."""
    msagpu = _frontends("msagpu")
    if program == "msagpu" and argv[:1] == ["mafft"]:
        program, argv = "msagpu-mafft", msagpu.mafft_args(argv)
    door = JOBS[program]
    job_of = importlib.import_module(door.module).job_of
    runner = _frontends("runner")
    runner.say_warnings(program, quiet(program, argv), caller.stderr)
    try:
        runner.main(program, functools.partial(job_of, caller=caller) if door.caller else job_of, argv, caller,
                    plan=door.plan, keep=(msagpu.Refused,))
    except msagpu.Refused as exc:
        exc.show(file=caller.stderr)
        return exc.exit_code
    return 0  # (runner.main ends in SystemExit)


def servable(request: dict) -> bool:
    """Whether the server runs ``request``: a front door it knows, and of
    ``msagpu``'s commands ``align`` and ``mafft`` (with arguments; alone it
    says MAFFT's help), as a client sends them (`protocol.served`)."""
    argv = list(request.get("argv") or [])
    if request.get("program") not in JOBS:
        return False
    return request["program"] != "msagpu" or (argv[:1] in (["align"], ["mafft"]) and argv != ["mafft"])
