"""Stage 2: guide trees (``DistanceMatrix -> GuideTree``) and sequence weights.

``fragments`` (fragments joined last, above the full-length sequences' tree), ``linkage`` (UPGMA, MAFFT-style mixed linkage, single linkage, and FAMSA's
single-linkage tree straight from LCS distances with no matrix; their numba kernels in
``linkage_numba``), ``neighbour_joining`` (NJ), ``partition`` (the large path's
tree from k-mer sets, no N x N matrix) and ``weights`` (leaf orders and
sequence weights). The tree is a flat array (`msa_gpu.types.GuideTree`);
Newick text is made only by `msa_gpu.io.newick`.
"""

from msa_gpu.tree.fragments import fragments_last
from msa_gpu.tree.linkage import (DENSE_MAX, UPGMA_NUMBA_MIN, lcs_single_linkage, lcs_single_linkage_many,
                                  mixed_linkage, single_linkage, upgma)
from msa_gpu.tree.neighbour_joining import nj
from msa_gpu.tree.partition import partition_tree
from msa_gpu.tree.weights import leaf_order, sequence_weights, weight_top

__all__ = ["DENSE_MAX", "UPGMA_NUMBA_MIN", "fragments_last", "lcs_single_linkage", "lcs_single_linkage_many", "leaf_order",
           "mixed_linkage", "nj", "partition_tree", "sequence_weights", "single_linkage", "upgma", "weight_top"]
