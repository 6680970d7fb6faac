"""What a served request may change in the server's process, and how it is
given back: `server.run_request` runs a request inside it, and the
gathering (`gather`) puts a parked request's aside while others run."""

from __future__ import annotations

import os
import sys
import warnings


def process_state() -> tuple:
    """What a request may change in this process: the standard streams, the
    arguments, the folder, the environment, the umask and the warnings'
    filters and printer (`restore_state` gives them back)."""
    umask = os.umask(0)
    os.umask(umask)
    return (sys.stdin, sys.stdout, sys.stderr, list(sys.argv), os.getcwd(), dict(os.environ), umask,
            list(warnings.filters), warnings.showwarning)


def restore_state(state: tuple) -> None:
    """Put back a `process_state`."""
    sys.stdin, sys.stdout, sys.stderr, argv, cwd, env, umask, filters, show = state
    sys.argv = list(argv)
    os.chdir(cwd)
    if dict(os.environ) != env:
        os.environ.clear()
        os.environ.update(env)
    os.umask(umask)
    warnings.filters[:] = filters
    warnings._filters_mutated()  # (each request's "once" registries start afresh, as in a fresh process)
    warnings.showwarning = show
