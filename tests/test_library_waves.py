"""A CPU batch's pair-HMM libraries in waves (issue 57: a batch of the
RNA dev set held 4.6 GB, all its libraries at once)."""

import numpy as np
import pytest
from test_parity import random_family

import msa_gpu.pipeline.builders as aligner_module
from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.consistency import library_waves
from msa_gpu.consistency.memory import library_plan
from msa_gpu.io import make_sequences, read_sequences


def _family(rng, n, length, letters, name):
    return make_sequences([f"{name}{i}" for i in range(n)], random_family(rng, n, length // 2, length, letters))


def test_waves_hold_at_most_the_budget_each():
    """Each wave's plans add up to at most the budget, unless one family
    alone is over it; families keep their order; those without a library go
    with the first wave; each family is in exactly one wave."""
    lengths = [[120] * 30, None, [120] * 30, [60] * 8, [300] * 60, None, [120] * 30]
    one = library_plan([[[120] * 30]]).host_gb * 1e9
    for budget in (1, int(one), int(one) + 1, int(2 * one), 10 ** 12):
        waves = library_waves(lengths, budget)
        assert sorted(f for w in waves for f in w) == list(range(len(lengths)))
        assert all(w == sorted(w) for w in waves) and [w[0] for w in waves] == sorted(w[0] for w in waves)
        assert {1, 5} <= set(waves[0])
        for w in waves:
            held = [library_plan([[lengths[f]]]).host_gb * 1e9 for f in w if lengths[f] is not None]
            assert sum(held) <= budget or len(held) == 1
    assert len(library_waves(lengths, 10 ** 12)) == 1
    assert len(library_waves(lengths, 1)) == 5  # every library family alone
    assert [len(w) for w in library_waves(lengths, int(2 * one))][:1] == [4]  # 0, 1, 2, 5 just fit: two plans
    assert library_waves(lengths, int(2 * one) - 1)[0] == [0, 1, 5]  # one byte less: the second starts a wave


@pytest.mark.filterwarnings("ignore:one sequence")
def test_a_batch_in_waves_gives_the_same_alignments(refs, monkeypatch):
    """The same bytes with and without waves, on a batch of protein and
    RNA families of different sizes; with waves no call builds more than
    its budget (a family alone excepted), the results carry no library and
    the run's timings add up over the waves."""
    rng = np.random.default_rng(3)
    fams = [read_sequences(t) for t in sorted((refs / "bralibase3").glob("*.tfa"))]
    fams += [_family(rng, 12, 90, "ACDEFGHIKLMNPQRSTVWY", "p"), read_sequences(refs / "BB11001.tfa"),
             make_sequences(["one"], [b"ACGUACGU"]), _family(rng, 20, 70, "ACGU", "r")]
    whole = Aligner(AlignerConfig(), backend=cpu_backend()).align_many(fams)
    assert all(r.library is not None for r in whole if len(r.sequences) > 1)
    built, real = [], aligner_module.posterior_libraries

    def spy(families, **kw):
        built.append([len(f) for f in families])
        return real(families, **kw)

    monkeypatch.setattr(aligner_module, "posterior_libraries", spy)
    budget = int(library_plan([[[110] * 10]]).host_gb * 1e9)  # about one of the bundled RNA cases
    waved = Aligner(AlignerConfig(library_memory=budget), backend=cpu_backend()).align_many(fams)
    assert [r.rows() for r in waved] == [r.rows() for r in whole]
    assert len(built) > 2 and sum(map(len, built)) == sum(len(f) > 1 for f in fams)
    assert all(r.library is None for r in waved)
    assert waved[0].timings is waved[-1].timings and waved[0].timings["library"] > 0
    built.clear()
    again = Aligner(AlignerConfig(), backend=cpu_backend()).align_many(fams)  # the default budget: one wave
    assert len(built) == 1 and [r.rows() for r in again] == [r.rows() for r in whole]


def test_library_memory_is_checked():
    with pytest.raises(ValueError, match="library_memory"):
        AlignerConfig(library_memory=0)


def test_nucleotide_plans_hold_their_entries():
    """ProbConsRNA's posteriors spread over more cells than protein's: the
    random related RNA family above held 123,091 entries in a pass against a
    protein-sized plan of 114,570 (and warned); its nucleotide plan holds it,
    and bralibase3's bundled cases stay within it too."""
    import warnings

    from msa_gpu.consistency import posterior_libraries

    rng = np.random.default_rng(3)
    _family(rng, 12, 90, "ACDEFGHIKLMNPQRSTVWY", "p")  # (the draw the test above makes before its RNA family)
    rna = _family(rng, 20, 70, "ACGU", "r")
    fams = [rna, make_sequences([f"d{i}" for i in range(20)], [s.replace(b"U", b"T") for s in rna.raw])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        posterior_libraries(fams)
    rows = (len(rna) - 1) * int(rna.lengths.sum())
    assert library_plan([[rna.lengths]], nucleotide=True).entries == 16 * rows // 2 > \
        library_plan([[rna.lengths]]).entries


def test_device_plans_count_the_dense_batch():
    """On the device a phase writes its pairs' dense matrices in a batch (8
    bytes a cell of every pair s < t, at most `DENSE_BATCH_BYTES`): the plan
    counts it, and a wave counts it once."""
    from msa_gpu.backend import DENSE_BATCH_BYTES

    small, large = [100] * 10, [400] * 200
    cells = (1000 ** 2 - 10 * 100 ** 2) // 2
    p = library_plan([[small]])
    assert p.dense_gb * 1e9 == 8 * cells and p.device_gb * 1e9 == pytest.approx(p.entries * 92 + 8 * 9 * 1000 + 8 * cells)
    assert library_plan([[large]]).dense_gb * 1e9 == DENSE_BATCH_BYTES
    big = library_plan([[large]])
    held = (big.device_gb - big.dense_gb) * 1e9
    assert library_waves([large, large], int(2 * held + DENSE_BATCH_BYTES) + 1, gpu=True) == [[0, 1]]
    assert library_waves([large, large], int(2 * held + DENSE_BATCH_BYTES) - 10 ** 6, gpu=True) == [[0], [1]]


def test_a_plan_of_several_groups_takes_each_bound_from_its_own_largest():
    """Groups built one after another: the plan's entries, host and device
    bytes are each the most of any group, not all three from the group
    with the most host bytes (a long pair's work space outweighs many
    short pairs on the host, not on the device); a flag a group must match
    the groups."""
    long_pair, short = [[1000, 1000]], [[200] * 10]
    alone = [library_plan([g]) for g in (long_pair, short)]
    both = library_plan([long_pair, short])
    assert alone[0].host_gb > alone[1].host_gb and alone[0].device_gb < alone[1].device_gb
    assert (both.entries, both.host_gb, both.device_gb, both.dense_gb) == (
        max(p.entries for p in alone), max(p.host_gb for p in alone), max(p.device_gb for p in alone),
        max(p.dense_gb for p in alone))
    assert library_plan([long_pair, short], nucleotide=[False, True]).entries == \
        library_plan([short], nucleotide=True).entries
    with pytest.raises(ValueError):
        library_plan([long_pair, short], nucleotide=[True])


def test_the_device_csr_row_pointers_are_the_cpu_counting_sorts():
    """The device side of `ordered_csr` (posterior_gpu.ordered_csr: its row
    pointers a search of the sorted keys, not a bincount), its source run
    with NumPy in CuPy's place (no GPU needed), gives the CPU counting sort's
    rows: pointers, columns and values."""
    import ast
    from pathlib import Path

    from msa_gpu.consistency import probabilistic as pr

    source = Path(pr.__file__).parents[1] / "backend" / "posterior_gpu.py"
    tree = ast.parse(source.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "ordered_csr")
    space: dict = {"cp": np, "np": np}
    exec(compile(ast.Module([fn], []), str(source), "exec"), space)
    rng = np.random.default_rng(8)
    protein = "ACDEFGHIKLMNPQRSTVWY"
    group = pr._Group([_family(rng, 7, 50, protein, "p"), _family(rng, 5, 40, protein, "q")])
    flat = group.posteriors(pr.model_for(group.families[0].alphabet), pr.CUTOFF, np)
    cpu = group.ordered_csr(flat, np)
    first = pr.offsets(np.concatenate([group.lengths[group.glob[:, 0]], group.lengths[group.glob[:, 1]]]))
    indptr, col, val = space["ordered_csr"](*(a.copy() for a in flat), first, len(group.local),
                                            int(max(group.lengths.max(initial=0), 1)))
    nnz = 2 * len(flat[0])
    assert int(indptr[-1]) == nnz and np.array_equal(indptr, cpu[0])
    assert np.array_equal(col, cpu[1][:nnz]) and np.array_equal(val, cpu[2][:nnz])
