"""Stage 3: progressive alignment (``GuideTree -> MergeSchedule -> Alignment``).

``schedule`` (the tree as per-level merge lists), ``profile`` (profiles and
the per-level metadata the kernels take), ``costs`` (a family's scoring in
fixed point), ``driver`` (every family's merges of one level in one batch,
through the backend's kernels), ``add`` (new sequences added to a fixed
alignment) and ``dedupe`` (identical sequences aligned once).
"""

from msa_gpu.progressive.add import add_sequences, batch_size
from msa_gpu.progressive.dedupe import distinct, distinct_tree, expand_alignment, expand_distances, expand_tree
from msa_gpu.progressive.driver import (
                                        BYTES_PER_CELL,
                                        BYTES_PER_LIBRARY_CELL,
                                        BatchContext,
                                        FamilyJob,
                                        ProfileBlock,
                                        SideInfo,
                                        alignment_codes,
                                        align_paths,
                                        batch_chunks,
                                        codes_to_alignment,
                                        merge_batch,
                                        merge_resilient,
                                        progressive_align,
                                        score_batch,
                                        side_info,
                                        stack_matrices,
)
from msa_gpu.progressive.profile import LevelMeta, Profile, level_meta, level_meta_arrays
from msa_gpu.progressive.schedule import merge_schedule
from msa_gpu.progressive.costs import Scoring, family_scoring

__all__ = ["BYTES_PER_CELL", "BYTES_PER_LIBRARY_CELL", "BatchContext", "FamilyJob", "LevelMeta", "Profile",
           "ProfileBlock", "Scoring", "SideInfo", "add_sequences", "align_paths", "alignment_codes", "batch_chunks", "batch_size",
           "codes_to_alignment", "distinct", "distinct_tree", "expand_alignment", "expand_distances", "expand_tree", "family_scoring",
           "level_meta", "level_meta_arrays", "merge_batch", "merge_resilient", "merge_schedule",
           "progressive_align", "score_batch", "side_info", "stack_matrices"]
