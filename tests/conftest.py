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


#: references/balibase12: the two smallest families of each BAliBASE 3.0 reference set.
BALIBASE12 = ("BB11001", "BB11025", "BB12021", "BB12020", "BB20029", "BB20030",
              "BB30027", "BB30017", "BB40010", "BB40014", "BB50004", "BB50013")


def reference_score(refs: Path, family: str, names, rows):
    """SP and TC of an alignment of a bundled family against its reference."""
    from msa_gpu.io import read_aligned, read_core
    from msa_gpu.score import sp_tc

    folder = refs / "balibase12" if (refs / "balibase12" / f"{family}.tfa").exists() else refs
    ref_names, ref_rows = read_aligned(folder / f"{family}.ref.fa")
    return sp_tc(list(names), [r.upper() for r in rows], ref_names, ref_rows, read_core(folder / f"{family}.core"))
