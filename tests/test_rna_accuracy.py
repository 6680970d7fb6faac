"""Nucleotide models measured against curated references (issue 57): the
three bundled BRAliBase III cases (references/bralibase3), each mode with
the default scoring. The floors sit a little under today's figures and
above what the earlier models gave (in brackets), so a model that slips
back fails here."""

import numpy as np
import pytest
from conftest import REFS

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import read_aligned, read_core, read_sequences
from msa_gpu.recipe import describe
from msa_gpu.accuracy import sp_tc

CASES = ("U5_k010_1", "rRNA_k010_0", "tRNA_k010_0")


def _scores(config: AlignerConfig) -> dict[str, tuple[float, float]]:
    folder = REFS / "bralibase3"
    fams = [read_sequences(folder / f"{c}.tfa") for c in CASES]
    out = {}
    for case, res in zip(CASES, Aligner(config, backend=cpu_backend()).align_many(fams)):
        names, rows = read_aligned(folder / f"{case}.ref.fa")
        s = sp_tc(list(res.sequences.names), [r.upper() for r in res.rows()], names, rows,
                  read_core(folder / f"{case}.core"))
        out[case] = (s.sp, s.tc)
    return out


@pytest.mark.parametrize("mode, mean_sp, trna_sp", [
    # accurate: ProbConsRNA's posteriors and its MEA objective, 0.806 and 0.829 (sum of pairs: 0.793, 0.796)
    ("accurate", 0.80, 0.82),
    # fast: NUC.4.4 with Kalign 3's gap costs 8 / 6, 0.764 and 0.733 (with 12 / 1: 0.567, 0.301)
    ("fast", 0.75, 0.70),
])
def test_rna_modes_reach_their_floors(mode, mean_sp, trna_sp):
    got = _scores(AlignerConfig(mode=mode))
    assert np.mean([sp for sp, _ in got.values()]) >= mean_sp, got
    assert got["tRNA_k010_0"][0] >= trna_sp, got


def test_the_recipe_line_names_the_nucleotide_model():
    """Accurate mode names ProbConsRNA's library and its objective for RNA
    and DNA alike; protein keeps ProbCons' library and the sum of pairs."""
    aligner = Aligner(AlignerConfig(mode="accurate"), backend=cpu_backend())
    rna = read_sequences(REFS / "bralibase3" / "tRNA_k010_0.tfa")
    (r,) = aligner.plan([rna])
    assert r.objective == "mea" and "ProbConsRNA pair-HMM posterior library, MEA objective" in describe(r)
    (p,) = aligner.plan([read_sequences(REFS / "BB11001.tfa")])
    assert p.objective == "sp" and "ProbConsRNA" not in describe(p) and "MEA" not in describe(p)
    (s,) = Aligner(AlignerConfig(mode="accurate", objective="sp"), backend=cpu_backend()).plan([rna])
    assert s.objective == "sp"
