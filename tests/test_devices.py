"""Several GPUs of one machine (`msa_gpu.distributed.gpus`): the output is one GPU's."""

from contextlib import nullcontext

import pytest
from typer.testing import CliRunner

from benchmarks.synthetic import evolve_family
from msa_gpu.aligner import Aligner
from msa_gpu.frontends.msagpu import app
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distributed.gpus import DevicePool, DeviceRunner, align_many_gpus, parse_gpus
from msa_gpu.errors import BackendError, InputError
from msa_gpu.io import make_sequences


def _families():
    fams = [evolve_family(330, 50, seed=8)] + [evolve_family(5 + i, 40 + 7 * i, seed=30 + i) for i in range(5)]
    return [make_sequences(f.names, f.sequences, "protein") for f in fams]


def test_spread_over_three_devices_equals_one_run():
    """Device contexts stood in by no-ops: the work is dealt to three threads
    (a large family's pivot rows and subtrees among it) and the alignments
    are the single run's."""
    families = _families()
    config = AlignerConfig(backend="cpu", large_min_seqs=300, large_cluster=40)
    want = [r.rows() for r in Aligner(config).align_many(families)]
    used = []
    got = align_many_gpus(families, config, [0, 1, 2], enter=lambda d: used.append(d) or nullcontext())
    assert [r.rows() for r in got] == want
    assert set(used) == {0, 1, 2} and len(used) > 3


def test_runner_deals_tasks_in_turn_inside_each_device():
    runner = DeviceRunner([4, 7], enter=lambda d: nullcontext())
    try:
        import threading

        names = [runner.submit(lambda: threading.current_thread().name).result() for _ in range(4)]
    finally:
        runner.close()
    assert [n.split("_")[0] for n in names] == ["msagpu-gpu4", "msagpu-gpu7"] * 2


_POOL_RUN = """
import sys, warnings
from contextlib import nullcontext
warnings.simplefilter("error")
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distributed.gpus import DevicePool, align_many_gpus
from tests.test_devices import _families

# forked first, before numba's threads start here (as the command line does)
pool = DevicePool([0, 1, 2], start=lambda d: nullcontext())
families = _families()
config = AlignerConfig(backend="cpu", large_min_seqs=300, large_cluster=40)
with pool:
    got = [r.rows() for r in align_many_gpus(families, config, [0, 1, 2], enter=lambda d: nullcontext(), pool=pool)]
from msa_gpu.aligner import Aligner
want = [r.rows() for r in Aligner(config).align_many(families)]
sys.exit(0 if got == want else 1)
"""


