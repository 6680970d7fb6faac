"""Column confidence of an alignment from pair-HMM posteriors (issue 29):
for each column, the mean posterior probability that the residues it puts
together are aligned, over the pairs of sequences that both have a residue
there (ProbCons' model, `pairhmm`; the posteriors on either backend, the same
bits). A column no pair shares scores 0. Families of more than ``max_seqs``
sequences are scored on ``max_seqs`` of them spread evenly through the input
order, so the cost is bounded: at most max_seqs (max_seqs - 1) / 2 pairs.

Examples
--------
>>> from msa_gpu.io import make_sequences
>>> from msa_gpu.types import Alignment
>>> seqs = make_sequences(["a", "b"], [b"MKVLW", b"MKVLW"], "protein")
>>> aln = Alignment.from_mask(np.ones((2, 5), bool))
>>> bool(np.all(column_confidence(seqs, aln) > 0.5))
True
"""

from __future__ import annotations

import numpy as np

from msa_gpu.alphabet import SeqType
from msa_gpu.consistency.pairhmm import probcons_model
from msa_gpu.consistency.probabilistic import sparse_pair_posteriors
from msa_gpu.types import Alignment, Sequences

#: Most sequences whose pairs are scored (780 pairs).
MAX_SEQS = 40
#: Posteriors below this count as 0 (ProbCons' library cutoff).
CUTOFF = 0.01


def column_confidence(seqs: Sequences, aln: Alignment, xp=np, max_seqs: int | None = None) -> np.ndarray:
    """(n_cols,) float64 in [0, 1]: each column's mean posterior (see the
    module; ``max_seqs`` default `MAX_SEQS`). Protein only: the model's
    emissions are amino acids."""
    if seqs.seqtype is not SeqType.protein:
        raise ValueError("column confidence needs protein sequences (ProbCons' pair-HMM is a protein model)")
    n, max_seqs = len(seqs), max_seqs or MAX_SEQS
    picked = np.unique(np.linspace(0, n - 1, min(n, max_seqs)).round().astype(np.int64))
    pairs = [(int(s), int(t)) for i, s in enumerate(picked) for t in picked[i + 1:]]
    total = np.zeros(aln.n_cols)
    count = np.zeros(aln.n_cols, dtype=np.int64)
    if not pairs:
        return total
    masks = {int(s): aln.row_mask(int(s)) for s in picked}
    cols = {s: np.flatnonzero(m) for s, m in masks.items()}  # each residue's column
    posts = sparse_pair_posteriors(seqs, pairs, probcons_model(seqs.alphabet.size), CUTOFF, xp)
    for (s, t), (x, y, p) in zip(pairs, posts):
        cs, ct = cols[s], cols[t]
        count += masks[s] & masks[t]
        here = cs[x] == ct[y]
        np.add.at(total, cs[x[here]], p[here])
    return np.where(count > 0, total / np.maximum(count, 1), 0.0).clip(0.0, 1.0)
