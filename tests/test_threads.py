"""Threads sized by the work (msa_gpu/backend/threads.py): a tiny loop runs on
one thread, no loop gets more threads than ``--threads``, its iterations or
the free cores, other processes' load takes cores away, numba's count is
given back after each loop, and the CPU twins give the same bytes on one
thread and on two."""

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

import numba
import numpy as np
import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend, threads
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences, read_sequences

REFS = Path(__file__).resolve().parent.parent / "references"
TWO = numba.config.NUMBA_NUM_THREADS >= 2


@pytest.fixture(autouse=True)
def _numba_count():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def test_a_tiny_loop_runs_on_one_thread(monkeypatch):
    monkeypatch.setattr(threads, "free_cores", lambda: 64)
    assert threads.threads_for(1_000, 10_000, cap=64) == 1
    assert threads.threads_for(2 * threads.WORK_PER_THREAD_NS - 1, 10_000, cap=64) == 1
    assert threads.threads_for(2 * threads.WORK_PER_THREAD_NS, 10_000, cap=64) == 2
    assert threads.threads_for(1e12, 10_000, cap=64) == 64


def test_a_tiny_loop_does_not_look_at_the_load(monkeypatch):
    def never():
        raise AssertionError("free_cores read for a tiny loop")

    monkeypatch.setattr(threads, "free_cores", never)
    assert threads.threads_for(1_000, 10_000, cap=8) == 1


@pytest.mark.parametrize("free", [1, 2, 3, 7, 64])
def test_never_more_than_threads_iterations_or_free_cores(monkeypatch, free):
    monkeypatch.setattr(threads, "free_cores", lambda: free)
    for cap in (1, 2, 4, 16):
        for items in (0, 1, 2, 3, 100):
            for work in (0, 1e4, 1e5, 3e5, 1e6, 1e9):
                k = threads.threads_for(work, items, cap)
                assert 1 <= k <= max(1, min(cap, items, free)), (cap, items, work, free, k)
                assert k == 1 or work >= k * threads.WORK_PER_THREAD_NS
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)  # the default cap: numba's count (--threads)
    assert threads.threads_for(1e12, 100) == min(3, free)


class _Clock:
    """A stand-in for `time` in threads: wall and own CPU seconds set by hand."""

    def __init__(self):
        self.wall, self.cpu = 1000.0, 5.0

    def monotonic(self):
        return self.wall

    def process_time(self):
        return self.cpu

    perf_counter = monotonic


def _load_with(monkeypatch, cpus, busy_per_s, own_per_s):
    """A fresh `_Load` on ``cpus`` processors where the others keep
    ``busy_per_s`` cores and this process ``own_per_s`` cores busy for a second."""
    clock = _Clock()
    state = {"busy": 100.0}
    monkeypatch.setattr(threads, "time", SimpleNamespace(monotonic=clock.monotonic, process_time=clock.process_time,
                                                         perf_counter=clock.perf_counter))
    monkeypatch.setattr(threads, "_allowed", lambda: set(range(cpus)))
    monkeypatch.setattr(threads, "_busy_seconds", lambda c: state["busy"])
    load = threads._Load()
    clock.wall += 1.0
    clock.cpu += own_per_s
    state["busy"] += busy_per_s + own_per_s
    monkeypatch.setattr(threads, "_load", load)
    return load


@pytest.mark.parametrize("cpus, others, own, free", [
    (2, 0.0, 0.0, 2), (2, 0.0, 2.0, 2),  # this process's own threads are not a neighbour
    (2, 1.0, 0.0, 1), (2, 1.0, 1.0, 1), (2, 0.5, 0.0, 1), (2, 0.3, 0.0, 1), (2, 0.2, 0.0, 2),
    (2, 2.0, 0.0, 1), (2, 5.0, 0.0, 1),  # never below one
    (16, 3.0, 1.0, 13), (16, 0.0, 0.0, 16),
])
def test_other_processes_load_takes_cores_away(monkeypatch, cpus, others, own, free):
    load = _load_with(monkeypatch, cpus, others, own)
    assert threads.free_cores() == free
    assert load.others == pytest.approx(others)
    assert threads.threads_for(1e12, 1000, cap=cpus) == free


