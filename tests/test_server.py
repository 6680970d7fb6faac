"""msagpu serve: a warm local server that the console commands use when it runs."""

import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from msa_gpu.serving import protocol, server

REFS = Path(__file__).resolve().parent.parent / "references"
ENTRY = "import sys; from msa_gpu.frontends.entry import {fn}; sys.argv[0] = {prog!r}; {fn}()"
pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")


def client(prog, *args, sock=None, cwd=None, stdin=None, env=None, umask=-1):
    """A fresh client process, as a workflow's job starts one (``umask``: its own)."""
    fn = prog.replace("-", "_")
    environ = {**os.environ, **(env or {}), "MSAGPU_SERVER": str(sock) if sock else "off"}
    return subprocess.run([sys.executable, "-c", ENTRY.format(fn=fn, prog=prog), *map(str, args)], cwd=cwd,
                          env=environ, capture_output=True, input=stdin, timeout=300, umask=umask)


def serving(folder: Path, *args, delay: float | None = None, session: bool = False):
    """``msagpu serve --socket FOLDER/s.sock ARGS`` started as a user starts
    it (``delay``: the test delay that holds each request; ``session``: in a
    session and process group of its own, as a terminal's job), once it
    listens: the socket and the process."""
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    sock = folder / "s.sock"
    env = {**os.environ, **({"MSAGPU_SERVER_TEST_DELAY": str(delay)} if delay is not None else {})}
    proc = subprocess.Popen([sys.executable, "-m", "msa_gpu", "serve", "--socket", str(sock), *map(str, args)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=session,
                            cwd=folder)  # (its own folder: nothing a request writes by mistake lands in the checkout)
    end = time.monotonic() + 120
    said = b""
    while not (b"listening" in said and said.endswith(b"\n")):  # said once its workers are warm
        assert proc.poll() is None and time.monotonic() < end, said + proc.stderr.read()
        if select.select([proc.stderr], [], [], 0.1)[0]:
            said += os.read(proc.stderr.fileno(), 1)  # (a byte at a time: nothing after the line is taken)
    assert sock.exists() and server.running(str(sock))
    return sock, proc


@pytest.fixture
def running(tmp_path_factory):
    """A server on a socket of its own, started as `msagpu serve` starts it;
    stopped afterwards."""
    path, proc = serving(tmp_path_factory.mktemp("srv"), "--idle-timeout", "300")
    yield path, proc
    if proc.poll() is None:
        server.stop(str(path))
        proc.wait(30)



def _count_align_many(monkeypatch) -> list:
    """The families of each `Aligner.align_many` call that does the work (not
    a gathered request's own parked call), appended to the list returned."""
    from msa_gpu import aligner as aligner_mod

    calls = []
    real = aligner_mod.Aligner.align_many

    def spy(self, families, *args, **kwargs):
        if self.batch is None:  # (a gathered request's own call goes to its batch hook)
            calls.append(len(families))
        return real(self, families, *args, **kwargs)

    monkeypatch.setattr(aligner_mod.Aligner, "align_many", spy)
    return calls

def test_served_output_is_the_in_process_output(running, tmp_path):
    """Same bytes, stdout and exit codes through the server as alone, for each
    front door; a bad input fails that call alone, with the same message."""
    sock, proc = running
    src = REFS / "BB11001.tfa"
    for prog, args in (("msagpu", ["align", src, "-o", "OUT"]), ("msagpu-mafft", ["--quiet", src]),
                       ("msagpu-famsa", [src, "OUT"]), ("msagpu-clustalo", ["-i", src, "--outfmt=clu", "-o", "OUT"])):
        got = {}
        for mode, where in (("served", sock), ("alone", None)):
            folder = tmp_path / f"{prog}-{mode}"
            folder.mkdir()
            run = client(prog, *[a if a != "OUT" else "out.txt" for a in args], sock=where, cwd=folder)
            got[mode] = (run.returncode, run.stdout, (folder / "out.txt").read_bytes() if "OUT" in args else b"")
        assert got["served"] == got["alone"], prog
        assert got["served"][0] == 0 and (got["served"][1] or got["served"][2])
    bad = tmp_path / "bad.fa"
    bad.write_text(">a\nMK1V\n>b\nMKV\n")
    served, alone = client("msagpu", "align", bad, sock=sock), client("msagpu", "align", bad)
    assert served.returncode == alone.returncode == 2 and served.stderr == alone.stderr
    assert client("msagpu-mafft", "--quiet", src, sock=sock).returncode == 0  # the server lives on
    assert proc.poll() is None


def test_stdin_and_concurrent_clients(running, tmp_path):
    sock, _ = running
    src = (REFS / "BB11001.tfa").read_bytes()
    alone = client("msagpu-mafft", "--quiet", "-", stdin=src).stdout
    with ThreadPoolExecutor(6) as pool:
        runs = list(pool.map(lambda _: client("msagpu-mafft", "--quiet", "-", sock=sock, stdin=src), range(6)))
    assert all(r.returncode == 0 and r.stdout == alone for r in runs)
    spelled = client("msagpu-clustalo", "--in=-", sock=sock, stdin=src)  # '--opt=-' reads stdin too
    assert spelled.returncode == 0 and spelled.stdout == client("msagpu-clustalo", "--in=-", stdin=src).stdout


def test_another_msagpu_or_other_settings_run_alone(running):
    """A request from another installation (or with other start-up
    settings, such as CUDA_VISIBLE_DEVICES) is answered 'alone'; a call
    naming a file only its own process can open is never sent."""
    sock, _ = running
    with protocol.connect(str(sock)) as conn:
        protocol.send(conn, {"program": "msagpu", "argv": ["align", "x.fa"], "cwd": "/", "env": {},
                             "identity": {**protocol.identity(), "version": "0.0.0"}})
        assert protocol.receive(conn) == {"alone": True}
    other = client("msagpu-mafft", "--quiet", REFS / "BB11001.tfa", sock=sock, env={"CUDA_VISIBLE_DEVICES": "7"})
    assert other.returncode == 0 and other.stdout  # worked alone
    assert protocol._process_paths(["align", "/dev/stdin"]) and protocol._process_paths(["-o", "/proc/self/fd/1"])
    assert protocol._stdin_input(["--in=-"]) and protocol._stdin_input(["-"]) and not protocol._stdin_input(["a-"])


def test_the_socket_is_this_users_alone(running):
    sock, _ = running
    info = os.stat(sock)
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    assert server.allowed(os.getuid()) and not server.allowed(os.getuid() + 1)  # peers' credentials


def test_a_second_server_on_the_same_socket_is_refused(running, tmp_path):
    """One server a socket; a folder open to others, or a path that is not a
    socket, is refused and left as it is."""
    sock, _ = running
    with pytest.raises(server.ServerError, match="already running"):
        server.serve(str(sock))
    (tmp_path / "results.fa").write_text(">a\nMK\n")
    os.chmod(tmp_path, 0o700)
    with pytest.raises(server.ServerError, match="not a socket"):
        server.serve(str(tmp_path / "results.fa"))
    assert (tmp_path / "results.fa").read_text() == ">a\nMK\n"
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o755)
    with pytest.raises(server.ServerError, match="open to other users"):
        server.serve(str(open_folder / "s.sock"))
    assert not protocol.private(str(open_folder / "s.sock"))


