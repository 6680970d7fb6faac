"""The aligners the harness can run: msagpu and FAMSA in-process, the rest as
subprocesses.

Probing (in the parent process) turns an aligner name into an `AlignerInfo`:
whether it is available, its version, and how it runs. A worker process then
builds a runner from that info with `make_runner`, calls `Runner.setup` once
and `Runner.align` per family.

Subprocess peers get a temporary FASTA whose titles are ``s0``, ``s1``, ...
(so no peer can mangle a name), and their output is mapped back to input
order by those titles. They are started through a tiny launcher process that
forks, execs the peer and reaps it with ``os.wait4``: the wall time runs from
fork to reaping, and the peak memory is that call's ``ru_maxrss`` (on Linux
the largest RSS of the peer and of the descendants it waited for, e.g. the
binaries MAFFT's shell script runs; about 6 MB of it is the launcher's
memory, inherited at fork). In-process aligners report the worker's peak RSS
while aligning, read as ``VmHWM`` after resetting the high-water mark through
``/proc/self/clear_refs``; it includes the interpreter and libraries, whose
share is recorded as the RSS just before aligning.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Every aligner the harness knows, in the order the report lists them.
KNOWN = ("msagpu", "famsa", "kalign", "mafft", "clustalo", "clustalw", "muscle", "probcons")

MAFFT_MODES = {
    "auto": ["--auto"],
    "fftns2": ["--retree", "2", "--maxiterate", "0"],
    "linsi": ["--localpair", "--maxiterate", "1000"],
    "ginsi": ["--globalpair", "--maxiterate", "1000"],
}

#: Extra seconds the parent grants past ``timeout`` before killing a worker
#: (in-process aligners cannot stop themselves; subprocess runners can).
GRACE_IN_PROCESS = 5.0
GRACE_SUBPROCESS = 60.0


class AlignerFailure(RuntimeError):
    """An aligner failed on one family (bad exit, no or unusable output)."""


class AlignerTimeout(AlignerFailure):
    """An aligner ran past the per-family time limit."""


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every aligner of one benchmark run.

    Attributes
    ----------
    threads : int
        Threads per family for aligners that take a thread count.
    backend : str
        msagpu backend: ``auto``, ``cpu`` or ``gpu``.
    mafft_mode : str
        One of `MAFFT_MODES`.
    timeout : float
        Per-family limit in seconds.
    peer_prefix : str or None
        A folder into which Debian packages were unpacked with ``dpkg -x``.
    """

    threads: int = 1
    backend: str = "auto"
    mafft_mode: str = "auto"
    timeout: float = 600.0
    peer_prefix: str | None = None


@dataclass
class AlignerInfo:
    """What the parent learned about one aligner.

    Attributes
    ----------
    name : str
        Aligner name as given on the command line.
    available : bool
        False when not installed (then ``reason`` says why).
    in_process : bool
        Runs inside the worker process (msagpu, FAMSA) rather than as a child.
    version : str
        Version as reported by the tool ("" when unknown).
    how : str
        One line on how it runs: the command template or the API call.
    threads : int
        Threads it is told to use.
    argv : list of str
        Subprocess command template with ``{input}``, ``{output}``, ``{threads}``.
    stdout_is_output : bool
        The tool writes the alignment to stdout (MAFFT).
    env : dict
        Extra environment for the child (prefix paths, ``MAFFT_BINARIES``).
    reason : str
        Why it is unavailable.
    label : str
        Name shown in tables when it differs from ``name`` (``mafft linsi``).
    path : str
        The binary that runs (subprocess peers).
    """

    name: str
    available: bool
    in_process: bool = False
    version: str = ""
    how: str = ""
    threads: int = 1
    argv: list[str] = field(default_factory=list)
    stdout_is_output: bool = False
    env: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    label: str = ""
    path: str = ""

    @property
    def grace(self) -> float:
        """Seconds past the timeout before the parent kills the worker."""
        return GRACE_IN_PROCESS if self.in_process else GRACE_SUBPROCESS

    def as_dict(self) -> dict:
        """JSON-ready description (the environment only as the added keys)."""
        d = dict(name=self.name, label=self.label or self.name, available=self.available, version=self.version,
                 how=self.how, in_process=self.in_process, threads=self.threads)
        if self.path:
            d["path"] = self.path
        if self.env:
            d["env"] = dict(self.env)
        if not self.available:
            d["reason"] = self.reason
        return d


