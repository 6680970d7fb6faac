"""The family pipeline's seams (issue 59, capability 2): `msa_gpu.workflows.ensemble`,
`msa_gpu.distributed` and the pipeline's steps call the aligner's public
steps, never its private attributes; a family's state moves through named
steps with every family of the batch together; batching for the server is a
hook passed to the aligner, not a thread-local it reads."""

from __future__ import annotations

import ast
from pathlib import Path

from msa_gpu.aligner import Aligner
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences

PACKAGE = Path(__file__).resolve().parent.parent / "msa_gpu"
CALLERS = [*sorted((PACKAGE / "workflows").glob("*.py")), *sorted((PACKAGE / "distributed").glob("*.py")),
           *sorted((PACKAGE / "pipeline").glob("*.py"))]


def private_uses(source: str) -> list[str]:
    """Each use of one of `Aligner`'s private attributes, its class's or an
    instance's (``x._backend``), in ``source``."""
    names = {*vars(Aligner), *vars(Aligner(AlignerConfig(backend="cpu")))}
    private = {name for name in names if name.startswith("_") and not name.startswith("__")}
    return [ast.unparse(n) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and n.attr in private]


def test_ensemble_distributed_and_the_pipeline_call_public_steps():
    assert {p.name: private_uses(p.read_text()) for p in CALLERS if private_uses(p.read_text())} == {}
    assert private_uses("xp = context._backend.xp")  # (the scan sees one)


def test_a_batch_moves_through_the_steps_together(monkeypatch):
    """Each step takes every family of the batch: one `progressive_align`
    call a tree round with every family's job (the GPU's batch), and each
    family's state (`Family`) carries its products into its result."""
    import numpy as np

    from msa_gpu.backend import cpu_backend
    from msa_gpu.pipeline import Family, align_families, steps

    rng = np.random.default_rng(5)
    fams = [make_sequences([f"s{i}" for i in range(n)],
                           ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), size=30 + i)).encode() for i in range(n)])
            for n in (4, 6, 5)]
    aligner = Aligner(AlignerConfig(backend="cpu", mode="fast"), backend=cpu_backend())
    recipes = aligner.plan(fams)
    calls = []
    real = steps.progressive_align
    monkeypatch.setattr(steps, "progressive_align", lambda jobs, *a, **k: calls.append(len(jobs)) or real(jobs, *a, **k))
    states = [Family(s, r) for s, r in zip(fams, recipes)]
    results = align_families(aligner, states)
    assert calls == [3] * (1 + max(r.retree for r in recipes)) and calls
    for state, res in zip(states, results):
        assert res.alignment is state.alignment and res.guide_tree is state.tree is state.job.tree
        assert res.schedule is state.schedule and res.recipe is state.recipe and res.distances is state.distances
    monkeypatch.setattr(steps, "progressive_align", real)
    assert [r.rows() for r in results] == [r.rows() for r in aligner.align_many(fams)]


def test_the_aligner_and_the_pipeline_are_small_modules():
    """No module of the aligner or its pipeline over 600 lines."""
    sizes = {p.name: len(p.read_text().splitlines()) for p in [PACKAGE / "aligner.py", *(PACKAGE / "pipeline").glob("*.py")]}
    assert max(sizes.values()) <= 600, sizes


def test_batching_is_a_hook_passed_in():
    """A plain `align_many` call goes to the aligner's ``batch`` hook; one
    given a tree, distances or a library does not; the aligner keeps no
    thread-local."""
    seqs = make_sequences(["a", "b"], [b"MKTAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQISFVKSHFSRQ"])
    calls = []

    def hook(aligner, families, recipes):
        calls.append(len(families))
        return ["batched"] * len(families)

    aligner = Aligner(AlignerConfig(backend="cpu"), batch=hook)
    assert aligner.align_many([seqs, seqs]) == ["batched", "batched"] and calls == [2]
    tree = Aligner(AlignerConfig(backend="cpu")).align(seqs).guide_tree
    assert aligner.align(seqs, guide_tree=tree).rows() == Aligner(AlignerConfig(backend="cpu")).align(seqs).rows()
    assert calls == [2] and Aligner(AlignerConfig(backend="cpu")).batch is None
    source = (PACKAGE / "aligner.py").read_text() if (PACKAGE / "aligner.py").exists() else ""
    assert "threading.local" not in source and "gathering" not in source


def test_a_call_moves_through_dedupe_recipe_and_expand():
    """`align_batch`'s steps on each family's record: `dedupe` keeps a
    family's distinct sequences and the inverse map (not where distances came
    with it) and cuts its given tree down to them; `recipe` makes
    `Aligner.plan`'s recipes and refuses one not made for the distinct
    sequences; `expand` copies the repeats' rows back, as `align_many` gives."""
    import pytest

    from msa_gpu.pipeline import Given, as_given, dedupe, expand, in_pieces, recipe

    rows = [b"MKTAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQISFVKSHFSRQ", b"MKTAYIAKQRQISFVKSHFSRQ", b"MKAYIAKQRQISFVHFSRQ"]
    seqs = make_sequences([f"s{i}" for i in range(4)], rows)
    aligner = Aligner(AlignerConfig(backend="cpu", mode="fast"))
    whole = aligner.align(seqs)
    given = as_given([seqs, seqs, seqs], [None, whole.distances, None], [None, None, whole.guide_tree])
    assert [g.dedupe for g in given] == [True, False, True] and isinstance(given[0], Given)
    work = dedupe(aligner.config, given)
    assert [len(w.seqs) for w in work] == [3, 4, 3] and work[1].inverse is None
    assert work[0].inverse.tolist() == [0, 1, 0, 2] and work[2].tree.n_leaves == 3 and work[0].tree is None
    plan = recipe(aligner.config, work)
    assert plan == aligner.plan([seqs] * 3, [None, None, whole.guide_tree], [None, whole.distances, None])
    with pytest.raises(ValueError):
        recipe(aligner.config, work, [whole.recipe] * 3)  # made for all four sequences, not the distinct three
    results = expand(work, in_pieces(aligner, [w.family(r) for w, r in zip(work, plan)]))
    calls = aligner.align_many([seqs] * 3, [None, whole.distances, None], [None, None, whole.guide_tree])
    assert [r.rows() for r in results] == [r.rows() for r in calls]
    assert [r.guide_tree.n_leaves for r in results] == [4] * 3 and all(r.sequences is seqs for r in results)
    assert results[0].rows()[2] == results[0].rows()[0] and results[0].rows()[0] != results[0].rows()[1]
