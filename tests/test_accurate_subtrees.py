"""Accurate mode in pieces (issue 58): a family of more than
``accurate_subtree_seqs`` sequences is cut along its fast tree into
subtrees, each aligned with its own library, merged along that tree."""

import types
from dataclasses import replace

import numpy as np
import pytest
from test_parity import random_family

import msa_gpu.pipeline.builders as aligner_module
import msa_gpu.pipeline.steps as steps_module
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.consistency.memory import library_plan
from msa_gpu.io import make_sequences, read_sequences
from msa_gpu.recipe import describe, recipe_from
from msa_gpu.pipeline.subtrees import cut, cut_at_most, plan_pieces, subset, subtrees
from msa_gpu.tree import leaf_order
from msa_gpu.types import GuideTree, Recipe


def _random_tree(rng, n: int) -> GuideTree:
    active, children = list(range(n)), []
    for node in range(n, 2 * n - 1):
        i, j = sorted(rng.choice(len(active), 2, replace=False))
        children.append([active[i], active[j]])
        active = [a for k, a in enumerate(active) if k not in (i, j)] + [node]
    return GuideTree(n, np.array(children, dtype=np.int64).reshape(-1, 2), np.ones((n - 1, 2)))


def test_cut_at_most_splits_the_largest_first_until_each_fits():
    """Every subtree holds at most ``most`` leaves, they partition the
    leaves, each one's parent was too big (none split needlessly), and the
    roots are `cut`'s for the fewest parts that fit (its largest-first order)."""
    rng = np.random.default_rng(5)
    for _ in range(150):
        n = int(rng.integers(2, 50))
        tree = _random_tree(rng, n)
        _, start, stop = leaf_order(tree)
        size = stop - start
        parent = {int(c): n + k for k, pair in enumerate(tree.children) for c in pair}
        for most in (1, 2, int(rng.integers(1, n + 1)), n - 1, n):
            roots = cut_at_most(tree, most)
            assert all(size[r] <= most for r in roots)
            members = np.concatenate([m for m, _ in subtrees(tree, roots)])
            assert sorted(members.tolist()) == list(range(n))
            assert all(size[parent[r]] > most for r in roots if r in parent)
            parts = len(roots)
            assert cut(tree, parts) == roots and max(size[r] for r in cut(tree, parts - 1)) > most or parts == 1
    with pytest.raises(ValueError):
        cut_at_most(tree, 0)


def test_the_recipe_takes_the_fast_choices_and_the_subtrees_only_where_forced_over_the_size():
    """Forced accurate mode over ``accurate_subtree_seqs`` sequences keeps
    the fast recipe's distances, tree, gaps and scale, with the library
    named for its subtrees; at the size, or with mode auto, nothing changes."""
    forced, k = AlignerConfig(mode="accurate", accurate_subtree_seqs=50), 50
    for n, mean in ((51, 120.0), (300, 250.0), (900, 250.0)):
        r, fast = recipe_from(forced, n, mean, 400), recipe_from(AlignerConfig(mode="fast"), n, mean, 400)
        assert (r.mode, r.subtrees, r.library) == ("accurate", k, "posterior")
        assert replace(r, mode="fast", library=None, subtrees=0, dp_cells=fast.dp_cells) == fast
        assert "in subtrees of at most 50 sequences, each with its own pair-HMM posterior library" in describe(r)
    at = recipe_from(forced, 50, 120.0, 400)
    assert (at.subtrees, at.distance) == (0, "library")
    assert [(r.mode, r.subtrees) for r in (recipe_from(AlignerConfig(), n, 120.0, 400) for n in (200, 201))] == \
        [("accurate", 0), ("fast", 0)]  # mode auto: as before
    assert recipe_from(replace(forced, library_mode="global"), 60, 120.0, 400).library == "global"
    base = recipe_from(forced, 60, 120.0, 400)
    for bad in (dict(subtrees=60), dict(subtrees=-1), dict(mode="fast", library=None), dict(distance="library")):
        with pytest.raises(ValueError, match="subtrees"):
            Recipe(**{**base.__dict__, **bad})
    with pytest.raises(ValueError):
        AlignerConfig(accurate_subtree_seqs=0)


def _cpu(**kw) -> Aligner:
    return Aligner(AlignerConfig(backend="cpu", dedupe=False, **kw), backend=cpu_backend())


