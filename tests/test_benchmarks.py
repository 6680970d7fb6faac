"""The benchmark harness end to end on one tiny BAliBASE family.

The family is references/BB11001 (BAliBASE 3.0 RV11, copied from the
project's benchmark data); the test builds a one-set benchmark folder from it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from msa_gpu.io import read_aligned, read_core
from msa_gpu.accuracy import sp_tc

REPO = Path(__file__).resolve().parent.parent


def test_balibase_harness_msagpu_and_missing_aligner(tmp_path, refs):
    data = tmp_path / "tinybench"
    (data / "RV11").mkdir(parents=True)
    for suffix in (".tfa", ".ref.fa", ".core"):
        shutil.copy(refs / f"BB11001{suffix}", data / "RV11" / f"BB11001{suffix}")
    out = tmp_path / "results"

    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "balibase", "--data", str(data),
         "--aligners", "msagpu,nosuchaligner", "--backend", "cpu", "--threads", "1",
         "--out", str(out), "--tag", "t", "--save-alignments", "--timeout", "120"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr

    report = out / "t-balibase-tinybench.json"
    assert report.is_file()
    assert (out / "t-balibase-tinybench.md").is_file()
    doc = json.loads(report.read_text())
    assert doc["dataset"] == "tinybench" and doc["sets"] == ["RV11"]

    msagpu = doc["aligners"]["msagpu"]
    assert msagpu["available"] and msagpu["in_process"] and "in-process" in msagpu["how"]
    assert msagpu["backend_used"] == "cpu" and msagpu["n_ok"] == 1 and msagpu["failures"] == []
    (row,) = [r for r in doc["families"] if r["aligner"] == "msagpu"]
    assert row["status"] == "ok" and row["family"] == "BB11001" and row["set"] == "RV11"
    assert 0.0 <= row["sp"] <= 1.0 and 0.0 <= row["tc"] <= 1.0
    assert row["align_s"] >= 0 and row["peak_rss_mb"] > 0 and row["timings"]

    # The same scorer on the saved alignment gives the same numbers.
    names, rows = read_aligned(out / "t-balibase-tinybench-alignments" / "msagpu" / "RV11" / "BB11001.fa")
    ref_names, ref_rows = read_aligned(data / "RV11" / "BB11001.ref.fa")
    score = sp_tc(names, rows, ref_names, ref_rows, read_core(data / "RV11" / "BB11001.core"))
    assert row["sp"] == score.sp and row["tc"] == score.tc
    assert msagpu["per_set"]["RV11"]["sp"] == round(score.sp, 4)
    assert msagpu["mean_tc"] == round(score.tc, 4)

    missing = doc["aligners"]["nosuchaligner"]
    assert missing["available"] is False and "not available" in missing["reason"]
    assert not any(r["aligner"] == "nosuchaligner" for r in doc["families"])
    assert "| msagpu" in proc.stdout and "nosuchaligner" in proc.stdout and "not available" in proc.stdout


def test_batch_benchmark_scores_match_cli(tmp_path, refs):
    data = tmp_path / "tinybench"
    for fam, rv in (("BB11001", "RV11"), ("BB12006", "RV12")):
        (data / rv).mkdir(parents=True)
        for suffix in (".tfa", ".ref.fa", ".core"):
            shutil.copy(refs / f"{fam}{suffix}", data / rv / f"{fam}{suffix}")
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "batch", "--data", str(data), "--backend", "cpu",
         "--single", "BB11001", "--repeats", "1", "--out", str(out), "--tag", "t"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "t-batch-cpu.json").read_text())
    assert doc["families"] == 2 and set(doc["per_set"]) == {"RV11", "RV12"}
    assert set(doc["stages_s"]) >= {"distance", "tree", "progressive"}
    assert len(doc["single"]["wall_s"]) == 1
    # the batch output scores as the single-family command line does
    cli = subprocess.run([sys.executable, "-m", "msa_gpu", "align", str(refs / "BB12006.tfa"), "--backend", "cpu",
                          "-q"], capture_output=True, text=True, check=True)
    aln = tmp_path / "single.fa"
    aln.write_text(cli.stdout)
    names, rows = read_aligned(aln)
    rn, rr = read_aligned(refs / "BB12006.ref.fa")
    s = sp_tc(names, rows, rn, rr, read_core(refs / "BB12006.core"))
    got = next(r for r in doc["rows"] if r["id"] == "BB12006")
    assert (got["sp"], got["tc"]) == (s.sp, s.tc)


def test_tradeoff_modes_and_a_missing_peer(tmp_path, refs):
    """msagpu's two modes in batch mode, a peer that is not installed, the
    report's per-set accuracy and like-for-like subset."""
    data = tmp_path / "tinybench"
    for fam, rv in (("BB11001", "RV11"), ("BB12006", "RV12")):
        (data / rv).mkdir(parents=True)
        for suffix in (".tfa", ".ref.fa", ".core"):
            shutil.copy(refs / f"{fam}{suffix}", data / rv / f"{fam}{suffix}")
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "tradeoff", "--data", str(data), "--modes", "fast,accurate",
         "--peers", "nosuchaligner:1", "--backend", "cpu", "--out", str(out), "--tag", "t", "--timeout", "300"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "t-tradeoff-tinybench.json").read_text())
    fast, accurate, missing = doc["entries"]
    assert fast["label"] == "msagpu fast" and accurate["label"] == "msagpu accurate"
    assert set(fast["per_set"]) == {"RV11", "RV12"} and fast["n_ok"] == 2
    assert all(0 <= e["mean_tc"] <= 1 and 0 <= e["mean_sp"] <= 1 for e in (fast, accurate))
    assert "--mode accurate" in accurate["command"]
    assert missing["available"] is False
    assert (out / "t-tradeoff-tinybench.md").is_file()
    assert (doc["plot"] is None) or (out / doc["plot"]).is_file()