@dataclass
class AlignOutcome:
    """One aligner's result on one family.

    Attributes
    ----------
    rows : list of bytes
        Gapped rows in input order.
    seconds : float
        Wall time of the alignment itself.
    peak_rss_kb : int or None
        Peak resident memory, in KiB.
    timings : dict
        Per-stage seconds (msagpu only).
    backend : str
        Device it ran on (``cpu``/``gpu``).
    base_rss_kb : int or None
        In-process aligners: the worker's RSS just before aligning (the part
        of ``peak_rss_kb`` that is interpreter, libraries and input).
    """

    rows: list[bytes]
    seconds: float
    peak_rss_kb: int | None = None
    timings: dict[str, float] = field(default_factory=dict)
    backend: str = "cpu"
    base_rss_kb: int | None = None


# --------------------------------------------------------------------------- finding tools

@dataclass(frozen=True)
class ToolPath:
    """Where peer binaries are looked up, and the environment they need."""

    prefix: Path | None

    def bin_dirs(self) -> list[Path]:
        if self.prefix is None:
            return []
        return [d for d in (self.prefix / "usr" / "bin", self.prefix / "bin") if d.is_dir()]

    def find(self, binary: str) -> str | None:
        """Absolute path of ``binary``: the prefix first, then ``PATH``."""
        for d in self.bin_dirs():
            cand = d / binary
            if cand.exists() and os.access(cand, os.X_OK):
                return str(cand)
        return shutil.which(binary)

    def env_for(self, binary_path: str) -> dict[str, str]:
        """Environment additions for a binary found under the prefix."""
        if self.prefix is None or not Path(binary_path).is_relative_to(self.prefix):
            return {}
        env = {}
        path = [str(d) for d in self.bin_dirs()]
        env["PATH"] = os.pathsep.join(path + [os.environ.get("PATH", "")])
        libs = [self.prefix / p for p in ("usr/lib/x86_64-linux-gnu", "usr/lib", "lib/x86_64-linux-gnu", "lib")]
        libs = [str(d) for d in libs if d.is_dir()]
        if libs:
            old = os.environ.get("LD_LIBRARY_PATH")
            env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + ([old] if old else []))
        libexec = self.prefix / "usr" / "lib" / "mafft" / "lib" / "mafft"  # the mafft script's helpers
        if Path(binary_path).name == "mafft" and libexec.is_dir():
            env["MAFFT_BINARIES"] = str(libexec)
        return env


