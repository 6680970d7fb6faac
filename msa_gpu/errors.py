"""The error hierarchy. Each error subclasses the builtin a caller would catch."""

from __future__ import annotations


class MsaGpuError(Exception):
    """Base class of every msagpu error."""


class InputError(MsaGpuError, ValueError):
    """Bad input: unreadable file, bad character, empty sequence, unknown format."""


class BackendError(MsaGpuError, RuntimeError):
    """A requested backend cannot be used (for example ``gpu`` with no GPU)."""


class ResourceError(MsaGpuError, MemoryError):
    """A run needs more memory (host or device) than it can have."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt, so no partial file stays."""


#: Exit codes of the command-line tools.
EXIT_INTERNAL, EXIT_INPUT, EXIT_BACKEND, EXIT_RESOURCE, EXIT_INTERRUPT, EXIT_TERM = 1, 2, 3, 4, 130, 143
