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
"""

from __future__ import annotations

import os

from msa_gpu.config import AlignerConfig
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