def test_a_killed_server_leaves_the_client_to_work_alone(tmp_path):
    """Killed mid-request (a test delay holds the request), the client says
    so and aligns itself: the output whole, the exit code 0; the stale
    socket left behind is used by nobody and replaced by the next server."""
    sock, proc = serving(tmp_path / "srv", delay=30)
    job = subprocess.Popen([sys.executable, "-c", ENTRY.format(fn="msagpu", prog="msagpu"), "align",
                            str(REFS / "BB11001.tfa"), "-o", str(tmp_path / "out.fa")],
                           env={**os.environ, "MSAGPU_SERVER": str(sock)}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    time.sleep(3)  # the request is in the server's hands
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    out, err = job.communicate(timeout=300)
    assert job.returncode == 0 and b"stopped before answering; aligning here instead" in err
    alone = client("msagpu", "align", REFS / "BB11001.tfa", "-o", tmp_path / "alone.fa")
    assert alone.returncode == 0 and (tmp_path / "out.fa").read_bytes() == (tmp_path / "alone.fa").read_bytes()
    assert sock.exists() and not server.running(str(sock))  # stale
    stale = client("msagpu-mafft", "--quiet", REFS / "BB11001.tfa", sock=sock)
    assert stale.returncode == 0 and stale.stderr == b""  # nobody answers: it works alone, quietly
    server._prepare(str(sock))  # the next server replaces the stale socket
    assert not sock.exists()


def test_stop_and_idle_timeout(tmp_path):
    folder = tmp_path / "srv"
    folder.mkdir(mode=0o700)
    sock = folder / "s.sock"
    run = subprocess.run([sys.executable, "-m", "msa_gpu", "serve", "--socket", str(sock), "--idle-timeout", "1"],
                         capture_output=True, timeout=300)
    assert run.returncode == 0 and b"listening" in run.stderr and not sock.exists()


def test_stop_with_no_server_says_so(tmp_path):
    """``--stop`` where no server runs exits 1 (a script can tell that
    nothing was stopped) with one line that says so, not silently."""
    sock = tmp_path / "s.sock"
    run = subprocess.run([sys.executable, "-m", "msa_gpu", "serve", "--socket", str(sock), "--stop"],
                         capture_output=True)
    assert run.returncode == 1 and run.stderr.decode() == f"msagpu: no server is running at {sock}\n"


def test_calls_that_are_not_served_and_the_default_socket(monkeypatch, tmp_path):
    monkeypatch.setenv("MSAGPU_SERVER", str(tmp_path / "none.sock"))
    assert protocol.served("msagpu", ["align", "x.fa"]) is None  # no socket: alone
    monkeypatch.setenv("MSAGPU_SERVER", "off")
    assert protocol.socket_path() is None
    monkeypatch.delenv("MSAGPU_SERVER")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert protocol.socket_path() == str(tmp_path / "msagpu" / "server.sock")
    monkeypatch.setenv("MSAGPU_SERVER", str(tmp_path / "s.sock"))
    (tmp_path / "s.sock").write_text("")  # exists, but nobody listens
    for program, argv in (("msagpu", ["score", "a", "b"]), ("msagpu", ["align", "--help"]),
                          ("msagpu-mafft", ["--version"]), ("msagpu", ["serve"]), ("msagpu-mafft", ["x.fa"])):
        assert protocol.served(program, argv) is None
    # runs spread over GPUs or Dask workers never reach a server, even one that answers
    monkeypatch.setattr(protocol, "private", lambda path: True)
    monkeypatch.setattr(protocol, "connect", lambda *a, **k: pytest.fail("connected"))
    for argv in (["align", "x.fa", "--gpus", "2"], ["align", "x.fa", "--gpus=all"], ["align", "--dask", "local", "x"]):
        assert protocol.served("msagpu", argv) is None


def test_the_client_path_imports_only_the_standard_library():
    code = ("import sys; import msa_gpu.frontends.entry; "
            "print(sorted(m for m in ('numpy', 'numba', 'scipy', 'Bio', 'typer', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def _children(pid: int) -> list[str]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    out = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            out.append(stat_file.parent.name)
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_workers_answer_requests_at_once_and_stop_together(tmp_path):
    """Two workers: two requests held 6 s each (the test delay) are answered
    together, not one after the other; --stop ends the server and both its
    workers."""
    sock, proc = serving(tmp_path / "srv", "--workers", "2", delay=6)
    client("msagpu-mafft", "--quiet", REFS / "BB11001.tfa", sock=sock)  # both workers warm (one answers this)
    want = client("msagpu-mafft", "--quiet", REFS / "BB11001.tfa").stdout
    clock = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: client("msagpu-mafft", "--quiet", REFS / "BB11001.tfa", sock=sock), range(2)))
    took = time.monotonic() - clock
    assert all(r.returncode == 0 and r.stdout == want for r in runs)
    assert took < 10.5, took  # one after the other would take more than 12 s
    workers = _children(proc.pid)
    assert len(workers) == 2
    assert server.stop(str(sock))
    assert proc.wait(30) == 0 and not sock.exists()
    time.sleep(0.5)
    assert all(not Path(f"/proc/{w}").exists() or "zombie" in Path(f"/proc/{w}/status").read_text()
               for w in workers)


