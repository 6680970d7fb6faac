"""The warm server (`msagpu serve`): a Unix socket for this user (mode 0600
in a folder of mode 0700), the stack and the kernels loaded once, and each
request's command line turned into a `Job` by the front door it names and
run by the one runner in this process, as an in-process run would
(`requests.run_request`): for the client's folder, environment, umask and
standard input, handed to the runner (no process state swapped); its
standard output and error captured and sent back with the exit code. The
outputs are written here, whole or not at all, as always. Several worker
processes (one a core, at most 8) take requests at once; a worker that
finds requests queued takes them together, and those with the same
settings are aligned in one batch (`gather`). A connection from another
user is refused (the peer's credentials). It ends on ``msagpu serve
--stop`` or SIGTERM (the socket goes at once; each worker answers the
request it holds, then ends), on Ctrl-C (the same, then exit 130; a second
Ctrl-C ends the workers at once), or after ``idle`` seconds without a
request. A worker killed while the server runs is replaced.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import signal
import socket
import stat
import sys
import time
import warnings

from msa_gpu.runtime.children import die_with_parent
from msa_gpu.serving import requests
from msa_gpu.serving.protocol import (PROGRAMS, ServerGone, connect, encode, identity, peer, peer_uid, receive, send,
                                      socket_path)
from msa_gpu.serving.requests import run_request

__all__ = ["ServerError", "run_request", "running", "serve", "start_detached", "stop"]

#: A server ends after this many seconds without a request (``--idle-timeout``).
IDLE_SECONDS = 3600.0


class ServerError(RuntimeError):
    """The server cannot start (one is running, the socket's folder is not ours)."""


def _say(text: str) -> None:
    """A line on standard error, where there is one: a detached server's
    (`start_detached`) is a pipe closed once it listens."""
    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr, flush=True)


def running(path: str) -> bool:
    """Whether a server answers at ``path``."""
    try:
        connect(path, timeout=1.0).close()
        return True
    except OSError:
        return False


def _prepare(path: str) -> None:
    """The socket's folder, made (0700) if it is the default one, and checked
    to be ours and closed to others; a stale socket (no server) removed, and
    anything else at ``path`` left alone."""
    folder = os.path.dirname(os.path.abspath(path))
    if path == socket_path() and not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.stat(folder)
    if info.st_uid != os.getuid():
        raise ServerError(f"{folder} belongs to another user; give --socket a path in a folder of yours")
    if info.st_mode & 0o077:
        raise ServerError(f"{folder} is open to other users; chmod 700 it, or give --socket a path in another folder")
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ServerError(f"{path} exists and is not a socket")
        if running(path):
            raise ServerError(f"a server is already running at {path} (msagpu serve --stop ends it)")
        os.unlink(path)  # stale: its server died


def allowed(uid: int | None) -> bool:
    """A request is taken only from this server's own user."""
    return uid is None or uid == os.getuid()


def warm_up() -> None:
    """Load the stack and the kernels: one small alignment through the
    library, so that the first request pays none of it."""
    from msa_gpu.aligner import Aligner
    from msa_gpu.settings.config import AlignerConfig, Mode
    from msa_gpu.io import make_sequences

    seqs = make_sequences(["a", "b", "c"], [b"MKVLAAGIVGLLLA", b"MKVLSAGIVALLLA", b"MRVLAAGLVGLLAS"], "protein")
    for mode in (Mode.fast, Mode.accurate):
        Aligner(AlignerConfig(mode=mode)).align(seqs)
    for module in [m for m, _ in PROGRAMS.values()] + ["msa_gpu.frontends.runner", "msa_gpu.frontends.writer"]:
        importlib.import_module(module)


