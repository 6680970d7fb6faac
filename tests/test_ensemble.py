"""Ensembles (`msa_gpu.workflows.ensemble`, `msagpu align --ensemble N`): replicate 0
is the default alignment, a seed gives the same bytes, the confidences and
the dispersion follow the replicates, and every output says what it should."""

from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from msa_gpu.aligner import Aligner
from msa_gpu.frontends.msagpu import app
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.workflows.ensemble import agreement, align_ensemble, residue_columns
from msa_gpu.io import read_aligned, read_sequences
from msa_gpu.types import Alignment


@pytest.fixture(scope="module")
def family(request):
    from conftest import REFS

    return read_sequences(REFS / "BB12006.tfa")


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_replicate_zero_is_the_default_and_a_seed_repeats(family, mode):
    config = AlignerConfig(backend="cpu", mode=mode)
    default = Aligner(config).align(family).rows()
    one = align_ensemble(family, config, 5, seed=3)
    again = align_ensemble(family, config, 5, seed=3)
    other = align_ensemble(family, config, 5, seed=4)
    assert one.replicates[0].rows() == default
    assert [r.rows() for r in one.replicates] == [r.rows() for r in again.replicates]
    assert one.chosen == again.chosen and one.dispersion == again.dispersion
    assert len({tuple(r.rows()) for r in one.replicates}) > 1  # the perturbations do change something
    assert [r.rows() for r in one.replicates] != [r.rows() for r in other.replicates]
    for rep in one.replicates:  # each replicate is an alignment of the same sequences
        assert [r.replace(b"-", b"") for r in rep.rows()] == list(family.raw)
    assert one.chosen == int(np.argmax(one.support.mean))
    assert 0.0 < one.dispersion < 1.0


def test_gaps_alone_keep_the_tree(family):
    ens = align_ensemble(family, AlignerConfig(backend="cpu", mode="fast"), 3, perturb=("gaps",), seed=1)
    trees = [r.guide_tree.children.tolist() for r in ens.replicates[1:]]
    assert trees[0] == trees[1]


def test_agreement_by_hand():
    same = Alignment.from_mask(np.array([[1, 1, 1], [1, 0, 1]], bool))
    cols = [residue_columns(same)] * 3
    s = agreement(cols, [3, 3, 3])
    assert s.dispersion == 0.0 and s.column[0].tolist() == [1.0, 0.0, 1.0]  # a lone residue supports nothing
    # three rows; replicate b moves row 2's residue away from column 0
    a = Alignment.from_mask(np.array([[1, 0], [1, 0], [1, 0]], bool))
    b = Alignment.from_mask(np.array([[1, 0], [1, 0], [0, 1]], bool))
    s = agreement([residue_columns(a), residue_columns(b)], [2, 2])
    assert s.column[0].tolist() == [1 / 3, 0.0]  # of a's three pairs, b keeps one
    assert s.column[1].tolist() == [1.0, 0.0]
    assert s.pair[0, 1] == pytest.approx(1 / 3) and s.pair[1, 0] == 1.0
    assert s.dispersion == pytest.approx(1 - (1 / 3 + 1) / 2)


def _efa(path):
    blocks, label = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("<"):
            label = line[1:]
            blocks[label] = []
        else:
            blocks[label].append(line)
    return blocks


