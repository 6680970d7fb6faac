"""Every thread's Python stack, written to a file at a fixed interval, for
long benchmark runs that may hang.

The stacks are taken by a daemon thread that holds the GIL while it reads
them (``sys._current_frames``), so no frame is freed under it. The
`faulthandler` watchdog this replaces (``dump_traceback_later``) reads the
frames without the GIL and crashed the interpreter: with a short interval and
threads that come and go it segfaults within seconds (tests/test_benchmarks.py),
and a 1M-sequence run died of it once in its tree stage (NOTES, issue 28).
"""

from __future__ import annotations

import sys
import threading
import time
import traceback


def stacks_text() -> str:
    """Every live thread's stack, innermost call last, one block per thread."""
    names = {t.ident: t.name for t in threading.enumerate()}
    blocks = []
    for ident, frame in sys._current_frames().items():
        lines = "".join(traceback.format_stack(frame))
        blocks.append(f"--- thread {names.get(ident, ident)}\n{lines}")
    return "".join(blocks)


def watch(path: str, every: float = 60.0) -> threading.Thread:
    """Append ``stacks_text()`` with a timestamp to ``path`` every ``every``
    seconds until the process exits; returns the (daemon) thread."""

    def loop() -> None:
        t0 = time.perf_counter()
        while True:
            time.sleep(every)
            text = stacks_text()
            with open(path, "a") as fh:
                fh.write(f"=== {time.perf_counter() - t0:.1f} s\n{text}")

    thread = threading.Thread(target=loop, name="msagpu-stacks", daemon=True)
    thread.start()
    return thread
