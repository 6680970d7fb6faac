"""Accurate mode's consistency library (``Sequences -> ConsistencyLibrary``):
all-pairs alignments by the pairwise engine, extended through every third
sequence, stacked for a batch's families (``library``)."""

from msa_gpu.consistency.library import (
                                         LibrarySettings,
                                         LibraryStack,
                                         LibraryWeight,
                                         build_libraries,
                                         library_distance,
                                         stack_libraries,
)

__all__ = ["LibrarySettings", "LibraryStack", "LibraryWeight", "build_libraries", "library_distance",
           "stack_libraries"]