def test_free_cores_within_the_affinity_and_the_quota(monkeypatch):
    assert 1 <= threads.free_cores() <= len(os.sched_getaffinity(0))
    load = _load_with(monkeypatch, 8, 0.0, 0.0)
    load.quota = 2.0
    assert threads.free_cores() == 2


def test_call_runs_the_loop_on_its_threads_and_gives_numba_its_count_back(monkeypatch):
    seen = []
    monkeypatch.setattr(threads, "trace", [])

    def loop(x):
        seen.append(numba.get_num_threads())
        return x

    before = numba.get_num_threads()
    assert threads.call(loop, 7, work=10, items=1000) == 7
    assert seen == [1] and numba.get_num_threads() == before
    if TWO:
        numba.set_num_threads(2)
        monkeypatch.setattr(threads, "free_cores", lambda: 2)
        threads.call(loop, 1, work=1e9, items=1000)
        assert seen[-1] == 2 and numba.get_num_threads() == 2
        numba.set_num_threads(1)  # --threads 1: never more
        threads.call(loop, 1, work=1e9, items=1000)
        assert seen[-1] == 1 and numba.get_num_threads() == 1
    assert [t[3] for t in threads.trace] == seen


def _forced_parallel(monkeypatch):
    """Every loop of two iterations or more on two threads."""
    monkeypatch.setattr(threads, "free_cores", lambda: 2)
    monkeypatch.setattr(threads, "WORK_PER_THREAD_NS", 1e-9)
    monkeypatch.setattr(threads, "trace", [])


@pytest.fixture
def products(monkeypatch):
    """The arrays that the CPU ops write in full (column scores with the
    library's share, profile statistics, merges, path scores, extended
    libraries), digested in call order: two runs compared through them see
    a twin that goes wrong on one thread even where the alignment hides it."""
    from msa_gpu.backend import cpu

    seen = []

    def digest(*arrays):
        h = hashlib.blake2b(digest_size=8)
        for a in arrays:
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    def wrap(name, out):
        fn = getattr(cpu, name)

        def recorded(*args, **kwargs):
            res = fn(*args, **kwargs)
            seen.append((name, digest(*out(res, args))))
            return res

        monkeypatch.setattr(cpu, name, recorded)

    for name in ("column_scores", "profile_stats", "merge_profiles", "path_score", "library_extend"):
        wrap(name, lambda res, args: res if isinstance(res, tuple) else (res,))
    wrap("consistency_scores", lambda res, args: (args[7],))  # S, in place
    return seen