def test_subtrees_of_one_sequence_give_the_fast_alignment(refs):
    """With subtrees of one sequence nothing is left to the library: the
    merges above the cut are the whole fast run's, along its tree, with its
    scoring and weights, so the bytes are fast mode's."""
    for name in ("BB20001.tfa", "BB12006.tfa"):
        seqs = read_sequences(refs / name)
        fast = _cpu(mode="fast").align(seqs)
        ones = _cpu(mode="accurate", accurate_subtree_seqs=1).align(seqs)
        assert ones.rows() == fast.rows()
        assert ones.recipe.subtrees == 1 and ones.library is None
        assert np.array_equal(ones.guide_tree.children, fast.guide_tree.children)


def _columns(rows: list[bytes]) -> list[bytes]:
    """The rows without their all-gap columns."""
    keep = [c for c in range(len(rows[0])) if any(r[c] != ord("-") for r in rows)]
    return [bytes(r[c] for c in keep) for r in rows]


@pytest.mark.parametrize("most", [4, 7])
def test_each_subtree_keeps_its_own_accurate_alignment(refs, most):
    """Each subtree's rows in the family's alignment, all-gap columns
    dropped, are that subtree aligned alone in accurate mode (its own
    library and tree); the subtrees are those of the fast tree's cut."""
    seqs = read_sequences(refs / "BB20001.tfa")
    res = _cpu(mode="accurate", accurate_subtree_seqs=most).align(seqs)
    tree = _cpu(mode="fast").align(seqs).guide_tree
    rows = res.rows()
    pieces = subtrees(tree, cut_at_most(tree, most))
    assert len(pieces) > 2 and max(len(m) for m, _ in pieces) <= most
    for members, _ in pieces:
        alone = _cpu(mode="accurate").align(subset(seqs, members))
        assert alone.recipe.library == "posterior" and alone.recipe.subtrees == 0
        assert _columns([rows[i] for i in members]) == alone.rows()
    assert [r.replace(b"-", b"") for r in rows] == [bytes(r) for r in seqs.raw]


def test_gpu_waves_follow_half_the_free_device_memory(monkeypatch):
    """On a device backend the libraries are built in waves of half the
    free memory (`memory_budget` is a quarter of it), by their device plans;
    the bytes do not change."""
    rng = np.random.default_rng(11)
    fams = [make_sequences([f"s{i}" for i in range(n)], random_family(rng, n, 60, 90, "ACDEFGHIKLMNPQRSTVWY"))
            for n in (12, 9, 14)]
    whole = _cpu(mode="accurate").align_many(fams)
    one = library_plan([[fams[2].lengths]]).device_gb * 1e9
    cpu = cpu_backend()
    device = types.SimpleNamespace(**{k: getattr(cpu.ops, k) for k in dir(cpu.ops) if not k.startswith("__")})
    device.memory_budget = lambda: int(one) // 2  # half the free memory: one family's plan at most
    built, real = [], aligner_module.posterior_libraries

    def spy(families, **kw):
        built.append(len(families))
        return real(families, **kw)

    monkeypatch.setattr(aligner_module, "posterior_libraries", spy)
    aligner = Aligner(AlignerConfig(mode="accurate", dedupe=False), backend=replace(cpu, name="device", ops=device))
    waved = aligner.align_many(fams)
    assert built == [1, 1, 1]
    assert [r.rows() for r in waved] == [r.rows() for r in whole]
    built.clear()
    device.memory_budget = lambda: 10 ** 12
    aligner.align_many(fams)
    assert built == [3]


def test_the_plan_stands_in_the_longest_sequences_for_the_largest_subtree():
    seqs = make_sequences([f"s{i}" for i in range(6)], [b"A" * n for n in (5, 9, 3, 9, 7, 1)])
    piece = plan_pieces(seqs, 3)[0]  # the largest stand-in: the 3 longest
    assert piece.names == ("s1", "s3", "s4") and sorted(piece.lengths.tolist()) == [7, 9, 9]
    assert [p.names for p in plan_pieces(seqs, 3)] == [("s1", "s3", "s4"), ("s0", "s2", "s5")]