@pytest.mark.skipif(not hasattr(signal, "SIGUSR2"), reason="POSIX signals")
def test_stop_lets_the_request_in_hand_finish(tmp_path, monkeypatch):
    """--stop while the one worker holds a request (held 6 s by the test
    delay): --stop returns before that request is answered (no worker is
    free to take the stop request, so SIGTERM ends the server the same
    way), the socket goes at once, the request is answered whole by the
    server (not cut off, not aligned alone), and the server ends after it."""
    log = tmp_path / "batches.txt"
    monkeypatch.setenv("MSAGPU_SERVER_TEST_LOG", str(log))
    sock, proc = serving(tmp_path / "srv", "--workers", "1")
    src = REFS / "BB11001.tfa"
    assert client("msagpu-mafft", "--quiet", src, sock=sock).returncode == 0  # the worker warm
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(client, "msagpu", "align", src, "-o", tmp_path / "out.fa", sock=sock,
                          env={"MSAGPU_SERVER_TEST_DELAY": "6"})
        time.sleep(1.5)  # the request is in the worker's hands, for 4.5 s more
        clock = time.monotonic()
        assert server.stop(str(sock))
        assert time.monotonic() - clock < 3 and not sock.exists() and not job.done()
        run = job.result()
    assert run.returncode == 0 and b"aligning here instead" not in run.stderr
    assert log.read_text().split() == ["1", "1"]  # both answered by the server
    alone = client("msagpu", "align", src, "-o", tmp_path / "alone.fa")
    assert (tmp_path / "out.fa").read_bytes() == (tmp_path / "alone.fa").read_bytes()
    assert proc.wait(30) == 0


