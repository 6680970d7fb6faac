import os
from pathlib import Path

import pytest

REFS = Path(__file__).resolve().parent.parent / "references"


@pytest.fixture
def refs() -> Path:
    return REFS


def gpu_available() -> bool:
    from msa_gpu.backend import probe_gpu

    return probe_gpu()[0]


def pytest_collection_modifyitems(config, items):
    """GPU tests skip cleanly without a GPU, unless MSAGPU_REQUIRE_GPU=1
    demands one, in which case they fail hard."""
    if gpu_available() or os.environ.get("MSAGPU_REQUIRE_GPU") == "1":
        return
    skip = pytest.mark.skip(reason="no usable CUDA GPU (set MSAGPU_REQUIRE_GPU=1 to fail instead)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
