"""Whether this machine has compiled msagpu's kernels yet, and what a run
says before it compiles them: numba's CPU kernels and CuPy's CUDA ones are
compiled on first use and cached on disk, once per installation (numba's
beside the installed modules, so a new virtual environment compiles its own;
CuPy's in the user's folder, shared by them; issue 43: on a
cold cache the first accurate run compiled 47 CUDA modules, about 18 s on
an H200)."""

from __future__ import annotations

from pathlib import Path


def kernels_cold(folder: Path | None = None) -> bool:
    """Whether numba's on-disk cache of msagpu's CPU kernels is still empty
    (``folder``, else ``NUMBA_CACHE_DIR`` where set, else beside the modules
    and numba's user-wide folder): the first run then compiles them, which
    takes seconds."""
    import os

    if folder is not None:
        return not (folder.is_dir() and any(folder.rglob("*.nbi")))
    cache = os.environ.get("NUMBA_CACHE_DIR")
    # beside the modules, or numba's user-wide folder where the package's own is not writable
    places = [Path(cache)] if cache else [Path(__file__).resolve().parent / "backend" / "__pycache__",
                                          Path.home() / ".cache" / "numba"]
    return all(kernels_cold(place) for place in places)


def cuda_kernels_cold(folder: Path | None = None) -> bool:
    """Whether CuPy's on-disk cache of compiled kernels (``folder``, else
    ``CUPY_CACHE_DIR`` where set, else ``~/.cupy/kernel_cache``; none with
    ``CUPY_CACHE_IN_MEMORY=1``) is empty where CuPy is installed: msagpu's CUDA kernels are then compiled by
    NVRTC on first use. (The cache is CuPy's, shared with other programs: a
    non-empty one does not prove msagpu's kernels are in it.)"""
    import importlib.util
    import os

    if folder is None:
        if importlib.util.find_spec("cupy") is None:
            return False
        if os.environ.get("CUPY_CACHE_IN_MEMORY") == "1":  # nothing kept between runs
            return True
        folder = Path(os.environ.get("CUPY_CACHE_DIR") or Path.home() / ".cupy" / "kernel_cache")
    return not (folder.is_dir() and any(p.is_file() for p in folder.iterdir()))


def compiling_line(cpu: bool, cuda: bool) -> str:
    """What a run says before it compiles kernels (``cpu``: numba's CPU
    kernels, ``cuda``: the CUDA ones): that this happens once per
    installation (a new virtual environment, or another Python, compiles
    again), and where the compiled kernels are kept for later runs.

    >>> compiling_line(True, False).startswith("compiling kernels, once per installation")
    True
    """
    import os

    package = Path(__file__).resolve().parent
    places = []
    if cpu:  # where numba writes (NUMBA_CACHE_DIR, else beside the modules, else its user-wide folder)
        writable = os.access(package / "backend", os.W_OK)
        places.append(os.environ.get("NUMBA_CACHE_DIR") or (f"__pycache__ beside msagpu's modules ({package})"
                                                            if writable else str(Path.home() / ".cache" / "numba")))
    if cuda and os.environ.get("CUPY_CACHE_IN_MEMORY") != "1":
        places.append(os.environ.get("CUPY_CACHE_DIR") or str(Path.home() / ".cupy" / "kernel_cache"))
    if not places:  # CuPy told to keep nothing
        return "compiling kernels (CUPY_CACHE_IN_MEMORY=1: again on every run)"
    return (f"compiling kernels, once per installation (a new virtual environment compiles again): they are "
            f"cached in {' and '.join(places)} for every later run")