def test_stage_times_come_from_the_summary_line_only():
    from benchmarks.batch import stage_times

    log = ("msagpu: mode auto chose fast (1000 sequences; large from 20000 sequences)\n"
           "msagpu: tree (guide tree) done in 0.11 s\n"
           "msagpu: aligned 3 families on gpu (library 0.00 s, distance 2.61 s, tree 3.86 s, refine rounds 2)\n")
    assert stage_times(log) == {"library": 0.0, "distance": 2.61, "tree": 3.86}
    assert stage_times("no summary here, 5 s") == {}


def test_memory_benchmark_windows_follow_stderr_lines(tmp_path, refs):
    """`python -m benchmarks memory`: the run's peak and one window per stderr
    line, the last window ending at the run's end."""
    from benchmarks.memory import profile

    res = profile(["align", str(refs / "BB20001.tfa"), "-o", str(tmp_path / "o.fa"), "--backend", "cpu",
                   "--mode", "fast"], every=0.01)
    assert res["rc"] == 0 and (tmp_path / "o.fa").exists()
    assert res["peak_mb"] > 10 and res["samples"] > 3
    assert any("progressive" in w["line"] for w in res["windows"])
    assert res["windows"][-1]["line"] == "(end)" and res["windows"][-1]["until_s"] == res["wall_s"]
    assert max(w["peak_mb"] for w in res["windows"]) == res["peak_mb"]


CHURN = """
import sys, threading, time
from benchmarks.stacks import watch
watch(sys.argv[1], every=0.0005)
def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)
def work(end):
    while time.time() < end:
        rec(40)
def spawner(end):
    while time.time() < end:
        ts = [threading.Thread(target=rec, args=(30,)) for _ in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
end = time.time() + 3.0
ts = [threading.Thread(target=work, args=(end,)) for _ in range(3)] + [threading.Thread(target=spawner, args=(end,))]
[t.start() for t in ts]
[t.join() for t in ts]
print("done")
"""


