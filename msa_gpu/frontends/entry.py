"""Console entry points. Each asks this user's warm server first (`msagpu
serve`, `msa_gpu.serving`) and runs its front door here otherwise; until it
must work alone it imports only the standard library, so a served call costs
little more than starting Python."""

from __future__ import annotations

import importlib
import sys

from msa_gpu.serving.protocol import PROGRAMS, served


def _run(program: str) -> None:
    try:
        code = served(program, sys.argv[1:])
    except BrokenPipeError:  # the server's answer met a closed pipe (head): quiet, as the front doors are
        from msa_gpu.errors import EXIT_PIPE, quiet_stdout

        quiet_stdout()
        raise SystemExit(EXIT_PIPE) from None
    if code is not None:
        raise SystemExit(code)
    module, function = PROGRAMS[program]
    getattr(importlib.import_module(module), function)()


def msagpu() -> None:
    """``msagpu``."""
    _run("msagpu")


def msagpu_mafft() -> None:
    """``msagpu-mafft``."""
    _run("msagpu-mafft")


def msagpu_famsa() -> None:
    """``msagpu-famsa``."""
    _run("msagpu-famsa")


def msagpu_clustalo() -> None:
    """``msagpu-clustalo``."""
    _run("msagpu-clustalo")
