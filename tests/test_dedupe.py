"""Identical sequences are aligned once and copied."""

import numpy as np

from msa_gpu.aligner import Aligner
from msa_gpu.backend import cpu_backend
from msa_gpu.settings.config import AlignerConfig
from msa_gpu.io import make_sequences, read_sequences
from msa_gpu.pipeline import batch

CPU = cpu_backend()
ALIGN_FAMILIES = batch.align_families


def test_copies_get_their_representatives_row(refs):
    seqs = read_sequences(refs / "BB11001.tfa")
    names = list(seqs.names) + ["copy0", "copy2", "copy0b"]
    raw = list(seqs.raw) + [seqs.raw[0], seqs.raw[2].lower(), seqs.raw[0]]
    more = make_sequences(names, raw, "protein")
    res = Aligner(AlignerConfig(backend="cpu", mode="fast"), backend=CPU).align(more)
    base = Aligner(AlignerConfig(backend="cpu", mode="fast"), backend=CPU).align(seqs)
    rows = res.rows()
    assert rows[:4] == base.rows()  # the distinct sequences align as without the copies
    assert rows[4] == rows[0] and rows[6] == rows[0] and rows[5] == rows[2].lower()
    res.alignment.check(more)
    assert res.guide_tree.n_leaves == 7 and res.distances.values[0, 4] == 0.0
    assert len(res.schedule.levels) >= 1


def test_many_identical_sequences_are_one_alignment():
    seqs = make_sequences([f"s{i}" for i in range(5000)], [b"MKTAYIAKQRQISFVKSHFSRQ"] * 5000, "protein")
    res = Aligner(AlignerConfig(backend="cpu"), backend=CPU).align(seqs)
    assert set(res.rows()) == {b"MKTAYIAKQRQISFVKSHFSRQ"}
    assert res.guide_tree.n_leaves == 5000


def _aligned(monkeypatch, config, seqs):
    """The result, and the family sizes the aligner's stages were given."""
    sizes, real = [], ALIGN_FAMILIES

    def spy(context, families, *args, **kwargs):
        sizes.extend(len(f.seqs) for f in families)
        return real(context, families, *args, **kwargs)

    monkeypatch.setattr(batch, "align_families", spy)
    return Aligner(config, backend=CPU).align(seqs), sizes


def test_dedupe_off_aligns_every_copy(monkeypatch):
    seqs = make_sequences(["a", "b", "c"], [b"MKVLAW", b"MKVLAW", b"MKAW"], "protein")
    on, on_sizes = _aligned(monkeypatch, AlignerConfig(backend="cpu"), seqs)
    off, off_sizes = _aligned(monkeypatch, AlignerConfig(backend="cpu", dedupe=False), seqs)
    assert on_sizes == [2] and off_sizes == [3]  # the copy aligned once, or aligned as itself
    assert np.array_equal(on.alignment.trace[0], on.alignment.trace[1])
    assert off.distances.values.shape == (3, 3)
    on.alignment.check(seqs)
    off.alignment.check(seqs)
