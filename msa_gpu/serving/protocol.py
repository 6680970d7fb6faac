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

#: Front doors a server runs, by the name a client gives (module, function).
PROGRAMS = {"msagpu": ("msa_gpu.cli", "main"), "msagpu-mafft": ("msa_gpu.mafft_cli", "main"),
            "msagpu-famsa": ("msa_gpu.famsa_cli", "main"), "msagpu-clustalo": ("msa_gpu.clustalo_cli", "main")}
#: The environment a request carries to the server.
ENV_PREFIXES = ("MSAGPU_", "NUMBA_", "CUDA_VISIBLE_DEVICES")
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
    if program == "msagpu" and argv[0] not in ("align", "mafft"):
        return None
    if any(a in ("-h", "--help", "-help", "--version", "--long-version") for a in argv):
        return None
    try:
        sock = connect(path, timeout=2.0)
    except OSError:
        return None  # stale socket, or a server not yet listening
    stdin = sys.stdin.buffer.read() if "-" in argv and not sys.stdin.isatty() else None
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    try:
        with sock:
            sock.settimeout(None)
            send(sock, {"program": program, "argv": argv, "cwd": os.getcwd(), "env": env,
                        "stdin": None if stdin is None else encode(stdin)})
            answer = receive(sock)
    except (OSError, ServerGone, ValueError):
        print(f"{program}: the server at {path} stopped before answering; aligning here instead", file=sys.stderr)
        if stdin is not None:
            import io

            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        return None
    sys.stdout.buffer.write(decode(answer["stdout"]))
    sys.stdout.flush()
    sys.stderr.buffer.write(decode(answer["stderr"]))
    sys.stderr.flush()
    return int(answer["rc"])
