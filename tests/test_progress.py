"""Progress goes to stderr (plain lines off a terminal), never stdout; --quiet silences it."""

import io

from typer.testing import CliRunner

from msa_gpu.cli import app
from msa_gpu.progress import StageReporter


def test_progress_lines_on_stderr_only(refs):
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