def _capture(argv: list[str], env: dict[str, str], timeout: float = 20.0) -> str:
    """stdout+stderr of a short command ("" if it cannot run)."""
    try:
        proc = subprocess.run(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.decode("utf-8", "replace")


def _first_match(pattern: str, text: str) -> str:
    m = re.search(pattern, text, re.IGNORECASE | re.MULTILINE)
    return m.group(1) if m else ""


def _missing(name: str, binary: str) -> AlignerInfo:
    return AlignerInfo(name, False, reason=f"not available: {binary!r} not found on PATH or under --peer-prefix")


# --------------------------------------------------------------------------- one probe per aligner

def _probe_msagpu(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    import msa_gpu

    return AlignerInfo(
        "msagpu", True, in_process=True, version=getattr(msa_gpu, "__version__", ""),
        how=(f"in-process: Aligner(AlignerConfig(backend={opts.backend!r}, threads={opts.threads})).align(seqs), "
             "one Aligner per worker, warmed up once; time = Aligner.align"),
        threads=opts.threads)


def _probe_famsa(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    try:
        import pyfamsa
    except ImportError:
        return AlignerInfo("famsa", False, reason="not available: the pyfamsa package is not installed")
    try:
        famsa_version = pyfamsa.famsa_info().version
    except Exception:  # older pyfamsa
        famsa_version = "?"
    return AlignerInfo(
        "famsa", True, in_process=True, version=f"{famsa_version} (pyfamsa {pyfamsa.__version__})",
        how=f"in-process: pyfamsa.Aligner(threads={opts.threads}).align([pyfamsa.Sequence(id, seq), ...])",
        threads=opts.threads)


def _probe_mafft(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    exe = tools.find("mafft")
    if exe is None:
        return _missing("mafft", "mafft")
    env = tools.env_for(exe)
    version = _first_match(r"v(\d+\.\d+\S*)", _capture([exe, "--version"], env))
    argv = [exe, *MAFFT_MODES[opts.mafft_mode], "--thread", "{threads}", "{input}"]
    return AlignerInfo("mafft", True, version=version, threads=opts.threads,
                       argv=argv, stdout_is_output=True, env=env, label=f"mafft {opts.mafft_mode}",
                       how=f"subprocess: {_show(argv)} > OUT.fa")


def _probe_clustalo(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    exe = tools.find("clustalo")
    if exe is None:
        return _missing("clustalo", "clustalo")
    env = tools.env_for(exe)
    version = _first_match(r"(\d+\.\d+\S*)", _capture([exe, "--version"], env))
    argv = [exe, "-i", "{input}", "-o", "{output}", "--threads", "{threads}", "--force"]
    return AlignerInfo("clustalo", True, version=version, threads=opts.threads, argv=argv, env=env,
                       how=f"subprocess: {_show(argv)}")


def _probe_clustalw(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    exe = tools.find("clustalw") or tools.find("clustalw2")
    if exe is None:
        return _missing("clustalw", "clustalw")
    env = tools.env_for(exe)
    version = _first_match(r"CLUSTAL\s+(\S+)", _capture([exe, "-help"], env))
    argv = [exe, "-INFILE={input}", "-OUTFILE={output}", "-OUTPUT=FASTA", "-QUIET"]
    return AlignerInfo("clustalw", True, version=version, threads=1, argv=argv, env=env,
                       how=f"subprocess: {_show(argv)}  (single-threaded)")


def _probe_muscle(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    exe = tools.find("muscle")
    if exe is None:
        return _missing("muscle", "muscle")
    env = tools.env_for(exe)
    text = _capture([exe, "-version"], env)
    version = _first_match(r"muscle\s+v?(\d+(?:\.\d+)*\S*)", text)
    major = int(version.split(".")[0]) if version[:1].isdigit() else 5
    if major >= 5:
        argv = [exe, "-align", "{input}", "-output", "{output}", "-threads", "{threads}"]
        threads = opts.threads
    else:
        argv = [exe, "-in", "{input}", "-out", "{output}", "-quiet"]
        threads = 1
    return AlignerInfo("muscle", True, version=version, threads=threads, argv=argv, env=env,
                       how=f"subprocess: {_show(argv)}")


def _probe_kalign(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    exe = tools.find("kalign")
    if exe is None:
        return _missing("kalign", "kalign")
    env = tools.env_for(exe)
    version = _first_match(r"kalign\s+v?(\d+(?:\.\d+)*)", _capture([exe, "--version"], env))
    if version[:1] == "2":
        argv = [exe, "-i", "{input}", "-o", "{output}", "-f", "fasta", "-q"]
        threads = 1
    else:
        argv = [exe, "-i", "{input}", "-o", "{output}", "-n", "{threads}"]
        threads = opts.threads
    return AlignerInfo("kalign", True, version=version, threads=threads, argv=argv, env=env,
                       how=f"subprocess: {_show(argv)}")


def _probe_probcons(opts: RunOptions, tools: ToolPath) -> AlignerInfo:
    exe = tools.find("probcons")
    if exe is None:
        return _missing("probcons", "probcons")
    env = tools.env_for(exe)
    version = _first_match(r"PROBCONS version\s+(\d+(?:\.\d+)*)", _capture([exe], env))
    argv = [exe, "{input}"]  # its defaults: 2 consistency passes, 100 refinement passes; FASTA on stdout
    return AlignerInfo("probcons", True, version=version, threads=1, argv=argv, stdout_is_output=True, env=env,
                       how=f"subprocess: {_show(argv)} > OUT.fa  (single-threaded)")


PROBES = {
    "msagpu": _probe_msagpu,
    "famsa": _probe_famsa,
    "kalign": _probe_kalign,
    "mafft": _probe_mafft,
    "clustalo": _probe_clustalo,
    "clustalw": _probe_clustalw,
    "muscle": _probe_muscle,
    "probcons": _probe_probcons,
}


def _show(argv: list[str]) -> str:
    """A command template for humans: the binary's name, placeholders upper-cased."""
    parts = [Path(argv[0]).name] + argv[1:]
    text = " ".join(parts)
    return text.replace("{input}", "IN.fa").replace("{output}", "OUT.fa").replace("{threads}", "N")


def probe(name: str, opts: RunOptions) -> AlignerInfo:
    """Find aligner ``name`` and describe how it will run.

    Parameters
    ----------
    name : str
        One of `KNOWN`; anything else is reported as not available.
    opts : RunOptions

    Returns
    -------
    AlignerInfo
    """
    fn = PROBES.get(name)
    if fn is None:
        return AlignerInfo(name, False, reason=f"not available: unknown aligner (known: {', '.join(KNOWN)})")
    tools = ToolPath(Path(opts.peer_prefix).resolve() if opts.peer_prefix else None)
    info = fn(opts, tools)
    if info.argv and not info.path:
        info.path = info.argv[0]
    return info


# --------------------------------------------------------------------------- measuring

def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark (Linux ``clear_refs``); False if impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _status_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def current_rss_kb() -> int | None:
    """This process's resident memory now, in KiB (``VmRSS``)."""
    return _status_kb("VmRSS:")


def peak_rss_kb() -> int | None:
    """This process's RSS high-water mark in KiB (``VmHWM``), else ``ru_maxrss``."""
    peak = _status_kb("VmHWM:")
    if peak is not None:
        return peak
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    except Exception:
        return None


@dataclass
class ChildResult:
    """Exit status, wall time and peak RSS of one child process."""

    returncode: int
    seconds: float
    peak_rss_kb: int | None
    timed_out: bool


#: The fork-exec launcher script (see its docstring for why it exists).
LAUNCHER = Path(__file__).resolve().with_name("launch.py")


def run_measured(argv: list[str], *, env: dict[str, str], cwd: str | Path, stdout, stderr,
                 timeout: float) -> ChildResult:
    """Run a command, killing its whole process group after ``timeout`` seconds.

    The command is started by the `LAUNCHER` script, which times it from fork to
    ``os.wait4`` and takes its resource usage from there, so neither the
    launcher's start-up nor the worker's memory is charged to the command.

    Parameters
    ----------
    argv : list of str
    env : dict
        Complete environment of the child.
    cwd : path
    stdout, stderr : file objects
    timeout : float

    Returns
    -------
    ChildResult
        ``peak_rss_kb`` is the command's ``ru_maxrss`` (KiB); it includes the
        command's waited-for descendants.
    """
    report = Path(cwd) / ".rusage"
    lock = threading.Lock()
    state = {"reaped": False, "timed_out": False}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(LAUNCHER), str(report), *argv], env=env,
                            cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            start_new_session=True)

    def kill() -> None:
        with lock:
            if state["reaped"]:
                return
            state["timed_out"] = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        with lock:
            state["reaped"] = True
        timer.cancel()
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen never waits on it again
    try:
        code, secs, rss = report.read_text().split()
        return ChildResult(int(code), float(secs), int(rss), state["timed_out"])
    except (OSError, ValueError):  # killed before it could report
        return ChildResult(proc.returncode, seconds, None, state["timed_out"])


# --------------------------------------------------------------------------- runners

class Runner:
    """Aligns families inside a worker process."""

    def __init__(self, info: AlignerInfo, opts: RunOptions):
        self.info = info
        self.opts = opts

    def setup(self) -> dict:
        """One-time preparation; returns facts for the report."""
        return {}

    def align(self, names: list[str], seqs: list[bytes], workdir: Path) -> AlignOutcome:
        """Align upper-cased ``seqs``; rows come back in input order."""
        raise NotImplementedError


def _tiny_protein() -> tuple[list[str], list[bytes]]:
    return (["w1", "w2", "w3"],
            [b"MKVLAAGIVGLLLAQPAMA", b"MKVLAGIVGLLLAHPAMA", b"MRVLAAGLVGLLAQPSMA"])


class MsagpuRunner(Runner):
    """msagpu through its Python API; one `Aligner` per worker, warmed up once
    so numba compilation and CUDA start-up are not charged to a family."""

    def setup(self) -> dict:
        from msa_gpu.aligner import Aligner
        from msa_gpu.settings.config import AlignerConfig
        from msa_gpu.io import make_sequences

        self._make_sequences = make_sequences
        t = time.perf_counter()
        self.aligner = Aligner(AlignerConfig(backend=self.opts.backend, threads=self.opts.threads))
        res = self.aligner.align(make_sequences(*_tiny_protein()))
        info = {"backend": res.backend, "backend_reason": getattr(self.aligner.backend, "reason", ""),
                "warmup_s": round(time.perf_counter() - t, 3)}
        if res.backend == "gpu":
            try:
                import cupy

                props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
                info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            except Exception:
                pass
        info["memory_reset"] = reset_peak_rss()
        return info

    def align(self, names: list[str], seqs: list[bytes], workdir: Path) -> AlignOutcome:
        s = self._make_sequences(list(names), list(seqs))
        reset_peak_rss()
        base = current_rss_kb()
        t = time.perf_counter()
        res = self.aligner.align(s)
        seconds = time.perf_counter() - t
        return AlignOutcome(res.rows(), seconds, peak_rss_kb(), dict(res.timings), res.backend, base)


class FamsaRunner(Runner):
    """FAMSA through pyfamsa, in-process; one `pyfamsa.Aligner` per worker."""

    def setup(self) -> dict:
        import pyfamsa

        self._seq = pyfamsa.Sequence
        self.aligner = pyfamsa.Aligner(threads=self.opts.threads)
        names, seqs = _tiny_protein()
        self.aligner.align([self._seq(n.encode(), s) for n, s in zip(names, seqs)])
        return {"memory_reset": reset_peak_rss()}

    def align(self, names: list[str], seqs: list[bytes], workdir: Path) -> AlignOutcome:
        batch = [self._seq(f"s{i}".encode(), s) for i, s in enumerate(seqs)]
        reset_peak_rss()
        base = current_rss_kb()
        t = time.perf_counter()
        aln = self.aligner.align(batch)
        seconds = time.perf_counter() - t
        peak = peak_rss_kb()
        out = {g.id.decode(): bytes(g.sequence) for g in aln}
        return AlignOutcome(_in_input_order(out, len(seqs)), seconds, peak, base_rss_kb=base)


class CommandRunner(Runner):
    """A peer run as a child process on a temporary FASTA."""

    def align(self, names: list[str], seqs: list[bytes], workdir: Path) -> AlignOutcome:
        info = self.info
        inp, out = workdir / "in.fa", workdir / "out.fa"
        with open(inp, "wb") as fh:
            for i, s in enumerate(seqs):
                fh.write(b">s%d\n%s\n" % (i, s))
        argv = [a.format(input=inp, output=out, threads=info.threads) for a in info.argv]
        env = {**os.environ, **info.env}
        err_path = workdir / "stderr.txt"
        stdout_path = out if info.stdout_is_output else workdir / "stdout.txt"
        with open(stdout_path, "wb") as so, open(err_path, "wb") as se:
            child = run_measured(argv, env=env, cwd=workdir, stdout=so, stderr=se, timeout=self.opts.timeout)
        if child.timed_out:
            raise AlignerTimeout(f"killed after {self.opts.timeout:g} s")
        if child.returncode != 0:
            raise AlignerFailure(f"exit status {child.returncode}: {_tail(err_path, workdir / 'stdout.txt')}")
        if not out.is_file() or out.stat().st_size == 0:
            raise AlignerFailure(f"no output written: {_tail(err_path, workdir / 'stdout.txt')}")
        from msa_gpu.io import read_aligned

        out_names, rows = read_aligned(out)
        by_id = {}
        for n, r in zip(out_names, rows):
            by_id[n.split(None, 1)[0] if n.strip() else n] = r
        return AlignOutcome(_in_input_order(by_id, len(seqs)), child.seconds, child.peak_rss_kb)


def _in_input_order(by_id: dict[str, bytes], n: int) -> list[bytes]:
    """Rows for ``s0`` .. ``s{n-1}``; an aligner that drops or renames a
    sequence fails the family."""
    try:
        rows = [by_id[f"s{i}"] for i in range(n)]
    except KeyError as exc:
        raise AlignerFailure(f"output lacks sequence {exc.args[0]} ({len(by_id)} of {n} sequences)") from None
    if len(by_id) != n:
        raise AlignerFailure(f"output has {len(by_id)} sequences, the input {n}")
    if len({len(r) for r in rows}) > 1:
        raise AlignerFailure("output rows differ in length")
    return rows


def _tail(*paths: Path, limit: int = 300) -> str:
    text = ""
    for p in paths:
        try:
            text += p.read_text(errors="replace")
        except OSError:
            pass
    text = " ".join(text.split())
    return (text[-limit:] if len(text) > limit else text) or "(no message)"


def make_runner(info: AlignerInfo, opts: RunOptions) -> Runner:
    """The runner for an available aligner (in a worker process)."""
    if info.name == "msagpu":
        return MsagpuRunner(info, opts)
    if info.name == "famsa":
        return FamsaRunner(info, opts)
    return CommandRunner(info, opts)