def test_stack_watch_survives_threads_that_come_and_go(tmp_path):
    """The stack watcher of long benchmark runs (benchmarks/stacks.py) reads
    stacks under the GIL: threads started and ended around it at a 0.5 ms
    interval do not crash it (faulthandler's watchdog, which it replaced,
    segfaults on this workload within seconds; issue 28)."""
    out = tmp_path / "stacks.txt"
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", CHURN, str(out)], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
    text = out.read_text()
    assert text.count("=== ") > 10 and "in rec" in text


def test_variants_align_every_family_per_configuration(tmp_path, refs, capsys):
    """`python -m benchmarks.variants`: each configuration aligns the set as one
    batch and is scored family by family; wins and losses are against the first."""
    import shutil

    from benchmarks.variants import main

    data = tmp_path / "tiny" / "RV11"
    data.mkdir(parents=True)
    for fam in ("BB11001", "BB12006"):
        for ext in (".tfa", ".ref.fa", ".core"):
            shutil.copy(refs / f"{fam}{ext}", data / f"{fam}{ext}")
    out = tmp_path / "v.json"
    assert main([str(tmp_path / "tiny"), "mode=fast", "mode=fast retree=0 gap_open=1", "--backend", "cpu",
                 "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    first, second = doc["rows"]
    assert first["variant"] == "mode=fast" and set(first["families"]) == {"RV11/BB11001", "RV11/BB12006"}
    assert first["tc_wins_losses_vs_first"] == [0, 0] and first["sets"]["RV11"]["families"] == 2
    assert all(0.0 <= sp <= 1.0 and 0.0 <= tc <= 1.0 for sp, tc in second["families"].values())
    assert second["families"] != first["families"]  # a gap open of 1 changes the alignments
    assert "| mode=fast |" in capsys.readouterr().out


def test_ensemble_benchmark_counts_pairs_and_ranks_them():
    import numpy as np

    from benchmarks.ensemble import column_pairs, roc_auc
    from msa_gpu.io import make_sequences
    from msa_gpu.types import Alignment

    assert roc_auc(np.array([0.9, 0.1]), np.array([3, 0]), np.array([3, 2])) == 1.0
    assert roc_auc(np.array([0.1, 0.9]), np.array([3, 0]), np.array([3, 2])) == 0.0
    assert roc_auc(np.array([0.5, 0.5]), np.array([3, 0]), np.array([3, 2])) == 0.5
    seqs = make_sequences(["a", "b", "c"], [b"AC", b"AC", b"AC"], "protein")
    test = Alignment.from_mask(np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1]], bool))  # c's C shifted out
    correct, total = column_pairs(["a", "b", "c"], test, seqs, ["c", "a", "b"], [b"AC", b"AC", b"AC"], None)
    assert total.tolist() == [3, 1, 0] and correct.tolist() == [3, 1, 0]
    correct, total = column_pairs(["a", "b", "c"], test, seqs, ["a", "b", "c"], [b"AC-", b"A-C", b"AC-"], "101")
    assert total.tolist() == [3, 0, 0] and correct.tolist() == [3, 0, 0]  # column 1 of the reference is not core


def test_ensemble_benchmark_keeps_each_sets_smallest_families():
    from types import SimpleNamespace

    from benchmarks.ensemble import _smallest
    from msa_gpu.io import make_sequences

    fams = [make_sequences(["a", "b"], [b"A" * n, b"C" * n], "protein") for n in (9, 3, 5, 2, 7)]
    picked = [SimpleNamespace(set_name=s, family_id=f"F{i}") for i, s in enumerate("XXXYY")]
    kept, seqs = _smallest(picked, fams, 2)
    assert [f.family_id for f in kept] == ["F1", "F2", "F3", "F4"]  # X's two smallest, then all of Y, in order
    assert [len(s.codes[0]) for s in seqs] == [3, 5, 2, 7]