@pytest.mark.parametrize("n, lo, hi, most", [(300, 50, 150, 40), (120, 100, 300, 16)])
def test_the_plan_of_the_stand_ins_holds_the_subtrees_libraries(n, lo, hi, most):
    """The command line's plan (`library_memory` of `plan_pieces`) is at
    least the plan of the subtrees the run cuts, whose libraries are built
    together in groups: the largest subtree alone is not (it planned 0.045
    GB host against the subtrees' 0.063 GB for the first family; the
    stand-ins plan 0.24 GB, the cut's pieces being smaller than 40)."""
    from msa_gpu.consistency import library_memory

    rng = np.random.default_rng(2)
    seqs = make_sequences([f"s{i}" for i in range(n)], random_family(rng, n, lo, hi, "ACDEFGHIKLMNPQRSTVWY"))
    tree = _cpu(mode="fast").align(seqs).guide_tree
    cut = [subset(seqs, m) for m, _ in subtrees(tree, cut_at_most(tree, most)) if len(m) > 1]
    for gpu in (False, True):
        run, plan = library_memory(cut, gpu), library_memory(plan_pieces(seqs, most), gpu)
        assert plan.entries >= run.entries and plan.host_gb >= run.host_gb and plan.device_gb >= run.device_gb


def test_the_command_line_says_subtrees_and_aligns(tmp_path):
    """``--mode accurate`` on a family over the size: the recipe line says
    so and the output holds every sequence."""
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app

    rng = np.random.default_rng(2)
    raw = random_family(rng, 205, 20, 30, "ACDEFGHIKLMNPQRSTVWY")
    fa = tmp_path / "in.fa"
    fa.write_text("".join(f">s{i}\n{r.decode()}\n" for i, r in enumerate(raw)))
    out = tmp_path / "out.fa"
    run = CliRunner().invoke(app, ["align", str(fa), "-o", str(out), "--mode", "accurate", "--backend", "cpu"])
    assert run.exit_code == 0, run.output
    assert "accurate in subtrees of at most 200 sequences" in run.output
    got = read_sequences(out)
    assert len(got) == 205 and got.raw == tuple(raw)


def test_maxiterate_refines_the_merged_alignment_once(refs, monkeypatch):
    """With refinement rounds the fast run that gives the tree is not
    refined (its alignment is dropped): the whole family is refined once,
    after the merges, and the timings' rounds and accepted cuts count that
    refinement beside the subtrees' own."""
    seqs = read_sequences(refs / "BB20001.tfa")
    calls, real = [], steps_module.refine_alignments

    def spy(jobs, alignments, rounds, *args, **kw):
        out = real(jobs, alignments, rounds, *args, **kw)
        calls.append(([len(j.seqs) for j in jobs], out.rounds, out.accepted))
        return out

    monkeypatch.setattr(steps_module, "refine_alignments", spy)
    res = _cpu(mode="accurate", accurate_subtree_seqs=5, maxiterate=3).align(seqs)
    assert [sizes for sizes, _, _ in calls if len(seqs) in sizes] == [[len(seqs)]]
    assert res.timings["refine_rounds"] == max(max(r) for _, r, _ in calls)
    assert res.timings["refine_accepted"] == sum(sum(a) for _, _, a in calls)


def test_a_given_library_aligns_its_family_whole(refs):
    """A family that comes with its library is aligned whole with it (the
    library is not dropped for subtrees): the bytes are those of the whole
    family's accurate run, and a subtrees recipe beside a library is refused."""
    seqs = read_sequences(refs / "BB20001.tfa")
    whole = _cpu(mode="accurate", accurate_subtree_seqs=len(seqs)).align(seqs)
    assert whole.library is not None and whole.recipe.subtrees == 0
    pieces = _cpu(mode="accurate", accurate_subtree_seqs=5)
    given = pieces.align_many([seqs], libraries=[whole.library])[0]
    assert given.recipe.subtrees == 0 and given.rows() == whole.rows()
    with pytest.raises(ValueError, match="subtrees"):
        pieces.align_many([seqs], libraries=[whole.library], recipes=pieces.plan([seqs]))


def test_an_ensemble_builds_no_whole_family_library(refs, monkeypatch):
    """An ensemble of a family aligned in subtrees builds only its
    subtrees' libraries (a library over the whole family, for its
    replicates, would be the memory the subtrees avoid, and unused)."""
    from msa_gpu.workflows.ensemble import align_ensemble

    seqs = read_sequences(refs / "BB20001.tfa")
    built, real = [], aligner_module.posterior_libraries

    def spy(families, **kw):
        built.extend(len(f) for f in families)
        return real(families, **kw)

    monkeypatch.setattr(aligner_module, "posterior_libraries", spy)
    ens = align_ensemble(seqs, AlignerConfig(backend="cpu", mode="accurate", accurate_subtree_seqs=5), 3,
                         perturb=("gaps",))
    assert built and max(built) <= 5
    assert all(r.recipe.subtrees == 5 for r in ens.replicates)


