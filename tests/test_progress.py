"""Progress goes to stderr (plain lines off a terminal), never stdout; --quiet silences it."""

import io

from typer.testing import CliRunner

from msa_gpu.cli import app
from msa_gpu.progress import StageReporter


def test_progress_lines_on_stderr_only(refs, monkeypatch):
    import msa_gpu.progress

    class EveryStage(StageReporter):  # (the CLI hides stages under 0.05 s: warm, BB20001's take less)
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "min_seconds": 0.0})

    monkeypatch.setattr(msa_gpu.progress, "StageReporter", EveryStage)
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