def test_cli_writes_every_ensemble_output(tmp_path, refs):
    out, efa, cc, kept = (tmp_path / n for n in ("o.fa", "all.efa", "cc.txt", "kept.txt"))
    r = CliRunner().invoke(app, ["align", str(refs / "BB12006.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--mode", "fast", "--ensemble", "4", "--seed", "2", "--ensemble-out", str(efa),
                                 "--column-scores", str(cc), "--min-confidence", "0.6", "--kept-columns", str(kept)])
    assert r.exit_code == 0, r.output
    said = [line for line in r.output.splitlines() if "ensemble of 4" in line]
    assert said and "dispersion" in said[0]
    chosen = int(said[0].split("wrote replicate ")[1].split()[0])
    blocks = _efa(efa)
    assert list(blocks) == ["none.0", "tree+gaps.1", "tree+gaps.2", "tree+gaps.3"]
    names, rows = read_aligned(out)
    full_rows = [row for row in _rows_of(blocks[list(blocks)[chosen]])]
    columns = [int(x) - 1 for x in kept.read_text().split()]
    scores = [float(x) for x in cc.read_text().split()]
    assert len(rows[0]) == len(columns) == len(scores) > 0 and min(scores) >= 0.6
    assert [bytes(row[c] for c in columns) for row in full_rows] == rows  # the kept columns of the chosen
    # --replicate K writes block K, whole
    r = CliRunner().invoke(app, ["align", str(refs / "BB12006.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--mode", "fast", "--ensemble", "4", "--seed", "2", "--replicate", "2", "-q"])
    assert r.exit_code == 0 and read_aligned(out)[1] == _rows_of(blocks["tree+gaps.2"])


def _rows_of(lines):
    rows, cur = [], None
    for line in lines:
        if line.startswith(">"):
            cur = []
            rows.append(cur)
        else:
            cur.append(line)
    return ["".join(r).encode() for r in rows]


def test_stockholm_carries_the_confidences(tmp_path, refs):
    out = tmp_path / "o.sto"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--ensemble", "3", "-q"])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "#=GC PP_cons" in text and "ensemble replicate" in text


@pytest.mark.parametrize("args, said", [
    (["--replicate", "1"], "go with --ensemble N"),
    (["--ensemble", "3", "--perturb", "trees"], "--perturb: expected"),
    (["--ensemble", "3", "--min-confidence", "1.5"], "--min-confidence 1.5"),
    (["--ensemble", "3", "--kept-columns", "k.txt"], "--kept-columns goes with --min-confidence"),
    (["--ensemble", "3", "--replicate", "7"], "replicates 0 to 2"),
    (["--ensemble", "0"], "at least 2 replicates"),
    (["--seed", "3"], "go with --ensemble N"),
    (["--ensemble", "3", "--seed", "-1"], "--seed -1"),
    (["--ensemble", "3", "--ensemble-out", "-"], "not standard output"),
    (["--ensemble", "3", "--column-scores", "same.txt", "--ensemble-out", "same.txt"], "name the same file"),
    (["--ensemble", "3", "--add", "x.fa", "--existing", "y.fa"], "do not go with --add"),
])
def test_cli_refuses_what_an_ensemble_does_not_do(tmp_path, refs, args, said):
    out = tmp_path / "o.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu", *args])
    assert r.exit_code == 2 and said in r.output and not out.exists()


@pytest.mark.gpu
def test_gpu_ensemble_is_the_cpus(family):
    for mode in ("fast", "accurate"):
        cpu = align_ensemble(family, AlignerConfig(backend="cpu", mode=mode), 4, seed=5)
        gpu = align_ensemble(family, AlignerConfig(backend="gpu", mode=mode), 4, seed=5)
        assert [r.rows() for r in gpu.replicates] == [r.rows() for r in cpu.replicates]
        assert gpu.chosen == cpu.chosen and gpu.dispersion == cpu.dispersion


def test_families_with_repeats_and_batches_of_families(refs):
    """A family with a repeated sequence (its replicate 0 keeps no library)
    and a second family, in one call: each family's ensemble is the one it
    gets alone."""
    from msa_gpu.workflows.ensemble import align_ensembles
    from msa_gpu.io import make_sequences

    a = read_sequences(refs / "BB11001.tfa")
    rep = make_sequences([*a.names, "again"], [*a.raw, a.raw[0]], "protein")
    b = read_sequences(refs / "BB12006.tfa")
    config = AlignerConfig(backend="cpu", mode="accurate")
    both = align_ensembles([rep, b], config, 3, seed=1)
    for fam, ens in zip([rep, b], both):
        alone = align_ensemble(fam, config, 3, seed=1)
        assert [r.rows() for r in ens.replicates] == [r.rows() for r in alone.replicates]
        assert ens.replicates[0].rows() == Aligner(config).align(fam).rows()


