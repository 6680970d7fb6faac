"""msagpu: GPU-accelerated progressive multiple sequence alignment."""

from msa_gpu.version import __version__

__all__ = ["__version__", "align"]


def align(records, **options):
    """Align a path, SeqRecords or (name, sequence) pairs (see `msa_gpu.api`)."""
    from msa_gpu.api import align as _align

    return _align(records, **options)
