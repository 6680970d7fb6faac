"""The error hierarchy. Each error subclasses the builtin a caller would catch."""

from __future__ import annotations


class MsaGpuError(Exception):
    """Base class of every msagpu error."""


class InputError(MsaGpuError, ValueError):
    """Bad input: unreadable file, bad character, empty sequence, unknown format."""


class BackendError(MsaGpuError, RuntimeError):
    """A requested backend cannot be used (for example ``gpu`` with no GPU)."""