def test_residue_confidences_average_to_the_column_confidences(family, tmp_path, refs):
    """Each column's residues' confidences average to the column's (each
    kept pair counts for both its residues), and --residue-scores writes them
    as digits in the written alignment's shape."""
    ens = align_ensemble(family, AlignerConfig(backend="cpu", mode="fast"), 4, seed=2)
    per = ens.residue_confidence()
    mask = ens.result.alignment.mask()
    assert np.array_equal(~np.isnan(per), mask)
    for c in range(mask.shape[1]):
        if mask[:, c].sum() >= 2:
            assert per[mask[:, c], c].mean() == pytest.approx(ens.confidence[c])
    out, digits = tmp_path / "o.fa", tmp_path / "res.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB12006.tfa"), "-o", str(out), "--backend", "cpu", "--mode",
                                 "fast", "--ensemble", "4", "--seed", "2", "--min-confidence", "0.5",
                                 "--residue-scores", str(digits), "-q"])
    assert r.exit_code == 0, r.output
    names, rows = read_aligned(out)
    dnames, drows = read_aligned(digits)
    assert dnames == names and len(drows) == len(rows)
    for row, drow in zip(rows, drows):
        assert len(row) == len(drow)
        assert all((a == ord("-")) == (b == ord("-")) for a, b in zip(row, drow))
        assert set(drow) <= set(b"-0123456789")


def test_phylip_strict_ensemble_output_keeps_its_names_map(tmp_path, refs):
    out = tmp_path / "o.phy"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--outfmt", "phylip-strict",
                                 "--backend", "cpu", "--ensemble", "3", "-q"])
    assert r.exit_code == 0, r.output
    pairs = [line.split("\t") for line in (tmp_path / "o.phy.names").read_text().splitlines()]
    assert [b for _, b in pairs] == list(read_sequences(refs / "BB11001.tfa").names)


def test_model_perturbation_builds_each_replicate_its_own_library(family):
    """``--perturb model``: each replicate's library comes from a perturbed
    pair-HMM (so it differs from replicate 0's), the same for the same seed;
    replicate 0 stays the default; a run with no pair-HMM library is refused."""
    from msa_gpu.errors import InputError

    config = AlignerConfig(backend="cpu", mode="accurate")
    one = align_ensemble(family, config, 3, perturb=("model",), seed=2)
    again = align_ensemble(family, config, 3, perturb=("model",), seed=2)
    assert one.replicates[0].rows() == Aligner(config).align(family).rows()
    libs = [r.library for r in one.replicates]
    for lib in libs[1:]:
        assert lib is not None and not (len(lib.w) == len(libs[0].w) and np.array_equal(lib.w, libs[0].w))
    assert not np.array_equal(libs[1].w, libs[2].w) or len(libs[1].w) != len(libs[2].w)
    assert [r.rows() for r in one.replicates] == [r.rows() for r in again.replicates]
    with pytest.raises(InputError, match="pair-HMM library"):
        align_ensemble(family, AlignerConfig(backend="cpu", mode="fast"), 2, perturb=("model",))


def _columns_of(rows: list[bytes]) -> list[list[int]]:
    """Each row's residues' columns, from its gapped text."""
    return [[c for c, ch in enumerate(row) if ch != ord("-")] for row in rows]