def test_worker_processes_give_the_one_run_alignment(tmp_path):
    """Three forked workers (no-op device contexts) share a batch with a
    large family's subtrees; the alignments are the single run's. In a fresh
    interpreter, as the command line forks them before numba starts threads."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", _POOL_RUN], cwd=root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]


def _pid_of_worker(_):
    import os

    return os.getpid()


def test_pool_deals_tasks_to_processes_and_passes_errors_back():
    import os
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pytest's own threads: fork() warns of them
        with DevicePool([3, 5], start=lambda d: nullcontext()) as pool:
            pids = [pool.submit(_pid_of_worker, k).result() for k in range(4)]
            with pytest.raises(ZeroDivisionError):
                pool.submit(divmod, 1, 0).result()
            assert pool.submit(divmod, 7, 2).result() == (3, 1)  # the worker lives on after an error
    assert pids[0] == pids[2] and pids[1] == pids[3] and pids[0] != pids[1] and os.getpid() not in pids


def _refuse(device):
    raise RuntimeError(f"no device {device} here")


def test_a_pool_that_cannot_start_falls_back_to_threads():
    import warnings

    families = _families()[1:3]
    config = AlignerConfig(backend="cpu")
    want = [r.rows() for r in Aligner(config).align_many(families)]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with DevicePool([0, 1], start=_refuse) as pool:
            got = align_many_gpus(families, config, [0, 1], enter=lambda d: nullcontext(), pool=pool)
            assert pool.failure() == "GPU 0: RuntimeError: no device 0 here"
    assert [r.rows() for r in got] == want
    assert any("one host thread a GPU instead of worker processes" in str(w.message) for w in said)


def test_parse_gpus_refuses_what_is_not_there():
    assert parse_gpus(" All ", 2) == [0, 1]
    for text, err in (("3", BackendError), ("0", BackendError), ("1,1", BackendError), ("2,5", BackendError),
                      ("two", InputError), ("all", BackendError)):
        with pytest.raises(err):
            parse_gpus(text, 2 if text != "all" else 0)


def test_cli_gpus_needs_the_gpu_backend(tmp_path, refs):
    out = tmp_path / "o.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--gpus", "2"])
    assert r.exit_code == 2 and "--gpus needs the GPU backend" in r.output and not out.exists()
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--gpus", "1", "-q"])
    assert r.exit_code == 0 and out.exists()


def test_cli_gpus_without_a_gpu_is_a_backend_error(tmp_path, refs):
    from msa_gpu.backend import probe_gpu

    if probe_gpu()[0]:
        pytest.skip("a GPU is here")
    out = tmp_path / "o.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--gpus", "2"])
    assert r.exit_code == 3 and "msagpu: error: --gpus:" in r.output and not out.exists()


@pytest.mark.gpu
def test_two_threads_on_one_gpu_give_the_one_gpu_output():
    families = _families()
    config = AlignerConfig(backend="gpu", large_min_seqs=300, large_cluster=40)
    want = [r.rows() for r in Aligner(config).align_many(families)]
    assert [r.rows() for r in align_many_gpus(families, config, [0, 0])] == want


def test_auto_runs_a_small_input_on_the_cpu_without_starting_the_gpu(monkeypatch, refs):
    """Backend auto takes the CPU where its expected time is within the GPU's
    start-up (``cpu_max_seconds``), on the threshold included, and asks for
    the GPU just above it; the expected time grows as the cores shrink."""
    import msa_gpu.aligner as aligner_mod
    from msa_gpu.backend.cost import cpu_seconds
    from msa_gpu.io import read_sequences
    from msa_gpu.recipe import describe

    seqs = read_sequences(refs / "BB11001.tfa")
    on_cpu = Aligner(AlignerConfig(backend="cpu")).align(seqs).rows()
    probes = []
    monkeypatch.setattr(aligner_mod, "select_backend", lambda choice: probes.append(choice) or pytest.fail("probed"))
    monkeypatch.setattr(aligner_mod, "usable_cores", lambda threads=None: 1 if threads == 1 else 16)
    recipe = Aligner().plan([seqs])[0]
    expected = cpu_seconds(recipe, 16)
    assert 0 < expected < AlignerConfig().cpu_max_seconds
    small = Aligner(AlignerConfig())
    res = small.align(seqs)
    assert small.backend.name == "cpu" and probes == []
    # the recipe line says why
    assert describe(recipe, small.backend_said([recipe])).endswith(
        f", CPU (expected {expected:.2f} s on 16 CPU cores, within the GPU's start-up; --backend gpu uses it)")
    assert res.rows() == on_cpu
    # exactly on the threshold: still the CPU
    on = Aligner(AlignerConfig(cpu_max_seconds=expected))
    assert on.choose_backend([recipe]).name == "cpu" and probes == []
    # over the threshold (or on fewer cores, where the same work takes longer), auto asks for the GPU
    # (here: the probe, stubbed to the CPU backend)
    from msa_gpu.backend import cpu_backend

    monkeypatch.setattr(aligner_mod, "select_backend", lambda choice: probes.append(choice) or cpu_backend("stub"))
    for config in (AlignerConfig(cpu_max_seconds=expected * 0.999),
                   AlignerConfig(cpu_max_seconds=expected * 15, threads=1)):
        probes.clear()
        big = Aligner(config)
        big.align(seqs)
        assert probes == [AlignerConfig().backend] and big.backend.reason == "stub"
        assert big.backend_said([recipe]) == "cpu"  # the stub's name, no cost said


def test_expected_cpu_time_orders_the_libraries_and_sizes():
    """The cost rule: more cells cost more, a pair-HMM library's cell less
    than an alignment library's (which brings refinement rounds), one
    sequence nothing; and it scales with the cores up to the 16 measured."""
    from dataclasses import replace

    from msa_gpu.backend.cost import cpu_seconds
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.recipe import recipe_from

    r = recipe_from(AlignerConfig(), 50, 250.0, 300)
    assert r.library == "posterior" and r.dp_cells > 0
    assert cpu_seconds(replace(r, library="local"), 16) > cpu_seconds(r, 16) > 0
    assert cpu_seconds(replace(r, dp_cells=2 * r.dp_cells), 16) == pytest.approx(2 * cpu_seconds(r, 16))
    assert cpu_seconds(r, 2) == pytest.approx(8 * cpu_seconds(r, 16)) and cpu_seconds(r, 64) == cpu_seconds(r, 16)
    assert cpu_seconds(recipe_from(AlignerConfig(), 1, 250.0, 300), 16) == 0.0


def test_an_error_ends_the_pool_without_waiting_for_the_other_devices():
    """One worker's error (or a signal) ends the run at once: the pool kills
    the others rather than wait for their work."""
    import time
    import warnings

    clock = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pytest's own threads: fork() warns of them
        with pytest.raises(ZeroDivisionError):
            with DevicePool([0, 1], start=lambda d: nullcontext()) as pool:
                pool.submit(time.sleep, 120)
                pool.submit(divmod, 1, 0).result()
    assert time.monotonic() - clock < 30
