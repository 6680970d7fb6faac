"""The Python API: ``msa_gpu.align(records, **options)``.

``records`` is a path (FASTA, gzip allowed), Biopython ``SeqRecord``s or
``(name, sequence)`` pairs; ``options`` are `AlignerConfig` fields. The
`AlignResult` converts to Biopython and writes any format.

Examples
--------
>>> import msa_gpu
>>> res = msa_gpu.align([("a", "MKTAYIAKQRQISFVKSHFSRQ"), ("b", "MKTAYIAKQISFVKSHFSRQ")], backend="cpu")
>>> [str(r.seq) for r in res.to_msa()]
['MKTAYIAKQRQISFVKSHFSRQ', 'MKTAYIAK--QISFVKSHFSRQ']
>>> res.to_alignment().shape
(2, 22)
>>> sorted(t.name for t in res.tree.get_terminals())
['a', 'b']

An ensemble (`msa_gpu.workflows.ensemble`): replicates under perturbed guide trees
and gap costs, each column's confidence, the dispersion, the chosen replicate:

>>> ens = msa_gpu.align_ensemble([("a", "MKTAYIAKQRQISFVKSHFSRQ"), ("b", "MKTAYIAKQISFVKSHFSRQ"),
...                               ("c", "MKTAYIKQRQISFVKSHFSR")], replicates=4, backend="cpu")
>>> len(ens.replicates), ens.confidence.shape == (ens.result.alignment.n_cols,), 0 <= ens.dispersion <= 1
(4, True, True)

Existing alignments merged (`msa_gpu.workflows.merging`), each one's columns kept:

>>> out = msa_gpu.merge([[("a", "MKTAYIAKQRQ"), ("b", "MKTAYI--QRQ")], [("c", "MKTAYIAKWWQRQ")]], backend="cpu")
>>> [r.decode() for r in out.rows], out.scoring
(['MKTAYIAK--QRQ', 'MKTAYI----QRQ', 'MKTAYIAKWWQRQ'], 'fast: profile-profile scores')
"""

from __future__ import annotations

import os

from msa_gpu.settings.config import AlignerConfig
from msa_gpu.result import AlignResult
from msa_gpu.types import Sequences


def as_sequences(records, seqtype="auto", any_symbol: bool = False) -> Sequences:
    """`Sequences` from a path, SeqRecords or (name, sequence) pairs."""
    from msa_gpu.io import make_sequences, read_sequences

    if isinstance(records, (str, os.PathLike)):
        return read_sequences(records, seqtype, any_symbol)
    names, raw = [], []
    for rec in records:
        if hasattr(rec, "seq"):  # a SeqRecord: its whole title where it has one
            desc = getattr(rec, "description", "") or ""
            names.append(desc if desc.startswith(str(rec.id)) and desc else str(rec.id))
            seq = rec.seq
        else:
            name, seq = rec
            names.append(str(name))
        text = seq if isinstance(seq, bytes) else str(seq).encode()
        raw.append(text.translate(None, b"-. \t\r\n"))
    return make_sequences(names, raw, seqtype, any_symbol)


def align(records, **options) -> AlignResult:
    """Align ``records`` (a path, SeqRecords or (name, sequence) pairs) with
    the `AlignerConfig` ``options``; see the module's examples."""
    from msa_gpu.aligner import Aligner

    config = AlignerConfig(**options)
    return Aligner(config).align(as_sequences(records, config.seqtype))


def align_ensemble(records, replicates: int = 16, perturb=("tree", "gaps"), seed: int = 0, **options):
    """``replicates`` alignments of ``records`` under perturbed guide trees and
    gap costs (`msa_gpu.workflows.ensemble.align_ensemble`; ``options`` are
    `AlignerConfig` fields): an `Ensemble` with ``replicates`` (AlignResults),
    ``result`` (the chosen one), ``confidence`` (its columns'), ``dispersion``
    and ``support`` (every replicate's column confidences, as arrays)."""
    from msa_gpu.workflows.ensemble import align_ensemble as _ensemble

    config = AlignerConfig(**options)
    kinds = tuple(perturb.split(",")) if isinstance(perturb, str) else tuple(perturb)  # "tree,gaps" or a sequence
    return _ensemble(as_sequences(records, config.seqtype), config, replicates, kinds, seed)


def as_aligned(records) -> tuple[list[str], list[bytes]]:
    """An alignment's names and gapped rows from a path (aligned FASTA or any
    format `msa_gpu.io.read_aligned` reads), a Biopython alignment or
    SeqRecords, or (name, gapped sequence) pairs."""
    from msa_gpu.io import read_aligned

    if isinstance(records, (str, os.PathLike)):
        return read_aligned(records)
    names, rows = [], []
    for rec in records:
        name, seq = (rec.id, rec.seq) if hasattr(rec, "seq") else rec
        names.append(str(name))
        rows.append(seq if isinstance(seq, bytes) else str(seq).encode())
    return names, rows


def merge(alignments, **options):
    """Two or more alignments (each as `as_aligned` takes it; a single
    sequence is an alignment of one) aligned to each other, each one's
    columns kept (`msa_gpu.workflows.merging.merge_alignments`; ``options`` are
    `AlignerConfig` fields): a `Merged` with ``names``, gapped ``rows``,
    ``groups`` (each input's rows), ``tree`` and ``scoring``."""
    from msa_gpu.workflows.merging import merge_alignments

    config = AlignerConfig(**options)
    return merge_alignments([as_aligned(a) for a in alignments], config, seqtype=config.seqtype)