def _server_pid(sock: Path) -> int:
    """The process that listens at ``sock`` (its peer's credentials)."""
    import struct

    with protocol.connect(str(sock), timeout=5) as conn:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[0]


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def _workers(pid: int, n: int, timeout: float = 30) -> list[str]:
    """The ``n`` worker processes of the server ``pid``, once it has them."""
    end = time.monotonic() + timeout
    while len(found := [w for w in _children(pid) if not _gone(int(w))]) != n:
        assert time.monotonic() < end, found
        time.sleep(0.05)
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_sigterm_ends_a_detached_server_and_removes_its_socket(tmp_path):
    """SIGTERM to a server started with --detach (no command line around
    it) ends it and its workers as --stop does: exit 0, the socket gone."""
    folder = tmp_path / "srv"
    folder.mkdir(mode=0o700)
    sock = folder / "s.sock"
    server.start_detached(str(sock), 300, workers=2)
    pid = _server_pid(sock)
    workers = _workers(pid, 2)
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + 30
    while not _gone(pid):
        assert time.monotonic() < end
        time.sleep(0.05)
    assert not sock.exists() and not server.running(str(sock))
    time.sleep(0.5)
    assert all(_gone(int(w)) for w in workers)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_ctrl_c_stops_a_foreground_server_quietly(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) on ``msagpu serve``:
    one line that says it stopped, no error, exit 130, the socket and the
    workers gone."""
    sock, proc = serving(tmp_path / "srv", "--workers", "2", session=True)
    workers = _workers(proc.pid, 2)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.decode().splitlines() == ["msagpu: server stopped (interrupted)"]  # (after "listening at")
    assert not sock.exists()
    time.sleep(0.5)
    assert all(_gone(int(w)) for w in workers)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_killed_worker_is_replaced(tmp_path):
    """Both workers killed (SIGKILL, one after the other): each is replaced,
    and the server goes on answering requests."""
    sock, proc = serving(tmp_path / "srv", "--workers", "2")
    try:
        src = REFS / "BB11001.tfa"
        first = _workers(proc.pid, 2)
        for pid in first:
            os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.3)
        assert proc.poll() is None
        assert set(_workers(proc.pid, 2)).isdisjoint(first)
        with protocol.connect(str(sock), timeout=60) as conn:  # answered by the server, not by a client alone
            protocol.send(conn, {"program": "msagpu-mafft", "argv": ["--quiet", str(src)], "cwd": str(tmp_path),
                                 "env": {}, "umask": 0o022, "identity": protocol.identity(), "stdin": None})
            answer = protocol.receive(conn)
        assert answer["rc"] == 0 and protocol.decode(answer["stdout"]).startswith(b">")
    finally:
        server.stop(str(sock))
    assert proc.wait(30) == 0
    assert proc.stderr.read().decode().count("was killed (SIGKILL); starting another") == 2


def _request(cwd: Path, *argv: str, program: str = "msagpu") -> dict:
    return {"program": program, "argv": ["align", *argv], "cwd": str(cwd), "env": {}, "umask": 0o022, "stdin": None}


def test_requests_taken_together_are_aligned_in_one_batch(refs, tmp_path, monkeypatch):
    """Issue 45, capability 3: requests a worker finds queued run as one
    batch: the four good ones' families (a quiet one among them: the same
    settings) go through one `align_many` call, each request writes its own
    output, byte for byte the in-process one, and gets its own messages; a
    bad input fails its own call alone, with its own message and code."""
    from msa_gpu.serving import gather


    # kernels compiled first (a cold machine's first run says so on stderr; the runs compared here are warm)
    assert server.run_request(_request(tmp_path, str(refs / "BB11001.tfa"), "-o", "warm.fa", "--backend", "cpu",
                                       "--mode", "accurate"))["rc"] == 0
    calls = _count_align_many(monkeypatch)
    names = ["BB11001", "BB12006", "BB20001"]
    (tmp_path / "bad.fa").write_text(">x\nMKV1L\n")
    requests = [_request(tmp_path, str(refs / f"{n}.tfa"), "-o", f"{n}.fa", "--backend", "cpu") for n in names]
    requests.insert(1, _request(tmp_path, "bad.fa", "-o", "bad.out", "--backend", "cpu"))
    requests.append(_request(tmp_path, str(refs / "BB11001.tfa"), "-o", "quiet.fa", "--backend", "cpu", "-q"))
    answers = gather.run_together(requests, server.run_request)
    assert calls == [4]
    assert [a["rc"] for a in answers] == [0, 2, 0, 0, 0]
    assert protocol.decode(answers[1]["stderr"]) == (b"msagpu: error: bad.fa: sequence 'x': invalid protein character "
                                                     b"'1' at position 4\n")
    assert not (tmp_path / "bad.out").exists()
    calls.clear()
    for n, a in zip(names, [answers[0], answers[2], answers[3]]):
        alone = server.run_request(_request(tmp_path, str(refs / f"{n}.tfa"), "-o", f"{n}-alone.fa", "--backend",
                                            "cpu"))
        assert alone["rc"] == 0 and (tmp_path / f"{n}.fa").read_bytes() == (tmp_path / f"{n}-alone.fa").read_bytes()
        said, said_alone = (protocol.decode(x["stderr"]).decode().splitlines() for x in (a, alone))
        assert said[0] == said_alone[0] and said[0].startswith("msagpu: recipe:")  # its own recipe line
        # and its own other lines (a memory plan where it is large), stages aside: said as they took long enough
        assert [x for x in said if " done in " not in x] == [x for x in said_alone if " done in " not in x]
    assert calls == [1, 1, 1]  # alone, each its own call
    assert (tmp_path / "quiet.fa").read_bytes() == (tmp_path / "BB11001.fa").read_bytes()
    assert protocol.decode(answers[4]["stderr"]) == b""


def test_a_queued_batch_through_the_socket(tmp_path, monkeypatch):
    """Clients that connect while the one worker holds a request (held 3 s by
    the test delay) are taken together by it next (`server._queued`), and
    each gets its own output, the in-process bytes."""
    log = tmp_path / "batches.txt"
    monkeypatch.setenv("MSAGPU_SERVER_TEST_LOG", str(log))
    sock, proc = serving(tmp_path / "srv", "--workers", "1", "--idle-timeout", "120", delay=3)
    try:
        src = REFS / "BB11001.tfa"
        alone = client("msagpu", "align", src, "-o", tmp_path / "alone.fa")
        assert alone.returncode == 0

        def one(k: int):
            time.sleep(0 if k == 0 else 1.0)  # the first is taken alone; the others queue behind it
            return client("msagpu", "align", src, "-o", tmp_path / f"out{k}.fa", sock=sock)

        with ThreadPoolExecutor(4) as pool:
            runs = list(pool.map(one, range(4)))
        assert [r.returncode for r in runs] == [0] * 4, [r.stderr for r in runs]
        for k in range(4):
            assert (tmp_path / f"out{k}.fa").read_bytes() == (tmp_path / "alone.fa").read_bytes()
        assert sorted(int(x) for x in log.read_text().split()) == [1, 3]
    finally:
        server.stop(str(sock))
        proc.wait(30)


def test_a_silent_client_does_not_hold_the_requests_queued_with_it(tmp_path):
    """A connection that says nothing, queued before a real request behind a
    busy worker, is waited on after that request's batch, not before it: the
    request is answered while the silent connection is still open (the server
    drops a silent one only after 30 s)."""
    import socket as socket_mod

    sock, proc = serving(tmp_path / "srv", "--workers", "1", "--idle-timeout", "120", delay=2)
    silent = socket_mod.socket(socket_mod.AF_UNIX, socket_mod.SOCK_STREAM)
    try:
        src = REFS / "BB11001.tfa"
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(client, "msagpu", "align", src, "-o", tmp_path / "first.fa", sock=sock)
            time.sleep(0.5)  # the worker holds the first request (the test delay)
            silent.connect(str(sock))
            time.sleep(0.5)
            second = client("msagpu", "align", src, "-o", tmp_path / "second.fa", sock=sock)
            assert first.result().returncode == 0 and second.returncode == 0, second.stderr
        silent.setblocking(False)
        with pytest.raises(BlockingIOError):  # not yet dropped: no end of stream
            silent.recv(1)
        assert (tmp_path / "second.fa").read_bytes() == (tmp_path / "first.fa").read_bytes()
    finally:
        silent.close()
        server.stop(str(sock))
        proc.wait(60)


def test_a_gathered_batch_keeps_each_requests_own_failures_and_warnings(refs, tmp_path, monkeypatch):
    """What goes wrong for one request stays its own when requests are
    gathered: a backend that cannot start gives each request the exit code
    it gets alone, and the batch returns (it does not wait on parked
    requests); a request whose folder is gone fails alone; a warning raised
    while the batch is aligned reaches each request's own stderr."""
    from msa_gpu.consistency import probabilistic
    from msa_gpu.serving import gather

    src = str(refs / "BB11001.tfa")
    gpu = [_request(tmp_path, src, "-o", f"g{k}.fa", "--backend", "gpu", "-q") for k in range(2)]
    alone = server.run_request(_request(tmp_path, src, "-o", "g.fa", "--backend", "gpu", "-q"))
    assert [a["rc"] for a in gather.run_together(gpu, server.run_request)] == [alone["rc"]] * 2

    gone = _request(tmp_path / "gone", src, "-o", "x.fa", "--backend", "cpu")
    fine = _request(tmp_path, src, "-o", "fine.fa", "--backend", "cpu")
    answers = gather.run_together([gone, fine], server.run_request)
    assert answers[0]["rc"] == 1 and b"server error" in protocol.decode(answers[0]["stderr"])
    assert answers[1]["rc"] == 0 and (tmp_path / "fine.fa").exists()

    monkeypatch.setattr(probabilistic, "library_plan", lambda groups, threads=1, nucleotide=False: probabilistic.LibraryPlan(1, 0.0, 0.0))
    two = [_request(tmp_path, src, "-o", f"w{k}.fa", "--backend", "cpu", "--mode", "accurate") for k in range(2)]
    for a in gather.run_together(two, server.run_request):
        assert a["rc"] == 0 and b"more than its memory plan" in protocol.decode(a["stderr"])


