"""Stage progress on stderr: on a terminal a rich live display of the running
stage (a bar with its counts and the time left, where the stage reports
counts); otherwise plain lines, one as each stage ends and one every
``interval`` seconds while a counted stage runs; nothing when quiet. Never
stdout, which carries the alignment.

>>> import io
>>> out = io.StringIO()
>>> rep = StageReporter(stream=out, live=False, interval=0.0)
>>> with rep.stage("progressive"):
...     rep.progress(10, 40, "merges")
>>> print(out.getvalue().splitlines()[0][:46])
msagpu: progressive: 10/40 merges, 0 s elapsed
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
    (``live``: a rich display while it runs); `progress` reports a stage's
    counts while it runs (plain: at most every ``interval`` seconds)."""

    def __init__(self, stream=None, live: bool | None = None, min_seconds: float = 0.0, interval: float = 10.0):
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.min_seconds = min_seconds
        self.interval = interval
        self._name, self._started, self._said, self._bar = None, 0.0, 0.0, None

    @contextmanager
    def stage(self, name: str):
        label = LABELS.get(name, name)
        self._name, self._started = name, time.perf_counter()
        self._said = self._started
        try:
            if self.live:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    SpinnerColumn,
                    TextColumn,
                    TimeRemainingColumn,
                )

                columns = (SpinnerColumn(), TextColumn(f"msagpu: {label}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[unit]}"), TimeRemainingColumn())
                with Progress(*columns, console=Console(file=self.stream), transient=True) as bar:
                    self._bar = (bar, bar.add_task(label, total=None, unit=""))
                    yield
            else:
                yield
        finally:
            self._bar, self._name = None, None
        took = time.perf_counter() - self._started
        if took >= self.min_seconds:
            self.stream.write(f"msagpu: {name} ({label}) done in {took:.2f} s\n")
            self.stream.flush()

    def note(self, text: str) -> None:
        """One line about the run (not a stage)."""
        self.stream.write(f"msagpu: {text}\n")
        self.stream.flush()

    def progress(self, done: int, total: int, unit: str, cap: bool = False) -> None:
        """``done`` of ``total`` ``unit`` of the running stage are made;
        ``cap``: ``total`` is only a bound (refinement's rounds, which stop
        when no cut gains), so no time left is estimated from it.

        >>> import io
        >>> out = io.StringIO()
        >>> rep = StageReporter(stream=out, live=False, interval=0.0)
        >>> with rep.stage("refine"):
        ...     rep.progress(2, 100, "rounds", cap=True)
        >>> out.getvalue().splitlines()[0][:45]
        'msagpu: refine: 2 rounds (at most 100), 0 s e'
        """
        if self._bar is not None:
            bar, task = self._bar
            bar.update(task, completed=done, total=None if cap else total, unit=unit)
            return
        now = time.perf_counter()
        if self._name is None or now - self._said < self.interval:
            return
        self._said = now
        elapsed = now - self._started
        if cap:
            self.stream.write(f"msagpu: {self._name}: {done:,} {unit} (at most {total:,}), {elapsed:.0f} s elapsed\n")
        else:
            left = f", about {elapsed * (total - done) / done:.0f} s left" if 0 < done < total else ""
            self.stream.write(f"msagpu: {self._name}: {done:,}/{total:,} {unit}, {elapsed:.0f} s elapsed{left}\n")
        self.stream.flush()
