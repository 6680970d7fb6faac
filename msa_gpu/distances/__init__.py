"""Stage 1: pairwise distances (``Sequences -> DistanceMatrix``).

``kmer`` (shared k-mers on a reduced alphabet: the default), ``kmer_index``
(every sequence's distinct k-mers, and distances to pivots without an
N x N matrix: the large path), ``lcs`` (FAMSA 2's LCS-based distances, as a matrix or as the spanning
tree's edges, with none) and ``alignment`` (identity of an alignment's
rows, or of all-pairs alignments by the pairwise engine).
"""

from msa_gpu.distances.alignment import alignment_distance, kimura_protein, pairwise_distance
from msa_gpu.distances.kmer import kmer_distance, kmer_ids, kmer_unshared
from msa_gpu.distances.kmer_index import kmer_sets, pivot_distances
from msa_gpu.distances.lcs import lcs_distance, lcs_spanning_edges, lcs_spanning_edges_many
from msa_gpu.distances.orientation import orientations, reverse_complement

__all__ = ["alignment_distance", "kimura_protein", "kmer_distance", "kmer_ids", "kmer_sets", "kmer_unshared", "lcs_distance",
           "lcs_spanning_edges", "lcs_spanning_edges_many", "orientations", "pairwise_distance",
           "pivot_distances", "reverse_complement"]
