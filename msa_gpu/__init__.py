"""msagpu: GPU-accelerated progressive multiple sequence alignment."""

from msa_gpu.version import __version__

__all__ = ["__version__", "align", "align_ensemble", "merge"]


def align(records, **options):
    """Align a path, SeqRecords or (name, sequence) pairs (see `msa_gpu.api`)."""
    from msa_gpu.api import align as _align

    return _align(records, **options)


def align_ensemble(records, replicates: int = 16, perturb=("tree", "gaps"), seed: int = 0, **options):
    """An ensemble of ``replicates`` alignments (see `msa_gpu.api.align_ensemble`)."""
    from msa_gpu.api import align_ensemble as _ensemble

    return _ensemble(records, replicates, perturb, seed, **options)


def merge(alignments, **options):
    """Existing alignments aligned to each other, each one's columns kept (see `msa_gpu.api.merge`)."""
    from msa_gpu.api import merge as _merge

    return _merge(alignments, **options)
