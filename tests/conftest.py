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
    from msa_gpu.accuracy import sp_tc

    folder = refs / "balibase12" if (refs / "balibase12" / f"{family}.tfa").exists() else refs
    ref_names, ref_rows = read_aligned(folder / f"{family}.ref.fa")
    return sp_tc(list(names), [r.upper() for r in rows], ref_names, ref_rows, read_core(folder / f"{family}.core"))


#: The client tools that tests run where they are installed (`make test` installs
#: them where it can): name -> executables, or a Python module.
CLIENT_TOOLS = {"MAFFT": ["mafft"], "FastTree": ["FastTree"], "IQ-TREE": ["iqtree2"], "pytrimal": "pytrimal",
                "Snakemake": "snakemake", "Dask": "dask.distributed"}


def client_tools() -> tuple[list[str], list[str]]:
    """The client tools found here, and those missing (their tests skip)."""
    import importlib.util
    import shutil
    import sys

    path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    found, missing = [], []
    for name, what in CLIENT_TOOLS.items():
        if isinstance(what, str):
            try:
                ok = importlib.util.find_spec(what) is not None
            except ModuleNotFoundError:
                ok = False
        else:
            ok = any(shutil.which(exe, path=path) for exe in what)
        (found if ok else missing).append(name)
    return found, missing


def pytest_unconfigure(config):
    """One line at the very end of a run: which client tools' tests ran, which skipped."""
    if getattr(config.option, "collectonly", False):
        return
    found, missing = client_tools()
    print(f"client tools: ran {', '.join(found) or 'none'}; skipped, not installed: {', '.join(missing) or 'none'}")


#: Every GPU path the parity suite (tests/test_parity.py) must reach. Its tests
#: call `reached_gpu_path` once a path has run on the device (thresholds forced
#: where small inputs would stay on the host); with MSAGPU_REQUIRE_GPU=1 a run of
#: the whole suite that misses one fails.
GPU_PATHS = ("profile DP", "checkpointed DP", "wide-profile DP", "consistency library", "pairwise engine",
             "refinement", "k-mer distances", "k-mer sort", "identity distances", "pivot distances",
             "lcs distances", "lcs spanning tree", "pair-HMM posteriors", "nucleotide pair-HMM posteriors",
             "anchored merges", "accurate subtrees", "merged alignments")
GPU_PATHS_REACHED: set[str] = set()


def reached_gpu_path(name: str) -> None:
    assert name in GPU_PATHS, name
    GPU_PATHS_REACHED.add(name)


def missing_gpu_paths(session) -> list[str]:
    """The GPU paths a whole run of the parity suite did not reach (none when
    the run was not one: no MSAGPU_REQUIRE_GPU=1, no parity tests, or -k)."""
    if os.environ.get("MSAGPU_REQUIRE_GPU") != "1" or session.config.getoption("keyword"):
        return []
    if not any(item.nodeid.startswith("tests/test_parity.py") for item in getattr(session, "items", [])):
        return []
    return [p for p in GPU_PATHS if p not in GPU_PATHS_REACHED]


def pytest_sessionfinish(session, exitstatus):
    missing = missing_gpu_paths(session)
    if missing:
        print(f"\nMSAGPU_REQUIRE_GPU=1: the parity suite did not reach these GPU paths: {', '.join(missing)}")
        session.exitstatus = 1
