"""Stage progress on stderr: a rich live display when stderr is a terminal,
plain lines otherwise, nothing when quiet. Never stdout, which carries the
alignment.

>>> import io
>>> out = io.StringIO()
>>> rep = StageReporter(stream=out, live=False)
>>> with rep.stage("tree"):
...     pass
>>> out.getvalue().startswith("msagpu: tree ")
True
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

#: What each stage does, for the messages.
LABELS = {"library": "consistency library", "large_tree": "k-mer pivots and partition tree",
          "distance": "distances", "tree": "guide tree", "progressive": "progressive alignment",
          "refine": "refinement"}


class StageReporter:
    """Reports each stage that took at least ``min_seconds`` as it ends
    (``live``: a rich spinner while it runs)."""

    def __init__(self, stream=None, live: bool | None = None, min_seconds: float = 0.0):
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.min_seconds = min_seconds

    @contextmanager
    def stage(self, name: str):
        label = LABELS.get(name, name)
        clock = time.perf_counter()
        if self.live:
            from rich.console import Console

            with Console(file=self.stream).status(f"msagpu: {label} ..."):
                yield
        else:
            yield
        took = time.perf_counter() - clock
        if took >= self.min_seconds:
            self.stream.write(f"msagpu: {name} ({label}) done in {took:.2f} s\n")
            self.stream.flush()