@pytest.mark.skipif(not TWO, reason="numba has one thread here")
def test_the_twins_give_the_same_bytes_on_one_thread_and_two(monkeypatch, products):
    from msa_gpu.distances.lcs import lcs_spanning_edges

    cpu = cpu_backend()
    fast = read_sequences(REFS / "balibase12" / "BB20030.tfa")  # 47 sequences
    accurate = read_sequences(REFS / "balibase12" / "BB30027.tfa")  # 20: the consistency library
    rng = np.random.default_rng(55)  # a DNA family: the local-alignment library (library_extend)
    root = rng.choice(list(b"ACGT"), 80)
    dna = make_sequences([f"d{i}" for i in range(12)],
                         [bytes(np.where(rng.random(80) < 0.15, rng.choice(list(b"ACGT"), 80), root).astype(np.uint8))
                          for _ in range(12)], "dna")
    runs = {}
    for n in (1, 2):
        monkeypatch.setattr(threads, "trace", [])
        if n == 2:
            _forced_parallel(monkeypatch)
        a = Aligner(AlignerConfig(backend="cpu", threads=n, mode="fast", distance="lcs", maxiterate=2), backend=cpu)
        b = Aligner(AlignerConfig(backend="cpu", threads=n, mode="accurate"), backend=cpu)
        c = Aligner(AlignerConfig(backend="cpu", threads=n, mode="accurate", library_mode="local"), backend=cpu)
        ends, length = lcs_spanning_edges(fast)
        products.clear()
        rows = (a.align(fast).rows(), b.align(accurate).rows(), c.align(dna).rows(), b.align(dna).rows())
        runs[n] = (rows, ends.tolist(), length.tobytes(), list(products))
    used = {t[0] for t in threads.trace if t[3] == 2}
    assert {"_lcs_rows", "_relax", "_align_batch", "_column_scores", "_profile_stats", "_merge_profiles",
            "_consistency_add", "_consistency_fold", "_path_score", "_gather_profiles", "_library_extend",
            "_batch"} <= used, used  # (in parallel)
    assert runs[1][:3] == runs[2][:3]
    assert len(runs[1][3]) > 100 and runs[1][3] == runs[2][3]  # the ops' products, not only the alignments


@pytest.mark.skipif(not TWO, reason="numba has one thread here")
@pytest.mark.parametrize("mode", ["global", "local"])
def test_the_pairwise_twin_gives_the_same_bytes_on_one_thread_and_two(monkeypatch, mode):
    from msa_gpu.backend.pairwise import PairScoring, align_pairs

    seqs = read_sequences(REFS / "balibase12" / "BB20029.tfa")  # 29 sequences, 406 pairs
    pairs = [(i, j) for i in range(len(seqs)) for j in range(i + 1, len(seqs))]
    outs = {}
    for n in (1, 2):
        numba.set_num_threads(n)
        monkeypatch.setattr(threads, "trace", [])
        if n == 2:
            _forced_parallel(monkeypatch)
        res = align_pairs(seqs, pairs, PairScoring(mode), traceback=True, backend="cpu")  # (and re-scored)
        outs[n] = [res.scores.tobytes(), res.start.tobytes(), res.end.tobytes(), res.runs.tobytes(),
                   res.runs_offsets.tobytes()]
    assert {"_batch", "move_segments", "_rescore_batch"} <= {t[0] for t in threads.trace if t[3] == 2}
    assert outs[1] == outs[2]


def test_a_fresh_process_measures_before_it_trusts(monkeypatch):
    """Before a window has passed, the instant count of runnable tasks stands in."""
    monkeypatch.setattr(threads, "_runnable_others", lambda: 1.0)
    load = threads._Load()
    monkeypatch.setattr(threads, "_load", load)
    if load.sample is not None:  # (a system without /proc/stat knows nothing of the others)
        assert load.others_busy() == 1.0


@pytest.mark.skipif(not TWO, reason="numba has one thread here")
@pytest.mark.parametrize("free", [1, 2])
def test_the_posterior_librarys_host_threads_take_only_free_cores(monkeypatch, free):
    """The pair-HMM library's host threads (`threads.threaded`, one
    pair at a time each) are no more than the free cores: with one free core
    every pair runs on the calling thread, with two on two threads; the
    results come in order either way."""
    import threading

    monkeypatch.setattr(threads, "free_cores", lambda: free)
    numba.set_num_threads(2)
    seen: set[int] = set()
    gate = threading.Barrier(2, timeout=0.5) if free == 2 else None

    def fn(item, space):
        seen.add(threading.get_ident())
        if gate is not None and item < 2:  # the first two items meet: two threads at once
            gate.wait()
        return item * 10 + space

    out = threads.threaded(fn, list(range(40)), lambda: 1)
    assert out == [i * 10 + 1 for i in range(40)]
    assert (len(seen), threading.get_ident() in seen) == ((1, True) if free == 1 else (2, False))
