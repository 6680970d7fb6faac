"""msagpu: GPU-accelerated progressive multiple sequence alignment."""

__version__ = "0.1.0"
