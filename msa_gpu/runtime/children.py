"""Child processes that end with their parent (the server's workers, the
GPU pool's workers): a killed parent leaves none of them running."""

from __future__ import annotations

import contextlib
import os
import signal


def die_with_parent(parent: int) -> None:
    """On Linux, this process gets SIGKILL when its parent dies
    (``PR_SET_PDEATHSIG``); a parent already gone (not ``parent``) ends it now."""
    import ctypes

    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)
