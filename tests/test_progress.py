"""Progress goes to stderr (plain lines off a terminal), never stdout; --quiet silences it."""

import io

from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app
from msa_gpu.runtime.progress import StageReporter


def test_progress_lines_on_stderr_only(refs, monkeypatch):
    import msa_gpu.runtime.progress

    class EveryStage(StageReporter):  # (the CLI hides stages under 0.05 s: warm, BB20001's take less)
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "min_seconds": 0.0})

    monkeypatch.setattr(msa_gpu.runtime.progress, "StageReporter", EveryStage)
    r = CliRunner().invoke(app, ["align", str(refs / "BB20001.tfa"), "--backend", "cpu", "--mode", "fast"])
    assert r.exit_code == 0
    assert "msagpu: progressive (progressive alignment) done in" in r.stderr
    assert r.stdout.startswith(">") and "msagpu:" not in r.stdout
    q = CliRunner().invoke(app, ["align", str(refs / "BB20001.tfa"), "--backend", "cpu", "--mode", "fast", "-q"])
    assert q.exit_code == 0 and q.stderr == "" and q.stdout == r.stdout


def test_live_display_runs_on_a_terminal_like_stream():
    out = io.StringIO()
    rep = StageReporter(stream=out, live=True)
    with rep.stage("progressive"):
        pass
    assert "progressive (progressive alignment) done" in out.getvalue()


def test_counted_stages_report_their_counts_and_time_left():
    """Plain lines every interval while a counted stage runs (pairs of the
    library, merges of the progressive stage, rounds of refinement), from a
    real alignment."""
    from msa_gpu.aligner import Aligner
    from msa_gpu.backend import cpu_backend
    from msa_gpu.settings.config import AlignerConfig
    from msa_gpu.io import make_sequences

    out = io.StringIO()
    seqs = make_sequences([f"s{i}" for i in range(6)], [b"MKTAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQISFVKSHFSRQ",
                                                         b"MKTAYIKQRQISFVKSHFSR", b"MKTAYIAKQRQISFVSHFSRQ",
                                                         b"MKAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQRQISFVKSHFS"], "protein")
    Aligner(AlignerConfig(backend="cpu", mode="accurate", maxiterate=3), backend=cpu_backend(),
            reporter=StageReporter(stream=out, live=False, interval=0.0)).align(seqs)
    lines = out.getvalue().splitlines()
    assert any(line.startswith("msagpu: progressive: ") and "/5 merges" in line for line in lines), lines
    # refinement's rounds are a bound (it stops when no cut gains): no time left is made up from it
    refine = [line for line in lines if line.startswith("msagpu: refine: ") and " rounds" in line]
    assert refine and all("(at most 3)" in line and "s left" not in line for line in refine), lines
    # the library's pair steps: 15 pairs' posteriors and two transformation passes
    assert any(line.startswith("msagpu: library: ") and "45/45 pair steps" in line for line in lines), lines
    assert any("s left" in line for line in lines), lines


def test_the_live_display_takes_counts():
    out = io.StringIO()
    rep = StageReporter(stream=out, live=True)
    with rep.stage("progressive"):
        rep.progress(3, 9, "merges")
    assert "progressive (progressive alignment) done" in out.getvalue()