def _said(stderr: bytes) -> list[str]:
    """Standard error's lines, the stages' times aside (said as they took long enough)."""
    return [x for x in stderr.decode().splitlines() if " done in " not in x]


def _connections(sock: Path) -> tuple[int, int]:
    """Connections made to ``sock``: those a worker has taken, and all
    (taken or queued), as Linux's /proc/net/unix lists them."""
    lines = [line.split() for line in Path("/proc/net/unix").read_text().splitlines()[1:]]
    mine = [f for f in lines if f[-1] == str(sock) and f[3] != "00010000"]  # (the listening socket aside)
    return sum(1 for f in mine if f[6] != "0"), len(mine)  # (one queued has no inode yet)


def _until(condition, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end
        time.sleep(0.02)


@pytest.mark.skipif(not Path("/proc/net/unix").exists(), reason="needs Linux's /proc")
def test_different_clients_served_together_each_get_their_own_answer(tmp_path, monkeypatch):
    """Issue 56: clients with different requests, queued behind the one busy
    worker, are taken as one batch, and each gets exactly what it gets
    alone: its own exit code (a bad input: 2), standard output, standard
    error (its own messages), and files written with the permissions its own
    umask gives (022 and 077)."""
    log = tmp_path / "batches.txt"
    monkeypatch.setenv("MSAGPU_SERVER_TEST_LOG", str(log))
    sock, proc = serving(tmp_path / "srv", "--workers", "1")
    (tmp_path / "bad.fa").write_text(">a\nMK1V\n>b\nMKV\n")
    calls = [  # program, arguments, standard input, umask
        ("msagpu", ["align", tmp_path / "bad.fa", "-o", "bad.out"], None, 0o022),
        ("msagpu-clustalo", ["-i", "-", "-v", "--outfmt=clu"], (REFS / "BB20001.tfa").read_bytes(), 0o022),
        ("msagpu", ["align", REFS / "BB11001.tfa", "-o", "out.fa"], None, 0o022),
        ("msagpu-mafft", ["--op", "0.3", "--treeout", "in.fa"], None, 0o077),  # its tree: in.fa.tree
    ]

    def run(k: int, where):
        folder = tmp_path / f"{'served' if where else 'alone'}{k}"
        folder.mkdir()
        (folder / "in.fa").write_bytes((REFS / "BB12006.tfa").read_bytes())
        prog, args, stdin, umask = calls[k]
        done = client(prog, *args, sock=where, cwd=folder, stdin=stdin, umask=umask)
        files = {f.name: (f.read_bytes(), stat.S_IMODE(f.stat().st_mode)) for f in folder.iterdir()}
        return done.returncode, done.stdout, _said(done.stderr), files

    hold = tmp_path / "hold"
    hold.touch()
    try:
        with ThreadPoolExecutor(2 * len(calls) + 1) as pool:
            # one request holds the worker while the others queue behind it (and the same calls run alone)
            alone = [pool.submit(run, k, None) for k in range(len(calls))]
            holder = pool.submit(client, "msagpu-mafft", "--quiet", REFS / "BB11001.tfa", sock=sock,
                                 env={"MSAGPU_SERVER_TEST_HOLD": str(hold)})
            _until(lambda: _connections(sock)[0] == 1)  # in the worker's hands
            served = [pool.submit(run, k, sock) for k in range(len(calls))]
            _until(lambda: _connections(sock)[1] == 1 + len(calls))  # the others queued behind it
            hold.unlink()
            served, alone = [f.result() for f in served], [f.result() for f in alone]
            assert holder.result().returncode == 0
        # the holder's batch (with any request that arrived inside its gathering window: under load, some
        # did), then the rest as one batch: at least three different clients were served together
        sizes = [int(x) for x in log.read_text().split()]
        assert len(sizes) <= 2 and sum(sizes) == 1 + len(calls) and max(sizes) >= 3, sizes
        assert [a[0] for a in alone] == [2, 0, 0, 0] and len({repr(a) for a in alone}) == len(calls)
        modes = [mode for a in alone for _, mode in a[3].values()]
        assert len(set(modes)) == 2  # the two umasks give different permissions
        for k, (got, want) in enumerate(zip(served, alone)):
            assert got == want, calls[k]
    finally:
        server.stop(str(sock))
        proc.wait(30)


def _dna_family(path: Path, n: int = 5, length: int = 120, seed: int = 5) -> None:
    """``n`` related DNA sequences (a random root's copies, each with 25
    substitutions, deletions and insertions) written to ``path``."""
    import random

    rng = random.Random(seed)
    root = "".join(rng.choice("ACGT") for _ in range(length))
    with open(path, "w") as fh:
        for k in range(n):
            s = list(root)
            for _ in range(25):
                i, op = rng.randrange(len(s)), rng.random()
                if op < 0.6:
                    s[i] = rng.choice("ACGT")
                elif op < 0.8:
                    del s[i]
                else:
                    s.insert(i, rng.choice("ACGT"))
            fh.write(f">s{k}\n{''.join(s)}\n")


def test_requests_gathered_with_different_settings_each_align_with_their_own(tmp_path, monkeypatch):
    """Issue 56: requests with different settings (mode, gap opening and
    extension, refinement rounds, output format) gathered into one batch: each one's answer is
    the one it gets alone, byte for byte; those whose settings are equal share
    one `align_many` call."""
    from msa_gpu.serving import gather

    _dna_family(tmp_path / "dna.fa")
    settings = [[], ["--localpair"], ["--op", "3"], ["--op", "0.3"], ["--localpair", "--maxiterate", "2"],
                ["--ep", "0.5"], ["--clustalout"], ["--op", "3"]]

    def request(k: int) -> dict:
        return {"program": "msagpu-mafft", "argv": ["--quiet", *settings[k], "dna.fa"], "cwd": str(tmp_path),
                "env": {}, "umask": 0o022, "stdin": None}

    def said(answer: dict) -> tuple:
        return answer["rc"], protocol.decode(answer["stdout"]).decode(), protocol.decode(answer["stderr"]).decode()

    alone = [said(server.run_request(request(k))) for k in range(len(settings))]
    assert all(a[0] == 0 for a in alone)
    assert len({a[1] for a in alone}) == len(settings) - 1  # each setting changes the output (the last repeats)

    calls = _count_align_many(monkeypatch)
    together = gather.run_together([request(k) for k in range(len(settings))], server.run_request)
    for k, (got, want) in enumerate(zip(map(said, together), alone)):
        assert got == want, settings[k]
    assert max(calls) > 1  # gathered: equal settings in one call


def test_a_served_request_swaps_no_process_state(refs, tmp_path, monkeypatch):
    """A request runs as a `Job` for its client's streams, folder,
    environment and umask, handed to the runner: while it writes its
    output, this process's standard streams, arguments, folder, environment
    and umask are still the server's own; its relative paths are found in
    the client's folder, its files take the client's umask, its output and
    messages come back in its answer."""
    from msa_gpu.frontends import writer

    (tmp_path / "in.fa").write_bytes((refs / "BB11001.tfa").read_bytes())
    home = (sys.stdin, sys.stdout, sys.stderr, list(sys.argv), os.getcwd(), dict(os.environ))
    seen = []
    real = writer.write_output

    def spy(*args, **kwargs):
        umask = os.umask(0o022)
        os.umask(umask)
        seen.append((sys.stdin, sys.stdout, sys.stderr, list(sys.argv), os.getcwd(), dict(os.environ), umask))
        return real(*args, **kwargs)

    monkeypatch.setattr(writer, "write_output", spy)
    umask = os.umask(0o022)
    os.umask(umask)
    env = {"MSAGPU_SERVER_TEST_MARK": "client"}
    for program, argv in (("msagpu", ["align", "in.fa", "-o", "out.fa", "--backend", "cpu", "-q"]),
                          ("msagpu-mafft", ["--quiet", "in.fa"]), ("msagpu-famsa", ["in.fa", "famsa.fa"])):
        answer = server.run_request({"program": program, "argv": argv, "cwd": str(tmp_path), "env": env,
                                     "umask": 0o077, "stdin": None})
        assert answer["rc"] == 0, protocol.decode(answer["stderr"])
    assert len(seen) == 3 and all(s == (*home, umask) for s in seen)
    assert protocol.decode(answer["stdout"]) == b""  # (famsa wrote its file)
    for name in ("out.fa", "famsa.fa"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600  # the client's umask, not the server's
    assert not Path("out.fa").exists() and not Path("famsa.fa").exists()


def test_the_server_assigns_no_process_state():
    """Nothing in the server's request path assigns this process's standard
    streams, arguments or environment, or changes its folder; the umask is
    set only around the socket's bind."""
    import inspect
    import re

    from msa_gpu.serving import requests

    for module in (server, requests):
        source = inspect.getsource(module)
        assert not re.search(r"sys\.(stdin|stdout|stderr|argv)(\[[^]]*\])?\s*=(?!=)", source), module.__name__
        assert not re.search(r"os\.(chdir|putenv|unsetenv)\(|os\.environ(\[[^]]*\]\s*=|\.(update|pop|clear)\()",
                             source), module.__name__
    assert inspect.getsource(server).count("os.umask(") == 2 and "os.umask(" in inspect.getsource(server._listen)
    assert "os.umask(" not in inspect.getsource(requests)


def _alone_and_served(tmp_path: Path, make, *argv) -> tuple:
    """``msagpu ARGV`` run alone (a fresh process in a folder made by
    ``make(folder)``) and served (`run_request` in this process, whose own
    folder is another, for a folder made alike): each run's exit code,
    standard output, standard error (timings and stage lines aside) and the
    files in its folder afterwards."""
    import re

    def said(err: bytes) -> bytes:
        lines = [line for line in err.split(b"\n") if b" done in " not in line]
        return re.sub(rb"[0-9.]+ s\b", b"T s", b"\n".join(lines))

    def files(folder: Path) -> dict:
        return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}

    runs = []
    for mode in ("alone", "served"):
        folder = tmp_path / f"{mode}-{'-'.join(argv)[:60].replace('/', '_')}"
        folder.mkdir()
        make(folder)
        if mode == "alone":
            run = client("msagpu", *argv, cwd=folder)
            runs.append((run.returncode, run.stdout, said(run.stderr), files(folder)))
        else:
            assert Path.cwd() != folder
            answer = server.run_request({"program": "msagpu", "argv": list(argv), "cwd": str(folder), "env": {},
                                         "umask": 0o022, "stdin": None})
            runs.append((answer["rc"], protocol.decode(answer["stdout"]), said(protocol.decode(answer["stderr"])),
                         files(folder)))
    return tuple(runs)


def test_msagpu_align_is_served_as_a_job_with_its_folders_and_lists_found_in_the_clients_folder(refs, tmp_path):
    """``msagpu align`` is a front door of `protocol.JOBS`: its command line
    parsed into a `Job` by ``job_of`` (no context variable hands the typer
    command its caller), a folder or a list of inputs expanded in the
    client's folder, not the server's. Such a request is served (not
    answered 'alone'), and writes the files, output and messages of a run
    alone, errors included."""
    from msa_gpu.frontends import job as jobs
    from msa_gpu.serving import requests

    def make(folder: Path) -> None:
        (folder / "fam").mkdir()
        for name in ("BB11001", "BB12006"):
            (folder / "fam" / f"{name}.fa").write_bytes((refs / f"{name}.tfa").read_bytes())
        (folder / "fam" / "BB11001.ref.fa").write_bytes((refs / "BB11001.tfa").read_bytes())
        (folder / "in.list").write_text("fam/BB12006.fa\n# a comment\nfam/BB11001.fa\n")

    assert "msagpu" in protocol.JOBS and not hasattr(jobs, "calling") and not hasattr(requests, "_command")
    runs = {}
    for argv in (("align", "fam", "--outdir", "out", "--backend", "cpu", "--mode", "fast"),
                 ("align", "-i", "./in.list", "--outdir", "out", "--backend", "cpu", "--mode", "fast", "--explain"),
                 ("align", "fam", "-o", "one.fa"),  # a folder needs --outdir: said after its skipped references
                 ("align", "missing.list", "--outdir", "out")):
        request = {"program": "msagpu", "argv": list(argv), "cwd": str(tmp_path)}
        assert requests.servable(request), argv
        alone, served = _alone_and_served(tmp_path, make, *argv)
        assert served == alone, argv
        runs.setdefault(argv[1], served)
    rc, _, said, files = runs["fam"]
    assert rc == 0 and {"out/BB11001.fa", "out/BB12006.fa"} <= set(files) and "out/BB11001.ref.fa" not in files
    assert said.startswith(b"msagpu: fam: skipped 1 reference alignment (*.ref.fa)\n")
    assert runs["-i"][0] == 0 and {"out/BB11001.fa", "out/BB12006.fa"} <= set(runs["-i"][3])
    assert runs["missing.list"][2] == b"msagpu: error: cannot read missing.list: No such file or directory\n"


def test_msagpu_align_usage_errors_and_msagpu_mafft_served_as_alone(refs, tmp_path):
    """A command line the typer command refuses is said as typer says it
    (usage, exit 2); ``-qv`` is quiet by the command's own parse; ``msagpu
    mafft ARGS`` is ``msagpu-mafft`` with the arguments its command hands on
    (click drops ``--``); ``msagpu mafft`` alone (MAFFT's help) and
    ``msagpu`` commands other than ``align`` and ``mafft`` are not served."""
    from msa_gpu.serving import requests

    def make(folder: Path) -> None:
        (folder / "in.fa").write_bytes((refs / "BB11001.tfa").read_bytes())
        (folder / "gapped.fa").write_text(">a\nMK-VLA\n>b\nMKVLLA\n>c\nMKVKLA\n")

    for argv in (("align", "in.fa", "--tree", "bogus"), ("align", "in.fa", "--no-such-option"),
                 ("align", "in.fa", "--threads", "0"), ("align", "-qv", "gapped.fa", "--backend", "cpu"),
                 ("align", "gapped.fa", "--backend", "cpu", "--mode", "fast"),
                 ("mafft", "--quiet", "--", "in.fa"), ("mafft", "--bogus", "in.fa")):
        alone, served = _alone_and_served(tmp_path, make, *argv)
        assert served == alone, argv
        if "bogus" in argv[-1] or "no-such" in argv[-1]:
            assert served[0] == 2 and served[2].startswith(b"Usage: msagpu align [OPTIONS]"), served
    assert served[0] == 2 and served[2].startswith(b"msagpu-mafft: error: MAFFT option --bogus")
    for argv in (["mafft"], ["score", "a", "b"], []):
        assert not requests.servable({"program": "msagpu", "argv": argv})
    assert protocol.served("msagpu", ["mafft"]) is None
    # quiet as the command parses it: -qv is quiet, an output named -q is not
    assert requests.quiet("msagpu", ["align", "-qv", "in.fa"]) and requests.quiet("msagpu", ["align", "--quiet", "x"])
    assert not requests.quiet("msagpu", ["align", "in.fa", "-o", "-q"])
    assert not requests.quiet("msagpu", ["align", "in.fa", "--tree", "bogus", "-q"])  # (refused: said anyway)


def test_an_out_of_memory_exit_says_the_plan_served_as_alone(refs, tmp_path, monkeypatch):
    """``msagpu align`` out of memory says its memory plan, served as
    alone; the other front doors' exits do not (as before)."""
    from typer.testing import CliRunner

    from msa_gpu.frontends import runner
    from msa_gpu.frontends.msagpu import app

    def out_of_memory(job, need=None, caller=None):
        if need is not None:
            need["plan"] = "memory plan: about 9 GB"
        raise MemoryError("cannot allocate")

    monkeypatch.setattr(runner, "run", out_of_memory)
    (tmp_path / "in.fa").write_bytes((refs / "BB11001.tfa").read_bytes())
    said = b"msagpu: error: out of memory (cannot allocate); memory plan: about 9 GB\n"
    for program, argv, want in (("msagpu", ["align", "in.fa", "-q"], said),
                                ("msagpu-mafft", ["--quiet", "in.fa"], b"msagpu-mafft: error: out of memory "
                                                                      b"(cannot allocate)\n")):
        answer = server.run_request({"program": program, "argv": argv, "cwd": str(tmp_path), "env": {},
                                     "umask": 0o022, "stdin": None})
        assert (answer["rc"], protocol.decode(answer["stderr"])) == (4, want), program
    alone = CliRunner().invoke(app, ["align", str(tmp_path / "in.fa"), "-q"])
    assert alone.exit_code == 4 and alone.stderr.encode() == said
