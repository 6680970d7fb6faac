"""Accurate mode's consistency library (``Sequences -> ConsistencyLibrary``):
all-pairs alignments by the pairwise engine, extended through every third
sequence, stacked for a batch's families (``library``); and ProbCons' pair-HMM
with its posterior match probabilities (``pairhmm``, ``probabilistic``: a
posterior library) and the column confidence they give an alignment
(``confidence``)."""

from msa_gpu.consistency.library import (
                                         LibrarySettings,
                                         LibraryStack,
                                         LibraryWeight,
                                         build_libraries,
                                         library_distance,
                                         stack_libraries,
)

from msa_gpu.consistency.confidence import column_confidence
from msa_gpu.consistency.pairhmm import (
    PairHMM,
    model_for,
    pair_posteriors,
    perturbed_model,
    probcons_model,
    probcons_rna_model,
)
from msa_gpu.consistency.memory import library_waves
from msa_gpu.consistency.probabilistic import library_memory, on_backend, posterior_libraries, posterior_library

__all__ = ["LibrarySettings", "LibraryStack", "LibraryWeight", "PairHMM", "build_libraries", "column_confidence",
           "library_distance", "library_memory", "library_waves", "model_for", "on_backend", "pair_posteriors",
           "posterior_libraries", "perturbed_model", "posterior_library", "probcons_model", "probcons_rna_model",
           "stack_libraries"]