def default_workers() -> int:
    """Requests a server answers at once: one a core, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))


def _listen(path: str, idle: float) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is made 0600: no moment when others may connect
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    listener.listen(64)
    listener.settimeout(idle if idle > 0 else None)
    return listener


def serve(path: str | None = None, idle: float = IDLE_SECONDS, ready=None, workers: int | None = None) -> int:
    """Listen at ``path`` (default `socket_path`) until ``--stop``, SIGTERM,
    SIGINT or ``idle`` seconds without a request; ``ready()`` is called once
    its workers are warm (clients may connect from the start: they wait).
    ``workers`` (default `default_workers`) processes answer requests at
    once (`_pool`). Returns the number of requests answered. A
    signal ends it with one line on standard error ("msagpu: server
    stopped", and why); after SIGINT (Ctrl-C) it exits 130 (`SystemExit`),
    as an interrupted command does, and after SIGTERM it returns (exit 0),
    as after ``--stop``."""
    path = path or socket_path()
    if path is None:
        raise ServerError("MSAGPU_SERVER is off: give --socket a path")
    if not hasattr(os, "fork"):
        raise ServerError("the server needs os.fork (Linux or macOS)")
    _prepare(path)
    answered, signum = _pool(path, idle, ready, max(1, workers or default_workers()), identity())
    if signum is not None:
        why = "interrupted" if signum == signal.SIGINT else signal.Signals(signum).name
        _say(f"msagpu: server stopped ({why})")
        if signum == signal.SIGINT:
            raise SystemExit(130)
    return answered


class _Stop(Exception):
    """A pool worker told to end while it waits for a request."""


def _answer(listener: socket.socket, mine: dict, on_stop=None, state: dict | None = None) -> int:
    """Take requests from ``listener`` until a stop request (then
    ``on_stop()``) or its timeout; the number answered. A pool worker's
    ``state``: ``busy`` while it holds a request, and once ``stop`` is set
    it ends after the request it holds."""
    answered = 0
    state = state if state is not None else {}
    while not state.get("stop"):
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            return answered
        except (BlockingIOError, InterruptedError):  # another worker polled the shared socket just then
            time.sleep(0.001)
            continue
        state["busy"] = True
        try:
            answered += _batch([conn, *_queued(listener)], mine, on_stop)
        except _Stopped:
            return answered
        finally:
            state["busy"] = False
    return answered


#: The most queued requests one worker takes into one batch.
GATHER_MAX = 32


def _queued(listener: socket.socket) -> list[socket.socket]:
    """The connections already waiting on ``listener`` (at most
    `GATHER_MAX` - 1 more), taken without waiting."""
    out = []
    timeout = listener.gettimeout()
    listener.setblocking(False)
    try:
        while len(out) < GATHER_MAX - 1:
            try:
                out.append(listener.accept()[0])
            except (BlockingIOError, InterruptedError):
                break
    finally:
        listener.settimeout(timeout)
    for conn in out:
        conn.setblocking(True)
    return out


class _Stopped(Exception):
    """A stop request was answered."""


#: Seconds a batch waits for the requests of connections that have not sent
#: one yet; those still silent are answered after it.
READY_WAIT = 1.0


def _ready(conns: list[socket.socket], wait: float) -> tuple[list, list]:
    """``conns`` split into those whose request has begun to arrive within
    ``wait`` seconds and those still silent, each in order."""
    ready: set = set()
    end = time.monotonic() + wait
    while len(ready) < len(conns):
        left = end - time.monotonic()
        if left <= 0:
            break
        readable, _, _ = select.select([c for c in conns if c not in ready], [], [], left)
        if not readable:
            break
        ready.update(readable)
    return [c for c in conns if c in ready], [c for c in conns if c not in ready]


def _batch(conns: list[socket.socket], mine: dict, on_stop) -> int:
    """Answer connections taken together: those whose requests have arrived
    (`READY_WAIT`) run as one batch (`gather.run_together`), then the
    silent ones, so that a client that connects and says nothing does not
    hold the others; the number of requests run. A stop request among them
    is answered after the others (`_Stopped`)."""
    ready, late = _ready(conns, READY_WAIT)
    if not ready:  # none has spoken: the first is waited on (`_take`), the rest follow it
        ready, late = conns[:1], conns[1:]
    try:
        answered = _run_batch(ready, mine, on_stop)
    except BaseException:
        for conn in late:
            conn.close()
        raise
    return answered + (_batch(late, mine, on_stop) if late else 0)


def _run_batch(conns: list[socket.socket], mine: dict, on_stop) -> int:
    """`_batch`'s work for connections whose requests are read one by one."""
    taken, stop = [], None
    for conn in conns:
        kind, request = _take(conn, mine)
        if kind == "run":
            taken.append((conn, request))
        elif kind == "stop" and stop is None:
            stop = conn
        else:
            conn.close()
    if taken:
        _test_hold([r.get("env") or {} for _, r in taken])
        try:
            from msa_gpu.serving.gather import run_together  # (the stack: loaded after the workers' fork)

            answers = run_together([r for _, r in taken], run_request)
        except Exception as exc:  # noqa: BLE001 - the server outlives any one batch
            failed = {"rc": 1, "stdout": "", "stderr": encode(f"msagpu: server error: {exc}\n".encode())}
            answers = [failed] * len(taken)
        for (conn, _), answer in zip(taken, answers):
            with conn, contextlib.suppress(OSError):
                send(conn, answer)
        log = os.environ.get("MSAGPU_SERVER_TEST_LOG")
        if log:  # tests: each batch's size, a line a batch
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{len(taken)}\n")
    if stop is not None:
        with stop:
            if on_stop is not None:  # (the socket goes before the answer: a stopped server is not found again)
                on_stop()
            send(stop, {"stopped": True})
        raise _Stopped
    return len(taken)


def _test_hold(envs: list[dict]) -> None:
    """Tests: a window in which to act while a batch is held, by the
    server's ``MSAGPU_SERVER_TEST_DELAY`` (seconds) or a request's, and
    while a file a request names in ``MSAGPU_SERVER_TEST_HOLD`` exists (at
    most 60 s)."""
    delay = max(float(env.get("MSAGPU_SERVER_TEST_DELAY") or os.environ.get("MSAGPU_SERVER_TEST_DELAY") or 0)
                for env in envs)
    if delay:
        time.sleep(delay)
    holds = [env["MSAGPU_SERVER_TEST_HOLD"] for env in envs if env.get("MSAGPU_SERVER_TEST_HOLD")]
    end = time.monotonic() + 60
    while any(os.path.exists(h) for h in holds) and time.monotonic() < end:
        time.sleep(0.02)


def _take(conn: socket.socket, mine: dict) -> tuple[str, dict | None]:
    """A connection's request: ("run", request), ("stop", None), or
    ("skip", None) for one not taken (another user, nothing said in time,
    another msagpu: told to work alone)."""
    if not allowed(peer_uid(conn)):
        return "skip", None
    conn.settimeout(30.0)  # a client that connects and says nothing is dropped, not waited on
    try:
        request = receive(conn)
    except (OSError, ServerGone, ValueError):
        return "skip", None
    conn.settimeout(None)
    if not isinstance(request, dict):
        return "skip", None
    if request.get("stop"):
        return "stop", None
    if request.get("identity") != mine or not requests.servable(request):
        with contextlib.suppress(OSError):
            send(conn, {"alone": True})  # another msagpu, settings read at start-up differ, or not a call to serve
        return "skip", None
    return "run", request


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


#: The signals a pool's process handles; blocked while it forks a worker,
#: so that none reaches a new worker before it has set its own handlers.
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


def _worker(listener: socket.socket, path: str, mine: dict, workers: int, parent: int, reports: int,
            mask: set) -> None:
    """A pool worker (`_pool`): never returns. SIGUSR2 tells it to end: at
    once while it waits, after its request while it holds one. It runs in a
    process group of its own, so that a terminal's Ctrl-C reaches the pool's
    process alone (which tells its workers to end), not a request in hand.
    It says on ``reports`` when it is ready and, at its end, how many
    requests it answered."""
    answered, code = 0, 0
    state = {"busy": False, "stop": False}

    def on_stop_signal(*_):
        state["stop"] = True
        if not state["busy"]:
            raise _Stop

    try:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGUSR2, on_stop_signal)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        die_with_parent(parent)
        from msa_gpu.backend import set_threads

        set_threads(max(1, (os.cpu_count() or 1) // workers))
        warm_up()
        requests.FILTERS[:] = list(warnings.filters)
        with contextlib.suppress(OSError):
            os.write(reports, f"ready {os.getpid()}\n".encode())
        answered = _answer(listener, mine, on_stop=lambda: (_unlink(path), os.kill(parent, signal.SIGUSR1)),
                           state=state)
    except _Stop:
        pass
    except BaseException:  # noqa: BLE001 - a worker never returns into the parent's code
        import traceback

        code = 1
        with contextlib.suppress(Exception):
            sys.stderr.write(f"msagpu: a server worker failed: {traceback.format_exc()}")
            sys.stderr.flush()
    finally:
        with contextlib.suppress(OSError):
            os.write(reports, f"end {answered} {code}\n".encode())
        os._exit(code)


class _Reports:
    """What the workers say on the pool's pipe (`_worker`): which are ready,
    and each one's end (requests answered, exit code)."""

    def __init__(self, fd: int):
        self.fd, self.pending = fd, b""
        self.ready: set[int] = set()
        self.ends: list[tuple[int, int]] = []
        os.set_blocking(fd, False)

    def read(self) -> None:
        """Take what has arrived, without waiting."""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            if not chunk:
                break
            self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            kind, *rest = line.decode().split()
            if kind == "ready":
                self.ready.add(int(rest[0]))
            elif kind == "end":
                self.ends.append((int(rest[0]), int(rest[1])))


def _await_ready(reports: _Reports, children: set[int], ending: dict, timeout: float = 600.0) -> None:
    """Wait until every worker in ``children`` is warm (`_worker` says so),
    one of them has ended (left to `_pool`'s wait), or the pool is told to
    end."""
    end = time.monotonic() + timeout
    while not ending["stopping"] and not children <= reports.ready and time.monotonic() < end:
        with contextlib.suppress(InterruptedError):
            select.select([reports.fd], [], [], 0.2)
        reports.read()
        if hasattr(os, "waitid") and os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return  # one has ended (not reaped here)


def _pool(path: str, idle: float, ready, workers: int, mine: dict) -> tuple[int, int | None]:
    """``workers`` processes forked before any of them loads the stack (numba's
    OpenMP threads and CUDA do not survive a fork), each warmed up on its own
    and taking requests from the one listening socket: the kernel hands
    each connection to one waiting worker. Each worker's numba kernels take
    its share of the cores. A worker ends after ``idle`` seconds without a
    request of its own. A stop request to any worker (SIGUSR1 here),
    SIGTERM or SIGINT ends them all: this process removes the socket
    (later clients work alone) and tells every worker to end once the
    request it holds is answered; a second SIGTERM or SIGINT kills them at
    once (their clients align alone). A worker killed otherwise (a signal:
    the kernel's OOM killer, a crash, a user's ``kill``) is replaced; the
    client whose request it held aligns alone. Workers that die before
    they are ready, more than twice the pool's size in a row, are not
    replaced (they would only die again). This process only waits. Returns
    the requests answered and the signal (SIGTERM or SIGINT) that ended the
    pool, if one did."""
    listener = _listen(path, idle)
    reports_r, reports_w = os.pipe()
    reports = _Reports(reports_r)
    parent = os.getpid()
    children: set[int] = set()
    ending: dict = {"stopping": False, "signal": None}

    def end_all(signum=None, frame=None):
        if signum in (signal.SIGTERM, signal.SIGINT):
            if ending["signal"] is not None:  # a second one: now
                for pid in list(children):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return
            ending["signal"] = signum
        ending["stopping"] = True
        _unlink(path)
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR2)

    def start() -> None:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                os.close(reports_r)
                _worker(listener, path, mine, workers, parent, reports_w, mask)
            children.add(pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    old = {sig: signal.signal(sig, end_all) for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)}
    unready_deaths, gave_up = 0, None
    try:
        for _ in range(workers):
            start()
        _await_ready(reports, children, ending)
        if ready is not None and not ending["stopping"]:
            ready()
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            children.discard(pid)
            reports.read()
            if ending["stopping"] or not os.WIFSIGNALED(status):
                continue  # told to end, or ended on its own (idle, failed)
            name = signal.Signals(os.WTERMSIG(status)).name
            unready_deaths = 0 if pid in reports.ready else unready_deaths + 1
            if unready_deaths > 2 * workers:
                gave_up = name
                _say(f"msagpu: server worker {pid} was killed ({name}) before it was ready, as were the "
                     f"{unready_deaths - 1} before it; not replaced")
                continue
            _say(f"msagpu: server worker {pid} was killed ({name}); starting another")
            start()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for pid in list(children):  # this process ends abnormally: its workers with it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in list(children):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        listener.close()
        _unlink(path)
        os.close(reports_w)
        reports.read()
        os.close(reports_r)
    if reports.ends and all(code == 1 for _, code in reports.ends):
        raise ServerError("every server worker failed to start (their errors are above)")
    if gave_up is not None and not reports.ends:
        raise ServerError(f"the server's workers were killed ({gave_up}) while starting, again and again")
    return sum(n for n, _ in reports.ends), ending["signal"]


def stop(path: str | None = None, say: bool = True) -> bool:
    """Ask the server at ``path`` to end: True once it has answered, or, where
    its workers are all busy and none takes the request within 1 s, once
    SIGTERM to its process (which ends it the same way) has removed its
    socket. False where none answers, said on standard error unless ``say``
    is false ("msagpu: no server is running at PATH"; ``msagpu serve --stop``
    then exits 1, so that a script can tell)."""
    path = path or socket_path()
    try:
        if path is None or not os.path.exists(path):
            raise FileNotFoundError(path)
        with connect(path, timeout=5.0) as sock:
            send(sock, {"stop": True})
            sock.settimeout(1.0)
            try:
                receive(sock)
            except socket.timeout:
                return _terminate(sock, path)
        return True
    except (OSError, ServerGone) as exc:
        if say:
            where = f"at {path}" if path is not None else "(MSAGPU_SERVER is off; --socket names one)"
            _say(f"msagpu: {exc}" if isinstance(exc, _NoAnswer) else f"msagpu: no server is running {where}")
        return False


class _NoAnswer(TimeoutError):
    """A server that holds the socket but neither answers nor ends."""


def _terminate(sock: socket.socket, path: str, wait: float = 10.0) -> bool:
    """SIGTERM to the process listening at the other end of ``sock`` (this
    user's), and whether its socket is gone within ``wait`` seconds."""
    who = peer(sock)
    if who is None or who[0] <= 0 or who[1] != os.getuid():
        raise _NoAnswer(f"the server at {path} did not answer the stop request")
    os.kill(who[0], signal.SIGTERM)
    end = time.monotonic() + wait
    while os.path.lexists(path):
        if time.monotonic() > end:
            raise _NoAnswer(f"the server at {path} did not end on SIGTERM")
        time.sleep(0.02)
    return True


def start_detached(path: str | None, idle: float, timeout: float = 120.0, workers: int | None = None) -> None:
    """Start a server in its own session and return once it listens."""
    import subprocess

    path = path or socket_path()
    if path is None:
        raise ServerError("MSAGPU_SERVER is off: give --socket a path")
    if os.path.exists(path) and running(path):
        raise ServerError(f"a server is already running at {path} (msagpu serve --stop ends it)")
    proc = subprocess.Popen([sys.executable, "-m", "msa_gpu.serving.server", path, str(idle), str(workers or 0)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise ServerError(f"the server did not start: {proc.stderr.read().decode().strip()[-300:]}")
        if os.path.exists(path) and running(path):
            proc.stderr.close()
            return
        time.sleep(0.1)
    proc.kill()
    raise ServerError(f"the server did not listen at {path} within {timeout:.0f} s")


if __name__ == "__main__":  # start_detached's child: python -m msa_gpu.serving.server PATH IDLE [WORKERS]
    serve(sys.argv[1], float(sys.argv[2]), workers=int(sys.argv[3]) if len(sys.argv) > 3 else None)