def _exact_confidences(replicates: list[list[bytes]], r: int):
    """Replicate ``r``'s column and residue confidences (and each column's
    agreeing pairs and pairs), by brute force over
    residue pairs from the written rows, as exact fractions (independent of
    `msa_gpu.workflows.ensemble`): a column's, the share of its residue pairs that the
    other replicates also put in one column; a residue's, the share of its
    column-mates that stay beside it there."""
    where = [_columns_of(rows) for rows in replicates]
    others = [s for s in range(len(replicates)) if s != r]
    members: dict[int, list] = {}
    for i, cols in enumerate(where[r]):
        for k, c in enumerate(cols):
            members.setdefault(c, []).append((i, k))
    width = len(replicates[r][0])
    column, residue, counts = [Fraction(0)] * width, {}, [(0, 0)] * width
    for c, res in members.items():
        kept = {x: 0 for x in res}
        for a in range(len(res)):
            for b in range(a + 1, len(res)):
                (i, k), (j, m) = res[a], res[b]
                same = sum(where[s][i][k] == where[s][j][m] for s in others)
                kept[res[a]] += same
                kept[res[b]] += same
        pairs = len(res) * (len(res) - 1) // 2
        column[c] = Fraction(sum(kept.values()) // 2, pairs * len(others)) if pairs else Fraction(0)
        counts[c] = (sum(kept.values()) // 2, pairs)
        for x in res:
            residue[x] = Fraction(kept[x], (len(res) - 1) * len(others)) if len(res) > 1 else Fraction(0)
    return column, residue, counts


def _digit_rows(replicate_rows: list[bytes], residue: dict) -> list[bytes]:
    """The expected --residue-scores rows: each residue's digit, min(9, floor(10 x))."""
    out = []
    for i, row in enumerate(replicate_rows):
        k, text = 0, bytearray()
        for ch in row:
            if ch == ord("-"):
                text.append(ord("-"))
            else:
                text.append(ord("0") + min(9, int(10 * residue[i, k])))
                k += 1
        out.append(bytes(text))
    return out


@pytest.mark.parametrize("pick", [[], ["--replicate", "2"]])
def test_residue_scores_describe_the_replicate_written(tmp_path, refs, pick):
    """--residue-scores holds the WRITTEN replicate's residue confidences,
    by the pick rule (BB11001, 3 replicates, seed 2: replicate 1 agrees most)
    or by --replicate 2, never replicate 0's: each digit is checked against
    the confidences worked out by brute force from the EFA block of the
    replicate written."""
    out, efa, digits = tmp_path / "o.fa", tmp_path / "all.efa", tmp_path / "res.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu", "--mode",
                                 "fast", "--ensemble", "3", "--seed", "2", "--ensemble-out", str(efa),
                                 "--residue-scores", str(digits), *pick])
    assert r.exit_code == 0, r.output
    chosen = int(r.output.split("wrote replicate ")[1].split()[0])
    assert chosen == (int(pick[1]) if pick else 1)  # not replicate 0: the case the old test never saw
    blocks = [_rows_of(lines) for lines in _efa(efa).values()]
    assert blocks[chosen] != blocks[0] and read_aligned(out)[1] == blocks[chosen]
    _, residue, _ = _exact_confidences(blocks, chosen)
    expected = _digit_rows(blocks[chosen], residue)
    assert read_aligned(digits)[1] == expected
    assert expected != _digit_rows(blocks[0], _exact_confidences(blocks, 0)[1])  # the check can tell them apart


def test_a_column_exactly_at_min_confidence_is_kept():
    """--min-confidence X keeps the columns of confidence at least X (its
    help: it drops those BELOW X). Four replicates of five one-per-row
    residues: column 0's pairs are kept 6 times of 30 (exactly 0.2, which
    agree / total / others rounded twice made 0.19999999999999998, dropped
    at 0.2), column 1's 5 times (just below), column 2's 7 times (just above)."""
    from msa_gpu.workflows.ensemble import trim

    groups = [  # each replicate's groups of rows sharing a column, for residue k = 0, 1, 2 of every row
        [[0, 1, 2, 3, 4]] * 3,
        [[0, 1, 2], [0, 1, 2], [0, 1, 2]],
        [[0, 1, 2], [0, 1], [0, 1, 2]],
        [[], [3, 4], [3, 4]],
    ]
    cols, widths = [], []
    for rep in groups:
        at = np.zeros((5, 3), np.int64)
        for k, together in enumerate(rep):
            alone = [i for i in range(5) if i not in together]
            for i in together:
                at[i, k] = 10 * k
            for g, i in enumerate(alone, start=1):
                at[i, k] = 10 * k + g
        cols.append(at.ravel())  # rows in order, residues in order: `residue_columns` order
        widths.append(30)
    conf = agreement(cols, widths).column[0][[0, 10, 20]]
    assert [Fraction(6, 30), Fraction(5, 30), Fraction(7, 30)] == [Fraction(x).limit_denominator(100) for x in conf]
    assert conf[0] == 0.2  # the float 0.2 is, as --min-confidence 0.2 reads it
    rows = [bytes(b"ABC") for _ in range(5)]
    for threshold, kept in [(0.2, [0, 2]), (np.nextafter(0.2, 0.0), [0, 2]), (np.nextafter(0.2, 1.0), [2]),
                            (7 / 30, [2]), (np.nextafter(7 / 30, 1.0), [])]:
        assert trim(rows, conf, threshold)[1].tolist() == kept, threshold


