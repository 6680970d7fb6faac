"""The only package that reads or writes files (Biopython underneath).

``formats`` (output formats, extensions, output names), ``readers``
(sequences, aligned FASTA, core masks, batch inputs), ``writers``
(alignments in every format; a temporary file renamed into place, so a
failure never leaves a partial file), ``outputs`` (every output tried
before the work, failed writes named), ``newick`` (guide trees) and
``tables`` (pairwise alignments as TSV, distances as PHYLIP).
"""

from msa_gpu.io.formats import (ENCODING, ERRORS, EXTENSIONS, FASTA_SUFFIXES, NAME_LIMIT, REFERENCE_SUFFIXES, OutFormat,
                                format_for, is_reference, output_name, parse_format)
from msa_gpu.io.newick import from_newick, to_mafft_tree, to_newick
from msa_gpu.io.outputs import check_outputs, make_folder, write_names_map, write_output, writing
from msa_gpu.io.readers import (alignable_inputs, expand_inputs, make_sequences, parse_fasta, read_aligned, read_core, read_guide_tree, read_merge_table,
                                read_new, read_sequences, read_text)
from msa_gpu.io.tables import write_pairs_tsv, write_phylip_distances
from msa_gpu.io.writers import FASTA_WIDTH, clustal_consensus, phylip_names, phylip_text, posterior_line, render_alignment, stream_efa, stream_fasta, strict_names, write_alignment, write_text

__all__ = ["ENCODING", "ERRORS", "EXTENSIONS", "FASTA_SUFFIXES", "FASTA_WIDTH", "NAME_LIMIT", "OutFormat",
           "REFERENCE_SUFFIXES", "alignable_inputs", "check_outputs", "clustal_consensus", "expand_inputs", "format_for", "from_newick", "is_reference", "make_folder", "make_sequences",
           "output_name", "parse_fasta", "parse_format", "phylip_names", "phylip_text",
           "read_aligned", "read_core", "read_guide_tree", "read_merge_table", "read_new", "read_sequences", "read_text",
           "posterior_line", "render_alignment", "stream_efa", "stream_fasta", "strict_names", "to_mafft_tree", "to_newick", "write_alignment",
           "write_names_map", "write_output", "write_pairs_tsv", "write_phylip_distances", "write_text", "writing"]
