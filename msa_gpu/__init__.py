"""msagpu: GPU-accelerated progressive multiple sequence alignment."""

__version__ = "0.1.0"


def align(records, **options):
    """Align a path, SeqRecords or (name, sequence) pairs (see `msa_gpu.api`)."""
    from msa_gpu.api import align as _align

    return _align(records, **options)
