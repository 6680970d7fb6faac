"""CUDA sources and their per-device, memoised loader.

Nothing compiles at import time: `get_function` builds a module the first
time a device asks for it (CuPy caches the binary on disk as well). The
constants a ``.cu`` file shares with its numba twin come from
`msa_gpu.kernels.constants`, as a ``#define`` preamble (`full_source`).
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from msa_gpu.kernels.constants import preamble


def source(name: str) -> str:
    """The text of ``kernels/<name>.cu``."""
    return files(__package__).joinpath(f"{name}.cu").read_text()


def full_source(name: str, defines: dict[str, str] | None = None) -> str:
    """What is compiled for ``<name>.cu``: the caller's ``defines`` (sorted),
    the constants it shares with the twins (`constants.DEFINES`, those the
    caller does not define), then the file.

    >>> full_source("refine", {"X": "1"}).splitlines()[:2]
    ['#define X 1', '#define FRAC 1024']
    """
    defines = dict(defines or {})
    return ("".join(f"#define {k} {v}\n" for k, v in sorted(defines.items())) + preamble(name, defines)
            + source(name))


@lru_cache(maxsize=None)
def _module(name: str, device_id: int, defines: tuple[tuple[str, str], ...]):
    import cupy

    with cupy.cuda.Device(device_id):
        return cupy.RawModule(code=full_source(name, dict(defines)), options=("-std=c++17",))


def get_function(name: str, function: str, defines: dict[str, str] | None = None):
    """The kernel ``function`` from ``<name>.cu``, compiled for the current device."""
    import cupy

    key = tuple(sorted((defines or {}).items()))
    return _module(name, cupy.cuda.Device().id, key).get_function(function)


def opt_in_shared(kernel, nbytes: int) -> int:
    """Let ``kernel`` take ``nbytes`` of dynamic shared memory, opting in
    past its default (48 KB less the kernel's static shared memory: a block
    of 48,960 bytes, under 48 KB, failed beside 352 static bytes); ``nbytes``.

    >>> class Kernel:
    ...     max_dynamic_shared_size_bytes = 48800  # 48 KB less 352 static bytes
    >>> k = Kernel()
    >>> opt_in_shared(k, 48960), k.max_dynamic_shared_size_bytes
    (48960, 48960)
    >>> opt_in_shared(k, 1024), k.max_dynamic_shared_size_bytes  # never lowered
    (1024, 48960)
    """
    if kernel.max_dynamic_shared_size_bytes < nbytes:
        kernel.max_dynamic_shared_size_bytes = nbytes
    return nbytes
