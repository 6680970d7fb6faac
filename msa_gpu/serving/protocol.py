"""The server's socket and messages; standard library only.

A message is 4 bytes of big-endian length, then that many bytes of JSON.
The request names the front door and its arguments, the client's folder and
environment (``MSAGPU_*``, ``CUDA_VISIBLE_DEVICES``, ``NUMBA_*``), and its
standard input where an input is ``-``; the answer carries the exit code and
the bytes written to standard output and standard error.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import sys
from typing import NamedTuple

#: Front doors a server runs, by the name a client gives (module, function).
PROGRAMS = {"msagpu": ("msa_gpu.frontends.msagpu", "main"), "msagpu-mafft": ("msa_gpu.frontends.mafft", "main"),
            "msagpu-famsa": ("msa_gpu.frontends.famsa", "main"), "msagpu-clustalo": ("msa_gpu.frontends.clustalo", "main")}


class Door(NamedTuple):
    """A front door whose command line the server turns into a `Job`
    itself (`msa_gpu.serving.requests`): ``module`` holds its ``job_of``;
    its warnings are quiet where an argument of ``quiet`` is given, or,
    where ``loud`` names some, where none of those is, as its console entry
    point decides (``quiet`` None: by its module's ``quiet(argv)``, its own
    parse). ``caller``: its ``job_of`` takes the request's caller too (its
    inputs expanded in the caller's folder); ``plan``: an out-of-memory
    exit says the run's memory plan."""

    module: str
    quiet: tuple[str, ...] | None = ()
    loud: tuple[str, ...] = ()
    caller: bool = False
    plan: bool = False


#: The front doors the server runs as `Job`s, by the name a client gives
#: (``msagpu mafft ARGS`` is ``msagpu-mafft ARGS``; ``msagpu align ARGS``
#: is ``msagpu``'s).
JOBS = {"msagpu": Door("msa_gpu.frontends.msagpu", None, caller=True, plan=True),
        "msagpu-mafft": Door("msa_gpu.frontends.mafft", ("--quiet",)),
        "msagpu-famsa": Door("msa_gpu.frontends.famsa", (), ("-v",)),
        "msagpu-clustalo": Door("msa_gpu.frontends.clustalo", (), ("-v", "--verbose"))}
#: The environment a request carries to the server.
ENV_PREFIXES = ("MSAGPU_", "NUMBA_", "CUDA_VISIBLE_DEVICES", "TMPDIR")
#: Settings read once when the stack loads: a request whose values differ
#: from the server's runs alone.
FIXED_ENV = ("CUDA_VISIBLE_DEVICES", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "NUMBA_CACHE_DIR",
             "NUMBA_DISABLE_JIT", "CUPY_CACHE_DIR")
#: ``MSAGPU_SERVER`` set to one of these: never use a server.
OFF = ("", "0", "off", "no", "none")


class ServerGone(ConnectionError):
    """The server closed the connection before its answer was whole."""


def socket_path() -> str | None:
    """Where this user's server listens: ``MSAGPU_SERVER`` (None where it
    says off), else ``$XDG_RUNTIME_DIR/msagpu/server.sock``, else
    ``/tmp/msagpu-UID/server.sock``."""
    given = os.environ.get("MSAGPU_SERVER")
    if given is not None:
        return None if given.strip().lower() in OFF else given
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = os.path.join(runtime, "msagpu") if runtime and os.path.isdir(runtime) else f"/tmp/msagpu-{os.getuid()}"
    return os.path.join(folder, "server.sock")


def private(path: str) -> bool:
    """Whether ``path`` is a socket of this user's in a folder of this
    user's that others cannot enter (mode 0700 or tighter): the only kind a
    client talks to and a server listens on."""
    import stat

    try:
        folder = os.stat(os.path.dirname(os.path.abspath(path)))
        sock = os.lstat(path)
    except OSError:
        return False
    return (folder.st_uid == os.getuid() and not folder.st_mode & 0o077 and stat.S_ISSOCK(sock.st_mode)
            and sock.st_uid == os.getuid())