def test_min_confidence_keeps_exactly_the_columns_at_or_above_it(tmp_path, refs):
    """On an ensemble (BB20001, 4 replicates, seed 0), with the threshold
    set exactly at a column's confidence (a short decimal, so the option can
    name it; one the old double rounding got wrong where there is one):
    the written columns are exactly those whose confidence, worked out by
    brute force as a fraction, is at least it, and --column-scores says them."""
    out, efa, cc, kept = (tmp_path / n for n in ("o.fa", "all.efa", "cc.txt", "kept.txt"))
    args = ["align", str(refs / "BB20001.tfa"), "--backend", "cpu", "--mode", "fast", "--ensemble", "4", "--seed",
            "0", "-q"]
    assert CliRunner().invoke(app, [*args, "-o", str(out), "--ensemble-out", str(efa)]).exit_code == 0
    blocks = [_rows_of(lines) for lines in _efa(efa).values()]
    chosen = [b for b in blocks if b == read_aligned(out)[1]]
    exact, _, counts = _exact_confidences(blocks, blocks.index(chosen[0]))
    short = [c for c, x in enumerate(exact) if 0 < x < 1 and (x * 10_000).denominator == 1]
    # (agree / pairs / others, rounded twice, misses the float of some fractions: prefer such a column)
    rounded = [c for c in short if counts[c][0] / counts[c][1] / 3 != float(exact[c])]
    threshold = exact[(rounded or short)[0]]
    r = CliRunner().invoke(app, [*args, "-o", str(out), "--min-confidence", str(float(threshold)),
                                 "--kept-columns", str(kept), "--column-scores", str(cc)])
    assert r.exit_code == 0, r.output
    want = [c for c, x in enumerate(exact) if x >= threshold]
    assert [int(x) - 1 for x in kept.read_text().split()] == want
    assert any(exact[c] == threshold for c in want)  # a column sits on the threshold, and is kept
    assert [float(x) for x in cc.read_text().split()] == [round(float(exact[c]), 4) for c in want]


def test_an_ensemble_of_one_is_refused(tmp_path, refs, family):
    """One replicate has no other to agree with, so no confidence to give:
    --ensemble 1 is refused in one line naming the option, before any work,
    and so is an API ensemble of one."""
    from msa_gpu.frontends.ensemble import EnsembleOptions, check
    from msa_gpu.errors import InputError

    with pytest.raises(InputError, match=r"^--ensemble 1: give at least 2 replicates"):
        check(EnsembleOptions(1), False, False, False, [])
    with pytest.raises(InputError, match=r"^--ensemble 1: give at least 2 replicates"):
        align_ensemble(family, AlignerConfig(backend="cpu", mode="fast"), 1)
    check(EnsembleOptions(2), False, False, False, [])  # two is an ensemble
    out = tmp_path / "o.fa"
    r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), "-o", str(out), "--backend", "cpu",
                                 "--ensemble", "1"])
    assert r.exit_code == 2 and not out.exists()
    assert [line for line in r.output.splitlines() if line.strip()] == [
        line for line in r.output.splitlines() if "--ensemble 1: give at least 2 replicates" in line]
