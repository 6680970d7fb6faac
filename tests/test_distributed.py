"""Batch runs on Dask: a local cluster of two CPU worker processes gives
the same bytes as one machine."""

import pytest

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.distributed import align_many_dask, groups
from msa_gpu.io import read_sequences

pytest.importorskip("dask.distributed")


def test_groups_cover_everything_once_and_balance_the_cost():
    for weights, parts in (([3, 1, 4, 1, 5, 9, 2, 6], 3), ([1] * 10, 4), ([7], 3), ([100, 1, 1, 1, 1, 1, 1, 90], 2)):
        got = groups(weights, parts)
        assert sorted(i for g in got for i in g) == list(range(len(weights)))
        assert all(got) and len(got) <= parts and all(g == sorted(g) for g in got)
        loads = [sum(weights[i] for i in g) for g in got]
        assert max(loads) <= sum(weights) / len(got) + max(weights)  # greedy's bound
    # one costly family and many cheap ones: the costly one alone (by residues it was a half)
    assert groups([100, 1, 1, 1, 1, 1, 1, 90], 2) == [[0], [1, 2, 3, 4, 5, 6, 7]]


@pytest.mark.slow
def test_local_cluster_output_is_byte_identical(refs, tmp_path):
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    paths = sorted(refs.glob("*.tfa"))[:4]
    families = [read_sequences(p) for p in paths]
    config = AlignerConfig(backend="cpu", mode="fast")
    local = Aligner(config, backend=cpu_backend()).align_many(families)
    spread = align_many_dask(families, config, "local", workers=2)
    assert [r.rows() for r in spread] == [r.rows() for r in local]
    assert [r.guide_tree.children.tolist() for r in spread] == [r.guide_tree.children.tolist() for r in local]
    # the CLI's batch mode, with and without --dask
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["align", *map(str, paths), "--backend", "cpu", "--mode", "fast", "-q", "--outdir"]
    assert CliRunner().invoke(app, args + [str(a)]).exit_code == 0
    r = CliRunner().invoke(app, args + [str(b), "--dask", "local", "--threads", "2"])
    assert r.exit_code == 0, r.output
    assert [f.read_bytes() for f in sorted(a.iterdir())] == [f.read_bytes() for f in sorted(b.iterdir())]


def test_large_family_cut_into_subtrees_gives_the_same_alignment():
    from benchmarks.synthetic import evolve_family
    from msa_gpu.distributed import align_large
    from msa_gpu.io import make_sequences

    fam = evolve_family(400, 80, seed=2)
    seqs = make_sequences(fam.names, fam.sequences, "protein")
    config = AlignerConfig(backend="cpu", mode="large", large_cluster=40)
    whole = Aligner(config, backend=cpu_backend()).align(seqs)
    calls = []

    def in_process(fn, args):
        calls.append(len(args))
        return [fn(*a) for a in args]

    for parts in (2, 7):  # repeats are dropped first, as one machine does
        cut = Aligner(config, backend=cpu_backend()).with_dedupe(
            [seqs], lambda w: [align_large(w[0], config, in_process, parts)])[0]
        assert cut.rows() == whole.rows() and calls[-1] >= parts


def test_pivot_distances_in_row_blocks_give_the_same_tree_and_alignment(monkeypatch):
    from benchmarks.synthetic import evolve_family
    from msa_gpu.distributed.spread import _pivot_rows, align_large
    from msa_gpu.io import make_sequences
    from msa_gpu.tree import partition as large_tree

    fam = evolve_family(400, 80, seed=5)
    seqs = make_sequences(fam.names, fam.sequences, "protein")
    config = AlignerConfig(backend="cpu", mode="large", large_cluster=40)
    whole = Aligner(config, backend=cpu_backend()).align(seqs)
    monkeypatch.setattr(large_tree, "MAP_MIN_ROWS", 100)  # every set of 100 or more members: over the "workers"
    blocks, shared = [], []

    def in_process(fn, args):
        if fn is _pivot_rows:
            blocks.append([len(a[1]) for a in args])
        return [fn(*a) for a in args]

    cut = Aligner(config, backend=cpu_backend()).with_dedupe(  # repeats dropped first, as one machine does
        [seqs], lambda w: [align_large(w[0], config, in_process, 3, share=lambda x: shared.append(x) or x)])[0]
    assert cut.rows() == whole.rows()
    assert len(shared) == 1 and blocks and len(blocks[0]) == 3


@pytest.mark.slow
def test_large_family_over_a_local_cluster(tmp_path, monkeypatch):
    from benchmarks.synthetic import evolve_family
    from msa_gpu.io import make_sequences
    from msa_gpu.tree import partition as large_tree

    monkeypatch.setattr(large_tree, "MAP_MIN_ROWS", 100)  # the pivot distances too go to the workers (scattered k-mers)

    fam = evolve_family(300, 60, seed=3)
    raw = list(fam.sequences) + [fam.sequences[0]] * 5  # repeats: deduplicated first, as on one machine
    seqs = make_sequences(fam.names + [f"copy{i}" for i in range(5)], raw, "protein")
    config = AlignerConfig(backend="cpu", mode="large", large_cluster=30)
    whole = Aligner(config, backend=cpu_backend()).align_many([seqs])[0]
    spread = align_many_dask([seqs], config, "local", workers=2)[0]
    assert spread.rows() == whole.rows()


def test_workers_say_no_backend_fallback(refs, capfd):
    """On a machine with no GPU, backend auto's fallback is said by the run
    (its reporter), not once a worker with a source line (as it was, under
    ``-q`` too): the workers' stderr stays empty."""
    from msa_gpu.backend import probe_gpu

    if probe_gpu()[0]:
        pytest.skip("a GPU is here: the workers do not fall back")
    families = [read_sequences(refs / "BB11001.tfa"), read_sequences(refs / "BB12006.tfa")]
    config = AlignerConfig(cpu_max_seconds=0.0, mode="fast")  # auto, and never the CPU by cost: the probe runs
    spread = align_many_dask(families, config, "local", workers=2)
    assert [r.backend for r in spread] == ["cpu", "cpu"]
    err = capfd.readouterr().err
    assert "RuntimeWarning" not in err and "using the CPU backend" not in err, err