def peer(sock: socket.socket) -> tuple[int, int] | None:
    """The process at the other end and its user, ``(pid, uid)`` (Linux's
    SO_PEERCRED; a client's peer is the process that listens), or None
    where unknown."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid, uid


def peer_uid(sock: socket.socket) -> int | None:
    """The user of the process at the other end (`peer`), or None where unknown."""
    who = peer(sock)
    return None if who is None else who[1]


def identity() -> dict:
    """What a client and its server must share: msagpu's version, the
    Python installation, and the settings read once (`FIXED_ENV`)."""
    from msa_gpu.version import __version__

    return {"version": __version__, "prefix": sys.prefix, "fixed": {k: os.environ.get(k) for k in FIXED_ENV}}


def _stdin_input(argv: list[str]) -> bool:
    """Whether the call reads standard input: an argument ``-`` or ``--opt=-``."""
    return any(a == "-" or a.endswith("=-") for a in argv)


def _process_paths(argv: list[str]) -> bool:
    """Whether an argument names a file that only this process can open
    (``/dev/stdin``, ``/dev/fd/N`` from a shell's ``<(...)``, ``/proc/self/...``)."""
    return any(("/dev/" in a or "/proc/" in a) for a in argv)


def send(sock: socket.socket, message: dict) -> None:
    data = json.dumps(message).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def receive(sock: socket.socket) -> dict:
    """One message; `ServerGone` if the peer closes first."""
    head = _exactly(sock, 4)
    return json.loads(_exactly(sock, struct.unpack(">I", head)[0]))


def _exactly(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ServerGone("the server closed the connection")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode(text: str) -> bytes:
    return base64.b64decode(text)


def connect(path: str, timeout: float | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def served(program: str, argv: list[str]) -> int | None:
    """Run ``program argv`` on this user's server, if one answers: its exit
    code, with its standard output and error written here. None where there
    is no server (no socket, or a stale one), where the call is not one to
    serve (help, version, ``serve``), or where the server stopped before its
    answer was whole (it writes its files whole or not at all, so the caller
    then runs alone)."""
    path = socket_path()
    if path is None or not os.path.exists(path) or not argv or program not in PROGRAMS:
        return None
    if program == "msagpu" and (argv[0] not in ("align", "mafft") or argv == ["mafft"]):
        return None  # (msagpu mafft alone says MAFFT's help)
    if any(a in ("-h", "--help", "-help", "--version", "--long-version") for a in argv) or _process_paths(argv):
        return None
    if any(a.split("=")[0] in ("--gpus", "--dask") for a in argv):
        return None  # spread over devices or workers: a large run, which forks its workers before CUDA starts
    if not private(path):
        return None  # not this user's, or open to others: never talk to it
    # standard input is read whole before connecting, so that a pipeline of
    # two served calls never has the server wait on the second's input
    stdin = sys.stdin.buffer.read() if _stdin_input(argv) and not sys.stdin.isatty() else None
    try:
        sock = connect(path, timeout=2.0)
        if peer_uid(sock) not in (None, os.getuid()):
            sock.close()
            return None
    except OSError:
        if stdin is not None:
            _give_back(stdin)
        return None  # stale socket, or a server not yet listening
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    umask = os.umask(0)
    os.umask(umask)
    try:
        with sock:
            sock.settimeout(None)
            send(sock, {"program": program, "argv": argv, "cwd": os.getcwd(), "env": env, "umask": umask,
                        "identity": identity(), "stdin": None if stdin is None else encode(stdin)})
            answer = receive(sock)
    except (OSError, ServerGone, ValueError):
        print(f"{program}: the server at {path} stopped before answering; aligning here instead", file=sys.stderr)
        if stdin is not None:
            _give_back(stdin)
        return None
    if answer.get("alone"):  # another msagpu or other settings: this call is not the server's
        if stdin is not None:
            _give_back(stdin)
        return None
    sys.stdout.buffer.write(decode(answer["stdout"]))
    sys.stdout.flush()
    sys.stderr.buffer.write(decode(answer["stderr"]))
    sys.stderr.flush()
    return int(answer["rc"])


def _give_back(stdin: bytes) -> None:
    """Standard input already read, for the run here."""
    import io

    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="surrogateescape")
