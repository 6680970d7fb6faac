"""The orchestrator: Sequences -> distances -> tree -> schedule -> alignment."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .backend import Backend, select_backend, set_threads
from .config import DEFAULTS, AlignerConfig, TreeMethod
from .distance import alignment_distance, kmer_distance
from .progressive import alignment_codes, progressive_align
from .schedule import merge_schedule
from .scoring import SCALE, GapScheme, matrix_fixed
from .tree import mixed_linkage, nj, sequence_weights, upgma
from .types import AlignResult, DistanceMatrix, GuideTree, Sequences


@dataclass(frozen=True)
class _Context:
    """What the progressive driver needs: backend plus scoring, in fixed point."""

    backend: Backend
    alphabet_size: int
    matrix: object
    gaps: tuple[int, int, int, int]
    gap_pair: int = 0

    @property
    def xp(self):
        return self.backend.xp

    def align_batch(self, batch):
        return self.backend.align_batch(batch)

    def to_host(self, a):
        return self.backend.to_host(a)


class Aligner:
    """Progressive multiple sequence aligner.

    Examples
    --------
    >>> from msa_gpu.io import make_sequences
    >>> seqs = make_sequences(["a", "b"], [b"MKVLAAG", b"MKVAAG"])
    >>> res = Aligner(AlignerConfig(backend="cpu")).align(seqs)
    >>> [r.decode() for r in res.rows()]
    ['MKVLAAG', 'MKV-AAG']
    """

    def __init__(self, config: AlignerConfig | None = None, backend: Backend | None = None):
        self.config = config or AlignerConfig()
        self.backend = backend or select_backend(self.config.backend)
        set_threads(self.config.threads)

    def _context(self, seqs: Sequences) -> _Context:
        cfg = self.config
        matrix, go, ge, offset = DEFAULTS[seqs.alphabet.name]
        gaps = GapScheme(
            cfg.gap_open if cfg.gap_open is not None else go,
            cfg.gap_extend if cfg.gap_extend is not None else ge,
            cfg.terminal_open, cfg.terminal_extend,
        )
        off = cfg.matrix_offset if cfg.matrix_offset is not None else offset
        m = matrix_fixed(cfg.matrix or matrix, seqs.alphabet.letters, off)
        xp = self.backend.xp
        return _Context(self.backend, seqs.alphabet.size, xp.asarray(m), gaps.fixed(),
                        int(round(cfg.gap_pair * SCALE)))

    def _tree(self, dm: DistanceMatrix) -> GuideTree:
        build = {TreeMethod.nj: nj, TreeMethod.mixed: mixed_linkage, TreeMethod.upgma: upgma}
        return build[self.config.tree](dm)

    def align(self, seqs: Sequences, distances: DistanceMatrix | None = None,
              guide_tree: GuideTree | None = None) -> AlignResult:
        """Align ``seqs``; precomputed ``distances`` or ``guide_tree`` skip stages."""
        timings: dict[str, float] = {}
        ctx = self._context(seqs)
        xp = self.backend.xp
        clock = time.perf_counter()

        # stage 1: distances
        if distances is None and guide_tree is None:
            distances = kmer_distance(seqs, xp)
        timings["distance"] = time.perf_counter() - clock
        for rnd in range(1 + (self.config.retree if guide_tree is None else 0)):
            clock = time.perf_counter()
            # stage 2: guide tree
            tree = guide_tree if guide_tree is not None else self._tree(distances)
            weights = sequence_weights(tree)
            schedule = merge_schedule(tree)
            timings["tree"] = timings.get("tree", 0.0) + time.perf_counter() - clock
            clock = time.perf_counter()
            # stage 3: progressive alignment
            aln = progressive_align(seqs, tree, schedule, weights, ctx)
            timings["progressive"] = timings.get("progressive", 0.0) + time.perf_counter() - clock
            # retree: distances from this alignment for the next round
            if guide_tree is None and rnd < self.config.retree:
                distances = alignment_distance(alignment_codes(seqs, aln), seqs.alphabet.gap, xp)
        if distances is None:
            distances = DistanceMatrix(np.zeros((len(seqs), len(seqs))), "none")
        return AlignResult(seqs, aln, distances, tree, schedule, self.backend.name, timings)