def test_model_perturbation_is_refused_for_a_family_in_subtrees(refs):
    """``--perturb model`` perturbs whole-family libraries, which a family in
    subtrees does not build: refused in one line, naming the size."""
    from msa_gpu.workflows.ensemble import align_ensemble
    from msa_gpu.errors import InputError

    seqs = read_sequences(refs / "BB20001.tfa")
    with pytest.raises(InputError, match="16 sequences is aligned in subtrees of at most 5"):
        align_ensemble(seqs, AlignerConfig(backend="cpu", mode="accurate", accurate_subtree_seqs=5), 2,
                       perturb=("model",))


def test_the_cut_says_the_plan_of_its_own_subtrees(refs):
    """After the cut the run says the library plan of the subtrees it made
    (the command line's plan before it is a bound from stand-ins): their
    count, the largest, and `library_memory` of those subtrees."""
    from msa_gpu.consistency import library_memory

    class Notes:
        def __init__(self):
            self.lines = []

        def note(self, text):
            self.lines.append(text)

        def stage(self, name):
            import contextlib

            return contextlib.nullcontext()

    seqs = read_sequences(refs / "BB20001.tfa")
    notes = Notes()
    Aligner(AlignerConfig(backend="cpu", mode="accurate", accurate_subtree_seqs=6, dedupe=False),
            backend=cpu_backend(), reporter=notes).align(seqs)
    tree = _cpu(mode="fast").align(seqs).guide_tree
    made = [subset(seqs, m) for m, _ in subtrees(tree, cut_at_most(tree, 6))]
    from msa_gpu.backend.cost import usable_cores

    plan = library_memory([c for c in made if len(c) > 1], False, usable_cores(None))
    assert notes.lines == [f"{len(made)} subtrees of at most {max(map(len, made))} sequences: {plan.line(False)}"]


def test_perturbed_gap_costs_reach_the_subtrees(refs):
    """An ensemble's replicates perturb their recipes' gap costs; in a
    family aligned in subtrees the subtrees take them too (they took the
    settings' costs, so every replicate's subtrees were replicate 0's)."""
    from msa_gpu.workflows.ensemble import align_ensemble

    seqs = read_sequences(refs / "BB20001.tfa")
    cfg = AlignerConfig(backend="cpu", mode="accurate", accurate_subtree_seqs=6, dedupe=False)
    ens = align_ensemble(seqs, cfg, 3, perturb=("gaps",), seed=1)
    tree = _cpu(mode="fast").align(seqs).guide_tree
    members = max((m for m, _ in subtrees(tree, cut_at_most(tree, 6))), key=len)
    inside = [_columns([r.rows()[i] for i in members]) for r in ens.replicates]
    assert any(rows != inside[0] for rows in inside[1:])
    r0 = ens.replicates[0]
    assert r0.rows() == Aligner(cfg, backend=cpu_backend()).align(seqs).rows()


def test_subtrees_under_the_least_size_stay_in_the_fast_merges(refs):
    """``accurate_subtree_min``: a subtree of fewer sequences is not aligned
    alone in accurate mode; its merges are the fast run's. With every
    subtree under it the bytes are fast mode's; above it each kept subtree
    still holds its own accurate alignment."""
    seqs = read_sequences(refs / "BB20001.tfa")
    fast = _cpu(mode="fast").align(seqs)
    assert _cpu(mode="accurate", accurate_subtree_seqs=6, accurate_subtree_min=7).align(seqs).rows() == fast.rows()
    rows = _cpu(mode="accurate", accurate_subtree_seqs=6, accurate_subtree_min=4).align(seqs).rows()
    pieces = [m for m, _ in subtrees(fast.guide_tree, cut_at_most(fast.guide_tree, 6))]
    big = [m for m in pieces if len(m) >= 4]
    assert big and len(big) < len(pieces)
    for members in big:
        assert _columns([rows[i] for i in members]) == _cpu(mode="accurate").align(subset(seqs, members)).rows()
    assert rows != _cpu(mode="accurate", accurate_subtree_seqs=6).align(seqs).rows()
