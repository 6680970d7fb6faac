"""CUDA sources and their per-device, memoised loader.

Nothing compiles at import time: `get_function` builds a module the first
time a device asks for it (CuPy caches the binary on disk as well).
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files


def source(name: str) -> str:
    """The text of ``kernels/<name>.cu``."""
    return files(__package__).joinpath(f"{name}.cu").read_text()


@lru_cache(maxsize=None)
def _module(name: str, device_id: int, defines: tuple[tuple[str, str], ...]):
    import cupy

    preamble = "".join(f"#define {k} {v}\n" for k, v in defines)
    with cupy.cuda.Device(device_id):
        return cupy.RawModule(code=preamble + source(name), options=("-std=c++17",))


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
