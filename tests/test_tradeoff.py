"""``python -m benchmarks tradeoff`` on a tiny BAliBASE-layout folder built
from references/ (one family a set), run in-process on the CPU backend.

No peer needs to be installed: FAMSA is made unavailable (pyfamsa hidden), and
the like-for-like subset logic is checked on made-up rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys

import pytest

from benchmarks import tradeoff
from benchmarks.__main__ import main

SETS = {"BB11001": "RV11", "BB12006": "RV12"}


@pytest.fixture
def tinybench(tmp_path, refs):
    data = tmp_path / "tinybench"
    for fam, rv in SETS.items():
        (data / rv).mkdir(parents=True)
        for suffix in (".tfa", ".ref.fa", ".core"):
            shutil.copy(refs / f"{fam}{suffix}", data / rv / f"{fam}{suffix}")
    return data


def test_tradeoff_fast_mode_and_an_unavailable_peer(tinybench, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyfamsa", None)  # not installed, even where it is
    out = tmp_path / "results"
    rc = main(["tradeoff", "--data", str(tinybench), "--modes", "fast", "--peers", "famsa", "--backend", "cpu",
               "--out", str(out), "--tag", "t", "--quiet"])
    assert rc == 0
    doc = json.loads((out / "t-tradeoff-tinybench.json").read_text())
    assert doc["modes"] == ["fast"] and doc["sets"] == ["RV11", "RV12"] and doc["families"] == 2
    fast, famsa = doc["entries"]
    assert fast["label"] == "msagpu fast" and fast["mode"] == "fast" and fast["kind"] == "msagpu"
    assert "--mode fast" in fast["command"] and "--backend cpu" in fast["command"]
    assert fast["n_ok"] == fast["n_families"] == 2 and fast["wall_s"] > 0 and fast["device"] == "cpu"
    assert set(fast["per_set"]) == {"RV11", "RV12"}
    for value in [fast["mean_sp"], fast["mean_tc"]] + [v[k] for v in fast["per_set"].values() for k in ("sp", "tc")]:
        assert 0.0 <= value <= 1.0
    assert famsa["label"] == "famsa" and famsa["available"] is False and "pyfamsa" in famsa["reason"]
    md = (out / "t-tradeoff-tinybench.md").read_text()
    assert "| msagpu fast |" in md and "famsa" in md and "--mode fast" in md
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "t-tradeoff-tinybench-tc-vs-time.png").is_file() and doc["plot"]
    else:
        assert doc["plot"] is None and "matplotlib" in doc["plot_skipped"]
    assert "msagpu fast" in capsys.readouterr().out


def test_unknown_peer_set_fails_before_any_run(tinybench, tmp_path, capsys):
    rc = main(["tradeoff", "--data", str(tinybench), "--modes", "fast", "--peers", "kalign", "--peer-sets", "RV50",
               "--backend", "cpu", "--out", str(tmp_path / "results")])
    assert rc == 2 and "RV50" in capsys.readouterr().err and not (tmp_path / "results").exists()


def test_plot_skipped_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert tradeoff.plot({"entries": []}, tmp_path / "x.png") == {"plot": None,
                                                                 "plot_skipped": "matplotlib not installed"}


def test_peer_specs():
    assert tradeoff.parse_peer("mafft-linsi:4") == tradeoff.PeerSpec("mafft", "linsi", 4)
    assert tradeoff.parse_peer("mafft-auto").label == "mafft auto"
    assert tradeoff.parse_peer("kalign") == tradeoff.PeerSpec("kalign")
    for bad in ("mafft-nosuchmode", "famsa:0", "famsa:x"):
        with pytest.raises(argparse.ArgumentTypeError):
            tradeoff.parse_peer(bad)


def _row(set_name, family, sp, tc, status="ok"):
    return {"set": set_name, "family": family, "status": status, "sp": sp, "tc": tc}


def test_like_for_like_is_msagpu_on_the_peers_completed_families():
    ours = {"fast": [_row("RV11", "a", 0.5, 0.2), _row("RV11", "b", 0.7, 0.4), _row("RV12", "c", 0.9, 0.8)]}
    everything = [_row("RV11", "a", 0.1, 0.1), _row("RV11", "b", 0.1, 0.1), _row("RV12", "c", 0.1, 0.1)]
    assert tradeoff.like_for_like(everything, ours, ["RV11", "RV12"]) is None
    subset = [_row("RV11", "a", 0.6, 0.3), _row("RV12", "c", None, None, status="timeout")]
    got = tradeoff.like_for_like(subset, ours, ["RV11", "RV12"])["fast"]
    assert got["n_families"] == 1 and got["mean_sp"] == 0.5 and got["mean_tc"] == 0.2
    assert got["per_set"] == {"RV11": {"n": 1, "n_ok": 1, "sp": 0.5, "tc": 0.2}}


def test_probcons_is_probed_from_an_unpacked_package(tmp_path):
    """ProbCons (issue 29's reference implementation) runs as a peer from a
    ``dpkg -x`` folder: found under usr/bin, version read from its banner,
    the alignment taken from its standard output."""
    from benchmarks.peers import RunOptions, probe

    exe = tmp_path / "usr" / "bin" / "probcons"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\necho\necho 'PROBCONS version 1.12 - align multiple protein sequences' >&2\n")
    exe.chmod(0o755)
    info = probe("probcons", RunOptions(peer_prefix=str(tmp_path)))
    assert info.available and info.version == "1.12" and info.stdout_is_output
    assert info.argv == [str(exe), "{input}"] and "probcons IN.fa" in info.how
    assert not probe("probcons", RunOptions(peer_prefix=str(tmp_path / "none"))).available or shutil.which("probcons")


def test_latency_runs_one_process_a_family(tinybench, tmp_path):
    """``python -m benchmarks latency``: one small family best of runs and a
    serial loop, a process each, scored; a missing peer is said, not run."""
    rc = main(["latency", "--data", str(tinybench), "--count", "2", "--repeat", "1", "--aligners", "msagpu,clustalo",
               "--backend", "cpu", "--peer-prefix", str(tmp_path / "none"), "--workdir", str(tmp_path / "w"),
               "--out", str(tmp_path / "r"), "--tag", "t"])
    assert rc == 0
    doc = json.loads((tmp_path / "r" / "t-latency-tinybench.json").read_text())
    mine = doc["entries"][0]
    assert mine["aligner"] == "msagpu" and doc["count"] == 2 and mine["single_best_s"] > 0
    assert mine["loop_tc"] > 0.5 and mine["single_tc"] > 0.9
    if shutil.which("clustalo") is None:
        assert doc["not_run"] == {"clustalo": "not installed"}


def test_latency_spread_gives_each_familys_time_by_backend(tinybench, tmp_path):
    """``--pick spread`` with msagpu-cpu: families spread over sizes, each
    with its time, size and DP cells, in a per-family table."""
    rc = main(["latency", "--data", str(tinybench), "--count", "2", "--repeat", "1", "--aligners", "msagpu-cpu",
               "--pick", "spread", "--workdir", str(tmp_path / "w"), "--out", str(tmp_path / "r"), "--tag", "t"])
    assert rc == 0
    doc = json.loads((tmp_path / "r" / "t-latency-tinybench.json").read_text())
    rows = doc["entries"][0]["families"]
    assert doc["pick"] == "spread" and len(rows) == 2 and "--backend" in doc["entries"][0]["argv"]
    assert doc["entries"][0]["argv"][doc["entries"][0]["argv"].index("--backend") + 1] == "cpu"
    assert all(r["s"] > 0 and r["n"] >= 2 and r["dp_cells"] > 0 for r in rows)
    assert "| DP cells |" in (tmp_path / "r" / "t-latency-tinybench.md").read_text()
